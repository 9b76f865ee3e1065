"""What a run trusts is checked: checkpoints load without running code and name themselves when
broken; a resume continues only the run it was (mixture, tokenizer, config, total); a non-finite
loss stops the run before it spoils a checkpoint; cut logs and bad config values are caught."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from training import checkpoint as ckpt
from training.checkpoint import CheckpointError, list_checkpoints, load_checkpoint
from training.components import lr_multiplier
from training.train_config import ConfigError, load_run_config
from training.trainer import TrainError, run_stage, setup, train_loop

from .conftest import write_config, write_mixture

pytestmark = pytest.mark.timeout(120)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def crash_at(step_to_crash: int):
    def on_step(step, total, row):
        if step == step_to_crash:
            raise KeyboardInterrupt

    return on_step


def crashed_run(tmp_path: Path, config: Path, mix: Path, name: str = "run") -> Path:
    """A run of 6 steps killed in step 4: its checkpoint is step 3 (checkpoints every 3)."""
    out = tmp_path / name
    with pytest.raises(KeyboardInterrupt):
        run_stage("pretrain", config, mix, out, steps=6, on_step=crash_at(4))
    assert [p.name for p in list_checkpoints(out)] == ["step_0000003.pt"]
    return out


def with_tokenizer(mix: Path, content: str) -> Path:
    """Give a synthetic mixture a tokenizer file and its sha256 in the manifest (as a build does)."""
    (mix / "tokenizer.json").write_text(content)
    manifest = json.loads((mix / "manifest.json").read_text())
    manifest["tokenizer_sha256"] = hashlib.sha256(content.encode()).hexdigest()
    (mix / "manifest.json").write_text(json.dumps(manifest))
    return mix


@pytest.fixture
def cfg3(tmp_path) -> Path:
    return write_config(tmp_path / "c.yaml", checkpoint_every=3, eval_every=3)


# --- loading checkpoints (F1, F8) ---


class _Mkdir:
    """Unpickling this makes a directory: code a checkpoint file must never get to run."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (str(self.path),))


def test_a_checkpoint_that_would_run_code_is_refused_and_the_code_never_runs(
    tmp_path, config, mixtures
):
    marker = tmp_path / "code-ran"
    evil = tmp_path / "evil" / "checkpoints" / "step_0000001.pt"
    evil.parent.mkdir(parents=True)
    torch.save({"model_config": {}, "x": _Mkdir(marker)}, evil)
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(evil)
    assert not marker.exists()
    message = str(err.value)
    assert "\n" not in message and str(evil) in message and "refused" in message
    assert "mkdir" in message  # the reason: the global it would have called
    with pytest.raises(CheckpointError):  # the stages take it through the same door
        run_stage("cpt", config, mixtures["cpt"], tmp_path / "cpt", init=evil.parent.parent)
    assert not marker.exists() and not (tmp_path / "cpt").exists()


def test_a_dcp_metadata_file_that_would_run_code_is_refused(tmp_path):
    import torch.distributed.checkpoint as dcp

    marker = tmp_path / "code-ran"
    weights = {"w": torch.arange(6.0).reshape(2, 3)}
    shard = tmp_path / "step_0000001.dcp"
    with warnings.catch_warnings():  # no process group: DCP says it saves as one process
        warnings.simplefilter("ignore")
        dcp.save({"model": weights}, checkpoint_id=shard, no_dist=True)
    pt = tmp_path / "step_0000001.pt"
    torch.save({"sharded": shard.name, "step": 1}, pt)
    assert torch.equal(load_checkpoint(pt)["model"]["w"], weights["w"])
    (shard / ".metadata").write_bytes(pickle.dumps(_Mkdir(marker)))
    with pytest.raises(CheckpointError, match=r"\.metadata: not a readable DCP metadata file"):
        load_checkpoint(pt)
    assert not marker.exists()


def _as_old_format(path: Path) -> None:
    """Rewrite a checkpoint as the code before this change wrote it: NumPy's RNG state as its
    ndarray tuple, and none of the fields recorded since (mixture/tokenizer/config identity)."""
    saved = load_checkpoint(path)
    name, keys, pos, has_gauss, cached = saved["rng"]["numpy"]
    saved["rng"]["numpy"] = (name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached)
    for key in (
        "mixture_manifest_sha256",
        "tokenizer",
        "tokenizer_sha256",
        "run_config",
        "config_sha256",
        "total_steps",
    ):
        saved.pop(key, None)
    torch.save(saved, path)


def test_a_checkpoint_in_the_old_format_still_loads_and_resumes_bit_exactly(
    tmp_path, cfg3, mixtures
):
    mix = mixtures["pretrain"]
    run_stage("pretrain", cfg3, mix, tmp_path / "straight", steps=6)
    out = crashed_run(tmp_path, cfg3, mix)
    old = list_checkpoints(out)[0]
    _as_old_format(old)
    assert isinstance(load_checkpoint(old)["rng"]["numpy"][1], np.ndarray)
    run_stage("pretrain", cfg3, mix, out, steps=6, resume=True)
    keys = ("step", "loss", "lr")
    straight = [tuple(r[k] for k in keys) for r in read_jsonl(tmp_path / "straight/metrics.jsonl")]
    assert [tuple(r[k] for k in keys) for r in read_jsonl(out / "metrics.jsonl")] == straight


def test_a_cut_or_empty_latest_checkpoint_names_itself_and_the_one_to_resume_from(
    tmp_path, cfg3, mixtures
):
    out = tmp_path / "run"
    run_stage("pretrain", cfg3, mixtures["pretrain"], out, steps=6)
    first, latest = list_checkpoints(out)
    latest.write_bytes(latest.read_bytes()[: latest.stat().st_size // 2])
    for _ in range(2):
        with pytest.raises(CheckpointError) as err:
            run_stage("pretrain", cfg3, mixtures["pretrain"], out, steps=9, resume=True)
        message = str(err.value)
        assert "\n" not in message
        assert message.startswith(f"{latest}: not a readable checkpoint (")
        assert message.endswith(f"delete it to resume from {first}")
        latest.write_bytes(b"")  # the second round: an empty file
    with pytest.raises(CheckpointError, match=f"^{latest}: not a readable checkpoint"):
        run_stage("cpt", cfg3, mixtures["cpt"], tmp_path / "cpt", init=out)
    latest.unlink()  # as the message says: the run resumes from the whole one
    run_stage("pretrain", cfg3, mixtures["pretrain"], out, steps=6, resume=True)
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2, 3, 4, 5, 6]


def test_a_checkpoint_reaches_the_disk_before_it_replaces_the_previous_one(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(src, dst):
        calls.append(("replace", str(src)))
        return real_replace(src, dst)

    monkeypatch.setattr(ckpt.os, "fsync", fsync)
    monkeypatch.setattr(ckpt.os, "replace", replace)
    path = ckpt.save_checkpoint(tmp_path, 1, {"model": {}}, keep=1)
    tmp = str(path) + ".tmp"
    assert calls.index(("fsync", tmp)) < calls.index(("replace", tmp))
    assert load_checkpoint(path)["step"] == 1


# --- what a run was trained on (F2, F3, F4) ---


def test_init_refuses_a_checkpoint_trained_with_another_tokenizer_of_the_same_size(
    tmp_path, config
):
    a = with_tokenizer(write_mixture(tmp_path / "a", seq_len=64, seed=1), '{"tok": "a"}')
    b = with_tokenizer(write_mixture(tmp_path / "b", seq_len=64, seed=2), '{"tok": "b"}')
    run_stage("pretrain", config, a, tmp_path / "pre", steps=2)
    saved = load_checkpoint(list_checkpoints(tmp_path / "pre")[-1])
    assert saved["tokenizer_sha256"] == hashlib.sha256(b'{"tok": "a"}').hexdigest()
    record = json.loads((tmp_path / "pre" / "run.json").read_text())
    assert record["tokenizer_sha256"] == saved["tokenizer_sha256"]
    with pytest.raises(TrainError) as err:
        run_stage("cpt", config, b, tmp_path / "cpt", init=tmp_path / "pre", steps=1)
    message = str(err.value)
    assert "tokenizer mismatch" in message and "\n" not in message
    assert str(a / "tokenizer.json") in message and str(b / "tokenizer.json") in message
    assert not (tmp_path / "cpt").exists()
    # the same tokenizer, or a mixture from before the field (nothing to compare), is accepted
    same = with_tokenizer(write_mixture(tmp_path / "c", seq_len=64, seed=3), '{"tok": "a"}')
    run_stage("cpt", config, same, tmp_path / "cpt-same", init=tmp_path / "pre", steps=1)
    older = write_mixture(tmp_path / "d", seq_len=64, seed=4)
    run_stage("cpt", config, older, tmp_path / "cpt-older", init=tmp_path / "pre", steps=1)


def test_evaluation_refuses_a_tokenizer_the_checkpoint_was_not_trained_with(tmp_path, config):
    from training.longctx import load_model_for_eval

    a = with_tokenizer(write_mixture(tmp_path / "a", seq_len=64, seed=1), '{"tok": "a"}')
    run_stage("pretrain", config, a, tmp_path / "pre", steps=1)
    other = tmp_path / "other.json"
    other.write_text('{"tok": "b"}')
    with pytest.raises(ValueError, match=f"tokenizer mismatch.*{other}"):
        load_model_for_eval(tmp_path / "pre", tokenizer=other)
    model, _ = load_model_for_eval(tmp_path / "pre", tokenizer=a / "tokenizer.json")
    assert model.config.vocab_size == 64


def test_resume_refuses_another_mixture_with_the_same_spec_and_size(tmp_path, cfg3):
    a = write_mixture(tmp_path / "a", seq_len=64, seed=1)
    b = write_mixture(tmp_path / "b", seq_len=64, seed=7)  # other documents
    spec = json.loads((a / "manifest.json").read_text())["spec_sha256"]
    for mix in (a, b):  # as a build records them: the same spec, each shard's sha256
        manifest = json.loads((mix / "manifest.json").read_text())
        manifest["spec_sha256"] = spec
        for shard in manifest["shards"]:
            shard["sha256"] = hashlib.sha256((mix / shard["path"]).read_bytes()).hexdigest()
        (mix / "manifest.json").write_text(json.dumps(manifest))
    out = crashed_run(tmp_path, cfg3, a)
    before = (out / "run.json").read_text()
    with pytest.raises(TrainError) as err:
        run_stage("pretrain", cfg3, b, out, steps=6, resume=True)
    message = str(err.value)
    assert "\n" not in message and f"trained on mixture {a.resolve()}" in message
    assert str(b.resolve()) in message
    assert (out / "run.json").read_text() == before


def test_resume_refuses_a_changed_config_but_takes_a_changed_cadence(tmp_path, cfg3, mixtures):
    mix = mixtures["pretrain"]
    out = crashed_run(tmp_path, cfg3, mix)
    before = (out / "run.json").read_text()
    raw = yaml.safe_load(cfg3.read_text())
    raw["stages"]["pretrain"]["lr"] = 0.05
    changed = tmp_path / "lr.yaml"
    changed.write_text(yaml.safe_dump(raw))
    with pytest.raises(TrainError, match=r"stage\.lr: checkpoint 0\.003 vs config 0\.05"):
        run_stage("pretrain", changed, mix, out, steps=6, resume=True)
    assert (out / "run.json").read_text() == before
    raw["stages"]["pretrain"]["lr"] = 3e-3
    raw["train"]["log_every"] = 2  # when it logs is not what it trains
    cadence = tmp_path / "cadence.yaml"
    cadence.write_text(yaml.safe_dump(raw))
    run_stage("pretrain", cadence, mix, out, steps=6, resume=True)
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2, 3, 4, 6]


def test_resume_refuses_steps_at_or_below_the_checkpoint(tmp_path, cfg3, mixtures):
    out = crashed_run(tmp_path, cfg3, mixtures["pretrain"])
    before = (out / "run.json").read_text()
    for steps in (2, 3):
        with pytest.raises(TrainError, match=r"--steps \d: .* already at step 3"):
            run_stage("pretrain", cfg3, mixtures["pretrain"], out, steps=steps, resume=True)
    assert (out / "run.json").read_text() == before


def test_a_run_resumed_to_a_larger_total_follows_that_totals_schedule_from_its_checkpoint(
    tmp_path, cfg3, mixtures
):
    raw = yaml.safe_load(cfg3.read_text())
    raw["stages"]["pretrain"]["warmup_steps"] = 1  # step 4 is past the warm-up in either total
    cfg3.write_text(yaml.safe_dump(raw))
    out = crashed_run(tmp_path, cfg3, mixtures["pretrain"])
    run_stage("pretrain", cfg3, mixtures["pretrain"], out, steps=9, resume=True)
    rows = read_jsonl(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(1, 10))
    cfg, _ = load_run_config(cfg3)
    sc = cfg.stage("pretrain")

    def rate(step, total):  # the rate of 1-based step `step` in a run of `total` steps
        return sc.lr * lr_multiplier(
            step - 1,
            total_steps=total,
            warmup_steps=sc.warmup_steps,
            schedule=sc.schedule,
            min_ratio=sc.min_lr_ratio,
            decay_fraction=sc.decay_fraction,
        )

    assert [r["lr"] for r in rows[:3]] == pytest.approx([rate(s, 6) for s in (1, 2, 3)])
    assert [r["lr"] for r in rows[3:]] == pytest.approx([rate(s, 9) for s in range(4, 10)])
    assert json.loads((out / "run.json").read_text())["total_steps"] == 9


# --- non-finite values stop the run (F5) ---


def test_a_nan_loss_stops_the_run_before_its_update_and_checkpoint(tmp_path, mixtures):
    cfg = write_config(tmp_path / "c.yaml", checkpoint_every=1, eval_every=100)
    state = setup("pretrain", cfg, mixtures["pretrain"], tmp_path / "run", steps=6)

    def poison(step, total, row):
        if step == 2:  # after the step-2 checkpoint: the next forward pass gives NaN
            with torch.no_grad():
                next(state.model.parameters()).fill_(float("nan"))

    with pytest.raises(TrainError, match=r"^step 3: non-finite training loss"):
        train_loop(state, poison)
    assert [p.name for p in list_checkpoints(tmp_path / "run")] == [
        "step_0000001.pt",
        "step_0000002.pt",
    ]
    saved = load_checkpoint(list_checkpoints(tmp_path / "run")[-1])
    assert all(bool(torch.isfinite(v).all()) for v in saved["model"].values())
    assert [r["step"] for r in read_jsonl(tmp_path / "run" / "metrics.jsonl")] == [1, 2]


def test_non_finite_weights_after_an_update_are_never_checkpointed(tmp_path, mixtures):
    cfg = write_config(tmp_path / "c.yaml", checkpoint_every=1, eval_every=100)
    state = setup("pretrain", cfg, mixtures["pretrain"], tmp_path / "run", steps=6)

    def infinite_rate(step, total, row):
        if step == 2:  # step 3's update runs at an infinite learning rate
            for group in state.optimizer.param_groups:
                group["lr"] = float("inf")

    with pytest.raises(TrainError, match=r"^step 3: non-finite weights after the update"):
        train_loop(state, infinite_rate)
    assert list_checkpoints(tmp_path / "run")[-1].name == "step_0000002.pt"


def test_a_later_stage_refuses_to_start_from_nan_weights(tmp_path, config, mixtures):
    run_stage("pretrain", config, mixtures["pretrain"], tmp_path / "pre", steps=1)
    path = list_checkpoints(tmp_path / "pre")[-1]
    saved = load_checkpoint(path)
    next(iter(saved["model"].values())).fill_(float("nan"))
    torch.save(saved, path)
    with pytest.raises(TrainError, match=r"^step 0: non-finite held-out loss.*starting weights"):
        run_stage("cpt", config, mixtures["cpt"], tmp_path / "cpt", init=tmp_path / "pre")
    assert list_checkpoints(tmp_path / "cpt") == []


def test_infinite_or_nan_config_numbers_are_refused_naming_the_field(tmp_path):
    path = write_config(tmp_path / "c.yaml")
    raw = yaml.safe_load(path.read_text())
    raw["stages"]["pretrain"]["lr"] = float("inf")
    raw["train"]["weight_decay"] = float("nan")
    raw["model"]["rope_base"] = float("inf")
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as err:
        load_run_config(path)
    for field in ("stages.pretrain.lr", "train.weight_decay", "model.rope_base"):
        assert f"{field}: Input should be a finite number" in str(err.value)


def test_a_run_with_a_non_finite_loss_is_never_made_the_latest(tmp_path):
    from training.runs import LATEST, set_latest

    stage_root = tmp_path / "runs" / "pretrain"
    good, bad = stage_root / "20260101T000000Z", stage_root / "20260101T000001Z"
    for run, loss in ((good, 4.2), (bad, float("nan"))):
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps({"final_loss": loss, "eval": {"web/en": 5}}))
    set_latest(stage_root, good)
    with pytest.raises(ValueError, match=r"non-finite final_loss; not marking"):
        set_latest(stage_root, bad)
    assert json.loads((stage_root / LATEST).read_text())["run_id"] == good.name


# --- logs and inputs (F9, F10) ---


def test_a_metrics_line_cut_by_a_kill_is_dropped_on_resume(tmp_path, cfg3, mixtures):
    out = crashed_run(tmp_path, cfg3, mixtures["pretrain"])
    with (out / "metrics.jsonl").open("a") as f:
        f.write('{"step": 5, "loss": 4.1, "tok')  # killed mid-append
    run_stage("pretrain", cfg3, mixtures["pretrain"], out, steps=6, resume=True)
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2, 3, 4, 5, 6]


def test_a_bad_line_before_the_last_is_an_error_naming_the_file_and_line(tmp_path, cfg3, mixtures):
    out = crashed_run(tmp_path, cfg3, mixtures["pretrain"])
    lines = (out / "metrics.jsonl").read_text().splitlines()
    lines[1] = "not json"
    (out / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(TrainError, match=f"{out / 'metrics.jsonl'}: line 2 is not a JSON"):
        run_stage("pretrain", cfg3, mixtures["pretrain"], out, steps=6, resume=True)


def test_seed_and_betas_out_of_range_are_refused_naming_the_field(tmp_path):
    for train, field in (
        ({"seed": -1}, "train.seed"),
        ({"seed": 2**32}, "train.seed"),
        ({"betas": [1.5, 0.9]}, "train.betas.0"),
        ({"betas": [0.9, -0.1]}, "train.betas.1"),
    ):
        path = write_config(tmp_path / "c.yaml", **train)
        with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
            load_run_config(path)
    cfg, _ = load_run_config(write_config(tmp_path / "ok.yaml", seed=2**32 - 1, betas=[0, 0.99]))
    assert cfg.train.seed == 2**32 - 1


def test_a_cut_eval_array_is_refused_before_the_run_writes_anything(tmp_path, config):
    mix = write_mixture(tmp_path / "mix", seq_len=64, seed=1)
    arr = mix / "eval" / "web.fr.npy"
    arr.write_bytes(arr.read_bytes()[:-100])
    with pytest.raises(ValueError, match=f"^{re.escape(str(arr))}: .*; rebuild it with"):
        run_stage("pretrain", config, mix, tmp_path / "run", steps=1)
    assert not (tmp_path / "run").exists()


def test_checkpoints_record_what_the_run_was_trained_on(tmp_path, config, mixtures):
    run_stage("pretrain", config, mixtures["pretrain"], tmp_path / "run", steps=1)
    saved = load_checkpoint(list_checkpoints(tmp_path / "run")[-1])
    manifest = mixtures["pretrain"] / "manifest.json"
    assert saved["mixture_manifest_sha256"] == hashlib.sha256(manifest.read_bytes()).hexdigest()
    assert saved["total_steps"] == 1 and saved["run_config"]["stage"]["lr"] == 3e-3
    assert saved["tokenizer"] == str(mixtures["pretrain"].resolve() / "tokenizer.json")
    # nothing but tensors and plain values: loads with torch's own weights_only default
    plain = torch.load(list_checkpoints(tmp_path / "run")[-1], weights_only=True)
    assert isinstance(plain["rng"]["numpy"][1], list)
