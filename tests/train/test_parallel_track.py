"""Parallel-Track model option (tracks K, track blocks of depth D) against plain references."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
import yaml

import training.model as model_mod
from training.model import Block, ModelConfig, MoE, Transformer, combine_tracks

from .conftest import write_config

pytestmark = pytest.mark.timeout(120)


def cfg(**kw) -> ModelConfig:
    base = dict(
        vocab_size=50,
        d_model=32,
        n_layer=4,
        n_head=4,
        n_kv_head=2,
        window=4,
        max_seq_len=64,
        tracks=2,
        track_block_depth=2,
        boundary_token_id=0,
        init_std=0.2,  # residual updates big enough that a wrong track wiring shows in the logits
    )
    return ModelConfig(**{**base, **kw})


def naive_tracks_forward(model: Transformer, idx: torch.Tensor, image_embeds=None):
    """Logits of a PT model computed by hand: for each track block, each track's layers run as
    ordinary Blocks on the block's input, one track after another; the next block starts from the
    input plus the sum of the tracks' updates."""
    c = model.config
    x, rope, ctx = model._inputs(idx, image_embeds, "dense")
    kv = [{} for _ in model.tracks]
    for first in range(0, c.n_layer, c.track_block_depth):
        update = torch.zeros_like(x)
        for k, track in enumerate(model.tracks):
            h = x
            for i in range(first, first + c.track_block_depth):
                layer = track.layers[i]
                assert isinstance(layer, Block)
                source = c.kv_source(i)
                h, kv[k][i], _ = layer(h, rope, kv[k][source] if source is not None else None, ctx)
            update = update + (h - x)
        x = x + update
    return model.lm_head(model.norm(x))


CASES = {
    "local/global + documents": {},
    "moe": {"moe_experts": 4, "moe_top_k": 2, "moe_hidden": 64},
    "kv sharing + moe, 4 tracks": {
        "n_layer": 8,
        "n_head": 8,
        "n_kv_head": 4,
        "tracks": 4,
        "track_block_depth": 4,
        "kv_share_fraction": 0.25,
        "local_per_global": 1,
        "moe_experts": 2,
        "moe_top_k": 1,
        "moe_hidden": 64,
    },
    "one block": {"track_block_depth": 4},
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("backend", ["chunked", "dense"])
def test_batched_tracks_equal_tracks_run_one_after_another(case, backend):
    torch.manual_seed(0)
    model = Transformer(cfg(**CASES[case]))
    idx = torch.randint(1, 50, (2, 24))
    idx[:, 9] = 0  # a document boundary: attention must stay inside each document
    logits, loss, aux = model(idx, idx, attention_backend=backend)
    ref_logits, ref_loss, ref_aux = model.reference_forward(idx, idx, attention_backend=backend)
    naive = naive_tracks_forward(model, idx)
    assert logits.abs().mean() > 0.3
    torch.testing.assert_close(logits, ref_logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(logits, naive, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(aux, ref_aux, rtol=1e-5, atol=1e-6)
    if model.config.moe_experts:
        assert aux > 0
    # the combine rule matters: averaging the tracks instead of summing their updates differs
    ends = torch.randn(3, 2, 4, 8)
    start = torch.randn(2, 4, 8)
    assert torch.allclose(combine_tracks(start, ends), start + (ends - start).sum(0))


def test_image_path_and_gradients_reach_every_track():
    torch.manual_seed(0)
    model = Transformer(cfg(image_embed_dim=6, image_token_id=3))
    idx = torch.randint(4, 50, (2, 16))
    idx[0, 2:5] = 3
    idx[1, 7] = 3
    images = torch.randn(4, 6)
    logits, loss, _ = model(idx, idx, image_embeds=images, attention_backend="dense")
    torch.testing.assert_close(
        logits, naive_tracks_forward(model, idx, images), rtol=1e-5, atol=1e-5
    )
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_synchronisation_points_are_layers_over_block_depth(monkeypatch):
    calls = []

    def counting(start, ends):
        calls.append(len(ends))
        return combine_tracks(start, ends)

    monkeypatch.setattr(model_mod, "combine_tracks", counting)
    idx = torch.randint(1, 50, (1, 12))
    for n_layer, depth in ((8, 4), (8, 2), (8, 1), (4, 4)):
        c = cfg(n_layer=n_layer, track_block_depth=depth)
        calls.clear()
        Transformer(c)(idx)
        assert len(calls) == n_layer // depth == c.sync_points()
        assert calls == [2] * len(calls)  # all K tracks meet at each point
    dense = cfg(n_layer=8, tracks=1)
    calls.clear()
    Transformer(dense)(idx)
    assert calls == [] and dense.sync_points() == 16  # 2L all-reduces under tensor parallelism
    assert cfg(n_layer=8, track_block_depth=4).sync_points() == 2  # L/D: 87.5% fewer


def test_moe_routing_stays_inside_each_track():
    torch.manual_seed(0)
    model = Transformer(cfg(moe_experts=4, moe_top_k=2, moe_hidden=64))
    seen: dict[tuple[int, int, int], int] = {}

    def hook(key):
        def fn(module, args, out):
            seen[key] = seen.get(key, 0) + args[0].size(0)

        return fn

    for k, track in enumerate(model.tracks):
        for i, layer in enumerate(track.layers):
            if isinstance(layer.ffn, MoE):
                for e, expert in enumerate(layer.ffn.experts):
                    expert.register_forward_hook(hook((k, i, e)))
    B, T = 2, 10
    model(torch.randint(1, 50, (B, T)))
    moe_layers = [i for i in range(4) if model.config.is_moe(i)]
    assert moe_layers == [1, 3]
    for k in range(2):
        for i in moe_layers:
            # every token of track k went to exactly top_k of track k's own experts
            assert sum(seen.get((k, i, e), 0) for e in range(4)) == B * T * 2
    assert len({e for (_, _, e), n in seen.items() if n}) > 1  # routing, not one fixed expert


def test_parameters_match_the_dense_model_of_the_same_config():
    pt = Transformer(cfg(n_layer=8, track_block_depth=4, moe_experts=4, moe_hidden=64))
    dense = Transformer(cfg(n_layer=8, tracks=1, moe_experts=4, moe_hidden=64))
    d = 32
    extra_norms = (2 - 1) * 8 * 2 * d  # each track has its own two norms per layer
    extra_routers = (2 - 1) * 4 * d * 4  # and its own router in each of the 4 MoE layers
    assert pt.num_params() == dense.num_params() + extra_norms + extra_routers
    assert pt.flops_per_token(64) == pytest.approx(dense.flops_per_token(64), rel=0.02)
    keys = set(pt.state_dict())
    assert "tracks.1.layers.7.attn.q_proj.weight" in keys
    assert pt.tracks[1].layers[7].attn.q_proj.weight.shape == (2 * 8, d)  # 2 of the 4 heads
    # tracks = 1 keeps the plain decoder's parameter names (checkpoints stay loadable)
    assert "layers.0.attn.q_proj.weight" in dense.state_dict()
    assert not any(k.startswith("tracks.") for k in dense.state_dict())


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"track_block_depth": 3}, "track_block_depth=3"),
        ({"track_block_depth": 0}, "track_block_depth=0"),
        ({"tracks": 4, "n_kv_head": 2}, "n_kv_head=2 must be divisible by tracks=4"),
        ({"tracks": 0}, "tracks must be >= 1"),
    ],
)
def test_invalid_track_configs_name_the_field(kw, message):
    with pytest.raises(ValueError, match=message):
        cfg(**kw)


def test_checkpoints_from_before_tracks_still_load():
    from training.trainer import TrainError, check_compatible

    model_cfg = cfg(tracks=1, track_block_depth=0)
    saved = dataclasses.asdict(model_cfg)
    del saved["tracks"], saved["track_block_depth"]
    check_compatible(saved, model_cfg, Path("old.pt"))
    with pytest.raises(TrainError, match="tracks: checkpoint 2 vs config 1"):
        check_compatible(dataclasses.asdict(cfg()), model_cfg, Path("pt.pt"))


def test_trainer_runs_and_resumes_a_parallel_track_config(tmp_path, mixtures):
    from training.trainer import run_stage

    path = write_config(tmp_path / "pt.yaml", checkpoint_every=3, eval_every=3)
    raw = yaml.safe_load(path.read_text())
    raw["model"].update(tracks=2, track_block_depth=2)
    path.write_text(yaml.safe_dump(raw))
    run_stage("pretrain", path, mixtures["pretrain"], tmp_path / "straight", steps=5)
    run_stage("pretrain", path, mixtures["pretrain"], tmp_path / "resumed", steps=3)
    run_stage("pretrain", path, mixtures["pretrain"], tmp_path / "resumed", steps=5, resume=True)

    def losses(run):
        rows = (tmp_path / run / "metrics.jsonl").read_text().splitlines()
        return [json.loads(r)["loss"] for r in rows]

    assert len(losses("straight")) == 5 and losses("resumed") == losses("straight")
    record = json.loads((tmp_path / "straight" / "run.json").read_text())
    assert record["model_config"]["tracks"] == 2
