"""The crawl loop: many hosts in flight at once, one polite request at a time per host.

Per host the order is robots.txt, then its sitemaps, then content URLs best-priority first.
Across hosts the scheduler starts the ready host whose best URL has the highest effective
priority (stored priority, refreshed language signal, topic-quota penalty).
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crawlers.crawl.canon import UrlError, canonicalize, host_of
from crawlers.crawl.config import CrawlConfig, shard_of
from crawlers.crawl.fetcher import REDIRECT_STATUSES, Fetcher, FetchResult, mime_of
from crawlers.crawl.frontier import Frontier
from crawlers.crawl.html import Directives, apply_x_robots_tag, parse_html
from crawlers.crawl.output import write_outputs
from crawlers.crawl.politeness import RETRY_STATUSES, Politeness
from crawlers.crawl.priority import (
    LanguageTracker,
    TrapDetector,
    Weights,
    classify_topic,
    combine,
    path_pattern,
    path_signal,
    tokens_of,
    topic_quota_penalty,
)
from crawlers.crawl.robots_policy import ALLOWED, RobotsFetch, RobotsPolicy
from crawlers.crawl.sitemaps import parse_sitemap
from crawlers.crawl.warc import WarcStore
from crawlers.robots import RobotsTxt

Progress = Callable[[dict[str, Any]], None]
_TRANSIENT_ERRORS = ("timeout", "connect-error", "connection-reset", "payload-error")


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
        self.seeds = seeds
        self.weights = Weights()
        self.traps = TrapDetector(
            config.max_url_length,
            config.max_repeated_segments,
            config.max_urls_per_pattern,
            config.max_calendar_urls,
        )
        self.langs = LanguageTracker(config.target_languages, config.host_languages_path)
        self.heaps: dict[str, list[tuple[float, int, str]]] = defaultdict(list)
        self.rows: dict[
            str, dict[str, Any]
        ] = {}  # queued URL -> its row (signals, depth, attempts)
        self.sitemap_queue: dict[str, list[tuple[str, int]]] = defaultdict(list)
        self.known: set[str] = set()
        self.per_host: Counter[str] = Counter()
        self.topics_fetched: Counter[str] = Counter()
        self.active: set[str] = set()
        self.stats: Counter[str] = Counter()
        self.fetched = (
            0  # content pages fetched or attempted to completion (counts toward max_pages)
        )
        self.in_flight = 0
        self._langid = None
        self._since_checkpoint = 0

    # --- setup ------------------------------------------------------------------------
    def _load(self) -> None:
        for row in self.frontier.rows():
            url, host = row["url"], row["host"]
            self.known.add(url)
            if row["state"] != "skipped":
                self.traps.pattern_counts[path_pattern(url)] += 1
                self.per_host[host] += 1
            if row["state"] == "queued":
                self._push(row)
            elif row["state"] == "done":
                self.fetched += 1
                self.topics_fetched[row["topic"] or "other"] += 1
                if row["lang"]:
                    self.langs.observe(host, row["lang"])
        for sm in self.frontier.sitemaps("queued"):
            self.sitemap_queue[sm["host"]].append((sm["url"], sm["depth"]))

    def _push(self, row: dict[str, Any]) -> None:
        self.rows[row["url"]] = row
        heapq.heappush(
            self.heaps[row["host"]], (-(row["priority"] or 0.0), row["seq"] or 0, row["url"])
        )

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
    ) -> str:
        """Add a URL (inside the caller's transaction); returns 'queued', 'known' or the skip reason."""
        if url in self.known:
            return "known"
        self.known.add(url)
        row = self._new_row(url, depth, source, parent, anchor, parent_topic)
        row["redirect_hops"] = redirect_hops
        host = row["host"]
        reason = None
        if not self._in_shard(host):
            reason = f"other-shard: host belongs to shard {shard_of(host, self.cfg.shards)}"
        elif parent is not None and not self.cfg.follow_external and host != host_of(parent):
            reason = "external: follow_external is off"
        elif depth > self.cfg.max_depth:
            reason = f"max-depth: {depth} > {self.cfg.max_depth}"
        elif self.cfg.max_pages_per_host and self.per_host[host] >= self.cfg.max_pages_per_host:
            reason = f"host-budget: {self.cfg.max_pages_per_host} URLs"
        else:
            reason = self.traps.check(url)
        if reason:
            row.update(state="skipped", skip_reason=reason)
            self.frontier.add(row)
            self.stats["skipped"] += 1
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

    def _has_work(self, host: str) -> bool:
        return bool(self.sitemap_queue.get(host) or self.heaps.get(host))

    def _pick(self, politeness: Politeness) -> tuple[str, float]:
        """Best ready host and the wait until the next one becomes ready ('' if none ready)."""
        best, best_score, wait = "", float("-inf"), float("inf")
        now = time.monotonic()
        for host in [h for h in list(self.heaps) + list(self.sitemap_queue) if self._has_work(h)]:
            if host in self.active:
                continue
            ready = politeness.ready_in(host, now)
            if ready > 0:
                wait = min(wait, ready)
                continue
            if self.sitemap_queue.get(host):
                score = float("inf")  # sitemaps first: they feed the frontier
            else:
                prio, _, url = self.heaps[host][0]
                row = self.rows[url]
                score = -prio + self.weights.lang * (
                    self.langs.signal(host) - (row["lang_signal"] or 0)
                )
                score -= topic_quota_penalty(
                    row["topic"] or "other", self.topics_fetched, self.cfg.topic_max_share
                )
            if score > best_score:
                best, best_score = host, score
        return best, wait

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
        politeness = Politeness(
            delay=cfg.delay,
            max_crawl_delay=cfg.max_crawl_delay,
            backoff_base=cfg.backoff_base,
            backoff_max=cfg.backoff_max,
            max_retry_after=cfg.max_retry_after,
            breaker_threshold=cfg.breaker_threshold,
            breaker_cooldown=cfg.breaker_cooldown,
            breaker_max_trips=cfg.breaker_max_trips,
            seed=cfg.seed,
        )
        self.politeness = politeness
        fetcher = Fetcher(
            user_agent=cfg.user_agent_header(),
            politeness=politeness,
            allow_private_networks=cfg.allow_private_networks,
            connect_timeout=cfg.connect_timeout,
            read_timeout=cfg.read_timeout,
            total_timeout=cfg.total_timeout,
            max_body_bytes=cfg.max_body_bytes,
            max_decompressed_bytes=cfg.max_decompressed_bytes,
            wanted_types=tuple(cfg.wanted_types),
            max_redirects=0,
            max_connections=cfg.concurrency * 2,
        )
        try:
            async with fetcher:
                self.fetcher = fetcher
                self.robots = RobotsPolicy(
                    fetcher,
                    agent=cfg.agent,
                    training_agent=cfg.training_agent,
                    max_age_s=cfg.robots_max_age_s,
                    max_redirects=cfg.robots_max_redirects,
                    retries=cfg.robots_retries,
                    on_fetch=self._robots_fetched,
                )
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
                await self._loop(politeness)
                crawl_s = time.monotonic() - started  # throughput excludes writing the outputs
        finally:
            warc.close()
            with self.frontier:
                self._skip_abandoned(politeness)
            counts = write_outputs(self.frontier, self.out_dir)
            self.frontier.close()
        elapsed = time.monotonic() - started
        crawl_s = locals().get("crawl_s", elapsed)
        return {
            "out_dir": str(self.out_dir),
            "pages": counts["pages"],
            "skipped": counts["skipped"],
            "fetched": self.stats["fetched"],
            "denied": self.stats["denied"],
            "errors": self.stats["errors"],
            "retries": self.stats["retries"],
            "bytes": self.stats["bytes"],
            "statuses": {str(k): v for k, v in sorted(self._statuses().items())},
            "robots_fetched": self.stats["robots"],
            "sitemaps": self.stats["sitemaps"],
            "elapsed_s": round(elapsed, 3),
            "pages_per_s": round(self.stats["fetched"] / crawl_s, 3) if crawl_s else 0.0,
            "recovered": recovered,
            "queued_left": sum(len(h) for h in self.heaps.values()),
        }

    def _statuses(self) -> dict[str, int]:
        return {k.split(":", 1)[1]: v for k, v in self.stats.items() if k.startswith("status:")}

    def _skip_abandoned(self, politeness: Politeness) -> None:
        for host, heap in self.heaps.items():
            if heap and politeness.gave_up(host):
                for _, _, url in heap:
                    self.frontier.update(
                        url,
                        {"state": "skipped", "skip_reason": "host-gave-up: circuit breaker open"},
                    )
                heap.clear()

    async def _loop(self, politeness: Politeness) -> None:
        tasks: set[asyncio.Task] = set()
        while True:
            wait = float("inf")
            while len(tasks) < self.cfg.concurrency and not self._limit_reached():
                host, wait = self._pick(politeness)
                if not host:
                    break
                self.active.add(host)
                tasks.add(asyncio.create_task(self._work(host)))
            if not tasks:
                if self._limit_reached() or wait == float("inf"):
                    return  # nothing left that may be fetched
                await asyncio.sleep(min(wait, 1.0))
                continue
            done, tasks = await asyncio.wait(
                tasks, timeout=min(wait, 1.0), return_when=asyncio.FIRST_COMPLETED
            )
            for task in done:
                task.result()  # a bug in the crawler must stop it, not vanish

    async def _work(self, host: str) -> None:
        try:
            if self.sitemap_queue.get(host):
                url, depth = self.sitemap_queue[host].pop(0)
                await self._sitemap(url, depth)
            else:
                _, _, url = heapq.heappop(self.heaps[host])
                await self._visit(self.rows.pop(url))
        finally:
            self.active.discard(host)

    # --- robots and sitemaps ----------------------------------------------------------
    def _robots_fetched(self, rec: RobotsFetch) -> None:
        self.stats["robots"] += 1
        robots = RobotsTxt.from_response(rec.status, rec.body)
        with self.frontier:
            self.frontier.save_robots(rec.origin, rec.status, rec.body, rec.error)
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

    async def _sitemap(self, url: str, depth: int) -> None:
        crawl, _, robots = await self.robots.decide(url)
        self.politeness.set_crawl_delay(host_of(url), robots.crawl_delay(self.cfg.agent))
        found, error = 0, None
        if crawl != ALLOWED:
            error = f"robots {crawl}"
        else:
            res = await self.fetcher.fetch(
                url, max_redirects=self.cfg.max_redirects, wanted_types=("*",)
            )
            self.stats["sitemaps"] += 1
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

    # --- pages ------------------------------------------------------------------------
    async def _visit(self, row: dict[str, Any]) -> None:
        url, host = row["url"], row["host"]
        crawl, training, robots = await self.robots.decide(url)
        self.politeness.set_crawl_delay(host, robots.crawl_delay(self.cfg.agent))
        if crawl != ALLOWED:
            self.stats["denied"] += 1
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
        if self.politeness.gave_up(host) or self._limit_reached():
            self._push(row)  # stays queued for --resume or the abandoned-host report
            return
        self.in_flight += 1
        try:
            res = await self.fetcher.fetch(url)
        finally:
            self.in_flight -= 1
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
                        fields["redirect_to"], row["depth"], "redirect", url, "", page_topic, hops
                    )
                    == "known"
                ):
                    fields["error"] = (
                        fields["error"] or "redirect to an already-known URL (loop or duplicate)"
                    )
            self.frontier.update(url, fields)
        self.fetched += 1
        self._since_checkpoint += 1
        if self._since_checkpoint >= self.cfg.checkpoint_every:
            self._since_checkpoint = 0
            write_outputs(self.frontier, self.out_dir)
        if self.progress is not None:
            self.progress(
                {
                    "fetched": self.fetched,
                    "max_pages": self.cfg.max_pages,
                    "url": url,
                    "status": res.status,
                    "queued": sum(len(h) for h in self.heaps.values()),
                }
            )

    def _lang(self, text: str) -> tuple[str | None, float | None]:
        if not text.strip():
            return None, None
        if self._langid is None:
            from filters.langid import LanguageIdentifier

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
