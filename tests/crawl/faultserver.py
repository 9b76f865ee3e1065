"""A misbehaving web on loopback for crawler tests: each 127.0.0.N host has one robots.txt
behaviour, and paths trigger faults (5xx, 429 + Retry-After, resets, slow drip, huge bodies,
gzip bombs, redirect loops). Every request is logged server-side with start/end times and the
connection it came on, which is what politeness is checked against.

Runs in a daemon thread with its own event loop; `stop()` (or the context manager) ends it.
"""

from __future__ import annotations

import asyncio
import email.utils
import gzip
import random
import time
import zlib
from dataclasses import dataclass, field

from aiohttp import web

from .loopback import LoopbackServer

ENDED = web.RequestKey("ended", float)  # set when a handler cut the connection early

ROBOTS = {
    "ok": (
        b"User-agent: *\nDisallow: /private/\nCrawl-delay: {delay}\n\n"
        b"User-agent: RefineryBot-Extended\nDisallow: /no-training/\nDisallow: /private/\n\n"
        b"Sitemap: {base}/sitemap.xml\n"
    ),
    "malformed": b"\xef\xbb\xbfUser-agent *\nDisalow: /private/\n<html>not robots</html>\nAllow /\n\x00\x01garbage:::\n",
}


@dataclass
class Hit:
    """One request as the server saw it."""

    host: str
    path: str
    user_agent: str
    start: float
    end: float = 0.0
    conn: int = 0
    port: int = 0


@dataclass
class Site:
    """One host's behaviour: robots mode ('ok', 'malformed', '503', 'timeout', '404', 'redirect',
    '503-then-ok': the first `robots_failures` robots.txt requests get 503, later ones 'ok';
    '503-for': 503 until `robots_outage_s` after the first robots.txt request, then 'ok').
    While `down` is set every other path answers 500 (a dead server, for the circuit breaker)."""

    ip: str
    robots: str = "ok"
    crawl_delay: float = 0.0
    counters: dict[str, int] = field(default_factory=dict)
    robots_failures: int = 1
    robots_outage_s: float = 0.0
    robots_first: float | None = None  # monotonic time of the first robots.txt request
    robots_retry_after: str | None = None  # Retry-After sent with a robots.txt 503
    down: bool = False
    down_for: int = 0  # the first down_for requests (robots.txt aside) answer 500


def _links(paths: list[str]) -> bytes:
    items = "".join(f'<li><a href="{p}">link to {p}</a></li>' for p in paths)
    return f"<html><head><title>index</title></head><body><ul>{items}</ul></body></html>".encode()


_VOCAB = (
    "river mountain engine garden violin harbor lantern meadow orbit pepper quartz saddle tundra "
    "walnut yeast zephyr anchor basket candle dolphin ember falcon glacier hammock igloo jungle "
    "kettle lemon marble nectar oyster pillow quiver ribbon sponge tulip umbrella velvet willow"
).split()


def _letters(k: int) -> str:
    """k in base 26 as letters (tokenizers that drop digits still see distinct words)."""
    out = ""
    while True:
        k, d = divmod(k, 26)
        out += chr(97 + d)
        if not k:
            return out


def _doc(n: int, kids: list[str]) -> bytes:
    """A page of its own: 60 words drawn for n, each tagged with n (no two pages look alike)."""
    rng = random.Random(n)
    words = " ".join(rng.choice(_VOCAB) + _letters(n * 64 + i) for i in range(60))
    items = "".join(f'<li><a href="{k}">next {k}</a></li>' for k in kids)
    return f"<html><head><title>doc {n}</title></head><body><p>{words}</p><ul>{items}</ul></body></html>".encode()


PAGE = b"<html><head><title>%s</title></head><body><p>Plain English text about science research and experiments on %s.</p></body></html>"
INDEX_LINKS = [
    "/a",
    "/b",
    "/private/secret",
    "/no-training/page",
    "/err500",
    "/429",
    "/503date",
    "/reset",
    "/drip",
    "/huge",
    "/bomb",
    "/loop1",
    "/image.png",
    "/image",
    "/noai",
    "/meta-nofollow",
    "/xrobots",
]


class FaultServer(LoopbackServer):
    """Serve misbehaving hosts on 127.0.0.N:port; `url(ip, path)` builds URLs."""

    label = "fault server"

    def __init__(
        self,
        sites: list[Site],
        *,
        drip_s: float = 0.3,
        huge_bytes: int = 3 * 2**20,
        bomb_bytes: int = 64 * 2**20,
        tree_size: int = 0,
        ports: int = 1,
        slow_s: float = 0.3,
        gone_links: int = 25,
    ):
        self.sites = {s.ip: s for s in sites}
        super().__init__(list(self.sites), ports)  # every IP also listens on the extra ports
        self.slow_s, self.gone_links = slow_s, gone_links
        self.tree_size = tree_size
        self.drip_s, self.huge_bytes = drip_s, huge_bytes
        self.hits: list[Hit] = []
        self._bomb = gzip.compress(b"\0" * bomb_bytes, compresslevel=9)
        self._conn_ids: dict[int, int] = {}

    def url(self, ip: str, path: str = "/", port_index: int = 0) -> str:
        """Absolute URL on one of the hosts (`port_index` picks one of its ports)."""
        return f"http://{ip}:{self.ports[port_index] if port_index else self.port}{path}"

    def hits_for(self, ip: str, path: str | None = None) -> list[Hit]:
        """Requests to a host (and path)."""
        return [h for h in self.hits if h.host == ip and (path is None or h.path == path)]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        ip, port = request.transport.get_extra_info("sockname")[:2]
        site = self.sites[ip]
        conn = self._conn_ids.setdefault(id(request.transport), len(self._conn_ids) + 1)
        hit = Hit(
            ip,
            request.path_qs,
            request.headers.get("User-Agent", ""),
            time.monotonic(),
            conn=conn,
            port=port,
        )
        self.hits.append(hit)
        try:
            return await self._respond(request, site)
        finally:
            hit.end = request.get(ENDED) or time.monotonic()

    def _count(self, site: Site, key: str) -> int:
        site.counters[key] = site.counters.get(key, 0) + 1
        return site.counters[key]

    async def _respond(self, request: web.Request, site: Site) -> web.StreamResponse:
        path = request.path
        base = f"http://{site.ip}:{self.port}"
        html = "text/html; charset=utf-8"
        if path == "/robots.txt":
            mode = site.robots
            if mode == "503-for":
                now = time.monotonic()
                site.robots_first = site.robots_first or now
                mode = "503" if now - site.robots_first < site.robots_outage_s else "ok"
            if mode == "503-then-ok":
                failing = self._count(site, "robots") <= site.robots_failures
                mode = "503" if failing else "ok"
            if mode == "503":
                after = site.robots_retry_after
                headers = {"Retry-After": after} if after is not None else None
                return web.Response(status=503, text="busy", headers=headers)
            if mode == "404":
                return web.Response(status=404, text="none")
            if mode == "timeout":
                await asyncio.sleep(5)
                return web.Response(text="User-agent: *\nAllow: /\n")
            if mode == "redirect":
                raise web.HTTPFound("/robots-real.txt")
            body = (
                ROBOTS[mode]
                .replace(b"{delay}", str(site.crawl_delay).encode())
                .replace(b"{base}", base.encode())
            )
            return web.Response(body=body, content_type="text/plain")
        if path == "/robots-real.txt":
            return web.Response(
                text="User-agent: *\nDisallow: /private/\n", content_type="text/plain"
            )
        if path == "/sitemap.xml":
            body = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{base}/from-sitemap</loc></url></urlset>'
            return web.Response(text=body, content_type="application/xml")
        if site.down or (site.down_for and self._count(site, "down") <= site.down_for):
            return web.Response(status=500, text="down")
        if path == "/":
            return web.Response(body=_links(INDEX_LINKS), content_type="text/html")
        if path.startswith("/seedpage/"):
            # A real-looking article whose links all look better than it and are all 404s.
            n = path.rsplit("/", 1)[1]
            gone = [
                f"/gone/{n}-{i}/science-research-physics-experiment-study"
                for i in range(self.gone_links)
            ]
            return web.Response(body=_links(gone), content_type="text/html")
        if path.startswith("/gone/"):
            return web.Response(status=404, text="not found")
        if path.startswith(("/slow/", "/doc/")):
            # Distinct pages (no near-duplicate trap fires): /doc/n links to 2n+1 and 2n+2,
            # /slow/n (answered after slow_s) to n+1 and n+2, below tree_size.
            n = int(path.rsplit("/", 1)[1])
            if path.startswith("/slow/"):
                await asyncio.sleep(self.slow_s)
                kids = [f"/slow/{k}" for k in (n + 1, n + 2) if k < self.tree_size]
            else:
                kids = [f"/doc/{k}" for k in (2 * n + 1, 2 * n + 2) if k < self.tree_size]
            return web.Response(body=_doc(n, kids), content_type="text/html")
        if path == "/err500":
            return web.Response(status=500, text="boom")
        if path == "/429":
            if self._count(site, path) == 1:
                return web.Response(status=429, headers={"Retry-After": "1"}, text="slow down")
            return web.Response(body=PAGE % (b"after 429", b"patience"), content_type="text/html")
        if path == "/503date":
            if self._count(site, path) == 1:
                when = email.utils.formatdate(
                    time.time() + 2, usegmt=True
                )  # >= 1 s after truncation
                return web.Response(status=503, headers={"Retry-After": when}, text="maintenance")
            return web.Response(body=PAGE % (b"after 503", b"dates"), content_type="text/html")
        if path == "/reset":
            request.transport.abort()  # connection reset mid-request
            request[ENDED] = time.monotonic()  # what the client saw as the end of this request
            await asyncio.sleep(0.05)
            return web.Response(text="never sent")
        if path == "/drip":
            resp = web.StreamResponse(headers={"Content-Type": html})
            await resp.prepare(request)
            try:
                for _ in range(200):
                    await resp.write(b"<")
                    await asyncio.sleep(self.drip_s)
            except ConnectionError:
                pass  # the crawler gave up on the drip, as it should
            return resp
        if path == "/huge":
            resp = web.StreamResponse(headers={"Content-Type": html})
            await resp.prepare(request)
            chunk = b"x" * 65536
            try:
                for _ in range(self.huge_bytes // len(chunk)):
                    await resp.write(chunk)
            except ConnectionError:
                pass  # the crawler stopped reading at its cap
            return resp
        if path == "/bomb":
            return web.Response(
                body=self._bomb, headers={"Content-Type": html, "Content-Encoding": "gzip"}
            )
        if path in ("/loop1", "/loop2"):
            raise web.HTTPFound("/loop2" if path == "/loop1" else "/loop1")
        if path in ("/image.png", "/image"):  # a file by its name, and an image under no name
            return web.Response(body=b"\x89PNG\r\n\x1a\n" + b"\0" * 100, content_type="image/png")
        if path == "/noai":
            return web.Response(
                body=b'<html><head><meta name="robots" content="noai"></head><body>no AI please</body></html>',
                content_type="text/html",
            )
        if path == "/meta-nofollow":
            body = b'<html><head><meta name="robots" content="noindex, nofollow"></head><body><a href="/hidden">hidden</a></body></html>'
            return web.Response(body=body, content_type="text/html")
        if path == "/xrobots":
            body = b'<html><body><a href="/visible">v</a><a rel="nofollow" href="/nf">nf</a></body></html>'
            return web.Response(
                body=body,
                content_type="text/html",
                headers={"X-Robots-Tag": "RefineryBot-Extended: noai"},
            )
        if path.startswith("/tree/"):
            # A binary tree of pages: /tree/n links to 2n+1 and 2n+2 below tree_size.
            n = int(path.rsplit("/", 1)[1])
            kids = [f"/tree/{k}" for k in (2 * n + 1, 2 * n + 2) if k < self.tree_size]
            return web.Response(body=_links(kids), content_type="text/html")
        if path == "/deflate":
            return web.Response(
                body=zlib.compress(PAGE % (b"d", b"d")),
                headers={"Content-Type": html, "Content-Encoding": "deflate"},
            )
        return web.Response(body=PAGE % (path.encode(), path.encode()), content_type="text/html")
