"""Beam's DaskRunner on a real dask.distributed cluster (a scheduler and two worker processes on
loopback, started and stopped here): `refinery filter` and `refinery mix build` give output
identical to DirectRunner, through the CLI's short runner name."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipelines.beam.dask_cluster import local_dask_cluster
from pipelines.beam.fs import DASK_RUNNER, runner_args
from pipelines.cli import app
from pipelines.stages.filter import run_filter
from tests.mix.conftest import base_spec, lake  # noqa: F401 - the mix fixtures

from .test_pipeline import _plain

pytestmark = pytest.mark.slow  # make test-fast leaves it out

# Enough of the sample web for exact, URL and near-duplicate clusters, in a few seconds per run.
N_DOCS = 150
NO_DEFAULTS = {"quality": {"use_default_models": False}}


@pytest.fixture(scope="module")
def dask_address():
    with local_dask_cluster(n_workers=2) as address:
        yield address


@pytest.fixture(scope="module")
def small_docs(tmp_path_factory, docs_dir, labelled_docs):
    """Every labelled duplicate-cluster member of the sample web, plus other pages up to N_DOCS."""
    d = tmp_path_factory.mktemp("docs_small")
    dups = [x["id"] for x in labelled_docs if x["dup_cluster"] is not None]
    others = [x["id"] for x in labelled_docs if x["dup_cluster"] is None]
    keep = set(dups[:N_DOCS] + others[: max(0, N_DOCS - len(dups))])
    table = pq.read_table(docs_dir / "documents.parquet")
    table = table.filter(pa.array([i in keep for i in table["id"].to_pylist()]))
    pq.write_table(table, d / "documents.parquet", row_group_size=50)
    return d


def test_short_runner_name_and_dask_defaults():
    args = runner_args(["--runner", "DaskRunner", "--dask_client_address=tcp://127.0.0.1:1"])
    assert args[0] == f"--runner={DASK_RUNNER}" and "--dask_npartitions=2" in args
    assert runner_args(["--runner=DirectRunner"]) == ["--runner=DirectRunner"]
    given = runner_args([f"--runner={DASK_RUNNER}", "--dask_partition_size=3"])
    assert not any(a.startswith("--dask_npartitions") for a in given)


@pytest.mark.timeout(600)
def test_filter_on_dask_matches_direct(tmp_path, small_docs, dask_address):
    # No quality models (languages unscored): training them would dominate the test's time.
    direct = run_filter(small_docs, tmp_path / "direct", config=NO_DEFAULTS)
    cfg = tmp_path / "filter.yaml"
    cfg.write_text(json.dumps(NO_DEFAULTS))  # JSON is YAML
    res = CliRunner().invoke(
        app,
        [
            "filter",
            "--docs",
            str(small_docs),
            "--out",
            str(tmp_path / "dask"),
            "--config",
            str(cfg),
            "--runner",
            "DaskRunner",
            f"--dask_client_address={dask_address}",
        ],
    )
    assert res.exit_code == 0, res.output
    clusters = pq.read_table(tmp_path / "direct" / "dup_clusters.parquet")
    assert clusters.num_rows and direct["dedup_rate"] > 0
    for name in (
        "annotated.parquet",
        "documents.parquet",
        "dup_clusters.parquet",
        "host_languages.parquet",
    ):
        assert _plain(pq.read_table(tmp_path / "dask" / name)) == _plain(
            pq.read_table(tmp_path / "direct" / name)
        ), name
    assert (tmp_path / "dask" / "funnel.md").read_text() == (
        tmp_path / "direct" / "funnel.md"
    ).read_text()
    assert not list((tmp_path / "dask").glob("_beam-*")), "work parts left behind"


@pytest.mark.timeout(600)
def test_mix_build_on_dask_matches_direct(tmp_path, lake, dask_address):  # noqa: F811
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps(base_spec(lake)))
    runner = CliRunner()
    res = runner.invoke(
        app,
        ["mix", "build", str(spec), "--out", str(tmp_path / "direct"), "--runner", "DirectRunner"],
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        app,
        [
            "mix",
            "build",
            str(spec),
            "--out",
            str(tmp_path / "dask"),
            "--runner",
            "DaskRunner",
            "--beam-arg",
            f"--dask_client_address={dask_address}",
        ],
    )
    assert res.exit_code == 0, res.output
    a = json.loads((tmp_path / "direct" / "manifest.json").read_text())
    b = json.loads((tmp_path / "dask" / "manifest.json").read_text())
    assert [s["sha256"] for s in a["shards"]] == [s["sha256"] for s in b["shards"]]
    assert [e["path"] for e in a["eval"]] == [e["path"] for e in b["eval"]]
    for e in a["eval"]:
        assert (tmp_path / "direct" / e["path"]).read_bytes() == (
            tmp_path / "dask" / e["path"]
        ).read_bytes()
    skip = {"written_at", "dataset"}
    assert {k: v for k, v in a.items() if k not in skip} == {
        k: v for k, v in b.items() if k not in skip
    }
    assert not (tmp_path / "dask" / "_work").exists()


@pytest.mark.parametrize("runner", ["DirectRunner", "InProcess"])
def test_empty_input_writes_empty_outputs(tmp_path, runner):
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("url", pa.string()),
            ("text", pa.string()),
            ("training_allowed", pa.bool_()),
        ]
    )
    (tmp_path / "in").mkdir()
    pq.write_table(schema.empty_table(), tmp_path / "in" / "documents.parquet")
    summary = run_filter(
        tmp_path / "in", tmp_path / "out", config=NO_DEFAULTS, beam_args=[f"--runner={runner}"]
    )
    assert summary["rows_in"] == 0 and summary["clusters"] == 0
    for name in ("annotated.parquet", "documents.parquet", "dup_clusters.parquet"):
        assert pq.read_table(tmp_path / "out" / name).num_rows == 0
