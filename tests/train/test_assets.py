"""The four model assets chain through Dagster on tiny synthetic mixtures in a tmp lake."""

from __future__ import annotations

import json
import shutil

import pytest

from pipelines.graph import materialize_selection
from training.runs import latest_run, run_dirs

pytestmark = pytest.mark.timeout(240)
# The mixtures are built by the fixtures at the lake's standard places, not by the mixture
# assets: the lake IO manager hands out handles to them.
MODELS = ["pretrained_model", "cpt_model", "multimodal_model", "long_context_model"]


def test_pretrain_cpt_multimodal_long_context_assets_materialize_in_order(tmp_path, mixtures):
    from .test_multimodal import write_clip_dir, write_multimodal_config, write_multimodal_mixture

    for src in mixtures.values():
        shutil.copytree(src, tmp_path / "mixtures" / src.name)
    write_multimodal_mixture(tmp_path / "mixtures" / "tiny-multimodal")
    write_clip_dir(tmp_path / "models" / "clip")  # the lake's clip_model
    config = write_multimodal_config(tmp_path / "train.yaml")
    steps = {
        "pretrained_model": 12,
        "cpt_model": 4,
        "multimodal_model": 10,
        "long_context_model": 6,
    }
    result = materialize_selection(
        MODELS,
        tmp_path,
        run_config={
            "ops": {k: {"config": {"config": str(config), "steps": v}} for k, v in steps.items()}
        },
    )
    assert result.success
    meta = {
        m.asset_key.to_user_string(): m.metadata
        for m in result.get_asset_materialization_events()
        for m in [m.event_specific_data.materialization]
    }
    assert set(meta) == set(steps)
    for name, n in steps.items():
        assert meta[name]["steps"].value == n
        assert meta[name]["loss_curve_path"].value.endswith("loss.png")
    long = meta["long_context_model"]
    assert long["seq_len"].value == 256
    assert long["eval_loss_mean"].value < long["eval_loss_mean_at_start"].value
    runs = tmp_path / "runs"
    cpt_run = latest_run(runs / "cpt")
    assert cpt_run.parent == runs / "cpt" and cpt_run.name == meta["cpt_model"]["run_id"].value
    mm_run = latest_run(runs / "multimodal")
    mm = json.loads((mm_run / "run.json").read_text())
    assert mm["init"].startswith(str(cpt_run / "checkpoints"))
    assert mm["vision"]["spec"] == str(tmp_path / "models" / "clip")
    long_run = latest_run(runs / "long-context")
    run = json.loads((long_run / "run.json").read_text())
    assert run["init"].startswith(str(mm_run / "checkpoints"))
    assert (cpt_run / "manifest.json").exists()

    # Re-materialising the pretraining asset makes a second run; the first one stays untouched.
    first = latest_run(runs / "pretrain")
    files_before = sorted(p.name for p in first.rglob("*"))
    again = materialize_selection(
        ["pretrained_model"],
        tmp_path,
        run_config={"ops": {"pretrained_model": {"config": {"config": str(config), "steps": 2}}}},
    )
    assert again.success
    second = latest_run(runs / "pretrain")
    assert second != first and run_dirs(runs / "pretrain") == [first, second]
    assert sorted(p.name for p in first.rglob("*")) == files_before
    assert json.loads((second / "summary.json").read_text())["steps"] == 2
