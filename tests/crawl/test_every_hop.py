"""Every hop of every request kind goes through the same layers (issue 23): a sitemap's redirect,
a robots.txt redirect and a sub-request's redirect each ask the target's robots.txt (both
tokens) and the SSRF guard, on the host as the connection would use it.

The sites are loopback hosts of small servers that log every request per address, in order,
so "B saw its robots.txt first and never the sitemap" is read off the log.
"""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow.parquet as pq
import pytest

from crawlers.crawl import crawl
from crawlers.crawl.downloader import Downloader

from .conftest import FAST

pytestmark = pytest.mark.timeout(60)

ALLOW_ALL = "User-agent: *\nAllow: /\n"
HTML = "text/html; charset=utf-8"


class Sites:
    """Hosts answering from a route table {(ip, path): (status, headers, body)} on one shared
    port; `log` holds (ip, path) of every request in arrival order. '{port}' in a header or body
    is the port. http.server writes header values as Latin-1 bytes, as many servers do."""

    def __init__(self, routes: dict[tuple[str, str], tuple[int, dict, str]]):
        self.routes = routes
        self.ips = sorted({ip for ip, _ in routes})
        self.log: list[tuple[str, str]] = []
        self.port = 0
        self._servers: list[ThreadingHTTPServer] = []

    def url(self, ip: str, path: str) -> str:
        return f"http://{ip}:{self.port}{path}"

    def paths(self, ip: str) -> list[str]:
        return [p for i, p in self.log if i == ip]

    def _respond(self, handler: BaseHTTPRequestHandler) -> None:
        ip = handler.server.server_address[0]
        self.log.append((ip, handler.path))
        route = self.routes.get((ip, handler.path.split("?", 1)[0]))
        status, headers, body = route or (404, {"Content-Type": "text/plain"}, "none")
        data = body.replace("{port}", str(self.port)).encode()
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value.replace("{port}", str(self.port)))
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def __enter__(self) -> Sites:
        sites = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                sites._respond(self)

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        try:
            for ip in self.ips:
                server = Server((ip, self.port), Handler)
                self.port = server.server_address[1]
                self._servers.append(server)
                threading.Thread(target=server.serve_forever, daemon=True).start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()


def _robots(body: str) -> tuple[int, dict, str]:
    return 200, {"Content-Type": "text/plain"}, body


def _redirect(location: str, status: int = 302) -> tuple[int, dict, str]:
    return status, {"Location": location}, ""


def test_sitemap_redirect_asks_the_targets_robots_first_and_obeys_it(tmp_path):
    a, b = "127.0.0.71", "127.0.0.72"
    routes = {
        (a, "/robots.txt"): _robots(
            f"User-agent: *\nAllow: /\nSitemap: http://{a}:{{port}}/sm.xml\n"
        ),
        (a, "/"): (200, {"Content-Type": HTML}, "<html><body><p>home</p></body></html>"),
        (a, "/sm.xml"): _redirect(f"http://{b}:{{port}}/private/sm.xml"),
        (b, "/robots.txt"): _robots("User-agent: *\nDisallow: /private/\n"),
        (b, "/private/sm.xml"): (
            200,
            {"Content-Type": "application/xml"},
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>http://{b}:{{port}}/private/page</loc></url></urlset>",
        ),
    }
    with Sites(routes) as sites:
        cfg = {**FAST, "delay": 0.0, "max_pages": 10}
        asyncio.run(crawl([sites.url(a, "/")], tmp_path, cfg))
    assert ("127.0.0.71", "/sm.xml") in sites.log  # the sitemap was asked for
    assert sites.paths(b) == ["/robots.txt"], sites.log  # robots first, the sitemap never
    pages = {p["url"] for p in pq.read_table(tmp_path / "pages.parquet").to_pylist()}
    assert not any("/private/" in u for u in pages)


def test_robots_txt_redirect_to_a_spelled_loopback_host_is_refused_and_decides_nothing():
    # A rendered page's own (private, trusted) origin: its robots.txt answers 301 to a
    # superscript-digit spelling of another loopback host that would "allow all" (Latin-1
    # superscripts: the Location header arrives as the server wrote it).
    a, b = "127.0.0.73", "127.0.0.231"
    routes = {
        (a, "/robots.txt"): _redirect("http://¹²7.0.0.²³¹:{port}/robots.txt", 301),
        (a, "/page"): (200, {"Content-Type": HTML}, "<p>page</p>"),
        (b, "/robots.txt"): _robots(ALLOW_ALL),
    }
    with Sites(routes) as sites:

        async def go():
            async with Downloader({"delay": 0.0, "robots_retries": 0}) as dl:
                own = sites.url(a, "")
                page = await dl.fetch(sites.url(a, "/page"), trusted_origin=own)
                record = await dl.robots._fetch(own)  # the robots exchange itself
                return page, record

        page, record = asyncio.run(go())
    assert sites.paths(b) == [], sites.log  # the internal host saw nothing
    assert record.error.startswith("ssrf-blocked") and "127.0.0.231" in record.error
    assert page.status is None and page.error.startswith("robots-unreachable"), page.error
    assert sites.paths(a).count("/page") == 0


def test_robots_txt_follows_five_redirects_each_hop_checked():
    a = "127.0.0.75"
    chain = {(a, f"/r{i}"): _redirect(f"/r{i + 1}") for i in range(1, 5)}
    routes = {
        (a, "/robots.txt"): _redirect("/r1", 301),
        **chain,
        (a, "/r5"): _robots("User-agent: *\nDisallow: /private/\n"),
        (a, "/ok"): (200, {"Content-Type": HTML}, "<p>ok</p>"),
        (a, "/private/x"): (200, {"Content-Type": HTML}, "<p>no</p>"),
    }
    with Sites(routes) as sites:

        async def go():
            async with Downloader({"delay": 0.0, "allow_private_networks": True}) as dl:
                return [await dl.fetch(sites.url(a, p)) for p in ("/ok", "/private/x")]

        ok, private = asyncio.run(go())
    robots_hops = ["/robots.txt", "/r1", "/r2", "/r3", "/r4", "/r5"]  # five redirects followed
    assert sites.paths(a) == [*robots_hops, "/ok"], sites.log
    assert ok.ok and private.error.startswith("robots-disallowed")


def test_subrequest_redirect_asks_each_hops_robots_for_both_tokens():
    a, b, c = "127.0.0.76", "127.0.0.77", "127.0.0.78"
    routes = {
        (a, "/robots.txt"): _robots(ALLOW_ALL),
        (a, "/to-private"): _redirect(f"http://{b}:{{port}}/private/data.json"),
        (a, "/to-cdn"): _redirect(f"http://{c}:{{port}}/img.json"),
        (b, "/robots.txt"): _robots("User-agent: *\nDisallow: /private/\n"),
        (b, "/private/data.json"): (200, {"Content-Type": "application/json"}, "{}"),
        (c, "/robots.txt"): _robots(
            "User-agent: RefineryBot-Extended\nDisallow: /\n\nUser-agent: *\nAllow: /\n"
        ),
        (c, "/img.json"): (200, {"Content-Type": "application/json"}, '{"t": 1}'),
    }
    with Sites(routes) as sites:

        async def go():
            async with Downloader({"delay": 0.0, "allow_private_networks": True}) as dl:
                return [
                    await dl.fetch(sites.url(a, p), resource_type="fetch", page="p")
                    for p in ("/to-private", "/to-cdn")
                ]

        private, cdn = asyncio.run(go())
    assert sites.paths(b) == ["/robots.txt"], sites.log  # the hop was refused before sending
    assert private.error.startswith("robots-disallowed")
    assert private.final_url == sites.url(b, "/private/data.json")
    assert cdn.ok and cdn.robots_crawl == "allowed" and cdn.robots_training == "disallowed"


def test_a_training_opt_out_follows_the_url_through_its_redirect():
    # The publisher opts /img/ out of training and redirects it to a CDN whose robots.txt allows
    # all: the image asked for is the publisher's, so its opt-out holds (the image fetch and a
    # rendered page's sub-requests read this decision).
    a, c = "127.0.0.79", "127.0.0.80"
    routes = {
        (a, "/robots.txt"): _robots(
            "User-agent: RefineryBot-Extended\nDisallow: /img/\n\nUser-agent: *\nAllow: /\n"
        ),
        (a, "/img/cat.json"): _redirect(f"http://{c}:{{port}}/cat.json"),
        (a, "/free.json"): _redirect(f"http://{c}:{{port}}/cat.json"),
        (c, "/robots.txt"): _robots(ALLOW_ALL),
        (c, "/cat.json"): (200, {"Content-Type": "application/json"}, '{"cat": 1}'),
    }
    with Sites(routes) as sites:

        async def go():
            async with Downloader({"delay": 0.0, "allow_private_networks": True}) as dl:
                return [
                    await dl.fetch(sites.url(a, p), resource_type="image", wanted_types=("*",))
                    for p in ("/img/cat.json", "/free.json")
                ]

        opted, free = asyncio.run(go())
    assert opted.ok and opted.robots_crawl == "allowed"
    assert opted.robots_training == "disallowed"
    assert free.ok and free.robots_training == "allowed"  # the control


def test_another_origins_robots_redirect_into_a_trusted_private_origin_is_refused(monkeypatch):
    # A page whose own private origin O is trusted asks host P (made "public" here by treating
    # its address as global); P's robots.txt redirects into O. The trust is for O's own
    # requests: the hop is refused like any other private target, and O sees nothing from it.
    import crawlers.crawl.downloader as downloader_mod
    import crawlers.crawl.ssrf as ssrf_mod

    o, p = "127.0.0.83", "127.0.0.84"
    real = ssrf_mod.blocked_reason

    def as_public(address):
        return None if str(address) == p else real(address)

    monkeypatch.setattr(ssrf_mod, "blocked_reason", as_public)
    monkeypatch.setattr(downloader_mod, "blocked_reason", as_public)
    routes = {
        (o, "/robots.txt"): _robots(ALLOW_ALL),
        (o, "/page.json"): (200, {"Content-Type": "application/json"}, "{}"),
        (o, "/internal/robots"): _robots(ALLOW_ALL),
        (p, "/robots.txt"): _redirect(f"http://{o}:{{port}}/internal/robots", 301),
        (p, "/data.json"): (200, {"Content-Type": "application/json"}, '{"d": 1}'),
    }
    with Sites(routes) as sites:

        async def go():
            async with Downloader({"delay": 0.0, "robots_retries": 0}) as dl:
                own = sites.url(o, "")
                first = await dl.fetch(sites.url(o, "/page.json"), trusted_origin=own, page="x")
                other = await dl.fetch(sites.url(p, "/data.json"), trusted_origin=own, page="x")
                return first, other

        first, other = asyncio.run(go())
    assert first.ok  # the trusted origin's own request
    assert "/internal/robots" not in sites.paths(o), sites.log
    assert sites.paths(p) == ["/robots.txt"]
    assert other.error.startswith("robots-unreachable"), other.error
