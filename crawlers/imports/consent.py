"""Consent for imported rows: today's robots.txt for both tokens, plus the archived opt-outs.

For every origin in an import, robots.txt is fetched now through the crawler's `Downloader`
(SSRF guard, politeness, redirect limit, RFC 9309 status mapping), one lane per server as
`consent recheck` does (`crawlers.crawl.recrawl.per_server`). A row's `training_allowed` is the
boolean true only when

- today's robots.txt was fetched and allows the training token for the URL (matched against
  the URL's canonical form, as the crawler matches: `robots_outcome`), and
- the archived response carried no `noai` (X-Robots-Tag header or meta robots), and
- the row did not come already not allowed (`training_allowed` false before the check: the
  source's own opt-out, e.g. a corpus row's `training_allowed`/`noai` in `import docs`, whose
  `consent_source` is kept as the first evidence).

An origin whose robots.txt cannot be fetched (network error, timeout, 5xx, 429, a refused
address) gives no consent: its rows are not allowed, `robots_training = 'unreachable'`. With
`offline`, nothing is fetched and every URL-bearing row is not allowed, saying so.

`consent_source` names the evidence that decided, `; `-separated, e.g.
`robots.txt at import: allowed (fetched 2026-11-28T05:00:00Z, HTTP 200, sha256 ab12...)` or
`archived headers: X-Robots-Tag noai; robots.txt at import: allowed (...)`.

An archived noai is also appended to the lake's consent ledger (`append_archived`, one row per
URL, `robots_kind = 'archived'`), so it holds for every copy of the page in the lake (another
shard of the import, a crawl) and no robots.txt recheck lifts it (`crawlers.consent`).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

OFFLINE = "offline: robots.txt not fetched (--offline), so no consent"


@dataclass
class OriginVerdict:
    """Today's robots.txt of one origin, as fetched (or why it could not be)."""

    origin: str
    robots_url: str
    status: int | None = None
    fetched_at: str | None = None
    sha256: str | None = None
    kind: str | None = None
    unreachable: str | None = None  # why no evidence came back; None when it did
    robots: Any = None  # crawlers.robots.RobotsTxt when reachable
    urls: list[str] = field(default_factory=list)
    allowed_urls: int = 0  # rows of this origin whose training_allowed came out true

    def evidence(self) -> str:
        when = f"fetched {self.fetched_at}" if self.fetched_at else "not fetched"
        sha = f", sha256 {self.sha256}" if self.sha256 else ""
        status = f", HTTP {self.status}" if self.status is not None else ""
        return f"{when}{status}{sha}"

    def host_row(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "robots_url": self.robots_url,
            "robots_status": self.status,
            "robots_fetched_at": self.fetched_at,
            "robots_sha256": self.sha256,
            "robots_kind": self.kind,
            "unreachable": self.unreachable,
            "urls": len(self.urls),
            "training_allowed_urls": self.allowed_urls,
            "decided": True,
        }


def _iso(ts: float | None) -> str:
    when = datetime.fromtimestamp(ts, UTC) if ts else datetime.now(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def group_by_origin(urls: list[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """origin -> its URLs, and URL -> why no robots.txt can be asked for it (bad URL)."""
    from crawlers.consent import _robots_origin

    by_origin: dict[str, list[str]] = {}
    bad: dict[str, str] = {}
    for url in urls:
        origin, why = _robots_origin(url)
        if why is not None:
            bad[url] = why
        else:
            by_origin.setdefault(origin, []).append(url)
    return by_origin, bad


async def fetch_robots_async(
    by_origin: dict[str, list[str]],
    config: Any = None,
    on_verdict: Callable[[OriginVerdict], None] | None = None,
) -> dict[str, OriginVerdict]:
    """Today's robots.txt of every origin, through the crawler's Downloader.

    `on_verdict(v)` is called as soon as an origin is decided; the parsed policy is then
    dropped (`v.robots = None` after the call, unless no callback is given), so an import of
    100k hosts never holds every host's robots.txt at once (as `consent recheck`)."""
    from crawlers.consent import _unreachable
    from crawlers.crawl.downloader import Downloader
    from crawlers.crawl.recrawl import per_server
    from crawlers.robots import RobotsCache

    verdicts = {
        o: OriginVerdict(o, o + "/robots.txt", urls=list(urls)) for o, urls in by_origin.items()
    }
    if not verdicts:
        return verdicts
    records: dict[str, Any] = {}
    async with Downloader(config, on_robots_fetch=lambda r: records.__setitem__(r.origin, r)) as d:
        d.robots.cache = RobotsCache(d.cfg.robots_max_age_s, max_entries=d.cfg.concurrency)

        async def check(origin: str) -> None:
            v = verdicts[origin]
            try:
                await decide_origin(origin, v)
            finally:
                if on_verdict is not None:
                    on_verdict(v)
                    v.robots = None

        async def decide_origin(origin: str, v: OriginVerdict) -> None:
            try:
                robots = await d.robots.get(origin + "/")
            except Exception as exc:  # one origin never ends the import: it is not consented
                records.pop(origin, None)
                v.unreachable = f"error: {type(exc).__name__}: {exc}"[:500]
                v.fetched_at = _iso(None)
                return
            record = records.pop(origin, None)
            why = _unreachable(record)
            v.kind = robots.kind
            if record is not None:
                v.status = record.status
                v.fetched_at = _iso(record.fetched_at)
                if record.status is not None:  # the body as fetched (no body: no sha256)
                    v.sha256 = hashlib.sha256(record.body or b"").hexdigest()
            else:
                v.fetched_at = _iso(None)
            if why is not None:
                v.unreachable = why
            else:
                v.robots = robots

        await per_server(d, sorted(verdicts), str, check)
    return verdicts


def fetch_robots(
    by_origin: dict[str, list[str]],
    config: Any = None,
    on_verdict: Callable[[OriginVerdict], None] | None = None,
) -> dict[str, OriginVerdict]:
    """`fetch_robots_async` from synchronous code."""
    return asyncio.run(fetch_robots_async(by_origin, config, on_verdict))


Outcome = tuple[bool, bool, str]  # robots.txt today for one URL: crawl ok, training ok, rule


def robots_outcome(robots: Any, url: str, agent: str, training_agent: str) -> Outcome:
    """What today's parsed robots.txt says of `url` for both tokens, and the training group's
    matching rule when it disallows (for `consent_source`). The rules are matched against the
    URL's canonical form and its slash-merged form, as the crawler asks them
    (`crawlers.consent.robots_targets`): an archive's `/%70rivate/`, `/a/../private/`,
    `//private/` or raw `/café` meets `Disallow: /private` or `Disallow: /café`. A URL with no
    canonical form is allowed for neither token."""
    from crawlers.consent import matched_rule, robots_verdict
    from crawlers.crawl.canon import UrlError

    try:
        crawl_ok, _ = robots_verdict(robots, agent, url)
        train_ok, target = robots_verdict(robots, training_agent, url)
    except (UrlError, ValueError, TypeError) as exc:
        return False, False, f" (no canonical URL: {exc})"
    rule = ""
    if not train_ok:
        group, line = matched_rule(robots, training_agent, target)
        rule = f" by group {group!r} rule {line!r}" if line else f" by group {group!r}"
    return crawl_ok, train_ok, rule


def decide(
    row: dict[str, Any],
    verdict: OriginVerdict | None,
    *,
    agent: str,
    training_agent: str,
    offline: bool = False,
    bad_url: str | None = None,
    outcome: Outcome | None = None,
) -> dict[str, Any]:
    """The consent columns of one imported row with a URL: crawl_allowed, training_allowed,
    robots_crawl, robots_training, consent_source, robots_fetched_at, robots_sha256.
    `outcome`: the URL's `robots_outcome`, taken when the verdict's parsed policy is dropped."""
    url = row["url"]
    evidence: list[str] = []
    denied = False
    # A row that comes already not allowed (its source's own opt-out: a corpus row's
    # training_allowed or noai, `crawlers.imports.docs`) stays so: robots.txt only takes out.
    # Its consent_source, the evidence for that, comes first.
    if row.get("training_allowed") is False:
        denied = True
    if row.get("consent_source"):
        evidence.append(row["consent_source"])
    if row.get("archived_header_optout"):
        evidence.append(f"archived headers: X-Robots-Tag {row['archived_header_optout']}")
        denied |= "noai" in row["archived_header_optout"].split(",")
    if row.get("archived_meta_optout"):
        evidence.append(f"archived meta: robots {row['archived_meta_optout']}")
        denied |= "noai" in row["archived_meta_optout"].split(",")
    out: dict[str, Any] = {"robots_fetched_at": None, "robots_sha256": None}
    if offline:
        crawl = training = "unreachable"
        evidence.append(OFFLINE)
        denied = True
        crawl_ok = None
    elif bad_url is not None or verdict is None:
        crawl = training = "unreachable"
        evidence.append(f"robots.txt at import: none can be asked ({bad_url or 'no origin'})")
        denied = True
        crawl_ok = None
    elif verdict.unreachable is not None or (verdict.robots is None and outcome is None):
        crawl = training = "unreachable"
        evidence.append(
            f"robots.txt at import: unreachable ({verdict.unreachable}; {verdict.evidence()}), "
            "so no consent"
        )
        denied = True
        crawl_ok = None
        out.update(robots_fetched_at=verdict.fetched_at, robots_sha256=verdict.sha256)
    else:
        if outcome is None:
            outcome = robots_outcome(verdict.robots, url, agent, training_agent)
        crawl_ok, train_ok, rule = outcome
        crawl = "allowed" if crawl_ok else "disallowed"
        training = "allowed" if train_ok else "disallowed"
        evidence.append(
            f"robots.txt at import: {training} for {training_agent}{rule} ({verdict.evidence()})"
        )
        denied |= not train_ok
        out.update(robots_fetched_at=verdict.fetched_at, robots_sha256=verdict.sha256)
    out.update(
        crawl_allowed=crawl_ok,
        training_allowed=not denied,
        robots_crawl=crawl,
        robots_training=training,
        consent_source="; ".join(evidence),
    )
    return out


class ConsentBook:
    """Today's robots.txt for every origin of an import, kept as each URL's outcome, so rows are
    decided one at a time as they stream past (`apply`): no row waits in memory for its host's
    robots.txt, and no parsed robots.txt outlives its origin's decision."""

    def __init__(self, config: Any = None, *, offline: bool = False):
        from crawlers.crawl.config import CrawlConfig

        self.cfg = CrawlConfig.from_any(config)
        self.offline = offline
        self.verdicts: dict[str, OriginVerdict] = {}
        self.bad: dict[str, str] = {}
        self.outcomes: dict[str, Outcome] = {}
        self.origin_of: dict[str, str] = {}

    def fetch(self, urls: list[str]) -> None:
        """Fetch robots.txt for the origins of `urls` (nothing with `offline`)."""
        by_origin, self.bad = group_by_origin(sorted(set(urls)))
        self.origin_of = {u: o for o, us in by_origin.items() for u in us}
        if self.offline:
            for o, us in by_origin.items():
                v = self.verdicts[o] = OriginVerdict(o, o + "/robots.txt", urls=us)
                v.unreachable = "offline (--offline)"
            return
        self.verdicts = fetch_robots(by_origin, self.cfg, self._keep)

    def _keep(self, v: OriginVerdict) -> None:
        if v.robots is None:
            return
        a, t = self.cfg.agent, self.cfg.training_agent
        for url in v.urls:
            self.outcomes[url] = robots_outcome(v.robots, url, a, t)

    def apply(self, row: dict[str, Any]) -> None:
        """Decide one row with a URL (in place); count it for its origin's hosts row."""
        url = row["url"]
        v = self.verdicts.get(self.origin_of.get(url, ""))
        row.update(
            decide(
                row,
                v,
                agent=self.cfg.agent,
                training_agent=self.cfg.training_agent,
                offline=self.offline,
                bad_url=self.bad.get(url),
                outcome=self.outcomes.get(url),
            )
        )
        if v is not None and row["training_allowed"] is True:
            v.allowed_urls += 1

    def hosts(self) -> list[dict[str, Any]]:
        """One row per origin asked (hosts.parquet), then one per URL no robots.txt governs."""
        hosts = [v.host_row() for _, v in sorted(self.verdicts.items())]
        for url, why in sorted(self.bad.items()):
            hosts.append(
                {
                    "origin": url,
                    "robots_url": None,
                    "robots_status": None,
                    "robots_fetched_at": None,
                    "robots_sha256": None,
                    "robots_kind": None,
                    "unreachable": why,
                    "urls": 1,
                    "training_allowed_urls": 0,
                    "decided": True,
                }
            )
        return hosts


def consent_rows(
    rows: list[dict[str, Any]],
    *,
    config: Any = None,
    offline: bool = False,
) -> list[dict[str, Any]]:
    """Decide consent for every row that has a URL (in place) and return one row per origin
    (hosts.parquet): every origin asked, its robots.txt status, fetch time and sha256."""
    book = ConsentBook(config, offline=offline)
    book.fetch([r["url"] for r in rows if r.get("url")])
    for row in rows:
        if row.get("url"):
            book.apply(row)
    return book.hosts()


def append_archived(lake_root: Any, optouts: list[dict[str, Any]], agent: str) -> tuple[Any, int]:
    """Append the archived opt-outs of an import (`optouts`: {url, host, doc_ids, rule}, one per
    page kept whose capture, or another capture of its URL, said noai) to the lake's consent
    ledger as `training_allowed = false` rows of `robots_kind = 'archived'`
    (`crawlers.consent.ARCHIVED`: no robots.txt recheck re-allows them). A URL whose ids the
    ledger already holds such a row for, and whose latest row is an opt-out, is not written
    again (a re-run appends nothing). Returns (the file appended or None, rows appended)."""
    from common.consent import append_ledger, latest_rows, ledger_files
    from crawlers.consent import ARCHIVED, archived_optouts

    if not optouts:
        return None, 0
    files = ledger_files(lake_root)
    held = archived_optouts(files)
    latest = latest_rows(files)
    merged: dict[str, dict[str, Any]] = {}
    for o in optouts:
        m = merged.setdefault(o["url"], {**o, "doc_ids": set()})
        m["doc_ids"] |= set(o["doc_ids"])
    checked_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    rows = []
    for url, o in sorted(merged.items()):
        prev = latest.get(url)
        if (
            prev is not None
            and prev["training_allowed"] is False
            and o["doc_ids"] <= held.get(url, set())
        ):
            continue
        rows.append(
            {
                "checked_at": checked_at,
                "host": o["host"],
                "url": url,
                "doc_ids": sorted(o["doc_ids"] | held.get(url, set())),
                "training_allowed": False,
                "previous": None if prev is None else prev["training_allowed"],
                "agent": agent,
                "agent_group": None,
                "rule": (o.get("rule") or "")[:1000] or None,
                "robots_url": None,
                "robots_status": None,
                "robots_sha256": None,
                "robots_kind": ARCHIVED,
            }
        )
    return append_ledger(lake_root, rows), len(rows)
