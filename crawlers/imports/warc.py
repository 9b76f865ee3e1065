"""One WARC/ARC file in: page rows for the HTML responses, a recorded skip for every other record.

Every record read is exactly one row: a page (an HTTP 200 HTML `response`/`resource` whose body
could be read whole) or a skip with its reason (`warcinfo`, `request`, `metadata`, `revisit`,
`not_http`, `not_html`, `http_status`, `no_http_headers`, `missing_target_uri`, `segmented`,
`split_record`, `too_large`, `digest_mismatch`, `short_record`, `truncated`, `decode_error`,
`malformed_record`, ...). A malformed stretch of a file (a cut gzip member, a wrong
Content-Length, garbage between records) is one skip naming the offset and the error; reading
goes on at the next record start it can find (`_resync`: a gzip member that opens with a
record, or a line that begins a WARC record of any version, or in an ARC file an ARC record).
A response's archived X-Robots-Tag opt-out is kept on its row even when the record is a skip
(a revisit, an HTTP 404), so the import can carry it to the capture of the URL it keeps.
A row's `url` is the target URI's canonical form, as the crawler stores its pages (`page_url`):
every spelling of one page is one URL.

Where the bytes stay: a local file with one gzip member per record, or uncompressed, is referred
to by absolute path and record offset (the crawl's `warc_file`/`warc_offset`/`warc_length`), so
`refinery extract` reads the record from the source without a copy (a WACZ member stored
uncompressed: at its offset in the .wacz, `crawlers/imports/wacz.py`). A whole-file gzip, a
zstd WARC (.warc.zst, with or without a dictionary frame), an ARC file (converted to WARC
records) and a remote (fsspec URL) file cannot be read at an offset later, so their page
records are copied into the import's own `warc/<key>.warc.gz` (one gzip member per record,
original WARC headers kept).
"""

from __future__ import annotations

import base64
import codecs
import functools
import hashlib
import io
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote, urlsplit, urlunsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecordLoader

from crawlers.crawl.canon import DEFAULT_PORTS
from crawlers.crawl.html import Directives, apply_meta_robots, apply_x_robots_tag, document_root
from crawlers.extract.decode import BadPage, decode_html, utf16_without_bom
from crawlers.extract.warc import MAX_DECOMPRESSED_BYTES, decode_content
from crawlers.imports import wacz
from crawlers.imports.sources import (
    Gunzip,
    Prefixed,
    Unzstd,
    can_seek,
    is_remote,
    is_zstd,
    local_path,
    open_source,
    rewound,
)

HTML_TYPES = ("text/html", "application/xhtml+xml")
NOT_PAGES = {  # record types that never are a page, with why
    "warcinfo": "warcinfo record (describes the file)",
    "request": "request record (what the crawler sent)",
    "metadata": "metadata record (the crawler's notes on a capture)",
    "conversion": "conversion record (derived text, e.g. a WET record; use `import wet`)",
    "continuation": "continuation record (segmented record; only whole records are read)",
    "arc_header": "ARC file header",
}
_READ = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b\x08"
_META = re.compile(rb"<meta\b[^>]*>", re.IGNORECASE)  # a candidate tag (`_meta_elements`)


@dataclass
class ScanOptions:
    """What a scan needs besides the file."""

    agent: str = "RefineryBot"
    training_agent: str = "RefineryBot-Extended"
    max_record_bytes: int = MAX_DECOMPRESSED_BYTES  # a body over this is skipped as too_large
    allow_private_networks: bool = False  # an http(s) archive on a loopback/private address


# What may come before the markup of an HTML page: a UTF-8 byte order mark, white space,
# comments (`<!-- saved from url=... -->`), an XML declaration (XHTML).
_PROLOGUE = re.compile(rb"(?:\xef\xbb\xbf|\s|<!--.*?-->|<\?xml[^>]*>)*", re.DOTALL)
# The first tag of an HTML page (the tags WHATWG's MIME sniffing reads as HTML, plus meta).
_HTML_START = re.compile(
    rb"<(?:!doctype\s+html|html|head|body|title|meta|script|style|iframe|h1|div|font|table"
    rb"|a|b|br|p)[\s/>]",
    re.IGNORECASE,
)
_SNIFF_BYTES = 8192  # how far into a body without a Content-Type its first tag is looked for


def html_type(content_type: str | None, body: bytes) -> bool:
    """HTML by its Content-Type, or by sniffing the body when the type is missing: its first
    tag is an HTML one, after a byte order mark, white space, comments and an XML declaration
    (the crawler keeps such a page: a missing type is HTML to it, `crawl.record.HTML_TYPES`)."""
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype:
        return ctype in HTML_TYPES
    head = body[:_SNIFF_BYTES]
    return _HTML_START.match(head, _PROLOGUE.match(head).end()) is not None


def archived_directives(
    x_robots: list[str],
    body: bytes,
    agent: str,
    training_agent: str,
    content_type: str | None = None,
) -> tuple[Directives, list[str], list[str]]:
    """The archived response's own opt-outs: X-Robots-Tag header values and `<meta>` robots tags
    (name=robots / a token / http-equiv), read with the crawler's parsers (`_meta_elements`:
    the body decoded as extraction decodes it, `content_type` its declared charset). Returns
    the merged directives and which X-Robots-Tag values and meta contents carried
    noai/noimageai."""
    from_headers = Directives()
    apply_x_robots_tag(from_headers, x_robots, agent, training_agent)
    from_meta = Directives()
    for meta in _meta_elements(body, content_type, agent, training_agent):
        apply_meta_robots(
            from_meta,
            meta.get("name") or "",
            meta.get("content") or "",
            agent,
            training_agent,
            meta.get("http-equiv") or "",
        )
    merged = Directives()
    for d in (from_headers, from_meta):
        merged.noindex |= d.noindex
        merged.nofollow |= d.nofollow
        merged.noai |= d.noai
        merged.noimageai |= d.noimageai
    h = [w for w, on in (("noai", from_headers.noai), ("noimageai", from_headers.noimageai)) if on]
    m = [w for w, on in (("noai", from_meta.noai), ("noimageai", from_meta.noimageai)) if on]
    return merged, h, m


def _meta_elements(body: bytes, content_type: str | None, agent: str, training_agent: str):
    """The `<meta>` elements of an HTML body that may carry robots directives for our tokens,
    as the crawler's HTML parser reads them (`document_root`: quoting, character references
    such as `no&#97;i`).

    Fast path (nearly every page): in a body whose markup is ASCII bytes, only the tags that
    may name robots or one of our tokens (`_may_direct`) are parsed, on their own. The body is
    decoded as extraction decodes it (`decode_html`: byte order mark, UTF-16 without one,
    declared and detected charsets) and parsed whole when it is UTF-16/32, or when such a tag
    holds a non-ASCII byte or a quote left open (a `>` inside a quoted value ends the tag early
    for a byte pattern)."""
    if not _wide(body, content_type):
        keys = (b"robots", agent.lower().encode(), training_agent.lower().encode())
        tags = [t for t in _META.findall(body) if _may_direct(t, keys)]
        if not tags:
            return []
        if all(t.isascii() and _closed(t) for t in tags):
            root = document_root("<html><head>" + b"".join(tags).decode("ascii") + "</head>")
            return [] if root is None else list(root.iter("meta"))
    try:
        text: bytes | str = decode_html(body, content_type, max_bytes=max(1, len(body)))
    except BadPage:  # binary or undecodable: lxml reads what it can of the bytes
        text = body
    root = document_root(text)
    return [] if root is None else list(root.iter("meta"))


# name= / http-equiv= in a tag, and its value: what decides whether a meta tag is about robots
_NAMING = re.compile(rb"""(?:name|http-equiv)\s*=\s*("[^"]*"|'[^']*'|[^\s>]*)""", re.IGNORECASE)


def _may_direct(tag: bytes, keys: tuple[bytes, ...]) -> bool:
    """Whether a `<meta ...>` tag found as bytes may carry robots directives for us: a quote
    left open (the tag may be cut short), or a name / http-equiv value that names robots or a
    token, or may hide one (a character reference, a non-ASCII byte)."""
    if not _closed(tag):
        return True
    for value in _NAMING.findall(tag):
        if not value.isascii() or b"&" in value:
            return True
        value = value.lower()
        if any(k in value for k in keys):
            return True
    return False


def _closed(tag: bytes) -> bool:
    """Every quote of the tag is closed."""
    return not (tag.count(b'"') % 2 or tag.count(b"'") % 2)


_WIDE_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_BE)  # UTF-32 LE: as 16
_CHARSET = re.compile(r"charset\s*=\s*[\"']?\s*([A-Za-z0-9_\-:.]+)", re.IGNORECASE)


def _wide(body: bytes, content_type: str | None) -> bool:
    """Whether the body's markup is not ASCII bytes: UTF-16/32 by a byte order mark, by its
    byte pattern (`utf16_without_bom`) or by the charset its Content-Type declares."""
    if body.startswith(_WIDE_BOMS) or utf16_without_bom(body[:4096]):
        return True
    m = _CHARSET.search(content_type or "")
    if m is None:
        return False
    try:
        return codecs.lookup(m.group(1)).name.startswith(("utf-16", "utf-32"))
    except LookupError:
        return False


def record_damage(record, left: int | None = None) -> tuple[str, str] | None:
    """Why a record read to its end is not whole, as (skip reason, detail), or None: it ended
    `left` bytes (default: what its reader still expected) before its Content-Length
    (`short_record`: warcio stops quietly at a cut gzip member or the end of the file), or its
    WARC-Block-Digest does not match its bytes (`digest_mismatch`, when the iterator checks
    digests). `import warc` and `import wet` both skip such a record."""
    if left is None:
        left = getattr(record.raw_stream, "limit", 0) or 0
    if left > 0:
        return (
            "short_record",
            f"the record ends {left} bytes before its Content-Length (a wrong Content-Length or "
            "a cut file)",
        )
    # The block digest covers the record's bytes as written: a mismatch is a cut, corrupt or
    # mis-measured record (a wrong Content-Length). A payload digest alone is not trusted to
    # refuse a page: archivers differ on whether it covers the chunked or de-chunked body, and
    # an algorithm warcio does not know is no evidence against the record.
    problems = record.digest_checker.problems
    if any(p.startswith("block digest failed") for p in problems):
        return "digest_mismatch", "; ".join(problems)[:500]
    return None


def _read_capped(stream, limit: int) -> tuple[bytes, bool]:
    """Up to `limit` bytes; (data, True) when more follows (the rest is left for warcio to skip,
    streamed, never held)."""
    out = bytearray()
    while len(out) <= limit:
        chunk = stream.read(min(_READ, limit + 1 - len(out)))
        if not chunk:
            return bytes(out), False
        out += chunk
    return bytes(out[:limit]), True


def _sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


class _Sink:
    """The import's own WARC for records that cannot be referred to in place."""

    def __init__(self, path: Path, rel: str):
        self.path, self.rel = path, rel
        self._fh: BinaryIO | None = None
        self._writer = None

    def write(
        self, record, raw: bytes, record_id: str | None = None, date: str | None = None
    ) -> tuple[int, int]:
        """Copy `record` (its body `raw`); a record converted from ARC gets `record_id` and
        `date` (its row's), so a copy is the same bytes every run."""
        from warcio.warcwriter import WARCWriter

        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "wb")
            self._writer = WARCWriter(self._fh, gzip=True)
        rec_type = "resource" if record.rec_type == "resource" else "response"
        uri = record.rec_headers.get_header("WARC-Target-URI") or record.rec_headers.get_header(
            "uri"
        )
        uri = lower_scheme(uri.strip().strip("<>")) if uri else uri
        keep = {}
        if record.format == "warc":
            for name in ("WARC-Record-ID", "WARC-Date", "WARC-IP-Address", "WARC-Payload-Digest"):
                if record.rec_headers.get_header(name):
                    keep[name] = record.rec_headers.get_header(name)
        # the row's id and capture time (from ARC, warcio's conversion would give a random id
        # and the time of the copy)
        keep.update({k: v for k, v in (("WARC-Record-ID", record_id), ("WARC-Date", date)) if v})
        new = self._writer.create_warc_record(
            uri,
            rec_type,
            payload=io.BytesIO(raw),
            http_headers=record.http_headers,
            warc_headers_dict=keep,
        )
        start = self._fh.tell()
        self._writer.write_record(new)
        return start, self._fh.tell() - start

    def close(self) -> None:
        if self._fh is not None:
            tmp = self._fh
            self._fh = None
            tmp.close()


_WARC_LINE = rb"WARC/\d\.\d+\r?\n"  # WARC/0.17, 0.18, 1.0, 1.1
# An ARC record line (v1 `URL IP date type length`, v2 ten fields; `filedesc://` heads a file).
_ARC_LINE = rb"[A-Za-z][A-Za-z0-9+.\-]*://\S* \S+ \d{12,14} \S"
_PLAIN_START = {  # a record start in an uncompressed file: a line that begins with one
    False: re.compile(rb"(?m)^" + _WARC_LINE),
    True: re.compile(rb"(?m)^(?:" + _WARC_LINE + rb"|" + _ARC_LINE + rb")"),
}
_ARC_START = re.compile(_ARC_LINE)
_SCAN = 1 << 20  # bytes read at a time looking for the next record
_OVERLAP = 1 << 12  # kept from the last read, so a start across its end is found (long URLs)


def _resync(
    fh: BinaryIO, start: int, gz: bool, end: int | None = None, arc: bool = False
) -> int | None:
    """The offset of the next record start at or after `start` (and before `end`), None when
    there is none: a gzip member whose first bytes are a record header (`is_record_start`), or,
    in a file that did not open with gzip, a line that begins a WARC record (any version:
    `WARC/0.18`, `WARC/1.1`) or, in an ARC file (`arc`), an ARC record (such a file may still
    hold gzip members after junk). A byte-range scan begins at the same place, so ranges meet
    exactly where records do; `end` keeps a range inside a huge record from reading to the
    record's end."""
    plain = None if gz else _PLAIN_START[arc]
    pos = start
    while end is None or pos < end:
        back = 1 if pos > 0 else 0  # the byte before: a line start is one after a newline
        fh.seek(pos - back)
        data = fh.read(_SCAN + back)
        if len(data) - back < len(_GZIP_MAGIC):
            return None
        found = [_first_member(fh, data, pos - back, back, end, arc)]
        if plain is not None:
            m = plain.search(data, back)
            found.append(pos - back + m.start() if m else None)
        found = [at for at in found if at is not None and (end is None or at < end)]
        if found:
            return min(found)
        if len(data) - back < _SCAN:
            return None  # searched to the end of the file
        pos += len(data) - back - _OVERLAP
    return None


def _first_member(fh: BinaryIO, data: bytes, at0: int, i: int, end: int | None, arc: bool):
    """The first gzip member in `data` (read at `at0`, searched from index `i`) that begins a
    record."""
    i = data.find(_GZIP_MAGIC, i)
    while i >= 0:
        at = at0 + i
        if end is not None and at >= end:
            return None
        if is_record_start(fh, at, arc):
            return at
        i = data.find(_GZIP_MAGIC, i + 1)
    return None


def is_record_start(fh: BinaryIO, pos: int, arc: bool = False) -> bool:
    """Whether a gzip member starts at `pos` and its first decompressed bytes are a WARC header
    (or, with `arc`, an ARC record line). A gzip magic inside compressed data is not enough (1
    in 16 M positions of random bytes has one); a deflate stream there that also begins with
    'WARC/' is, in practice, never chance."""
    fh.seek(pos)
    head = fh.read(1 << 14)
    if not head.startswith(_GZIP_MAGIC):
        return False
    try:
        first = zlib.decompressobj(31).decompress(head, 1 << 12 if arc else 8)
    except zlib.error:
        return False
    return first.startswith(b"WARC/") or (arc and _ARC_START.match(first) is not None)


def _arc_file(stream: BinaryIO, source: str) -> bool:
    """Whether a seekable file is ARC: by its name (a WACZ member's own), or its first line."""
    name = (wacz.split(source) or ("", source))[1].lower().split("?")[0]
    if name.endswith((".arc", ".arc.gz")):
        return True
    here = stream.tell()
    try:
        stream.seek(0)
        head = stream.read(1 << 14)
        if head.startswith(_GZIP_MAGIC):
            head = zlib.decompressobj(31).decompress(head, 1 << 12)
        return _ARC_START.match(head.lstrip()) is not None
    except zlib.error:
        return False
    finally:
        stream.seek(here)


def _starts_here(stream: BinaryIO, pos: int) -> bool:
    """`is_record_start`, leaving the stream where it was (warcio reads on from there)."""
    here = stream.tell()
    try:
        return is_record_start(stream, pos)
    finally:
        stream.seek(here)


def splittable(source: str, max_first_member: int = 64 << 20, allow_private: bool = False) -> bool:
    """A WARC with one gzip member per record (its first member, a WARC record, ends before the
    file does and another member follows), local or remote (read through byte-range requests):
    it can be read by byte ranges. A whole-file gzip, an ARC or an uncompressed file is read
    whole."""
    if wacz.split(source):
        return False
    with open_source(source, allow_private) as fh:
        if not can_seek(fh) or not is_record_start(fh, 0):
            return False  # a server that answers no byte ranges: the file is read whole
        fh.seek(0)
        d = zlib.decompressobj(31)
        read = 0
        while not d.eof and read < max_first_member:
            chunk = fh.read(1 << 16)
            if not chunk:
                return False
            read += len(chunk)
            try:
                d.decompress(chunk, 1 << 20)
                while d.unconsumed_tail and not d.eof:
                    d.decompress(d.unconsumed_tail, 1 << 20)
            except zlib.error:
                return False
        rest = d.unused_data or fh.read(2)
        return d.eof and rest.startswith(_GZIP_MAGIC[:2])


class _Loader(ArcWarcRecordLoader):
    """warcio's loader, except that a record without WARC-Target-URI is read (with no HTTP
    headers) instead of failing inside warcio (the scan then skips it as missing_target_uri),
    and ARC version 2 header lines are read (warcio knows version 1's five fields only and
    took a v2 line's first six fields for a URL with spaces)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        inner = self.arc_parser.parse
        self.arc_seen = False  # an ARC file (its records may be converted to WARC ones)

        def parse(stream, headerline=None):
            if headerline is None:
                headerline = stream.readline()
            self.arc_seen = True
            return inner(stream, arc_v1_line(headerline))

        self.arc_parser.parse = parse

    def load_http_headers(self, rec_type, uri, stream, length):
        # warcio reads HTTP headers only under a lower-case http:/https: (HTTP://, Https://)
        return super().load_http_headers(rec_type, lower_scheme(uri or ""), stream, length)


def lower_scheme(url: str) -> str:
    """`url` with an http(s) scheme in lower case (schemes are case-insensitive, RFC 3986
    3.1: an archive's `HTTP://host/` is `http://host/`); any other URL unchanged."""
    head, sep, rest = url.partition(":")
    low = head.lower()
    return low + sep + rest if sep and low in ("http", "https") and head != low else url


def import_url(url: str) -> str:
    """An archived target URI tidied without judging it: the scheme and host in lower case,
    the default port and the fragment dropped (`HTTP://Example.COM:80/a#top` is
    `http://example.com/a`); the path and query as archived, and a URI that is not http(s) or
    does not parse unchanged. What an import stores for a URI with no canonical form
    (`page_url`, which stores and keys every other one canonical)."""
    url = lower_scheme(url.strip().strip("<>"))
    if not url.startswith(("http://", "https://")):
        return url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    netloc = parts.netloc
    userinfo, at, hostport = netloc.rpartition("@")
    host = hostport.lower()
    if port is not None and port == DEFAULT_PORTS[parts.scheme]:
        host = host[: host.rindex(":")]
    elif hostport.endswith(":"):  # an empty port is the default one
        host = host[:-1]
    path = parts.path or "/"  # an empty path is '/' (RFC 9110 4.2.3)
    return urlunsplit((parts.scheme, userinfo + at + host, path, parts.query, ""))


# What a host may not hold once its percent escapes are decoded (WHATWG's forbidden host code
# points that would move the host's end: a decoded '/' or '@' must not make another host).
_HOST_BREAK = re.compile(r"[\x00-\x20/?#@:\[\]\\%<>^|\x7f]")


def page_url(url: str) -> tuple[str, str | None]:
    """(the URL an import stores and keys a record by, None) or (its `import_url`, why it has
    no canonical form). The URL is the crawler's canonical form
    (`crawlers.crawl.canon.canonicalize`: the crawler stores its pages under it, and consent
    ledgers are matched by URL string), so every spelling of one page is one URL:
    `http://bücher.example/a` and `http://XN--BCHER-KVA.EXAMPLE/a`, `http://example.org./c`,
    `/caf%C3%A9` and `/café`, `/p%61ge` and `/page`, `HTTP://Host:80/a#top` and
    `http://host/a`. A host with percent escapes (`%65xample.org`) is read decoded, as
    browsers read it (WHATWG host parsing), when what it decodes to is a host name. A URL
    canonicalize refuses (not http(s), a bad host or port, too long) is kept as `import_url`
    makes it; the reason is returned (`None` for a URI that is not http(s) at all: a `dns:`
    record's)."""
    from crawlers.crawl.canon import UrlError, canonicalize

    archived = import_url(url)
    try:
        return canonicalize(archived), None
    except UrlError as exc:
        why = str(exc)
    if not archived.startswith(("http://", "https://")):
        return archived, None
    try:
        parts = urlsplit(archived)
        host, port = parts.hostname or "", parts.port
        if "%" in host:
            decoded = unquote(host, errors="strict")
            if not _HOST_BREAK.search(decoded):
                netloc = decoded if port is None else f"{decoded}:{port}"
                return canonicalize(urlunsplit((parts.scheme, netloc, *parts[2:]))), None
    except (UrlError, ValueError):  # UnicodeDecodeError is a ValueError
        pass
    return archived, why


# Headers whose repeated lines are one comma-separated list (RFC 9110 5.3): every coding is
# undone, in order. (X-Robots-Tag values are all read: `x_robots`.)
_LIST_HEADERS = ("content-encoding", "transfer-encoding")
_ARC_DATE = re.compile(r"\d{12,14}")
_STATUS = re.compile(r"[0-9]{3}")  # an HTTP status code: three ASCII digits (RFC 9112 4)


def arc_v1_line(line: bytes | str) -> bytes | str:
    """An ARC v2 record line (URL IP date type result-code checksum location offset filename
    length) as the v1 line warcio reads (URL IP date type length); any other line unchanged."""
    text = line.decode("latin-1") if isinstance(line, bytes) else line
    parts = text.rstrip("\r\n").split(" ")
    if len(parts) != 10 or not _ARC_DATE.fullmatch(parts[2]) or not parts[9].isdigit():
        return line
    v1 = " ".join(parts[:4] + parts[9:]) + "\n"
    return v1.encode("latin-1") if isinstance(line, bytes) else v1


def _iterator(stream: BinaryIO, copy: bool) -> ArchiveIterator:
    it = ArchiveIterator(stream, check_digests=True, arc2warc=copy)
    it.loader = _Loader(verify_http=False, arc2warc=copy)
    return it


class _Restart(Exception):
    """The file must be read again as a stream and its records copied (whole-file gzip, ARC)."""

    def __init__(self, why: str, gunzip: bool = False):
        super().__init__(why)
        self.why, self.gunzip = why, gunzip


_WHOLE_GZIP = "whole-file gzip: records copied (a record in it cannot be read at an offset)"
_SPLIT_MEMBERS = (
    "a record spans several gzip members: the file is read as one gzip stream, records copied"
)
_SPLIT_RANGE = (
    "the record goes on in the next gzip member (its writer split it), which a byte range "
    "cannot read: import this file whole (--split-bytes 0)"
)


def _continued(stream: BinaryIO, pos: int) -> bool:
    """Whether the gzip member at `pos` goes on with the record before it: it holds more than
    blank lines and does not begin with a WARC header (a writer split the record's body)."""
    here = stream.tell()
    try:
        stream.seek(pos)
        head = stream.read(1 << 14)
        if not head.startswith(_GZIP_MAGIC):
            return False
        try:
            data = zlib.decompressobj(31).decompress(head, 64)
        except zlib.error:
            return False
        return bool(data.strip()) and not data.lstrip().startswith((b"WARC/", b"filedesc://"))
    finally:
        stream.seek(here)


def scan_file(
    source: str,
    opts: ScanOptions,
    sink_dir: Path,
    key: str,
    start: int = 0,
    end: int | None = None,
) -> list[dict[str, Any]]:
    """Every record of one WARC/ARC file as one row (a page or a skip); see the module doc.

    Rows carry `kind` ('page' or 'skip'), the provenance (`source_file`, `record_offset`,
    `record_length`, `warc_record_id`, `capture_time`, `record_type`), `import_mode`
    ('referenced', or 'copied: why') and, for pages, where extraction finds the record
    (`warc_file`: the source's absolute path, or `warc/<key>.warc.gz` in the import directory).

    `start`/`end`: only the records of a gzip-per-record file that begin in the byte range
    [start, end) (`splittable`): reading starts at the first record start at or after `start`
    (`_resync`) and stops at the first at or after `end`, so the ranges of a file together
    read each record once; a remote file's ranges are read through byte-range requests and their
    page records copied, each range into its own `warc/<key>.warc.gz`. A file that turns out
    not to be readable at an offset is read whole (copied) by its first range, and by no other.
    """
    restart: _Restart | None = None
    if is_remote(source):
        restart = _Restart("remote file: records copied so extraction can read them by offset")
    elif wacz.split(source) and not wacz.stored(source):
        restart = _Restart("deflated WACZ member: records copied (not readable at an offset)")
    else:
        spill = _Sink(sink_dir / f"{key}.warc.gz", f"warc/{key}.warc.gz")
        try:
            return _scan(
                source,
                opts,
                None,
                gunzip=False,
                mode="referenced",
                start=start,
                end=end,
                spill=spill,
            )
        except _Restart as r:
            restart = r
        finally:
            spill.close()
    for _ in range(2):
        ranged = is_remote(source) and not restart.gunzip  # gzip members read where they are
        if not ranged and start > 0:
            return []
        sink = _Sink(sink_dir / f"{key}.warc.gz", f"warc/{key}.warc.gz")
        try:
            return _scan(
                source,
                opts,
                sink,
                gunzip=restart.gunzip,
                mode=f"copied: {restart.why}",
                start=start if ranged else 0,
                end=end if ranged else None,
            )
        except _Restart as r:  # a remote whole-file gzip: once more, decompressed
            restart = r
        finally:
            sink.close()
    raise RuntimeError(f"{source}: could not be read as WARC/ARC")  # unreachable


def _scan(
    source: str,
    opts: ScanOptions,
    sink: _Sink | None,
    *,
    gunzip: bool,
    mode: str,
    start: int = 0,
    end: int | None = None,
    spill: _Sink | None = None,
) -> list[dict[str, Any]]:
    """One reading of a file (`scan_file`): `sink` set, every page record is copied into it;
    else pages are referred to in place, except those extraction could not read there
    (`_needs_copy`), copied into `spill`."""
    copy = sink is not None
    rows: list[dict[str, Any]] = []
    fh = open_source(source, opts.allow_private_networks)
    base = getattr(fh, "base", 0) or 0  # a WACZ member's first byte in the .wacz
    try:
        head = fh.read(4)
        gz = head.startswith(_GZIP_MAGIC)
        zstd = is_zstd(head)
        stream: BinaryIO = rewound(fh) if can_seek(fh) else Prefixed(head, fh)  # type: ignore
        if zstd and not gunzip:
            raise _Restart("zstd-compressed WARC: records copied", gunzip=True)
        decompressing = gunzip and (gz or zstd)
        if decompressing:
            stream = Unzstd.open(stream) if zstd else Gunzip(stream)  # type: ignore
            gz = False
        # offsets are the file's own (a stream decompressed here has none to seek to)
        seekable = not decompressing and stream.seekable()
        arc = False  # an ARC file: a record may also begin with an ARC line (`_resync`)
        if start > 0:
            first = _resync(stream, start, gz, end)
            if first is None:
                return rows  # no record begins in this range
            stream.seek(first)
        elif seekable and not _opens_with_record(first_bytes := _file_head(stream)):
            nxt = _resync(stream, 1, gz, end)  # e.g. a text file named .warc: one skip
            rows.append({**_not_an_archive(stream, source, first_bytes, nxt), "import_mode": mode})
            if nxt is None:
                return rows
            stream.seek(nxt)
        while True:
            # warcio's offsets are the stream's own (tell() where the iterator starts), absolute
            it = _iterator(stream, copy)
            last_end = stream.tell() if seekable else 0
            try:
                for record in it:
                    if end is not None and it.offset >= end and _starts_here(stream, it.offset):
                        return rows  # the next range's first record
                    if record.format in ("arc", "arc2warc"):
                        if not copy:
                            raise _Restart("ARC file: records converted to WARC and copied")
                        arc = True
                    row = _record_row(record, it, source, opts, sink, base, spill)
                    if row is None:  # an empty gzip member between or after records
                        continue
                    row.setdefault("import_mode", mode)
                    last_end = row["record_offset"] + max(0, row["record_length"] or 0)
                    if gz and seekable and row.get("skip_reason") == "short_record":
                        if _continued(stream, last_end):
                            if start == 0 and end is None:
                                raise _Restart(_SPLIT_MEMBERS, gunzip=True)
                            row = _skip(row, "split_record", _SPLIT_RANGE)
                    rows.append(row)
                if seekable:  # warcio ends quietly at a cut gzip member: the rest is a skip
                    rows.extend(_tail(stream, last_end, source, mode))
                return rows
            except _Restart:
                raise
            except ArchiveLoadFailed as exc:
                if "non-chunked gzip" in str(exc) and not gunzip:
                    raise _Restart(_WHOLE_GZIP, gunzip=True) from exc
                error: Exception = exc
            except Exception as exc:  # zlib.error, EOFError, a header warcio cannot parse
                error = exc
            if end is not None and last_end >= end and is_record_start(stream, last_end):
                return rows  # a record of the next range that cannot be read: it says so
            detail = " ".join(f"{type(error).__name__}: {error}".split())[:500]
            where = {"source_file": source, "record_offset": last_end, "record_length": None}
            rows.append(
                {
                    **_skip(where, "malformed_record", f"{source}@{last_end}: {detail}"),
                    "import_mode": mode,
                }
            )
            if not seekable:
                return rows  # a stream cannot be searched for the next record: the rest is lost
            arc = arc or _arc_file(stream, source)
            nxt = _resync(stream, last_end + 1, gz, end, arc)
            if nxt is None:
                return rows
            stream.seek(nxt)
    finally:
        fh.close()


def _file_head(stream: BinaryIO) -> bytes | None:
    """A seekable file's first bytes, its first gzip member's decompressed (None: a gzip
    member that does not decompress), blank lines dropped; the stream left at 0."""
    stream.seek(0)
    head = stream.read(1 << 14)
    stream.seek(0)
    if head.startswith(_GZIP_MAGIC):
        try:
            head = zlib.decompressobj(31).decompress(head, 1 << 12)
        except zlib.error:
            return None
    return head.lstrip()


def _opens_with_record(head: bytes | None) -> bool:
    """Whether a file's first bytes (`_file_head`) are a WARC or ARC record header, or nothing
    at all (an empty file). warcio reads any other first line as an ARC record line, so a text
    file named .warc would give one bogus record per line."""
    if head is None:
        return False
    return not head or head.startswith(b"WARC/") or _ARC_START.match(head) is not None


def _not_an_archive(
    stream: BinaryIO, source: str, head: bytes | None, nxt: int | None
) -> dict[str, Any]:
    """The one skip for a file that does not open with a record (`head`: its first bytes), up
    to the first record start found after it (`nxt`), or the whole file."""
    first = head if head is not None else stream.read(200)
    line = first[:200].split(b"\n", 1)[0].strip().decode("latin-1")
    stream.seek(0, io.SEEK_END)
    size = stream.tell()
    length = size if nxt is None else nxt
    detail = (
        f"{source}@0: the file does not begin with a WARC or ARC record header (first line "
        f"{line[:100]!r}); {length} bytes skipped: give WARC/ARC files (a text or other file "
        "named .warc is not one)"
    )
    where = {"source_file": source, "record_offset": 0, "record_length": length}
    return _skip(where, "malformed_record", detail)


def _tail(stream: BinaryIO, last_end: int, source: str, mode: str) -> list[dict[str, Any]]:
    """A skip for bytes after the last record read that are not just blank lines."""
    stream.seek(0, io.SEEK_END)
    size = stream.tell()
    if size <= last_end:
        return []
    stream.seek(last_end)
    if _blank(stream.read(1 << 16)):
        return []
    detail = (
        f"{source}@{last_end}: {size - last_end} bytes after the last whole record could not be "
        "read as a record (a cut gzip member or a truncated file)"
    )
    where = {"source_file": source, "record_offset": last_end, "record_length": size - last_end}
    return [{**_skip(where, "malformed_record", detail), "import_mode": mode}]


def _blank(data: bytes) -> bool:
    """Blank lines, or gzip members holding nothing but blank lines (some writers end a file
    with an empty member)."""
    import zlib

    while data.strip():
        if not data.startswith(_GZIP_MAGIC):
            return False
        d = zlib.decompressobj(31)
        try:
            if d.decompress(data, 1 << 16).strip() or not d.eof:
                return False
        except zlib.error:
            return False
        data = d.unused_data
    return True


def _skip(row: dict[str, Any], reason: str, detail: str) -> dict[str, Any]:
    return {**row, "kind": "skip", "skip_reason": reason, "skip_detail": detail}


def _record_row(
    record,
    it,
    source: str,
    opts: ScanOptions,
    sink: _Sink | None,
    base: int = 0,
    spill: _Sink | None = None,
) -> dict[str, Any] | None:
    h = record.rec_headers
    rec_type = record.rec_type
    if rec_type is None and not h.headers:
        # an empty gzip member (no record), or a record warcio could not parse at all (a gzip
        # member of a converted ARC that opens with a blank line): the second is a skip
        head, _ = _read_capped(record.raw_stream, 1 << 12)
        it.read_to_end(record)
        if not head.strip():
            return None
        where = {"source_file": source, "url": None, "record_type": None}
        where.update(record_offset=it.get_record_offset(), record_length=it.get_record_length())
        first = head.strip().splitlines()[0][:120].decode("latin-1")
        detail = f"{source}@{where['record_offset']}: no record header could be read: {first!r}"
        return _skip(where, "malformed_record", detail)
    url = h.get_header("WARC-Target-URI") or (
        h.get_header("uri") if record.format != "warc" else None
    )
    url = page_url(url)[0] if url else url  # the URL every row of it is kept and keyed under
    row: dict[str, Any] = {
        "source_file": source,
        "record_type": rec_type,
        "warc_record_id": h.get_header("WARC-Record-ID"),
        "capture_time": h.get_header("WARC-Date") or _arc_date(h.get_header("archive-date")),
        "url": url,
        "payload_digest": h.get_header("WARC-Payload-Digest"),
    }

    def place() -> dict[str, Any]:  # (the offset is known once the record is read)
        row["record_offset"] = it.get_record_offset()
        row["record_length"] = it.get_record_length()
        if _from_arc(record, it):  # the same id every import (warcio's conversion draws one)
            row["warc_record_id"] = arc_record_id(source, base + row["record_offset"])
        return row

    if rec_type in NOT_PAGES:
        return _skip(place(), rec_type, NOT_PAGES[rec_type])
    if rec_type == "revisit":
        row["refers_to"] = h.get_header("WARC-Refers-To")
        row["refers_to_uri"] = h.get_header("WARC-Refers-To-Target-URI")
        if record.http_headers is not None:  # the revisit's own response may opt out
            _header_optout(row, record.http_headers.headers, opts)
        return _skip(place(), "revisit", "revisit record (resolved against the import's payloads)")
    if rec_type not in ("response", "resource"):
        return _skip(place(), "record_type", f"{rec_type} record: only responses are pages")
    if not url:
        return _skip(place(), "missing_target_uri", "response without WARC-Target-URI")
    segment = h.get_header("WARC-Segment-Number")
    if segment:
        return _skip(
            place(),
            "segmented",
            f"segment {segment} of a segmented record (its continuation records hold the rest of "
            "the body; only whole records are read)",
        )
    if not url.startswith(("http://", "https://")):
        return _skip(place(), "not_http", f"{url[:200]}: only http(s) responses are web pages")
    truncated = h.get_header("WARC-Truncated")
    status, headers = 200, {}
    x_robots: list[str] = []
    if record.http_headers is not None:
        code = record.http_headers.get_statuscode()
        status = int(code) if _STATUS.fullmatch(code or "") else None
        if status is None:
            line = (record.http_headers.statusline or "")[:100]
            return _skip(
                place(),
                "no_http_headers",
                f"the record's block does not begin with an HTTP status line of three digits "
                f"({line!r})",
            )
        for k, v in record.http_headers.headers:
            k = k.lower()
            if k in _LIST_HEADERS and k in headers:  # `gzip` then `br` is `gzip, br`
                headers[k] += ", " + v
            headers.setdefault(k, v)
            if k == "x-robots-tag":
                x_robots.append(v)
        _header_optout(row, record.http_headers.headers, opts)  # kept on a skip too
    elif rec_type == "response":
        return _skip(place(), "no_http_headers", "response record without an HTTP response")
    else:
        headers["content-type"] = h.get_header("Content-Type") or ""
    raw, over = _read_capped(record.raw_stream, opts.max_record_bytes)
    if over:
        place()
        return _skip(
            row,
            "too_large",
            f"record body over {opts.max_record_bytes} bytes (streamed past, not stored); "
            "raise max_record_bytes to keep it",
        )
    it.read_to_end(record)  # completes the digest check
    place()
    row["status"] = status
    row["content_type"] = headers.get("content-type")
    if truncated:
        return _skip(row, "truncated", f"WARC-Truncated: {truncated}: the body is not whole")
    left = getattr(record.raw_stream, "limit", 0) or 0
    from_arc = _from_arc(record, it)
    whole = _whole_arc_body(headers, raw) if left > 0 and from_arc else None
    if whole is not None:
        raw, left = raw[:whole], 0
    damage = record_damage(record, left)
    if damage is not None:
        return _skip(row, *damage)
    if status != 200:
        return _skip(row, "http_status", f"HTTP status {status}: only 200 responses are pages")
    body = raw
    where = f"{source}@{row['record_offset']}"
    try:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body, more = _read_capped(ChunkedDataReader(io.BytesIO(raw)), opts.max_record_bytes)
            if more:
                raise BadPage("too_large", f"{where}: de-chunked body over the cap")
        body = decode_content(body, headers.get("content-encoding"), opts.max_record_bytes, where)
    except BadPage as bad:
        return _skip(row, bad.reason, bad.detail)
    except Exception as exc:  # a chunk framing warcio refuses: one skip
        return _skip(row, "decode_error", f"{where}: {type(exc).__name__}: {exc}"[:500])
    if not html_type(headers.get("content-type"), body):
        ctype = (headers.get("content-type") or "none").split(";")[0].strip()
        return _skip(row, "not_html", f"Content-Type {ctype[:100]}: only HTML pages are imported")
    d, from_headers, from_meta = archived_directives(
        x_robots, body, opts.agent, opts.training_agent, headers.get("content-type")
    )
    if not row["payload_digest"]:
        row["payload_digest"] = _sha1_b32(raw)
    location = headers.get("location")
    row.update(
        kind="page",
        content_sha256=hashlib.sha256(body).hexdigest(),
        content_length=len(body),
        redirect_to=location,
        noindex=d.noindex,
        nofollow=d.nofollow,
        noai=d.noai,
        noimageai=d.noimageai,
        archived_x_robots="; ".join(x_robots) or None,
        archived_header_optout=",".join(from_headers) or None,
        archived_meta_optout=",".join(from_meta) or None,
    )
    if sink is None and spill is not None and _needs_copy(record):
        sink = spill
        row["import_mode"] = f"copied: {_UPPER_SCHEME}"
    if sink is not None:
        off, length = sink.write(record, raw, row["warc_record_id"], row["capture_time"])
        row.update(warc_file=sink.rel, warc_offset=off, warc_length=length)
    else:
        row.update(
            warc_file=_resolved(source),
            warc_offset=base + row["record_offset"],
            warc_length=row["record_length"],
        )
    return row


_UPPER_SCHEME = (
    "target URI with an upper-case scheme (HTTP://): copied under its lower-case URI, which "
    "extraction reads"
)


def _needs_copy(record) -> bool:
    """A page record extraction could not read where it is: its WARC-Target-URI's http(s)
    scheme is not in lower case (warcio then reads no HTTP headers)."""
    uri = (record.rec_headers.get_header("WARC-Target-URI") or "").strip().strip("<>")
    return lower_scheme(uri) != uri


def _header_optout(row: dict[str, Any], headers: list[tuple[str, str]], opts: ScanOptions) -> None:
    """The archived X-Robots-Tag of a response (a page, a skipped one, a revisit) and the
    noai/noimageai it carries, on its row: an opt-out in any capture of a URL is carried to the
    capture the import keeps (`crawlers.imports.run._repeats`)."""
    x_robots = [v for k, v in headers if k.lower() == "x-robots-tag"]
    if not x_robots:
        return
    d = Directives()
    apply_x_robots_tag(d, x_robots, opts.agent, opts.training_agent)
    words = [w for w, on in (("noai", d.noai), ("noimageai", d.noimageai)) if on]
    row["archived_x_robots"] = "; ".join(x_robots)
    row["archived_header_optout"] = ",".join(words) or None


def _whole_arc_body(headers: dict[str, str], raw: bytes) -> int | None:
    """The body's length when an ARC record that ends before its archive-length says (at the
    end of the file or of its gzip member) still holds the whole body its HTTP Content-Length
    gives, only line ends after it: ARC writers miscounted lengths (the record is converted and
    copied, so the copy has the right one). None otherwise."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return None
    length = headers.get("content-length", "").strip()
    if not length.isdigit() or int(length) > len(raw) or raw[int(length) :].strip():
        return None
    return int(length)


@functools.lru_cache(maxsize=256)
def _resolved(source: str) -> str:
    """The absolute path of a local source (once per file, not per record: resolve() stats every
    component of the path)."""
    return str(Path(local_path(source)).resolve())


def _from_arc(record, it) -> bool:
    """A record read from an ARC file (warcio converts them to WARC records as it reads)."""
    return record.format in ("arc", "arc2warc") or getattr(it.loader, "arc_seen", False)


def arc_record_id(source: str, offset: int) -> str:
    """The WARC-Record-ID of an ARC record (ARC has none; warcio's conversion draws a random one):
    a name-based UUID of the source file and the record's offset, the same every import."""
    import uuid

    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{source}#{offset}')}>"


def _arc_date(value: str | None) -> str | None:
    """An ARC archive-date (YYYYMMDDhhmmss) as an ISO 8601 UTC time."""
    if not value or len(value) < 14 or not value[:14].isdigit():
        return value
    v = value
    return f"{v[:4]}-{v[4:6]}-{v[6:8]}T{v[8:10]}:{v[10:12]}:{v[12:14]}Z"
