"""Train the model on a mixture: one function per run, `run_stage`, used by every entry point.

`run_stage` is `setup` (config, model, optimiser, data, resume; returns a `TrainState`) followed
by `train_loop` (lr, micro-steps, logging, eval and checkpoint cadence), as in nanoGPT's train.py.

A run directory (`out_dir`) holds `run.json` (resolved config and inputs), `metrics.jsonl` (one line
per logged step: step, loss, tokens_per_s, seq_len, lr, mfu), `eval.jsonl` (held-out loss per
bucket and group; step 0 is the starting weights), `checkpoints/step_*.pt` and `summary.json`.

Stages: `pretrain` starts from scratch (or `init`); `cpt` and `long-context` load the weights of
`init` and start a fresh optimiser and warm-up. Resuming (`resume=True`) restores model, optimiser,
scheduler, RNGs and loader position, so the losses match an uninterrupted run exactly on CPU.

What a run was trained on travels with its checkpoints (`TrainState.identity`): the mixture's
manifest sha256, its tokenizer's sha256 (manifest `tokenizer_sha256`), the config sections and
the total steps. `--resume` refuses another mixture or a changed config (but for `RESUME_FREE`
fields and the total steps, which may move past the checkpoint); `--init` refuses weights
trained with another tokenizer. A non-finite loss, gradient norm or weight stops the run
(`TrainError` naming the step) before the update or the checkpoint it would spoil.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from training import distributed
from training.checkpoint import (
    file_sha256,
    is_sharded_checkpoint,
    latest_checkpoint,
    load_checkpoint,
    load_sharded_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
    save_sharded_checkpoint,
    set_rng_state,
)
from training.components import build_optimizer, lr_scheduler, no_decay_vectors
from training.loader import EvalSets, ShardLoader, read_manifest
from training.model import ModelConfig, Transformer
from training.train_config import RunConfig, load_run_config

# Dense bf16 tensor-core peaks (FLOP/s) by device-name fragment, for MFU; unknown devices get none.
PEAK_FLOPS = {
    "H200": 989e12,
    "H100": 989e12,
    "A100": 312e12,
    "L40S": 362e12,
    "L4": 121e12,
    "A10G": 125e12,
}
# Fields that may differ between a checkpoint and the run that loads it (long context raises them).
# Document masking has no weights: a run may switch it, and the boundary id comes from the mixture.
ADJUSTABLE_FIELDS = {"rope_base", "max_seq_len", "doc_mask", "boundary_token_id"}
# Config fields a resumed run may change: when and how often it logs, evaluates, checkpoints and
# how many CPU threads it takes; what it trains on is resumed only as it was. `stage.steps` (the
# total) may move too, to a step past the checkpoint (see `restore`); `stage.mixture` is a lake
# name, the mixture itself is checked by its manifest's sha256.
RESUME_FREE = {
    "train.log_every",
    "train.eval_every",
    "train.checkpoint_every",
    "train.keep_checkpoints",
    "train.threads",
    "stage.steps",
    "stage.mixture",
}
IGNORE = -100


class TrainError(RuntimeError):
    """A run cannot start or continue; the message says what to fix."""


StepCallback = Callable[[int, int, dict[str, Any] | None], None]


def peak_flops(device: torch.device) -> float | None:
    """The device's dense bf16 peak, or None when unknown (CPU)."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_FLOPS.items() if k in name), None)


def resolve_model_config(
    cfg: RunConfig, stage: str, manifest: dict[str, Any], mix_dir: Path
) -> ModelConfig:
    """The stage's model config: vocabulary from the mixture, stage overrides, length checked."""
    sc = cfg.stage(stage)
    vocab = int(manifest["vocab_size"])
    if cfg.model.vocab_size and cfg.model.vocab_size != vocab:
        raise TrainError(
            f"vocab mismatch: config model.vocab_size={cfg.model.vocab_size} but mixture {mix_dir} "
            f"has vocab_size={vocab}; drop model.vocab_size from the config or use a matching mixture"
        )
    changes: dict[str, Any] = {"vocab_size": vocab}
    if sc.rope_base is not None:
        changes["rope_base"] = sc.rope_base
    if sc.max_seq_len is not None:
        changes["max_seq_len"] = sc.max_seq_len
    if cfg.model.image_embed_dim and cfg.model.image_token_id < 0:
        changes["image_token_id"] = int(manifest["special_tokens"]["image"])
    if cfg.model.doc_mask and cfg.model.boundary_token_id < 0:
        boundary = (manifest.get("special_tokens") or {}).get("boundary")
        if boundary is None:
            raise TrainError(
                f"mixture {mix_dir}: manifest.json special_tokens has no 'boundary' id, needed for "
                "document masking; rebuild the mixture or set model.doc_mask: false"
            )
        changes["boundary_token_id"] = int(boundary)
    model_cfg = dataclasses.replace(cfg.model, **changes)
    seq_len = int(manifest["seq_len"])
    if seq_len - 1 > model_cfg.max_seq_len:
        raise TrainError(
            f"mixture {mix_dir} has seq_len={seq_len} but the model supports max_seq_len="
            f"{model_cfg.max_seq_len}; raise stages.{stage}.max_seq_len (or model.max_seq_len)"
        )
    return model_cfg


def check_compatible(saved: dict[str, Any], model_cfg: ModelConfig, source: Path) -> None:
    """Refuse to load weights whose architecture or vocabulary differs from this run's model."""
    if saved["vocab_size"] != model_cfg.vocab_size:
        raise TrainError(
            f"vocab mismatch: checkpoint {source} has vocab_size={saved['vocab_size']} but the mixture's "
            f"tokenizer has {model_cfg.vocab_size}; build the mixture with the checkpoint's tokenizer"
        )
    ours = dataclasses.asdict(model_cfg)
    # A checkpoint written before a field existed was built with its default (e.g. tracks: 1).
    saved = {**{f.name: f.default for f in dataclasses.fields(ModelConfig)}, **saved}
    diff = [k for k in ours if k not in ADJUSTABLE_FIELDS and saved.get(k) != ours[k]]
    if not saved.get("moe_experts") and not ours["moe_experts"]:  # MoE off on both sides
        diff = [k for k in diff if not k.startswith("moe_")]
    if diff:
        pairs = ", ".join(f"{k}: checkpoint {saved.get(k)!r} vs config {ours[k]!r}" for k in diff)
        raise TrainError(
            f"checkpoint {source} does not match the config's model ({pairs}); use the model "
            "settings the checkpoint was trained with (its run's run.json `config`)"
        )


def check_tokenizer(saved: dict[str, Any], source: Path, mix_dir: Path, manifest: dict) -> None:
    """Refuse weights trained with another tokenizer than the mixture's (both record sha256; a
    checkpoint or mixture from before `tokenizer_sha256` existed cannot be compared)."""
    theirs, ours = saved.get("tokenizer_sha256"), manifest.get("tokenizer_sha256")
    if theirs and ours and theirs != ours:
        mine = mix_dir / str(manifest.get("tokenizer") or "tokenizer.json")
        raise TrainError(
            f"tokenizer mismatch: checkpoint {source} was trained with tokenizer "
            f"{saved.get('tokenizer', '?')} (sha256 {theirs[:12]}) but mixture {mix_dir} uses "
            f"{mine} (sha256 {ours[:12]}); build the mixture with the checkpoint's tokenizer"
        )


def run_config_sections(cfg: RunConfig, stage: str) -> dict[str, Any]:
    """The config a checkpoint records (`model`, `train`, this `stage`), as JSON values."""
    sections = {
        "model": dataclasses.asdict(cfg.model),
        "train": cfg.train.model_dump(mode="json"),
        "stage": cfg.stage(stage).model_dump(mode="json"),
    }
    return json.loads(json.dumps(sections))


def _config_sha256(sections: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(sections, sort_keys=True).encode()).hexdigest()


def config_changes(saved: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """`section.field: checkpoint X vs config Y` for each field that differs, but RESUME_FREE."""
    out = []
    for section in sorted(set(saved) | set(ours)):
        a, b = saved.get(section) or {}, ours.get(section) or {}
        for key in sorted(set(a) | set(b)):
            name = f"{section}.{key}"
            if name not in RESUME_FREE and a.get(key) != b.get(key):
                out.append(f"{name}: checkpoint {a.get(key)!r} vs config {b.get(key)!r}")
    return out


def _setup_torch(cfg: RunConfig) -> torch.device:
    t = cfg.train
    if t.threads:
        torch.set_num_threads(t.threads)
    if t.device == "cuda" and not torch.cuda.is_available():
        raise TrainError(
            "train.device is 'cuda' but no CUDA device is available; use 'auto' or 'cpu'"
        )
    device = torch.device(
        "cuda"
        if t.device == "auto" and torch.cuda.is_available()
        else t.device.replace("auto", "cpu")
    )
    if t.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
    elif device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    return device


def _split(
    batch: np.ndarray, pad_id: int, vocab: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-token targets of a packed batch; padding is not predicted."""
    tokens = torch.from_numpy(np.asarray(batch, dtype=np.int64))
    top = int(tokens.max())
    if top >= vocab:
        raise TrainError(
            f"token id {top} >= vocab_size {vocab}: the shards do not match the tokenizer"
        )
    x, y = tokens[:, :-1], tokens[:, 1:].clone()
    y[y == pad_id] = IGNORE
    return x.to(device, non_blocking=True), y.to(device, non_blocking=True)


@torch.no_grad()
def evaluate(
    model: Transformer,
    evals: EvalSets,
    batch_size: int,
    max_sequences: int,
    device: torch.device,
    autocast,
    attention_backend: str = "auto",
) -> list[dict[str, Any]]:
    """Mean next-token loss on each bucket/group's held-out sequences (first `max_sequences`)."""
    was_training = model.training
    model.eval()
    rows = []
    for (bucket, group), arr in evals.items():
        total, count = 0.0, 0
        arr = arr[:max_sequences]
        for i in range(0, len(arr), batch_size):
            x, y = _split(arr[i : i + batch_size], evals.pad_id, model.config.vocab_size, device)
            n = int((y != IGNORE).sum())
            if n == 0:
                continue
            with autocast():
                _, loss, _ = model(x, y, attention_backend=attention_backend)
            total += float(loss) * n
            count += n
        rows.append(
            {
                "bucket": bucket,
                "group": group,
                "loss": total / count if count else None,
                "tokens": count,
            }
        )
    model.train(was_training)
    return rows


def _append_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def _truncate_jsonl(path: Path, last_step: int) -> None:
    """Drop lines logged after the checkpoint we resume from (they will be logged again), and a
    last line cut short by a kill mid-append; a bad line before the last is an error naming it."""
    if not path.exists():
        return
    lines = path.read_text().splitlines()
    keep = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            step = json.loads(line)["step"]
        except (ValueError, KeyError, TypeError) as exc:
            if number == len(lines):
                break  # the line a killed run was writing: logged again from the checkpoint
            raise TrainError(
                f"{path}: line {number} is not a JSON log row with a step ({exc}); remove that "
                "line (or the file) and resume again"
            ) from None
        if step <= last_step:
            keep.append(line)
    path.write_text("".join(ln + "\n" for ln in keep))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln] if path.exists() else []


def _eval_summary(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    return {f"{r['bucket']}/{r['group']}": r["loss"] for r in rows}


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def mixture_shares(manifest: dict[str, Any]) -> dict[str, float]:
    """ "bucket/group" -> its share of the tokens the mixture placed for training (manifest
    `buckets.<b>.groups.<g>.tokens`): the weights of the loss the run actually minimises."""
    tokens = {
        f"{b}/{g}": float(gv.get("tokens") or 0)
        for b, bv in (manifest.get("buckets") or {}).items()
        for g, gv in (bv.get("groups") or {}).items()
    }
    total = sum(tokens.values())
    return {k: v / total for k, v in tokens.items() if v > 0} if total > 0 else {}


def _weighted(losses: dict[str, float | None], shares: dict[str, float]) -> float | None:
    """Held-out loss weighted by the mixture's token shares, over the groups that have both a
    loss and a share (renormalised); None when none has."""
    pairs = [(shares[k], v) for k, v in losses.items() if v is not None and shares.get(k)]
    total = sum(w for w, _ in pairs)
    return sum(w * v for w, v in pairs) / total if total > 0 else None


@dataclasses.dataclass
class TrainState:
    """Everything the loop needs, built by `setup`: model, optimiser, data, run directory, position."""

    stage: str
    cfg: RunConfig
    model: Transformer
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    loader: ShardLoader
    evals: EvalSets
    device: torch.device
    out_dir: Path
    mixture: str  # resolved mixture directory, as recorded in run.json and checkpoints
    seq_len: int
    pad_id: int
    batch_size: int
    total: int  # the step the run ends at
    start: int = 0  # the last step already done: 0, or the step of the checkpoint resumed from
    # rank and world size under torchrun (training/distributed.py); rank 0 of 1 otherwise
    dist: distributed.DistContext = dataclasses.field(default_factory=distributed.DistContext)

    @property
    def metrics_path(self) -> Path:
        return self.out_dir / "metrics.jsonl"

    @functools.cached_property
    def identity(self) -> dict[str, Any]:
        """What the run's checkpoints record of its inputs, checked on --resume and --init: the
        mixture's manifest sha256, its tokenizer (path, sha256 from the manifest, None for a
        mixture from before the field), the config sections and their sha256, the total steps."""
        mix = Path(self.mixture)
        manifest = read_manifest(mix)
        sections = run_config_sections(self.cfg, self.stage)
        return {
            "mixture_manifest_sha256": file_sha256(mix / "manifest.json"),
            "tokenizer": str(mix / str(manifest.get("tokenizer") or "tokenizer.json")),
            "tokenizer_sha256": manifest.get("tokenizer_sha256"),
            "run_config": sections,
            "config_sha256": _config_sha256(sections),
            "total_steps": self.total,
        }

    @property
    def eval_path(self) -> Path:
        return self.out_dir / "eval.jsonl"

    def autocast(self) -> contextlib.AbstractContextManager:
        """bf16 autocast on CUDA when the config asks for it, else nothing."""
        if self.cfg.train.precision == "bfloat16" and self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def begin_step(self, step: int) -> None:
        """Called before each step (the multimodal stage switches its training phase here)."""

    def before_update(self, step: int) -> None:
        """Called after the step's backward passes, before gradient clipping and the optimiser
        step (the multimodal stage drops the frozen decoder's gradients here under torchrun)."""

    def forward(self, model: torch.nn.Module, batch: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """(loss, MoE aux loss) of one micro-batch as the loader yields it (tokens here; the
        multimodal stage's batches also carry images)."""
        x, y = _split(batch, self.pad_id, self.model.config.vocab_size, self.device)
        _, loss, aux = model(x, y, attention_backend=self.cfg.train.attention_backend)
        return loss, aux

    # --- distributed (training/distributed.py) ---
    def loss_weight(self, batch: Any) -> torch.Tensor | float:
        """1.0 in one process; under torchrun, this rank's share of the global batch's predicted
        tokens (n_r * W / N), so that averaging over ranks gives the global token mean."""
        if not self.dist.enabled:
            return 1.0
        return distributed.loss_weight(self.predicted_tokens(batch), self.dist, self.device)

    def predicted_tokens(self, batch: Any) -> int:
        """How many targets of `batch` the loss counts: not padding, not image placeholders
        (a stage whose batches hold something else overrides this)."""
        tokens = batch[0] if isinstance(batch, tuple | list) else batch
        targets = np.asarray(tokens)[:, 1:]
        counted = targets != self.pad_id
        image_id = getattr(self.model.config, "image_token_id", -1)
        if image_id is not None and image_id >= 0:
            counted &= targets != image_id
        return int(counted.sum())

    # --- end distributed ---

    def evaluate(self, step: int) -> list[dict[str, Any]]:
        """Held-out loss per bucket/group at `step`, appended to eval.jsonl."""
        t = self.cfg.train
        rows = evaluate(
            self.model,
            self.evals,
            self.batch_size,
            t.eval_max_sequences,
            self.device,
            self.autocast,
            t.attention_backend,
        )
        rows = [{"step": step, "seq_len": self.seq_len, **r} for r in rows]
        if self.dist.is_main:
            _append_jsonl(self.eval_path, rows)
        return rows

    def checkpoint(self, step: int) -> Path:
        """Model, optimiser, scheduler, loader (and RNGs, added by save_checkpoint) at `step`."""
        payload = {
            "stage": self.stage,
            "scheduler": self.scheduler.state_dict(),
            "model_config": dataclasses.asdict(self.model.config),
            "mixture": self.mixture,
            "seq_len": self.seq_len,
            **self.identity,
        }
        keep = self.cfg.train.keep_checkpoints
        if self.dist.enabled:  # model + optimiser sharded (DCP), per-rank loader and RNG
            rank_state = {"loader": self.loader.state_dict()}
            return save_sharded_checkpoint(
                self.out_dir, step, self.model, self.optimizer, payload, rank_state, keep
            )
        payload["model"] = self.model.state_dict()
        payload["optimizer"] = self.optimizer.state_dict()
        payload["loader"] = self.loader.state_dict()
        return save_checkpoint(self.out_dir, step, payload, keep)

    def recorded_config(self) -> ModelConfig:
        """The model config its checkpoints record (the multimodal stage's: the text decoder's)."""
        return self.model.config

    def check_resume(self, saved: dict[str, Any], source: Path) -> None:
        """Refuse to continue a checkpoint on another mixture or tokenizer, with a changed config
        (but RESUME_FREE fields), or to a total the run has already passed. A checkpoint from
        before a field was recorded is not checked on it."""
        mine, step = self.identity, int(saved["step"])
        theirs = saved.get("mixture_manifest_sha256")
        if theirs and theirs != mine["mixture_manifest_sha256"]:
            raise TrainError(
                f"--resume: {source} was trained on mixture {saved.get('mixture')} (manifest sha256 "
                f"{theirs[:12]}) but this run reads {self.mixture} (manifest sha256 "
                f"{mine['mixture_manifest_sha256'][:12]}); resume with the run's mixture, or start "
                f"a new run from it with --init {source}"
            )
        check_tokenizer(saved, source, Path(self.mixture), read_manifest(self.mixture))
        if saved.get("run_config") is not None:
            changed = config_changes(saved["run_config"], mine["run_config"])
            if changed:
                raise TrainError(
                    f"--resume: the config differs from the one {source} was trained with "
                    f"({'; '.join(changed)}); resume with the run's config (run.json `config`), "
                    f"or start a new run from it with --init {source}"
                )
        if self.total < step:
            raise TrainError(
                f"--resume: {source} is at step {step}, past this run's total of {self.total} "
                f"steps; pass --steps above {step} to train further"
            )

    def restore(self, saved: dict[str, Any], source: Path) -> None:
        """Continue from a checkpoint: optimiser, scheduler, loader, RNGs; drop logs past it."""
        self.check_resume(saved, source)
        if is_sharded_checkpoint(saved):  # model + optimiser from DCP; this rank's loader, RNG
            check_compatible(saved["model_config"], self.recorded_config(), source)
            load_sharded_checkpoint(source, saved, self.model, self.optimizer)
            loader_state, rng = saved["loader"][self.dist.rank], saved["rng"][self.dist.rank]
        else:
            self.optimizer.load_state_dict(saved["optimizer"])
            loader_state, rng = saved["loader"], saved["rng"]
        self.scheduler.load_state_dict(saved["scheduler"])
        if saved.get("total_steps") != self.total:
            _reschedule(self.scheduler)
        self.loader.load_state_dict(loader_state)
        set_rng_state(rng)
        self.start = int(saved["step"])
        if self.dist.is_main:
            _truncate_jsonl(self.metrics_path, self.start)
            _truncate_jsonl(self.eval_path, self.start)


def _reschedule(scheduler: torch.optim.lr_scheduler.LambdaLR) -> None:
    """Set each group's rate to the schedule's value at the step resumed from. A run resumed to
    another total follows the schedule of that total from there on (the checkpoint's saved rate
    belongs to the old one); with the same total this is the rate it already had."""
    rates = [
        base * rule(scheduler.last_epoch)
        for base, rule in zip(scheduler.base_lrs, scheduler.lr_lambdas, strict=True)
    ]
    for group, rate in zip(scheduler.optimizer.param_groups, rates, strict=True):
        group["lr"] = rate
    scheduler._last_lr = rates


def _checkpoint_to_resume(
    stage: str, out_dir: Path, resume: bool, init: str | Path | None
) -> tuple[Path | None, dict[str, Any] | None]:
    """The checkpoint `resume` continues from (path, contents); refuse to overwrite a run."""
    existing = latest_checkpoint(out_dir)
    resume_state = None
    if resume:
        if existing is None:
            raise TrainError(
                f"--resume: {out_dir} has no checkpoint to resume from; drop --resume to start it"
            )
        resume_state = load_checkpoint(existing, weights=False)  # sharded weights: in restore
        if resume_state["stage"] != stage:
            raise TrainError(
                f"--resume: {out_dir} is a {resume_state['stage']!r} run, not {stage!r}"
            )
    elif existing is not None:
        raise TrainError(
            f"{out_dir} already holds a run ({existing.name}); pass --resume or choose another --out"
        )
    if stage != "pretrain" and init is None and not resume:
        raise TrainError(
            f"stage {stage!r} starts from earlier weights: pass --init RUNDIR_OR_CHECKPOINT"
        )
    return existing, resume_state


def _load_weights(model: Transformer, saved: dict[str, Any], source: Path) -> None:
    """Load a checkpoint's weights into `model` after checking the architectures match."""
    check_compatible(saved["model_config"], model.config, source)
    model.load_state_dict(saved["model"])


def _load_init_weights(
    model: Transformer,
    stage: str,
    init: str | Path,
    seq_len: int,
    data_dir: Path,
    manifest: dict[str, Any],
) -> Path:
    """Load the weights a later stage starts from; return the checkpoint file they came from."""
    init_path = resolve_checkpoint(init)
    saved = load_checkpoint(init_path)
    check_tokenizer(saved, init_path, data_dir, manifest)
    _load_weights(model, saved, init_path)
    if stage == "long-context" and seq_len <= saved.get("seq_len", 0):
        raise TrainError(
            f"long-context: mixture {data_dir} has seq_len={seq_len}, not longer than the "
            f"{saved['seq_len']} that {init_path} was trained at; use the context-lengthening mixture"
        )
    return init_path


def _optimizer(
    model: Transformer, cfg: RunConfig, stage: str, total: int, device: torch.device
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW (no weight decay on vectors) and the stage's warm-up + cosine/WSD schedule."""
    t, sc = cfg.train, cfg.stage(stage)
    optimizer = build_optimizer(
        model,
        lr=sc.lr,
        weight_decay=t.weight_decay,
        no_decay=no_decay_vectors,
        betas=t.betas,
        fused=device.type == "cuda",
    )
    scheduler = lr_scheduler(
        optimizer,
        total_steps=total,
        warmup_steps=sc.warmup_steps,
        schedule=sc.schedule,
        min_ratio=sc.min_lr_ratio,
        decay_fraction=sc.decay_fraction,
    )
    return optimizer, scheduler


def setup(
    stage: str,
    config_path: str | Path,
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    init: str | Path | None = None,
    steps: int | None = None,
    resume: bool = False,
) -> TrainState:
    """Check the inputs, build model, optimiser and data, restore a resumed run, write run.json."""
    cfg, raw_cfg = load_run_config(config_path)
    sc = cfg.stage(stage)
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    try:
        manifest = read_manifest(data_dir)
    except FileNotFoundError as e:
        raise TrainError(f"mixture not found: {e}") from e
    model_cfg = resolve_model_config(cfg, stage, manifest, data_dir)
    seq_len, pad_id = int(manifest["seq_len"]), int(manifest["special_tokens"]["pad"])
    total = steps if steps is not None else sc.steps
    if total < 1:
        raise TrainError(f"steps must be >= 1, got {total}")
    if not resume and latest_checkpoint(out_dir) and distributed.continues_launch(out_dir):
        resume = True  # torchrun restarted this launch's workers: continue where they stopped
    existing, resume_state = _checkpoint_to_resume(stage, out_dir, resume, init)
    if resume_state is not None and steps is not None and steps <= int(resume_state["step"]):
        raise TrainError(
            f"--resume --steps {steps}: {existing} is already at step {resume_state['step']}; "
            f"pass a total above {resume_state['step']} to train further (or drop --steps)"
        )

    t = cfg.train
    device, ctx = join_launch(cfg, resume_state, existing)
    torch.manual_seed(t.seed)
    np.random.seed(t.seed)
    model = Transformer(model_cfg).to(device)
    init_path = None
    if resume_state is not None and not is_sharded_checkpoint(resume_state):
        _load_weights(model, resume_state, existing)
    elif resume_state is None and init is not None:
        init_path = _load_init_weights(model, stage, init, seq_len, data_dir, manifest)
    model = distributed.shard_model(model, ctx, device)  # FSDP2 when distributed
    optimizer, scheduler = _optimizer(model, cfg, stage, total, device)
    batch_size = sc.batch_size or t.batch_size  # per rank: the global batch is world_size times
    state = TrainState(
        stage=stage,
        cfg=cfg,
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        loader=ShardLoader(
            data_dir, batch_size, seed=t.seed, rank=ctx.rank, world_size=ctx.world_size
        ),
        evals=EvalSets(data_dir),
        device=device,
        out_dir=out_dir,
        mixture=str(data_dir.resolve()),
        seq_len=seq_len,
        pad_id=pad_id,
        batch_size=batch_size,
        total=total,
        dist=ctx,
    )

    init_path = start_or_resume(state, resume_state, existing, init_path)
    run_record = {
        "stage": stage,
        "config_path": str(config_path),
        "config": raw_cfg,
        "model_config": dataclasses.asdict(model_cfg),
        "mixture": state.mixture,
        "mixture_manifest_sha256": state.identity["mixture_manifest_sha256"],
        "tokenizer": state.identity["tokenizer"],
        "tokenizer_sha256": state.identity["tokenizer_sha256"],
        "init": str(init_path) if init_path else None,
        "total_steps": total,
        "device": str(device),
    }
    write_run_record(state, run_record)
    return state


def join_launch(
    cfg: RunConfig, resume_state: dict[str, Any] | None, existing: Path | None
) -> tuple[torch.device, distributed.DistContext]:
    """This process's device and place in the launch (torchrun: joins the process group); a
    resumed checkpoint must come from the same number of processes (the loader's rank split)."""
    device = _setup_torch(cfg)
    ctx = distributed.init(device.type)  # torchrun: join the process group; else rank 0 of 1
    device = distributed.device_for(ctx, device)
    if resume_state is not None and resume_state.get("world_size", 1) != ctx.world_size:
        raise TrainError(
            f"--resume: {existing} was written by {resume_state.get('world_size', 1)} process(es) "
            f"but this run has {ctx.world_size}; resume with torchrun --nproc-per-node "
            f"{resume_state.get('world_size', 1)} (the loader's rank split must match)"
        )
    return device, ctx


def start_or_resume(
    state: TrainState,
    resume_state: dict[str, Any] | None,
    existing: Path | None,
    init_path: Path | None,
) -> Path | None:
    """Restore a resumed run (weights it was started from stay on record: returned from its
    run.json), or start fresh logs (rank 0); returns the `init` for run.json."""
    state.out_dir.mkdir(parents=True, exist_ok=True)
    if resume_state is not None:
        state.restore(resume_state, existing)
        record = state.out_dir / "run.json"
        if record.exists():
            previous_init = json.loads(record.read_text()).get("init")
            return Path(previous_init) if previous_init else None
    elif state.dist.is_main:
        state.metrics_path.write_text("")
        state.eval_path.write_text("")
    return init_path


def write_run_record(state: TrainState, record: dict[str, Any]) -> None:
    """run.json with the launch's world size and id, written by rank 0 alone, atomically:
    restarted ranks may be reading it (distributed.continues_launch)."""
    record = record | {"world_size": state.dist.world_size, "launch": distributed.launch_id()}
    if state.dist.is_main:
        tmp = state.out_dir / "run.json.tmp"
        tmp.write_text(json.dumps(record, indent=2, default=str))
        os.replace(tmp, state.out_dir / "run.json")


class _Throughput:
    """Tokens/s and MFU over the steps since the last log line, counting training time only."""

    def __init__(self, state: TrainState) -> None:
        t = state.cfg.train
        self.device = state.device
        peak, world = peak_flops(state.device), state.dist.world_size
        self.peak = peak * world if peak else None  # MFU of all ranks' devices together
        self.flops_per_token = state.model.flops_per_token(state.seq_len - 1)
        self.tokens_per_step = state.batch_size * t.grad_accum * (state.seq_len - 1) * world
        self.start, self.tokens = time.perf_counter(), 0

    def step(self) -> None:
        self.tokens += self.tokens_per_step

    def read(self) -> tuple[float | None, float | None]:
        """(tokens/s, MFU) since the last read; starts the next interval."""
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - self.start
        tps = self.tokens / elapsed if elapsed > 0 else None
        mfu = self.flops_per_token * tps / self.peak if self.peak and tps else None
        self.start, self.tokens = time.perf_counter(), 0
        return tps, mfu

    @contextlib.contextmanager
    def paused(self):
        """Time spent inside (evaluation, checkpoints) does not count."""
        paused = time.perf_counter()
        yield
        self.start += time.perf_counter() - paused


def train_loop(state: TrainState, on_step: StepCallback | None = None) -> None:
    """Train from `state.start` to `state.total`: log, evaluate and checkpoint on the config's cadence."""
    s, t = state, state.cfg.train
    aux_weight = s.model.config.moe_aux_weight

    def due(step: int, every: int) -> bool:
        return step % every == 0 or step == s.total

    if s.start == 0:
        _stop_if_eval_not_finite(s.evaluate(0), 0, s)  # the starting weights
    step_model = torch.compile(s.model) if t.compile else s.model
    throughput = _Throughput(s)
    batches = iter(s.loader)
    s.model.train()
    for step in range(s.start + 1, s.total + 1):
        lr = s.scheduler.get_last_lr()[0]

        # forward/backward over grad_accum micro-batches; the logged loss is their mean
        step_loss = torch.zeros((), device=s.device)
        s.begin_step(step)
        for _ in range(t.grad_accum):
            batch = next(batches)
            weight = s.loss_weight(batch)  # 1.0 unless distributed
            with s.autocast():
                loss, aux = s.forward(step_model, batch)
                objective = (loss * weight + aux_weight * aux) / t.grad_accum
            # No trainable weight took part (the multimodal stage's adapter-only phase on a batch
            # without images): no gradient, and the optimiser leaves every weight as it is.
            if objective.requires_grad:
                objective.backward()
            step_loss += loss.detach().float() * weight / t.grad_accum
        s.before_update(step)
        # one collective per step: every rank sees the same mean, so all stop together
        mean_loss = distributed.mean(step_loss, s.dist)
        checks = {"training loss": mean_loss}
        if t.grad_clip:
            checks["gradient norm"] = torch.nn.utils.clip_grad_norm_(
                s.model.parameters(), t.grad_clip
            )
        _stop_if_not_finite(checks, step, s)
        s.optimizer.step()
        s.scheduler.step()
        s.optimizer.zero_grad(set_to_none=True)
        throughput.step()

        row = None
        if due(step, t.log_every):
            tps, mfu = throughput.read()
            row = {
                "step": step,
                "loss": float(mean_loss),
                "tokens_per_s": tps,
                "seq_len": s.seq_len,
                "lr": lr,
                "mfu": mfu,
            }
            if s.dist.is_main:
                _append_jsonl(s.metrics_path, [row])
        with throughput.paused():
            if due(step, t.eval_every):
                _stop_if_eval_not_finite(s.evaluate(step), step, s)
            if due(step, t.checkpoint_every):
                _stop_if_weights_not_finite(step, s)
                s.checkpoint(step)
        if on_step is not None:
            on_step(step, s.total, row)


def _not_finite_error(
    what: str, step: int, s: TrainState, spoils: str = "the update and checkpoint"
) -> TrainError:
    last = latest_checkpoint(s.out_dir)
    where = (
        f"the last checkpoint, {last}, is from before it" if last else "no checkpoint was written"
    )
    return TrainError(
        f"step {step}: non-finite {what}; the run stopped before {spoils} it would spoil "
        f"({where}); lower stages.{s.stage}.lr or check the data, then --resume or start again"
    )


def _stop_if_not_finite(values: dict[str, torch.Tensor], step: int, s: TrainState) -> None:
    """TrainError naming the first of `values` (scalars; a DTensor's full value under FSDP2)
    that is NaN or infinite; one host synchronisation for all of them."""
    full = [v.full_tensor() if hasattr(v, "full_tensor") else v for v in values.values()]
    finite = torch.stack([torch.isfinite(v.detach().float()).reshape(()) for v in full]).tolist()
    for what, ok in zip(values, finite, strict=True):
        if not ok:
            raise _not_finite_error(what, step, s)


def _stop_if_eval_not_finite(rows: list[dict[str, Any]], step: int, s: TrainState) -> None:
    """TrainError when an evaluation gave a NaN or infinite held-out loss (same on every rank:
    each evaluates the whole held-out set)."""
    bad = [
        f"{r['bucket']}/{r['group']}"
        for r in rows
        for key in ("loss", "loss_mismatched")
        if isinstance(r.get(key), float) and not math.isfinite(r[key])
    ]
    if bad:
        what = f"held-out loss ({', '.join(sorted(set(bad)))})"
        if step == 0:
            raise TrainError(
                f"step 0: non-finite {what} of the starting weights; the --init checkpoint is "
                "broken (NaN or infinite weights): start from another one"
            )
        raise _not_finite_error(what, step, s, "the checkpoint")


def _stop_if_weights_not_finite(step: int, s: TrainState) -> None:
    """TrainError instead of a checkpoint of NaN or infinite weights (all ranks agree)."""
    with torch.no_grad():
        flags = [
            torch.isfinite(p.to_local() if hasattr(p, "to_local") else p).all()
            for p in s.model.parameters()
        ]
        bad = (~torch.stack(flags).all()).float() if flags else torch.zeros((), device=s.device)
    if float(distributed.mean(bad.to(s.device), s.dist)) > 0:
        raise _not_finite_error("weights after the update", step, s, "the checkpoint")


def run_stage(
    stage: str,
    config_path: str | Path,
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    init: str | Path | None = None,
    steps: int | None = None,
    resume: bool = False,
    on_step: StepCallback | None = None,
) -> dict[str, Any]:
    """Train one stage into `out_dir` up to `steps` total steps; return the run summary."""
    state = setup(stage, config_path, data_dir, out_dir, init=init, steps=steps, resume=resume)
    train_loop(state, on_step)
    distributed.barrier(state.dist)
    summary = summarize(state.out_dir) if state.dist.is_main else None
    return distributed.broadcast_from_main(summary, state.dist)


def summarize(out_dir: str | Path) -> dict[str, Any]:
    """The summary of a run directory (also written to `summary.json`)."""
    out_dir = Path(out_dir)
    record = json.loads((out_dir / "run.json").read_text())
    metrics, evals = _read_jsonl(out_dir / "metrics.jsonl"), _read_jsonl(out_dir / "eval.jsonl")
    last_step = max((r["step"] for r in evals), default=0)
    before = _eval_summary([r for r in evals if r["step"] == 0])
    after = _eval_summary([r for r in evals if r["step"] == last_step])
    tps = [m["tokens_per_s"] for m in metrics if m["tokens_per_s"]]
    try:
        shares = mixture_shares(read_manifest(record["mixture"]))
    except (OSError, ValueError, KeyError, TypeError):
        shares = {}  # the mixture moved or went: the unweighted mean still stands
    summary = {
        "stage": record["stage"],
        "run_dir": str(out_dir),
        "checkpoint": str(latest_checkpoint(out_dir)),
        "steps": metrics[-1]["step"] if metrics else 0,
        "seq_len": metrics[-1]["seq_len"] if metrics else None,
        "final_loss": metrics[-1]["loss"] if metrics else None,
        "tokens_per_s": sum(tps) / len(tps) if tps else None,
        "eval_before": before,
        "eval": after,
        "eval_mean_before": _mean(list(before.values())),
        "eval_mean": _mean(list(after.values())),
        "eval_mixture_before": _weighted(before, shares),
        "eval_mixture": _weighted(after, shares),
        "init": record["init"],
        "mixture": record["mixture"],
        "device": record["device"],
        "rope_base": record["model_config"]["rope_base"],
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
