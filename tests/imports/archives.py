"""Small archives written with warcio for the import tests, and a loopback robots.txt server.

Hosts are IP literals on 127.0.0.0/8 (no DNS): 127.0.0.2 allows every agent, 127.0.0.3
disallows the training token, 127.0.0.4 has no robots.txt (404: allowed) and 127.0.0.5 has no
server at all (unreachable).
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path

from aiohttp import web
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.crawl.loopback import LoopbackServer

ALLOW, DENY_TRAINING, NO_ROBOTS, DOWN = "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"
ROBOTS = {
    ALLOW: "User-agent: *\nAllow: /\n",
    DENY_TRAINING: "User-agent: RefineryBot-Extended\nDisallow: /\n\nUser-agent: *\nAllow: /\n",
}
TEST_CONFIG = {
    "allow_private_networks": True,
    "delay": 0.0,
    "robots_retries": 0,
    "connect_timeout": 2.0,
}


class RobotsServer(LoopbackServer):
    """robots.txt per address; counts the requests each address got."""

    label = "robots server"

    def __init__(self):
        super().__init__([ALLOW, DENY_TRAINING, NO_ROBOTS])
        self.hits: dict[str, int] = {}

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        ip = request.transport.get_extra_info("sockname")[0]
        self.hits[ip] = self.hits.get(ip, 0) + 1
        if request.path == "/robots.txt" and ip in ROBOTS:
            return web.Response(text=ROBOTS[ip])
        return web.Response(status=404, text="not found")


def page(title: str, extra_head: str = "") -> bytes:
    words = " ".join(f"{title} sentence number {i} about archives and imports." for i in range(40))
    return (
        f"<!doctype html><html><head><title>{title}</title>{extra_head}</head>"
        f"<body><article><h1>{title}</h1><p>{words}</p><p>{words}</p></article></body></html>"
    ).encode()


def response(
    w: WARCWriter,
    url: str | None,
    body: bytes,
    headers: list[tuple[str, str]] | None = None,
    status: str = "200 OK",
) -> str:
    """Write a response record; returns its WARC-Payload-Digest."""
    http = StatusAndHeaders(
        status, headers or [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
    )
    rec = w.create_warc_record(
        url or "http://x/", "response", payload=io.BytesIO(body), http_headers=http
    )
    if url is None:
        rec.rec_headers.remove_header("WARC-Target-URI")
    w.write_record(rec)
    return rec.rec_headers.get_header("WARC-Payload-Digest")


def request(w: WARCWriter, url: str) -> None:
    http = StatusAndHeaders(f"GET {url} HTTP/1.1", [("Host", "x")], is_http_request=True)
    w.write_record(w.create_warc_record(url, "request", http_headers=http))


def chunked(data: bytes, size: int = 100) -> bytes:
    out = b""
    for i in range(0, len(data), size):
        part = data[i : i + size]
        out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    return out + b"0\r\n\r\n"


def write_warc(path: Path, fill, gz: bool = True) -> Path:
    with open(path, "wb") as fh:
        fill(WARCWriter(fh, gzip=gz))
    return path


def base(ip: str, port: int) -> str:
    return f"http://{ip}:{port}"


def whole_file_gzip(src: Path, dst: Path) -> Path:
    """The same records as one gzip stream (not one member per record)."""
    raw = src.read_bytes()
    plain = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    dst.write_bytes(gzip.compress(plain))
    return dst


class RobotsBodies(LoopbackServer):
    """robots.txt bodies by address (`{ip: body}`; others 404), every request logged as (ip,
    path). Stops with its `with` block, and by itself after `ttl` seconds."""

    label = "robots bodies server"

    def __init__(self, bodies: dict[str, str], ttl: float = 60.0):
        super().__init__(list(bodies))
        self.bodies, self.ttl = dict(bodies), ttl
        self.log: list[tuple[str, str]] = []

    def __enter__(self):
        super().__enter__()
        self._loop.call_soon_threadsafe(self._loop.call_later, self.ttl, self._loop.stop)
        return self

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        ip = request.transport.get_extra_info("sockname")[0]
        self.log.append((ip, request.path))
        if request.path == "/robots.txt" and ip in self.bodies:
            return web.Response(text=self.bodies[ip])
        return web.Response(status=404, text="not found")
