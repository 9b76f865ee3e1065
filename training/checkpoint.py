"""Checkpoints: model, optimiser, scheduler, every RNG and the data-loader state in one file.

A run directory keeps them as `checkpoints/step_0000100.pt`; the latest is the highest step.
Files are written atomically (temp file + rename) so a crash never leaves a truncated latest.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

_NAME = re.compile(r"^step_(\d+)\.pt$")


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
    """Every RNG the training step may touch."""
    state = {
        "torch": torch.get_rng_state(),
        "numpy": np.random.get_state(),
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore the RNGs saved by `rng_state()`."""
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(run_dir: str | Path, step: int, payload: dict[str, Any], keep: int) -> Path:
    """Write `payload` (+ RNG states) as the checkpoint of `step`; keep only the newest `keep`."""
    d = checkpoint_dir(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"step_{step:07d}.pt"
    tmp = path.with_name(path.name + ".tmp")
    torch.save({**payload, "step": step, "rng": rng_state()}, tmp)
    os.replace(tmp, path)
    for old in list_checkpoints(run_dir)[:-keep]:
        old.unlink()
    return path


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint onto the CPU (our own files: they hold NumPy/Python RNG tuples)."""
    return torch.load(path, map_location="cpu", weights_only=False)
