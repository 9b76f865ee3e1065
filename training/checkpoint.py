"""Checkpoints: model, optimiser, scheduler, every RNG and the data-loader state.

A run directory keeps them as `checkpoints/step_0000100.pt`; the latest is the highest step.
Files are written atomically (temp file + rename) so a crash never leaves a truncated latest.

A single process writes everything into that one file. A distributed (FSDP2) run writes the
model and optimiser sharded with `torch.distributed.checkpoint` (DCP) into the directory
`checkpoints/step_0000100.dcp/` (one `__<rank>_0.distcp` file per rank and `.metadata`), then
rank 0 writes `step_0000100.pt` with the rest: step, stage, scheduler, configs, and the loader
state and RNG states of every rank (lists in rank order), `world_size` and `sharded` (the DCP
directory's name). The `.pt` is written last, so a checkpoint without it is incomplete and
ignored. `load_checkpoint` reads both formats; for a sharded one it gathers the full model
weights from the DCP directory (no process group needed), so `--init` and evaluation take either.
A model whose state dict is more than the text decoder (the multimodal stage's vision tower +
adapter + decoder) names `sharded_parts` in the `.pt`: where each part of the gathered weights
goes (`{"model": "decoder.", "vision_language.adapter": "adapter.", ...}`, longest prefix wins),
so a sharded checkpoint loads in the same shape as the single-process one.

Loading never runs code from the file: `.pt` files load with `torch.load(weights_only=True)`
(tensors and plain Python values; RNG states are stored as such), and a DCP directory's
`.metadata` pickle is read by an unpickler that builds only DCP's own metadata records. A file
that needs anything else is refused, as is one cut short: `CheckpointError`, one line naming
the file (and, for a run's checkpoint, the earlier one to fall back on). Checkpoints written
before RNG states were plain values keep NumPy's state as an array; exactly the NumPy globals
that rebuild a uint32 array are allowed for them (`_old_rng_globals`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

_NAME = re.compile(r"^step_(\d+)\.pt$")


class CheckpointError(ValueError):
    """A checkpoint cannot be read or is refused; the message names the file and the fix."""


def _old_rng_globals() -> list[Any]:
    """What unpickling the NumPy RNG state of a checkpoint written before it was stored as plain
    values takes: a uint32 ndarray (its reconstructor, under NumPy 2's and 1's module names)."""
    core = getattr(np, "_core", None) or np.core
    reconstruct = core.multiarray._reconstruct
    return [
        (reconstruct, "numpy._core.multiarray._reconstruct"),
        (reconstruct, "numpy.core.multiarray._reconstruct"),
        np.ndarray,
        np.dtype,
        type(np.dtype(np.uint32)),
    ]


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def checkpoint_dir(run_dir: str | Path) -> Path:
    """Where a run keeps its checkpoints."""
    return Path(run_dir) / "checkpoints"


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """The run's checkpoints, oldest first."""
    d = checkpoint_dir(run_dir)
    if not d.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in d.iterdir() if (m := _NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The run's newest checkpoint, or None."""
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def resolve_checkpoint(path: str | Path) -> Path:
    """A checkpoint file as given, or the latest checkpoint of a run directory; clear error if none."""
    p = Path(path)
    if p.is_file():
        return p
    if p.is_dir():
        latest = latest_checkpoint(p)
        if latest is None:
            raise FileNotFoundError(
                f"{p}: run directory has no checkpoints under {checkpoint_dir(p)}"
            )
        return latest
    raise FileNotFoundError(f"{p}: no such checkpoint file or run directory")


def rng_state() -> dict[str, Any]:
    """Every RNG the training step may touch, as tensors and plain values (NumPy's legacy state
    tuple with its key array as a list of ints), so the checkpoint loads with weights_only."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "numpy": [str(name), keys.tolist(), int(pos), int(has_gauss), float(cached)],
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore the RNGs saved by `rng_state()`."""
    torch.set_rng_state(state["torch"])
    name, keys, pos, has_gauss, cached = state["numpy"]  # a list now, a tuple in old checkpoints
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(run_dir: str | Path, step: int, payload: dict[str, Any], keep: int) -> Path:
    """Write `payload` (+ RNG states) as the checkpoint of `step`; keep only the newest `keep`."""
    d = checkpoint_dir(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"step_{step:07d}.pt"
    _save_atomic({**payload, "step": step, "rng": rng_state()}, path)
    prune_checkpoints(run_dir, keep)
    return path


def _save_atomic(obj: dict[str, Any], path: Path) -> None:
    """torch.save to a temp file, flushed to disk before it replaces `path` (then the directory
    entry too), so a crash or power loss leaves the old file or the new one, never a cut one."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    # the rename itself: a file system that cannot sync a directory keeps what it has
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def prune_checkpoints(run_dir: str | Path, keep: int) -> None:
    """Delete all but the newest `keep` checkpoints (a sharded one's DCP directory with it)."""
    for old in list_checkpoints(run_dir)[:-keep]:
        old.unlink()
        shutil.rmtree(sharded_dir(old), ignore_errors=True)


def sharded_dir(path: str | Path) -> Path:
    """The DCP directory that goes with checkpoint file `path` (`step_N.pt` -> `step_N.dcp`)."""
    path = Path(path)
    return path.with_name(path.name[: -len(".pt")] + ".dcp")


def is_sharded_checkpoint(saved: dict[str, Any]) -> bool:
    """Whether a loaded checkpoint keeps its model and optimiser in a DCP directory."""
    return "sharded" in saved


def complete_adam_state(optimizer: torch.optim.Optimizer) -> None:
    """Give every parameter of an Adam/AdamW optimiser the state its first update would create.

    A parameter that has not been updated yet (no gradient so far: the multimodal stage's decoder
    in its adapter-only phase) has no optimiser state; a sharded save would then lack its keys and
    the resumed run's DCP load (which asks for every parameter's state) would fail. The state
    added is exactly Adam's lazy initialisation (step 0, zero moments), which Adam leaves alone
    until the parameter has a gradient, so training continues as it would have.
    """
    from torch.optim.adam import _get_scalar_dtype

    if not isinstance(optimizer, torch.optim.Adam | torch.optim.AdamW):
        return
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state[p]
            if state:
                continue
            on_device = group["capturable"] or group["fused"]
            state["step"] = (
                torch.zeros((), dtype=_get_scalar_dtype(is_fused=group["fused"]), device=p.device)
                if on_device
                else torch.tensor(0.0, dtype=_get_scalar_dtype(), device="cpu")
            )
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)


def save_sharded_checkpoint(
    run_dir: str | Path,
    step: int,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    payload: dict[str, Any],
    rank_state: dict[str, Any],
    keep: int,
) -> Path:
    """Collective (every rank calls it): DCP-save model + optimiser, then rank 0 writes the `.pt`.

    `payload` (rank 0's) holds what every rank shares (stage, scheduler, configs); `rank_state`
    (each rank's) holds what differs per rank, e.g. {"loader": ...}; it is stored as lists in rank
    order under the same keys, with every rank's RNG states as `rng`.
    """
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    rank, world = dist.get_rank(), dist.get_world_size()
    d = checkpoint_dir(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"step_{step:07d}.pt"
    complete_adam_state(optimizer)  # every parameter's state is saved, so every one loads
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd, "optimizer": optim_sd}, checkpoint_id=sharded_dir(path))
    states: list[dict[str, Any]] | None = [{}] * world if rank == 0 else None
    dist.gather_object({**rank_state, "rng": rng_state()}, states, dst=0)
    if rank == 0:
        assert states is not None
        per_rank = {k: [s[k] for s in states] for k in states[0]}
        record = {
            **payload,
            **per_rank,
            "step": step,
            "world_size": world,
            "sharded": sharded_dir(path).name,
        }
        _save_atomic(record, path)
        prune_checkpoints(run_dir, keep)
    dist.barrier()
    return path


def load_sharded_checkpoint(
    path: str | Path,
    saved: dict[str, Any],
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
) -> None:
    """Collective: load a sharded checkpoint's model and optimiser into the (FSDP2) `model`."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    source = Path(path).with_name(saved["sharded"])
    if not (source / ".metadata").is_file():
        raise FileNotFoundError(
            f"{path} keeps its weights in {source}, which has no .metadata; the checkpoint is "
            "incomplete: resume from an earlier one (delete this .pt) or restart the run"
        )
    read_dcp_metadata(source / ".metadata", Path(path))
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optimizer": optim_sd}
    dcp.load(state, storage_reader=_metadata_safe_reader(source))
    set_state_dict(
        model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"]
    )


def _full_weights(path: Path, saved: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The full (unsharded) model state dict of a sharded checkpoint, read in this process."""
    from torch.distributed.checkpoint.format_utils import (
        _EmptyStateDictLoadPlanner,
        _load_state_dict,
    )

    source = path.with_name(saved["sharded"])
    if not (source / ".metadata").is_file():
        raise FileNotFoundError(
            f"{path} keeps its weights in {source}, which has no .metadata; the checkpoint is "
            "incomplete: use an earlier one"
        )
    from torch.distributed.checkpoint.api import CheckpointException

    read_dcp_metadata(source / ".metadata", path)
    sd: dict[str, Any] = {}
    try:
        _load_state_dict(
            sd,
            storage_reader=_metadata_safe_reader(source),
            planner=_EmptyStateDictLoadPlanner(keys={"model"}),
            no_dist=True,
        )
    except (Exception, CheckpointException) as exc:  # a cut or foreign .distcp file
        raise CheckpointError(
            f"{source}: not a readable sharded checkpoint ({_reason(exc)}); {_fallback(path)}"
        ) from None
    return sd["model"]


# Globals a DCP `.metadata` pickle may name: DCP's metadata records and what they hold (sizes,
# dtypes, layouts, the checkpoint id as a path). Nothing else is built, so no code runs.
_DCP_MODULES = ("torch.distributed.checkpoint.metadata",)
_DCP_GLOBALS = {
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
    ("torch.serialization", "_get_layout"),
    ("torch", "Size"),
    ("collections", "OrderedDict"),
    ("pathlib", "PosixPath"),
    ("pathlib", "PurePosixPath"),
    ("pathlib", "WindowsPath"),
    ("pathlib", "PureWindowsPath"),
}


class _MetadataUnpickler(pickle.Unpickler):
    """Unpickles a DCP `.metadata` file, refusing any global but `_DCP_GLOBALS`, the classes of
    DCP's metadata module and torch dtypes."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _DCP_GLOBALS:
            return super().find_class(module, name)
        if module in _DCP_MODULES:
            obj = super().find_class(module, name)
            if isinstance(obj, type):
                return obj
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise pickle.UnpicklingError(f"Unsupported global: {module}.{name}")


def read_dcp_metadata(path: Path, checkpoint: Path) -> Any:
    """A DCP `.metadata` file read by `_MetadataUnpickler`; CheckpointError naming it when it is
    cut, foreign or names other globals (`checkpoint`: the `.pt` it belongs to)."""
    try:
        with path.open("rb") as f:
            return _MetadataUnpickler(f).load()
    except Exception as exc:
        raise CheckpointError(
            f"{path}: not a readable DCP metadata file ({_reason(exc)}); {_fallback(checkpoint)}"
        ) from None


def _metadata_safe_reader(source: Path):
    """A DCP FileSystemReader whose `.metadata` is read by `_MetadataUnpickler` (its errors left
    as they are: DCP tries a rank's own metadata file when the shared one is missing)."""
    from torch.distributed.checkpoint import FileSystemReader
    from torch.distributed.checkpoint.metadata import StorageMeta

    class _Reader(FileSystemReader):
        def read_metadata(self, *args: Any, **kwargs: Any):
            path = self._get_metadata_path(kwargs.get("rank"))
            with self.fs.create_stream(path, "rb") as f:
                metadata = _MetadataUnpickler(f).load()
            if getattr(metadata, "storage_meta", None) is None:
                metadata.storage_meta = StorageMeta()
            metadata.storage_meta.load_id = self.load_id
            return metadata

    return _Reader(source)


def split_parts(full: dict[str, Any], parts: dict[str, str], into: dict[str, Any]) -> None:
    """Put each weight of `full` into the part whose prefix is its longest match, prefix removed.

    `parts` maps a dotted destination in `into` ("model", "vision_language.adapter") to a key
    prefix ("decoder.", "adapter."); weights that match no prefix are not kept.
    """
    out: dict[str, dict[str, Any]] = {name: {} for name in parts}
    by_length = sorted(parts.items(), key=lambda kv: -len(kv[1]))
    for key, value in full.items():
        name = next((n for n, prefix in by_length if key.startswith(prefix)), None)
        if name is not None:
            out[name][key[len(parts[name]) :]] = value
    for name, sd in out.items():
        *path, leaf = name.split(".")
        target = into
        for step in path:
            target = target.setdefault(step, {})
        target[leaf] = sd


# The paragraphs of torch's weights_only refusal that are advice, not the reason.
_BOILERPLATE = ("Weights only load failed", "Please file an issue", "Check the documentation")


def _reason(exc: BaseException) -> str:
    """One short line saying why a file did not load (torch's refusals span paragraphs)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    lines = [ln.removeprefix("WeightsUnpickler error:").strip() for ln in lines]
    useful = [ln for ln in lines if ln and not ln.startswith(_BOILERPLATE)]
    line = (useful or lines or [""])[0]
    if len(line) > 100 and ". " in line:  # torch's long lines: the first sentence says it
        line = line.split(". ", 1)[0]
    line = f"{type(exc).__name__}: {line}" if line else type(exc).__name__
    return line if len(line) <= 160 else line[:157] + "..."


def _fallback(path: Path) -> str:
    """What to do instead of using a bad checkpoint: the run's newest earlier one, if any."""
    match = _NAME.match(path.name)
    if match is None:
        return "use another checkpoint"
    earlier = [
        p
        for p in sorted(path.parent.glob("step_*.pt"))
        if (m := _NAME.match(p.name)) and int(m.group(1)) < int(match.group(1))
    ]
    if not earlier:
        return "delete it and start the run again (it has no earlier checkpoint)"
    return f"delete it to resume from {earlier[-1]}"


def read_checkpoint_file(path: Path) -> dict[str, Any]:
    """The `.pt` dict, loaded with weights_only (see the module docstring); CheckpointError for a
    file that is cut, not a checkpoint, or holds anything but tensors and plain values."""
    try:
        with torch.serialization.safe_globals(_old_rng_globals()):
            saved = torch.load(path, map_location="cpu", weights_only=True)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except pickle.UnpicklingError as exc:
        if "Weights only load failed" in str(exc):
            raise CheckpointError(
                f"{path}: refused: it holds objects other than tensors and plain values, which "
                f"could run code when loaded ({_reason(exc)}); use a checkpoint written by "
                "`refinery train`"
            ) from None
        raise CheckpointError(
            f"{path}: not a readable checkpoint ({_reason(exc)}); {_fallback(path)}"
        ) from None
    except Exception as exc:  # cut short, empty, not a torch file at all
        raise CheckpointError(
            f"{path}: not a readable checkpoint ({_reason(exc)}); {_fallback(path)}"
        ) from None
    if not isinstance(saved, dict):
        raise CheckpointError(
            f"{path}: not a checkpoint (holds a {type(saved).__name__}, not a dict); "
            f"{_fallback(path)}"
        )
    return saved


def load_checkpoint(path: str | Path, *, weights: bool = True) -> dict[str, Any]:
    """Load a checkpoint onto the CPU, never running code from it (`read_checkpoint_file`).

    For a sharded checkpoint, `model` is the full state dict gathered from its DCP directory
    (skipped with `weights=False`; the optimiser state stays there, see `load_sharded_checkpoint`),
    split by its `sharded_parts` when it names them.
    """
    path = Path(path)
    saved = read_checkpoint_file(path)
    if is_sharded_checkpoint(saved) and weights:
        full = _full_weights(path, saved)
        if saved.get("sharded_parts"):
            split_parts(full, saved["sharded_parts"], saved)
        else:
            saved["model"] = full
    return saved
