"""Archives in the shapes other producers write, byte by byte, for the import's robustness tests.

Each writer takes a directory and `at(ip)` (the base URL of a loopback host) and returns the
archive's path and what its import must give: the page URLs and the skip reasons (rows in =
pages + skipped). The records are written by hand, not with warcio's writer, where the style is
in the bytes warcio would not write: WARC/1.0 `<angle-bracketed>` target URIs, WARC/1.1
microsecond dates, `HTTP/2` status lines, LF-only line ends, ARC v1 headers, a record split
across gzip members, hex sha256 digests.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import uuid
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.imports.archives import ALLOW, DENY_TRAINING, NO_ROBOTS, chunked, page

At = Callable[[str], str]


@dataclass
class Expect:
    """What one archive's import gives: page URLs and skip reasons (with their counts)."""

    pages: list[str] = field(default_factory=list)
    skips: dict[str, int] = field(default_factory=dict)

    def page(self, url: str) -> str:
        self.pages.append(url)
        return url

    def skip(self, reason: str, n: int = 1) -> None:
        self.skips[reason] = self.skips.get(reason, 0) + n


def b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def http(status: str, headers: list[tuple[str, str]], body: bytes, eol: bytes = b"\r\n") -> bytes:
    head = status.encode() + eol + b"".join(f"{k}: {v}".encode() + eol for k, v in headers)
    return head + eol + body


def record(
    rec_type: str,
    uri: str | None,
    block: bytes,
    content_type: str = "application/http; msgtype=response",
    *,
    version: str = "1.0",
    date: str = "2024-05-01T12:00:00Z",
    extra: list[tuple[str, str]] | None = None,
    brackets: bool = False,
    digests: bool = True,
    eol: bytes = b"\r\n",
    raw_uri: bytes | None = None,
    record_id: str | None = None,
) -> bytes:
    """One WARC record's bytes (header, block, the two line ends after it)."""
    lines: list[bytes] = [f"WARC/{version}".encode(), f"WARC-Type: {rec_type}".encode()]
    lines.append(f"WARC-Record-ID: {record_id or f'<urn:uuid:{uuid.uuid4()}>'}".encode())
    lines.append(f"WARC-Date: {date}".encode())
    if raw_uri is not None:
        lines.append(b"WARC-Target-URI: " + raw_uri)
    elif uri is not None:
        lines.append(f"WARC-Target-URI: {'<' + uri + '>' if brackets else uri}".encode())
    if digests:
        lines.append(f"WARC-Block-Digest: {b32(block)}".encode())
        if rec_type in ("response", "resource") and b"\r\n\r\n" in block:
            if rec_type == "response":
                payload = block.split(b"\r\n\r\n", 1)[1]
                lines.append(f"WARC-Payload-Digest: {b32(payload)}".encode())
    lines += [f"{k}: {v}".encode() for k, v in extra or []]
    lines.append(f"Content-Type: {content_type}".encode())
    lines.append(f"Content-Length: {len(block)}".encode())
    return eol.join(lines) + eol + eol + block + eol + eol


def write(path: Path, records: list[bytes], gz: str = "record") -> Path:
    """`gz`: 'record' (one gzip member each), 'whole' (one gzip stream), or 'none'."""
    if gz == "record":
        path.write_bytes(b"".join(gzip.compress(r) for r in records))
    elif gz == "whole":
        path.write_bytes(gzip.compress(b"".join(records)))
    else:
        path.write_bytes(b"".join(records))
    return path


HTML = [("Content-Type", "text/html; charset=utf-8")]


def warcinfo(software: str, version: str = "1.0") -> bytes:
    body = f"software: {software}\r\nformat: WARC File Format {version}\r\n".encode()
    return record("warcinfo", None, body, "application/warc-fields", version=version)


def wget(d: Path, at: At) -> tuple[Path, Expect]:
    """wget --warc-file: warcinfo, request/response pairs (WARC-Concurrent-To), bodies as they
    came off the wire (chunked + gzip), target URIs in <angle brackets>, a redirect, a
    stylesheet, then the resource records of its arguments and log."""
    a = at(ALLOW)
    e = Expect()
    recs = [warcinfo("Wget/1.21.4 (linux-gnu)")]
    e.skip("warcinfo")

    def pair(url: str, resp: bytes) -> None:
        req = http(
            "GET / HTTP/1.1", [("Host", url.split("/")[2]), ("Accept-Encoding", "gzip")], b""
        )
        recs.append(record("request", url, req, "application/http;msgtype=request", brackets=True))
        recs.append(record("response", url, resp, brackets=True))

    pair(f"{a}/", http("HTTP/1.1 301 Moved Permanently", [("Location", f"{a}/index.html")], b""))
    e.skip("request")
    e.skip("http_status")
    body = chunked(gzip.compress(page("Wget index")), 77)
    hdrs = [*HTML, ("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")]
    pair(e.page(f"{a}/index.html"), http("HTTP/1.1 200 OK", hdrs, body))
    e.skip("request")
    css = [("Content-Type", "text/css")]
    pair(f"{a}/style.css", http("HTTP/1.1 200 OK", css, b"body { color: red }"))
    e.skip("request")
    e.skip("not_html")
    for name in ("wget_arguments.txt", "wget.log"):
        uri = f"metadata://gnu.org/software/wget/warc/{name}"
        recs.append(record("resource", uri, b"--warc-file=x\n", "text/plain", brackets=True))
        e.skip("not_http")
    return write(d / "wget.warc.gz", recs), e


def heritrix(d: Path, at: At) -> tuple[Path, Expect]:
    """Heritrix 3: dns: records, robots.txt, a response and its request, a metadata record of
    outlinks, whois:, a revisit (identical payload, HTTP headers kept, WARC-Truncated) and a
    304 server-not-modified revisit, a brozzler-style screenshot: resource."""
    a, n = at(ALLOW), at(NO_ROBOTS)
    e = Expect()
    recs = [warcinfo("Heritrix/3.4.0-20220727 http://crawler.archive.org")]
    e.skip("warcinfo")
    dns = b"20240501120000\n127.0.0.2\t\t0\tIN\tA\t127.0.0.2\n"
    recs.append(record("response", "dns:127.0.0.2", dns, "text/dns"))
    e.skip("not_http")
    robots = http("HTTP/1.1 200 OK", [("Content-Type", "text/plain")], b"User-agent: *\n")
    recs.append(record("response", f"{a}/robots.txt", robots))
    e.skip("not_html")
    body = page("Heritrix page")
    url = e.page(f"{a}/heritrix")
    recs.append(record("response", url, http("HTTP/1.1 200 OK", HTML, body)))
    req = http("GET /heritrix HTTP/1.0", [("User-Agent", "heritrix")], b"")
    recs.append(record("request", url, req, "application/http; msgtype=request"))
    e.skip("request")
    outlinks = f"outlink: {a}/next L a/@href\r\nvia: {a}/\r\nhopsFromSeed: L\r\n".encode()
    recs.append(record("metadata", url, outlinks, "application/warc-fields"))
    e.skip("metadata")
    recs.append(
        record("response", "whois://whois.arin.net/127.0.0.2", b"NetRange: x", "text/plain")
    )
    e.skip("not_http")
    head = http("HTTP/1.1 200 OK", HTML, b"")
    profile = "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"
    digest = b32(body)
    extra = [
        ("WARC-Profile", profile),
        ("WARC-Truncated", "length"),
        ("WARC-Payload-Digest", digest),
        ("WARC-Refers-To-Target-URI", url),
        ("WARC-Refers-To-Date", "2024-05-01T12:00:00Z"),
    ]
    recs.append(record("revisit", f"{a}/heritrix-again", head, extra=extra, digests=False))
    e.skip("revisit")
    nm = http("HTTP/1.1 304 Not Modified", [("ETag", '"x"')], b"")
    extra = [("WARC-Profile", "http://netpreserve.org/warc/1.0/revisit/server-not-modified")]
    recs.append(record("revisit", f"{n}/old", nm, extra=extra, digests=False))
    e.skip("revisit_missing_original")
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
    recs.append(record("resource", f"screenshot:{a}/heritrix", png, "image/png"))
    e.skip("not_http")
    return write(d / "heritrix.warc.gz", recs), e


def browsertrix(d: Path, at: At) -> tuple[Path, Expect]:
    """Browsertrix / pywb: WARC/1.1, microsecond dates, hex sha256 digests, a page and its
    revisit (WARC-Refers-To-Target-URI/Date), a POST request, urn:pageinfo: and urn:text:
    resource records, bodies in the codings browsers ask for: br and zstd (each whole, and
    cut)."""
    a, t = at(ALLOW), at(DENY_TRAINING)
    e = Expect()
    v = "1.1"
    recs = [warcinfo("Browsertrix-Crawler 1.2.0 (with warcio.js 2.2.1)", v)]
    e.skip("warcinfo")

    def hexdig(data: bytes) -> str:
        return "sha256:" + hashlib.sha256(data).hexdigest()

    def resp(url: str, block: bytes, date: str, extra: list | None = None) -> bytes:
        payload = block.split(b"\r\n\r\n", 1)[1]
        ex = [("WARC-Block-Digest", hexdig(block)), ("WARC-Payload-Digest", hexdig(payload))]
        return record(
            "response", url, block, version=v, date=date, digests=False, extra=ex + (extra or [])
        )

    body = page("Browsertrix page")
    url = e.page(f"{a}/bt")
    recs.append(resp(url, http("HTTP/1.1 200", HTML, body), "2024-05-01T12:00:00.123456Z"))
    url2 = e.page(f"{t}/bt-denied")
    recs.append(resp(url2, http("HTTP/2.0 200", HTML, page("Denied")), "2024-05-01T12:00:01.5Z"))
    revisit = http("HTTP/1.1 200", HTML, b"")
    extra = [
        ("WARC-Profile", "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"),
        ("WARC-Payload-Digest", hexdig(body)),
        ("WARC-Refers-To-Target-URI", url),
        ("WARC-Refers-To-Date", "2024-05-01T12:00:00.123456Z"),
    ]
    recs.append(record("revisit", f"{a}/bt?again", revisit, version=v, digests=False, extra=extra))
    e.skip("revisit")
    post = http("POST /api HTTP/1.1", [("Content-Type", "application/json")], b'{"q": 1}')
    recs.append(record("request", f"{a}/api", post, "application/http; msgtype=request", version=v))
    e.skip("request")
    info = json.dumps({"pages": {"url": url, "title": "x"}, "urls": {}}).encode()
    recs.append(record("resource", f"urn:pageinfo:{url}", info, "application/json", version=v))
    e.skip("not_http")
    recs.append(record("resource", f"urn:text:{url}", b"Browsertrix page", "text/plain", version=v))
    e.skip("not_http")
    import brotli

    squeezed = brotli.compress(page("Brotli page"))
    br = http("HTTP/1.1 200", [*HTML, ("Content-Encoding", "br")], squeezed)
    recs.append(resp(e.page(f"{a}/bt-br"), br, "2024-05-01T12:00:02Z"))
    br_cut = http(
        "HTTP/1.1 200", [*HTML, ("Content-Encoding", "br")], squeezed[: len(squeezed) // 2]
    )
    recs.append(resp(f"{a}/bt-br-cut", br_cut, "2024-05-01T12:00:02.5Z"))
    e.skip("decode_error")
    import zstandard

    packed = zstandard.ZstdCompressor().compress(page("Zstd page"))
    zst = http("HTTP/1.1 200", [*HTML, ("Content-Encoding", "zstd")], packed)
    recs.append(resp(e.page(f"{a}/bt-zstd"), zst, "2024-05-01T12:00:03Z"))
    cut = http("HTTP/1.1 200", [*HTML, ("Content-Encoding", "zstd")], packed[:-9])
    recs.append(resp(f"{a}/bt-zstd-cut", cut, "2024-05-01T12:00:04Z"))
    e.skip("decode_error")
    return write(d / "browsertrix.warc.gz", recs), e


def wacz(d: Path, at: At) -> tuple[Path, Expect]:
    """A WACZ (Browsertrix's default output): a zip holding archive/data.warc.gz stored
    uncompressed, pages/pages.jsonl and datapackage.json."""
    warc, e = browsertrix(d, at)
    path = d / "crawl.wacz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("datapackage.json", json.dumps({"profile": "data-package"}))
        z.writestr(zipfile.ZipInfo("archive/data.warc.gz"), warc.read_bytes(), zipfile.ZIP_STORED)
        z.writestr("pages/pages.jsonl", '{"format": "json-pages-1.0"}\n', zipfile.ZIP_DEFLATED)
    warc.unlink()
    return path, e


def stormcrawler(d: Path, at: At) -> tuple[Path, Expect]:
    """StormCrawler: bodies stored decoded with X-Crawler-Content-Encoding /
    X-Crawler-Transfer-Encoding (as Common Crawl's), and an older one that kept
    'Content-Encoding: gzip' over a body it had already decoded; status lines without a reason."""
    a = at(ALLOW)
    e = Expect()
    recs = [warcinfo("StormCrawler 2.10 https://stormcrawler.net/")]
    e.skip("warcinfo")
    hdrs = [
        ("Content-Type", "text/html"),
        ("X-Crawler-Content-Encoding", "gzip"),
        ("X-Crawler-Transfer-Encoding", "chunked"),
    ]
    url = e.page(f"{a}/storm")
    recs.append(record("response", url, http("HTTP/1.1 200", hdrs, page("Storm"))))
    old = [("Content-Type", "text/html"), ("Content-Encoding", "gzip")]
    block = http("HTTP/1.1 200", old, page("Storm old"))
    recs.append(record("response", f"{a}/storm-old", block))
    e.skip("decode_error")  # extraction could not decode it either: no page to refer to
    return write(d / "stormcrawler.warc.gz", recs), e


def arc_v1(d: Path, at: At, gz: bool) -> tuple[Path, Expect]:
    """An Alexa-style ARC v1 file: filedesc header, records 'URL IP date type length', one
    HTTP/1.0 response, an image, a record with no HTTP header (1990s ARCs have them)."""
    a = at(ALLOW)
    e = Expect()
    desc = b"1 0 Alexa Internet\nURL IP-address Archive-date Content-type Archive-length\n"
    name = "IA-001102.arc.gz" if gz else "IA-001102.arc"
    head = f"filedesc://{name} 0.0.0.0 19961104142103 text/plain {len(desc)}\n".encode()
    recs = [head + desc + b"\n"]
    e.skip("warcinfo")

    def rec(url: str, ctype: str, block: bytes) -> bytes:
        ip = url.split("/")[2].split(":")[0]
        return f"{url} {ip} 19961104142103 {ctype} {len(block)}\n".encode() + block + b"\n"

    body = page("Alexa 1996")
    headers = [("Content-type", "text/html"), ("Content-length", str(len(body)))]
    resp = http("HTTP/1.0 200 Document follows", headers, body, b"\n")
    recs.append(rec(e.page(f"{a}/1996.html"), "text/html", resp))
    gif = http("HTTP/1.0 200 OK", [("Content-type", "image/gif")], b"GIF89a....", b"\n")
    recs.append(rec(f"{a}/logo.gif", "image/gif", gif))
    e.skip("not_html")
    recs.append(rec(f"{a}/bare.html", "text/html", b"<html><body>no http header</body></html>"))
    e.skip("no_http_headers")
    # the last record's archive-length counts 12 bytes more than it holds (as warcio's
    # example-space-in-url.arc), though its HTTP body is whole
    body = page("Miscounted")
    headers = [("Content-type", "text/html"), ("Content-length", str(len(body)))]
    last = rec(e.page(f"{a}/miscounted.html"), "text/html", http("HTTP/1.0 200 OK", headers, body))
    line, rest = last.split(b"\n", 1)
    url, ip, date, ctype, length = line.split(b" ")
    recs.append(b" ".join([url, ip, date, ctype, str(int(length) + 12).encode()]) + b"\n" + rest)
    path = d / name
    if gz:
        path.write_bytes(b"".join(gzip.compress(r) for r in recs))
    else:
        path.write_bytes(b"".join(recs))
    return path, e


def arc_v2(d: Path, at: At) -> tuple[Path, Expect]:
    """An ARC version 2 file (10 fields a record: result code, checksum, location, offset,
    filename as well)."""
    a = at(ALLOW)
    e = Expect()
    desc = (
        b"2 0 Alexa Internet\nURL IP-address Archive-date Content-type Result-code Checksum "
        b"Location Offset Filename Archive-length\n"
    )
    out = f"filedesc://v2.arc 0.0.0.0 20010101000000 text/plain 200 - - 0 v2.arc {len(desc)}\n"
    data = out.encode() + desc + b"\n"
    e.skip("warcinfo")
    block = http("HTTP/1.0 200 OK", [("Content-Type", "text/html")], page("Arc v2"), b"\n")
    url = e.page(f"{a}/v2.html")
    line = f"{url} 127.0.0.2 20010101000000 text/html 200 ABCDEF - 0 v2.arc {len(block)}\n"
    path = d / "v2.arc"
    path.write_bytes(data + line.encode() + block + b"\n")
    return path, e


def old_warc(d: Path, at: At) -> tuple[Path, Expect]:
    """WARC/0.17 (Heritrix 1.x, early Internet Archive files), HTTP headers with Latin-1 bytes,
    a line without a colon and a folded continuation line."""
    a = at(ALLOW)
    e = Expect()
    block = http("HTTP/1.1 200 OK", HTML, page("Old"))
    recs = [record("response", e.page(f"{a}/old017"), block, version="0.17")]
    odd = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Bad: caf\xe9 \xff\r\nNoColonLine\r\n"
        b"  folded continuation\r\nSet-Cookie: a=b\r\n\r\n" + page("Odd headers")
    )
    recs.append(record("response", e.page(f"{a}/odd-headers"), odd))
    return write(d / "old.warc.gz", recs), e


def encodings(d: Path, at: At) -> tuple[Path, Expect]:
    """Bodies as servers send them: chunked (odd chunk sizes, chunk extensions), gzip,
    deflate with and without its zlib wrapper, chunked + deflate, HTTP/2 status lines, no
    Content-Type (sniffed), a charset only in <meta>, a body with no Content-Type that is not
    HTML, a mis-sized chunk."""
    a = at(ALLOW)
    e = Expect()
    recs = []

    def add(path: str, status: str, headers: list, body: bytes, ok: bool | str = True) -> None:
        url = f"{a}/{path}"
        if ok is True:
            e.page(url)
        else:
            e.skip(str(ok))
        recs.append(record("response", url, http(status, headers, body)))

    p = page("Chunked")
    ext = (
        b"".join(
            f"{len(p[i : i + 50]):X};ext=1\r\n".encode() + p[i : i + 50] + b"\r\n"
            for i in range(0, len(p), 50)
        )
        + b"0\r\nX-Trailer: 1\r\n\r\n"
    )
    add("chunked-ext", "HTTP/1.1 200 OK", [*HTML, ("Transfer-Encoding", "chunked")], ext)
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = raw_deflate.compress(page("Raw deflate")) + raw_deflate.flush()
    add("raw-deflate", "HTTP/1.1 200 OK", [*HTML, ("Content-Encoding", "deflate")], body)
    body = zlib.compress(page("Zlib deflate"))
    hdrs = [*HTML, ("Content-Encoding", "deflate"), ("Transfer-Encoding", "chunked")]
    add("zlib-deflate-chunked", "HTTP/1.1 200 OK", hdrs, chunked(body, 33))
    hdrs = [*HTML, ("Content-Encoding", "gzip")]
    add("h2", "HTTP/2 200", hdrs, gzip.compress(page("HTTP two")))
    add("no-type", "HTTP/1.1 200 OK", [], page("No type"))
    body = (
        '<html><head><meta charset="windows-1251"><title>Привет</title></head><body><p>'
        + "Привет, мир. " * 40
        + "</p></body></html>"
    ).encode("cp1251")
    add("cp1251", "HTTP/1.1 200 OK", [("Content-Type", "text/html")], body)
    add("no-type-binary", "HTTP/1.1 200 OK", [], b"%PDF-1.4 ...", "not_html")
    hdrs = [*HTML, ("Transfer-Encoding", "chunked")]  # stored de-chunked, header kept
    add("dechunked", "HTTP/1.1 200 OK", hdrs, page("Dechunked"))
    hdrs = [*HTML, ("Content-Encoding", "gzip")]
    add("cut-gzip", "HTTP/1.1 200 OK", hdrs, gzip.compress(p)[:-30], "decode_error")
    add("lf-only", "HTTP/1.1 200 OK", HTML, page("LF only"))
    recs[-1] = record(
        "response", f"{a}/lf-only", http("HTTP/1.1 200 OK", HTML, page("LF only"), b"\n")
    )
    return write(d / "encodings.warc.gz", recs), e


def odd_uris(d: Path, at: At) -> tuple[Path, Expect]:
    """Target URIs as found: Latin-1 bytes (not UTF-8), an IDN host in Unicode and in
    punycode, a space, and a relative one. A page is stored under its URI's canonical form
    (`crawlers.imports.warc.page_url`: IDNA host, non-ASCII as percent-encoded UTF-8)."""
    e = Expect()
    recs = []
    a = at(NO_ROBOTS)
    recs.append(
        record(
            "response",
            None,
            http("HTTP/1.1 200 OK", HTML, page("Latin")),
            raw_uri=f"{a}/caf".encode() + b"\xe9",
        )
    )
    e.page(f"{a}/caf%C3%A9")
    for host, path in (("bücher.example", "b%C3%BCc"), ("xn--bcher-kva.example", "xn-")):
        url = f"http://{host}/{host[:3]}"
        e.page(f"http://xn--bcher-kva.example/{path}")
        recs.append(record("response", url, http("HTTP/1.1 200 OK", HTML, page(host))))
    url = f"{a}/with space"
    recs.append(record("response", url, http("HTTP/1.1 200 OK", HTML, page("Space"))))
    e.page(f"{a}/with%20space")
    recs.append(record("response", "/relative", http("HTTP/1.1 200 OK", HTML, page("Rel"))))
    e.skip("not_http")
    return write(d / "uris.warc.gz", recs), e


def segmented(d: Path, at: At) -> tuple[Path, Expect]:
    """A record written in two segments (WARC-Segment-Number) and a record whose body is cut
    into a second gzip member (as warcio's example-wrong-chunks.warc.gz), then a good page."""
    a = at(ALLOW)
    e = Expect()
    block = http("HTTP/1.1 200 OK", HTML, page("Segmented"))
    first, rest = block[:300], block[300:]
    origin = f"<urn:uuid:{uuid.uuid4()}>"
    seg1 = record(
        "response", f"{a}/seg", first, extra=[("WARC-Segment-Number", "1")], record_id=origin
    )
    seg2 = record(
        "continuation",
        f"{a}/seg",
        rest,
        "application/http; msgtype=response",
        extra=[
            ("WARC-Segment-Number", "2"),
            ("WARC-Segment-Origin-ID", origin),
            ("WARC-Segment-Total-Length", str(len(block))),
        ],
    )
    e.skip("segmented")
    e.skip("continuation")
    whole = record(
        "response", e.page(f"{a}/split-member"), http("HTTP/1.1 200 OK", HTML, page("Split"))
    )
    cut = whole.index(b"<!doctype")
    after = record(
        "response", e.page(f"{a}/after-split"), http("HTTP/1.1 200 OK", HTML, page("After"))
    )
    data = b"".join(gzip.compress(r) for r in (seg1, seg2))
    data += gzip.compress(whole[:cut]) + gzip.compress(whole[cut:]) + gzip.compress(after)
    path = d / "segmented.warc.gz"
    path.write_bytes(data)
    return path, e


def whole_gzip(d: Path, at: At) -> tuple[Path, Expect]:
    """`gzip crawl.warc`: one gzip stream over every record, uncompressed LF-only warcinfo."""
    a = at(ALLOW)
    e = Expect()
    recs = [warcinfo("gzip(1)")]
    e.skip("warcinfo")
    for i in range(3):
        url = e.page(f"{a}/whole-{i}")
        recs.append(record("response", url, http("HTTP/1.1 200 OK", HTML, page(f"Whole {i}"))))
    return write(d / "whole.warc.gz", recs, gz="whole"), e


def cat_gzip(d: Path, at: At) -> tuple[Path, Expect]:
    """`cat a.warc.gz b.warc.gz` of two whole-file gzips: gzip members of several records each."""
    a = at(ALLOW)
    e = Expect()
    recs = [
        record("response", e.page(f"{a}/cat-{i}"), http("HTTP/1.1 200 OK", HTML, page(f"Cat {i}")))
        for i in range(6)
    ]
    path = d / "cat.warc.gz"
    path.write_bytes(gzip.compress(b"".join(recs[:3])) + gzip.compress(b"".join(recs[3:])))
    return path, e


def plain(d: Path, at: At) -> tuple[Path, Expect]:
    """An uncompressed .warc, WARC/1.1, blank lines between records beyond the two required."""
    a = at(ALLOW)
    e = Expect()
    recs = [warcinfo("plain", "1.1")]
    e.skip("warcinfo")
    for i in range(2):
        url = e.page(f"{a}/plain-{i}")
        block = http("HTTP/1.1 200 OK", HTML, page(f"Plain {i}"))
        recs.append(record("response", url, block, version="1.1") + b"\r\n")
    return write(d / "plain.warc", recs, gz="none"), e


STYLES: dict[str, Callable[[Path, At], tuple[Path, Expect]]] = {
    "wget": wget,
    "heritrix": heritrix,
    "browsertrix": browsertrix,
    "wacz": wacz,
    "stormcrawler": stormcrawler,
    "arc_v1": lambda d, at: arc_v1(d, at, gz=False),
    "arc_v1_gz": lambda d, at: arc_v1(d, at, gz=True),
    "arc_v2": arc_v2,
    "old_warc": old_warc,
    "encodings": encodings,
    "odd_uris": odd_uris,
    "segmented": segmented,
    "whole_gzip": whole_gzip,
    "cat_gzip": cat_gzip,
    "plain": plain,
}
