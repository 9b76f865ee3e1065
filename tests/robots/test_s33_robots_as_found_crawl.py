"""A real crawl asks robots.txt about each link, sitemap entry, seed and redirect Location as
the site wrote it, not only about the canonical form it requests (review s33): the canonicaliser
sorts query parameters, so `Disallow: /search?q=` must still hold for a link to
`/search?q=test&page=2` requested as `/search?page=2&q=test`. Loopback server only."""

from __future__ import annotations

import asyncio

import pyarrow.parquet as pq
import pytest
from aiohttp import web

from crawlers.crawl import crawl
from tests.crawl.loopback import LoopbackServer

pytestmark = pytest.mark.timeout(60)
IP = "127.0.33.9"
ROBOTS = (
    "User-agent: *\nUser-agent: RefineryBot-Extended\n"
    "Disallow: /index.php?title=Special:\nDisallow: /search?q=\nDisallow: /%7Ejoe/\n"
    "User-agent: RefineryBot-Extended\nDisallow: /wiki?lang=\n"
)
LINKS = [
    "/index.php?title=Special:Random&action=view",
    "/search?q=test&page=2#results",
    "/%7Ejoe/a",
    "/wiki?lang=de&action=view",  # crawl allowed, training not, as found
    "/moved",  # redirects to a disallowed spelling
    "/ok",
]
PAGE = "<html><body><p>some page text here</p>{}</body></html>"


class Site(LoopbackServer):
    def __init__(self) -> None:
        super().__init__([IP])
        self.seen: list[str] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(request.raw_path)
        if request.path == "/robots.txt":
            return web.Response(text=ROBOTS)
        if request.path == "/moved":
            raise web.HTTPFound("/search?q=moved&page=1")
        links = "".join(f'<a href="{u}">x</a>' for u in LINKS) if request.path == "/" else ""
        return web.Response(text=PAGE.format(links), content_type="text/html")


def test_links_and_redirects_are_judged_as_found(tmp_path) -> None:
    with Site() as site:
        cfg = {"delay": 0.0, "allow_private_networks": True, "use_sitemaps": False}
        asyncio.run(crawl([f"http://{IP}:{site.port}/"], tmp_path, cfg))
    assert sorted(site.seen) == [
        "/",
        "/moved",
        "/ok",
        "/robots.txt",
        "/wiki?action=view&lang=de",
    ]
    rows = {
        r["url"].split(str(site.port), 1)[1]: r
        for r in pq.read_table(tmp_path / "pages.parquet").to_pylist()
    }
    for path in (
        "/index.php?action=view&title=Special:Random",
        "/search?page=2&q=test",
        "/~joe/a",
        "/search?page=1&q=moved",
    ):
        assert (rows[path]["robots_crawl"], rows[path]["crawl_allowed"]) == ("disallowed", 0)
    wiki = rows["/wiki?action=view&lang=de"]
    assert (wiki["robots_crawl"], wiki["robots_training"]) == ("allowed", "disallowed")
    assert wiki["training_allowed"] == 0
