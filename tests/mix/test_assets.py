"""The Dagster assets build the tokenizer and a tiny mixture into the lake, with accounting metadata."""

from __future__ import annotations

import shutil

import pytest

from training.loader import ShardLoader


@pytest.mark.timeout(180)
def test_tokenizer_and_pretrain_mixture_assets_materialize(lake, tmp_path):
    from pipelines.graph import materialize_selection

    root = tmp_path / "lake"
    shutil.copytree(lake / "filter", root / "filter")
    # filter/ was copied in without the filter asset: the IO manager finds it at its lake place.
    result = materialize_selection(
        ["tokenizer", "pretrain_mixture"],
        root,
        run_config={"ops": {"tokenizer": {"config": {"vocab_size": 500, "sample_tokens": 50_000}}}},
    )
    assert result.success
    assert (root / "tokenizer" / "tokenizer.json").exists()
    mix_dir = root / "mixtures" / "tiny-pretrain"
    meta = result.asset_materializations_for_node("pretrain_mixture")[0].metadata
    assert "| web |" in meta["accounting"].value and meta["tokens"].value > 0
    assert (mix_dir / "report.png").exists()
    batch = next(iter(ShardLoader(mix_dir, batch_size=4)))
    assert batch.shape == (4, 128)
