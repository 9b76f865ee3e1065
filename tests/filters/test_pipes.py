"""The filter stage's Beam job launched through Dagster Pipes: its own process, reporting each
output's metadata and each check back with dagster_pipes; lineage handles as in process."""

import os
import shutil

import pytest

from pipelines.graph import materialize_selection
from pipelines.resources import BeamRunnerResource


@pytest.mark.timeout(300)
def test_filter_via_pipes_reports_metadata_and_checks(tmp_path, docs_dir, models_dir):
    (tmp_path / "extract").mkdir()
    shutil.copy(docs_dir / "documents.parquet", tmp_path / "extract" / "documents.parquet")
    names = ["sample_web", "quality_models", "filtered_documents", "deduplicated_documents"]
    res = materialize_selection(
        names, tmp_path, resources={"beam": BeamRunnerResource(launch="pipes")}
    )
    assert res.success
    mats = {
        m.asset_key.to_user_string(): m.materialization
        for m in res.get_asset_materialization_events()
    }
    # quality_models is no Beam job: it ran in this process and has no pipes_pid.
    assert "pipes_pid" not in mats["quality_models"].metadata
    pids = set()
    for name in ("filtered_documents", "deduplicated_documents"):
        meta = mats[name].metadata
        pids.add(meta["pipes_pid"].value)
        assert meta["peak_memory_mib"].value > 50  # a Python process with pyarrow and Beam
        assert meta["path"].value.startswith(str(tmp_path / "filter"))
    assert len(pids) == 1 and os.getpid() not in pids
    assert "| lang |" in mats["filtered_documents"].metadata["funnel"].value
    assert 0 < mats["deduplicated_documents"].metadata["dedup_rate"].value < 1
    checks = {
        (c.asset_key.to_user_string(), c.check_name): c for c in res.get_asset_check_evaluations()
    }
    assert {k: c.passed for k, c in checks.items()} == {
        ("filtered_documents", "rows_accounted"): True,
        ("deduplicated_documents", "no_duplicate_kept"): True,
    }
    assert checks[("filtered_documents", "rows_accounted")].metadata["description"].value
    # The outputs are lake handles a downstream step loads, exactly as from an in-process step.
    handles = sorted(p.name for p in (tmp_path / "_handles").rglob("*.json"))
    assert "deduplicated_documents.json" in handles or any("deduplicated" in h for h in handles)


def test_unknown_launch_is_refused():
    with pytest.raises(ValueError, match="launch='remote'"):
        assert BeamRunnerResource(launch="remote").launch_via_pipes


def test_beam_resource_options_beam_does_not_know_are_refused():
    """Beam drops an option it does not know with a warning; the resource refuses it."""
    with pytest.raises(ValueError, match="did you mean --direct_num_workers"):
        BeamRunnerResource(options=["--direct_num_wrkers=2"]).check_options()
    BeamRunnerResource(options=["--direct_num_workers=2", "--dask_npartitions=3"]).check_options()


def test_a_stage_given_a_bad_beam_option_in_dagster_fails_before_running(tmp_path):
    """`imported_pages` (a Beam job, no upstream asset): the step fails naming the option,
    before anything is written; with the option spelled right it runs (an empty import)."""
    bad = BeamRunnerResource(options=["--direct_num_wrkers=2"], launch="in_process")
    res = materialize_selection(
        ["imported_pages"], tmp_path, resources={"beam": bad}, partition_key="0",
        raise_on_error=False,
    )  # fmt: skip
    assert not res.success
    failure = res.get_step_failure_events()[0].step_failure_data.error
    assert "unknown option --direct_num_wrkers" in str(failure)
    assert not (tmp_path / "crawl").exists()
    good = BeamRunnerResource(options=["--direct_num_workers=1"], launch="in_process")
    res = materialize_selection(
        ["imported_pages"], tmp_path, resources={"beam": good}, partition_key="0"
    )
    assert res.success
