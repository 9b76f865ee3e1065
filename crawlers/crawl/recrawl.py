"""Recrawl a finished crawl in place: conditional requests and a revisit policy by change rate.

`recrawl(out_dir)` revisits the pages a crawl in `out_dir` fetched (status 200) that are due,
through the same `Downloader` as the crawl (robots.txt for both tokens, SSRF guard, politeness,
retries). Each request carries the validators of the copy we hold: `If-None-Match` with its
ETag and `If-Modified-Since` with its Last-Modified (from the last revisit, else read off the
response record in the WARC).

Outcomes, per page:
  unchanged  304 Not Modified: the previous content is kept (the frontier row and its WARC
             record stay as they are; the 304 exchange is archived too, as evidence), or a 200
             whose body hashes the same as the copy we hold (a server that ignores validators).
  changed    any other answer (new body, redirect, 404/410): the page is recorded anew exactly
             as the crawl records a fetch (`describe_page`), pointing at the new WARC record;
             an answer without a body to read clears the held copy's hash, length, title,
             language and topic.
  denied     robots.txt now refuses the crawl token: nothing is fetched, the copy is kept and its
             robots decisions are updated.
  error      network error, timeout, 429/5xx, or a 2xx whose body failed (timeout mid-body,
             unwanted content type, over the size cap, undecodable): the copy we hold is kept
             (its row and WARC record stay as they are); asked again after `min_s`.
Whatever the outcome, a fresh training-token decision can only take the page's
`training_allowed` away, never grant it (a failed fetch's only when robots.txt says disallowed:
an unreachable one is no evidence). So can the X-Robots-Tag of an answer that keeps the copy (a
304 Not Modified or a failed 2xx): `noai` (also `noimageai`, `noindex`, `nofollow`) in its
headers is recorded and withdraws consent, its absence grants nothing; a failed answer that
carried one is archived as evidence. A changed page is described afresh, but its
`training_allowed` stays false once false.

Revisit policy (`RevisitPolicy`, stated): a page first becomes due `initial_s` (1 day) after its
crawl. After each revisit its interval doubles when unchanged and halves when changed, kept
within [`min_s`, `max_s`] (1 hour .. 30 days); next due = revisit time + interval. So a page
that never changes is asked about ever less often and one that changes on every visit at most
hourly, the classic adaptive schedule (Cho & Garcia-Molina 2003) in its simplest form.

State lives in the crawl's frontier (table `revisits`, updated in the same transaction as the
page and its WARC commit, so kill -9 at any point leaves a consistent crawl: the next run cuts
any uncommitted WARC bytes). At the end `pages.parquet` is compacted from the frontier as the
crawl does, and `recrawl.parquet` lists the revisit state of every page.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq

from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.downloader import Downloader, is_refusal
from crawlers.crawl.fetcher import FetchResult
from crawlers.crawl.frontier import Frontier
from crawlers.crawl.html import Directives, apply_x_robots_tag
from crawlers.crawl.output import write_outputs
from crawlers.crawl.record import PageLanguage, describe_page
from crawlers.crawl.robots_policy import ALLOWED, DISALLOWED
from crawlers.crawl.warc import WarcStore

T = TypeVar("T")
UNCHANGED, CHANGED, DENIED, ERROR = "unchanged", "changed", "denied", "error"
# Frontier fields read off a page's body: a change recorded without one (404, redirect) clears them.
CONTENT_FIELDS = (
    "content_sha256",
    "content_length",
    "title",
    "lang",
    "lang_score",
    "page_topic",
    "redirect_to",
)
RECRAWL_FILE = "recrawl.parquet"
REVISITS_SQL = """
CREATE TABLE IF NOT EXISTS revisits (url TEXT PRIMARY KEY, etag TEXT, last_modified TEXT,
    interval_s REAL NOT NULL, next_due REAL NOT NULL, checks INTEGER NOT NULL,
    changes INTEGER NOT NULL, outcome TEXT, http_status INTEGER, checked_at TEXT);
"""
RECRAWL_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("host", pa.string()),
        ("outcome", pa.string()),  # unchanged | changed | denied | error (None: never revisited)
        ("http_status", pa.int32()),  # status of the last revisit (304 for unchanged)
        ("etag", pa.string()),
        ("last_modified", pa.string()),
        ("interval_s", pa.float64()),
        ("next_due", pa.string()),  # UTC ISO 8601
        ("checks", pa.int32()),
        ("changes", pa.int32()),
        ("checked_at", pa.string()),
        ("content_sha256", pa.string()),
    ]
)


@dataclass(frozen=True)
class RevisitPolicy:
    """Interval doubling when unchanged, halving when changed, within [min_s, max_s]."""

    initial_s: float = 86400.0
    min_s: float = 3600.0
    max_s: float = 30 * 86400.0
    factor: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.min_s <= self.initial_s <= self.max_s:
            raise ValueError(
                f"RevisitPolicy: need 0 < min_s <= initial_s <= max_s, got min_s={self.min_s}, "
                f"initial_s={self.initial_s}, max_s={self.max_s}"
            )
        if self.factor <= 1:
            raise ValueError(f"RevisitPolicy.factor={self.factor}: must be > 1")

    def next_interval(self, interval_s: float, outcome: str) -> float:
        """The interval after a revisit with this outcome (errors and denials keep it)."""
        if outcome == UNCHANGED:
            return min(self.max_s, interval_s * self.factor)
        if outcome == CHANGED:
            return max(self.min_s, interval_s / self.factor)
        return interval_s


def _unix(iso: str | None) -> float | None:
    if not iso:
        return None
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stored_validators(out_dir: Path, row: dict[str, Any]) -> tuple[str | None, str | None]:
    """(ETag, Last-Modified) of the response record a page row points at in the crawl's WARC."""
    from warcio.archiveiterator import ArchiveIterator

    if not row.get("warc_file"):
        return None, None
    with (Path(out_dir) / row["warc_file"]).open("rb") as fh:
        fh.seek(int(row["warc_offset"]))
        for record in ArchiveIterator(fh):
            headers = record.http_headers
            if headers is None:
                return None, None
            return headers.get_header("ETag"), headers.get_header("Last-Modified")
    return None, None


def _header(res: FetchResult, name: str) -> str | None:
    return res.header(name) if res.hops else None


def _consent(row: dict[str, Any], training: str | None) -> dict[str, Any]:
    """A fresh training-token decision: it may take training_allowed away, never grant it."""
    if training is None:
        return {}
    keep = bool(row.get("training_allowed")) and training == ALLOWED
    return {"robots_training": training, "training_allowed": int(keep)}


def _header_opt_outs(res: FetchResult, cfg: CrawlConfig) -> dict[str, Any]:
    """The directives the answer's X-Robots-Tag raises (a 304 or a failed 2xx carries headers
    but no page to describe): each may take consent away, never grant it, so only raised flags
    are returned, and `noai` withdraws training_allowed."""
    if not res.hops:
        return {}
    values = [v for k, v in res.hops[-1].response_headers if k.lower() == "x-robots-tag"]
    d = Directives()
    apply_x_robots_tag(d, values, cfg.agent, cfg.training_agent)
    raised = {k: 1 for k in ("noindex", "nofollow", "noai", "noimageai") if getattr(d, k)}
    if d.noai:
        raised["training_allowed"] = 0
    return raised


def _kept_copy_consent(row: dict[str, Any], res: FetchResult, cfg: CrawlConfig) -> dict[str, Any]:
    """Consent fields for a revisit that keeps the copy we hold (a 304, a failed fetch): a fresh
    training-token decision and the answer's X-Robots-Tag, each only taking consent away. A
    failed fetch's training decision counts only when it says disallowed: an unreachable
    robots.txt is no evidence of an opt-out."""
    training = res.robots_training
    if res.status != 304 and training != DISALLOWED:
        training = None
    return {**_consent(row, training), **_header_opt_outs(res, cfg)}


async def recrawl(
    out_dir: str | Path,
    config: CrawlConfig | dict | None = None,
    *,
    policy: RevisitPolicy | None = None,
    now: float | None = None,
    due_only: bool = True,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Revisit the due pages of the crawl in `out_dir`; returns counts per outcome.

    `now` (unix seconds) is the clock the policy is evaluated at (default: the current time);
    `due_only=False` revisits every fetched page whatever its schedule.
    """
    out_dir = Path(out_dir)
    db = out_dir / "frontier.sqlite"
    if not db.exists():
        raise FileNotFoundError(
            f"{db}: no frontier; recrawl revisits a finished crawl "
            f"(run `refinery crawl --out {out_dir}` first)"
        )
    policy = policy or RevisitPolicy()
    cfg = CrawlConfig.from_any(config)
    clock = time.time() if now is None else float(now)
    frontier = Frontier(db)
    frontier.db.executescript(REVISITS_SQL)
    warc = WarcStore(out_dir, prefix="recrawl")
    counts = {UNCHANGED: 0, CHANGED: 0, DENIED: 0, ERROR: 0, "not_modified": 0, "due": 0}
    try:
        warc.recover(frontier.warc_ends())  # bytes a killed run wrote but never committed
        state = {r["url"]: dict(r) for r in frontier.db.execute("SELECT * FROM revisits")}
        due = []
        for row in frontier.rows(["done"]):
            if row["status"] != 200 or not row["warc_file"]:
                continue
            st = state.get(row["url"])
            if st is None:
                fetched = _unix(row["fetched_at"]) or clock
                st = {"interval_s": policy.initial_s, "next_due": fetched + policy.initial_s}
                st.update(checks=0, changes=0, etag=None, last_modified=None)
                st["etag"], st["last_modified"] = stored_validators(out_dir, row)
            if not due_only or st["next_due"] <= clock:
                due.append((row, st))
        counts["due"] = len(due)
        lang = PageLanguage()
        async with Downloader(cfg) as d:

            async def revisit(item: tuple[dict[str, Any], dict[str, Any]]) -> None:
                row, st = item
                headers = {}
                if st.get("etag"):
                    headers["If-None-Match"] = st["etag"]
                if st.get("last_modified"):
                    headers["If-Modified-Since"] = st["last_modified"]
                res = await d.fetch(row["url"], max_redirects=0, headers=headers or None)
                outcome = _settle(frontier, warc, cfg, lang, row, st, res, policy, clock)
                counts[outcome] += 1
                counts["not_modified"] += res.status == 304
                if progress is not None:
                    progress({"url": row["url"], "outcome": outcome, "status": res.status})

            await per_server(d, due, lambda item: item[0]["url"], revisit)
        warc.close()
        written = write_outputs(frontier, out_dir)
        revisits = write_recrawl_table(frontier, out_dir)
    finally:
        warc.close()
        frontier.close()
    return {**counts, "pages": written["pages"], "revisits": revisits, "at": _iso(clock)}


async def per_server(
    d: Downloader,
    items: list[T],
    url_of: Callable[[T], str],
    work: Callable[[T], Awaitable[Any]],
) -> None:
    """Run `work(item)` for every item, one lane per politeness key (server) in item order,
    `per_host_connections` lanes per server, at most `concurrency` lanes at once, longest first.

    A permit per item would be held while the item waits for its server's politeness slot: when
    one server's items come together (a site's pages in crawl order, many names on one host),
    every permit waits on that server and the others idle, so the run takes the sum of the
    servers' queues instead of the longest one.
    """
    limit = asyncio.Semaphore(max(1, d.cfg.concurrency))

    async def server_of(item: T) -> str:
        async with limit:  # the key the fetch will use (resolved IP by default)
            return await d.politeness.resolve(urlsplit(url_of(item)).netloc.lower())

    lanes: dict[str, list[T]] = {}
    keys = await asyncio.gather(*map(server_of, items))
    for item, key in zip(items, keys, strict=True):
        lanes.setdefault(key, []).append(item)
    n = max(1, d.cfg.per_host_connections)
    queues = [q[i::n] for q in lanes.values() for i in range(n) if q[i::n]]

    async def lane(queue: list[T]) -> None:
        async with limit:
            for item in queue:
                await work(item)

    await asyncio.gather(*(lane(q) for q in sorted(queues, key=len, reverse=True)))


def _failed(res: FetchResult) -> bool:
    """True for a revisit that says nothing about the page: no answer, 429/5xx, a refusal, or a
    2xx whose body did not arrive whole and wanted (timeout mid-body, unwanted content type,
    too large, undecodable): the copy we hold is kept."""
    if res.status is None or res.status >= 500 or res.status == 429 or is_refusal(res.error):
        return True
    return 200 <= res.status < 300 and res.error is not None


def _settle(
    frontier: Frontier,
    warc: WarcStore,
    cfg: CrawlConfig,
    lang: PageLanguage,
    row: dict[str, Any],
    st: dict[str, Any],
    res: FetchResult,
    policy: RevisitPolicy,
    clock: float,
) -> str:
    """Record one revisit (page fields, WARC commit and revisit state in one transaction)."""
    fields: dict[str, Any] = {}
    loc = None
    if res.error and is_refusal(res.error) and res.robots_crawl == DISALLOWED:
        outcome = DENIED
        fields = {"robots_crawl": res.robots_crawl, **_consent(row, res.robots_training)}
    elif _failed(res):
        outcome = ERROR
        fields = _kept_copy_consent(row, res, cfg)
        if fields and res.hops:  # an opt-out taken from this answer: archived as its evidence
            loc = warc.write(res.hops, res.fetched_at)
    elif res.status == 304:
        outcome = UNCHANGED
        fields = _kept_copy_consent(row, res, cfg)
        loc = warc.write(res.hops, res.fetched_at)  # the 304 itself, archived as evidence
    else:
        crawl, training = res.robots_crawl or ALLOWED, res.robots_training or ALLOWED
        page = describe_page(row, res, crawl, training, cfg, lang)
        # Recorded anew: what the held copy's body said (hash, title, language) goes with it.
        fields = dict.fromkeys(CONTENT_FIELDS)
        fields.update((k, v) for k, v in page.fields.items() if k != "outlinks")
        fields["training_allowed"] = int(
            bool(fields["training_allowed"]) and bool(row.get("training_allowed"))
        )
        if res.hops:
            loc = warc.write(res.hops, res.fetched_at)
            fields.update(warc_file=loc.file, warc_offset=loc.offset, warc_length=loc.length)
        same = res.status == 200 and fields.get("content_sha256") == row["content_sha256"]
        outcome = UNCHANGED if same else CHANGED
    interval = policy.next_interval(float(st["interval_s"]), outcome)
    next_due = clock + (policy.min_s if outcome == ERROR else interval)
    etag, modified = st.get("etag"), st.get("last_modified")
    if outcome in (UNCHANGED, CHANGED) and res.hops:
        etag = _header(res, "ETag") or (etag if outcome == UNCHANGED else None)
        modified = _header(res, "Last-Modified") or (modified if outcome == UNCHANGED else None)
    with frontier:
        if loc is not None:
            frontier.commit_warc(loc.file, loc.end)
        if fields:
            frontier.update(row["url"], fields)
        frontier.db.execute(
            "INSERT OR REPLACE INTO revisits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row["url"],
                etag,
                modified,
                interval,
                next_due,
                int(st["checks"]) + 1,
                int(st["changes"]) + (outcome == CHANGED),
                outcome,
                res.status,
                _iso(clock),
            ),
        )
    return outcome


def write_recrawl_table(frontier: Frontier, out_dir: Path) -> int:
    """Write OUT/recrawl.parquet: the revisit state of every revisited page; returns rows."""
    import os

    query = (
        "SELECT r.*, u.host, u.content_sha256 FROM revisits r JOIN urls u ON u.url = r.url "
        "ORDER BY u.seq"
    )
    rows = []
    for r in frontier.db.execute(query):
        r = dict(r)
        r["next_due"] = _iso(r["next_due"])
        rows.append({f.name: r.get(f.name) for f in RECRAWL_SCHEMA})
    table = pa.Table.from_pylist(rows, schema=RECRAWL_SCHEMA)
    path = Path(out_dir) / RECRAWL_FILE
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return len(rows)


def run_recrawl(
    out_dir: str | Path, config: CrawlConfig | dict | None = None, **kwargs: Any
) -> dict[str, Any]:
    """`recrawl` from synchronous code (a CLI, a Dagster op); writes the datasets' manifests."""
    from common.manifest import write_manifest

    summary = asyncio.run(recrawl(out_dir, config, **kwargs))
    out_dir = Path(out_dir)
    conf = CrawlConfig.from_any(config).model_dump()
    write_manifest(
        out_dir / "pages.parquet",
        rows=summary["pages"],
        inputs=[str(out_dir / "frontier.sqlite")],
        config=conf,
        extra={"recrawl": summary},
    )
    write_manifest(
        out_dir / RECRAWL_FILE,
        rows=summary["revisits"],
        inputs=[str(out_dir / "frontier.sqlite")],
        config=conf,
    )
    return summary
