"""A robots.txt outage comes in more shapes than a 503: 500/502/504, 429 without Retry-After, a
request that hangs past the read timeout, a connection reset, a redirect to a robots.txt that
answers 5xx. Each is "not now" (RFC 9309: complete disallow while it lasts): the host is asked
again with backoff, nothing but robots.txt is requested from it before a 2xx or 4xx arrives,
other hosts proceed meanwhile, and once robots.txt answers every page is crawled. Timings are
short here through configuration; the defaults wait an hour (test_robots_outage.py)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import pyarrow.parquet as pq
import pytest
from aiohttp import web

from crawlers.crawl import crawl

from .conftest import FAST
from .loopback import LoopbackServer

pytestmark = pytest.mark.timeout(120)

OUTAGE_S = 4.0
# Short timings through configuration: re-checks 0.1 s doubling to 0.5 s, given up after a
# minute; a circuit breaker that trips at 3 errors and abandons the server after 2 trips (the
# defaults, 5 errors, 3 trips and a 30 s cool-down doubling, abandon it after a few minutes of
# resets or timeouts: long before robots_give_up_s's hour, if re-checks counted).
CFG = {
    **{k: v for k, v in FAST.items() if k != "robots_retries"},  # no count limit: time decides
    "use_sitemaps": False,
    "robots_retry_base_s": 0.1,
    "robots_retry_max_s": 0.5,
    "robots_give_up_s": 60.0,
    "breaker_threshold": 3,
    "breaker_cooldown": 0.5,
    "breaker_max_trips": 2,
}
KINDS = ("500", "502", "504", "429", "timeout", "reset", "redirect-5xx", "404-after-5xx")


@dataclass
class Hit:
    ip: str
    path: str
    start: float
    outage: bool  # answered while the host's robots.txt was down


@dataclass
class Host:
    ip: str
    kind: str | None  # None: a healthy host
    first: float | None = None
    pages: int = 8
    hits: list[Hit] = field(default_factory=list)


class OutageServer(LoopbackServer):
    """Each host's robots.txt fails its own way for OUTAGE_S seconds after the first request for
    it, then answers (200, or 404 for '404-after-5xx'); /doc/N pages link their neighbours."""

    label = "robots outage server"

    def __init__(self, hosts: list[Host]):
        self.hosts = {h.ip: h for h in hosts}
        super().__init__([h.ip for h in hosts])

    def url(self, ip: str, path: str) -> str:
        return f"http://{ip}:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        host = self.hosts[request.url.host]
        now = time.monotonic()
        path = request.path
        if path in ("/robots.txt", "/robots-moved.txt") and host.first is None:
            host.first = now
        down = host.kind is not None and host.first is not None and now - host.first < OUTAGE_S
        host.hits.append(Hit(host.ip, path, now, down))
        if path == "/robots.txt":
            if down:
                return await self._fail(request, host.kind)
            if host.kind == "404-after-5xx":
                return web.Response(status=404, text="no robots here")
            return web.Response(text="User-agent: *\nDisallow: /private/\n")
        if path == "/robots-moved.txt":
            if down:
                return web.Response(status=503, text="maintenance")
            return web.Response(text="User-agent: *\nDisallow: /private/\n")
        n = int(path.rsplit("/", 1)[-1]) if path.startswith("/doc/") else -1
        if not 0 <= n < host.pages:
            return web.Response(status=404, text="not found")
        links = "".join(
            f'<a href="/doc/{m}">doc {m}</a> ' for m in (n + 1, n + 2) if m < host.pages
        )
        body = f"<html><body><p>Document {n} of {host.ip}: text enough to read.</p>{links}</body>"
        return web.Response(text=body + "</html>", content_type="text/html")

    async def _fail(self, request: web.Request, kind: str) -> web.StreamResponse:
        if kind in ("500", "502", "504"):
            return web.Response(status=int(kind), text="server error")
        if kind == "404-after-5xx":
            return web.Response(status=500, text="server error")
        if kind == "429":
            return web.Response(status=429, text="slow down")
        if kind == "timeout":
            await asyncio.sleep(FAST["read_timeout"] + FAST["total_timeout"])
            return web.Response(text="User-agent: *\nAllow: /\n")
        if kind == "reset":
            request.transport.abort()  # the connection goes away mid-exchange (RST)
            return web.Response(text="never seen")
        if kind == "redirect-5xx":
            raise web.HTTPFound("/robots-moved.txt")
        raise AssertionError(kind)


@pytest.fixture(scope="module")
def outage_crawl(tmp_path_factory):
    hosts = [Host(f"127.0.0.{181 + i}", kind) for i, kind in enumerate(KINDS)]
    healthy = Host("127.0.0.190", None, pages=40)
    out = tmp_path_factory.mktemp("robots-kinds")
    with OutageServer([*hosts, healthy]) as srv:
        seeds = [srv.url(h.ip, "/doc/0") for h in [*hosts, healthy]]
        summary = asyncio.run(crawl(seeds, out, CFG))
    pages = {p["url"]: p for p in pq.read_table(out / "pages.parquet").to_pylist()}
    return srv, hosts, healthy, summary, pages


@pytest.mark.parametrize("kind", KINDS)
def test_no_page_before_robots_answers_then_every_page(outage_crawl, kind):
    srv, hosts, _, summary, pages = outage_crawl
    host = next(h for h in hosts if h.kind == kind)
    robots = [h for h in host.hits if h.path in ("/robots.txt", "/robots-moved.txt")]
    docs = [h for h in host.hits if h.path.startswith("/doc/")]
    answered = min(h.start for h in robots if not h.outage)
    # asked again through the outage, with backoff: never sooner than the first wait, and the
    # waits grow to the cap (a loaded machine only makes them longer)
    asks = [h.start for h in robots if h.path == "/robots.txt"]
    during = [a for a in asks if a < answered]
    assert 3 <= len(during) <= OUTAGE_S / CFG["robots_retry_base_s"], (kind, asks)
    gaps = sorted(b - a for a, b in zip(asks, asks[1:], strict=False))
    assert gaps[0] >= 0.9 * CFG["robots_retry_base_s"], (kind, gaps)
    assert gaps[len(gaps) // 2] >= 0.8 * CFG["robots_retry_max_s"], (kind, gaps)
    # nothing but robots.txt before it answered, then every page, allowed
    assert docs and min(h.start for h in docs) >= answered, kind
    for n in range(host.pages):
        row = pages[srv.url(host.ip, f"/doc/{n}")]
        assert row["status"] == 200 and row["robots_crawl"] == "allowed", (kind, n, row)
    assert summary["robots_gave_up"] == {}


def test_other_hosts_proceed_during_the_outages(outage_crawl):
    _, hosts, healthy, _, _ = outage_crawl
    end_of_outages = min(h.first for h in hosts) + OUTAGE_S
    done = [h for h in healthy.hits if h.path.startswith("/doc/") and h.start < end_of_outages]
    assert len(done) >= 10, len(done)
