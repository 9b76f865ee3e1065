"""The one HTTP fetcher every crawl-side stage uses: `await fetcher.fetch(url) -> FetchResult`.

Policies wrap it as layers: the SSRF guard (literal hosts here, resolved names in the
resolver), politeness (each hop holds the host's slot), caps on body and decompressed size
(gzip bombs are stream-decompressed with a limit), content-type filtering and redirect
following with a loop check. Network failures become `FetchResult.error`, never exceptions.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

import aiohttp

from crawlers.crawl.politeness import HostGaveUpError, Politeness
from crawlers.crawl.ssrf import BlockedAddressError, GuardedResolver, check_literal

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CHUNK = 64 * 1024


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
    truncated: str | None = None  # WARC-Truncated reason ('length', 'time') when cut short
    remote_ip: str | None = None


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

    def header(self, name: str) -> str | None:
        """A response header of the last hop (case-insensitive), or None."""
        if not self.hops:
            return None
        low = name.lower()
        for key, value in self.hops[-1].response_headers:
            if key.lower() == low:
                return value
        return None

    @property
    def ok(self) -> bool:
        """True for a complete 2xx response with no error."""
        return self.error is None and self.status is not None and 200 <= self.status < 300


def now_iso() -> str:
    """UTC timestamp in WARC-Date form."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def mime_of(content_type: str) -> str:
    """'text/html; charset=utf-8' -> 'text/html'."""
    return content_type.split(";", 1)[0].strip().lower()


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
        mime = mime_of(content_type) or "application/octet-stream"
        for pattern in wanted_types if wanted_types is not None else self.wanted_types:
            if pattern in ("*", "*/*", mime) or (
                pattern.endswith("/*") and mime.startswith(pattern[:-1])
            ):
                return True
        return False

    async def fetch(
        self,
        url: str,
        *,
        max_redirects: int | None = None,
        wanted_types: tuple[str, ...] | None = None,
    ) -> FetchResult:
        """GET `url`, following up to `max_redirects` redirects (loops cut); never raises on network errors."""
        if self._session is None:
            raise RuntimeError("Fetcher must be used as 'async with Fetcher(...) as f'")
        limit = self.max_redirects if max_redirects is None else max_redirects
        result = FetchResult(url=url, final_url=url, status=None, fetched_at=now_iso())
        started = time.monotonic()
        visited = {url}
        current = url
        while True:
            hop = await self._one(current, result, wanted_types)
            if hop is not None:
                result.hops.append(hop)
            result.final_url = current
            location = result.header("location") if hop is not None else None
            if result.error or result.status not in REDIRECT_STATUSES or not location or limit <= 0:
                break
            target = urljoin(current, location.strip())
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
        self, url: str, result: FetchResult, wanted_types: tuple[str, ...] | None
    ) -> Hop | None:
        parts = urlsplit(url)
        host = parts.netloc.lower()
        try:
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"not an http(s) URL: {url!r}")
            check_literal(parts.hostname, self.allow_private)
        except (BlockedAddressError, ValueError) as exc:
            result.error = (
                f"ssrf-blocked: {exc}" if isinstance(exc, BlockedAddressError) else str(exc)
            )
            return None
        if self.politeness is None:
            return await self._request(url, result, wanted_types)
        try:
            async with self.politeness.slot(host):
                hop = await self._request(url, result, wanted_types)
        except HostGaveUpError as exc:
            result.error = f"host-gave-up: {exc}"
            return None
        retry_after = None
        for key, value in hop.response_headers if hop is not None else ():
            if key.lower() == "retry-after":
                retry_after = value
        # A network failure (no hop) counts as an error for backoff and the circuit breaker.
        self.politeness.record(host, hop.status if hop is not None else None, retry_after)
        return hop

    async def _request(
        self, url: str, result: FetchResult, wanted_types: tuple[str, ...] | None
    ) -> Hop | None:
        assert self._session is not None
        result.fetched_at = now_iso()
        result.status, result.error, result.body, result.content_type = None, None, b"", ""
        try:
            async with self._session.get(url, allow_redirects=False) as resp:
                peer = (
                    resp.connection.transport.get_extra_info("peername")
                    if resp.connection
                    else None
                )
                hop = Hop(
                    url=url,
                    status=resp.status,
                    reason=resp.reason or "",
                    http_version=f"{resp.version.major}.{resp.version.minor}",
                    request_headers=list(resp.request_info.headers.items()),
                    response_headers=[
                        (k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers
                    ],
                    remote_ip=peer[0] if peer else None,
                )
                result.status = resp.status
                result.content_type = resp.headers.get("Content-Type", "")
                if resp.status in REDIRECT_STATUSES:
                    return hop
                if 200 <= resp.status < 300 and not self.wanted(result.content_type, wanted_types):
                    result.error = (
                        f"unwanted-content-type: {mime_of(result.content_type) or '(none)'}"
                    )
                    return hop
                declared = resp.content_length
                if declared is not None and declared > self.max_body_bytes:
                    hop.truncated = "length"
                    result.error = (
                        f"body-too-large: Content-Length {declared} > {self.max_body_bytes}"
                    )
                    return hop
                raw = bytearray()
                async for chunk in resp.content.iter_chunked(CHUNK):
                    raw += chunk
                    if len(raw) > self.max_body_bytes:
                        del raw[self.max_body_bytes :]
                        hop.truncated = "length"
                        result.error = f"body-too-large: more than {self.max_body_bytes} bytes"
                        break
                hop.raw_body = bytes(raw)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            result.error = _describe(exc)
            return None
        if result.error is None:
            try:
                result.body = decode_body(
                    hop.raw_body,
                    resp.headers.get("Content-Encoding", ""),
                    self.max_decompressed_bytes,
                )
            except ValueError as exc:
                result.error = f"decode-error: {exc}"
        return hop
