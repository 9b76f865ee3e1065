"""One downloader: the Fetcher at the core, the crawl's policies as ordered layers around it.

Like Scrapy's downloader middlewares, each layer may answer a request before it reaches the
network (`process_request` returns a refusal `FetchResult`) and may look at every result on
its way back (`process_response` returns the result, or a new `Request` to send again). The
Fetcher never raises on network failures (they come back as `FetchResult.error`), so those
reach `process_response` too and there is no separate exception hook.

Default order, outermost first:

    SsrfLayer        refuses loopback/private/link-local/... targets (literals here, names after
                     resolving; the Fetcher's resolver checks again at connect time)
    RobotsLayer      robots.txt for both tokens: the crawl token decides the fetch, the
                     training token's decision is recorded on the result
    PolitenessLayer  robots Crawl-delay, abandoned hosts; the per-host slot itself is held by
                     the core around the socket, so the delay counts from the end of a request
    RetryLayer       429/5xx/transient network errors are sent again (the slot waits out the
                     backoff and Retry-After that politeness recorded)
    CapsLayer        content types per resource type and a byte budget per page (body and
                     decompression caps are enforced while streaming, in the core)

Redirects are followed hop by hop through every layer, so a redirect cannot lead around robots
or the SSRF guard. The crawler, the image fetch and every request a rendered page makes (the
browser has no network of its own) go through one `Downloader`.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.fetcher import REDIRECT_STATUSES, Fetcher, FetchResult, Hop, now_iso
from crawlers.crawl.politeness import RETRY_STATUSES, Politeness
from crawlers.crawl.robots_policy import ALLOWED, UNREACHABLE, RobotsFetch, RobotsPolicy
from crawlers.crawl.ssrf import (
    BlockedAddressError,
    allowance_lifts,
    blocked_reason,
    check_addresses,
    check_literal,
    connect_url,
    parse_ip_literal,
)
from crawlers.robots import RobotsTxt, origin_of

TRANSIENT_ERRORS = ("timeout", "connect-error", "connection-reset", "payload-error")
# Errors that mean a policy refused the request (nothing was sent to the target).
REFUSAL_PREFIXES = ("ssrf-blocked", "robots-", "host-gave-up", "page-budget", "not-fetched")
# What a browser sub-resource (script, XHR, fetch, stylesheet, frame) may be: text and
# application types, not images, media or fonts (those are fetched only when asked for as such).
SUBRESOURCE_TYPES = ("text/*", "application/*")
MEDIA_RESOURCES = frozenset({"image", "media", "font"})


def is_refusal(error: str | None) -> bool:
    """True when a result's error is a policy refusal rather than a network or HTTP failure."""
    return bool(error) and error.startswith(REFUSAL_PREFIXES)


@dataclass
class Request:
    """One hop to fetch, with what the layers decided about it so far."""

    url: str
    resource_type: str = "document"  # Playwright's resource types; 'document' for the crawl
    page: str | None = None  # the rendered page that asked, for per-page caps
    trusted_origin: str | None = None  # see SsrfLayer
    wanted_types: tuple[str, ...] | None = None
    attempt: int = 0
    meta: dict = field(default_factory=dict)
    headers: dict[str, str] | None = None  # extra request headers (a recrawl's validators)


def refusal(request: Request, error: str) -> FetchResult:
    """A result for a request a layer refused: nothing was sent."""
    return FetchResult(
        url=request.url, final_url=request.url, status=None, error=error, fetched_at=now_iso()
    )


class Layer:
    """A policy around the core fetch; override either hook."""

    name = "layer"

    async def process_request(self, request: Request) -> FetchResult | None:
        """Return a FetchResult to answer without fetching (a refusal), or None to go on."""
        return None

    async def process_response(
        self, request: Request, result: FetchResult
    ) -> FetchResult | Request:
        """Return the (possibly amended) result, or a Request to send again."""
        return result


class SsrfLayer(Layer):
    """Refuse non-public targets; allowing private networks lifts loopback and private ranges
    only (`ssrf.allowance_lifts`), never link-local (cloud metadata), multicast and the like.

    One exception keeps rendering a crawl of loopback/private sites possible without opening
    the whole private network: a request may carry `trusted_origin`, the origin of the page it
    belongs to, when that page's host is a private IP literal and the caller vouches for it
    (the render: a page that a crawl told to allow private networks fetched, never an imported
    record or any URL read from data alone; `RenderJob.trust_own_origin`). Only that exact
    origin (scheme, literal address and port) is let through, and only when its address is one
    the allowance would lift; every other private target stays refused. Names are never trusted
    this way (a name can be rebound).
    """

    name = "ssrf"

    def __init__(self, allow_private: bool, trusted: set[str], dns_ttl_s: float = 300.0):
        self.allow_private = allow_private
        self.trusted = trusted  # origins granted trust so far (the robots fetch follows them)
        self.dns_ttl_s = dns_ttl_s
        self._dns: dict[str, tuple[float, str | None]] = {}

    async def process_request(self, request: Request) -> FetchResult | None:
        try:
            # The host as the connection will use it (yarl: IDNA/NFKC-mapped, so every spelling
            # of an address is decided as that address), not the string as written.
            target = connect_url(request.url)
        except ValueError as exc:
            return refusal(request, f"not-fetched: {exc}")
        host = target.raw_host or ""
        addr = parse_ip_literal(host)
        if addr is not None:
            reason = blocked_reason(addr)
            if reason is None or (self.allow_private and allowance_lifts(addr)):
                return None
            origin = origin_of(request.url)
            trusted = request.trusted_origin and origin == request.trusted_origin
            if trusted and allowance_lifts(addr):
                self.trusted.add(origin)
                request.meta["ssrf"] = "trusted-origin"
                return None
            return refusal(request, f"ssrf-blocked: {BlockedAddressError(host, str(addr), reason)}")
        try:
            check_literal(host, self.allow_private)  # non-canonical numeric hosts: 2130706433
        except BlockedAddressError as exc:
            return refusal(request, f"ssrf-blocked: {exc}")
        if self.allow_private:
            # A name is judged where the connection resolves it (the Fetcher's GuardedResolver,
            # under the same allowance), not resolved a second time here.
            return None
        blocked = await self._resolve_check(host, target.port)
        return refusal(request, f"ssrf-blocked: {blocked}") if blocked else None

    async def _resolve_check(self, host: str, port: int | None) -> str | None:
        now = time.monotonic()
        cached = self._dns.get(host)
        if cached and cached[0] > now:
            return cached[1]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port or 80, type=socket.SOCK_STREAM
            )
        except OSError:
            return None  # unresolvable: the fetch reports the DNS error itself
        try:
            check_addresses(host, sorted({i[4][0] for i in infos}), False)
            verdict = None
        except BlockedAddressError as exc:
            verdict = str(exc)
        self._dns[host] = (now + self.dns_ttl_s, verdict)
        return verdict


class RobotsLayer(Layer):
    """robots.txt for both tokens, fetched once per origin through the downloader's core."""

    name = "robots"

    def __init__(self, robots: RobotsPolicy, politeness: Politeness):
        self.robots, self.politeness = robots, politeness

    async def process_request(self, request: Request) -> FetchResult | None:
        crawl, training, robots = await self.robots.decide(request.url)
        host = urlsplit(request.url).netloc.lower()
        await self.politeness.resolve(host)  # the Crawl-delay belongs to the server's key
        self.politeness.set_crawl_delay(host, robots.crawl_delay(self.robots.agent))
        request.meta["robots"] = (crawl, training)
        if crawl != ALLOWED:
            error = f"robots-{crawl}: robots.txt for {self.robots.agent}"
            if crawl == UNREACHABLE:
                error += self._unreachable(request.url, robots)
            res = refusal(request, error)
            res.robots_crawl, res.robots_training = crawl, training
            return res
        return None

    def _unreachable(self, url: str, robots: RobotsTxt) -> str:
        """' at <robots.txt URL>: <why>' for an unreachable robots.txt: the last failure once
        given up on (a TLS or connection error, an HTTP status), else its policy's reason."""
        origin = origin_of(url)
        cause = self.robots.gave_up.get(origin) or robots.reason
        return f" at {origin}/robots.txt: {cause}"

    async def process_response(self, request: Request, result: FetchResult) -> FetchResult:
        if "robots" in request.meta:
            result.robots_crawl, result.robots_training = request.meta["robots"]
        return result


class PolitenessLayer(Layer):
    """Refuses servers whose circuit breaker gave up; the slot is held in the core fetch.

    Politeness is keyed per server (by resolved IP by default), so a page's sub-requests to
    several names on one machine share one pace.
    """

    name = "politeness"

    def __init__(self, politeness: Politeness):
        self.politeness = politeness

    async def process_request(self, request: Request) -> FetchResult | None:
        host = urlsplit(request.url).netloc.lower()
        await self.politeness.resolve(host)
        if self.politeness.gave_up(host):
            return refusal(request, f"host-gave-up: {host}: circuit breaker open; host abandoned")
        return None


class RetryLayer(Layer):
    """Send again after 429/5xx or a transient network error, up to `max_retries` times."""

    name = "retry"

    def __init__(self, max_retries: int, politeness: Politeness):
        self.max_retries, self.politeness = max_retries, politeness

    async def process_response(
        self, request: Request, result: FetchResult
    ) -> FetchResult | Request:
        transient = result.status in RETRY_STATUSES or (
            result.status is None and (result.error or "").startswith(TRANSIENT_ERRORS)
        )
        host = urlsplit(request.url).netloc.lower()
        if not transient or request.attempt >= self.max_retries or self.politeness.gave_up(host):
            return result
        # No sleep here: politeness.record() pushed the host's next slot past the backoff.
        return Request(
            request.url,
            request.resource_type,
            request.page,
            request.trusted_origin,
            request.wanted_types,
            request.attempt + 1,
            headers=request.headers,
        )


class CapsLayer(Layer):
    """Content types by resource type, and a byte budget per rendered page."""

    name = "caps"

    def __init__(self, document_types: tuple[str, ...], max_page_bytes: int | None):
        self.document_types = document_types
        self.max_page_bytes = max_page_bytes
        self.page_bytes: dict[str, int] = {}

    async def process_request(self, request: Request) -> FetchResult | None:
        if request.wanted_types is None:
            if request.resource_type == "document" and request.page is None:
                request.wanted_types = self.document_types
            elif request.resource_type in MEDIA_RESOURCES:
                request.wanted_types = ("*",)  # asked for as media: a render that keeps media
            else:
                request.wanted_types = SUBRESOURCE_TYPES
        if request.page is not None and self.max_page_bytes is not None:
            used = self.page_bytes.get(request.page, 0)
            if used >= self.max_page_bytes:
                return refusal(
                    request,
                    f"page-budget: the page's sub-resources already took {used} bytes "
                    f"(max_page_bytes={self.max_page_bytes})",
                )
        return None

    async def process_response(self, request: Request, result: FetchResult) -> FetchResult:
        if request.page is not None:
            self.page_bytes[request.page] = self.page_bytes.get(request.page, 0) + len(result.body)
        return result

    def forget(self, page: str) -> None:
        """Drop a finished page's budget."""
        self.page_bytes.pop(page, None)


class _RoutedFetcher:
    """What RobotsPolicy fetches robots.txt through: hop by hop, trusted origins on their own client.

    A redirect of a trusted origin's robots.txt to any other private target is refused by the
    guarded client, as every other request is; so is a hop into a trusted origin from another
    origin's robots.txt (the trust is the page's, for its own origin's requests).
    """

    def __init__(self, guarded: Fetcher, trusted: Fetcher | None, trusted_origins: set[str]):
        self.guarded, self.trusted, self.trusted_origins = guarded, trusted, trusted_origins

    def client_for(self, url: str, start: str | None = None) -> Fetcher:
        """The trusted client for a trusted origin (reached from `start`'s own origin, when
        given), the guarded one otherwise."""
        try:
            origin = origin_of(url)
            same = start is None or origin_of(start) == origin
        except ValueError:
            return self.guarded
        if self.trusted is not None and same and origin in self.trusted_origins:
            return self.trusted
        return self.guarded

    async def fetch(self, url: str, *, max_redirects: int | None = None, **options) -> FetchResult:
        """Fetcher.fetch, one hop at a time; other options (wanted_types, ...) go to each hop."""
        limit = 0 if max_redirects is None else max_redirects
        hops, visited, current = [], {url}, url
        while True:
            client = self.client_for(current, url)
            res = await client.fetch(current, max_redirects=0, **options)
            hops += res.hops
            res.hops, res.url = hops, url
            location = res.location()
            if res.error or res.status not in REDIRECT_STATUSES or not location or limit <= 0:
                return res
            target = urljoin(current, location)
            if target in visited:
                res.error = f"redirect-loop: {target}"
                return res
            if len(hops) > limit:
                res.error = f"too-many-redirects: more than {limit}"
                return res
            visited.add(target)
            current = target


class Downloader:
    """`async with Downloader(config) as d: await d.fetch(url)`: every policy, one code path.

    Components for callers that schedule themselves (the crawl engine): `.fetcher` (the guarded
    core Fetcher, redirects not followed), `.politeness`, `.robots` (a RobotsPolicy).
    """

    def __init__(
        self,
        config: CrawlConfig | dict | None = None,
        *,
        wanted_types: tuple[str, ...] | None = None,
        on_robots_fetch: Callable[[RobotsFetch], None] | None = None,
        max_page_bytes: int | None = None,
        layers: list[Layer] | None = None,
        header_gate: Callable[[Hop], str | None] | None = None,
    ):
        self.cfg = cfg = CrawlConfig.from_any(config)
        # Sees every layered request's 2xx headers before the body (robots.txt fetches excepted);
        # a string it returns refuses the body (Fetcher.fetch's header_gate). `fetch` also shows
        # it each 3xx hop's headers: a string it returns there ends the fetch with that error,
        # the redirect not followed.
        self.header_gate = header_gate
        self.politeness = Politeness(
            delay=cfg.delay,
            max_crawl_delay=cfg.max_crawl_delay,
            backoff_base=cfg.backoff_base,
            backoff_max=cfg.backoff_max,
            max_retry_after=cfg.max_retry_after,
            breaker_threshold=cfg.breaker_threshold,
            breaker_cooldown=cfg.breaker_cooldown,
            breaker_max_trips=cfg.breaker_max_trips,
            seed=cfg.seed,
            connections=cfg.per_host_connections,
            key_by=cfg.politeness_key,
        )
        self.user_agent = cfg.user_agent_header()
        self.fetcher = self._client(cfg.allow_private_networks)
        # Used only for trusted private IP-literal origins (SsrfLayer decides which), so its
        # resolver, which does not guard, is never asked to resolve a name.
        self._trusted_fetcher = None if cfg.allow_private_networks else self._client(True)
        self.trusted_origins: set[str] = set()
        self._routed = _RoutedFetcher(self.fetcher, self._trusted_fetcher, self.trusted_origins)
        self.robots = RobotsPolicy(
            self._routed,  # type: ignore[arg-type]  # same fetch() interface as Fetcher
            agent=cfg.agent,
            training_agent=cfg.training_agent,
            max_age_s=cfg.robots_max_age_s,
            max_redirects=cfg.robots_max_redirects,
            retries=cfg.robots_retries,
            retry_base_s=cfg.robots_retry_base_s,
            retry_max_s=cfg.robots_retry_max_s,
            give_up_s=cfg.robots_give_up_s,
            on_fetch=on_robots_fetch,
        )
        self.caps = CapsLayer(tuple(wanted_types or cfg.wanted_types), max_page_bytes)
        self.layers: list[Layer] = (
            layers
            if layers is not None
            else [
                SsrfLayer(cfg.allow_private_networks, self.trusted_origins),
                RobotsLayer(self.robots, self.politeness),
                PolitenessLayer(self.politeness),
                RetryLayer(cfg.max_retries, self.politeness),
                self.caps,
            ]
        )

    def _client(self, allow_private: bool) -> Fetcher:
        cfg = self.cfg
        return Fetcher(
            user_agent=self.user_agent,
            politeness=self.politeness,
            allow_private_networks=allow_private,
            connect_timeout=cfg.connect_timeout,
            read_timeout=cfg.read_timeout,
            total_timeout=cfg.total_timeout,
            max_body_bytes=cfg.max_body_bytes,
            max_decompressed_bytes=cfg.max_decompressed_bytes,
            wanted_types=tuple(cfg.wanted_types),
            max_redirects=0,
            max_connections=cfg.concurrency * 2,
        )

    async def __aenter__(self) -> Downloader:
        await self.fetcher.__aenter__()
        if self._trusted_fetcher is not None:
            try:
                await self._trusted_fetcher.__aenter__()
            except BaseException:
                await self.fetcher.__aexit__(None, None, None)
                raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.fetcher.__aexit__(*exc)
        finally:
            if self._trusted_fetcher is not None:
                await self._trusted_fetcher.__aexit__(*exc)

    async def fetch(
        self,
        url: str,
        *,
        resource_type: str = "document",
        page: str | None = None,
        trusted_origin: str | None = None,
        max_redirects: int | None = None,
        wanted_types: tuple[str, ...] | None = None,
        headers: dict[str, str] | None = None,
    ) -> FetchResult:
        """Fetch `url` through every layer, following redirects hop by hop; never raises on network errors.

        The result carries both robots decisions: the crawl token's of the last hop (every hop
        was allowed, or it was refused), the training token's the strictest of every hop's (an
        opt-out on the URL asked for follows it through a redirect to, say, a CDN that allows
        all); `final_url` is the last hop's URL. With a `header_gate`, a 3xx hop whose headers
        it refuses (X-Robots-Tag: noai) ends the fetch with its error: that hop's opt-out is
        the fetch's, and its target is not requested. `headers`
        (e.g. a recrawl's If-None-Match / If-Modified-Since) go with the first hop only.
        """
        limit = self.cfg.max_redirects if max_redirects is None else max_redirects
        hops, visited, current = [], {url}, url
        training: str | None = None  # the first hop's training decision that is not 'allowed'
        started = time.monotonic()
        while True:
            request = Request(current, resource_type, page, trusted_origin, wanted_types)
            request.headers = headers if current == url else None
            res = await self.handle(request)
            if training is None and res.robots_training not in (None, ALLOWED):
                training = res.robots_training
            hops += res.hops
            res.hops, res.url, res.final_url = hops, url, current
            if not res.error and res.status in REDIRECT_STATUSES:
                # The header gate sees a redirect's headers too: an opt-out said on any hop
                # (X-Robots-Tag: noai on the image URL's own 302) holds for what it leads to.
                refused = self._gate_redirect(res)
                if refused is not None:
                    res.error = refused
                    break
            location = res.location()
            if res.error or res.status not in REDIRECT_STATUSES or not location or limit <= 0:
                break
            target = urljoin(current, location)
            if target in visited:
                res.error = f"redirect-loop: {target}"
                break
            if len(visited) > limit:
                res.error = f"too-many-redirects: more than {limit}"
                break
            visited.add(target)
            current = target
        if training is not None:
            res.robots_training = training
        res.elapsed_s = time.monotonic() - started
        return res

    def _gate_redirect(self, res: FetchResult) -> str | None:
        """The header gate's refusal of a 3xx hop's headers (None: no gate, or it lets it by)."""
        if self.header_gate is None or not res.hops:
            return None
        return self.header_gate(res.hops[-1])

    async def handle(self, request: Request) -> FetchResult:
        """One hop through the layers (process_request outward-in, process_response back out)."""
        while True:
            result = None
            for layer in self.layers:
                result = await layer.process_request(request)
                if result is not None:
                    break
            if result is None:
                client = (
                    self._trusted_fetcher
                    if request.meta.get("ssrf") == "trusted-origin" and self._trusted_fetcher
                    else self.fetcher
                )
                result = await client.fetch(
                    request.url,
                    max_redirects=0,
                    wanted_types=request.wanted_types,
                    header_gate=self.header_gate,
                    headers=request.headers,
                )
            retry: Request | None = None
            for layer in reversed(self.layers):
                out = await layer.process_response(request, result)
                if isinstance(out, Request):
                    retry = out
                    break
                result = out
            if retry is None:
                return result
            request = retry
