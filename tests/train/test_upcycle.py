"""Sparse upcycling: a dense checkpoint becomes an MoE whose initial outputs equal the dense model's."""

from __future__ import annotations

import json

import pytest
import torch
import yaml
from typer.testing import CliRunner

from pipelines.cli import app
from training.checkpoint import list_checkpoints, load_checkpoint
from training.model import ModelConfig, MoE, Transformer
from training.trainer import run_stage
from training.upcycle import UpcycleError, upcycle_state

from .conftest import write_config

pytestmark = pytest.mark.timeout(120)


def dense_cfg(**kw) -> ModelConfig:
    base = dict(
        vocab_size=60,
        d_model=32,
        n_layer=4,
        n_head=4,
        n_kv_head=2,
        window=8,
        max_seq_len=64,
        boundary_token_id=0,
        init_std=0.2,  # FFN outputs large enough that a wrong expert mix shows in the logits
    )
    return ModelConfig(**{**base, **kw})


@pytest.mark.parametrize(
    "kw, experts, top_k",
    [
        ({}, 4, 2),
        ({"kv_share_fraction": 0.25, "local_per_global": 1}, 8, 3),
        ({"tracks": 2, "track_block_depth": 2}, 4, 1),
    ],
)
def test_upcycled_logits_equal_the_dense_logits(kw, experts, top_k):
    torch.manual_seed(0)
    dense = Transformer(dense_cfg(**kw)).eval()
    cfg, state = upcycle_state(dense.config, dense.state_dict(), experts, top_k=top_k, seed=1)
    moe = Transformer(cfg).eval()
    moe.load_state_dict(state)
    assert [i for i in range(cfg.n_layer) if cfg.is_moe(i)] == [1, 3]
    moes = [m for m in moe.modules() if isinstance(m, MoE)]
    assert len(moes) == 2 * cfg.tracks and all(len(m.experts) == experts for m in moes)
    # the router is random (not all-equal logits): tokens spread over different experts
    assert all(m.router.weight.std() > 0.1 for m in moes)
    idx = torch.randint(1, 60, (3, 40))
    idx[:, 17] = 0
    with torch.no_grad():
        a, _, _ = dense(idx)
        b, _, aux = moe(idx)
    assert a.abs().mean() > 0.5
    torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
    assert aux > 0
    # the equality comes from the experts being copies: perturb one and the logits move
    with torch.no_grad():
        moes[0].experts[1].down.weight.mul_(3)
        for m in moes:
            m.experts[0].down.weight.mul_(3)
    assert (moe(idx)[0] - a).abs().max() > 1e-2


def test_upcycling_refuses_a_model_that_is_already_moe():
    model = Transformer(dense_cfg(moe_experts=4, moe_hidden=32))
    with pytest.raises(UpcycleError, match="already has moe_experts=4"):
        upcycle_state(model.config, model.state_dict(), 4)
    with pytest.raises(UpcycleError, match="--top-k 3"):
        upcycle_state(dense_cfg(), Transformer(dense_cfg()).state_dict(), 2, top_k=3)


def _dense_config(path):
    path = write_config(path, checkpoint_every=4, eval_every=4)
    raw = yaml.safe_load(path.read_text())
    raw["model"].update(moe_experts=0, moe_hidden=0, kv_share_fraction=0.0)
    path.write_text(yaml.safe_dump(raw))
    return path, raw


def test_cli_upcycles_a_run_and_training_continues_from_it(tmp_path, mixtures):
    dense_config, raw = _dense_config(tmp_path / "dense.yaml")
    run_stage("pretrain", dense_config, mixtures["pretrain"], tmp_path / "dense", steps=4)
    runner = CliRunner()
    args = ["train", "upcycle", "--init", str(tmp_path / "dense"), "--experts", "4"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "moe")])
    assert result.exit_code == 0, result.output
    assert "initial outputs equal the dense model's" in result.output
    record = json.loads((tmp_path / "moe" / "upcycle.json").read_text())
    assert record["moe_layers"] == [1, 3] and record["max_logit_diff"] < 1e-4
    assert record["params_moe"] > record["params_dense"]
    assert record["params_dense"] < record["active_params_moe"] < record["params_moe"]
    saved = load_checkpoint(list_checkpoints(tmp_path / "moe")[-1])
    assert saved["model_config"]["moe_experts"] == 4 and saved["step"] == 4
    dense = load_checkpoint(list_checkpoints(tmp_path / "dense")[-1])
    assert "tokenizer_sha256" in saved  # the dense run's tokenizer: --init checks it
    assert saved["tokenizer_sha256"] == dense["tokenizer_sha256"]

    again = runner.invoke(app, [*args, "--out", str(tmp_path / "moe")])
    assert again.exit_code == 2 and "already holds a checkpoint" in again.output

    # cpt from the dense run (a dense config) and from the upcycled one (the MoE config the
    # CLI printed): the step-0 held-out losses are equal, then the MoE trains on
    raw["model"].update(record["model_section"])
    moe_config = tmp_path / "moe.yaml"
    moe_config.write_text(yaml.safe_dump(raw))
    run_stage(
        "cpt",
        dense_config,
        mixtures["cpt"],
        tmp_path / "cpt-dense",
        init=tmp_path / "dense",
        steps=1,
    )
    run_stage(
        "cpt", moe_config, mixtures["cpt"], tmp_path / "cpt-moe", init=tmp_path / "moe", steps=6
    )

    def evals(run, step):
        rows = [json.loads(r) for r in (tmp_path / run / "eval.jsonl").read_text().splitlines()]
        return {(r["bucket"], r["group"]): r["loss"] for r in rows if r["step"] == step}

    start_dense, start_moe = evals("cpt-dense", 0), evals("cpt-moe", 0)
    assert start_dense.keys() == start_moe.keys()
    for key in start_dense:
        assert start_moe[key] == pytest.approx(start_dense[key], abs=1e-5)
    assert all(evals("cpt-moe", 6)[k] < start_moe[k] for k in start_moe)
    trained = load_checkpoint(list_checkpoints(tmp_path / "cpt-moe")[-1])["model"]
    experts = [trained[f"layers.1.ffn.experts.{e}.down.weight"] for e in range(4)]
    assert not torch.equal(experts[0], experts[1])  # the copies have started to differ
