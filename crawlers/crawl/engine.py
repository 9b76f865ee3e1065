"""The crawl loop: many servers in flight at once, a polite number of requests to each.

Per host the order is robots.txt, then seeds, then its sitemaps, then discovered URLs
best-priority first. Seeds come first everywhere: until every seed robots.txt allows has been
fetched, its share of `max_pages` is reserved, so discovered URLs never take a seed's budget.

The scheduler works on politeness keys (a server: its IP address by default), each holding the
hosts that share it. Keys wait in a heap ordered by the time they may be asked again and move to
a ready heap ordered by their best item (tier, then effective priority: stored priority,
refreshed language signal, topic-quota penalty; refreshed when it reaches the top), so starting
a request costs O(log keys), not a scan of every host.

Links to hosts of another shard are routed: each shard appends them to
`<shard_root>/outbox/to-<j>/part-<k>-<first>-<last>.parquet` and reads its own
`outbox/to-<k>/` at start and on --resume (each part once, recorded in the frontier).
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import os
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawlers.crawl.canon import UrlError, canonicalize, host_of
from crawlers.crawl.config import CrawlConfig, shard_of
from crawlers.crawl.downloader import Downloader
from crawlers.crawl.fetcher import REDIRECT_STATUSES, FetchResult, mime_of
from crawlers.crawl.frontier import Frontier
from crawlers.crawl.html import Directives, apply_x_robots_tag, parse_html
from crawlers.crawl.output import write_checkpoint, write_outputs
from crawlers.crawl.politeness import RETRY_STATUSES, Politeness
from crawlers.crawl.priority import (
    LanguageTracker,
    TrapDetector,
    Weights,
    classify_topic,
    combine,
    path_signal,
    tokens_of,
    topic_quota_penalty,
)
from crawlers.crawl.robots_policy import ALLOWED, UNREACHABLE, RobotsFetch
from crawlers.crawl.sitemaps import parse_sitemap
from crawlers.crawl.warc import WarcStore
from crawlers.robots import RobotsTxt

Progress = Callable[[dict[str, Any]], None]
_TRANSIENT_ERRORS = ("timeout", "connect-error", "connection-reset", "payload-error")
GAVE_UP = "host-gave-up: circuit breaker open (re-queued on --resume)"
OTHER_SHARD = "other-shard"
OUTBOX_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("depth", pa.int32()),
        ("source", pa.string()),
        ("parent", pa.string()),
        ("anchor", pa.string()),
        ("from_shard", pa.int32()),
    ]
)
_SEED, _SITEMAP, _DISCOVERED = 0, 1, 2  # item tiers, best first
_RESOLVERS = 32  # DNS lookups in flight at once


def shard_root_of(out_dir: Path, config: CrawlConfig) -> Path:
    """Directory shared by the shards of one crawl (holds outbox/to-<j>/)."""
    if config.shard_root:
        return Path(config.shard_root)
    out_dir = Path(out_dir)
    return out_dir.parent if out_dir.name == f"shard={config.shard}" else out_dir


class CrawlError(RuntimeError):
    """A crawl that cannot start (bad output directory, bad seeds)."""


class Crawler:
    """One crawl run (or resumption) writing to an output directory."""

    def __init__(
        self,
        seeds: list[str],
        out_dir: Path,
        config: CrawlConfig,
        *,
        resume: bool = False,
        progress: Progress | None = None,
    ):
        self.cfg, self.out_dir, self.resume, self.progress = config, Path(out_dir), resume, progress
        self.out_dir.mkdir(parents=True, exist_ok=True)
        db_path = self.out_dir / "frontier.sqlite"
        if db_path.exists() and not resume:
            raise CrawlError(
                f"{self.out_dir} already holds a crawl (frontier.sqlite); pass --resume to continue it or pick a new --out"
            )
        if resume and not db_path.exists():
            raise CrawlError(
                f"--resume: {db_path} does not exist; start the crawl without --resume"
            )
        self.frontier = Frontier(db_path)
        stored = self.frontier.get_meta("config") if resume else None
        if stored and (stored.get("shard", 0), stored.get("shards", 1)) != (
            config.shard,
            config.shards,
        ):
            self.frontier.close()
            raise CrawlError(
                f"--resume: {self.out_dir} holds shard {stored.get('shard', 0)}/"
                f"{stored.get('shards', 1)}, not {config.shard}/{config.shards}; give each shard "
                "its own --out (e.g. ROOT/shard=<k>, sharing ROOT as the shard root)"
            )
        self.seeds = seeds
        self.shard_root = shard_root_of(self.out_dir, config)
        self.weights = Weights()
        self.traps = TrapDetector(
            config.max_url_length,
            config.max_repeated_segments,
            config.max_urls_per_pattern,
            config.max_calendar_urls,
        )
        self.langs = LanguageTracker(config.target_languages, config.host_languages_path)
        # One downloader, the same one the browser's sub-requests go through: its fetcher (SSRF
        # guard, caps), politeness and robots policy are the layers this engine schedules around.
        self.downloader = Downloader(config, on_robots_fetch=self._robots_fetched)
        self.politeness = self.downloader.politeness
        # host -> heap of (tier, -priority, seq, url) of its queued URLs
        self.heaps: dict[str, list[tuple[int, float, int, str]]] = defaultdict(list)
        self.rows: dict[
            str, dict[str, Any]
        ] = {}  # queued URL -> its row (signals, depth, attempts)
        self.sitemap_queue: dict[str, deque[tuple[str, int]]] = defaultdict(deque)
        self.known: set[str] = set()
        self.per_host: Counter[str] = Counter()
        self.topics_fetched: Counter[str] = Counter()
        self.stats: Counter[str] = Counter()
        self.fetched = (
            0  # content pages fetched or attempted to completion (counts toward max_pages)
        )
        self.in_flight = 0
        self.queued = 0  # URLs in the heaps
        self.seeds_pending = 0  # seeds not yet fetched or denied: budget reserved for them
        # scheduler state (see the module docstring)
        self.host_key: dict[str, str] = {}
        self.key_hosts: dict[str, set[str]] = defaultdict(set)
        self.key_active: Counter[str] = Counter()
        self.hold: dict[str, float] = {}  # host -> monotonic time its robots.txt is asked again
        self.waiting: list[tuple[float, int, str]] = []
        self.probing: list[tuple[float, int, str]] = []  # abandoned keys, by end of cool-down
        self.ready: list[tuple[int, float, int, str]] = []
        self._ver: dict[str, int] = {}
        self._in_heap: set[str] = set()
        self._tick = 0
        self._to_resolve: deque[str] = deque()
        self._unresolved: set[str] = set()
        self.sched_s = 0.0  # CPU spent choosing what to fetch next
        self._finished: list[str] = []  # URLs that reached a final state since the checkpoint
        self._langid = None
        self._since_checkpoint = 0

    # --- setup ------------------------------------------------------------------------
    def _load(self) -> None:
        requeue: list[str] = []
        for row in list(self.frontier.rows()):
            url, host = row["url"], row["host"]
            self.known.add(url)
            if row["state"] != "skipped" or (row["skip_reason"] or "").startswith("host-gave-up"):
                self.traps.register(url)
                self.per_host[host] += 1
            if self.resume and (
                (row["state"] == "denied" and row["robots_crawl"] == UNREACHABLE)
                or (
                    row["state"] == "skipped"
                    and (row["skip_reason"] or "").startswith("host-gave-up")
                )
            ):
                # An outage (robots.txt unreachable, breaker open) is not a verdict: ask again.
                row.update(state="queued", skip_reason=None)
                requeue.append(url)
            if row["state"] == "queued":
                row["tier"] = (
                    0
                    if row["source"] == "seed"
                    else (row["tier"] if row["tier"] is not None else 1)
                )
                self._push(row)
            elif row["state"] == "done":
                self.fetched += 1
                self.topics_fetched[row["topic"] or "other"] += 1
                if row["lang"]:
                    self.langs.observe(host, row["lang"])
        if requeue:
            with self.frontier:
                for url in requeue:
                    self.frontier.update(url, {"state": "queued", "skip_reason": None})
            self.stats["requeued"] += len(requeue)
        for sm in self.frontier.sitemaps("queued"):
            self.sitemap_queue[sm["host"]].append((sm["url"], sm["depth"]))
            self._host_has_work(sm["host"])

    def _push(self, row: dict[str, Any]) -> None:
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
        self._host_has_work(host)

    def _pop(self, host: str) -> dict[str, Any]:
        _, _, _, url = heapq.heappop(self.heaps[host])
        self.queued -= 1
        return self.rows.pop(url)

    def _unreserve(self, row: dict[str, Any]) -> None:
        if row.pop("_reserved", False):
            self.seeds_pending -= 1

    def _in_shard(self, host: str) -> bool:
        return self.cfg.shards == 1 or shard_of(host, self.cfg.shards) == self.cfg.shard

    def _new_row(
        self,
        url: str,
        depth: int,
        source: str,
        parent: str | None = None,
        anchor: str = "",
        parent_topic: str = "other",
        tier: int = 1,
    ) -> dict[str, Any]:
        host = host_of(url)
        topic, topic_sig = classify_topic(
            tokens_of(url.split("://", 1)[-1].partition("/")[2], anchor)
        )
        if topic == "other" and parent_topic != "other":
            topic, topic_sig = parent_topic, 0.1  # weak prior: pages link within their topic
        lang_sig = self.langs.signal(host)
        p_sig, why = path_signal(url)
        prio = combine(lang_sig, topic_sig, p_sig, depth, source == "sitemap", self.weights)
        reasons = [f"lang {lang_sig:.2f}", f"topic {topic} {topic_sig:.2f}", *why, f"depth {depth}"]
        if tier == 0:
            first = "seed" if source == "seed" else "redirect of a seed"
            reasons.insert(0, f"{first}: fetched before discovered URLs")
        return {
            "url": url,
            "host": host,
            "depth": depth,
            "state": "queued",
            "source": source,
            "parent": parent,
            "anchor": anchor[:200],
            "priority": prio,
            "lang_signal": lang_sig,
            "topic": topic,
            "topic_signal": topic_sig,
            "path_signal": p_sig,
            "priority_reasons": "; ".join(reasons),
            "attempts": 0,
            "tier": tier,
        }

    def _discover(
        self,
        url: str,
        depth: int,
        source: str,
        parent: str | None = None,
        anchor: str = "",
        parent_topic: str = "other",
        redirect_hops: int = 0,
        *,
        tier: int = 1,
        routed: bool = False,
    ) -> str:
        """Add a URL (inside the caller's transaction); returns 'queued', 'known' or the skip reason."""
        if url in self.known:
            return "known"
        self.known.add(url)
        tier = 0 if source == "seed" else tier
        row = self._new_row(url, depth, source, parent, anchor, parent_topic, tier)
        row["redirect_hops"] = redirect_hops
        host = row["host"]
        reason = None
        if (
            parent is not None
            and not routed
            and not self.cfg.follow_external
            and host != host_of(parent)
        ):
            reason = "external: follow_external is off"
        elif not self._in_shard(host):
            # Routed, not dropped: written to that shard's inbox at the next checkpoint.
            reason = f"{OTHER_SHARD}: routed to shard {shard_of(host, self.cfg.shards)}"
        elif depth > self.cfg.max_depth:
            reason = f"max-depth: {depth} > {self.cfg.max_depth}"
        elif self.cfg.max_pages_per_host and self.per_host[host] >= self.cfg.max_pages_per_host:
            reason = f"host-budget: {self.cfg.max_pages_per_host} URLs"
        else:
            reason = self.traps.check(url, parent)
        if reason:
            row.update(state="skipped", skip_reason=reason)
            self.frontier.add(row)
            self.stats["skipped"] += 1
            self._finished.append(url)
            return reason
        self.per_host[host] += 1
        self.frontier.add(row)
        row["seq"] = self.frontier._seq
        self._push(row)
        return "queued"

    # --- scheduling -------------------------------------------------------------------
    def _limit_reached(self) -> bool:
        return (
            self.cfg.max_pages is not None and self.fetched + self.in_flight >= self.cfg.max_pages
        )

    def _budget_ok(self, tier: int) -> bool:
        """May an item of this tier start? Seeds' share of max_pages is reserved for them."""
        if self.cfg.max_pages is None:
            return True
        used = self.fetched + self.in_flight
        if tier == _DISCOVERED:
            used += self.seeds_pending
        return used < self.cfg.max_pages

    def _host_has_work(self, host: str) -> None:
        key = self.host_key.get(host)
        if key is None:
            key = self.politeness.known_key(host)
            if key is None:  # a name: resolve it first (its key is the server's address)
                if host not in self._unresolved:
                    self._unresolved.add(host)
                    self._to_resolve.append(host)
                return
            self.host_key[host] = key
        self.key_hosts[key].add(host)
        self._schedule(key)

    async def _resolve(self, host: str) -> None:
        key = await self.politeness.resolve(host)
        self._unresolved.discard(host)
        self.host_key[host] = key
        self.key_hosts[key].add(host)
        self._schedule(key)

    def _host_item(self, host: str) -> tuple[int, float] | None:
        """(tier, -score) of a host's next piece of work; None when it has none."""
        heap = self.heaps.get(host)
        if heap and heap[0][0] == 0:
            return _SEED, heap[0][1]
        if self.sitemap_queue.get(host):
            return _SITEMAP, float(
                "-inf"
            )  # sitemaps before discovered URLs: they feed the frontier
        if not heap:
            return None
        prio, url = -heap[0][1], heap[0][3]
        row = self.rows[url]
        score = prio + self.weights.lang * (self.langs.signal(host) - (row["lang_signal"] or 0))
        score -= topic_quota_penalty(
            row["topic"] or "other", self.topics_fetched, self.cfg.topic_max_share
        )
        return _DISCOVERED, -score

    def _key_entry(
        self, key: str, now: float
    ) -> tuple[float, tuple[int, float] | None, str | None] | None:
        """(time the key may start, its best item, that item's host), or None without work."""
        hosts = self.key_hosts.get(key)
        best: tuple[int, float] | None = None
        best_host, held_until = None, float("inf")
        for host in list(hosts or ()):
            item = self._host_item(host)
            if item is None:
                hosts.discard(host)
                continue
            hold = self.hold.get(host, 0.0)
            if hold > now:
                held_until = min(held_until, hold)
            elif best is None or item < best:
                best, best_host = item, host
        if not hosts:
            self.key_hosts.pop(key, None)
            return None
        at = self.politeness.next_time(key)
        return (at, best, best_host) if best is not None else (max(at, held_until), None, None)

    def _schedule(self, key: str) -> None:
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

    def _pick(self) -> tuple[str, str, int, float]:
        """(key, host, item tier, 0) of the best ready work, or ('', '', -1, wait) when none may start."""
        now = time.monotonic()
        while self.probing and self.probing[0][0] <= now:
            _, ver, key = heapq.heappop(self.probing)
            if self._ver.get(key) == ver:
                self._in_heap.discard(key)
                self.politeness.reopen(key)  # its cool-down is over: try it again
                self.stats["breaker_probes"] += 1
                self._schedule(key)
        while self.waiting and self.waiting[0][0] <= now:
            _, ver, key = heapq.heappop(self.waiting)
            if self._ver.get(key) == ver:
                self._in_heap.discard(key)
                self._schedule(key)
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
                self._schedule(key)  # not ready after all (backoff, robots.txt hold): wait
                continue
            if item > (tier, neg) and refreshed < 16 and self.ready:
                # Its score drifted down since it was queued: re-rank it against the others.
                refreshed += 1
                self._schedule(key)
                continue
            if not self._budget_ok(item[0]):
                # The rest of max_pages is held for seeds still waiting (robots.txt, backoff):
                # this key keeps its place and is looked at again shortly.
                self._schedule(key)
                blocked = True
                break
            return key, host, item[0], 0.0
        wait = self.waiting[0][0] - now if self.waiting else float("inf")
        if blocked:
            wait = min(wait, 0.25)
        return "", "", -1, max(0.0, wait)

    async def run(self) -> dict[str, Any]:
        """Crawl until the frontier is empty or max_pages is reached; returns the summary."""
        cfg = self.cfg
        started = time.monotonic()
        warc = WarcStore(
            self.out_dir, prefix=cfg.warc_prefix, max_bytes=cfg.warc_max_bytes, fsync=cfg.fsync
        )
        recovered = warc.recover(self.frontier.warc_ends())
        self.warc = warc
        self._load()
        self._lang("warm up")  # load lid.176 now, not in the middle of the crawl
        with self.frontier:
            if not self.resume:
                self.frontier.set_meta("config", cfg.model_dump())
                self.frontier.set_meta("seeds", self.seeds)
            for seed in self.seeds:
                try:
                    self._discover(canonicalize(seed), 0, "seed")
                except UrlError as exc:
                    raise CrawlError(f"bad seed URL {seed!r}: {exc}") from exc
        self._read_inbox()
        politeness = self.politeness
        try:
            async with self.downloader:
                self.fetcher = self.downloader.fetcher
                self.robots = self.downloader.robots
                for rec in self.frontier.robots_records():
                    self.robots.preload(
                        RobotsFetch(
                            rec["origin"],
                            rec["status"],
                            rec["body"] or b"",
                            rec["fetched_at"],
                            rec["error"],
                        )
                    )
                cpu0 = time.process_time()
                await self._loop()
                crawl_cpu = time.process_time() - cpu0  # CPU of the crawl loop itself
                crawl_s = time.monotonic() - started  # throughput excludes writing the outputs
        finally:
            warc.close()
            with self.frontier:
                self._skip_abandoned(politeness)
            self._flush_outbox()
            counts = write_outputs(self.frontier, self.out_dir)
            self.frontier.close()
        elapsed = time.monotonic() - started
        crawl_s = locals().get("crawl_s", elapsed)
        fetched = self.stats["fetched"]
        return {
            "out_dir": str(self.out_dir),
            "pages": counts["pages"],
            "skipped": counts["skipped"],
            "fetched": fetched,
            "denied": self.stats["denied"],
            "errors": self.stats["errors"],
            "retries": self.stats["retries"],
            "bytes": self.stats["bytes"],
            "statuses": {str(k): v for k, v in sorted(self._statuses().items())},
            "robots_fetched": self.stats["robots"],
            "robots_waits": self.stats["robots_waits"],
            "sitemaps": self.stats["sitemaps"],
            "elapsed_s": round(elapsed, 3),
            "pages_per_s": round(fetched / crawl_s, 3) if crawl_s else 0.0,
            "crawl_cpu_s": round(locals().get("crawl_cpu", 0.0), 3),
            "scheduler_s": round(self.sched_s, 4),
            "scheduler_us_per_page": round(1e6 * self.sched_s / fetched, 1) if fetched else 0.0,
            "recovered": recovered,
            "requeued": self.stats["requeued"],
            "breaker_probes": self.stats["breaker_probes"],
            "routed_out": self.stats["routed_out"],
            "inbox": self.stats["inbox"],
            "inbox_rejected": self.stats["inbox_rejected"],
            "queued_left": self.queued,
        }

    def _statuses(self) -> dict[str, int]:
        return {k.split(":", 1)[1]: v for k, v in self.stats.items() if k.startswith("status:")}

    def _abandon_host(self, host: str) -> None:
        heap = self.heaps.get(host)
        while heap:
            row = self._pop(host)
            self._unreserve(row)
            self.frontier.update(row["url"], {"state": "skipped", "skip_reason": GAVE_UP})
            self._finished.append(row["url"])

    def _skip_abandoned(self, politeness: Politeness) -> None:
        for host, heap in list(self.heaps.items()):
            if heap and politeness.gave_up(host):
                self._abandon_host(host)

    # --- cross-shard routing ------------------------------------------------------------
    def _read_inbox(self) -> None:
        """Queue the URLs other shards routed here (each part file once, also across --resume)."""
        if self.cfg.shards == 1:
            return
        inbox = self.shard_root / "outbox" / f"to-{self.cfg.shard}"
        consumed = set(self.frontier.get_meta("inbox_consumed") or [])
        for part in sorted(inbox.glob("part-*.parquet")) if inbox.is_dir() else []:
            if part.name in consumed:
                continue
            try:
                rows = pq.read_table(part).to_pylist()
            except (OSError, pa.ArrowException) as exc:
                raise CrawlError(
                    f"{part}: unreadable outbox part ({exc}); delete the file (its sender "
                    "rewrites its outbox on --resume only for new links) or restore it"
                ) from exc
            with self.frontier:
                for r in rows:
                    try:
                        url = canonicalize(r["url"])
                    except (UrlError, TypeError, KeyError) as exc:
                        self.stats["inbox_rejected"] += 1
                        self.stats[f"inbox_rejected: {part.name}: {exc}"[:200]] += 1
                        continue
                    self.stats["inbox"] += 1
                    self._discover(
                        url,
                        int(r.get("depth") or 0),
                        r.get("source") or "link",
                        r.get("parent"),
                        r.get("anchor") or "",
                        routed=True,
                    )
                consumed.add(part.name)
                self.frontier.set_meta("inbox_consumed", sorted(consumed))

    def _flush_outbox(self) -> None:
        """Append the links routed to other shards since the last flush to their inboxes."""
        if self.cfg.shards == 1:
            return
        last = self.frontier.get_meta("outbox_seq") or 0
        rows = self.frontier.skipped_since(last, OTHER_SHARD)
        if not rows:
            return
        by_shard: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            by_shard[shard_of(r["host"], self.cfg.shards)].append(r)
        k = self.cfg.shard
        first, end = rows[0]["seq"], rows[-1]["seq"]
        for j, rs in sorted(by_shard.items()):
            box = self.shard_root / "outbox" / f"to-{j}"
            box.mkdir(parents=True, exist_ok=True)
            table = pa.table(
                {
                    "url": [r["url"] for r in rs],
                    "depth": [r["depth"] for r in rs],
                    "source": [r["source"] for r in rs],
                    "parent": [r["parent"] for r in rs],
                    "anchor": [r["anchor"] for r in rs],
                    "from_shard": [k] * len(rs),
                },
                schema=OUTBOX_SCHEMA,
            )
            path = box / f"part-{k}-{first:012d}-{end:012d}.parquet"
            tmp = path.with_name(path.name + ".tmp")
            pq.write_table(table, tmp)
            os.replace(tmp, path)  # a reader never sees half a part
            self.stats["routed_out"] += len(rs)
        with self.frontier:
            self.frontier.set_meta("outbox_seq", end)

    # --- the loop -----------------------------------------------------------------------
    async def _loop(self) -> None:
        tasks: set[asyncio.Task] = set()
        resolving: set[asyncio.Task] = set()
        while True:
            while self._to_resolve and len(resolving) < _RESOLVERS:
                resolving.add(asyncio.create_task(self._resolve(self._to_resolve.popleft())))
            wait = float("inf")
            t0 = time.thread_time()
            while len(tasks) < self.cfg.concurrency and not self._limit_reached():
                key, host, tier, wait = self._pick()
                if not key:
                    break
                self.key_active[key] += 1
                self._schedule(key)  # more connections to this server may start (K > 1)
                tasks.add(asyncio.create_task(self._work(key, host, tier)))
            self.sched_s += time.thread_time() - t0
            if not tasks and not resolving:
                if self._limit_reached() or wait == float("inf"):
                    return  # nothing left that may be fetched (abandoned servers do not count)
                await asyncio.sleep(min(wait, 1.0))
                continue
            if self.probing:  # wake up for the next probe while other work keeps the crawl going
                wait = min(wait, max(0.0, self.probing[0][0] - time.monotonic()))
            done, _ = await asyncio.wait(
                tasks | resolving,
                timeout=None if wait == float("inf") else min(wait, 1.0),
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in done:
                tasks.discard(task)
                resolving.discard(task)
                task.result()  # a bug in the crawler must stop it, not vanish

    async def _work(self, key: str, host: str, tier: int) -> None:
        try:
            if tier == _SITEMAP and self.sitemap_queue.get(host):
                url, depth = self.sitemap_queue[host].popleft()
                await self._sitemap(url, depth)
            elif self.heaps.get(host):
                await self._visit(self._pop(host))
        finally:
            self.key_active[key] -= 1
            t0 = time.thread_time()
            self._schedule(key)
            self.sched_s += time.thread_time() - t0

    # --- robots and sitemaps ----------------------------------------------------------
    def _robots_fetched(self, rec: RobotsFetch) -> None:
        self.stats["robots"] += 1
        robots = RobotsTxt.from_response(rec.status, rec.body)
        with self.frontier:
            self.frontier.save_robots(rec.origin, rec.status, rec.body, rec.error)
            if rec.result is not None and rec.result.hops:  # archived: consent at fetch time
                loc = self.warc.write(rec.result.hops, rec.result.fetched_at)
                self.frontier.commit_warc(loc.file, loc.end)
            if self.cfg.use_sitemaps:
                for sm in robots.sitemaps[:100]:
                    try:
                        url = canonicalize(sm)
                    except UrlError:
                        continue
                    if self._in_shard(host_of(url)) and self.frontier.add_sitemap(
                        url, host_of(url), 0
                    ):
                        self.sitemap_queue[host_of(url)].append((url, 0))
                        self._host_has_work(host_of(url))

    async def _sitemap(self, url: str, depth: int) -> None:
        crawl, _, robots = await self.robots.decide(url)
        self.politeness.set_crawl_delay(host_of(url), robots.crawl_delay(self.cfg.agent))
        if self._robots_wait(host_of(url), url, crawl):
            self.sitemap_queue[host_of(url)].appendleft((url, depth))
            return
        found, error = 0, None
        if crawl != ALLOWED:
            error = f"robots {crawl}"
        else:
            res = await self.fetcher.fetch(
                url, max_redirects=self.cfg.max_redirects, wanted_types=("*",)
            )
            self.stats["sitemaps"] += 1
            if res.hops:  # archived like robots.txt: what the site declared at fetch time
                loc = self.warc.write(res.hops, res.fetched_at)
                with self.frontier:
                    self.frontier.commit_warc(loc.file, loc.end)
            if not res.ok:
                error = res.error or f"HTTP {res.status}"
            else:
                try:
                    sm = parse_sitemap(res.body, max_urls=self.cfg.max_sitemap_urls)
                except ValueError as exc:
                    error = str(exc)
                else:
                    with self.frontier:
                        for child in sm.sitemaps:
                            try:
                                c = canonicalize(child)
                            except UrlError:
                                continue
                            if (
                                depth < self.cfg.max_sitemap_depth
                                and self._in_shard(host_of(c))
                                and self.frontier.add_sitemap(c, host_of(c), depth + 1)
                            ):
                                self.sitemap_queue[host_of(c)].append((c, depth + 1))
                                self._host_has_work(host_of(c))
                        for loc in sm.urls:
                            try:
                                found += (
                                    self._discover(canonicalize(loc), 1, "sitemap", parent=url)
                                    == "queued"
                                )
                            except UrlError:
                                continue
                        self.frontier.finish_sitemap(url, found, None)
                    return
        with self.frontier:
            self.frontier.finish_sitemap(url, found, error)

    def _robots_wait(self, host: str, url: str, crawl: str) -> bool:
        """True (and the host held) while the origin's robots.txt outage is still provisional."""
        if crawl != UNREACHABLE:
            return False
        retry = self.robots.retry_at(url)
        if retry is None:
            return False
        self.hold[host] = retry
        self.stats["robots_waits"] += 1
        return True

    # --- pages ------------------------------------------------------------------------
    async def _visit(self, row: dict[str, Any]) -> None:
        url, host = row["url"], row["host"]
        crawl, training, robots = await self.robots.decide(url)
        self.politeness.set_crawl_delay(host, robots.crawl_delay(self.cfg.agent))
        if self._robots_wait(host, url, crawl):
            self._push(row)  # queued, not denied: robots.txt is asked again after a backoff
            return
        if crawl != ALLOWED:
            self.stats["denied"] += 1
            self._unreserve(row)
            self._finished.append(url)
            with self.frontier:
                self.frontier.update(
                    url,
                    {
                        "state": "denied",
                        "crawl_allowed": 0,
                        "training_allowed": 0,
                        "robots_crawl": crawl,
                        "robots_training": training,
                    },
                )
            return
        if self.politeness.gave_up(host) or not self._budget_ok(
            _SEED if row.get("tier") == 0 else _DISCOVERED
        ):
            self._push(row)  # stays queued for --resume or the abandoned-host report
            return
        self._unreserve(row)
        self.in_flight += 1
        try:
            res = await self.fetcher.fetch(url)
        finally:
            self.in_flight -= 1
        if res.status is None and (res.error or "").startswith("host-gave-up"):
            self._push(row)  # the breaker opened while it waited: queued, probed after cool-down
            return
        transient = res.status in RETRY_STATUSES or (
            res.status is None and (res.error or "").startswith(_TRANSIENT_ERRORS)
        )
        if (
            transient
            and row["attempts"] < self.cfg.max_retries
            and not self.politeness.gave_up(host)
        ):
            row["attempts"] += 1
            self.stats["retries"] += 1
            with self.frontier:
                self.frontier.update(url, {"attempts": row["attempts"]})
            self._push(row)
            return
        self._record(row, res, crawl, training)

    def _record(self, row: dict[str, Any], res: FetchResult, crawl: str, training: str) -> None:
        url, host = row["url"], row["host"]
        fields: dict[str, Any] = {
            "state": "done",
            "status": res.status,
            "fetched_at": res.fetched_at,
            "final_url": res.final_url,
            "content_type": mime_of(res.content_type) or None,
            "crawl_allowed": 1,
            "robots_crawl": crawl,
            "robots_training": training,
            "error": res.error,
            "attempts": row["attempts"] + 1,
            "elapsed_s": round(res.elapsed_s, 4),
            "noindex": 0,
            "nofollow": 0,
            "noai": 0,
            "outlinks": 0,
        }
        self.stats["fetched"] += 1
        self.stats[f"status:{res.status if res.status is not None else 'none'}"] += 1
        self.stats["errors"] += res.error is not None
        links, page_topic = [], row["topic"] or "other"
        if res.hops:
            xrt = [
                v
                for hop in res.hops[-1:]
                for k, v in hop.response_headers
                if k.lower() == "x-robots-tag"
            ]
            info = None
            if res.ok and mime_of(res.content_type) in ("text/html", "application/xhtml+xml", ""):
                info = parse_html(
                    res.body, url, agent=self.cfg.agent, training_agent=self.cfg.training_agent
                )
            d = info.directives if info else Directives()
            apply_x_robots_tag(d, xrt, self.cfg.agent, self.cfg.training_agent)
            fields.update(noindex=int(d.noindex), nofollow=int(d.nofollow), noai=int(d.noai))
            if res.ok:
                fields.update(
                    content_sha256=hashlib.sha256(res.body).hexdigest(),
                    content_length=len(res.body),
                )
                self.stats["bytes"] += len(res.body)
            if info is not None:
                lang, score = self._lang(info.text)
                page_topic = classify_topic(tokens_of(info.title, info.text[:5000]))[0]
                fields.update(
                    title=info.title[:500], lang=lang, lang_score=score, page_topic=page_topic
                )
                if lang:
                    self.langs.observe(host, lang)
                self.traps.observe(url, info.text, [lk.url for lk in info.links])
                if not d.nofollow:
                    links = [lk for lk in info.links if not lk.nofollow]
            loc = self.warc.write(res.hops, res.fetched_at)
            fields.update(warc_file=loc.file, warc_offset=loc.offset, warc_length=loc.length)
            if res.status in REDIRECT_STATUSES and res.header("location"):
                try:
                    fields["redirect_to"] = canonicalize(res.header("location") or "", url)
                except UrlError as exc:
                    fields["error"] = f"bad redirect location: {exc}"
        fields["training_allowed"] = int(training == ALLOWED and not fields["noai"])
        self.topics_fetched[row["topic"] or "other"] += 1
        with self.frontier:
            if res.hops:
                self.frontier.commit_warc(loc.file, loc.end)
            fields["outlinks"] = len(links)
            for lk in links:
                self._discover(lk.url, row["depth"] + 1, "link", url, lk.anchor, page_topic)
            if fields.get("redirect_to"):
                # Redirects go through the frontier so robots, politeness and de-duplication apply
                # to every hop; a loop ends at the first already-known URL.
                hops = (row.get("redirect_hops") or 0) + 1
                if hops > self.cfg.max_redirects:
                    fields["error"] = f"too-many-redirects: more than {self.cfg.max_redirects}"
                elif (
                    self._discover(
                        fields["redirect_to"],
                        row["depth"],
                        "redirect",
                        url,
                        "",
                        page_topic,
                        hops,
                        tier=row.get("tier", 1),  # a seed's redirect keeps the seed's place
                    )
                    == "known"
                ):
                    fields["error"] = (
                        fields["error"] or "redirect to an already-known URL (loop or duplicate)"
                    )
            self.frontier.update(url, fields)
        self.fetched += 1
        self._finished.append(url)
        self._since_checkpoint += 1
        if self._since_checkpoint >= self.cfg.checkpoint_every:
            self._checkpoint()
        if self.progress is not None:
            self.progress(
                {
                    "fetched": self.fetched,
                    "max_pages": self.cfg.max_pages,
                    "url": url,
                    "status": res.status,
                    "queued": self.queued,
                }
            )

    def _checkpoint(self) -> None:
        """Append what finished since the last checkpoint (a part file), route other shards' links."""
        self._since_checkpoint = 0
        finished, self._finished = self._finished, []
        write_checkpoint(self.frontier, self.out_dir, finished)
        self._flush_outbox()

    def _lang(self, text: str) -> tuple[str | None, float | None]:
        if not text.strip():
            return None, None
        if self._langid is None:
            from common.langid import LanguageIdentifier

            self._langid = LanguageIdentifier()
        lang, score = self._langid.predict(text)
        return lang, round(score, 4)


async def crawl(
    seeds: list[str],
    out_dir: Path,
    config: CrawlConfig | dict[str, Any] | None = None,
    *,
    resume: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run (or resume) a crawl into `out_dir`; returns its summary."""
    crawler = Crawler(
        seeds, Path(out_dir), CrawlConfig.from_any(config), resume=resume, progress=progress
    )
    return await crawler.run()
