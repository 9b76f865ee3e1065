"""Dagster assets of the filter stage: the default quality models from the sample web's labels,
then the filter, into a temporary lake with funnel metadata and passing checks."""

import shutil

import pytest

from pipelines.graph import lineage_gaps, materialize_selection


@pytest.mark.timeout(240)
def test_filter_assets_materialise_with_funnel_metadata(tmp_path, docs_dir, models_dir):
    (tmp_path / "extract").mkdir()
    shutil.copy(docs_dir / "documents.parquet", tmp_path / "extract" / "documents.parquet")
    names = ["sample_web", "quality_models", "filtered_documents", "deduplicated_documents"]
    # documents.parquet was copied to the lake's extract/: the IO manager hands out its handle.
    res = materialize_selection(names, tmp_path)
    assert res.success
    mats = {m.asset_key.to_user_string(): m for m in res.get_asset_materialization_events()}
    assert set(mats) == set(names)
    # The default set is found by the key of its training data: the labels the sample_web asset
    # wrote give the same key as the in-memory sample web the session fixture built it from; the
    # shared set is placed (hard-linked) in this lake, whose manifest names this sample web.
    models = mats["quality_models"].materialization.metadata
    placed = tmp_path / "models" / "quality" / "default" / models_dir.name
    assert models["path"].value == str(placed) and models["fallback"].value is True
    assert (placed / "en.bin").stat().st_ino == (models_dir / "en.bin").stat().st_ino
    assert "quality_models" not in lineage_gaps(tmp_path)  # (documents were copied in by hand)
    filtered = mats["filtered_documents"].materialization.metadata
    assert "| lang |" in filtered["funnel"].value and filtered["funnel_plot"].value.endswith(
        "funnel.png"
    )
    dedup = mats["deduplicated_documents"].materialization.metadata
    assert 0 < dedup["dedup_rate"].value < 1 and dedup["tokens_kept"].value > 0
    assert (tmp_path / "filter" / "host_languages.parquet").exists()
    checks = {
        (c.asset_key.to_user_string(), c.check_name): c.passed
        for c in res.get_asset_check_evaluations()
    }
    assert checks == {
        ("filtered_documents", "rows_accounted"): True,
        ("deduplicated_documents", "no_duplicate_kept"): True,
    }
