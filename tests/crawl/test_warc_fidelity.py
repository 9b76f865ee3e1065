"""WARC fidelity (request line as sent, robots.txt and sitemaps archived, WARC-Truncated) and
robots.txt bodies over the size cap (never read as allow-all), against loopback hosts."""

from __future__ import annotations

import asyncio
import gzip
import io
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from crawlers.crawl import crawl
from crawlers.crawl.fetcher import ROBOTS_MAX_BYTES, Fetcher, PrefixDecoder
from crawlers.crawl.robots_policy import DISALLOWED, RobotsPolicy
from crawlers.extract.crawl_io import iter_crawl_records
from crawlers.extract.page import extract_page

from .loopback import LoopbackServer

FAST = dict(
    delay=0,
    allow_private_networks=True,
    total_timeout=5,
    read_timeout=3,
    connect_timeout=2,
    max_body_bytes=2**20,
    max_decompressed_bytes=4 * 2**20,
    robots_retries=0,
)
FILLER = b"# " + b"x" * 76 + b"\n"  # one 80-byte comment line
BIG = 3 * 2**20  # robots.txt size: over max_body_bytes, max_decompressed_bytes and 500 KiB
ROBOTS_MODES = ("length", "chunked", "gzip", "gzip-chunked", "deflate-chunked")


def big_robots() -> bytes:
    head = b"User-agent: *\nDisallow: /\n"
    return head + FILLER * ((BIG - len(head)) // len(FILLER))


class Server(LoopbackServer):
    """Loopback hosts for these tests; each request's line is logged as the server read it."""

    def __init__(self, ips: list[str]):
        super().__init__(ips)
        self.requests: list[tuple[str, str, str]] = []  # (ip, request line, user agent)

    def url(self, ip: str, path: str = "/") -> str:
        return f"http://{ip}:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        ip = request.transport.get_extra_info("sockname")[0]
        version = f"HTTP/{request.version.major}.{request.version.minor}"
        line = f"{request.method} {request.raw_path} {version}"
        self.requests.append((ip, line, request.headers.get("User-Agent", "")))
        if request.path == "/robots.txt" and ip != SITE:
            return await self._big_robots(request, ROBOTS_MODES[self.ips.index(ip) - 1])
        return self._site(request)

    def _site(self, request: web.Request) -> web.StreamResponse:
        html = "text/html"
        path = request.path
        if path == "/robots.txt":
            sitemap = self.url(SITE, "/sitemap.xml")
            text = f"User-agent: *\nDisallow: /private/\n\nSitemap: {sitemap}\n"
            return web.Response(text=text, content_type="text/plain")
        if path == "/sitemap.xml":
            xml = (
                '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<url><loc>{self.url(SITE, '/from-sitemap')}</loc></url></urlset>"
            )
            return web.Response(text=xml, content_type="application/xml")
        if path == "/":
            links = [
                "/page?q=caf%C3%A9%20au%20lait&x=1",
                "/download/report-7",
                "/moved",
                "/private/secret",
                "/%7Euser/notes",
            ]
            items = "".join(f'<a href="{h}">{h}</a> ' for h in links)
            return web.Response(
                text=f"<html><body><p>Home page of the archive test.</p>{items}</body></html>",
                content_type=html,
            )
        if path == "/download/report-7":  # a PDF whose link does not say so: fetched, refused
            return web.Response(body=b"%PDF-1.4\n" + b"0" * 5000, content_type="application/pdf")
        if path == "/moved":
            return web.Response(
                status=301,
                headers={"Location": "/page2"},
                text="<html><body>Moved to /page2</body></html>",
                content_type=html,
            )
        return web.Response(
            text=f"<html><body><p>Page {path} with some words on it.</p></body></html>",
            content_type=html,
        )

    async def _big_robots(self, request: web.Request, mode: str) -> web.StreamResponse:
        body = big_robots()
        headers = {"Content-Type": "text/plain"}
        if mode.startswith("gzip"):
            body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
        elif mode.startswith("deflate"):
            body, headers["Content-Encoding"] = zlib.compress(body), "deflate"
        if not mode.endswith("chunked"):
            return web.Response(body=body, headers=headers)  # sent with Content-Length
        resp = web.StreamResponse(headers=headers)
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            for i in range(0, len(body), 32768):
                await resp.write(body[i : i + 32768])
        except ConnectionError:
            pass  # the crawler stopped reading after the first 500 KiB, as it may
        return resp


SITE = "127.0.0.81"
ROBOTS_HOSTS = [f"127.0.0.{82 + i}" for i in range(len(ROBOTS_MODES))]


@pytest.fixture(scope="module")
def server():
    with Server([SITE, *ROBOTS_HOSTS]) as srv:
        yield srv


@pytest.fixture(scope="module")
def archived(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("warcfidelity")
    summary = asyncio.run(crawl([server.url(SITE)], out, FAST))
    records = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                payload = rec.content_stream().read() if rec.rec_type == "response" else b""
                records.append((rec, payload))
    pages = pq.read_table(out / "pages.parquet").to_pylist()
    return {"out": out, "summary": summary, "records": records, "pages": pages}


def _first_line(rec) -> str:
    return f"{rec.http_headers.protocol} {rec.http_headers.statusline}"


def test_request_line_is_the_one_sent(server, archived):
    sent = {line for ip, line, _ in server.requests if ip == SITE}
    requests = [rec for rec, _ in archived["records"] if rec.rec_type == "request"]
    assert len(requests) >= 7
    for rec in requests:
        line = _first_line(rec)
        assert line in sent, f"WARC says {line!r}; the server read {sorted(sent)}"
        assert line.startswith("GET /") and line.endswith(" HTTP/1.1")
        names = {k.lower() for k, _ in rec.http_headers.headers}
        assert {"host", "user-agent"} <= names
    assert "GET /page?q=caf%C3%A9%20au%20lait&x=1 HTTP/1.1" in {_first_line(r) for r in requests}


def test_robots_and_sitemap_exchanges_are_archived(server, archived):
    by_uri: dict[str, dict[str, object]] = {}
    for rec, _ in archived["records"]:
        uri = rec.rec_headers.get_header("WARC-Target-URI")
        by_uri.setdefault(uri, {})[rec.rec_type] = rec
    for path in ("/robots.txt", "/sitemap.xml"):
        kinds = by_uri.get(server.url(SITE, path), {})
        assert set(kinds) == {"request", "response"}, (path, kinds)
        resp, req = kinds["response"], kinds["request"]
        assert resp.http_headers.get_statuscode() == "200"
        assert req.rec_headers.get_header("WARC-Concurrent-To") == resp.rec_headers.get_header(
            "WARC-Record-ID"
        )
    robots = next(
        payload
        for rec, payload in archived["records"]
        if rec.rec_type == "response"
        and rec.rec_headers.get_header("WARC-Target-URI") == server.url(SITE, "/robots.txt")
    )
    assert b"Disallow: /private/" in robots
    # The page found through the sitemap was crawled, and the disallowed one was not.
    urls = {p["url"]: p for p in archived["pages"]}
    assert urls[server.url(SITE, "/from-sitemap")]["status"] == 200
    assert not any(line.startswith("GET /private/") for _, line, _ in server.requests)


def test_robots_and_sitemap_records_never_become_documents(server, archived):
    pages = archived["pages"]
    page_urls = {p["url"] for p in pages}
    assert server.url(SITE, "/robots.txt") not in page_urls
    assert server.url(SITE, "/sitemap.xml") not in page_urls
    records = list(iter_crawl_records(archived["out"]))
    assert sorted(r["url"] for r in records) == sorted(p["url"] for p in pages)
    home = next(r for r in records if r["url"] == server.url(SITE, "/"))
    assert b"Home page of the archive test." in home["body"]
    results = {r["url"]: extract_page(r) for r in records}
    assert results[home["url"]].reject is None
    # The PDF's headers-only record is not mistaken for a body cut at the size cap.
    pdf = results[server.url(SITE, "/download/report-7")].reject
    assert pdf is not None and pdf["reason"] != "truncated"
    # Every page's offsets still point at its own response record.
    for page in pages:
        if page["warc_file"]:
            with open(Path(archived["out"]) / page["warc_file"], "rb") as fh:
                fh.seek(page["warc_offset"])
                blob = fh.read(page["warc_length"])
            rec = next(iter(ArchiveIterator(io.BytesIO(blob))))
            assert rec.rec_type == "response"
            assert rec.rec_headers.get_header("WARC-Target-URI") == page["url"]


def test_a_response_stored_without_its_body_says_so(server, archived):
    responses = {
        rec.rec_headers.get_header("WARC-Target-URI"): (rec, payload)
        for rec, payload in archived["records"]
        if rec.rec_type == "response"
    }
    pdf, payload = responses[server.url(SITE, "/download/report-7")]
    assert pdf.rec_headers.get_header("WARC-Truncated") == "unspecified"
    assert payload == b"" and pdf.http_headers.get_header("Content-Length") == "5009"
    page = next(p for p in archived["pages"] if p["url"] == server.url(SITE, "/download/report-7"))
    assert page["error"].startswith("unwanted-content-type")
    # A redirect keeps its (small) body, so it is whole and carries no WARC-Truncated.
    moved, body = responses[server.url(SITE, "/moved")]
    assert moved.rec_headers.get_header("WARC-Truncated") is None
    assert b"Moved to /page2" in body
    for uri, (rec, _) in responses.items():
        if not uri.endswith("/download/report-7"):
            assert rec.rec_headers.get_header("WARC-Truncated") is None, uri


# --- robots.txt over the size cap -----------------------------------------------------------
@pytest.mark.parametrize("mode", ROBOTS_MODES)
def test_oversized_robots_txt_is_read_not_taken_as_allow_all(server, mode):
    ip = ROBOTS_HOSTS[ROBOTS_MODES.index(mode)]

    async def decide():
        async with Fetcher(
            user_agent="RefineryBot/0.1",
            allow_private_networks=True,
            max_body_bytes=FAST["max_body_bytes"],
            max_decompressed_bytes=FAST["max_decompressed_bytes"],
        ) as fetcher:
            got = []
            policy = RobotsPolicy(
                fetcher, agent="RefineryBot", training_agent="RefineryBot-Extended", retries=0
            )
            policy.on_fetch = got.append
            crawl_decision, training, _ = await policy.decide(server.url(ip, "/any/page"))
            return crawl_decision, training, got[0]

    crawl_decision, training, record = asyncio.run(decide())
    assert (crawl_decision, training) == (DISALLOWED, DISALLOWED)
    assert record.status == 200 and record.error is None
    assert record.body.startswith(b"User-agent: *\nDisallow: /\n")
    assert ROBOTS_MAX_BYTES - 80 <= len(record.body) <= ROBOTS_MAX_BYTES
    assert record.body.endswith(b"\n")  # the line cut at the limit was dropped
    # The WARC keeps the raw bytes read: a plain body is cut at 500 KiB (WARC-Truncated), while
    # the few KiB of this compressible file's gzip/deflate stream were read whole.
    plain = mode in ("length", "chunked")
    assert record.result.hops[-1].truncated == ("length" if plain else None)


def test_crawl_of_host_with_oversized_robots_fetches_no_page(server, tmp_path):
    ip = ROBOTS_HOSTS[0]
    summary = asyncio.run(crawl([server.url(ip, "/")], tmp_path / "c", FAST))
    assert summary["denied"] == 1 and summary["fetched"] == 0
    assert not [line for host, line, _ in server.requests if host == ip and "robots" not in line]


def test_prefix_decoder_cuts_back_to_a_whole_line():
    body = b"User-agent: *\nDisallow: /a\n" + b"Allow: /private-area\n" * 10
    for encoding, raw in (
        ("", body),
        ("gzip", gzip.compress(body)),
        ("deflate", zlib.compress(body)),
        ("deflate", zlib.compress(body)[2:-4]),  # raw deflate, no zlib wrapper
    ):
        dec = PrefixDecoder(encoding, 40)
        for i in range(0, len(raw), 7):
            dec.feed(raw[i : i + 7])
        assert dec.result(cut_to_line=True) == b"User-agent: *\nDisallow: /a\n", encoding
        whole = PrefixDecoder(encoding, 10_000)
        whole.feed(raw)
        assert whole.result(cut_to_line=True) == body and not whole.dropped
    with pytest.raises(ValueError, match="unsupported content-encoding 'br'"):
        PrefixDecoder("br", 10)
    bad = PrefixDecoder("gzip", 100)
    with pytest.raises(ValueError, match="corrupt gzip body"):
        bad.feed(b"\x1f\x8bnot really gzip at all")
