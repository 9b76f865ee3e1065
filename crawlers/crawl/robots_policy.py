"""robots.txt as a policy layer: fetch once per origin (<= 5 redirects), cache <= 24 h, decide.

Outcomes per RFC 9309 come from `crawlers.robots.RobotsTxt.from_response`: 4xx allow all,
5xx / timeouts / network errors disallow all. Decisions are reported as 'allowed',
'disallowed' or 'unreachable' (disallowed because robots.txt could not be read).

An unreachable robots.txt (5xx, 429, timeout, network error) means "not now" (RFC 9309: assume
complete disallow while it lasts), never a final answer at once: it is re-fetched with
exponential backoff (capped at `retry_max_s`) until `give_up_s` has passed since the first
failure (or `retries` failures, when a count is set), and until then `retry_at(url)` tells the
caller when to ask again, so URLs wait instead of being denied while other hosts proceed. Only
after giving up is disallow-all cached (for this run; a resumed crawl asks again) and the origin
listed in `gave_up`; so is at once a 503/429 whose Retry-After lies beyond `give_up_s` (a shorter
Retry-After delays the next re-check). Only an origin's first failure counts toward its server's
backoff and circuit breaker: the re-checks of an outage have this backoff and must not get the
host abandoned, while a server failing many hosts' robots.txt is still given up on.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from crawlers.crawl.fetcher import ROBOTS_MAX_BYTES, Fetcher, FetchResult
from crawlers.crawl.politeness import parse_retry_after
from crawlers.robots import RobotsCache, RobotsTxt, origin_of
from crawlers.robots_match import normalize_path, path_params_query

ALLOWED, DISALLOWED, UNREACHABLE = "allowed", "disallowed", "unreachable"
AS_FOUND_KEY = "robots-as-found:"  # frontier meta key prefix: + canonical URL -> its spellings
MAX_SPELLINGS = 64  # spellings remembered per canonical URL


@dataclass
class RobotsFetch:
    """What fetching an origin's robots.txt produced (kept so a resumed crawl needs no refetch)."""

    origin: str
    status: int | None
    body: bytes
    fetched_at: float  # unix time
    error: str | None = None
    result: FetchResult | None = None  # the exchange itself, for the WARC (None when preloaded)
    truncated: bool = False  # body is the first 500 KiB of a longer file (cut to a whole line)


def decision(robots: RobotsTxt, agent: str, url: str, found: Iterable[str] = ()) -> str:
    """'allowed', 'disallowed', or 'unreachable' for one agent and URL: allowed only when
    robots.txt allows the URL as requested, in the crawler's canonical form
    (`crawlers.crawl.canon.canonicalize`, the form frontier URLs and consent recheck are
    matched in) and with its path's slashes merged: an image's or a redirect's `/%70rivate/x`
    or `/a/../private/x` meets `Disallow: /private`, so does `//private/x` (servers such as
    nginx merge slashes and serve `/private/x` for it), and a rule on what canonicalizing drops
    (`Disallow: /*?sid=`) still holds for the URL as requested.

    `found` are the spellings the URL was found under (a link, seed, sitemap entry or
    redirect's Location as written, before canonicalisation, which sorts query parameters):
    robots.txt must allow each of them too, so `Disallow: /search?q=` holds for a link to
    `/search?q=a&page=2` that is requested as `/search?page=2&q=a`."""
    forms = (url, *found)
    if all(
        robots.allows(agent, f) and all(robots.allows(agent, u) for u in _other_forms(f))
        for f in forms
    ):
        return ALLOWED
    unreachable = robots.kind.startswith("unreachable") or robots.kind == "network-error"
    return UNREACHABLE if unreachable else DISALLOWED


_SLASH_RUN = re.compile(r"(?:/|%2[Ff])*/(?:/|%2[Ff])*")


def merged_slashes(url: str) -> str:
    """The URL with every run of slashes in its path merged into one `/` (a `%2F` in a run
    counts as a slash), as a server that merges slashes reads it; the query is left as it is."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unparsable authority ('http://[::1/x'): matched as it is
        return url
    path = _SLASH_RUN.sub("/", parts.path)
    return url if path == parts.path else urlunsplit(parts._replace(path=path))


def _other_forms(url: str) -> list[str]:
    """The URL's other forms robots.txt must allow too: its canonical form and the slash-merged
    forms of both, those that differ from the URL (the URL alone when it has no canonical
    form)."""
    from crawlers.crawl.canon import canonicalize

    forms = [url]
    try:
        forms.append(canonicalize(url))
    except ValueError:  # UrlError: matched as it is
        pass
    forms += [merged_slashes(f) for f in forms]
    return [f for f in dict.fromkeys(forms) if f != url]


def as_found(url: str, base: str | None = None) -> str:
    """A URL as found, for `decision`'s `found`: resolved against `base` as
    `crawlers.crawl.canon.canonicalize` resolves it (backslashes as browsers read them), its
    fragment dropped, nothing else changed; '' when it cannot be resolved."""
    from urllib.parse import urljoin

    from crawlers.crawl.canon import browser_slashes

    url = browser_slashes(url.strip(), base)
    try:
        url = urljoin(base, url) if base else url
    except ValueError:  # 'http://[::1': canonicalize refuses it too
        return ""
    return url.split("#", 1)[0]


def spellings(url: str, found: str | Iterable[str]) -> list[str]:
    """The spellings in `found` (fragment dropped) that robots.txt could judge otherwise than
    the canonical `url`: those whose path and query, as matched, differ from the URL's."""
    own = normalize_path(path_params_query(url))
    out: list[str] = []
    for f in (found,) if isinstance(found, str) else found:
        f = f.split("#", 1)[0]
        if f and f not in out and normalize_path(path_params_query(f)) != own:
            out.append(f)
    return out


def transient(status: int | None, error: str | None) -> bool:
    """True for a robots.txt outcome worth asking again (5xx, 429, timeout, network error)."""
    if error and error.startswith("ssrf-blocked"):
        return False  # the address is refused by policy: asking again changes nothing
    return status is None or status >= 500 or status == 429


def retry_after(record: RobotsFetch) -> float | None:
    """Seconds a 503/429 robots.txt answer's Retry-After asks to wait, or None."""
    if record.status not in (429, 503) or record.result is None:
        return None
    return parse_retry_after(record.result.header("retry-after"))


@dataclass
class _Pending:
    first_failed: float  # monotonic
    failures: int
    retry_at: float  # monotonic


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
        retries: int | None = None,
        retry_base_s: float = 1.0,
        retry_max_s: float = 300.0,
        give_up_s: float = 3600.0,
        on_fetch: Callable[[RobotsFetch], None] | None = None,
    ):
        self.fetcher = fetcher
        self.agent, self.training_agent = agent, training_agent
        self.cache = RobotsCache(max_age_s)
        self.max_redirects, self.retries = max_redirects, retries
        self.retry_base_s, self.retry_max_s, self.give_up_s = retry_base_s, retry_max_s, give_up_s
        self.on_fetch = on_fetch  # the crawl persists fetches here for --resume
        self._locks: dict[str, asyncio.Lock] = {}
        self._pending: dict[str, _Pending] = {}
        self.gave_up: dict[str, str] = {}  # origin -> last failure, once its outage outlasted us

    def preload(self, record: RobotsFetch) -> None:
        """Seed the cache from a stored fetch if it is still within max age.

        A stored failure (5xx, timeout, ...) is not preloaded: a resumed crawl asks again rather
        than denying for the rest of the day what an outage once denied.
        """
        if transient(record.status, record.error):
            return
        age = time.time() - record.fetched_at
        if age < self.cache.max_age_s:
            robots = RobotsTxt.from_response(record.status, record.body, truncated=record.truncated)
            self.cache.put(record.origin, robots, max_age_s=self.cache.max_age_s - age)

    def cached(self, url: str) -> RobotsTxt | None:
        """The cached policy for a URL's origin, or None when it must be fetched."""
        return self.cache.get(origin_of(url))

    def retry_at(self, url: str) -> float | None:
        """Monotonic time of the next robots.txt re-fetch while the origin's outage is provisional
        (its URLs should wait, not be denied); None when the cached policy is final."""
        pending = self._pending.get(origin_of(url))
        return None if pending is None else pending.retry_at

    async def get(self, url: str) -> RobotsTxt:
        """The policy for a URL's origin, fetching robots.txt when not cached."""
        origin = origin_of(url)
        lock = self._locks.setdefault(origin, asyncio.Lock())
        async with lock:  # one fetch per origin even when many callers ask at once
            robots = self.cache.get(origin)
            if robots is not None:
                return robots
            # Only an origin's first failure counts toward its server's backoff and circuit
            # breaker (a server failing many hosts' robots.txt is still given up on); the
            # re-checks of an outage have their own backoff and must not abandon the host.
            record = await self._fetch(origin, count_errors=origin not in self._pending)
            robots = RobotsTxt.from_response(record.status, record.body, truncated=record.truncated)
            if transient(record.status, record.error):
                now = time.monotonic()
                pending = self._pending.get(origin) or _Pending(now, 0, now)
                pending.failures += 1
                wait = min(self.retry_max_s, self.retry_base_s * 2 ** (pending.failures - 1))
                # A 503/429 that says when to come back is asked again no sooner; one that says
                # the outage outlasts give_up_s is given up at once (waiting would change nothing).
                told = retry_after(record)
                if told is not None:
                    wait = max(wait, told)
                if (
                    self.retries is not None and pending.failures > self.retries
                ) or now + wait - pending.first_failed > self.give_up_s:
                    self._pending.pop(origin, None)  # give up: disallow all, final for this run
                    self.cache.put(origin, robots)
                    self.gave_up[origin] = (
                        f"robots.txt unreachable for {now - pending.first_failed:.0f} s "
                        f"({pending.failures} tries, last: "
                        f"{record.error or f'HTTP {record.status}'})"
                    )
                else:
                    pending.retry_at = now + wait
                    self._pending[origin] = pending
                    self.cache.put(origin, robots, max_age_s=max(wait, 1e-3))
            else:
                self._pending.pop(origin, None)
                self.gave_up.pop(origin, None)
                self.cache.put(origin, robots)
            if self.on_fetch is not None:
                self.on_fetch(record)
            return robots

    async def _fetch(self, origin: str, *, count_errors: bool = True) -> RobotsFetch:
        res = await self.fetcher.fetch(  # oversize keeps its first 500 KiB (RFC 9309 2.5)
            origin + "/robots.txt",
            max_redirects=self.max_redirects,
            wanted_types=("*",),
            keep_prefix=ROBOTS_MAX_BYTES,
            count_errors=count_errors,
        )
        status = res.status
        if res.error and not res.error.startswith("body-too-large"):
            # Timeouts, resets, loops, refused addresses: robots.txt is unreachable.
            status = None
        body = res.body if status is not None and res.error is None else b""
        truncated = res.truncated and status is not None and res.error is None
        if res.error and res.error.startswith("body-too-large") and res.hops:
            body = res.hops[-1].raw_body  # RFC 9309: parse at least the first 500 KiB
            truncated = True
        # The parser drops the cut's partial last line and reports the truncation.
        return RobotsFetch(origin, status, body, time.time(), res.error, res, truncated)

    async def decide(self, url: str, found: Iterable[str] = ()) -> tuple[str, str, RobotsTxt]:
        """(crawl decision, training decision, policy) for a URL and the spellings it was
        found under (`decision`)."""
        robots = await self.get(url)
        found = tuple(found)
        crawl = decision(robots, self.agent, url, found)
        return crawl, decision(robots, self.training_agent, url, found), robots
