"""The lake IO manager's handles and the step's failures: a partitioned upstream is handed out as
its whole lake directory, handles survive a copied or moved lake, and a stage's user error is one
line naming the asset."""

import json
import shutil
from pathlib import Path

import pytest
from dagster import (
    PartitionKeyRange,
    StaticPartitionsDefinition,
    build_input_context,
    build_output_context,
)

from pipelines.resources import LakeIOManager
from pipelines.stage import Dataset


def _all_partitions(asset: str, n: int = 4):
    """The input context of an unpartitioned step reading every partition of `asset`."""
    keys = [str(k) for k in range(n)]
    return build_input_context(
        asset_key=asset,
        asset_partitions_def=StaticPartitionsDefinition(keys),
        asset_partition_key_range=PartitionKeyRange(keys[0], keys[-1]),
    )


def _handle(root: Path, asset: str, partition: str | None, path: Path | str) -> Path:
    """A handle file as an older run left it (any stored path, absolute or relative)."""
    base = root / "_handles" / asset
    file = base / f"{partition}.json" if partition is not None else base.with_suffix(".json")
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"name": asset, "path": str(path), "partition": partition}))
    return file


def test_one_materialized_partition_hands_out_the_whole_lake_crawl(tmp_path):
    """Only raw_pages partition 0 went through Dagster; `import warc` wrote crawl/shard=import-1.
    documents must read both: the lake's crawl directory, never shard=0 alone."""
    crawl = tmp_path / "crawl"
    for shard in ("shard=0", "shard=import-1"):
        (crawl / shard).mkdir(parents=True)
    io = LakeIOManager(root=str(tmp_path))
    io.handle_output(
        build_output_context(asset_key="raw_pages", partition_key="0"),
        Dataset("raw_pages", str(crawl / "shard=0"), "0"),
    )
    assert io.load_input(_all_partitions("raw_pages")).path == str(crawl)
    # the same for image_pairs (clip_model, interleaved_documents, domain_images read it)
    pairs = tmp_path / "images" / "pairs"
    (pairs / "shard=1").mkdir(parents=True)
    _handle(tmp_path, "image_pairs", "1", pairs / "shard=1")
    assert io.load_input(_all_partitions("image_pairs")).path == str(pairs)


def test_partitions_written_outside_the_lake_are_handed_out_where_they_are(tmp_path):
    """A partition run given `out`: its directory; partitions in the lake and elsewhere, whose
    common directory would be the lake root or above, are refused in one line."""
    elsewhere = tmp_path / "data" / "mycrawl"
    (elsewhere / "shard=0").mkdir(parents=True)
    (elsewhere / "shard=1").mkdir(parents=True)
    root = tmp_path / "lake"
    _handle(root, "raw_pages", "0", elsewhere / "shard=0")
    _handle(root, "raw_pages", "1", elsewhere / "shard=1")
    io = LakeIOManager(root=str(root))
    assert io.load_input(_all_partitions("raw_pages")).path == str(elsewhere)
    (root / "crawl" / "shard=2").mkdir(parents=True)
    _handle(root, "raw_pages", "2", root / "crawl" / "shard=2")
    with pytest.raises(ValueError, match="re-materialize them without `out`") as err:
        io.load_input(_all_partitions("raw_pages"))
    assert "\n" not in str(err.value) and "_handles/raw_pages" in str(err.value)


def test_handles_are_stored_relative_to_the_lake_and_follow_a_copied_lake(tmp_path):
    """A copied lake hands out its own datasets, and a moved one still finds them."""
    a = tmp_path / "lakeA"
    (a / "extract").mkdir(parents=True)
    (a / "extract" / "documents.parquet").write_text("A")
    LakeIOManager(root=str(a)).handle_output(
        build_output_context(asset_key="documents"), Dataset("documents", str(a / "extract"))
    )
    stored = json.loads((a / "_handles" / "documents.json").read_text())
    assert stored["path"] == "extract"
    b = tmp_path / "lakeB"
    shutil.copytree(a, b)
    (b / "extract" / "documents.parquet").write_text("B")
    io_b = LakeIOManager(root=str(b))
    got = io_b.load_input(build_input_context(asset_key="documents"))
    assert got.path == str(b / "extract")
    shutil.rmtree(a)  # a move
    got = io_b.load_input(build_input_context(asset_key="documents"))
    assert (Path(got.path) / "documents.parquet").read_text() == "B"


def test_outside_paths_stay_absolute_and_old_absolute_handles_still_work(tmp_path):
    root = tmp_path / "lake"
    outside = tmp_path / "models" / "tok.json"
    outside.parent.mkdir(parents=True)
    outside.write_text("{}")
    io = LakeIOManager(root=str(root))
    io.handle_output(
        build_output_context(asset_key="tokenizer"), Dataset("tokenizer", str(outside))
    )
    assert json.loads((root / "_handles" / "tokenizer.json").read_text())["path"] == str(outside)
    assert io.load_input(build_input_context(asset_key="tokenizer")).path == str(outside)
    # a handle an older version wrote: an absolute path inside this lake
    (root / "extract").mkdir(parents=True)
    _handle(root, "documents", None, root / "extract")
    assert io.load_input(build_input_context(asset_key="documents")).path == str(root / "extract")


def test_a_stale_absolute_handle_is_one_line_naming_the_file_and_the_fix(tmp_path):
    """A handle naming a dataset of a lake that is gone: not handed out as if it were there."""
    root = tmp_path / "lake"
    file = _handle(root, "documents", None, tmp_path / "old-lake" / "extract")
    io = LakeIOManager(root=str(root))
    with pytest.raises(FileNotFoundError) as err:
        io.load_input(build_input_context(asset_key="documents"))
    msg = str(err.value)
    assert "\n" not in msg and str(file) in msg
    assert "re-materialize documents" in msg and "_handles" in msg


def test_lineage_gaps_reads_handles_against_the_lake_it_is_given(tmp_path):
    """lineage_gaps of a moved lake reads the moved lake's datasets (its handles are relative)."""
    from common import lake as lake_mod
    from pipelines.graph import lineage_gaps

    a = tmp_path / "lakeA"
    io = LakeIOManager(root=str(a))
    for asset, rel, partition in (
        ("raw_pages", "crawl/shard=0", "0"),
        ("rendered_pages", "rendered", None),
        ("documents", "extract", None),
    ):
        (a / rel).mkdir(parents=True)
        ctx = build_output_context(asset_key=asset, partition_key=partition)
        io.handle_output(ctx, Dataset(asset, str(a / rel), partition))
    b = tmp_path / "lakeB"
    shutil.move(a, b)
    # documents as the moved lake holds them: its manifest names both upstream datasets there
    inputs = [str(b / "crawl" / "shard=0"), str(b / "rendered")]
    lake_mod.write_manifest(b / "extract" / "documents.parquet", rows=0, inputs=inputs)
    assert "documents" not in lineage_gaps(b)


def _failure(result):
    (event,) = [e for e in result.all_events if e.is_step_failure]
    return event.event_specific_data


def test_a_stage_user_error_fails_the_step_in_one_line_naming_the_asset(tmp_path):
    from pipelines.graph import materialize_selection

    cfg = {"seeds": ["http://127.0.0.1:9/"], "politeness_key": "hostname"}
    res = materialize_selection(
        ["raw_pages"],
        tmp_path,
        partition_key="0",
        raise_on_error=False,
        run_config={"ops": {"raw_pages": {"config": cfg}}},
    )
    assert not res.success
    data = _failure(res)
    assert data.user_failure_data is not None  # a dagster.Failure, not a raised ValueError
    desc = data.user_failure_data.description
    assert desc.startswith("raw_pages: ") and "politeness_key" in desc and "\n" not in desc
    assert data.error.cause is None  # no chained stack of the stage's frames
    log = Path(desc.rsplit("(trace: ", 1)[1].rstrip(")"))
    assert "Traceback" in log.read_text()


@pytest.mark.timeout(120)
def test_a_stage_user_error_in_a_pipes_job_fails_in_one_line_naming_the_asset(tmp_path):
    from pipelines.graph import materialize_selection
    from pipelines.resources import BeamRunnerResource

    cfg = {"files": [str(tmp_path / "nothing-here" / "*.warc.gz")]}
    res = materialize_selection(
        ["imported_pages"],
        tmp_path,
        partition_key="0",
        raise_on_error=False,
        resources={"beam": BeamRunnerResource(launch="pipes")},
        run_config={"ops": {"imported_pages": {"config": cfg}}},
    )
    assert not res.success
    data = _failure(res)
    assert data.user_failure_data is not None, data.error
    desc = data.user_failure_data.description
    assert desc.startswith("imported_pages: ") and "nothing-here" in desc and "\n" not in desc
