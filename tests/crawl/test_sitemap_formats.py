"""Sitemaps in every form sitemaps.org and the search engines take: the text form (one URL a
line), RSS 2.0, RSS 1.0 (RDF) and Atom feeds, plain or gzipped, read with the caps and the host
rules of XML sitemaps."""

from __future__ import annotations

import asyncio
import gzip

import pyarrow.parquet as pq
import pytest
from aiohttp import web

from crawlers.crawl import crawl
from crawlers.crawl.sitemaps import parse_sitemap

from .loopback import LoopbackServer

HOST, OTHER = "127.0.32.1", "127.0.32.2"
FAST = dict(allow_private_networks=True, delay=0, robots_retries=0)

RSS = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>x</title><link>http://h/</link>
<item><title>a</title><link>http://h/rss-1</link></item>
<item><title>b</title><link> http://h/rss-2 </link><guid>http://h/rss-2</guid></item>
</channel></rss>"""
RDF = b"""<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
xmlns="http://purl.org/rss/1.0/"><channel rdf:about="http://h/"><link>http://h/</link></channel>
<item rdf:about="http://h/rdf-1"><title>a</title></item>
<item rdf:about="http://h/x"><link>http://h/rdf-2</link></item></rdf:RDF>"""
ATOM = b"""<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"
xml:base="http://h/blog/"><title>x</title><link rel="self" href="http://h/atom.xml"/>
<entry><link rel="enclosure" href="http://h/a.mp3"/><link href="http://h/atom-1"/></entry>
<entry><link rel="alternate" type="text/html" href="post-2"/></entry></feed>"""


@pytest.mark.parametrize(
    ("body", "urls"),
    [
        (b"\xef\xbb\xbfhttp://h/a\r\n\r\n  https://h/b  \n# a comment\nftp://h/c\n/rel\n", None),
        (RSS, ["http://h/rss-1", "http://h/rss-2"]),
        (RDF, ["http://h/rdf-1", "http://h/rdf-2"]),
        (ATOM, ["http://h/atom-1", "http://h/blog/post-2"]),
    ],
    ids=["text", "rss", "rdf", "atom"],
)
def test_text_and_feed_sitemaps_list_their_urls(body, urls):
    urls = urls or ["http://h/a", "https://h/b"]
    assert parse_sitemap(body).urls == urls
    assert parse_sitemap(gzip.compress(body)).urls == urls  # a .gz served as-is


def test_text_and_feed_sitemaps_keep_the_url_cap():
    text = "".join(f"http://h/p{i}\n" for i in range(10)).encode()
    sm = parse_sitemap(text, max_urls=4)
    assert len(sm.urls) == 4 and sm.dropped == 6
    items = "".join(f"<item><link>http://h/i{i}</link></item>" for i in range(10))
    sm = parse_sitemap(f"<rss><channel>{items}</channel></rss>".encode(), max_urls=3)
    assert len(sm.urls) == 3 and sm.dropped == 7


@pytest.mark.parametrize("body", [b"", b"   \n", b"just words\nno addresses here\n"])
def test_a_body_that_is_neither_xml_nor_a_url_list_is_refused(body):
    with pytest.raises(ValueError, match="not XML"):
        parse_sitemap(body)


class FeedHost(LoopbackServer):
    """robots.txt names a text sitemap, an RSS feed and an Atom feed; the home page links none
    of what they list."""

    def __init__(self):
        super().__init__([HOST, OTHER])

    def url(self, path: str, ip: str = HOST) -> str:
        return f"http://{ip}:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if request.host.split(":")[0] == OTHER:
            return web.Response(text=f"<p>other host {path}</p>", content_type="text/html")
        if path == "/robots.txt":
            maps = "".join(
                f"Sitemap: {self.url(p)}\n" for p in ("/sitemap.txt", "/feed.rss", "/atom.xml")
            )
            return web.Response(text=f"User-agent: *\nAllow: /\n{maps}")
        if path == "/sitemap.txt":
            lines = [self.url("/from-text-1"), self.url("/from-text-2"), self.url("/x", OTHER)]
            return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")
        if path == "/feed.rss":
            item = f"<item><title>t</title><link>{self.url('/from-rss')}</link></item>"
            body = f'<rss version="2.0"><channel><title>f</title>{item}</channel></rss>'
            return web.Response(
                body=gzip.compress(body.encode()), content_type="application/octet-stream"
            )
        if path == "/atom.xml":
            entry = f'<entry><title>t</title><link href="{self.url("/from-atom")}"/></entry>'
            body = f'<feed xmlns="http://www.w3.org/2005/Atom"><title>f</title>{entry}</feed>'
            return web.Response(text=body, content_type="application/atom+xml")
        return web.Response(text=f"<p>words on {path}</p>", content_type="text/html")


def test_a_crawl_reads_text_rss_and_atom_sitemaps_named_by_robots_txt(tmp_path):
    with FeedHost() as site:
        asyncio.run(crawl([site.url("/")], tmp_path, {**FAST, "follow_external": False}))
        want = {site.url(p) for p in ("/from-text-1", "/from-text-2", "/from-rss", "/from-atom")}
        off_host = site.url("/x", OTHER)
    pages = {r["url"]: r for r in pq.read_table(tmp_path / "pages.parquet").to_pylist()}
    assert want <= set(pages)
    assert all(pages[u]["source"] == "sitemap" and pages[u]["status"] == 200 for u in want)
    # the scope rules of XML sitemaps hold: without follow_external, another host's URL is
    # recorded, not fetched
    skipped = {r["url"]: r for r in pq.read_table(tmp_path / "skipped.parquet").to_pylist()}
    assert off_host not in pages and skipped[off_host]["skip_reason"].startswith("external")
