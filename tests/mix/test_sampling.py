"""Sampling arithmetic against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from training.mixture.sampling import (
    cap_targets,
    cut_at_stages,
    largest_remainder,
    repetition_plan,
    temperature_shares,
)


def test_temperature_one_keeps_natural_proportions():
    assert temperature_shares({"de": 300, "fr": 100}, 1.0) == pytest.approx(
        {"de": 0.75, "fr": 0.25}
    )


def test_temperature_two_takes_square_roots():
    # sqrt(900)=30, sqrt(100)=10 -> 0.75 / 0.25
    assert temperature_shares({"de": 900, "fr": 100, "xx": 0}, 2.0) == pytest.approx(
        {"de": 0.75, "fr": 0.25, "xx": 0.0}
    )


def test_epoch_cap_redistributes_excess_proportionally():
    # targets 600/300/100, caps (2 epochs) 400/1000/1000: de loses 200 -> fr +150, it +50
    out, short = cap_targets(
        {"de": 600, "fr": 300, "it": 100}, {"de": 200, "fr": 500, "it": 500}, 2
    )
    assert out == pytest.approx({"de": 400, "fr": 450, "it": 150}) and short == 0


def test_epoch_cap_iterates_until_stable():
    # de capped at 100 -> 900 over fr/it in 1:1 -> 450 each; fr cap 300 -> it takes 600
    out, short = cap_targets(
        {"de": 500, "fr": 250, "it": 250}, {"de": 50, "fr": 150, "it": 1000}, 2
    )
    assert out == pytest.approx({"de": 100, "fr": 300, "it": 600}) and short == 0


def test_epoch_cap_reports_shortfall_when_all_capped():
    out, short = cap_targets({"de": 500, "fr": 500}, {"de": 100, "fr": 100}, 2)
    assert out == pytest.approx({"de": 200, "fr": 200}) and short == pytest.approx(600)


def test_empty_group_gets_nothing_even_without_cap():
    out, short = cap_targets({"a": 50, "b": 50}, {"a": 0, "b": 10}, None)
    assert out == pytest.approx({"a": 0, "b": 100}) and short == 0


def test_largest_remainder_keeps_total():
    assert largest_remainder({"a": 1.5, "b": 1.5, "c": 1.0}) == {"a": 2, "b": 1, "c": 1}


def test_repetition_gives_whole_epochs_plus_exact_fraction():
    lengths = np.array([10, 20, 30, 40])
    docs, lens = repetition_plan(
        lengths, np.ones(4), 250, np.random.default_rng(0)
    )  # 2.5 epochs of 100
    assert lens.sum() == 250
    counts = np.bincount(docs, minlength=4)
    assert (counts >= 2).all() and (counts <= 3).all()


def test_repetition_weights_repeat_high_quality_documents():
    lengths = np.full(100, 10)
    weights = np.where(np.arange(100) < 50, 2.0, 1.0)
    docs, lens = repetition_plan(lengths, weights, 1500, np.random.default_rng(1))
    counts = np.bincount(docs, minlength=100)
    assert lens.sum() == 1500 and (counts[:50] == 2).all() and (counts[50:] == 1).all()


def test_repetition_is_deterministic_for_a_seed():
    lengths = np.random.default_rng(3).integers(1, 100, 500)
    a = repetition_plan(lengths, np.ones(500), 7777, np.random.default_rng(5))
    b = repetition_plan(lengths, np.ones(500), 7777, np.random.default_rng(5))
    assert all((x == y).all() for x, y in zip(a, b, strict=True))


def test_stage_split_follows_stage_tokens():
    copy, start, length, stage = cut_at_stages(np.full(100, 10), [800, 200])
    assert (copy == np.arange(100)).all() and (start == 0).all() and (length == 10).all()
    assert (stage[:80] == 0).all() and (stage[80:] == 1).all()
