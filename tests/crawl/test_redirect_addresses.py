"""Where a page sends the crawler on: a Location header's raw bytes are requested as they came
(percent-encoded, never re-encoded as UTF-8), and a meta refresh target is a link like any
other (robots.txt and every other check apply)."""

from __future__ import annotations

import asyncio

import pyarrow.parquet as pq
import pytest

from crawlers.crawl import crawl
from crawlers.crawl.fetcher import location_of
from crawlers.crawl.html import parse_html, refresh_target

HOST = "127.0.31.13"
AGENTS = dict(agent="RefineryBot", training_agent="RefineryBot-Extended")


@pytest.mark.parametrize(
    ("header", "url"),
    [
        ("/caf\xe9/x", "/caf%E9/x"),  # a latin-1 byte, as the fetcher keeps header bytes
        ("/caf\xc3\xa9/x", "/caf%C3%A9/x"),  # UTF-8 bytes: the UTF-8 address, not doubled
        (" /plain?q=1 ", "/plain?q=1"),
        ("http://h.test/\xe9?q=\xe9", "http://h.test/%E9?q=%E9"),
        # a host is text for IDNA (and the SSRF guard), as UTF-8 where it is, else latin-1
        ("http://b\xc3\xbccher.test/a", "http://bücher.test/a"),
        ("//\xb9\xb27.0.0.1/\xe9", "//¹²7.0.0.1/%E9"),
    ],
)
def test_location_bytes_are_percent_encoded_as_they_came(header, url):
    assert location_of(header) == url


@pytest.mark.parametrize(
    ("content", "target"),
    [
        ("0; url=/refreshed", "/refreshed"),
        ("5;URL='/a b'", "/a b"),
        ('0, url="http://other.test/x" trailing', "http://other.test/x"),
        ("0; /bare", "/bare"),
        ("30", None),  # reloads itself
        ("url=/x", None),  # no delay: not a refresh
    ],
)
def test_refresh_target_reads_the_declarative_refresh(content, target):
    assert refresh_target(content) == target


def test_a_meta_refresh_target_is_a_link():
    html = b'<head><meta http-equiv="Refresh" content="0; URL=../next"></head><p>moved</p>'
    info = parse_html(html, "http://h.test/a/b", **AGENTS)
    assert [lk.url for lk in info.links] == ["http://h.test/next"]


ROUTES = {
    "/robots.txt": (200, b"", b"User-agent: *\nDisallow: /private\n"),
    "/": (
        200,
        b"",
        b'<a href="/latin">l</a><a href="/utf8">u</a><a href="/refresh">r</a>'
        b'<a href="/refresh-private">p</a>',
    ),
    "/latin": (301, b"Location: /caf\xe9/x\r\n", b""),
    "/utf8": (301, b"Location: /caf\xc3\xa9/y\r\n", b""),
    "/refresh": (200, b"", b'<meta http-equiv="refresh" content="0; url=/refreshed">'),
    "/refresh-private": (200, b"", b'<meta http-equiv="refresh" content="0;url=/private/x">'),
}


def test_crawl_requests_redirect_bytes_and_follows_meta_refresh(tmp_path):
    asked: list[str] = []

    async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode("latin-1")
            asked.append(path)
            status, headers, body = ROUTES.get(path, (200, b"", b"<p>page</p>"))
            kind = b"text/plain" if path == "/robots.txt" else b"text/html"
            writer.write(
                b"HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
                b"Connection: close\r\n%s\r\n%s" % (status, kind, len(body), headers, body)
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def go():
        server = await asyncio.start_server(on_conn, HOST, 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            cfg = {"allow_private_networks": True, "delay": 0, "use_sitemaps": False}
            await crawl([f"http://{HOST}:{port}/"], tmp_path, cfg)
        return f"http://{HOST}:{port}"

    base = asyncio.run(go())
    pages = {r["url"]: r for r in pq.read_table(tmp_path / "pages.parquet").to_pylist()}
    assert pages[base + "/latin"]["redirect_to"] == base + "/caf%E9/x"
    assert pages[base + "/utf8"]["redirect_to"] == base + "/caf%C3%A9/y"
    assert "/caf%E9/x" in asked and "/caf%C3%A9/y" in asked
    assert pages[base + "/refreshed"]["status"] == 200
    assert pages[base + "/refreshed"]["parent"] == base + "/refresh"
    # The refresh target meets robots.txt like any link: denied, never requested.
    assert pages[base + "/private/x"]["robots_crawl"] == "disallowed"
    assert "/private/x" not in asked
