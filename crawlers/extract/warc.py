"""Read the crawl: its pages tables (one per host-hash shard) and single records out of its WARCs.

A stored body is not trusted: it is read with a byte cap, its ``Content-Encoding`` layers are
undone one by one with the crawler's own capped, streaming decoder
(``crawlers.crawl.fetcher.decode_body``, capped at ``CrawlConfig.max_decompressed_bytes``), and a
record the crawler cut short (``WARC-Truncated``) is refused. Each refusal is a ``BadPage`` whose
reason becomes the page's reject reason.
"""

from __future__ import annotations

import functools
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader

from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.fetcher import decode_body
from crawlers.extract.decode import BadPage

# The crawler's own cap on a decoded body, so extraction accepts exactly what a crawl could.
MAX_DECOMPRESSED_BYTES: int = CrawlConfig.model_fields["max_decompressed_bytes"].default
MAX_ENCODING_LAYERS = 4  # "gzip, gzip" is legal; a long stack is an attack, not a server
_ZLIB_CODINGS = ("gzip", "x-gzip", "deflate")
_READ_CHUNK = 1 << 16
_TRUNCATED = {  # WARC/1.1 WARC-Truncated reasons
    "length": "the crawler cut the body at its size cap (max_body_bytes; raise it to keep more)",
    "time": "the download ran out of time",
    "disconnect": "the server closed the connection mid-body",
    "unspecified": "the body was not (fully) downloaded",
}


@dataclass
class WarcResponse:
    """The HTTP response stored in one WARC record (body decoded, Content-Encoding undone)."""

    status: int | None
    headers: dict[str, str]
    body: bytes
    record_id: str | None = None  # WARC-Record-ID: the record's provenance
    capture_time: str | None = None  # WARC-Date


def find_pages_files(crawl_dir: str | Path) -> list[Path]:
    """All pages.parquet files of a crawl: DIR/pages.parquet and DIR/shard=<k>/pages.parquet.

    A crawl or import that did not finish (killed, or still running) is refused, one line naming
    its directory and how to resume it, never skipped: its pages would be silently missing.
    """
    crawl_dir = Path(crawl_dir)
    for d in [crawl_dir, *sorted(p for p in crawl_dir.glob("shard=*") if p.is_dir())]:
        unfinished = _unfinished(d)
        if unfinished:
            from common.inputs import InputError

            raise InputError(unfinished)
    found = sorted(crawl_dir.glob("pages.parquet")) + sorted(
        crawl_dir.glob("shard=*/pages.parquet")
    )
    if not found:
        raise FileNotFoundError(
            f"{crawl_dir}: no pages.parquet (nor shard=*/pages.parquet); point --crawl at the "
            "directory `refinery crawl --out` wrote"
        )
    for path in found:
        st = path.stat()
        _check_pages(str(path), st.st_mtime_ns, st.st_size)
    return found


# What a crawl keeps while it runs (crawlers/crawl: frontier.sqlite first, then warc/ and
# checkpoints/) and what an import does (crawlers/imports/run.py: parts/). Either writes
# pages.parquet only when it ends, and a crawl then removes checkpoints/, whose rows it holds.
_CRAWL_STATE = ("frontier.sqlite", "checkpoints", "warc")
_IMPORT_STATE = "parts"


def _unfinished(d: Path) -> str | None:
    """Why the crawl or import in `d` did not finish (the fix included), or None.

    pages.parquet is not asked for its manifest: `crawlers.crawl.crawl` (the Python API) writes
    none, only the stage does, and the crawl and the import write pages.parquet whole (a rename)
    only after every page is in the frontier or parts, so a kill after it loses no page."""
    pages = d / "pages.parquet"
    crawl = [n + "/" * (d / n).is_dir() for n in _CRAWL_STATE if (d / n).exists()]
    imported = (d / _IMPORT_STATE).is_dir()
    if not crawl and not imported:
        return None  # pages written by another tool (or nothing at all): read as they are
    if not pages.exists():
        held = ", ".join(crawl + ([f"{_IMPORT_STATE}/"] if imported else []))
        why = f"holds {held} but no pages.parquet"
    elif (d / "checkpoints").exists():
        why = "holds checkpoints/: pages fetched since its pages.parquet was written"
    else:
        return None
    shard = d.name.startswith("shard=")
    if imported and not (d / "frontier.sqlite").exists():
        what = "an import"
        fix = (
            f"run the same `refinery import warc FILES... --out {d}` again to finish it "
            "(it resumes from parts/; Dagster: materialise its imported_pages partition again)"
        )
    else:
        what = "a crawl"
        fix = (
            f"resume it: `refinery crawl --seeds SEEDS_FILE --out {d} --shard {_shard_of(d)} "
            "--resume` with the flags it ran with"
            + (
                "; Dagster: materialise its raw_pages partition again with resume: true"
                if shard
                else ""
            )
        )
    leave = f", or move {d.name}/ out of {d.parent} to extract without it" if shard else ""
    return (
        f"{d}: {what} that did not finish (killed, or still running): it {why}, so its pages "
        f"would be missing from the extraction; {fix}{leave}"
    )


def _shard_of(d: Path) -> str:
    """K/N of the crawl in `d` as its frontier records it (else K from shard=<K>, or K/N)."""
    import json
    import sqlite3

    k = d.name.split("=", 1)[1] if d.name.startswith("shard=") else "K"
    try:
        uri = (d / "frontier.sqlite").resolve().as_uri() + "?mode=ro"  # read it, change nothing
        db = sqlite3.connect(uri, uri=True, timeout=1)
        try:
            row = db.execute("SELECT value FROM meta WHERE key='config'").fetchone()
        finally:
            db.close()
        config = json.loads(row[0]) if row else {}
        return f"{int(config['shard'])}/{int(config['shards'])}"
    except (sqlite3.Error, ValueError, KeyError, TypeError):
        return f"{k}/N"


# The pages.parquet columns extraction reads, by kind (common.inputs); the others it carries.
PAGES_REQUIRED = {"url": "string", "warc_file": "string"}
PAGES_OPTIONAL = {
    "warc_offset": "int",
    "warc_length": "int",
    "status": "int",
    "content_type": "string",
    "error": "string",
    "redirect_to": "string",
    "fetched_at": "string",
}


@functools.lru_cache(maxsize=64)
def _check_pages(path: str, mtime_ns: int, size: int) -> None:
    """One line naming pages.parquet and the column when it cannot be read as a crawl's pages
    (empty, truncated, a missing or mistyped column, invalid UTF-8); checked once per version."""
    from common.inputs import check_file

    fix = "point --crawl at the directory `refinery crawl --out` wrote (or re-run the crawl)"
    check_file(path, PAGES_REQUIRED, PAGES_OPTIONAL, fix=fix)


def _read_capped(stream, limit: int, where: str, what: str) -> bytes:
    out = bytearray()
    while len(out) <= limit:
        chunk = stream.read(min(_READ_CHUNK, limit + 1 - len(out)))
        if not chunk:
            return bytes(out)
        out += chunk
    raise BadPage(
        "too_large",
        f"{where}: {what} is over {limit} bytes (the crawl's max_decompressed_bytes); raise "
        "max_decompressed_bytes to accept it",
    )


def decode_content(raw: bytes, content_encoding: str | None, limit: int, where: str = "") -> bytes:
    """Undo every Content-Encoding layer (last applied first), each output capped at `limit`.

    BadPage reasons: ``too_large`` (a layer would inflate past the cap: a compression bomb),
    ``decode_error`` (corrupt data), ``unsupported_encoding`` (a coding we cannot decode).
    """
    codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if len(codings) > MAX_ENCODING_LAYERS:
        raise BadPage(
            "unsupported_encoding",
            f"{where}: Content-Encoding {content_encoding!r} stacks {len(codings)} layers; at most "
            f"{MAX_ENCODING_LAYERS} are decoded",
        )
    body = raw
    for coding in reversed(codings):
        if coding == "zstd":  # browsers ask for it, so archives of browser crawls hold it
            body = _unzstd(body, limit, where)
            continue
        if coding == "br":  # likewise: most servers answer a browser's request with brotli
            body = _unbrotli(body, limit, where)
            continue
        if coding not in _ZLIB_CODINGS:
            raise BadPage(
                "unsupported_encoding",
                f"{where}: Content-Encoding {coding!r} has no decoder here (gzip, x-gzip, "
                "deflate, br and zstd do; the crawler only asks for gzip and deflate)",
            )
        try:
            decoded = decode_body(body, coding, limit)
        except ValueError as exc:
            reason = "too_large" if "exceeds" in str(exc) else "decode_error"
            raise BadPage(reason, f"{where}: Content-Encoding {coding}: {exc}") from exc
        if not _stream_complete(body, coding, decoded):
            raise BadPage(
                "decode_error",
                f"{where}: Content-Encoding {coding}: the compressed stream ends early, or more "
                "data follows its end (a cut or multi-part body), so the decoded page is partial",
            )
        body = decoded
    return body


def _stream_complete(raw: bytes, coding: str, decoded: bytes) -> bool:
    """True if `raw` is exactly one whole stream that decodes to `decoded` (checked by trailer).

    The capped decoder stops quietly at the end of the input, so a cut stream would otherwise
    pass as a shorter page.
    """
    if coding in ("gzip", "x-gzip"):  # trailer: CRC-32 and size mod 2**32, little-endian
        trailer = struct.pack("<II", zlib.crc32(decoded), len(decoded) & 0xFFFFFFFF)
        return len(raw) >= 18 and raw[-8:] == trailer
    if len(raw) >= 6 and raw[-4:] == struct.pack(">I", zlib.adler32(decoded)):
        return True  # zlib-wrapped deflate: Adler-32 trailer
    # Raw deflate has no trailer: replay it, discarding output, to see that it reaches its end.
    dec = zlib.decompressobj(-zlib.MAX_WBITS)
    data = raw
    try:
        while data and not dec.eof:
            dec.decompress(data, _READ_CHUNK)
            data = dec.unconsumed_tail
    except zlib.error:
        return False
    return dec.eof and not dec.unused_data


def _unzstd(raw: bytes, limit: int, where: str) -> bytes:
    """Content-Encoding zstd, whole frames only, the output capped at `limit`: the input is fed
    a small piece at a time, so a bomb stops near the cap (zstandard's stream reader returns
    nothing, quietly, for a cut frame; the decompressor object says whether a frame ended)."""
    import zstandard

    out = bytearray()
    data = raw
    try:
        while data:
            dec = zstandard.ZstdDecompressor().decompressobj()
            for i in range(0, len(data), 256):
                out += dec.decompress(data[i : i + 256])
                if len(out) > limit:
                    raise BadPage(
                        "too_large",
                        f"{where}: Content-Encoding zstd: decompressed body exceeds {limit} "
                        "bytes (compression bomb?)",
                    )
                if dec.eof:
                    break
            if not dec.eof:
                raise BadPage(
                    "decode_error",
                    f"{where}: Content-Encoding zstd: the compressed stream ends inside a frame "
                    "(a cut body), so the decoded page is partial",
                )
            data = dec.unused_data + data[i + 256 :]  # more frames follow, or nothing
    except zstandard.ZstdError as exc:
        raise BadPage("decode_error", f"{where}: Content-Encoding zstd: {exc}") from exc
    return bytes(out)


def _unbrotli(raw: bytes, limit: int, where: str) -> bytes:
    """Content-Encoding br, the output capped at `limit`: brotli's decompressor is asked for at
    most what is left under the cap each call (`output_buffer_limit`), so a bomb stops there;
    a stream that ends before brotli's last block, or bytes after it, is a cut or padded body."""
    import brotli

    dec = brotli.Decompressor()
    out = bytearray()
    data = raw
    try:
        while True:
            chunk = dec.process(data, output_buffer_limit=limit + 1 - len(out))
            data = b""
            out += chunk
            if len(out) > limit:
                raise BadPage(
                    "too_large",
                    f"{where}: Content-Encoding br: decompressed body exceeds {limit} bytes "
                    "(compression bomb?)",
                )
            if dec.can_accept_more_data():
                break
    except brotli.error as exc:
        raise BadPage("decode_error", f"{where}: Content-Encoding br: {exc}") from exc
    if not dec.is_finished():
        raise BadPage(
            "decode_error",
            f"{where}: Content-Encoding br: the compressed stream ends early (a cut body), so "
            "the decoded page is partial",
        )
    return bytes(out)


def read_response(
    warc_path: str | Path,
    offset: int,
    length: int | None = None,
    *,
    max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES,
) -> WarcResponse:
    """Read the response record that starts at `offset` (skipping a request record if one is there).

    ValueError if no response record is there; BadPage(truncated | too_large | decode_error |
    unsupported_encoding) if its body cannot be trusted as a whole page.
    """
    where = f"{warc_path}@{offset}"
    with open(warc_path, "rb") as fh:
        fh.seek(int(offset))
        for n, record in enumerate(ArchiveIterator(fh)):
            if record.rec_type in ("response", "resource"):
                return _response(record, where, max_decompressed_bytes)
            if n >= 2:
                break
    raise ValueError(f"{where}: no response record there; the pages table and WARC disagree")


def _response(record, where: str, limit: int) -> WarcResponse:
    truncated = record.rec_headers.get_header("WARC-Truncated")
    if truncated:
        why = _TRUNCATED.get(truncated.strip().lower(), "the record says it is incomplete")
        raise BadPage(
            "truncated",
            f"{where}: WARC-Truncated: {truncated}: {why}, so the stored body is not the whole "
            "page and becomes no document",
        )
    status = None
    headers: dict[str, str] = {}
    stream = record.raw_stream  # never content_stream(): it would inflate without a cap
    if record.http_headers is not None:
        code = record.http_headers.get_statuscode()
        status = int(code) if code and code.isdigit() else None
        headers = {}  # as the import reads them: the first line of a header, but repeated
        for k, v in record.http_headers.headers:  # coding lines are one list (gzip, then br)
            k = k.lower()
            if k in headers and k in ("content-encoding", "transfer-encoding"):
                headers[k] = f"{headers[k]}, {v}"
            else:
                headers.setdefault(k, v)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            stream = ChunkedDataReader(record.raw_stream)  # de-chunk only, no decompression
    raw = _read_capped(stream, limit, where, "the stored body")
    body = decode_content(raw, headers.get("content-encoding"), limit, where)
    h = record.rec_headers
    return WarcResponse(
        status, headers, body, h.get_header("WARC-Record-ID"), h.get_header("WARC-Date")
    )
