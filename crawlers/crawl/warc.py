"""WARC 1.1 output: request + response records per hop, one gzip member each, crash-safe.

Requests are stored with their request line as sent (`GET /path HTTP/1.1`); a response whose
body was not stored whole (over a size cap, or an unwanted type never downloaded) carries
`WARC-Truncated`. The crawl archives robots.txt and sitemap exchanges too (consent evidence);
readers find pages through the pages table's offsets, so those records never become documents.

A page's records are built in memory and appended with one write + flush, so a record on disk
is either complete or beyond the committed end. The frontier stores each file's committed end
in the same transaction as the page; `recover()` cuts every file back to that end on resume,
so a partial (or complete but unrecorded) record is never read as valid.
"""

from __future__ import annotations

import io
import os
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlers.crawl.fetcher import Hop

# The payload we store is the raw (still content-encoded) body, but aiohttp removed the chunked
# framing, so a Transfer-Encoding header would make readers de-chunk plain bytes.
_RENAMED = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}


def request_line(hop: Hop) -> str:
    """The request line as sent: 'GET /path?query HTTP/1.1'."""
    target = hop.target
    if not target:  # a hop built by hand: rebuild the origin-form target from the URL
        parts = urlsplit(hop.url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return f"{hop.method or 'GET'} {target} HTTP/{hop.request_version or '1.1'}"


@dataclass
class WarcLocation:
    """Where a page's final response record lives."""

    file: str  # relative to the crawl's output directory
    offset: int
    length: int
    end: int  # file size after this page's records: the new committed end


class WarcStore:
    """Appends records to rotating `OUT/warc/<prefix>-<time>-<n>.warc.gz` files."""

    def __init__(
        self,
        out_dir: Path,
        *,
        prefix: str = "refinery",
        max_bytes: int = 2**30,
        fsync: bool = False,
    ):
        self.out_dir = Path(out_dir)
        self.dir = self.out_dir / "warc"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.prefix, self.max_bytes, self.fsync = prefix, max_bytes, fsync
        self._fh: io.BufferedWriter | None = None
        self._name = ""

    def recover(self, committed: dict[str, int]) -> list[str]:
        """Truncate each WARC file to its committed end (remove never-committed files); returns actions."""
        actions = []
        for path in sorted(self.dir.glob("*.warc.gz")):
            rel = str(path.relative_to(self.out_dir))
            end = committed.get(rel, 0)
            size = path.stat().st_size
            if end == 0:
                path.unlink()
                actions.append(f"removed uncommitted {rel} ({size} bytes)")
            elif size > end:
                with path.open("r+b") as fh:
                    fh.truncate(end)
                actions.append(f"truncated {rel} from {size} to {end} bytes")
            elif size < end:
                raise RuntimeError(
                    f"{rel} is shorter ({size}) than its committed end ({end}); the crawl output was modified"
                )
        return actions

    def _ensure_file(self) -> None:
        if self._fh is not None and self._fh.tell() < self.max_bytes:
            return
        self.close()
        n = len(list(self.dir.glob("*.warc.gz")))
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        self._name = f"warc/{self.prefix}-{stamp}-{n:05d}.warc.gz"
        self._fh = (self.out_dir / self._name).open("ab")

    def write(self, hops: list[Hop], fetched_at: str) -> WarcLocation:
        """Append request/response records for every hop; the location is the last response's."""
        self._ensure_file()
        assert self._fh is not None
        buf = io.BytesIO()
        writer = WARCWriter(buf, gzip=True, warc_version="1.1")
        last_offset = last_len = 0
        for hop in hops:
            headers = [(_RENAMED.get(k.lower(), k), v) for k, v in hop.response_headers]
            status_line = f"{hop.status} {hop.reason}".strip()
            warc_headers = {"WARC-Date": fetched_at}
            if hop.remote_ip:
                warc_headers["WARC-IP-Address"] = hop.remote_ip
            if hop.truncated:
                warc_headers["WARC-Truncated"] = hop.truncated
            resp = writer.create_warc_record(
                hop.url,
                "response",
                payload=io.BytesIO(hop.raw_body),
                length=len(hop.raw_body),
                http_headers=StatusAndHeaders(
                    status_line, headers, protocol=f"HTTP/{hop.http_version}"
                ),
                warc_headers_dict=warc_headers,
            )
            req = writer.create_warc_record(
                hop.url,
                "request",
                http_headers=StatusAndHeaders(
                    request_line(hop), hop.request_headers, is_http_request=True
                ),
                warc_headers_dict={
                    "WARC-Date": fetched_at,
                    "WARC-Concurrent-To": resp.rec_headers.get_header("WARC-Record-ID"),
                },
            )
            writer.write_record(req)
            last_offset = buf.tell()
            writer.write_record(resp)
            last_len = buf.tell() - last_offset
        base = self._fh.tell()
        self._fh.write(buf.getvalue())
        self._fh.flush()
        if self.fsync:
            os.fsync(self._fh.fileno())
        return WarcLocation(self._name, base + last_offset, last_len, self._fh.tell())

    def close(self) -> None:
        """Close the current file."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
