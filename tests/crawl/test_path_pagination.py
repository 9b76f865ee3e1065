"""Listings paged by a number in the path (`/section/world/2`, `/archive/page-3`,
`/list/index_2.html`) with only a "next" link: walking a listing is not going deeper into the
site, however the page number is spelled, so articles listed only on late pages stay within
max_depth."""

from __future__ import annotations

import re

from aiohttp import web

from crawlers.crawl.traps import pagination_step

from .realnews import RealNewsServer, crawl_news

H = "http://news.test"
_PAGED = re.compile(r"(/section/[a-z]+)\?page=(\d+)(&amp;|\")")


class PathPagedNewsServer(RealNewsServer):
    """RealNewsServer whose section listings are paged `/section/NAME/K` with a "next" link only."""

    label = "path-paged news server"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = request.raw_path
        m = re.match(r"(/section/[a-z]+)/(\d+)$", raw)
        if m:
            request = request.clone(rel_url=f"{m.group(1)}?page={m.group(2)}")
        resp = await super()._handle(request)
        if m:
            self.hits[-1] = raw
        if resp.content_type == "text/html" and resp.text:
            html = re.sub(
                r'<nav class="pagination">.*?(<a rel="next"[^>]*>Next</a>)?\s*</nav>',
                lambda n: f'<nav class="pagination">{n.group(1) or ""}</nav>',
                resp.text,
            )
            resp.text = _PAGED.sub(
                lambda n: f"{n.group(1)}/{n.group(2)}" + ("?" if n.group(3) == "&amp;" else '"'),
                html,
            )
        return resp

    @staticmethod
    def family(path_qs: str) -> str:
        """As RealNewsServer.family, with the listings' page in the path."""
        return RealNewsServer.family(re.sub(r"(/section/[a-z]+)/(\d+)", r"\1?page=\2", path_qs))


def test_articles_listed_only_on_late_path_paged_listing_pages_are_crawled(tmp_path):
    # max_depth 3: home (0) -> section (1) -> item (2), however many listing pages lie between,
    # and one more for a section first reached from an article
    result = crawl_news(
        tmp_path / "out", 400, seed=6, ip="127.0.0.67", server=PathPagedNewsServer, max_depth=3
    )
    print("\n", result)
    assert result["coverage"] >= 0.95, result
    assert result["by_kind"]["item"] >= 0.95 * 133, result


def test_a_page_number_in_the_last_path_segment_is_a_pagination_step():
    steps = [
        ("/section/world/2", "/section/world"),  # the listing is seen paged by a number ...
        ("/section/world/3", "/section/world/2"),  # ... so from one number to the next is too
        ("/section/world", "/section/world/2"),  # back to the first page
        ("/archive/page-4", "/archive/page-3"),
        ("/list/index_2.html", "/list/index_3.html"),
        ("/news/page/3", "/news/page/2"),
    ]
    listings: set[str] = set()
    for url, parent in steps:
        assert pagination_step(H + url, H + parent, listings), (url, parent)
    others = [
        ("/story/300013", "/story/300026"),  # ids, not page numbers
        ("/2021/01/01/a-slug", "/2021/01/01"),
        ("/section/world/2", "/section/politics/2"),
        ("/section/world/page-2", "/section/world/2"),
    ]
    for url, parent in others:
        assert not pagination_step(H + url, H + parent, listings), (url, parent)
    assert not pagination_step(f"{H}/section/sport/3", f"{H}/section/sport/2")  # not seen paged
    assert not pagination_step(f"{H}/2019/04", f"{H}/2019")  # a month, not a page: '04'
    assert not pagination_step(f"{H}/news/2021", f"{H}/news")  # a year, not a page
