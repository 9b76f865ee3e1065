"""What the crawl fetches next: per-host queues, grouped by server, ranked without a scan.

Per host the order is seeds, then its sitemaps, then discovered URLs best-priority first (with
`max_pages`, a host's sitemaps wait while its queue holds more than `sitemap_queue_factor` times
the pages left). Seeds come first everywhere: until every seed robots.txt allows has been
fetched, its share of `max_pages` is reserved, so discovered URLs and sitemaps never take a
seed's budget.

The scheduler works on politeness keys (a server: its IP address by default), each holding the
hosts that share it. Keys wait in a heap ordered by the time they may be asked again and move to
a ready heap ordered by their best item (tier, then effective priority: stored priority,
refreshed language signal, topic-quota penalty; refreshed when it reaches the top), so starting
a request costs O(log keys), not a scan of every host. Keys the circuit breaker abandoned wait
in a third heap until their cool-down ends and they are probed again.

Within a key, hosts are ranked by heaps as well (`_KeyHosts`): a host is ranked again only when
its work, its hold or its language signal changed, and the topic quotas are applied per topic
when the key is looked at, so finding a key's best host costs O(log hosts on the key), not a
scan of them. Ties go to the host whose URL was queued first (for a sitemap: the host with the
fewest URLs queued), then to the host name, so the same inputs give the same order.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from typing import Any

from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.politeness import Politeness
from crawlers.crawl.priority import LanguageTracker, Weights, topic_quota_penalty

SEED, SITEMAP, DISCOVERED = 0, 1, 2  # item tiers, best first


class _KeyHosts:
    """The hosts of one politeness key, ranked: seeds by priority, hosts with sitemaps by the URLs
    they hold, discovered work per topic by its score before the topic quota, held hosts by the
    end of their hold. An entry is never removed in place: one whose version is not its host's
    current version is stale and is dropped when it reaches the top (or when the heaps are
    compacted)."""

    def __init__(self) -> None:
        self.seeds: list[tuple[float, int, str, int]] = []  # (-priority, seq, host, version)
        self.sitemaps: list[tuple[int, str, int]] = []  # (URLs queued, host, version)
        # topic -> heap of (-score before the topic's quota penalty, seq, host, version)
        self.topics: dict[str, list[tuple[float, int, str, int]]] = {}
        self.held: list[tuple[float, str, int]] = []  # (hold ends, host, version)
        self.entries = 0  # in all heaps, stale ones included
        self.dirty: set[str] = set()  # hosts whose work, hold or language signal changed
        self.now = float("-inf")  # when the key was last looked at

    def push(self, heap: list, entry: tuple) -> None:
        heapq.heappush(heap, entry)
        self.entries += 1

    def top(self, heap: list, versions: dict[str, int]) -> tuple | None:
        """The heap's best entry that is not stale, or None."""
        while heap and versions.get(heap[0][-2]) != heap[0][-1]:
            heapq.heappop(heap)
            self.entries -= 1
        return heap[0] if heap else None

    def compact(self, versions: dict[str, int]) -> None:
        """Drop every stale entry (they outnumber the live ones)."""
        heaps = [self.seeds, self.sitemaps, self.held, *self.topics.values()]
        for heap in heaps:
            heap[:] = [e for e in heap if versions.get(e[-2]) == e[-1]]
            heapq.heapify(heap)
        self.topics = {t: heap for t, heap in self.topics.items() if heap}
        self.entries = sum(len(heap) for heap in heaps)


class Scheduler:
    """The queued work of one crawl and the page budget (`max_pages`) it is started against.

    `fetched` counts content pages fetched or attempted to completion, `in_flight` those being
    fetched; together they are what `max_pages` limits.
    """

    def __init__(
        self,
        cfg: CrawlConfig,
        politeness: Politeness,
        langs: LanguageTracker,
        weights: Weights,
        topics_fetched: Counter[str],
        stats: Counter[str],
    ):
        self.cfg, self.politeness, self.langs, self.weights = cfg, politeness, langs, weights
        self.topics_fetched, self.stats = topics_fetched, stats
        # host -> heap of (tier, -priority, seq, url) of its queued URLs
        self.heaps: dict[str, list[tuple[int, float, int, str]]] = defaultdict(list)
        self.rows: dict[str, dict[str, Any]] = {}  # queued URL -> its row (signals, depth, ...)
        self.sitemap_queue: dict[str, deque[tuple[str, int]]] = defaultdict(deque)
        self.fetched = 0
        self.in_flight = 0
        self.queued = 0  # URLs in the heaps
        self.seeds_pending = 0  # seeds not yet fetched or denied: budget reserved for them
        self.host_key: dict[str, str] = {}
        self.key_hosts: dict[str, set[str]] = defaultdict(set)
        self.key_active: Counter[str] = Counter()
        self.hold: dict[str, float] = {}  # host -> monotonic time its robots.txt is asked again
        self.waiting: list[tuple[float, int, str]] = []
        self.probing: list[tuple[float, int, str]] = []  # abandoned keys, by end of cool-down
        self.ready: list[tuple[int, float, int, str]] = []
        self._ver: dict[str, int] = {}
        self._ranked: defaultdict[str, _KeyHosts] = defaultdict(_KeyHosts)  # key -> its hosts
        self._host_ver: dict[str, int] = {}  # host -> version of its entries in _ranked
        self._in_heap: set[str] = set()
        self._tick = 0
        self.to_resolve: deque[str] = deque()  # hosts whose key (address) is not known yet
        self._unresolved: set[str] = set()
        # row -> its priority now (evidence gathered since it was queued); None: stored priority
        self.reprice: Callable[[dict[str, Any]], float] | None = None

    # --- queues -------------------------------------------------------------------------
    def push(self, row: dict[str, Any]) -> None:
        """Queue a URL's row (again); a seed's row reserves its share of the budget."""
        url, host, tier = row["url"], row["host"], row.get("tier", 1)
        self.rows[url] = row
        heapq.heappush(self.heaps[host], (tier, -(row["priority"] or 0.0), row["seq"] or 0, url))
        self.queued += 1
        if tier == 0 and not row.get("_reserved"):
            row["_reserved"] = True
            self.seeds_pending += 1
            key = self.host_key.get(host)
            if key in self._in_heap:  # its heap entry may rank it as discovered work: redo it
                self._in_heap.discard(key)
        self.host_has_work(host)

    def pop(self, host: str) -> dict[str, Any]:
        """The row of the host's best queued URL, taken off its queue.

        With `reprice`, a discovered URL whose priority fell since it was queued (its link family
        kept failing) goes back in its place and the next one is looked at."""
        heap = self.heaps[host]
        while True:
            tier, neg, seq, url = heapq.heappop(heap)
            row = self.rows[url]
            if self.reprice is not None and tier != 0 and heap:
                now = self.reprice(row)
                if now < -neg and (tier, -now) > heap[0][:2]:
                    row["priority"] = now
                    heapq.heappush(heap, (tier, -now, seq, url))
                    continue
            self.queued -= 1
            self._touch(host)
            return self.rows.pop(url)

    def unreserve(self, row: dict[str, Any]) -> None:
        """A seed was started or settled: its budget is no longer held for it."""
        if row.pop("_reserved", False):
            self.seeds_pending -= 1

    def has_queued(self, host: str) -> bool:
        return bool(self.heaps.get(host))

    def queued_hosts(self) -> list[str]:
        return [host for host, heap in self.heaps.items() if heap]

    def drain(self, host: str) -> list[dict[str, Any]]:
        """Take every queued URL of a host off its queue (no budget stays reserved for them)."""
        rows = []
        while self.heaps.get(host):
            row = self.pop(host)
            self.unreserve(row)
            rows.append(row)
        return rows

    def add_sitemap(self, host: str, url: str, depth: int) -> None:
        self.sitemap_queue[host].append((url, depth))
        self.host_has_work(host)

    def next_sitemap(self, host: str) -> tuple[str, int] | None:
        queue = self.sitemap_queue.get(host)
        if not queue:
            return None
        self._touch(host)
        return queue.popleft()

    def requeue_sitemap(self, host: str, url: str, depth: int) -> None:
        """Put a sitemap back first in its host's queue (its robots.txt is asked again first)."""
        self.sitemap_queue[host].appendleft((url, depth))
        self._touch(host)

    def hold_host(self, host: str, until: float) -> None:
        """Start nothing on the host before `until` (monotonic), e.g. while robots.txt is retried."""
        self.hold[host] = until
        self._touch(host)

    def observe_lang(self, host: str, lang: str) -> None:
        """Count a page of the host identified as `lang`: its language signal changes, and the
        host is ranked again (call this, not `LanguageTracker.observe`, while URLs are queued)."""
        self.langs.observe(host, lang)
        self._touch(host)

    # --- budget -------------------------------------------------------------------------
    def limit_reached(self) -> bool:
        return (
            self.cfg.max_pages is not None and self.fetched + self.in_flight >= self.cfg.max_pages
        )

    def budget_ok(self, tier: int) -> bool:
        """May an item of this tier start? Seeds' share of max_pages is reserved for them, and a
        sitemap waits like a discovered URL: what it lists could only use what seeds leave."""
        if self.cfg.max_pages is None:
            return True
        used = self.fetched + self.in_flight
        if tier != SEED:
            used += self.seeds_pending
        return used < self.cfg.max_pages

    def room(self) -> int | None:
        """Pages max_pages still leaves to discovered URLs (None without max_pages)."""
        if self.cfg.max_pages is None:
            return None
        return max(0, self.cfg.max_pages - self.fetched - self.in_flight - self.seeds_pending)

    def queue_full(self, host: str) -> str | None:
        """Why the host's sitemaps are not expanded now (its queue holds more than
        `sitemap_queue_factor` times the pages max_pages leaves), or None."""
        room = self.room()
        queued = len(self.heaps.get(host) or ())
        if room is None or queued <= self.cfg.sitemap_queue_factor * room:
            return None
        return (
            f"{host} has {queued} URLs queued, more than sitemap_queue_factor "
            f"({self.cfg.sitemap_queue_factor:g}) x the {room} pages max_pages leaves"
        )

    def sitemaps_left(self) -> int:
        """Sitemap documents still queued (not fetched this run; --resume reads them)."""
        return sum(len(q) for q in self.sitemap_queue.values())

    # --- keys ---------------------------------------------------------------------------
    def host_has_work(self, host: str) -> None:
        key = self.host_key.get(host)
        if key is None:
            key = self.politeness.known_key(host)
            if key is None:  # a name: resolve it first (its key is the server's address)
                if host not in self._unresolved:
                    self._unresolved.add(host)
                    self.to_resolve.append(host)
                return
            self.host_key[host] = key
        self.key_hosts[key].add(host)
        self._ranked[key].dirty.add(host)
        self.schedule(key)

    async def resolve(self, host: str) -> None:
        key = await self.politeness.resolve(host)
        self._unresolved.discard(host)
        self.host_key[host] = key
        self.key_hosts[key].add(host)
        self._ranked[key].dirty.add(host)
        self.schedule(key)

    def _touch(self, host: str) -> None:
        """The host's work, hold or language signal changed: rank it again when its key is next
        looked at."""
        key = self.host_key.get(host)
        if key is not None:
            self._ranked[key].dirty.add(host)

    def start(self, key: str) -> None:
        """A request to the key's server starts (more may start while K > 1 are allowed)."""
        self.key_active[key] += 1
        self.schedule(key)

    def finish(self, key: str) -> None:
        """A request to the key's server ended: the key waits for its next turn."""
        self.key_active[key] -= 1
        self.schedule(key)

    def next_probe(self) -> float | None:
        """Monotonic time the next abandoned server is probed again; None when none is."""
        return self.probing[0][0] if self.probing else None

    def _rank(self, ranked: _KeyHosts, hosts: set[str], host: str, now: float) -> None:
        """Enter the host's next piece of work (or its hold) in its key's heaps, superseding its
        earlier entries; a host without work leaves the key."""
        version = self._host_ver[host] = self._host_ver.get(host, 0) + 1
        heap, sitemaps = self.heaps.get(host), self.sitemap_queue.get(host)
        if not heap and not sitemaps:
            hosts.discard(host)
            return
        hold = self.hold.get(host, 0.0)
        if hold > now:
            ranked.push(ranked.held, (hold, host, version))
            return
        if sitemaps:
            ranked.push(ranked.sitemaps, (len(heap or ()), host, version))
        if heap:
            tier, neg, seq, url = heap[0]
            if tier == 0:
                ranked.push(ranked.seeds, (neg, seq, host, version))
            else:
                row = self.rows[url]
                score = -neg + self.weights.lang * (
                    self.langs.signal(host) - (row["lang_signal"] or 0)
                )
                topic = ranked.topics.setdefault(row["topic"] or "other", [])
                ranked.push(topic, (-score, seq, host, version))

    def _best(self, ranked: _KeyHosts) -> tuple[tuple[int, float] | None, str | None]:
        """(tier, -score) of the key's best piece of work that may start now, and its host.

        Seeds come first; then sitemaps (before discovered URLs: they feed the frontier) unless
        the host's queue already holds several times what max_pages leaves, and as that limit
        is on the queue's length, the host with the fewest URLs queued is the one to ask; then
        discovered URLs by score: stored priority, refreshed language signal, topic penalty."""
        versions = self._host_ver
        if ranked.seeds and (seed := ranked.top(ranked.seeds, versions)):
            return (SEED, seed[0]), seed[2]
        if ranked.sitemaps and (sitemap := ranked.top(ranked.sitemaps, versions)):
            room = self.room()
            if not sitemap[0] or room is None or sitemap[0] <= self.cfg.sitemap_queue_factor * room:
                return (SITEMAP, float("-inf")), sitemap[1]
        best: tuple[float, int, str] | None = None
        for topic, heap in list(ranked.topics.items()):
            top = ranked.top(heap, versions)
            if top is None:
                del ranked.topics[topic]
                continue
            score = -top[0]
            score -= topic_quota_penalty(topic, self.topics_fetched, self.cfg.topic_max_share)
            if best is None or (-score, top[1], top[2]) < best:
                best = (-score, top[1], top[2])
        return ((DISCOVERED, best[0]), best[2]) if best is not None else (None, None)

    def _key_entry(
        self, key: str, now: float
    ) -> tuple[float, tuple[int, float] | None, str | None] | None:
        """(time the key may start, its best item, that item's host), or None without work."""
        hosts = self.key_hosts.get(key)
        if hosts:
            ranked = self._ranked[key]
            if now < ranked.now:  # the clock went back: holds are compared again
                ranked.dirty.update(hosts)
            ranked.now = now
            while ranked.held and ranked.held[0][0] <= now:  # holds that ended
                _, host, version = heapq.heappop(ranked.held)
                ranked.entries -= 1
                if self._host_ver.get(host) == version:
                    ranked.dirty.add(host)
            for host in ranked.dirty:
                if host in hosts:
                    self._rank(ranked, hosts, host, now)
            ranked.dirty.clear()
            if ranked.entries > 4 * len(hosts) + 64:
                ranked.compact(self._host_ver)
        if not hosts:
            self.key_hosts.pop(key, None)
            self._ranked.pop(key, None)
            return None
        best, best_host = self._best(ranked)
        at = self.politeness.next_time(key)
        if best is not None:
            return at, best, best_host
        held = ranked.top(ranked.held, self._host_ver)  # every host with work is held
        return max(at, held[0] if held else float("inf")), None, None

    def schedule(self, key: str) -> None:
        """Put a key with work in the ready or the waiting heap (unless it is there or busy)."""
        if key in self._in_heap or self.key_active[key] >= self.cfg.per_host_connections:
            return
        now = time.monotonic()
        if self.politeness.gave_up_key(key):
            # Abandoned by the breaker: probed again after its cool-down while the crawl still
            # runs; it does not keep the crawl alive (at the end its URLs are skipped, and
            # re-queued by --resume).
            self._tick += 1
            self._ver[key] = self._tick
            self._in_heap.add(key)
            heapq.heappush(self.probing, (self.politeness.probe_at(key), self._tick, key))
            return
        entry = self._key_entry(key, now)
        if entry is None:
            return
        at, item, _ = entry
        self._tick += 1
        self._ver[key] = self._tick
        self._in_heap.add(key)
        if at <= now and item is not None:
            heapq.heappush(self.ready, (item[0], item[1], self._tick, key))
        else:
            heapq.heappush(self.waiting, (at, self._tick, key))

    def pick(self) -> tuple[str, str, int, float]:
        """(key, host, item tier, 0) of the best ready work, or ('', '', -1, wait) when none may start."""
        now = time.monotonic()
        while self.probing and self.probing[0][0] <= now:
            _, ver, key = heapq.heappop(self.probing)
            if self._ver.get(key) == ver:
                self._in_heap.discard(key)
                self.politeness.reopen(key)  # its cool-down is over: try it again
                self.stats["breaker_probes"] += 1
                self.schedule(key)
        while self.waiting and self.waiting[0][0] <= now:
            _, ver, key = heapq.heappop(self.waiting)
            if self._ver.get(key) == ver:
                self._in_heap.discard(key)
                self.schedule(key)
        refreshed, blocked = 0, False
        while self.ready:
            tier, neg, ver, key = heapq.heappop(self.ready)
            if self._ver.get(key) != ver:
                continue  # superseded entry
            self._in_heap.discard(key)
            entry = self._key_entry(key, now)
            if entry is None:
                continue
            at, item, host = entry
            if at > now or item is None or host is None:
                self.schedule(key)  # not ready after all (backoff, robots.txt hold): wait
                continue
            if item > (tier, neg) and refreshed < 16 and self.ready:
                # Its score drifted down since it was queued: re-rank it against the others.
                refreshed += 1
                self.schedule(key)
                continue
            if not self.budget_ok(item[0]):
                # The rest of max_pages is held for seeds still waiting (robots.txt, backoff):
                # this key keeps its place and is looked at again shortly.
                self.schedule(key)
                blocked = True
                break
            return key, host, item[0], 0.0
        wait = self.waiting[0][0] - now if self.waiting else float("inf")
        if blocked:
            wait = min(wait, 0.25)
        return "", "", -1, max(0.0, wait)
