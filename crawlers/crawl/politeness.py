"""Politeness per server: K connections (1 by default), a minimum delay, Retry-After, backoff, breaker.

Every request goes through `Politeness.slot(host)`. The slot is keyed on the server, not on the
URL's `host:port`: by default on the host's resolved IP address (fifty subdomains on one machine
share one slot), optionally on the registered domain (`key_by="domain"`, public suffix list) or on
`host:port` (`key_by="host"`, the old behaviour). Each key allows `connections` requests at once,
and a request may start only `delay` seconds after the previous one to that key finished (or
later: Crawl-delay, Retry-After, backoff, the circuit breaker).
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import random
import re
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
KEY_BY = ("ip", "domain", "host")
Resolver = Callable[[str], Awaitable[str | None]]


_DELTA_SECONDS = re.compile(r"[0-9]+")


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date); None if absent/bad.

    Never raises: delta-seconds are ASCII digits only (`str.isdigit` also takes '²' or '١',
    which float() refuses), and a date no calendar holds is as bad as any other garbage.
    """
    if not value:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
        if when is None:
            return None
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None


def hostname_of(host: str) -> str:
    """'Sub.Example.com:8080' -> 'sub.example.com'; '[::1]:80' -> '::1'."""
    return (urlsplit("//" + host).hostname or host).lower()


def ip_literal(name: str) -> str | None:
    """The normalised address if `name` is an IP literal, else None."""
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return None


def registered_domain(name: str) -> str:
    """'a.b.example.co.uk' -> 'example.co.uk' (public suffix list); IPs and bare names unchanged."""
    if ip_literal(name) is not None or "." not in name:
        return name
    try:
        from tld import get_fld  # bundled public suffix list (installed with trafilatura/courlan)

        fld = get_fld(name, fix_protocol=True, fail_silently=True)
    except ImportError:  # pragma: no cover - tld ships with the project's dependencies
        fld = None
    return fld or ".".join(name.split(".")[-2:])


async def resolve_ip(name: str) -> str | None:
    """First address the system resolver gives for a name (None when it does not resolve)."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    addrs = sorted({info[4][0] for info in infos})
    return addrs[0] if addrs else None


@dataclass
class HostState:
    """What politeness knows about one key (server): its pacing, errors and breaker."""

    delay: float
    next_at: float = 0.0  # monotonic time before which no request may start
    consecutive_errors: int = 0
    breaker_until: float = 0.0
    breaker_trips: int = 0
    requests: int = 0
    in_flight: int = 0
    reopened: int = 0  # times an abandoned key was let try again (each doubles its cool-down)
    cond: asyncio.Condition | None = field(default=None, repr=False)


class Politeness:
    """Request pacing per server shared by every fetch of one crawl (or one image-stage run)."""

    def __init__(
        self,
        *,
        delay: float = 1.0,
        max_crawl_delay: float = 10.0,
        backoff_base: float = 1.0,
        backoff_max: float = 120.0,
        max_retry_after: float = 300.0,
        breaker_threshold: int = 5,
        breaker_cooldown: float = 30.0,
        breaker_max_trips: int = 3,
        seed: int = 0,
        connections: int = 1,
        key_by: str = "ip",
        resolver: Resolver | None = None,
    ):
        if key_by not in KEY_BY:
            raise ValueError(f"key_by={key_by!r}: expected one of {', '.join(KEY_BY)}")
        if connections < 1:
            raise ValueError(f"connections={connections}: must be at least 1")
        self.default_delay = delay
        self.max_crawl_delay = max_crawl_delay
        self.backoff_base, self.backoff_max = backoff_base, backoff_max
        self.max_retry_after = max_retry_after
        self.breaker_threshold, self.breaker_cooldown = breaker_threshold, breaker_cooldown
        self.breaker_max_trips = breaker_max_trips
        self.connections, self.key_by = connections, key_by
        self._resolver = resolver or resolve_ip
        self._rng = random.Random(seed)  # seeded jitter: same crawl, same waits
        self.hosts: dict[str, HostState] = {}  # by key
        self._keys: dict[str, str] = {}  # host (netloc) -> key, once known

    # --- keys -------------------------------------------------------------------------
    def known_key(self, host: str) -> str | None:
        """The host's key if it is known without a DNS lookup (cached, IP literal, domain, host)."""
        key = self._keys.get(host)
        if key is not None:
            return key
        name = hostname_of(host)
        if self.key_by == "host":
            key = host.lower()
        elif self.key_by == "domain":
            key = registered_domain(name)
        else:
            key = ip_literal(name)
            if key is None:
                return None
        self._keys[host] = key
        return key

    def key_of(self, host: str) -> str:
        """The host's politeness key; an unresolved name stands for itself until `resolve`."""
        return self.known_key(host) or "name:" + hostname_of(host)

    async def resolve(self, host: str) -> str:
        """The host's key, resolving its name when keyed by IP (a failed lookup keys on the name)."""
        key = self.known_key(host)
        if key is None:
            ip = await self._resolver(hostname_of(host))
            key = self._keys[host] = ip if ip is not None else "name:" + hostname_of(host)
        return key

    def state(self, host: str) -> HostState:
        """The state of the host's key, created with the default delay on first use."""
        return self.state_of_key(self.key_of(host))

    def state_of_key(self, key: str) -> HostState:
        """The state of one key."""
        st = self.hosts.get(key)
        if st is None:
            st = self.hosts[key] = HostState(delay=self.default_delay)
        return st

    # --- rules ------------------------------------------------------------------------
    def set_crawl_delay(self, host: str, crawl_delay: float | None) -> None:
        """Apply robots.txt Crawl-delay (capped); it never lowers the configured minimum."""
        st = self.state(host)
        if crawl_delay is not None and crawl_delay > 0:
            new = max(self.default_delay, min(float(crawl_delay), self.max_crawl_delay))
            if new > st.delay:
                if st.next_at:
                    # The robots.txt request itself was paced with the old delay: extend that wait.
                    st.next_at += new - st.delay
                st.delay = new  # several origins on one server: the strictest Crawl-delay wins

    def next_time(self, key: str) -> float:
        """Monotonic time from which the key may be asked again (inf once its breaker gave up)."""
        st = self.state_of_key(key)
        if st.breaker_trips >= self.breaker_max_trips:
            return float("inf")
        return max(st.next_at, st.breaker_until)

    def ready_in(self, host: str, now: float | None = None) -> float:
        """Seconds until the host may be asked again (0 when ready; inf when its breaker gave up)."""
        now = time.monotonic() if now is None else now
        return max(0.0, self.next_time(self.key_of(host)) - now)

    def busy(self, host: str) -> bool:
        """True while all of the host's connections are in use."""
        return self.state(host).in_flight >= self.connections

    def gave_up(self, host: str) -> bool:
        """True once the breaker has tripped too often: the server is abandoned for this run."""
        return self.state(host).breaker_trips >= self.breaker_max_trips

    def gave_up_key(self, key: str) -> bool:
        """`gave_up` for a key."""
        return self.state_of_key(key).breaker_trips >= self.breaker_max_trips

    def probe_at(self, key: str) -> float:
        """Monotonic time after which an abandoned key may be probed again (its cool-down)."""
        return self.state_of_key(key).breaker_until

    def reopen(self, key: str) -> None:
        """Let an abandoned key try again after its cool-down: one more error abandons it again
        (with a doubled cool-down), a success puts it back to normal."""
        st = self.state_of_key(key)
        if st.breaker_trips >= self.breaker_max_trips:
            st.breaker_trips = self.breaker_max_trips - 1
            st.consecutive_errors = self.breaker_threshold - 1
            st.reopened += 1

    @asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[HostState]:
        """Hold one of the server's connection slots, starting no earlier than its next allowed time."""
        key = await self.resolve(host)
        st = self.state_of_key(key)
        if st.cond is None:
            st.cond = asyncio.Condition()
        async with st.cond:
            while True:
                wait = self.next_time(key) - time.monotonic()
                if wait == float("inf"):
                    raise HostGaveUpError(host)
                if st.in_flight < self.connections and wait <= 0:
                    break
                try:
                    timeout = None if st.in_flight >= self.connections else wait
                    await asyncio.wait_for(st.cond.wait(), timeout)
                except TimeoutError:
                    pass
            st.in_flight += 1
            st.requests += 1
        try:
            yield st
        finally:
            # The delay counts from the end of the request so slow hosts are not hammered.
            st.next_at = max(st.next_at, time.monotonic() + st.delay)
            st.in_flight -= 1
            async with st.cond:
                st.cond.notify_all()

    def record(
        self,
        host: str,
        status: int | None,
        retry_after: str | None = None,
        *,
        count_error: bool = True,
    ) -> float:
        """Account a finished request; returns the extra wait imposed (backoff), 0 on success.

        A 429/503 with a valid Retry-After makes the whole server wait (capped at
        `max_retry_after`) but is not an error for the circuit breaker: the server answered and
        said when to come back, so it is paused, never abandoned for it. `count_error=False`
        (a robots.txt re-check: its outage has its own backoff, which reads Retry-After) keeps an
        error answer or a network failure out of the backoff, the Retry-After pause and the
        breaker.
        """
        st = self.state(host)
        now = time.monotonic()
        if status is not None and status < 500 and status != 429:
            st.consecutive_errors = 0
            return 0.0
        if not count_error:
            return 0.0
        told = parse_retry_after(retry_after) if status in (429, 503) else None
        if told is not None:
            wait = min(told, self.max_retry_after)
            st.next_at = max(st.next_at, now + max(wait, st.delay))
            return wait
        st.consecutive_errors += 1
        # Exponential backoff with full jitter (seeded) so retries from many crawlers spread.
        cap = min(self.backoff_max, self.backoff_base * 2 ** (st.consecutive_errors - 1))
        wait = min(cap / 2 + self._rng.uniform(0, cap / 2), self.max_retry_after)
        st.next_at = max(st.next_at, now + max(wait, st.delay))
        if st.consecutive_errors >= self.breaker_threshold:
            st.breaker_trips += 1
            st.consecutive_errors = 0
            st.breaker_until = now + self.breaker_cooldown * 2 ** (
                st.breaker_trips - 1 + st.reopened
            )
        return wait


class HostGaveUpError(RuntimeError):
    """The host's circuit breaker tripped too many times; no more requests this run."""

    def __init__(self, host: str):
        super().__init__(
            f"{host}: circuit breaker open (too many consecutive errors); host abandoned"
        )
        self.host = host
