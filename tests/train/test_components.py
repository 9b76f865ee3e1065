"""training/components.py: the one schedule, optimiser builder and CLIP/CoCa loop (pure, no data)."""

from __future__ import annotations

import math

import pytest
import torch
from open_clip_train.scheduler import cosine_lr

from training.components import (
    build_optimizer,
    lr_multiplier,
    lr_scheduler,
    no_decay_open_clip,
    no_decay_vectors,
    train_pairs,
)


def test_warm_up_is_linear_and_reaches_the_peak_on_its_last_step():
    got = [lr_multiplier(s, total_steps=100, warmup_steps=4) for s in range(4)]
    assert got == [0.25, 0.5, 0.75, 1.0]
    # no warm-up: the first step is already at the peak
    assert lr_multiplier(0, total_steps=100, warmup_steps=0) == 1.0


def test_cosine_falls_from_the_peak_to_min_ratio_and_stays_there_past_the_end():
    rates = [lr_multiplier(s, total_steps=20, warmup_steps=4, min_ratio=0.1) for s in range(4, 21)]
    assert rates[0] == 1.0  # the first step after warm-up is at the peak
    assert all(a > b for a, b in zip(rates, rates[1:], strict=False))
    assert rates[8] == pytest.approx(0.1 + 0.9 * 0.5)  # half way through the decay
    assert rates[-1] == pytest.approx(0.1)  # step == total_steps
    assert rates[-2] > 0.1  # the last step of the run still learns
    for past in (21, 50, 10_000):
        assert lr_multiplier(past, total_steps=20, warmup_steps=4, min_ratio=0.1) == pytest.approx(
            0.1
        )


def test_wsd_is_stable_then_decays_linearly_over_its_fraction():
    kw = {"total_steps": 100, "warmup_steps": 10, "schedule": "wsd", "min_ratio": 0.2}
    assert lr_multiplier(9, **kw) == 1.0
    assert lr_multiplier(10, **kw) == 1.0 and lr_multiplier(79, **kw) == 1.0
    assert lr_multiplier(80, **kw) == 1.0  # decay starts at 100 - 0.2 * 100
    assert lr_multiplier(90, **kw) == pytest.approx(1 - 0.8 * 0.5)
    assert lr_multiplier(100, **kw) == pytest.approx(0.2)
    assert lr_multiplier(500, **kw) == pytest.approx(0.2)
    assert lr_multiplier(95, **{**kw, "decay_fraction": 0.1}) == pytest.approx(1 - 0.8 * 0.5)


def test_an_unknown_schedule_names_the_choices():
    with pytest.raises(ValueError, match="'cosine' or 'wsd'"):
        lr_multiplier(50, total_steps=100, warmup_steps=1, schedule="linear")


@pytest.mark.parametrize(("warmup", "steps"), [(1, 10), (3, 10), (0, 7), (10, 300)])
def test_cosine_to_zero_is_open_clips_cosine_lr_step_for_step(warmup, steps):
    """CLIP and CoCa follow open_clip's trainer: its cosine_lr, called with 0-based steps."""
    param = torch.nn.Parameter(torch.zeros(2))
    ours = torch.optim.SGD([param], lr=2e-3)
    sched = lr_scheduler(ours, total_steps=steps, warmup_steps=warmup, min_ratio=0.0)
    theirs = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=2e-3)
    adjust = cosine_lr(theirs, 2e-3, warmup, steps)
    for step in range(steps):
        assert ours.param_groups[0]["lr"] == pytest.approx(adjust(step), rel=1e-12, abs=1e-15)
        ours.step()
        sched.step()
    assert adjust(steps - 1) > 0  # open_clip's last step learns; the old 1-based cosine gave 0


def test_the_scheduler_keeps_no_rule_in_its_state_dict():
    """A checkpoint holds the step and base rates only (as the language model's always did)."""
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    state = lr_scheduler(opt, total_steps=10, warmup_steps=2).state_dict()
    assert state["lr_lambdas"] == [None]
    assert state["base_lrs"] == [1.0]


class _Named(torch.nn.Module):
    """Parameters named as open_clip's models name them."""

    def __init__(self):
        super().__init__()
        self.token_embedding = torch.nn.Embedding(10, 4)
        self.positional_embedding = torch.nn.Parameter(torch.zeros(6, 4))
        self.c_fc = torch.nn.Linear(4, 8)
        self.ln_1 = torch.nn.LayerNorm(4)
        self.bn1 = torch.nn.BatchNorm2d(3)
        self.proj = torch.nn.Parameter(torch.zeros(4, 4))
        self.logit_scale = torch.nn.Parameter(torch.tensor(1.0))
        self.frozen = torch.nn.Linear(4, 4)
        self.frozen.requires_grad_(False)


def _names(model, params):
    ids = {id(p) for p in params}
    return sorted(n for n, p in model.named_parameters() if id(p) in ids)


def test_the_language_model_rule_exempts_only_vectors_and_leaves_frozen_parts_out():
    model = _Named()
    opt = build_optimizer(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95), fused=False)
    decay, exempt = opt.param_groups
    assert decay["weight_decay"] == 0.1 and exempt["weight_decay"] == 0.0
    assert _names(model, decay["params"]) == [
        "c_fc.weight",
        "positional_embedding",
        "proj",
        "token_embedding.weight",
    ]
    assert "frozen.weight" not in _names(model, decay["params"] + exempt["params"])
    assert _names(model, exempt["params"]) == [
        "bn1.bias",
        "bn1.weight",
        "c_fc.bias",
        "ln_1.bias",
        "ln_1.weight",
        "logit_scale",
    ]
    assert opt.defaults["betas"] == (0.9, 0.95) and opt.defaults["eps"] == 1e-8
    assert opt.defaults["fused"] is False
    assert no_decay_vectors("anything", torch.nn.Parameter(torch.zeros(3)))


def test_the_open_clip_rule_also_exempts_norms_biases_scale_and_embeddings():
    model = _Named()
    opt = build_optimizer(
        model, lr=1e-3, weight_decay=0.2, no_decay=no_decay_open_clip, betas=(0.9, 0.98), eps=1e-6
    )
    decay, exempt = opt.param_groups
    assert _names(model, decay["params"]) == ["c_fc.weight", "proj"]
    assert "token_embedding.weight" in _names(model, exempt["params"])
    assert "positional_embedding" in _names(model, exempt["params"])
    # fused=None leaves torch its own choice (foreach on CUDA), as open_clip's trainer does
    assert opt.defaults["fused"] is None and opt.defaults["eps"] == 1e-6


class _Pairs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3))
        self.logit_scale = torch.nn.Parameter(torch.tensor(4.0))


def _loop(model, loss_of, *, steps, examples=5, batch=2, seed=0, on_step=None, error=ValueError):
    opt = build_optimizer(model, lr=0.5, weight_decay=0.0)
    sched = lr_scheduler(opt, total_steps=steps, warmup_steps=1, min_ratio=0.0)
    return train_pairs(
        model,
        opt,
        sched,
        loss_of,
        examples=examples,
        batch=batch,
        steps=steps,
        seed=seed,
        on_step=on_step,
        error=error,
    )


def test_the_loop_draws_seeded_epochs_clamps_the_logit_scale_and_reports_each_step():
    model, seen, rows = _Pairs(), [], []

    def loss_of(idx):
        seen.append(idx.tolist())
        return (model.w.sum() - 10) ** 2 - model.logit_scale * 10  # pushes the scale up

    losses = _loop(model, loss_of, steps=6, on_step=lambda s, n, r: rows.append(r))
    # 5 rows, batches of 2: two batches per epoch, each epoch a fresh permutation without repeats
    for epoch in (seen[0:2], seen[2:4], seen[4:6]):
        flat = epoch[0] + epoch[1]
        assert len(set(flat)) == 4 and set(flat) <= set(range(5))
    assert float(model.logit_scale.detach()) <= math.log(100) + 1e-6
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6] and losses == [r["loss"] for r in rows]
    assert rows[0]["lr"] == 0.5 and rows[-1]["lr"] > 0
    again: list = []
    _loop(_Pairs(), lambda idx: again.append(idx.tolist()) or model.w.sum() * 0, steps=6)
    assert again == seen  # the same seed draws the same batches


class _Refused(ValueError):
    pass


def test_a_non_finite_loss_stops_the_loop_before_it_reaches_the_weights():
    model = _Pairs()

    def loss_of(idx):
        return model.w.sum() * float("nan")

    with pytest.raises(_Refused, match=r"loss is nan at step 1; lower the learning rate \(0.5\)"):
        _loop(model, loss_of, steps=3, error=_Refused)
    assert torch.equal(model.w.detach(), torch.ones(3))
