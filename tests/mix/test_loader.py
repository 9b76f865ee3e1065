"""ShardLoader: deterministic order, exact mid-epoch resume, rank sharding; EvalSets."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import yaml

from training.loader import EvalSets, ShardLoader
from training.mixture.builder import build_mixture

from .conftest import base_spec

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def mix_dir(lake, tmp_path_factory):
    d = tmp_path_factory.mktemp("loader")
    spec = d / "spec.yaml"
    spec.write_text(yaml.safe_dump(base_spec(lake, shard_sequences=50)))  # several shards
    build_mixture(spec, d / "out")
    return d / "out"


def test_batches_have_shape_and_int64_dtype(mix_dir):
    batch = next(iter(ShardLoader(mix_dir, batch_size=8)))
    assert batch.shape == (8, 64) and batch.dtype == np.int64


def test_resume_mid_epoch_continues_the_uninterrupted_sequence(mix_dir):
    full = ShardLoader(mix_dir, batch_size=8, seed=3)
    n = full.batches_per_epoch
    expected = list(itertools.islice(iter(full), n + 5))  # crosses an epoch boundary
    first = ShardLoader(mix_dir, batch_size=8, seed=3)
    it = iter(first)
    for _ in range(n - 2):
        next(it)
    state = first.state_dict()
    resumed = ShardLoader(mix_dir, batch_size=8, seed=3)
    resumed.load_state_dict(state)
    got = list(itertools.islice(iter(resumed), 7))
    assert all((a == b).all() for a, b in zip(got, expected[n - 2 :], strict=True))


def test_epochs_are_reshuffled_and_cover_each_sequence_once(mix_dir):
    loader = ShardLoader(mix_dir, batch_size=1, seed=0)
    e0, e1 = loader.epoch_order(0), loader.epoch_order(1)
    assert sorted(e0) == list(range(loader.num_sequences)) and (e0 != e1).any()
    assert (
        ShardLoader(mix_dir, 1, shuffle=False).epoch_order(0) == np.arange(loader.num_sequences)
    ).all()


def test_ranks_get_disjoint_batches(mix_dir):
    r0 = ShardLoader(mix_dir, batch_size=4, seed=1, rank=0, world_size=2)
    r1 = ShardLoader(mix_dir, batch_size=4, seed=1, rank=1, world_size=2)
    a = np.concatenate(list(itertools.islice(iter(r0), r0.batches_per_epoch)))
    b = np.concatenate(list(itertools.islice(iter(r1), r1.batches_per_epoch)))
    rows_a, rows_b = {r.tobytes() for r in a}, {r.tobytes() for r in b}
    assert len(rows_a & rows_b) <= 1  # only identical padded/duplicate rows could coincide


def test_state_from_another_layout_is_refused(mix_dir):
    state = ShardLoader(mix_dir, batch_size=8).state_dict()
    with pytest.raises(ValueError, match="batch_size"):
        ShardLoader(mix_dir, batch_size=4).load_state_dict(state)


def test_eval_sets_read_every_listed_group(mix_dir):
    evals = EvalSets(mix_dir)
    assert set(evals.keys()) == {("web", "all"), ("multilingual", "de"), ("multilingual", "fr")}
    for (_, _), arr in evals.items():
        assert arr.dtype == np.uint32 and arr.shape[1] == 64
    with pytest.raises(KeyError, match="no eval set"):
        evals.get("web", "xx")


def test_missing_mixture_dir_gives_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="refinery mix build"):
        ShardLoader(tmp_path, batch_size=1)
