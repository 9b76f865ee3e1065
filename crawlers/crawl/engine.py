"""The crawl loop: many servers in flight at once, a polite number of requests to each.

Per host the order is robots.txt, then seeds, then its sitemaps, then discovered URLs
best-priority first. The engine ties the parts together:
- `scheduler.Scheduler` holds the queued work and picks what starts next (politeness keys, the
  seeds' reserved share of `max_pages`);
- `downloader.Downloader` fetches (SSRF guard, caps, politeness, robots policy as layers);
- `record.describe_page` reads a fetched page's frontier fields and outlinks off its response;
- `routing.ShardRouter` sends links to hosts of other shards to their inboxes and reads this
  shard's own;
- the frontier (SQLite), the WARC store and the output parts persist it all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from common.manifest import manifest_path
from common.urlblock import load_blocklist
from crawlers.crawl.canon import UrlError, canonicalize, host_of
from crawlers.crawl.config import CrawlConfig, CrawlError
from crawlers.crawl.downloader import Downloader
from crawlers.crawl.fetcher import FetchResult, type_by_extension, type_wanted
from crawlers.crawl.frontier import Frontier
from crawlers.crawl.output import CHECKPOINTS, write_checkpoint, write_outputs
from crawlers.crawl.politeness import RETRY_STATUSES
from crawlers.crawl.priority import LanguageTracker, TrapDetector, Weights, queued_row
from crawlers.crawl.record import PageLanguage, describe_page
from crawlers.crawl.recrawl import RECRAWL_FILE
from crawlers.crawl.robots_policy import (
    ALLOWED,
    AS_FOUND_KEY,
    MAX_SPELLINGS,
    UNREACHABLE,
    RobotsFetch,
    as_found,
    decision,
    spellings,
)
from crawlers.crawl.routing import OTHER_SHARD, OUTBOX_SCHEMA, ShardRouter, shard_root_of
from crawlers.crawl.scheduler import DISCOVERED, SEED, SITEMAP, Scheduler
from crawlers.crawl.sitemaps import Sitemap, parse_sitemap
from crawlers.crawl.traps import main_text, own_variant, pagination_step, shape_of
from crawlers.crawl.warc import WarcStore
from crawlers.robots import RobotsTxt

__all__ = [
    "GAVE_UP",
    "OTHER_SHARD",
    "OUTBOX_SCHEMA",
    "CrawlError",
    "Crawler",
    "Progress",
    "crawl",
    "crawl_left_in",
    "shard_root_of",
]

Progress = Callable[[dict[str, Any]], None]
_TRANSIENT_ERRORS = ("timeout", "connect-error", "connection-reset", "payload-error")
GAVE_UP = "host-gave-up: circuit breaker open (re-queued on --resume)"
SITEMAP_CAP = "sitemap-cap"
ROBOTS_SITEMAPS = 100  # Sitemap: lines of one robots.txt that are followed
_RESOLVERS = 32  # DNS lookups in flight at once
FRONTIER = "frontier.sqlite"
# What a crawl writes into its directory once it has created its frontier (each dataset also
# with its manifest): a directory holding none of these was left by a start killed before that.
CRAWL_ENTRIES = ("pages.parquet", "skipped.parquet", "warc", CHECKPOINTS, RECRAWL_FILE)
log = logging.getLogger(__name__)


def crawl_left_in(out_dir: Path) -> list[str]:
    """The names of what a crawl left in `out_dir` (its frontier and SQLite side files, outputs,
    WARCs, checkpoints, manifests); [] when there is nothing of a crawl to resume there."""
    if not out_dir.is_dir():
        return []
    return sorted(
        e.name
        for e in out_dir.iterdir()
        if e.name.startswith(FRONTIER) or e.name.removesuffix(".manifest.json") in CRAWL_ENTRIES
    )


def _failure(exc: BaseException) -> str:
    """The recorded error of a page or sitemap whose processing raised: one line, with the
    place it was raised (the traceback's last frame of the crawler's own code)."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/crawlers/" in f.filename]
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return " ".join(f"crawler-error: {type(exc).__name__}: {exc}{where}".split())[:500]


def _carried(url: str, clean: str, found: tuple[str, ...]) -> tuple[str, ...]:
    """The spellings a variant was found under that its document's address `clean` inherits for
    robots.txt: all of them while the path is the same but for a trailing slash (dropped
    parameters, another origin); none when a learned path alias moved it (`/en/latest/x` ->
    `/en/stable/x`): the page fetched is another path, judged as requested, and the variant's
    own path is never fetched."""
    if urlsplit(url).path.rstrip("/") == urlsplit(clean).path.rstrip("/"):
        return found
    return ()


def _unusable(url: str) -> str | None:
    """Why a stored frontier URL can not be fetched (None when it can)."""
    try:
        canonicalize(url)
    except UrlError as exc:
        return str(exc)
    return None


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
        # read before anything is written: a bad list is one line and no half-made crawl directory
        self.blocklist = load_blocklist(config.blocklist) if config.blocklist else None
        self.out_dir.mkdir(parents=True, exist_ok=True)
        db_path = self.out_dir / FRONTIER
        if db_path.exists() and not resume:
            raise CrawlError(
                f"{self.out_dir} already holds a crawl (frontier.sqlite); pass --resume to continue it or pick a new --out"
            )
        self.started_fresh = False  # --resume found nothing of a crawl: started afresh
        if resume and not db_path.exists():
            if left := crawl_left_in(self.out_dir):
                raise CrawlError(
                    f"--resume: {db_path} does not exist but {self.out_dir} holds "
                    f"{', '.join(left)} of a crawl; move them away, or pick a new --out"
                )
            # killed before its frontier was created (the first second): nothing to lose
            log.warning(
                "--resume: %s holds no crawl yet (stopped before frontier.sqlite was created); "
                "starting it fresh",
                self.out_dir,
            )
            self.resume = resume = False
            self.started_fresh = True
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
        if resume:  # the frontier holds every row, and this run's end compacts them again: a
            # run killed before then leaves no old pages.parquet a reader would take as whole
            for name in ("pages.parquet", "skipped.parquet"):
                manifest_path(self.out_dir / name).unlink(missing_ok=True)
                (self.out_dir / name).unlink(missing_ok=True)
        self.seeds = seeds
        self.weights = Weights()
        self.traps = TrapDetector(
            config.max_url_length,
            config.max_repeated_segments,
            config.max_urls_per_pattern,
            config.max_calendar_urls,
        )
        self.langs = LanguageTracker(config.target_languages, config.host_languages_path)
        self.lang = PageLanguage()
        # One downloader, the same one the browser's sub-requests go through: its fetcher (SSRF
        # guard, caps), politeness and robots policy are the layers this engine schedules around.
        self.downloader = Downloader(config, on_robots_fetch=self._robots_fetched)
        self.politeness = self.downloader.politeness
        self.known: set[str] = set()
        self.too_deep: set[str] = set()  # skipped for max-depth (this run): found again, re-judged
        self.capped: set[str] = set()  # sitemap URLs skipped by a sitemap cap: a link re-judges
        self.sitemap_docs: Counter[str] = Counter()  # host -> its sitemaps queued or fetched
        self.sitemap_urls: Counter[str] = Counter()  # host -> URLs its sitemaps queued
        self.per_host: Counter[str] = Counter()
        self.topics_fetched: Counter[str] = Counter()
        self.stats: Counter[str] = Counter()
        self.sched = Scheduler(
            config, self.politeness, self.langs, self.weights, self.topics_fetched, self.stats
        )
        self.router = ShardRouter(
            config, self.frontier, shard_root_of(self.out_dir, config), self.stats
        )
        self.sched.reprice = self._reprice
        self.sched_s = 0.0  # CPU spent choosing what to fetch next
        self._finished: list[str] = []  # URLs that reached a final state since the checkpoint
        self._since_checkpoint = 0

    # --- setup ------------------------------------------------------------------------
    def _load(self) -> None:
        requeue: list[str] = []
        unusable: list[tuple[str, str]] = []
        for row in list(self.frontier.rows()):
            url, host = row["url"], row["host"]
            self.known.add(url)
            if row["state"] == "queued" and (bad := _unusable(url)):
                # queued by an older crawler that let it through: skipped now, with the reason
                unusable.append((url, f"bad-url: {bad}"))
                continue
            if row["state"] == "queued" and (blocked := self._blocked(url)):
                unusable.append((url, blocked))  # listed since it was queued: lists are re-read
                continue
            if row["state"] != "skipped" or (row["skip_reason"] or "").startswith("host-gave-up"):
                self.traps.register(url)
                self.per_host[host] += 1
            if row["source"] == "sitemap" and row["parent"]:
                if (row["skip_reason"] or "").startswith(SITEMAP_CAP):
                    self.capped.add(url)
                elif row["state"] != "skipped":
                    self.sitemap_urls[host_of(row["parent"])] += 1
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
                self.sched.push(row)
            elif row["state"] == "done":
                self.sched.fetched += 1
                self.topics_fetched[row["topic"] or "other"] += 1
                if row["lang"]:
                    self.sched.observe_lang(host, row["lang"])
        if requeue:
            with self.frontier:
                for url in requeue:
                    self.frontier.update(url, {"state": "queued", "skip_reason": None})
            self.stats["requeued"] += len(requeue)
        if unusable:
            with self.frontier:
                for url, reason in unusable:
                    self.frontier.update(url, {"state": "skipped", "skip_reason": reason})
                    self._finished.append(url)
            self.stats["skipped"] += len(unusable)
        for sm in self.frontier.sitemaps():
            if not (sm["error"] or "").startswith(SITEMAP_CAP):
                self.sitemap_docs[sm["host"]] += 1
            self.capped.discard(sm["url"])  # a capped sitemap is no page a link may queue
            if sm["state"] == "queued":
                self.sched.add_sitemap(sm["host"], sm["url"], sm["depth"])

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
        found: str | tuple[str, ...] = (),
    ) -> str:
        """Add a URL (inside the caller's transaction); returns 'queued', 'known' or the skip
        reason ('robots disallowed' when robots.txt refuses a spelling it was `found` under).

        A URL skipped for max-depth is looked at again when a later link reaches it within
        max_depth (links are found in fetch order, not shortest path first); so is a sitemap URL
        a sitemap cap skipped, when anything but a sitemap finds it. `found` is the URL as found
        (the absolute link, seed, sitemap entry or redirect Location before canonicalisation);
        robots.txt must allow it too (`_found_as`)."""
        verdict = self._found_as(url, found) if found else None
        again = (url in self.too_deep and depth <= self.cfg.max_depth) or (
            url in self.capped and source != "sitemap"
        )
        if url in self.known and not again:
            return "known"
        self.known.add(url)
        self.too_deep.discard(url)
        self.capped.discard(url)
        tier = 0 if source == "seed" else tier
        row = queued_row(
            url, depth, source, parent, anchor, parent_topic, tier, self.langs, self.weights
        )
        row["redirect_hops"] = redirect_hops
        host = row["host"]
        reason = None
        if blocked := self._blocked(url):
            reason = blocked
        elif (
            parent is not None
            and not routed
            and not self.cfg.follow_external
            and host != host_of(parent)
        ):
            reason = "external: follow_external is off"
        elif other_shard := self.router.skip_reason(host):
            reason = other_shard
        elif source in ("link", "sitemap") and (unwanted := self._unwanted_type(url)):
            reason = unwanted
        elif depth > self.cfg.max_depth:
            reason = f"max-depth: {depth} > {self.cfg.max_depth}"
            self.too_deep.add(url)
        elif self.cfg.max_pages_per_host and self.per_host[host] >= self.cfg.max_pages_per_host:
            reason = f"host-budget: {self.cfg.max_pages_per_host} URLs"
        else:
            reason = self.traps.check(url, parent)
            if reason is None and tier != 0 and source == "link":
                reason = self.traps.families.cut(url, anchor)
        if reason:
            row.update(state="skipped", skip_reason=reason)
            if again:
                self.frontier.update(url, {k: v for k, v in row.items() if k != "url"})
            else:
                self.frontier.add(row)
                self.stats["skipped"] += 1
            self._finished.append(url)
            return reason
        if verdict is not None:
            return self._deny_found(row, verdict, again)
        base = row["priority"]
        if tier != 0:
            adjust = self.traps.families.adjustment(url, anchor, depth)
            if adjust:
                row["priority"] = round(base + adjust, 4)
                why = self.traps.families.why(url, anchor, depth)
                row["priority_reasons"] += f"; link family {adjust:+.2f} ({why})"
        self.per_host[host] += 1
        if again:
            fields = {k: v for k, v in row.items() if k != "url"}
            self.frontier.update(url, {**fields, "skip_reason": None})
            self.stats["skipped"] -= 1
            self.stats["requeued_shallower"] += 1
        else:
            self.frontier.add(row)
        row["seq"] = self.frontier._seq
        row["_base"] = base  # the priority before the family's evidence (it is re-read at pop)
        self.sched.push(row)
        return "queued"

    def _found_as(self, url: str, found: str | tuple[str, ...]) -> tuple[str, str] | None:
        """Remember the spellings `url` was found under (inside the caller's transaction);
        (crawl, training) decisions when the origin's robots.txt, cached and final, refuses to
        let the URL be crawled under one of them, else None (decided when it is visited).

        The rule: robots.txt must allow a URL as found (the absolute link, seed, sitemap entry
        or redirect Location, fragment dropped, before canonicalisation sorts its query and
        re-encodes it) and as requested (its canonical form), for each token; a disallowed
        spelling wins over allowed ones. The frontier keeps one row per canonical URL, so the
        spellings robots.txt could judge otherwise than the canonical form are kept beside it
        (frontier meta `robots-as-found:<url>`, at most `MAX_SPELLINGS`, so a resumed crawl
        still has them) and `_visit` asks robots.txt about the URL and all of them at once. A
        new URL refused under its spelling is recorded denied here, as a visit would; a spelling
        found after the URL was fetched can no longer undo that fetch. A URL routed to another
        shard goes with its spellings (`ShardRouter.flush_outbox`), again when a new one is found.
        """
        new = spellings(url, found)
        if not new:
            return None
        key = AS_FOUND_KEY + url
        stored: list[str] = self.frontier.get_meta(key) or []
        added = [s for s in new if s not in stored][: max(0, MAX_SPELLINGS - len(stored))]
        if added:
            stored += added
            self.frontier.set_meta(key, stored)
            if url in self.known:  # routed to another shard already: it must hear of them too
                self.router.respelled(url)
        policy = self.downloader.robots
        robots = policy.cached(url)
        if robots is None or policy.retry_at(url) is not None:
            return None  # not known yet, or an outage that may pass: decided at the visit
        crawl = decision(robots, policy.agent, url, new)
        if crawl == ALLOWED:
            return None
        return crawl, decision(robots, policy.training_agent, url, [*stored, *new])

    def _found_spellings(self, url: str) -> tuple[str, ...]:
        """The spellings `_found_as` kept for `url`."""
        return tuple(self.frontier.get_meta(AS_FOUND_KEY + url) or ())

    def _deny_found(self, row: dict[str, Any], verdict: tuple[str, str], again: bool) -> str:
        """Record a URL robots.txt refuses under a spelling it was found under as denied, as
        `_visit` records one refused as requested (inside the caller's transaction)."""
        url, (crawl, training) = row["url"], verdict
        row.update(
            state="denied",
            crawl_allowed=0,
            training_allowed=0,
            robots_crawl=crawl,
            robots_training=training,
        )
        if again:
            fields = {k: v for k, v in row.items() if k != "url"}
            self.frontier.update(url, {**fields, "skip_reason": None})
            self.stats["skipped"] -= 1
        else:
            self.frontier.add(row)
        self.per_host[row["host"]] += 1
        self.stats["denied"] += 1
        self._finished.append(url)
        return f"robots {crawl}"

    def _unwanted_type(self, url: str) -> str | None:
        """'unwanted-type: ...' for a link whose file extension names a type `wanted_types` does
        not take (an image, a PDF, a stylesheet): the request would only fetch headers to refuse
        them, and sites link one such file from every page."""
        mime = type_by_extension(url)
        if mime is None or type_wanted(mime, self.cfg.wanted_types):
            return None
        return f"unwanted-type: the link's file extension names {mime}, not in wanted_types"

    def _blocked(self, url: str) -> str | None:
        """'blocklist: <category> (<what matched>)' for a URL on the --blocklist lists, else None."""
        hit = self.blocklist.match(url) if self.blocklist is not None else None
        return f"blocklist: {hit[0]} ({hit[1]})" if hit else None

    def _reprice(self, row: dict[str, Any]) -> float:
        """A queued discovered URL's priority with its link family's evidence as of now."""
        base = row.get("_base", row["priority"] or 0.0)
        adjust = self.traps.families.adjustment(row["url"], row["anchor"] or "", row["depth"])
        return round(base + adjust, 4)

    def _discover_link(
        self,
        url: str,
        depth: int,
        parent: str,
        anchor: str,
        parent_topic: str,
        canonical: tuple[str, str | None] | None = None,
        found: tuple[str, ...] = (),
    ) -> str:
        """Discover an outlink by its canonical address (`TrapDetector.canonical`, or as given): a
        URL that only re-presents a document (session id, sort/view parameter, a path alias) is
        recorded as skipped with the reason and the document's own address is discovered
        instead."""
        clean, why = canonical or self.traps.canonical(url)
        if clean != url:
            if url not in self.known:
                self._skip_variant(url, depth, parent, anchor, parent_topic, clean, why or "")
            found = _carried(url, clean, found)
            url = clean
        return self._discover(url, depth, "link", parent, anchor, parent_topic, found=found)

    def _skip_variant(
        self,
        url: str,
        depth: int,
        parent: str | None,
        anchor: str,
        parent_topic: str,
        clean: str,
        why: str,
    ) -> None:
        self.known.add(url)
        row = queued_row(
            url, depth, "link", parent, anchor, parent_topic, 1, self.langs, self.weights
        )
        reason = f"trap: {why}: the document is queued as {clean}"
        row.update(state="skipped", skip_reason=reason)
        self.frontier.add(row)
        self.stats["skipped"] += 1
        self._finished.append(url)

    def _skip_bad_url(
        self, url: str, why: str, depth: int, source: str, parent: str | None = None
    ) -> None:
        """Record a URL no connection could use as skipped with its reason (inside the caller's
        transaction): a bad link or seed is a recorded skip, never the end of the crawl."""
        if url in self.known:
            return
        self.known.add(url)
        row = {
            "url": url,
            "host": "",
            "depth": depth,
            "state": "skipped",
            "source": source,
            "parent": parent,
            "skip_reason": f"bad-url: {why}"[:1000],
            "attempts": 0,
        }
        self.frontier.add(row)
        self.stats["skipped"] += 1
        self._finished.append(url)

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
        self.lang("warm up")  # load lid.176 now, not in the middle of the crawl
        with self.frontier:
            if not self.resume:
                self.frontier.set_meta("config", cfg.model_dump())
                self.frontier.set_meta("seeds", self.seeds)
            bad_seeds = []
            for seed in self.seeds:
                try:
                    self._discover(canonicalize(seed), 0, "seed", found=as_found(seed))
                except UrlError as exc:
                    bad_seeds.append((seed, exc))
            if bad_seeds and len(bad_seeds) == len(self.seeds) and not self.resume:
                seed, exc = bad_seeds[0]
                raise CrawlError(
                    f"bad seed URL {seed!r}: {exc} (every seed is unusable; give http(s) URLs)"
                )
            for seed, exc in bad_seeds:  # one bad seed among good ones is a recorded skip
                self._skip_bad_url(seed.strip()[:2000], str(exc), 0, "seed")
        self.router.read_inbox(self._discover)
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
                            truncated=bool(rec["truncated"]),
                        )
                    )
                cpu0 = time.process_time()
                await self._loop()
                crawl_cpu = time.process_time() - cpu0  # CPU of the crawl loop itself
                crawl_s = time.monotonic() - started  # throughput excludes writing the outputs
        finally:
            warc.close()
            with self.frontier:
                self._skip_abandoned()
            self.router.flush_outbox()
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
            # origins whose robots.txt outage outlasted robots_give_up_s: their URLs were denied
            "robots_gave_up": dict(sorted(self.downloader.robots.gave_up.items())),
            "sitemaps": self.stats["sitemaps"],
            # sitemap documents left queued (a full queue or the end of max_pages; --resume
            # reads them), URLs and sitemaps a sitemap cap recorded as skipped, and <loc>s beyond
            # max_sitemap_urls in one document (counted, not read)
            "sitemaps_left": self.sched.sitemaps_left(),
            "sitemap_capped": self.stats["sitemap_capped"],
            "sitemap_dropped": self.stats["sitemap_dropped"],
            "elapsed_s": round(elapsed, 3),
            "pages_per_s": round(fetched / crawl_s, 3) if crawl_s else 0.0,
            "crawl_cpu_s": round(locals().get("crawl_cpu", 0.0), 3),
            "scheduler_s": round(self.sched_s, 4),
            "scheduler_us_per_page": round(1e6 * self.sched_s / fetched, 1) if fetched else 0.0,
            "recovered": recovered,
            # --resume found no crawl in out_dir (killed before its frontier existed): fresh
            "resume_started_fresh": self.started_fresh,
            "requeued": self.stats["requeued"],
            "breaker_probes": self.stats["breaker_probes"],
            "routed_out": self.stats["routed_out"],
            "inbox": self.stats["inbox"],
            "inbox_rejected": self.stats["inbox_rejected"],
            "queued_left": self.sched.queued,
        }

    def _statuses(self) -> dict[str, int]:
        return {k.split(":", 1)[1]: v for k, v in self.stats.items() if k.startswith("status:")}

    def _skip_abandoned(self) -> None:
        """At the end, the URLs of hosts the circuit breaker gave up on are skipped (for now)."""
        for host in self.sched.queued_hosts():
            if self.politeness.gave_up(host):
                for row in self.sched.drain(host):
                    self.frontier.update(row["url"], {"state": "skipped", "skip_reason": GAVE_UP})
                    self._finished.append(row["url"])

    # --- the loop -----------------------------------------------------------------------
    async def _loop(self) -> None:
        sched = self.sched
        tasks: set[asyncio.Task] = set()
        resolving: set[asyncio.Task] = set()
        while True:
            while sched.to_resolve and len(resolving) < _RESOLVERS:
                resolving.add(asyncio.create_task(sched.resolve(sched.to_resolve.popleft())))
            wait = float("inf")
            t0 = time.thread_time()
            while len(tasks) < self.cfg.concurrency and not sched.limit_reached():
                key, host, tier, wait = sched.pick()
                if not key:
                    break
                sched.start(key)
                tasks.add(asyncio.create_task(self._work(key, host, tier)))
            self.sched_s += time.thread_time() - t0
            if not tasks and not resolving:
                if sched.limit_reached() or wait == float("inf"):
                    return  # nothing left that may be fetched (abandoned servers do not count)
                await asyncio.sleep(min(wait, 1.0))
                continue
            probe = sched.next_probe()
            if probe is not None:  # wake up for the next probe while other work goes on
                wait = min(wait, max(0.0, probe - time.monotonic()))
            done, _ = await asyncio.wait(
                tasks | resolving,
                timeout=None if wait == float("inf") else min(wait, 1.0),
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in done:
                tasks.discard(task)
                resolving.discard(task)
                task.result()  # _work records one page's failure; anything else stops the crawl

    async def _work(self, key: str, host: str, tier: int) -> None:
        try:
            sitemap = self.sched.next_sitemap(host) if tier == SITEMAP else None
            if sitemap is not None:
                try:
                    await self._sitemap(*sitemap)
                except Exception as exc:  # one sitemap never ends the crawl: recorded
                    with self.frontier:
                        self.frontier.finish_sitemap(sitemap[0], 0, _failure(exc))
            elif self.sched.has_queued(host):
                row = self.sched.pop(host)
                try:
                    await self._visit(row)
                except Exception as exc:  # one page never ends the crawl: its error recorded
                    self._page_failed(row, exc)
        finally:
            t0 = time.thread_time()
            self.sched.finish(key)
            self.sched_s += time.thread_time() - t0

    def _page_failed(self, row: dict[str, Any], exc: Exception) -> None:
        """A page whose processing raised (input the crawler's code did not expect): the page is
        done with the error recorded, no training consent, and the crawl goes on."""
        url = row["url"]
        self.stats["errors"] += 1
        self.stats["page_failures"] += 1
        fields = {
            "state": "done",
            "error": _failure(exc),
            "training_allowed": 0,
            "attempts": (row.get("attempts") or 0) + 1,
        }
        with self.frontier:
            try:
                self.frontier.update(url, fields)
            except KeyError:  # its row was rolled back with the transaction that raised
                keep = ("host", "depth", "source", "parent", "anchor")
                self.frontier.add({"url": url, **{k: row.get(k) for k in keep}, **fields})
        self._finish(url, None)

    # --- robots and sitemaps ----------------------------------------------------------
    def _robots_fetched(self, rec: RobotsFetch) -> None:
        self.stats["robots"] += 1
        robots = RobotsTxt.from_response(rec.status, rec.body, truncated=rec.truncated)
        with self.frontier:
            self.frontier.save_robots(
                rec.origin, rec.status, rec.body, rec.error, truncated=rec.truncated
            )
            if rec.result is not None and rec.result.hops:  # archived: consent at fetch time
                loc = self.warc.write(rec.result.hops, rec.result.fetched_at)
                self.frontier.commit_warc(loc.file, loc.end)
            if self.cfg.use_sitemaps:
                robots_txt = rec.origin + "/robots.txt"
                for i, sm in enumerate(robots.sitemaps):
                    try:
                        url = canonicalize(sm)
                    except UrlError as exc:
                        self._skip_bad_url(sm[:2000], str(exc), 0, "sitemap", robots_txt)
                        continue
                    if i < ROBOTS_SITEMAPS:
                        self._add_sitemap(url, 0)
                    else:
                        why = f"robots.txt lists more than {ROBOTS_SITEMAPS} sitemaps"
                        self._cap_sitemap(url, 0, robots_txt, why)

    def _add_sitemap(self, url: str, depth: int, parent: str | None = None) -> None:
        """Queue a sitemap of this shard's hosts that the frontier has not seen yet; beyond the
        host's max_sitemaps_per_host it is recorded as skipped instead (inside the caller's
        transaction)."""
        host = host_of(url)
        if not self.router.in_shard(host):
            return
        if self.sitemap_docs[host] >= self.cfg.max_sitemaps_per_host:
            why = f"{host} has {self.sitemap_docs[host]} sitemaps (max_sitemaps_per_host)"
            self._cap_sitemap(url, depth, parent, why)
        elif self.frontier.add_sitemap(url, host, depth):
            self.sitemap_docs[host] += 1
            self.sched.add_sitemap(host, url, depth)

    def _cap_sitemap(self, url: str, depth: int, parent: str | None, why: str) -> None:
        """Record a sitemap a cap leaves unread: done in the sitemaps table, skipped in the
        output (inside the caller's transaction)."""
        if self.frontier.add_sitemap(url, host_of(url), depth):
            self.frontier.finish_sitemap(url, 0, f"{SITEMAP_CAP}: {why}")
            self._skip_capped(url, depth, parent, why, page=False)

    def _skip_capped(
        self, url: str, depth: int, parent: str | None, why: str, *, page: bool = True
    ) -> None:
        """Record a URL a sitemap listed but a sitemap cap keeps out of the queue (inside the
        caller's transaction); a link to such a page later queues it after all (`_discover`)."""
        if url in self.known:
            return  # queued or recorded already: nothing is lost
        self.known.add(url)
        if page:
            self.capped.add(url)
        row = {
            "url": url,
            "host": host_of(url),
            "depth": depth,
            "state": "skipped",
            "source": "sitemap",
            "parent": parent,
            "skip_reason": f"{SITEMAP_CAP}: {why}"[:1000],
            "attempts": 0,
        }
        self.frontier.add(row)
        self.stats["skipped"] += 1
        self.stats["sitemap_capped"] += 1
        self._finished.append(url)

    def _sitemap_cap(self, host: str) -> str | None:
        """Why a host's sitemaps may queue no more URLs now, or None."""
        if self.sitemap_urls[host] >= self.cfg.max_sitemap_urls_per_host:
            return (
                f"{self.sitemap_urls[host]} URLs already queued from {host}'s sitemaps "
                "(max_sitemap_urls_per_host)"
            )
        return self.sched.queue_full(host)

    def _read_sitemap(self, url: str, depth: int, sm: Sitemap) -> int:
        """Queue a fetched sitemap's children and page URLs within the caps (inside the caller's
        transaction); every one a cap or a bad address keeps out is recorded. Returns URLs queued."""
        host, found = host_of(url), 0
        for child in sm.sitemaps:
            try:
                c = canonicalize(child)
            except UrlError as exc:
                self._skip_bad_url(str(child)[:2000], str(exc), depth + 1, "sitemap", url)
                continue
            if depth < self.cfg.max_sitemap_depth:
                self._add_sitemap(c, depth + 1, url)
            else:
                why = f"nested deeper than max_sitemap_depth ({self.cfg.max_sitemap_depth})"
                self._cap_sitemap(c, depth + 1, url, why)
        for loc in sm.urls:
            try:
                target = canonicalize(loc)
            except UrlError as exc:  # recorded, like a bad link
                self._skip_bad_url(str(loc)[:2000], str(exc), 1, "sitemap", url)
                continue
            if why := self._sitemap_cap(host):
                self._skip_capped(target, 1, url, why)
            elif self._discover(target, 1, "sitemap", parent=url, found=as_found(loc)) == "queued":
                found += 1
                self.sitemap_urls[host] += 1
        return found

    async def _sitemap(self, url: str, depth: int) -> None:
        host = host_of(url)
        crawl, _, robots = await self.robots.decide(url)
        self.politeness.set_crawl_delay(host, robots.crawl_delay(self.cfg.agent))
        if self._robots_wait(host, url, crawl):
            self.sched.requeue_sitemap(host, url, depth)
            return
        found, error = 0, None
        if crawl != ALLOWED:
            error = f"robots {crawl}"
        else:
            # Through every layer, hop by hop: a redirect's target asks its own robots.txt (both
            # tokens), the SSRF guard and politeness before anything is sent to it.
            res = await self.downloader.fetch(url, wanted_types=("*",))
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
                        found = self._read_sitemap(url, depth, sm)
                        over = (
                            f"{SITEMAP_CAP}: {sm.dropped} entries beyond max_sitemap_urls "
                            f"({self.cfg.max_sitemap_urls}) not read"
                            if sm.dropped
                            else None
                        )
                        self.stats["sitemap_dropped"] += sm.dropped
                        self.frontier.finish_sitemap(url, found, over)
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
        self.sched.hold_host(host, retry)
        self.stats["robots_waits"] += 1
        return True

    # --- pages ------------------------------------------------------------------------
    async def _visit(self, row: dict[str, Any]) -> None:
        url, host = row["url"], row["host"]
        if row.get("tier") != 0 and row["source"] == "link":
            clean, why = self.traps.canonical(url)
            cut = self.traps.families.cut(url, row["anchor"] or "")
            if cut and clean == url:  # its family turned out to serve copies: not fetched
                self.sched.unreserve(row)
                with self.frontier:
                    self.frontier.update(url, {"state": "skipped", "skip_reason": cut})
                self.stats["skipped"] += 1
                self._finished.append(url)
                return
            if clean != url:  # queued before its parameter was recognised: fetch the document
                self.sched.unreserve(row)
                reason = f"trap: {why}: the document is queued as {clean}"
                with self.frontier:
                    self.frontier.update(url, {"state": "skipped", "skip_reason": reason})
                    self._discover(
                        clean,
                        row["depth"],
                        "link",
                        row["parent"],
                        row["anchor"] or "",
                        row["topic"] or "other",
                        found=_carried(url, clean, (url, *self._found_spellings(url))),
                    )
                self.stats["skipped"] += 1
                self._finished.append(url)
                return
        # robots.txt must allow the URL as requested and every spelling it was found under
        crawl, training, robots = await self.robots.decide(url, self._found_spellings(url))
        self.politeness.set_crawl_delay(host, robots.crawl_delay(self.cfg.agent))
        if self._robots_wait(host, url, crawl):
            self.sched.push(row)  # queued, not denied: robots.txt is asked again after a backoff
            return
        if crawl != ALLOWED:
            self.stats["denied"] += 1
            self.sched.unreserve(row)
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
        if self.politeness.gave_up(host) or not self.sched.budget_ok(
            SEED if row.get("tier") == 0 else DISCOVERED
        ):
            self.sched.push(row)  # stays queued for --resume or the abandoned-host report
            return
        self.sched.unreserve(row)
        self.sched.in_flight += 1
        try:
            res = await self.fetcher.fetch(url)
        finally:
            self.sched.in_flight -= 1
        if res.status is None and (res.error or "").startswith("host-gave-up"):
            self.sched.push(row)  # the breaker opened while it waited: probed after cool-down
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
            self.sched.push(row)
            return
        self._record(row, res, crawl, training)

    def _record(self, row: dict[str, Any], res: FetchResult, crawl: str, training: str) -> None:
        """Persist a finished fetch: WARC records, frontier fields, its links and redirect."""
        url, host = row["url"], row["host"]
        page = describe_page(row, res, crawl, training, self.cfg, self.lang)
        fields = page.fields
        self.stats["fetched"] += 1
        self.stats[f"status:{res.status if res.status is not None else 'none'}"] += 1
        self.stats["errors"] += res.error is not None
        self.stats["bytes"] += fields.get("content_length", 0)
        if page.lang:
            self.sched.observe_lang(host, page.lang)
        copy = words = None
        if page.info is not None:
            text = main_text(res.body)
            words = len(text.split())
            copy = self.traps.observe(
                url, text, [lk.url for lk in page.info.links], page.info.canonical, res.body
            )
        loc = None
        if res.hops:
            loc = self.warc.write(res.hops, res.fetched_at)
            fields.update(warc_file=loc.file, warc_offset=loc.offset, warc_length=loc.length)
        self.topics_fetched[row["topic"] or "other"] += 1
        with self.frontier:
            if loc is not None:
                self.frontier.commit_warc(loc.file, loc.end)
            fields["outlinks"] = len(page.links)
            leads: list[str] = []  # shapes of the new URLs it led to
            own_shape = shape_of(url)
            for lk in page.links:
                clean = self.traps.canonical(lk.url)  # the address it is queued under
                step = pagination_step(clean[0], url, self.traps.paged_listings)
                depth = row["depth"] + (not step)
                found = self._discover_link(
                    lk.url, depth, url, lk.anchor, page.topic, clean, lk.found
                )
                # a family is a hub for what it leads to elsewhere: facet and filter pages that
                # link their own combinations, listings their own sort orders and next pages
                # only multiply themselves
                shape = shape_of(clean[0])
                if found == "queued" and shape != own_shape and not own_variant(clean[0], url):
                    leads.append(shape)
            unwanted = (res.error or "").startswith("unwanted-content-type")
            self.traps.families.record(
                url,
                row["anchor"] or "",
                res.status,
                len(leads),
                unwanted,
                row["depth"],
                words,
                leads,
            )
            if copy is not None:
                self.traps.families.copy(copy, row["anchor"] or "" if copy == url else "")
            for bad, why in page.bad_links:
                self._skip_bad_url(bad, why, row["depth"] + 1, "link", url)
            if fields.get("redirect_to"):
                self.traps.note_redirect(url, fields["redirect_to"])
                self._follow_redirect(row, fields, page.topic, as_found(res.location() or "", url))
                if (fields.get("error") or "").startswith("redirect to an already-known"):
                    # an alias of a page already known (shortlink, old permalink): for its link
                    # family, a copy
                    self.traps.families.copy(url, row["anchor"] or "")
            elif page.info is not None and res.status is not None and 200 <= res.status < 300:
                self.traps.note_served(url)
            self.frontier.update(url, fields)
        self._finish(url, res.status)

    def _follow_redirect(
        self, row: dict[str, Any], fields: dict[str, Any], topic: str, location: str = ""
    ) -> None:
        """Queue a redirect's target (inside the caller's transaction); errors go to `fields`.

        Redirects go through the frontier so robots, politeness and de-duplication apply to
        every hop; a loop ends at the first already-known URL.
        """
        hops = (row.get("redirect_hops") or 0) + 1
        if hops > self.cfg.max_redirects:
            fields["error"] = f"too-many-redirects: more than {self.cfg.max_redirects}"
            return
        target, why = self.traps.rewrite(fields["redirect_to"])
        if target != fields["redirect_to"] and fields["redirect_to"] not in self.known:
            self._skip_variant(
                fields["redirect_to"], row["depth"], row["url"], "", topic, target, why or ""
            )
        found = self._discover(
            target,
            row["depth"],
            "redirect",
            row["url"],
            "",
            topic,
            hops,
            tier=row.get("tier", 1),  # a seed's redirect keeps the seed's place
            found=location,  # the Location as given: robots.txt must allow it too
        )
        if found == "known":
            fields["error"] = (
                fields["error"] or "redirect to an already-known URL (loop or duplicate)"
            )

    def _finish(self, url: str, status: int | None) -> None:
        """A page reached its final state: count it, checkpoint when due, report progress."""
        self.sched.fetched += 1
        self._finished.append(url)
        self._since_checkpoint += 1
        if self._since_checkpoint >= self.cfg.checkpoint_every:
            self._checkpoint()
        if self.progress is not None:
            self.progress(
                {
                    "fetched": self.sched.fetched,
                    "max_pages": self.cfg.max_pages,
                    "url": url,
                    "status": status,
                    "queued": self.sched.queued,
                }
            )

    def _checkpoint(self) -> None:
        """Append what finished since the last checkpoint (a part file), route other shards' links."""
        self._since_checkpoint = 0
        finished, self._finished = self._finished, []
        write_checkpoint(self.frontier, self.out_dir, finished)
        self.router.flush_outbox()


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
