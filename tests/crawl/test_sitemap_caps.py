"""Sitemaps cannot flood a crawl: per host, a cap on sitemap documents and on the URLs they
queue, and with max_pages no expansion while the host's queue already holds several times the
pages left; whatever a cap keeps out is recorded in skipped.parquet as sitemap-cap."""

from __future__ import annotations

import asyncio
import sqlite3

import pyarrow.parquet as pq
from aiohttp import web

from crawlers.crawl import crawl

from .loopback import LoopbackServer

HOST = "127.0.31.11"
CHILDREN, PER_CHILD = 5, 40
FAST = dict(allow_private_networks=True, delay=0, robots_retries=0)


class SitemapHost(LoopbackServer):
    """robots.txt -> /index.xml -> CHILDREN urlsets of PER_CHILD pages each; the home page links
    one page of the last urlset."""

    def __init__(self):
        super().__init__([HOST])
        self.sitemaps_served = 0

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == "/robots.txt":
            return web.Response(
                text=f"User-agent: *\nAllow: /\nSitemap: {self.url('/index.xml')}\n"
            )
        if path == "/index.xml":
            self.sitemaps_served += 1
            locs = "".join(
                f"<sitemap><loc>{self.url(f'/sm{i}.xml')}</loc></sitemap>" for i in range(CHILDREN)
            )
            return web.Response(
                text=f"<sitemapindex>{locs}</sitemapindex>", content_type="text/xml"
            )
        if path.startswith("/sm"):
            self.sitemaps_served += 1
            i = int(path[3:].split(".")[0])
            locs = "".join(
                f"<url><loc>{self.url(f'/s{i}/p{j}')}</loc></url>" for j in range(PER_CHILD)
            )
            return web.Response(text=f"<urlset>{locs}</urlset>", content_type="text/xml")
        link = f'<a href="/s{CHILDREN - 1}/p7">linked</a>' if path == "/" else ""
        return web.Response(text=f"<p>words on {path}</p>{link}", content_type="text/html")


def _outputs(out) -> tuple[dict, dict]:
    pages = {r["url"]: r for r in pq.read_table(out / "pages.parquet").to_pylist()}
    skipped = {r["url"]: r for r in pq.read_table(out / "skipped.parquet").to_pylist()}
    return pages, skipped


def test_a_small_page_budget_stops_sitemap_expansion(tmp_path):
    with SitemapHost() as site:
        summary = asyncio.run(crawl([site.url("/")], tmp_path, {**FAST, "max_pages": 3}))
        served = site.sitemaps_served
    pages, skipped = _outputs(tmp_path)
    assert summary["fetched"] == 3
    # The index and one child: the first child's URLs already fill the queue many times over.
    assert served == 2 and summary["sitemaps_left"] == CHILDREN - 1
    capped = [r for r in skipped.values() if r["skip_reason"].startswith("sitemap-cap:")]
    assert capped and all("sitemap_queue_factor" in r["skip_reason"] for r in capped)
    assert summary["queued_left"] <= 4 * 3
    # Every URL of the child read is accounted for: fetched, queued or recorded as capped.
    listed = {site.url(f"/s0/p{j}") for j in range(PER_CHILD)}
    with sqlite3.connect(tmp_path / "frontier.sqlite") as db:
        queued = {u for (u,) in db.execute("SELECT url FROM urls WHERE state = 'queued'")}
    assert len(listed & set(pages)) + len(listed & queued) + len(capped) == PER_CHILD
    assert len(queued) == summary["queued_left"]


def test_per_host_caps_record_the_sitemaps_and_urls_they_leave_out(tmp_path):
    cfg = {**FAST, "max_sitemaps_per_host": 3, "max_sitemap_urls_per_host": PER_CHILD + 5}
    with SitemapHost() as site:
        summary = asyncio.run(crawl([site.url("/")], tmp_path, cfg))
        served = site.sitemaps_served
    pages, skipped = _outputs(tmp_path)
    assert served == 3  # the index and two children: three sitemaps
    reasons = {u: r["skip_reason"] for u, r in skipped.items()}
    for i in range(2, CHILDREN):
        assert "max_sitemaps_per_host" in reasons[site.url(f"/sm{i}.xml")]
    over = [u for u, why in reasons.items() if "max_sitemap_urls_per_host" in why]
    assert len(over) == PER_CHILD - 5 and all("/s1/" in u for u in over)
    queued_from_sitemaps = [u for u, p in pages.items() if p["source"] == "sitemap"]
    assert len(queued_from_sitemaps) == PER_CHILD + 5
    # A link reaches a page no sitemap read queued: links are not capped.
    linked = site.url(f"/s{CHILDREN - 1}/p7")
    assert pages[linked]["status"] == 200 and linked not in skipped
    assert summary["sitemap_capped"] == len(over) + CHILDREN - 2
    assert summary["queued_left"] == 0 and summary["sitemaps_left"] == 0


def test_sitemaps_left_by_a_small_budget_are_read_on_resume(tmp_path):
    with SitemapHost() as site:
        first = asyncio.run(crawl([site.url("/")], tmp_path, {**FAST, "max_pages": 3}))
        again = asyncio.run(
            crawl([site.url("/")], tmp_path, {**FAST, "max_pages": 60}, resume=True)
        )
        served = site.sitemaps_served
    assert first["sitemaps_left"] == CHILDREN - 1
    assert again["sitemaps_left"] < first["sitemaps_left"] and served > 2
    _, skipped = _outputs(tmp_path)
    assert not [u for u in skipped if u.endswith(".xml")]  # sitemaps waited, none was capped


class ManySitemaps(LoopbackServer):
    """A robots.txt listing 103 sitemaps, each an empty urlset."""

    def __init__(self):
        super().__init__([HOST])
        self.fetched: list[str] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            lines = "".join(f"Sitemap: http://{HOST}:{self.port}/m{i}.xml\n" for i in range(103))
            return web.Response(text="User-agent: *\nAllow: /\n" + lines)
        if request.path.startswith("/m"):
            self.fetched.append(request.path)
            return web.Response(text="<urlset></urlset>", content_type="text/xml")
        return web.Response(text="<p>home</p>", content_type="text/html")


def test_sitemaps_beyond_the_robots_and_host_caps_are_recorded(tmp_path):
    with ManySitemaps() as site:
        cfg = {**FAST, "max_sitemaps_per_host": 5}
        summary = asyncio.run(crawl([f"http://{HOST}:{site.port}/"], tmp_path, cfg))
        fetched = list(site.fetched)
    _, skipped = _outputs(tmp_path)
    assert sorted(fetched) == sorted(f"/m{i}.xml" for i in range(5))
    reasons = [r["skip_reason"] for r in skipped.values()]
    assert sum("max_sitemaps_per_host" in r for r in reasons) == 95
    assert sum("robots.txt lists more than 100 sitemaps" in r for r in reasons) == 3
    assert summary["sitemap_capped"] == 98 == len(skipped)


def test_a_resume_killed_before_its_end_leaves_no_old_pages_a_reader_takes_as_whole(
    tmp_path, monkeypatch
):
    """A resumed crawl's rows are in its frontier until its end compacts them: the previous
    run's pages.parquet (and manifest) go when it starts, so extract refuses the unfinished
    crawl, naming the resume, instead of reading the old pages as the whole crawl."""
    import pytest

    from common.inputs import InputError
    from common.manifest import manifest_path
    from crawlers.crawl import engine
    from crawlers.crawl.run import run_crawl
    from crawlers.extract.warc import find_pages_files

    with SitemapHost() as site:
        run_crawl([site.url("/")], tmp_path, config={**FAST, "max_pages": 3})
        assert manifest_path(tmp_path / "pages.parquet").exists()

        def killed(*_a, **_k):
            raise KeyboardInterrupt  # the process dies before its outputs are compacted

        monkeypatch.setattr(engine, "write_outputs", killed)
        with pytest.raises(KeyboardInterrupt):
            run_crawl([site.url("/")], tmp_path, config={**FAST, "max_pages": 6}, resume=True)
    for name in ("pages.parquet", "skipped.parquet"):
        assert not (tmp_path / name).exists() and not manifest_path(tmp_path / name).exists()
    with pytest.raises(InputError, match="--resume"):
        find_pages_files(tmp_path)
