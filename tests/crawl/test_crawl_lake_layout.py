"""A crawl into the lake's crawl/ leaves no other build whose pages extraction would read too:
a raw_pages partition removes the unsharded `refinery crawl` (crawl/pages.parquet, warc/, its
state) and shards of another shard count; an unsharded crawl removes the shard=<k> crawls. Imports
(shard=import*) stay. Nothing is removed before the seeds and the config are checked."""

from __future__ import annotations

import pytest

from crawlers.crawl.config import CrawlError, shard_of
from crawlers.extract.warc import find_pages_files
from pipelines.stage import Lake
from pipelines.stages.crawl import CRAWL_SHARDS, CrawlParams, run
from tests.extract.conftest import write_crawl

from .faultserver import FaultServer, Site

pytestmark = pytest.mark.timeout(90)
HOST = "127.0.0.93"


@pytest.fixture(scope="module")
def seed():
    with FaultServer([Site(HOST)], tree_size=3) as fs:
        yield fs.url(HOST, "/tree/0")


def _page(url: str, allowed: bool = True) -> dict:
    return {"url": url, "status": 200, "body": b"<p>x</p>", "training_allowed": allowed}


def _params(seed: str, **kw) -> CrawlParams:
    extra = {"allow_private_networks": True, "use_sitemaps": False}
    return CrawlParams(seeds=[seed], delay=0.0, max_pages=2, extra=extra, **kw)


def _names(crawl) -> list[str]:
    return sorted(p.name for p in crawl.iterdir())


def test_a_partition_removes_the_unsharded_crawl_and_shards_of_another_count(tmp_path, seed):
    crawl = tmp_path / "crawl"
    write_crawl(crawl, [_page("http://a.example/x")], crawl_config={"shard": 0, "shards": 1})
    (crawl / "skipped.parquet").write_bytes(b"")
    write_crawl(crawl / "shard=import-1", [_page("http://b.example/y")])
    write_crawl(crawl / "shard=import", [_page("http://b.example/z")])
    write_crawl(crawl / "shard=1", [_page("http://c.example/")], crawl_config={"shards": 2})
    n = {"shard": 2, "shards": CRAWL_SHARDS}
    write_crawl(crawl / "shard=2", [_page("http://d.example/", allowed=False)], crawl_config=n)
    write_crawl(crawl / f"shard={CRAWL_SHARDS}", [_page("http://e.example/")])
    (crawl / "outbox" / "to-2").mkdir(parents=True)

    run(_params(seed), Lake(root=tmp_path, partition="0"))

    assert _names(crawl) == [
        "outbox",  # the partitions' own
        "shard=0",
        "shard=2",  # a shard of this count stays
        "shard=import",
        "shard=import-1",
    ]
    read = {p.parent.name for p in find_pages_files(crawl)}
    assert read == {"shard=0", "shard=2", "shard=import", "shard=import-1"}


def test_an_unsharded_crawl_removes_the_shard_crawls_but_not_imports(tmp_path, seed):
    crawl = tmp_path / "crawl"
    n = {"shard": 0, "shards": CRAWL_SHARDS}
    write_crawl(crawl / "shard=0", [_page("http://a.example/x", allowed=False)], crawl_config=n)
    write_crawl(crawl / "shard=3", [_page("http://b.example/y")])
    write_crawl(crawl / "shard=import-0", [_page("http://c.example/")])
    (crawl / "outbox" / "to-3").mkdir(parents=True)
    (crawl / "outbox" / "to-0").mkdir(parents=True)  # its own inbox: the render's links

    run(_params(seed), Lake(root=tmp_path))

    assert {"shard=0", "shard=3"}.isdisjoint(_names(crawl))
    assert sorted(p.name for p in (crawl / "outbox").iterdir()) == ["to-0"]
    read = {p.parent.name for p in find_pages_files(crawl)}
    assert read == {"crawl", "shard=import-0"}


def test_a_cli_shard_crawl_writes_its_shard_directory(tmp_path, seed):
    crawl = tmp_path / "crawl"
    write_crawl(crawl, [_page("http://a.example/x")])
    run(_params(seed, shard="1/2"), Lake(root=tmp_path))  # --shard 1/2, no --out
    routed = ["outbox"] if shard_of(HOST, 2) != 1 else []  # the seed's host, sent to shard 0
    assert _names(crawl) == [*routed, "shard=1"]  # the unsharded crawl is gone
    assert (crawl / "shard=1" / "pages.parquet").exists()


def test_a_refused_cli_crawl_removes_nothing(tmp_path, seed):
    crawl = tmp_path / "crawl"
    write_crawl(crawl, [_page("http://a.example/x")], crawl_config={"shard": 0, "shards": 1})
    write_crawl(crawl / "shard=0", [_page("http://b.example/y")])
    with pytest.raises(CrawlError, match="already holds a crawl"):
        run(_params(seed), Lake(root=tmp_path))  # crawl/ holds a crawl: --resume or another --out
    assert (crawl / "shard=0" / "pages.parquet").exists()


@pytest.mark.parametrize(
    "bad",
    [
        {"politeness_key": "hostname"},  # not a politeness key
        {"per_host_connections": 0},
        {"extra": {"agnet": "x"}},  # no such CrawlConfig field
        {"seeds_file": "missing-seeds.txt"},
    ],
)
def test_a_bad_config_leaves_the_partitions_crawl_in_place(tmp_path, seed, bad):
    crawl = tmp_path / "crawl"
    write_crawl(crawl / "shard=0", [_page("http://a.example/x")])
    write_crawl(crawl, [_page("http://b.example/y")])
    kw = {"seeds": [seed], **bad}
    if "seeds_file" in kw:
        kw["seeds_file"] = tmp_path / kw["seeds_file"]
    with pytest.raises((ValueError, FileNotFoundError)):
        run(CrawlParams(**kw), Lake(root=tmp_path, partition="0"))
    assert _names(crawl) == ["pages.parquet", "shard=0", "warc"]
    assert _names(crawl / "shard=0") == ["pages.parquet", "warc"]
