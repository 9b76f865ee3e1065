"""Serve the sample web on loopback: one ThreadingHTTPServer per site on 127.0.0.N, one shared port."""

from __future__ import annotations

import hashlib
import re
import socket
import threading
import time
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from .build import build_web, gzip_body
from .export import labels_table
from .model import MARKER
from .structure import CALENDAR_SITE, calendar_page

if TYPE_CHECKING:
    import pyarrow as pa

    from .model import SampleWeb

CALENDAR = re.compile(r"^/calendar/(\d{4})/(\d{1,2})/?$")
NOT_FOUND = (
    b"<!DOCTYPE html><html><head><title>404</title></head><body><h1>Not found</h1></body></html>\n"
)


class _Response:
    """A canned response. A 200 carries a weak ETag (sha256 of the body) beside its
    Last-Modified, and both validators are honoured (RFC 9110 section 13): If-None-Match first,
    If-Modified-Since only when no If-None-Match was sent."""

    __slots__ = ("status", "headers", "body", "gz", "last_modified", "etag")

    def __init__(self, status: int, headers: dict[str, str], body: bytes, gz: bytes | None) -> None:
        self.status, self.headers, self.body, self.gz = status, headers, body, gz
        lm = headers.get("Last-Modified")
        self.last_modified = parsedate_to_datetime(lm) if lm else None
        # Weak: the same tag whether the body goes out gzipped or not (RFC 9110 8.8.3).
        self.etag = f'W/"{hashlib.sha256(body).hexdigest()[:32]}"' if status == 200 else None
        if self.etag and "ETag" not in headers:
            headers["ETag"] = self.etag

    def not_modified(self, if_none_match: str | None, if_modified_since: str | None) -> bool:
        """Whether a conditional GET may be answered 304 Not Modified."""
        if self.status != 200:
            return False
        if if_none_match is not None:  # weak comparison (RFC 9110 13.1.2)
            tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
            return "*" in tags or (self.etag is not None and self.etag[2:] in tags)
        if if_modified_since and self.last_modified:
            try:
                return self.last_modified <= parsedate_to_datetime(if_modified_since)
            except (TypeError, ValueError):
                return False  # an unparsable date is ignored, as RFC 9110 requires
        return False


class _SiteServer(ThreadingHTTPServer):
    """Tracks open connections so stop() can close idle keep-alive sockets instead of waiting."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], site: str, responses: dict[str, _Response]) -> None:
        self.site = site
        self.responses = responses
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()
        super().__init__(addr, _Handler)

    def process_request(self, request, client_address):  # noqa: D102 - stdlib hook
        with self.sockets_lock:
            self.open_sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):  # noqa: D102 - stdlib hook
        with self.sockets_lock:
            self.open_sockets.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address) -> None:  # noqa: D102 - stdlib hook
        # A client that resets or drops its connection (a crawler's timeout, a closed keep-alive
        # socket) is routine for a web server; anything else is still printed.
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """Shut down every open client socket so handler threads return."""
        with self.sockets_lock:
            for sock in list(self.open_sockets):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "RefinerySampleWeb/1.0"
    timeout = 20  # idle keep-alive connections end by themselves

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        return  # thousands of requests per run; the crawler's WARC is the log

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._respond(head=False)

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib naming
        self._respond(head=True)

    def _lookup(self) -> _Response:
        responses = self.server.responses
        path = self.path
        hit = responses.get(path) or responses.get(path.split("?", 1)[0] if "?" in path else path)
        if hit:
            return hit
        match = CALENDAR.match(path.split("?", 1)[0])
        if self.server.site == CALENDAR_SITE and match and 1 <= int(match.group(2)) <= 12:
            return _Response(
                200,
                {"Content-Type": "text/html; charset=utf-8"},
                calendar_page(self.server.site, int(match.group(1)), int(match.group(2))),
                None,
            )
        return _Response(404, {"Content-Type": "text/html; charset=utf-8"}, NOT_FOUND, None)

    def _respond(self, head: bool) -> None:
        resp = self._lookup()
        status, body = resp.status, resp.body
        headers = dict(resp.headers)
        if resp.not_modified(
            self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
        ):
            status, body = 304, b""
        if resp.gz is not None:
            headers["Vary"] = "Accept-Encoding"
            if status == 200 and "gzip" in (self.headers.get("Accept-Encoding") or ""):
                body = resp.gz
                headers["Content-Encoding"] = "gzip"
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head and status != 304:
            self.wfile.write(body)


class ServedWeb:
    """A running sample web; use as a context manager or call stop()."""

    def __init__(self, web: SampleWeb, first_octet: int, port: int) -> None:
        self.web = web
        self.first_octet = first_octet
        self.servers: list[_SiteServer] = []
        self.threads: list[threading.Thread] = []
        self.port = self._bind_all(port)
        for server in self.servers:
            thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.2},
                name=f"sampleweb-{server.site}",
                daemon=True,
            )
            thread.start()
            self.threads.append(thread)

    def _host(self, index: int) -> str:
        return f"127.0.0.{self.first_octet + index}"

    def _responses(self, port: int) -> dict[str, dict[str, _Response]]:
        bases = {s.name: f"http://{self._host(s.index)}:{port}".encode() for s in self.web.sites}

        def sub(match: re.Match[bytes]) -> bytes:
            name = match.group(1).decode()
            if name not in bases:
                raise KeyError(f"page links to unknown site marker {{{{site:{name}}}}}")
            return bases[name]

        out: dict[str, dict[str, _Response]] = {s.name: {} for s in self.web.sites}
        for (site, path), page in self.web.pages.items():
            body = MARKER.sub(sub, page.body)
            headers = {"Content-Type": page.content_type}
            headers.update(
                {k: MARKER.sub(sub, v.encode()).decode() for k, v in page.headers.items()}
            )
            out[site][path] = _Response(
                page.status, headers, body, gzip_body(body) if page.gzip else None
            )
        return out

    def _bind_all(self, port: int) -> int:
        if not (1 <= self.first_octet and self.first_octet + len(self.web.sites) - 1 <= 254):
            raise ValueError(
                f"first_octet={self.first_octet}: sites need 127.0.0.N with N in 1..254"
            )
        attempts = 1 if port else 25
        last_error: OSError | None = None
        for _ in range(attempts):
            chosen = port
            try:
                for site in self.web.sites:
                    server = _SiteServer((self._host(site.index), chosen), site.name, {})
                    self.servers.append(server)
                    chosen = chosen or server.server_address[1]
            except OSError as err:  # port taken on one of the addresses: try another shared port
                last_error = err
                for server in self.servers:
                    server.server_close()
                self.servers = []
                continue
            responses = self._responses(chosen)
            for server in self.servers:
                server.responses = responses[server.site]
            return chosen
        raise OSError(
            f"could not bind all {len(self.web.sites)} sites on one port (port={port}): {last_error}"
        )

    def base_url(self, site: str) -> str:
        """http://127.0.0.N:PORT of a site."""
        return f"http://{self._host(self.web.site(site).index)}:{self.port}"

    def url(self, site: str, path: str) -> str:
        """Absolute URL of a path on a site."""
        if not path.startswith("/"):
            raise ValueError(f"path {path!r} must start with '/'")
        return self.base_url(site) + path

    def set_response(
        self,
        site: str,
        path: str,
        body: bytes,
        *,
        status: int = 200,
        content_type: str = "text/html; charset=utf-8",
    ) -> None:
        """Serve `body` at `path` of `site` from now on (a publisher edits a page or its
        robots.txt): a new ETag, and Last-Modified = now."""
        server = next((s for s in self.servers if s.site == site), None)
        if server is None:
            raise KeyError(f"site {site!r} is not served (known: {[s.site for s in self.servers]})")
        headers = {
            "Content-Type": content_type,
            "Last-Modified": formatdate(time.time(), usegmt=True),
        }
        server.responses[path] = _Response(status, headers, body, None)

    def seeds(self) -> list[str]:
        """One home-page URL per site, in site order."""
        return [self.base_url(s.name) + "/" for s in self.web.sites]

    def labels_table(self) -> pa.Table:
        """The labels with the `url` column filled with this server's addresses."""
        return labels_table(self.web, self.base_url)

    def stop(self) -> None:
        """Stop every site server, close open connections and join the threads."""
        for server in self.servers:
            server.shutdown()
        for server in self.servers:
            server.close_connections()
            server.server_close()
        for thread in self.threads:
            thread.join(timeout=5)
        self.servers, self.threads = [], []

    def __enter__(self) -> ServedWeb:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def serve(web: SampleWeb | None = None, *, first_octet: int = 10, port: int = 0) -> ServedWeb:
    """Start serving (builds the default web if none is given); site i binds 127.0.0.(first_octet+i):port."""
    return ServedWeb(web if web is not None else build_web(0), first_octet, port)
