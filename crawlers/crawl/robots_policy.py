"""robots.txt as a policy layer: fetch once per origin (<= 5 redirects), cache <= 24 h, decide.

Outcomes per RFC 9309 come from `crawlers.robots.RobotsTxt.from_response`: 4xx allow all,
5xx / timeouts / network errors disallow all. Decisions are reported as 'allowed',
'disallowed' or 'unreachable' (disallowed because robots.txt could not be read).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from crawlers.crawl.fetcher import Fetcher
from crawlers.robots import RobotsCache, RobotsTxt, origin_of

ALLOWED, DISALLOWED, UNREACHABLE = "allowed", "disallowed", "unreachable"


@dataclass
class RobotsFetch:
    """What fetching an origin's robots.txt produced (kept so a resumed crawl needs no refetch)."""

    origin: str
    status: int | None
    body: bytes
    fetched_at: float  # unix time
    error: str | None = None


def decision(robots: RobotsTxt, agent: str, url: str) -> str:
    """'allowed', 'disallowed', or 'unreachable' for one agent and URL."""
    if robots.allows(agent, url):
        return ALLOWED
    unreachable = robots.kind.startswith("unreachable") or robots.kind == "network-error"
    return UNREACHABLE if unreachable else DISALLOWED


class RobotsPolicy:
    """Per-origin robots.txt for a crawl token and a training token, fetched through a Fetcher."""

    def __init__(
        self,
        fetcher: Fetcher,
        *,
        agent: str,
        training_agent: str,
        max_age_s: float = 86400.0,
        max_redirects: int = 5,
        retries: int = 1,
        on_fetch: Callable[[RobotsFetch], None] | None = None,
    ):
        self.fetcher = fetcher
        self.agent, self.training_agent = agent, training_agent
        self.cache = RobotsCache(max_age_s)
        self.max_redirects, self.retries = max_redirects, retries
        self.on_fetch = on_fetch  # the crawl persists fetches here for --resume
        self._locks: dict[str, asyncio.Lock] = {}

    def preload(self, record: RobotsFetch) -> None:
        """Seed the cache from a stored fetch if it is still within max age."""
        age = time.time() - record.fetched_at
        if age < self.cache.max_age_s:
            robots = RobotsTxt.from_response(record.status, record.body)
            self.cache.put(record.origin, robots, max_age_s=self.cache.max_age_s - age)

    def cached(self, url: str) -> RobotsTxt | None:
        """The cached policy for a URL's origin, or None when it must be fetched."""
        return self.cache.get(origin_of(url))

    async def get(self, url: str) -> RobotsTxt:
        """The policy for a URL's origin, fetching robots.txt when not cached."""
        origin = origin_of(url)
        lock = self._locks.setdefault(origin, asyncio.Lock())
        async with lock:  # one fetch per origin even when many callers ask at once
            robots = self.cache.get(origin)
            if robots is not None:
                return robots
            record = await self._fetch(origin)
            robots = RobotsTxt.from_response(record.status, record.body)
            self.cache.put(origin, robots)
            if self.on_fetch is not None:
                self.on_fetch(record)
            return robots

    async def _fetch(self, origin: str) -> RobotsFetch:
        for attempt in range(self.retries + 1):
            res = await self.fetcher.fetch(
                origin + "/robots.txt", max_redirects=self.max_redirects, wanted_types=("*",)
            )
            status = res.status
            if res.error and not res.error.startswith("body-too-large"):
                # Timeouts, resets, loops, refused addresses: robots.txt is unreachable.
                status = None
            transient = status is None or status >= 500 or status == 429
            if not transient or attempt == self.retries:
                body = res.body if status is not None and res.error is None else b""
                if res.error and res.error.startswith("body-too-large") and res.hops:
                    body = res.hops[-1].raw_body  # RFC 9309: parse at least the first 500 KiB
                return RobotsFetch(origin, status, body, time.time(), res.error)
        raise AssertionError("unreachable")

    async def decide(self, url: str) -> tuple[str, str, RobotsTxt]:
        """(crawl decision, training decision, policy) for a URL."""
        robots = await self.get(url)
        return decision(robots, self.agent, url), decision(robots, self.training_agent, url), robots
