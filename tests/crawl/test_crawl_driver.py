"""The crawl stage's driver is the crawl package's (issue #25, one vertical slice per stage):
`crawlers.crawl.run.run_crawl` crawls and writes the manifests of pages.parquet, skipped.parquet
and warc/, returning a typed result, without the orchestration layer; `refinery crawl` and the
`raw_pages` asset call it and report what it returned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from common.manifest import manifest_path

from .faultserver import FaultServer, Site

pytestmark = pytest.mark.timeout(90)
HOST = "127.0.0.95"
FAST = {"allow_private_networks": True, "use_sitemaps": False, "delay": 0.0, "max_pages": 2}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def seed():
    with FaultServer([Site(HOST)], tree_size=3) as fs:
        yield fs.url(HOST, "/tree/0")


def test_run_crawl_writes_the_three_manifests_and_returns_the_summary(seed, tmp_path):
    from crawlers.crawl.run import CrawlResult, run_crawl

    result = run_crawl([seed], tmp_path, config=FAST)
    assert set(result) <= set(CrawlResult.__annotations__)
    assert result["pages"] == result["fetched"] == 2 and result["out_dir"] == str(tmp_path)
    manifests = {
        name: json.loads(manifest_path(tmp_path / name).read_text())
        for name in ("pages.parquet", "skipped.parquet", "warc")
    }
    assert {name: m["rows"] for name, m in manifests.items()} == {
        "pages.parquet": result["pages"],
        "skipped.parquet": result["skipped"],
        "warc": result["fetched"],
    }
    assert all(m["inputs"] == [seed] for m in manifests.values())
    assert manifests["pages.parquet"]["summary"] == json.loads(json.dumps(result))
    assert manifests["warc"]["format"] == "WARC/1.1, gzip member per record"


def test_the_stage_reports_what_the_driver_returned(seed, tmp_path, monkeypatch):
    import crawlers.crawl.run as driver
    from pipelines.stage import Lake
    from pipelines.stages import crawl as stage

    returned = []

    def spy(*args, **kwargs):
        returned.append(driver.run_crawl(*args, **kwargs))
        return returned[-1]

    monkeypatch.setattr(stage, "run_crawl", spy)
    params = stage.CrawlParams(
        seeds=[seed], out=tmp_path / "c", delay=0.0, max_pages=2, extra=FAST, quiet=True
    )
    summary = stage.run(params, Lake(tmp_path / "lake"))
    assert returned and summary.details == returned[0]
    assert summary.outputs == {"raw_pages": str(tmp_path / "c")}
    assert summary.metadata()["pages_fetched"] == returned[0]["fetched"] == 2


def test_the_crawl_driver_imports_nothing_from_pipelines():
    code = (
        "import sys, crawlers.crawl.run\n"
        "up = sorted(m for m in sys.modules if m.split('.')[0] in ('pipelines', 'dagster'))\n"
        "assert not up, up\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_lake_layout_helpers_are_the_crawl_packages(tmp_path):
    from crawlers.crawl.run import SHARD_PREFIX, clear_lake_out, lake_out

    crawl = tmp_path / "crawl"
    assert lake_out(crawl, 0, 1) == crawl and lake_out(crawl, 2, 4) == crawl / "shard=2"
    for name in ("shard=0", "shard=1", "shard=import", "outbox/to-0", "outbox/to-1"):
        (crawl / name).mkdir(parents=True)
    clear_lake_out(crawl, 1, fresh=False)  # an unsharded crawl removes the shard builds
    left = sorted(str(p.relative_to(crawl)) for p in crawl.rglob("*"))
    assert left == ["outbox", "outbox/to-0", f"{SHARD_PREFIX}import"]
