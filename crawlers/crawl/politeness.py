"""Per-host politeness: one request at a time, a minimum delay, Retry-After, backoff, breaker.

Every request to a host goes through `Politeness.slot(host)`; the slot is held for the whole
request so one connection per host is the default, and the next request may start only
`delay` seconds after the previous one finished (or later, after a 429/503 or errors).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass
class HostState:
    """What politeness knows about one host."""

    delay: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    next_at: float = 0.0  # monotonic time before which no request may start
    consecutive_errors: int = 0
    breaker_until: float = 0.0
    breaker_trips: int = 0
    requests: int = 0


class Politeness:
    """Per-host request pacing shared by every fetch of one crawl (or one image-stage run)."""

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
    ):
        self.default_delay = delay
        self.max_crawl_delay = max_crawl_delay
        self.backoff_base, self.backoff_max = backoff_base, backoff_max
        self.max_retry_after = max_retry_after
        self.breaker_threshold, self.breaker_cooldown = breaker_threshold, breaker_cooldown
        self.breaker_max_trips = breaker_max_trips
        self._rng = random.Random(seed)  # seeded jitter: same crawl, same waits
        self.hosts: dict[str, HostState] = {}

    def state(self, host: str) -> HostState:
        """The host's state, created with the default delay on first use."""
        st = self.hosts.get(host)
        if st is None:
            st = self.hosts[host] = HostState(delay=self.default_delay)
        return st

    def set_crawl_delay(self, host: str, crawl_delay: float | None) -> None:
        """Apply robots.txt Crawl-delay (capped); it never lowers the configured minimum."""
        st = self.state(host)
        if crawl_delay is not None and crawl_delay > 0:
            new = max(self.default_delay, min(float(crawl_delay), self.max_crawl_delay))
            if new > st.delay and st.next_at:
                # The robots.txt request itself was paced with the old delay: extend that wait too.
                st.next_at += new - st.delay
            st.delay = new

    def ready_in(self, host: str, now: float | None = None) -> float:
        """Seconds until the host may be asked again (0 when ready; inf when its breaker gave up)."""
        st = self.state(host)
        if self.gave_up(host):
            return float("inf")
        now = time.monotonic() if now is None else now
        return max(0.0, max(st.next_at, st.breaker_until) - now)

    def busy(self, host: str) -> bool:
        """True while a request to the host is in flight."""
        return self.state(host).lock.locked()

    def gave_up(self, host: str) -> bool:
        """True once the breaker has tripped too often: the host is abandoned for this run."""
        return self.state(host).breaker_trips >= self.breaker_max_trips

    @asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[HostState]:
        """Hold the host's only connection slot, starting no earlier than its next allowed time."""
        st = self.state(host)
        async with st.lock:
            wait = self.ready_in(host)
            if wait == float("inf"):
                raise HostGaveUpError(host)
            if wait > 0:
                await asyncio.sleep(wait)
            st.requests += 1
            try:
                yield st
            finally:
                # The delay counts from the end of the request so slow hosts are not hammered.
                st.next_at = max(st.next_at, time.monotonic() + st.delay)

    def record(self, host: str, status: int | None, retry_after: str | None = None) -> float:
        """Account a finished request; returns the extra wait imposed (backoff), 0 on success."""
        st = self.state(host)
        now = time.monotonic()
        if status is not None and status < 500 and status != 429:
            st.consecutive_errors = 0
            return 0.0
        st.consecutive_errors += 1
        wait = parse_retry_after(retry_after) if status in (429, 503) else None
        if wait is None:
            # Exponential backoff with full jitter (seeded) so retries from many crawlers spread.
            cap = min(self.backoff_max, self.backoff_base * 2 ** (st.consecutive_errors - 1))
            wait = cap / 2 + self._rng.uniform(0, cap / 2)
        wait = min(wait, self.max_retry_after)
        st.next_at = max(st.next_at, now + max(wait, st.delay))
        if st.consecutive_errors >= self.breaker_threshold:
            st.breaker_trips += 1
            st.consecutive_errors = 0
            st.breaker_until = now + self.breaker_cooldown * 2 ** (st.breaker_trips - 1)
        return wait


class HostGaveUpError(RuntimeError):
    """The host's circuit breaker tripped too many times; no more requests this run."""

    def __init__(self, host: str):
        super().__init__(
            f"{host}: circuit breaker open (too many consecutive errors); host abandoned"
        )
        self.host = host
