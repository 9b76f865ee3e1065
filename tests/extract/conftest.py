"""Fixtures: a tiny crawl written with warcio, and a loopback server for pages' sub-resources."""

from __future__ import annotations

import hashlib
import io
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from common.procs import browser_descendants


def write_crawl(
    out_dir: Path,
    pages: list[dict],
    warc_name: str = "warc/crawl-0.warc.gz",
    crawl_config: dict | None = None,
) -> Path:
    """Write pages (url, status, body, content_type, crawl_allowed, training_allowed) as a crawl;
    with `crawl_config`, the configuration the crawl ran with (its frontier.sqlite's `config`,
    e.g. {"allow_private_networks": True} for a crawl of loopback sites)."""
    from crawlers.crawl.output import PAGES_SCHEMA

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / warc_name).parent.mkdir(parents=True, exist_ok=True)
    rows = []
    with open(out_dir / warc_name, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for p in pages:
            row = {
                "url": p["url"],
                "status": p.get("status"),
                "crawl_allowed": p.get("crawl_allowed", True),
                "training_allowed": p.get("training_allowed", True),
                "content_type": p.get("content_type"),
                "robots_crawl": "allowed",
                "robots_training": "allowed" if p.get("training_allowed", True) else "disallowed",
                "error": p.get("error"),
                "fetched_at": "2026-01-01T00:00:00Z",
            }
            if p.get("status") is not None and p.get("body") is not None:
                headers = [("Content-Type", p.get("content_type") or "text/html")]
                http = StatusAndHeaders(f"{p['status']} OK", headers, protocol="HTTP/1.1")
                rec = writer.create_warc_record(
                    p["url"], "response", payload=io.BytesIO(p["body"]), http_headers=http
                )
                offset = fh.tell()
                writer.write_record(rec)
                row.update(
                    warc_file=warc_name,
                    warc_offset=offset,
                    warc_length=fh.tell() - offset,
                    content_sha256=hashlib.sha256(p["body"]).hexdigest(),
                )
            rows.append(row)
    table = pa.Table.from_pylist(rows, schema=PAGES_SCHEMA)
    pq.write_table(table, out_dir / "pages.parquet")
    if crawl_config is not None:
        from crawlers.crawl.frontier import Frontier

        frontier = Frontier(out_dir / "frontier.sqlite")
        with frontier:
            frontier.set_meta("config", crawl_config)
        frontier.close()
    return out_dir


class SubresourceServer:
    """Serves robots.txt (disallowing /private/), JSON under /api/ and /private/, a slow /hang."""

    def __init__(self, host: str = "127.0.0.61"):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server.hits.append(self.path)
                if self.path == "/robots.txt":
                    body, ct = b"User-agent: *\nDisallow: /private/\n", "text/plain"
                elif self.path.startswith("/api/"):
                    body, ct = (
                        b'{"items": ["Fetched passage about river otters.", "Fetched passage about kelp."]}',
                        "application/json",
                    )
                elif self.path.startswith("/private/"):
                    body, ct = b'{"secret": "Robots-protected passage."}', "application/json"
                elif self.path.startswith("/hang"):
                    time.sleep(8)
                    body, ct = b"{}", "application/json"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", ct)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

        self.hits: list[str] = []
        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://{host}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> SubresourceServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def subresources():
    """A loopback server for the sub-requests of rendered test pages; stopped after the module."""
    with SubresourceServer() as srv:
        yield srv


@pytest.fixture
def no_browser_leak():
    """Fail the test if a Chromium process below this test process outlives it."""
    before = browser_descendants()
    yield
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and browser_descendants() - before:
        time.sleep(0.1)
    assert not (browser_descendants() - before), "Chromium processes were left behind"
