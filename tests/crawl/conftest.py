"""Fixtures: the fault server on loopback and a helper that crawls it."""

from __future__ import annotations

import asyncio

import pyarrow.parquet as pq
import pytest

from crawlers.crawl import crawl

from .faultserver import FaultServer, Site

# Fast but still polite settings for loopback tests.
FAST = dict(
    delay=0.05,
    allow_private_networks=True,
    total_timeout=1.5,
    read_timeout=1.0,
    connect_timeout=1.0,
    max_body_bytes=2**20,
    max_decompressed_bytes=4 * 2**20,
    backoff_base=0.2,
    backoff_max=1.0,
    robots_retries=0,
)


@pytest.fixture(scope="module")
def fault_crawl(tmp_path_factory):
    """Crawl a normal host, a malformed-robots host, a robots-503 host, a robots-timeout host and a
    robots-redirect host once; tests read the outputs and the server-side log."""
    sites = [
        Site("127.0.0.41", crawl_delay=0.3),
        Site("127.0.0.42", robots="malformed"),
        Site("127.0.0.43", robots="503"),
        Site("127.0.0.44", robots="timeout"),
        Site("127.0.0.45", robots="redirect"),
    ]
    out = tmp_path_factory.mktemp("faultcrawl")
    with FaultServer(sites, drip_s=0.3) as fs:
        seeds = [fs.url(s.ip) for s in sites]
        summary = asyncio.run(crawl(seeds, out, FAST))
        pages = pq.read_table(out / "pages.parquet").to_pylist()
        yield {
            "server": fs,
            "out": out,
            "summary": summary,
            "pages": {p["url"]: p for p in pages},
            "sites": sites,
        }


# The sample web crawled once per session (no delay: loopback; robots Crawl-delay still applies);
# the server stays up so other tests (shards) can crawl the same hosts again.
SAMPLE_CRAWL_CONFIG = {"delay": 0.0, "allow_private_networks": True, "robots_retries": 0}


@pytest.fixture(scope="session")
def sampleweb_single(sample_lake):
    """(served sample web, output directory, summary) of one unsharded crawl of the sample web:
    the session's shared crawl (tests/samplelake.py); the web stays served for the session."""
    return sample_lake.served, sample_lake.crawl.dir, sample_lake.crawl.summary
