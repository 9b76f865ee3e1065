"""WARC records of a render: every response a rendered page used, so the render can be replayed.

Per page, one batch is appended with a single write (as the crawl's WarcStore does):

    metadata  WARC-Target-URI = the page; JSON naming every request the page made, which
              response record answered it, and what was refused
    request + response per fetched hop (redirect hops included), both carrying
              Refinery-Page-URI = the page; a request's WARC-Concurrent-To is its response
              (as in the crawl's WARC), a response's is the metadata record

Responses keep their raw (content-encoded) bytes; Transfer-Encoding is renamed as the crawl's
WARC does. `read_page` reads one batch back for a replay (`route.fulfill` from these records).
"""

from __future__ import annotations

import io
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlers.crawl.fetcher import FetchResult, decode_body, now_iso

PROFILE = "https://refinery.invalid/warc/render/1"  # names the metadata JSON's shape
_RENAMED = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}
# Headers not passed to the browser: the body is handed over decoded and whole, without cookies.
HOP_BY_HOP = frozenset(
    {
        "content-encoding",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "set-cookie",
        "x-crawler-transfer-encoding",
    }
)


@dataclass
class Captured:
    """A request the page made and the downloader's result that answered it."""

    url: str
    resource_type: str
    result: FetchResult


@dataclass
class ArchivedResponse:
    """A stored response, ready to hand to the browser."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes  # decoded


@dataclass
class ArchivedPage:
    """One page's batch read back: its metadata and the responses by requested URL, in order."""

    page_url: str
    info: dict
    responses: dict[str, list[ArchivedResponse]] = field(default_factory=dict)

    def take(self, url: str) -> ArchivedResponse | None:
        """The next stored response for a URL (the last one again once they run out)."""
        queue = self.responses.get(url)
        if not queue:
            return None
        return queue.pop(0) if len(queue) > 1 else queue[0]


@dataclass
class ArchiveLocation:
    """Where a page's batch lives, relative to the render output directory."""

    file: str
    offset: int
    length: int


def browser_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Response headers to pass to route.fulfill (repeated names joined as HTTP allows)."""
    out: dict[str, str] = {}
    for key, value in headers:
        low = key.lower()
        if low in HOP_BY_HOP:
            continue
        out[low] = f"{out[low]}, {value}" if low in out else value
    return out


def _request_line(url: str) -> str:
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return f"GET {target}"


class RenderArchive:
    """Appends render batches to `OUT/<prefix>-<time>-<n>.warc.gz` (rotating at max_bytes), a
    file of its own per run; each batch is on disk (fsync) when `write_page` returns."""

    def __init__(self, out_dir: str | Path, *, prefix: str = "render", max_bytes: int = 2**30):
        self.out_dir = self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.prefix, self.max_bytes = prefix, max_bytes
        self._fh: io.BufferedWriter | None = None
        self._name = ""

    def _ensure_file(self) -> None:
        """Open a new file, never one that exists: a render killed mid-write may have left a
        torn record at the end of its last file, and a resumed run's records must not follow it
        (its finished pages' batches stay where its journal says)."""
        if self._fh is not None and self._fh.tell() < self.max_bytes:
            return
        self.close()
        n = len(list(self.dir.glob(f"{self.prefix}-*.warc.gz")))
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        while True:
            self._name = f"{self.prefix}-{stamp}-{n:05d}.warc.gz"
            try:
                self._fh = (self.out_dir / self._name).open("xb")
                break
            except FileExistsError:
                n += 1
        _fsync_dir(self.dir)  # the new name survives a crash as its journaled records do

    def write_page(self, page_url: str, captured: list[Captured], info: dict) -> ArchiveLocation:
        """Append the page's metadata, request and response records; returns the batch location."""
        self._ensure_file()
        assert self._fh is not None
        buf = io.BytesIO()
        writer = WARCWriter(buf, gzip=True, warc_version="1.1")
        meta_id = f"<urn:uuid:{uuid.uuid4()}>"
        records, requests = [], []
        for cap in captured:
            res = cap.result
            date = res.fetched_at or now_iso()
            last_id = None
            for hop in res.hops:
                if hop.status is None:
                    continue
                resp_id = f"<urn:uuid:{uuid.uuid4()}>"
                warc_headers = {
                    "WARC-Record-ID": resp_id,
                    "WARC-Date": date,
                    "WARC-Concurrent-To": meta_id,
                    "Refinery-Page-URI": page_url,
                    "Refinery-Resource-Type": cap.resource_type,
                }
                if hop.remote_ip:
                    warc_headers["WARC-IP-Address"] = hop.remote_ip
                if hop.truncated:
                    warc_headers["WARC-Truncated"] = hop.truncated
                headers = [(_RENAMED.get(k.lower(), k), v) for k, v in hop.response_headers]
                resp = writer.create_warc_record(
                    hop.url,
                    "response",
                    payload=io.BytesIO(hop.raw_body),
                    length=len(hop.raw_body),
                    http_headers=StatusAndHeaders(
                        f"{hop.status} {hop.reason}".strip(),
                        headers,
                        protocol=f"HTTP/{hop.http_version}",
                    ),
                    warc_headers_dict=warc_headers,
                )
                req = writer.create_warc_record(
                    hop.url,
                    "request",
                    http_headers=StatusAndHeaders(
                        _request_line(hop.url),
                        hop.request_headers,
                        protocol=f"HTTP/{hop.http_version}",
                        is_http_request=True,
                    ),
                    warc_headers_dict={
                        "WARC-Date": date,
                        "WARC-Concurrent-To": resp_id,
                        "Refinery-Page-URI": page_url,
                    },
                )
                records += [req, resp]
                last_id = resp_id
            requests.append(
                {
                    "url": cap.url,
                    "final_url": res.final_url,
                    "resource_type": cap.resource_type,
                    "status": res.status,
                    "response": last_id,
                }
            )
        body = json.dumps(
            {"profile": PROFILE, "page": page_url, "requests": requests, **info},
            ensure_ascii=False,
            sort_keys=True,
        ).encode()
        meta = writer.create_warc_record(
            page_url,
            "metadata",
            payload=io.BytesIO(body),
            length=len(body),
            warc_content_type="application/json",
            warc_headers_dict={"WARC-Record-ID": meta_id, "WARC-Date": now_iso()},
        )
        for rec in [meta, *records]:
            writer.write_record(rec)
        base = self._fh.tell()
        self._fh.write(buf.getvalue())
        self._fh.flush()
        # On disk before the caller journals the page as finished (crawlers.render.crawl).
        os.fsync(self._fh.fileno())
        return ArchiveLocation(self._name, base, buf.tell())

    def close(self) -> None:
        """Close the current file."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _fsync_dir(path: Path) -> None:
    """Make a new entry of `path` durable (best effort: not every filesystem allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_page(
    warc_path: str | Path, offset: int, length: int, *, max_bytes: int = 20 * 2**20
) -> ArchivedPage:
    """Read the batch a RenderArchive wrote at `offset`; ValueError names what is wrong."""
    with open(warc_path, "rb") as fh:
        fh.seek(int(offset))
        data = fh.read(int(length))
    if len(data) != int(length):
        raise ValueError(f"{warc_path}@{offset}: batch cut short ({len(data)} of {length} bytes)")
    meta, by_id = None, {}
    for record in ArchiveIterator(io.BytesIO(data)):
        kind = record.rec_type
        if kind == "metadata" and meta is None:
            meta = json.loads(record.content_stream().read())
        elif kind == "response" and record.http_headers is not None:
            rid = record.rec_headers.get_header("WARC-Record-ID")
            headers = list(record.http_headers.headers)
            encoding = record.http_headers.get_header("Content-Encoding") or ""
            raw = record.raw_stream.read()  # content_stream() would undo the encoding uncapped
            code = record.http_headers.get_statuscode()
            by_id[rid] = ArchivedResponse(
                record.rec_headers.get_header("WARC-Target-URI"),
                int(code),
                headers,
                decode_body(raw, encoding, max_bytes),
            )
    if meta is None or meta.get("profile") != PROFILE:
        raise ValueError(f"{warc_path}@{offset}: no render metadata record there")
    page = ArchivedPage(meta["page"], meta)
    for req in meta["requests"]:
        resp = by_id.get(req.get("response"))
        if resp is None:
            raise ValueError(
                f"{warc_path}@{offset}: response {req.get('response')} for {req['url']} is missing"
            )
        page.responses.setdefault(req["url"], []).append(resp)
    return page
