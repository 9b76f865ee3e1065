"""Shards that find each other's pages: links to another shard's hosts go through outboxes, and
4 shards crawling the sample web in rounds reach what one crawl reaches."""

from __future__ import annotations

import asyncio

import pyarrow.parquet as pq
import pytest

from crawlers.crawl import CrawlError, crawl, shard_of

from .conftest import FAST, SAMPLE_CRAWL_CONFIG
from .faultserver import FaultServer, Site

pytestmark = pytest.mark.timeout(240)
SHARDS = 4


def _fetched(out) -> set[str]:
    return {p["url"] for p in pq.read_table(out / "pages.parquet").to_pylist() if p["warc_file"]}


@pytest.mark.slow  # over 10 s on a quiet 2-core machine
def test_four_shards_in_rounds_reach_the_coverage_of_one(sampleweb_single, tmp_path):
    sw, single_out, _ = sampleweb_single  # the same hosts, crawled once unsharded
    single = _fetched(single_out)
    seeds = sw.seeds()
    root = tmp_path / "sharded"
    outs = [root / f"shard={k}" for k in range(SHARDS)]
    rounds = 0
    for rounds in range(1, 9):  # until a round fetches nothing new anywhere
        new = 0
        for k, out in enumerate(outs):
            cfg = {**SAMPLE_CRAWL_CONFIG, "shard": k, "shards": SHARDS}
            summary = asyncio.run(crawl(seeds, out, cfg, resume=rounds > 1))
            new += summary["fetched"]
        if new == 0:
            break
    union: set[str] = set()
    for k, out in enumerate(outs):
        mine = _fetched(out)
        assert all(shard_of(u.split("/")[2], SHARDS) == k for u in mine)  # only its own hosts
        assert not union & mine  # no page fetched by two shards
        union |= mine
    assert rounds >= 2  # routing was needed: some hosts are reached only through others' links
    assert union == single
    assert list((root / "outbox").glob("to-*/part-*.parquet"))


def test_inbox_is_read_once_and_a_url_received_twice_is_fetched_once(tmp_path):
    # Two hosts on different shards link to each other's pages; shard A's outbox is delivered to
    # B, then B resumes twice: each part is consumed once, each URL fetched once.
    ips = ["127.0.0.171", "127.0.0.172", "127.0.0.173", "127.0.0.174", "127.0.0.175"]
    groups: dict[int, list[str]] = {}
    for ip in ips:
        groups.setdefault(shard_of(ip, 2), []).append(ip)
    assert len(groups) == 2, "the test needs hosts on both shards"
    a_ip, b_ip = groups[0][0], groups[1][0]
    with FaultServer([Site(a_ip), Site(b_ip)]) as fs:
        root = tmp_path / "crawl"
        cfg = {**FAST, "delay": 0.0, "shards": 2, "use_sitemaps": False}
        seeds = [fs.url(a_ip, "/xrobots"), fs.url(a_ip, "/a")]  # /xrobots links to /visible
        # Shard 0 owns a_ip; seed it with links that point at b_ip (via a redirect-free page).
        b_links = [fs.url(b_ip, "/b"), fs.url(b_ip, "/b")]
        first = asyncio.run(crawl(seeds + b_links, root / "shard=0", {**cfg, "shard": 0}))
        assert first["routed_out"] == 1  # /b on b_ip, once although listed twice
        part = next((root / "outbox" / "to-1").glob("part-0-*.parquet"))
        assert pq.read_table(part).column("url").to_pylist() == [fs.url(b_ip, "/b")]
        b = root / "shard=1"
        one = asyncio.run(crawl([fs.url(b_ip, "/a")], b, {**cfg, "shard": 1}))
        two = asyncio.run(crawl([fs.url(b_ip, "/a")], b, {**cfg, "shard": 1}, resume=True))
    assert one["inbox"] == 1 and two["inbox"] == 0 and two["fetched"] == 0
    assert len(fs.hits_for(b_ip, "/b")) == 1
    assert fs.url(b_ip, "/b") in _fetched(b)
    skipped = pq.read_table(root / "shard=0" / "skipped.parquet").to_pylist()
    assert [s["skip_reason"] for s in skipped] == ["other-shard: routed to shard 1"]
    with pytest.raises(CrawlError, match="holds shard 1/2, not 0/2"):
        asyncio.run(crawl([fs.url(b_ip, "/a")], b, {**cfg, "shard": 0}, resume=True))
