"""The one HTTP fetcher every crawl-side stage uses: `await fetcher.fetch(url) -> FetchResult`.

Policies wrap it as layers: the SSRF guard (literal hosts here, resolved names in the
resolver), politeness (each hop holds the host's slot), caps on body and decompressed size
(gzip bombs are stream-decompressed with a limit), content-type filtering and redirect
following with a loop check. Network failures become `FetchResult.error`, never exceptions.
"""

from __future__ import annotations

import asyncio
import re
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

import aiohttp
from yarl import URL

from crawlers.crawl.politeness import HostGaveUpError, Politeness
from crawlers.crawl.ssrf import BlockedAddressError, GuardedResolver, check_url
from crawlers.robots import complete_lines

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CHUNK = 64 * 1024
# RFC 9309 section 2.5: crawlers parse at least the first 500 KiB of a robots.txt, whatever its size.
ROBOTS_MAX_BYTES = 500 * 1024
# A redirect's body is only kept for the WARC; this much is plenty for a "Moved" page.
REDIRECT_BODY_BYTES = 64 * 1024


@dataclass
class Hop:
    """One request/response exchange, kept whole for the WARC writer."""

    url: str
    status: int | None
    reason: str = ""
    http_version: str = "1.1"
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    raw_body: bytes = b""
    # WARC-Truncated reason when the stored body is not the whole body: 'length' (over a size
    # cap), 'time' / 'disconnect' (a redirect's body cut short) or 'unspecified' (not
    # downloaded at all, e.g. an unwanted content type).
    truncated: str | None = None
    remote_ip: str | None = None
    method: str = "GET"
    target: str = ""  # the request-target exactly as sent ('/path?query'); '' if unknown
    request_version: str = "1.1"  # HTTP version of the request line (http_version is the reply's)


@dataclass
class FetchResult:
    """The outcome of fetching one URL (after any redirects the caller allowed)."""

    url: str
    final_url: str
    status: int | None
    body: bytes = b""
    content_type: str = ""
    error: str | None = None
    hops: list[Hop] = field(default_factory=list)
    fetched_at: str = ""
    elapsed_s: float = 0.0
    robots_crawl: str | None = None
    robots_training: str | None = None
    # keep_prefix only: the body is the first bytes of a longer (decoded) body, cut to a line.
    truncated: bool = False

    def header(self, name: str) -> str | None:
        """A response header of the last hop (case-insensitive), or None."""
        if not self.hops:
            return None
        low = name.lower()
        for key, value in self.hops[-1].response_headers:
            if key.lower() == low:
                return value
        return None

    def location(self) -> str | None:
        """The last hop's Location header as a URL reference (`location_of`), or None."""
        value = self.header("location")
        return None if value is None else location_of(value)

    @property
    def ok(self) -> bool:
        """True for a complete 2xx response with no error."""
        return self.error is None and self.status is not None and 200 <= self.status < 300


def now_iso() -> str:
    """UTC timestamp in WARC-Date form."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_AUTHORITY = re.compile(rb"^(?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^/?#]*")


def location_of(value: str) -> str:
    """A Location header value as a URL reference. Header values are kept decoded as latin-1,
    byte for byte, so a non-ASCII character here is one raw byte. In the path, query and
    fragment those bytes are percent-encoded as they came (`/caf\xe9` -> `/caf%E9`; UTF-8
    `/caf\xc3\xa9` -> `/caf%C3%A9`), the address a browser asks for, never re-encoded as UTF-8
    (`/caf%C3%A9` for the latin-1 byte names another path). A host is text, not bytes: read as
    UTF-8 where its bytes are UTF-8, else as latin-1, and left for IDNA (and the SSRF guard)."""
    value = value.strip()
    if value.isascii():
        return value
    raw = b"".join(ch.encode("latin-1" if ord(ch) < 256 else "utf-8") for ch in value)
    m = _AUTHORITY.match(raw)
    head, rest = (raw[: m.end()], raw[m.end() :]) if m else (b"", raw)
    try:
        host = head.decode("utf-8")
    except UnicodeDecodeError:
        host = head.decode("latin-1")
    return host + "".join(chr(b) if b < 0x80 else f"%{b:02X}" for b in rest)


def mime_of(content_type: str) -> str:
    """'text/html; charset=utf-8' -> 'text/html'."""
    return content_type.split(";", 1)[0].strip().lower()


# File extensions that name a media type whatever the server: links to them are files, not pages.
# Page-generating extensions (.php, .aspx, .jsp, .html, ...) and .xml (feeds, XHTML) are not here.
_EXTENSION_TYPES = {
    **dict.fromkeys(("jpg", "jpeg", "jpe", "jfif"), "image/jpeg"),
    **{e: f"image/{e}" for e in ("png", "gif", "webp", "bmp", "avif", "heic", "tiff")},
    "tif": "image/tiff",
    "svg": "image/svg+xml",
    "ico": "image/x-icon",
    **{e: f"audio/{e}" for e in ("mp3", "wav", "ogg", "flac", "aac", "m4a", "opus")},
    **{e: f"video/{e}" for e in ("mp4", "m4v", "webm", "mov", "avi", "mkv", "wmv", "flv")},
    **{e: f"font/{e}" for e in ("woff", "woff2", "ttf", "otf")},
    "eot": "application/vnd.ms-fontobject",
    "pdf": "application/pdf",
    **dict.fromkeys(("zip", "gz", "tgz", "bz2", "xz", "7z", "rar", "tar"), "application/zip"),
    **dict.fromkeys(
        ("exe", "msi", "dmg", "apk", "iso", "bin", "deb", "rpm"), "application/octet-stream"
    ),
    **dict.fromkeys(
        ("doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "epub"), "application/msword"
    ),
    "css": "text/css",
    "js": "application/javascript",
    "mjs": "application/javascript",
    "json": "application/json",
    "csv": "text/csv",
}


def type_wanted(content_type: str, wanted_types: tuple[str, ...] | list[str]) -> bool:
    """Whether a type matches one of `wanted_types` ('*' or 'image/*' patterns work)."""
    mime = mime_of(content_type) or "application/octet-stream"
    for pattern in wanted_types:
        pattern = pattern.lower()
        if pattern in ("*", "*/*", mime) or (
            pattern.endswith("/*") and mime.startswith(pattern[:-1])
        ):
            return True
    return False


def type_by_extension(url: str) -> str | None:
    """The media type a URL's file extension names (`/a/photo.JPG` -> image/jpeg), or None for
    paths without one or with a page-generating or unknown one."""
    last = urlsplit(url).path.rsplit("/", 1)[-1]
    if "." not in last:
        return None
    return _EXTENSION_TYPES.get(last.rsplit(".", 1)[1].lower())


def decode_body(raw: bytes, encoding: str, limit: int) -> bytes:
    """Undo Content-Encoding with a cap on output size; ValueError names the problem."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding in ("gzip", "x-gzip"):
        decoders = [zlib.decompressobj(16 + zlib.MAX_WBITS)]
    elif encoding == "deflate":  # servers send either zlib-wrapped or raw deflate
        decoders = [zlib.decompressobj(zlib.MAX_WBITS), zlib.decompressobj(-zlib.MAX_WBITS)]
    else:
        raise ValueError(f"unsupported content-encoding {encoding!r}")
    last: Exception | None = None
    for dec in decoders:
        try:
            out = bytearray()
            data = raw
            while data:
                # max_length bounds memory per step: a bomb stops at the limit, never expands fully.
                out += dec.decompress(data, CHUNK)
                if len(out) > limit:
                    raise ValueError(f"decompressed body exceeds {limit} bytes (compression bomb?)")
                data = dec.unconsumed_tail
            out += dec.flush()
            if len(out) > limit:
                raise ValueError(f"decompressed body exceeds {limit} bytes (compression bomb?)")
            return bytes(out)
        except zlib.error as exc:
            last = exc
    raise ValueError(f"corrupt {encoding} body: {last}")


class PrefixDecoder:
    """Undo Content-Encoding chunk by chunk, keeping at most `limit` decoded bytes.

    Used where the first bytes of a body are what matters whatever its size (robots.txt): a
    truncated gzip stream still yields its decoded prefix, and decoding stops at the limit, so a
    compression bomb costs no more than `limit` bytes. ValueError names a corrupt or unsupported
    encoding.
    """

    def __init__(self, encoding: str, limit: int):
        self.encoding = encoding.strip().lower()
        self.limit = limit
        self.out = bytearray()
        self.full = False  # True once `limit` decoded bytes are held (the rest is not needed)
        self.dropped = False  # True once some input could not be kept (the body is cut)
        # 'deflate' comes zlib-wrapped or raw: input is kept until the first output tells which.
        self._raw: bytearray | None = bytearray() if self.encoding == "deflate" else None
        if self.encoding in ("", "identity"):
            self._dec = None
        elif self.encoding in ("gzip", "x-gzip"):
            self._dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self.encoding == "deflate":
            self._dec = zlib.decompressobj(zlib.MAX_WBITS)
        else:
            raise ValueError(f"unsupported content-encoding {encoding!r}")

    @property
    def encoded(self) -> bool:
        """True for gzip/deflate input (raw bytes are not the decoded bytes)."""
        return self._dec is not None

    def feed(self, data: bytes) -> None:
        """Decode one more chunk of the raw body (ignored once full)."""
        if self.full or not data:
            return
        if self._dec is None:
            room = self.limit - len(self.out)
            self.dropped |= len(data) > room
            self.out += data[:room]
        else:
            if self._raw is not None:
                self._raw += data
            try:
                self._inflate(data)
            except zlib.error as exc:
                if self._raw is None:
                    raise ValueError(f"corrupt {self.encoding} body: {exc}") from exc
                raw, self._raw = bytes(self._raw), None
                self._dec, self.out = zlib.decompressobj(-zlib.MAX_WBITS), bytearray()
                try:
                    self._inflate(raw)
                except zlib.error as exc2:
                    raise ValueError(f"corrupt {self.encoding} body: {exc2}") from exc2
            if self.out:
                self._raw = None
        self.full = len(self.out) >= self.limit

    def _inflate(self, data: bytes) -> None:
        assert self._dec is not None
        while data and len(self.out) < self.limit and not self._dec.eof:
            self.out += self._dec.decompress(data, self.limit - len(self.out))
            data = self._dec.unconsumed_tail
        self.dropped |= bool(data) or (len(self.out) >= self.limit and not self._dec.eof)

    def result(self, *, cut_to_line: bool) -> bytes:
        """The decoded prefix; when it is cut and `cut_to_line`, without its last partial line."""
        if self._dec is not None and not self.full:
            try:
                self.out += self._dec.flush()[: self.limit - len(self.out)]
            except zlib.error as exc:
                raise ValueError(f"corrupt {self.encoding} body: {exc}") from exc
        body = bytes(self.out[: self.limit])
        if cut_to_line and self.dropped:
            # A line cut in the middle ('Allow: /p' of 'Allow: /private') must not be read whole;
            # CR, LF and CRLF each end a line, as robots.txt's parser reads them.
            body = complete_lines(body)
        return body


def _describe(exc: BaseException) -> str:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BlockedAddressError):
            return f"ssrf-blocked: {seen}"
        seen = getattr(seen, "os_error", None) or seen.__cause__ or seen.__context__
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return "timeout"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"connect-error: {exc.os_error or exc}"
    if isinstance(exc, aiohttp.ServerDisconnectedError | ConnectionResetError):
        return "connection-reset"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return f"payload-error: {exc}"
    return f"{type(exc).__name__}: {exc}"


class Fetcher:
    """Async HTTP fetcher with the crawl's safety and politeness policies; use as a context manager."""

    def __init__(
        self,
        *,
        user_agent: str,
        politeness: Politeness | None = None,
        allow_private_networks: bool = False,
        connect_timeout: float = 10.0,
        read_timeout: float = 20.0,
        total_timeout: float = 60.0,
        max_body_bytes: int = 5 * 2**20,
        max_decompressed_bytes: int = 20 * 2**20,
        wanted_types: tuple[str, ...] = ("text/html", "application/xhtml+xml"),
        max_redirects: int = 0,
        max_connections: int = 100,
    ):
        self.user_agent = user_agent
        self.politeness = politeness
        self.allow_private = allow_private_networks
        self.timeout = aiohttp.ClientTimeout(
            total=total_timeout, sock_connect=connect_timeout, sock_read=read_timeout
        )
        self.max_body_bytes, self.max_decompressed_bytes = max_body_bytes, max_decompressed_bytes
        self.wanted_types = tuple(t.lower() for t in wanted_types)
        self.max_redirects = max_redirects
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Fetcher:
        connector = aiohttp.TCPConnector(
            limit=self.max_connections,
            resolver=GuardedResolver(self.allow_private),
            ttl_dns_cache=300,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=self.timeout,
            auto_decompress=False,  # the raw bytes go to WARC; we decompress with a cap
            headers={"User-Agent": self.user_agent, "Accept-Encoding": "gzip, deflate"},
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        # aiohttp silently re-sends an idempotent request when a kept-alive connection drops; that
        # second request would bypass politeness, so failures surface here and are retried later.
        if hasattr(self._session, "_retry_connection"):
            self._session._retry_connection = False
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def wanted(self, content_type: str, wanted_types: tuple[str, ...] | None = None) -> bool:
        """Whether a response of this type should be downloaded; '*' or 'image/*' patterns work."""
        return type_wanted(
            content_type, self.wanted_types if wanted_types is None else wanted_types
        )

    async def fetch(
        self,
        url: str,
        *,
        max_redirects: int | None = None,
        wanted_types: tuple[str, ...] | None = None,
        keep_prefix: int | None = None,
        header_gate: Callable[[Hop], str | None] | None = None,
        headers: Mapping[str, str] | None = None,
        count_errors: bool = True,
    ) -> FetchResult:
        """GET `url`, following up to `max_redirects` redirects (loops cut); never raises on network errors.

        `headers` go with the request for `url` only, not with redirect hops (a recrawl's
        conditional If-None-Match / If-Modified-Since belong to the URL they were stored for).

        `header_gate(hop)` sees each 2xx response's headers before its body is read; a string it
        returns becomes `result.error` and the body is not downloaded (the image fetch refuses
        `X-Robots-Tag: noai` this way).

        `keep_prefix=N` reads at most N decoded bytes and keeps them instead of failing on an
        oversized body (Content-Length or not, chunked, gzip/deflate): the body is the first N
        bytes cut back to the last complete line (CR, LF or CRLF), `result.truncated` is set,
        and the hop is marked truncated ('length') when its stored raw body is not whole.
        robots.txt is read this way (ROBOTS_MAX_BYTES), so a huge file is never taken as empty.

        `count_errors=False`: a 5xx/429 answer, a timeout or a reset does not count toward the
        server's backoff and circuit breaker (a robots.txt outage's re-checks have their own
        backoff; its first failure counts, so a server down for many hosts is still given up on).
        """
        if self._session is None:
            raise RuntimeError("Fetcher must be used as 'async with Fetcher(...) as f'")
        if keep_prefix is not None and keep_prefix <= 0:
            raise ValueError(f"keep_prefix must be a positive byte count, got {keep_prefix}")
        limit = self.max_redirects if max_redirects is None else max_redirects
        result = FetchResult(url=url, final_url=url, status=None, fetched_at=now_iso())
        started = time.monotonic()
        visited = {url}
        current = url
        while True:
            extra = headers if current == url else None
            hop = await self._one(
                current, result, wanted_types, keep_prefix, header_gate, extra, count_errors
            )
            if hop is not None:
                result.hops.append(hop)
            result.final_url = current
            location = result.location() if hop is not None else None
            if result.error or result.status not in REDIRECT_STATUSES or not location or limit <= 0:
                break
            target = urljoin(current, location)
            if target in visited:
                result.error = f"redirect-loop: {target}"
                break
            if len(result.hops) > limit:
                result.error = f"too-many-redirects: more than {limit}"
                break
            visited.add(target)
            current = target
        result.elapsed_s = time.monotonic() - started
        return result

    async def _one(
        self,
        url: str,
        result: FetchResult,
        wanted_types: tuple[str, ...] | None,
        keep_prefix: int | None = None,
        header_gate: Callable[[Hop], str | None] | None = None,
        headers: Mapping[str, str] | None = None,
        count_errors: bool = True,
    ) -> Hop | None:
        host = urlsplit(url).netloc.lower()
        try:
            # The host decided on is the host aiohttp connects to: yarl's parse of the URL (IDNA/
            # NFKC-mapped, so '１２７.０.０.１' is 127.0.0.1), and that parsed URL is what is sent.
            target = check_url(url, self.allow_private)
        except (BlockedAddressError, ValueError) as exc:
            result.error = (
                f"ssrf-blocked: {exc}" if isinstance(exc, BlockedAddressError) else str(exc)
            )
            return None
        if self.politeness is None:
            return await self._request(
                url, result, wanted_types, keep_prefix, header_gate, headers, target
            )
        try:
            async with self.politeness.slot(host):
                hop = await self._request(
                    url, result, wanted_types, keep_prefix, header_gate, headers, target
                )
                retry_after = None
                for key, value in hop.response_headers if hop is not None else ():
                    if key.lower() == "retry-after":
                        retry_after = value
                # Recorded while the slot is still held: releasing it wakes the waiters, and one
                # that ran before the Retry-After/backoff was applied would start inside the pause.
                # A network failure (no hop) counts as an error for backoff and the circuit
                # breaker, unless the caller keeps its own backoff (robots.txt re-checks: resets
                # or timeouts for minutes must not get the host abandoned before robots_give_up_s).
                self.politeness.record(
                    host,
                    hop.status if hop is not None else None,
                    retry_after,
                    count_error=count_errors,
                )
        except HostGaveUpError as exc:
            result.error = f"host-gave-up: {exc}"
            return None
        return hop

    async def _request(
        self,
        url: str,
        result: FetchResult,
        wanted_types: tuple[str, ...] | None,
        keep_prefix: int | None = None,
        header_gate: Callable[[Hop], str | None] | None = None,
        headers: Mapping[str, str] | None = None,
        target: URL | None = None,
    ) -> Hop | None:
        assert self._session is not None
        target = target if target is not None else check_url(url, self.allow_private)
        result.fetched_at = now_iso()
        result.status, result.error, result.body, result.content_type = None, None, b"", ""
        result.truncated = False
        prefix: PrefixDecoder | None = None
        try:
            async with self._session.get(target, allow_redirects=False, headers=headers) as resp:
                peer = (
                    resp.connection.transport.get_extra_info("peername")
                    if resp.connection
                    else None
                )
                info = resp.request_info
                hop = Hop(
                    url=url,
                    status=resp.status,
                    reason=resp.reason or "",
                    http_version=f"{resp.version.major}.{resp.version.minor}",
                    request_headers=list(info.headers.items()),
                    response_headers=[
                        (k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers
                    ],
                    remote_ip=peer[0] if peer else None,
                    method=info.method,
                    target=info.url.raw_path_qs,  # what aiohttp put on the request line
                    request_version=self._request_version(),
                )
                result.status = resp.status
                result.content_type = resp.headers.get("Content-Type", "")
                declared = resp.content_length
                if resp.status in REDIRECT_STATUSES:
                    # Kept for the WARC only, so a small cap; a longer body is marked truncated.
                    cap = min(self.max_body_bytes, REDIRECT_BODY_BYTES)
                    try:
                        hop.raw_body, cut = await self._read_capped(resp, cap)
                        hop.truncated = "length" if cut else None
                    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                        # The redirect itself arrived; only its body is incomplete.
                        hop.truncated = "time" if isinstance(exc, TimeoutError) else "disconnect"
                    return hop
                refused = header_gate(hop) if header_gate and 200 <= resp.status < 300 else None
                if refused:
                    hop.truncated = "unspecified"  # headers only: the body is never read
                    result.error = refused
                    return hop
                if 200 <= resp.status < 300 and not self.wanted(result.content_type, wanted_types):
                    hop.truncated = "unspecified"  # the record carries headers, not the body
                    result.error = (
                        f"unwanted-content-type: {mime_of(result.content_type) or '(none)'}"
                    )
                    return hop
                if keep_prefix is not None:
                    prefix = await self._read_prefix(resp, hop, result, keep_prefix)
                elif declared is not None and declared > self.max_body_bytes:
                    hop.truncated = "length"
                    result.error = (
                        f"body-too-large: Content-Length {declared} > {self.max_body_bytes}"
                    )
                    return hop
                else:
                    hop.raw_body, cut = await self._read_capped(resp, self.max_body_bytes)
                    if cut:
                        hop.truncated = "length"
                        result.error = f"body-too-large: more than {self.max_body_bytes} bytes"
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            result.error = _describe(exc)
            return None
        except UnicodeError as exc:  # a host IDNA cannot encode ('a..test', from a redirect)
            result.error = f"bad-url: {url!r}: {exc}"[:500]
            return None
        if prefix is not None:
            try:
                result.body = prefix.result(cut_to_line=True)
                result.truncated = prefix.dropped
            except ValueError as exc:
                result.error = f"decode-error: {exc}"
        elif result.error is None:
            try:
                result.body = decode_body(
                    hop.raw_body,
                    resp.headers.get("Content-Encoding", ""),
                    self.max_decompressed_bytes,
                )
            except ValueError as exc:
                result.error = f"decode-error: {exc}"
        return hop

    async def _read_prefix(
        self, resp: aiohttp.ClientResponse, hop: Hop, result: FetchResult, keep_prefix: int
    ) -> PrefixDecoder | None:
        """Read until `keep_prefix` decoded bytes are held (keep_prefix mode); the raw bytes
        read go to the hop. None, with result.error set, when the encoding cannot be decoded."""
        try:
            prefix = PrefixDecoder(resp.headers.get("Content-Encoding", ""), keep_prefix)
        except ValueError as exc:
            result.error = f"decode-error: {exc}"
            hop.truncated = "unspecified"  # not read at all
            return None
        raw = bytearray()
        raw_cap = max(self.max_body_bytes, keep_prefix)
        ended = False
        try:
            async for chunk in resp.content.iter_chunked(CHUNK):
                raw += chunk
                prefix.feed(chunk)  # a no-op once full
                # Plain bodies stop at the prefix; compressed ones are small, so the raw stream
                # is read on (not decoded) up to the cap and the WARC record stays whole.
                if len(raw) >= raw_cap or (prefix.full and not prefix.encoded):
                    break
            else:
                ended = True
        except ValueError as exc:  # corrupt gzip/deflate: nothing trustworthy to parse
            result.error = f"decode-error: {exc}"
            prefix = None
        declared = resp.content_length
        whole = ended or resp.content.at_eof() or (declared is not None and len(raw) >= declared)
        if len(raw) > raw_cap or not whole:
            hop.truncated = "length"  # the stored raw body is not the whole body
            if prefix is not None:
                prefix.dropped = True  # ... so the decoded prefix is not the whole file either
        del raw[raw_cap:]
        hop.raw_body = bytes(raw)
        return prefix

    def _request_version(self) -> str:
        version = getattr(self._session, "version", None)
        return f"{version.major}.{version.minor}" if version is not None else "1.1"

    @staticmethod
    async def _read_capped(resp: aiohttp.ClientResponse, cap: int) -> tuple[bytes, bool]:
        """Up to `cap` bytes of the body, and whether there was more (the rest is not read)."""
        if resp.content_length is not None and resp.content_length > cap:
            # Declared too large: nothing is read, the connection is dropped with the response.
            return b"", True
        raw = bytearray()
        async for chunk in resp.content.iter_chunked(CHUNK):
            raw += chunk
            if len(raw) > cap:
                del raw[cap:]
                return bytes(raw), True
        return bytes(raw), False
