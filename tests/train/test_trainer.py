"""The trainer: loss falls, exact resume, stage chaining at 4x length, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from training.checkpoint import list_checkpoints, load_checkpoint
from training.train_config import ConfigError, load_run_config
from training.trainer import TrainError, run_stage

from .conftest import write_config, write_mixture

pytestmark = pytest.mark.timeout(120)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow  # over 10 s on a quiet 2-core machine
def test_loss_falls_on_the_packaged_tiny_config(tmp_path):
    mix = write_mixture(tmp_path / "mix", seq_len=128, num_sequences=48, seed=5)
    summary = run_stage("pretrain", "tiny", mix, tmp_path / "run", steps=40)
    metrics = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [10, 20, 30, 40]
    assert all(set(m) == {"step", "loss", "tokens_per_s", "seq_len", "lr", "mfu"} for m in metrics)
    assert metrics[0]["mfu"] is None and metrics[0]["seq_len"] == 128
    assert metrics[-1]["loss"] < metrics[0]["loss"] - 0.5
    assert summary["eval_mean"] < summary["eval_mean_before"] - 0.5
    evals = read_jsonl(tmp_path / "run" / "eval.jsonl")
    assert {(e["step"], e["bucket"], e["group"]) for e in evals} == {
        (s, "web", g) for s in (0, 40) for g in ("en", "fr")
    }


def test_resume_after_a_crash_reproduces_the_uninterrupted_losses_bit_exactly(tmp_path, mixtures):
    config = write_config(tmp_path / "c.yaml", checkpoint_every=3, eval_every=4)
    run_stage("pretrain", config, mixtures["pretrain"], tmp_path / "straight", steps=10)

    def crash(step, total, row):
        if step == 7:  # after the step-6 checkpoint and one more logged step
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_stage(
            "pretrain", config, mixtures["pretrain"], tmp_path / "crashed", steps=10, on_step=crash
        )
    assert read_jsonl(tmp_path / "crashed" / "metrics.jsonl")[-1]["step"] == 7
    run_stage("pretrain", config, mixtures["pretrain"], tmp_path / "crashed", steps=10, resume=True)

    def curve(run, name, keys):
        return [tuple(r[k] for k in keys) for r in read_jsonl(tmp_path / run / name)]

    keys = ("step", "loss", "lr")
    assert curve("crashed", "metrics.jsonl", keys) == curve("straight", "metrics.jsonl", keys)
    ekeys = ("step", "bucket", "group", "loss")
    assert curve("crashed", "eval.jsonl", ekeys) == curve("straight", "eval.jsonl", ekeys)
    a = load_checkpoint(list_checkpoints(tmp_path / "straight")[-1])["model"]
    b = load_checkpoint(list_checkpoints(tmp_path / "crashed")[-1])["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoint_holds_model_optimizer_scheduler_rng_and_loader_state(pretrained_run):
    ckpt = load_checkpoint(list_checkpoints(pretrained_run)[-1])
    assert {"model", "optimizer", "scheduler", "loader", "rng", "model_config", "step"} <= set(ckpt)
    assert set(ckpt["rng"]) >= {"torch", "numpy", "python"}
    assert ckpt["step"] == 20 and ckpt["loader"]["batch_size"] == 4


def test_cpt_then_long_context_runs_at_4x_length_and_improves_long_eval(
    tmp_path, mixtures, config, pretrained_run
):
    cpt = run_stage("cpt", config, mixtures["cpt"], tmp_path / "cpt", init=pretrained_run, steps=4)
    assert cpt["init"].endswith("step_0000020.pt")
    cpt_metrics = read_jsonl(tmp_path / "cpt" / "metrics.jsonl")
    assert cpt_metrics[0]["lr"] < cpt_metrics[1]["lr"]  # a fresh warm-up, not the pretrain schedule
    long = run_stage(
        "long-context",
        config,
        mixtures["long-context"],
        tmp_path / "long",
        init=tmp_path / "cpt",
        steps=10,
    )
    assert long["seq_len"] == 4 * 64
    assert {m["seq_len"] for m in read_jsonl(tmp_path / "long" / "metrics.jsonl")} == {256}
    assert long["rope_base"] == 100000
    assert load_checkpoint(long["checkpoint"])["model_config"]["rope_base"] == 100000
    # Step-0 eval is the cpt checkpoint on the long sequences; training at 4x length improves it.
    assert long["eval_mean"] < long["eval_mean_before"]


def test_missing_mixture_is_a_clear_error(tmp_path, config):
    with pytest.raises(TrainError, match="mixture not found.*manifest.json"):
        run_stage("pretrain", config, tmp_path / "nowhere", tmp_path / "run", steps=1)


def test_vocab_mismatch_between_checkpoint_and_mixture_is_refused(tmp_path, config, pretrained_run):
    other = write_mixture(tmp_path / "big-vocab", seq_len=64, vocab=96)
    with pytest.raises(TrainError, match="vocab mismatch.*vocab_size=64.*96"):
        run_stage("cpt", config, other, tmp_path / "run", init=pretrained_run, steps=1)


def test_vocab_mismatch_between_config_and_mixture_is_refused(tmp_path, mixtures):
    cfg = write_config(tmp_path / "c.yaml")
    text = cfg.read_text().replace("model:\n", "model:\n  vocab_size: 1000\n")
    cfg.write_text(text)
    with pytest.raises(TrainError, match="model.vocab_size=1000"):
        run_stage("pretrain", cfg, mixtures["pretrain"], tmp_path / "run", steps=1)


def test_sequences_longer_than_the_model_supports_are_refused(tmp_path, config, mixtures):
    with pytest.raises(TrainError, match="seq_len=256.*max_seq_len=128"):
        run_stage("pretrain", config, mixtures["long-context"], tmp_path / "run", steps=1)


def test_long_context_refuses_a_mixture_no_longer_than_the_init_run(
    tmp_path, config, mixtures, pretrained_run
):
    with pytest.raises(TrainError, match="seq_len=64, not longer than the 64"):
        run_stage(
            "long-context", config, mixtures["cpt"], tmp_path / "run", init=pretrained_run, steps=1
        )


def test_later_stages_need_init_and_runs_are_not_overwritten(
    tmp_path, config, mixtures, pretrained_run
):
    with pytest.raises(TrainError, match="--init"):
        run_stage("cpt", config, mixtures["cpt"], tmp_path / "run", steps=1)
    with pytest.raises(TrainError, match="already holds a run.*--resume"):
        run_stage("pretrain", config, mixtures["pretrain"], pretrained_run, steps=1)
    with pytest.raises(TrainError, match="no checkpoint to resume"):
        run_stage(
            "pretrain", config, mixtures["pretrain"], tmp_path / "empty", steps=1, resume=True
        )


def test_config_errors_name_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "model: {d_model: 64, n_head: 4, n_kv_head: 3}\nstages: {pretrain: {mixture: m, steps: 0, lr: 1}}\n"
    )
    with pytest.raises(ConfigError) as err:
        load_run_config(bad)
    assert "stages.pretrain.steps" in str(err.value) and "n_kv_head" in str(err.value)
    bad.write_text("model: {}\ntrain: {batch_sise: 3}\nstages: {}\n")
    with pytest.raises(ConfigError, match=r"train.batch_sise: .* \(did you mean 'batch_size'\?\)"):
        load_run_config(bad)
    bad.write_text("model: {vocab_sise: 3}\nstages: {}\n")  # the model section is a dataclass
    with pytest.raises(ConfigError, match=r"model.vocab_sise: .* \(did you mean 'vocab_size'\?\)"):
        load_run_config(bad)
    cfg, _ = load_run_config("tiny")
    with pytest.raises(ConfigError, match="unknown stage"):
        cfg.stage("finetune")
