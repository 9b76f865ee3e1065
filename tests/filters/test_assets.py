"""Dagster assets of the filter stage materialise into a temporary lake with funnel metadata."""

import shutil

import pytest
from dagster import materialize

from pipelines.assets.filter import LANGUAGES, filter_documents, language_ids, quality_models
from pipelines.resources import BeamRunnerResource, LakeResource, TeacherResource


@pytest.mark.timeout(240)
def test_filter_assets_materialise_with_funnel_metadata(tmp_path, docs_dir):
    (tmp_path / "extract").mkdir()
    shutil.copy(docs_dir / "documents.parquet", tmp_path / "extract" / "documents.parquet")
    resources = {
        "lake": LakeResource(root=str(tmp_path)),
        "beam": BeamRunnerResource(),
        "teacher": TeacherResource(),
    }
    assert "de" in LANGUAGES.get_partition_keys()
    res = materialize([quality_models], partition_key="en", resources=resources)
    assert res.success and (tmp_path / "models" / "quality" / "en.bin").exists()
    res = materialize([language_ids, filter_documents], resources=resources)
    assert res.success
    mats = {m.asset_key.to_user_string(): m for m in res.get_asset_materialization_events()}
    assert set(mats) == {"language_ids", "filtered_documents", "deduplicated_documents"}
    filtered = mats["filtered_documents"].materialization.metadata
    assert "| lang |" in filtered["funnel"].value and filtered["funnel_plot"].value.endswith(
        "funnel.png"
    )
    dedup = mats["deduplicated_documents"].materialization.metadata
    assert 0 < dedup["dedup_rate"].value < 1 and dedup["tokens_kept"].value > 0
    assert (tmp_path / "filter" / "host_languages.parquet").exists()
