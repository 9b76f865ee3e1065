"""A page's own-host frames are links of the page, and the URLs a rendered page pushed into its
history (a client-side pager) go back to the crawl, under the crawl's link rules."""

from __future__ import annotations

from pathlib import Path

from crawlers.crawl.html import parse_html
from crawlers.render.crawl import LinkSource, new_links

AGENTS = {"agent": "RefineryBot", "training_agent": "RefineryBot-Extended"}


def _links(html: str, base: str) -> list[str]:
    return [lk.url for lk in parse_html(html, base, **AGENTS).links]


def test_frames_of_the_pages_own_host_are_links_and_other_hosts_are_not():
    html = """<html><body><h1>Reader</h1>
    <iframe src="/embed/article-12.html" title="Article"></iframe>
    <iframe src="https://video.example.net/player/9"></iframe>
    <frameset><frame src="nav/left.html"></frameset>
    <iframe src="javascript:void(0)"></iframe><iframe src="about:blank"></iframe>
    </body></html>"""
    got = _links(html, "http://news.example.org/reader/")
    assert "http://news.example.org/embed/article-12.html" in got
    assert "http://news.example.org/reader/nav/left.html" in got
    assert not [u for u in got if "video.example.net" in u]
    assert not [u for u in got if "blank" in u or "javascript" in u]


def _source(static: frozenset[str] = frozenset()) -> LinkSource:
    return LinkSource(
        Path("/nonexistent"), 1, 0, AGENTS["agent"], AGENTS["training_agent"], 0, static
    )


def test_pushed_history_urls_are_handed_on_once_canonical_and_without_fragments():
    page = "http://shop.example.org/archive"
    html = "<html><body><a href='/archive?page=3'>3</a><p>items</p></body></html>"
    rows = new_links(
        html,
        page,
        _source(),
        ["/archive?page=2#top", "http://shop.example.org/archive?page=2", "/archive?page=3"],
    )
    urls = [r["url"] for r in rows]
    assert urls == [
        "http://shop.example.org/archive?page=3",
        "http://shop.example.org/archive?page=2",
    ]
    assert all(r["source"] == "render" and r["parent"] == page for r in rows)


def test_a_nofollow_dom_hands_on_no_pushed_url():
    html = "<html><head><meta name=robots content=nofollow></head><body>x</body></html>"
    assert new_links(html, "http://a.example.org/p", _source(), ["/p?page=2"]) == []
