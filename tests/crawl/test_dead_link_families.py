"""Dead links sink once a few have failed, even when no two share a URL shape: failures also
count per site section (/wiki/Perceptron, /wiki/BIRCH) and per link depth of a host, as on a
mirrored or archived site whose pages all link to pages that were never copied."""

from __future__ import annotations

import asyncio

import pyarrow.parquet as pq
from aiohttp import web

from crawlers.crawl import crawl
from crawlers.crawl.traps import FamilyStats

from .loopback import LoopbackServer

HOST = "127.0.32.11"
H = f"http://{HOST}"
PAGES, DEAD_PER_PAGE = 20, 5
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()


def test_a_section_whose_pages_all_failed_sinks_though_each_url_is_its_own_shape():
    fam = FamilyStats()
    for name in ("perceptron", "birch", "dbscan"):
        fam.record(f"{H}/wiki/{name}", "", 404, 0)
    assert fam.adjustment(f"{H}/wiki/elki", "") <= -3.0
    assert "wiki" in fam.why(f"{H}/wiki/elki", "")
    assert fam.adjustment(f"{H}/news/elki", "") == 0.0
    # a section with live pages is not sunk by a few dead ones
    for n in range(10):
        fam.record(f"{H}/docs/page-{n}-of-the-guide", "", 200, 1)
    for name in ("old", "gone", "moved"):
        fam.record(f"{H}/docs/{name}", "", 404, 0)
    assert fam.adjustment(f"{H}/docs/other", "") == 0.0


def test_a_link_depth_whose_pages_all_failed_sinks_on_that_host_only():
    fam = FamilyStats()
    for section in ("users", "works", "collections"):
        fam.record(f"{H}/{section}/someone", "", 404, 0, depth=2)
    assert fam.adjustment(f"{H}/series/one-more-title-here", "", depth=2) <= -3.0
    assert fam.adjustment(f"{H}/series/one-more-title-here", "", depth=1) == 0.0
    assert fam.adjustment("http://other/series/one-more-title-here", "", depth=2) == 0.0


def _word(i: int, k: int) -> str:
    """A letters-only path segment unique to (i, k): each is a URL shape of its own."""
    return WORDS[i % len(WORDS)] + WORDS[k % len(WORDS)] + "abcdefghijklmnopqrst"[i]


class MirrorHost(LoopbackServer):
    """An index linking PAGES copied pages; each copy links DEAD_PER_PAGE pages that were never
    copied (404), under URLs that rank above the copies (article slugs), each of a shape and
    anchor text of its own."""

    def __init__(self):
        super().__init__([HOST])
        self.requests: list[str] = []

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        self.requests.append(path)
        if path == "/":
            links = "".join(f'<a href="/t/{i}.html">{i}</a> ' for i in range(PAGES))
            return web.Response(text=f"<ul>{links}</ul>", content_type="text/html")
        if path.startswith("/t/"):
            i = int(path[3:].split(".")[0])
            dead = "".join(
                f'<a href="/{_word(i, k)}/a-long-{_word(k, i)}-title">{_word(k, i)} story</a> '
                f'<a href="/wiki/{_word(i, k)}">{_word(i, k)}</a> '
                for k in range(DEAD_PER_PAGE)
            )
            return web.Response(text=f"<p>copied page {i}</p>{dead}", content_type="text/html")
        return web.Response(status=404, text="<h1>Not found</h1>", content_type="text/html")


def test_a_mirror_fetches_its_pages_before_their_dead_outlinks(tmp_path):
    budget = 1 + PAGES + 5
    config = dict(allow_private_networks=True, delay=0, robots_retries=0, max_pages=budget)
    with MirrorHost() as site:
        asyncio.run(crawl([site.url("/")], tmp_path, config))
    pages = pq.read_table(tmp_path / "pages.parquet").to_pylist()
    fetched = [p for p in pages if p["status"] is not None]
    copies = [p for p in fetched if p["depth"] == 1 and p["status"] == 200]
    dead = [p for p in fetched if p["status"] == 404]
    assert len(copies) == PAGES, (len(copies), len(dead))
    assert len(dead) <= budget - 1 - PAGES
    # past the first few failures, the dead links were fetched sunk: only once nothing else was left
    sunk = [p for p in dead if p["priority"] < 0 and "fetched failed" in p["priority_reasons"]]
    assert len(sunk) >= len(dead) - 3
