"""What every model trained here shares: the learning-rate schedule, the optimiser, the pair loop.

As torchtitan's `components/` serve every model its trainer runs, the language model
(`training.trainer`, `training.multimodal`), CLIP (`training.clip`) and CoCa (`training.coca`) take
their learning rate from `lr_multiplier` (through `lr_scheduler`) and their AdamW from
`build_optimizer`; CLIP and CoCa run the same loop, `train_pairs`, and differ only in the loss
they hand it. A fix to warm-up, weight decay or the loop lands once.

The schedule is open_clip's (`open_clip_train.scheduler.cosine_lr`): optimiser steps count from 0,
warm-up is `(step + 1) / warmup_steps`, and the decay's progress is `(step - warmup_steps) /
(total_steps - warmup_steps)`, so the last step still learns.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch

NoDecayRule = Callable[[str, torch.nn.Parameter], bool]
StepCallback = Callable[[int, int, dict[str, Any] | None], None]


def lr_multiplier(
    step: int,
    *,
    total_steps: int,
    warmup_steps: int,
    schedule: str = "cosine",
    min_ratio: float = 0.1,
    decay_fraction: float = 0.2,
) -> float:
    """Multiplier of the peak LR for optimiser step `step` (0-based); stays at min_ratio past the end.

    Linear warm-up over `warmup_steps`, then `cosine` down to `min_ratio` at `total_steps`, or
    `wsd` (warm-up, stable at the peak, linear decay over the last `decay_fraction` of the steps).
    """
    if warmup_steps and step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "cosine":
        span = max(1, total_steps - warmup_steps)
        progress = min(1.0, (step - warmup_steps) / span)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    if schedule == "wsd":
        decay_steps = max(1, round(total_steps * decay_fraction))
        decay_start = total_steps - decay_steps
        if step < decay_start:
            return 1.0
        progress = min(1.0, (step - decay_start) / decay_steps)
        return 1 - (1 - min_ratio) * progress
    raise ValueError(f"unknown schedule {schedule!r}; use 'cosine' or 'wsd'")


def lr_scheduler(
    optimizer: torch.optim.Optimizer,
    *,
    total_steps: int,
    warmup_steps: int,
    schedule: str = "cosine",
    min_ratio: float = 0.1,
    decay_fraction: float = 0.2,
) -> torch.optim.lr_scheduler.LambdaLR:
    """A LambdaLR that sets each group's LR to its initial LR times `lr_multiplier(step)`."""

    # A plain function, not a partial: LambdaLR leaves functions out of its state_dict, so a
    # checkpoint holds only the step and the base rates, and a resumed run rebuilds the rule.
    def multiplier(step: int) -> float:
        return lr_multiplier(
            step,
            total_steps=total_steps,
            warmup_steps=warmup_steps,
            schedule=schedule,
            min_ratio=min_ratio,
            decay_fraction=decay_fraction,
        )

    return torch.optim.lr_scheduler.LambdaLR(optimizer, multiplier)


def no_decay_vectors(name: str, param: torch.nn.Parameter) -> bool:
    """No weight decay on vectors (gains, biases): the language model's rule."""
    return param.ndim < 2


def no_decay_open_clip(name: str, param: torch.nn.Parameter) -> bool:
    """open_clip's rule (vectors, batch/layer norms, biases, logit scale) plus embeddings."""
    return (
        param.ndim < 2
        or "bn" in name
        or "ln" in name
        or "bias" in name
        or "logit_scale" in name
        or "embedding" in name
    )


def build_optimizer(
    model: torch.nn.Module,
    *,
    lr: float,
    weight_decay: float,
    no_decay: NoDecayRule = no_decay_vectors,
    betas: Iterable[float] = (0.9, 0.999),
    eps: float = 1e-8,
    fused: bool | None = None,
) -> torch.optim.AdamW:
    """AdamW over the trainable parameters: group 0 decays, group 1 (`no_decay` true) does not.

    Frozen parameters are left out. `fused=None` lets torch pick its implementation; a bool is
    passed through (torch then skips its foreach default, so keep None where that matters).
    """
    decay, exempt = [], []
    for name, param in model.named_parameters():
        if param.requires_grad:
            (exempt if no_decay(name, param) else decay).append(param)
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": exempt, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=tuple(betas), eps=eps, fused=fused)


def train_pairs(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    loss_of: Callable[[torch.Tensor], torch.Tensor],
    *,
    examples: int,
    batch: int,
    steps: int,
    seed: int,
    on_step: StepCallback | None = None,
    error: type[Exception] = ValueError,
) -> list[float]:
    """The CLIP/CoCa loop: `steps` optimiser steps over seeded per-epoch permutations; the losses.

    `loss_of(idx)` returns the loss of the batch of rows `idx` (a tensor of indices into the
    `examples` rows). After each step the model's `logit_scale`, where it has one, is clamped to at
    most 100 as open_clip's trainer does. A non-finite loss stops the run with `error`, before it
    reaches the weights. `on_step(step, steps, row)` gets step (1-based), loss, lr and pairs_per_s.
    """
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(examples, generator=gen)
    cursor, losses = 0, []
    logit_scale = getattr(model, "logit_scale", None)
    for step in range(1, steps + 1):
        if cursor + batch > len(order):
            order, cursor = torch.randperm(examples, generator=gen), 0
        idx = order[cursor : cursor + batch]
        cursor += batch
        rate = optimizer.param_groups[0]["lr"]
        tick = time.perf_counter()
        loss = loss_of(idx)
        value = float(loss.detach())
        if not math.isfinite(value):
            peak = scheduler.base_lrs[0]
            raise error(f"loss is {value} at step {step}; lower the learning rate ({peak})")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        if logit_scale is not None:
            with torch.no_grad():
                logit_scale.clamp_(0, math.log(100))
        losses.append(value)
        if on_step is not None:
            pace = batch / max(time.perf_counter() - tick, 1e-9)
            on_step(step, steps, {"step": step, "loss": value, "lr": rate, "pairs_per_s": pace})
    return losses
