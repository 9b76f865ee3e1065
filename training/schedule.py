"""Learning-rate schedules as multipliers of the peak rate: linear warm-up, then cosine or WSD."""

from __future__ import annotations

import math


def lr_multiplier(
    step: int,
    *,
    total_steps: int,
    warmup_steps: int,
    schedule: str = "cosine",
    min_ratio: float = 0.1,
    decay_fraction: float = 0.2,
) -> float:
    """Multiplier of the peak LR for optimiser step `step` (0-based); stays at min_ratio past the end."""
    if warmup_steps and step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "cosine":
        span = max(1, total_steps - warmup_steps)
        progress = min(1.0, (step - warmup_steps) / span)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    if schedule == "wsd":
        # Warm-up, stable at the peak, then a linear decay over the last decay_fraction of steps.
        decay_steps = max(1, round(total_steps * decay_fraction))
        decay_start = total_steps - decay_steps
        if step < decay_start:
            return 1.0
        progress = min(1.0, (step - decay_start) / decay_steps)
        return 1 - (1 - min_ratio) * progress
    raise ValueError(f"unknown schedule {schedule!r}; use 'cosine' or 'wsd'")
