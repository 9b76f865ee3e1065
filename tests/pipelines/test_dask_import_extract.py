"""`refinery import warc` and `refinery extract` on Beam's DaskRunner (the README's short name
`--runner DaskRunner`) on a real dask.distributed cluster (a scheduler and one worker process on
loopback, started and stopped here): the same outputs as the DirectRunner."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipelines.beam.dask_cluster import local_dask_cluster
from pipelines.cli import app
from tests.imports.archives import page, response, write_warc

pytestmark = pytest.mark.slow  # make test-fast leaves it out

SITE = "http://127.0.0.1:9"  # --offline: no robots.txt is fetched


def _cli(args: list[str]) -> None:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output


@pytest.mark.timeout(300)
def test_import_and_extract_on_dask_match_direct(tmp_path):
    for i in range(2):  # two files: two Beam elements
        write_warc(
            tmp_path / f"f{i}.warc.gz",
            lambda w, i=i: [response(w, f"{SITE}/p{i}-{j}", page(f"P{i}{j}")) for j in range(3)],
        )
    files = [str(tmp_path / "f0.warc.gz"), str(tmp_path / "f1.warc.gz")]
    _cli(["import", "warc", *files, "--offline", "--out", str(tmp_path / "imp-direct")])
    crawl, out = str(tmp_path / "imp-direct"), str(tmp_path / "ext-direct")
    _cli(["extract", "--crawl", crawl, "--out", out, "--render", "never"])
    with local_dask_cluster(n_workers=1) as address:
        dask = ["--runner", "DaskRunner", f"--dask_client_address={address}"]
        _cli(["import", "warc", *files, "--offline", "--out", str(tmp_path / "imp-dask"), *dask])
        crawl, out = str(tmp_path / "imp-dask"), str(tmp_path / "ext-dask")
        _cli(["extract", "--crawl", crawl, "--out", out, "--render", "never", *dask])
    skip = {"fetched_at", "robots_fetched_at", "consent_source"}
    a = pq.read_table(tmp_path / "imp-direct" / "pages.parquet")
    b = pq.read_table(tmp_path / "imp-dask" / "pages.parquet")
    assert a.num_rows == 6
    cols = [c for c in a.column_names if c not in skip]
    assert a.select(cols).to_pylist() == b.select(cols).to_pylist()
    for name in ("documents", "rejects", "interleaved", "image_refs", "tables"):
        a = pq.read_table(tmp_path / "ext-direct" / f"{name}.parquet")
        b = pq.read_table(tmp_path / "ext-dask" / f"{name}.parquet")
        cols = [c for c in a.column_names if c not in skip]
        assert a.select(cols).to_pylist() == b.select(cols).to_pylist(), name
    assert pq.read_table(tmp_path / "ext-dask" / "documents.parquet").num_rows == 6
