"""Render the pages of a crawl that need it: plan from static HTML, then drive the browser.

`replay_renders` renders those pages again from the render's own WARC records (no network), so
a render can be re-extracted later exactly as it was seen.

A page on a private IP literal may reach its own origin (and nothing else private) only when the
crawl that fetched it was told to allow private networks (its own `allow_private_networks`, in
the shard's frontier.sqlite) and the record is no import: an imported archive's URLs are data,
and data never grants a fetch (`plan_renders`, `RenderJob.trust_own_origin`).

Links only a page's scripts revealed ("Load more", infinite scroll) go back to the crawl that
fetched it (`hand_on_links`): the rendered DOM's links, read as the crawl reads links, less those
of the page's static HTML, and the same-origin URLs its scripts pushed into the history (a
client-side pager's "?page=2": `RenderOutcome.history_urls`), are written to that crawl's
inboxes (`crawlers.crawl.routing.hand_on`) and fetched by its next `--resume`. Never for an
imported page (data never grants a fetch).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import sqlite3
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from crawlers.crawl.canon import UrlError, canonicalize, host_of
from crawlers.crawl.config import shard_of
from crawlers.crawl.html import parse_html
from crawlers.crawl.robots_policy import MAX_SPELLINGS, spellings
from crawlers.crawl.routing import RENDER_SOURCE, hand_on, shard_root_of
from crawlers.extract.crawl_io import crawl_shards, iter_crawl_records, iter_shard_records
from crawlers.extract.decode import BadPage, decode_html
from crawlers.render.archive import ArchiveLocation, read_page
from crawlers.render.decide import ROBOTS_TOKENS, RenderDecision, needs_render
from crawlers.render.session import RenderConfig, RenderJob, RenderOutcome, render_pages

RENDER_MODES = ("auto", "never", "always")
JOURNAL_FILE = "render-journal.sqlite"
JOURNAL_VERSION = 2  # bump when a journaled outcome would no longer equal a fresh render's
log = logging.getLogger(__name__)


def frontier_config(pages_file: str | Path) -> dict[str, Any]:
    """The configuration the crawl that wrote `pages_file` ran with (the `config` of the
    frontier.sqlite beside it), read-only; {} when there is none (an import, a crawl an older
    version wrote)."""
    db = Path(pages_file).parent / "frontier.sqlite"
    if not db.exists():
        return {}
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
        finally:
            con.close()
        return dict(json.loads(row[0])) if row else {}
    except (sqlite3.Error, ValueError, TypeError):
        return {}  # not a crawl this version wrote: the defaults apply


@dataclasses.dataclass(frozen=True)
class LinkSource:
    """A page a crawl fetched, whose rendered DOM's new links go back to that crawl: where its
    inboxes are, how it reads links, and what the page's static HTML linked already."""

    shard_root: Path
    shards: int
    shard: int
    agent: str
    training_agent: str
    depth: int | None  # the page's depth in the crawl (None: not recorded)
    static: frozenset[str]  # canonical URLs of the static HTML's links (the crawl has them)


def _crawl_of(pages_file: str | Path, cfg: dict[str, Any]) -> dict[str, Any] | None:
    """How the crawl that wrote `pages_file` routes links (shard root, shard count, tokens), or
    None when no crawl configuration is there (an import, an older crawl): nothing to hand on."""
    if not cfg:
        return None
    root = shard_root_of(Path(pages_file).parent, cfg)
    return {
        "shard_root": root,
        "shards": int(cfg.get("shards") or 1),
        "shard": int(cfg.get("shard") or 0),
        "agent": str(cfg.get("agent") or "RefineryBot"),
        "training_agent": str(cfg.get("training_agent") or "RefineryBot-Extended"),
    }


def _link_source(rec: dict, crawl: dict[str, Any] | None) -> LinkSource | None:
    """The page's `LinkSource`; None for an imported page, a page of no crawl, or one whose
    crawl follows none of its links (meta robots or X-Robots-Tag nofollow)."""
    if crawl is None or imported(rec) or rec.get("nofollow"):
        return None
    try:
        links = parse_html(
            rec["body"], rec["url"], agent=crawl["agent"], training_agent=crawl["training_agent"]
        ).links
    except Exception:  # the crawl read no links of a page it could not parse: all are new
        links = []
    depth = rec.get("depth")
    return LinkSource(
        **crawl,
        depth=int(depth) if depth is not None else None,
        static=frozenset(lk.url for lk in links),
    )


def imported(rec: dict) -> bool:
    """A record an import wrote (`source` 'import:warc', an `import_mode`): an archive's data,
    not a fetch this project made."""
    return str(rec.get("source") or "").startswith("import") or bool(rec.get("import_mode"))


def plan_renders(
    crawl_dir: str | Path,
    mode: str = "auto",
    config: RenderConfig | None = None,
    probe: bool = False,
) -> tuple[list[dict], list[RenderJob]]:
    """One decision row per fetched HTML page (url, rendered, render_reason) and the jobs to render.

    With `probe` (what `render_crawl` does in mode auto), the pages whose static evidence is
    ambiguous, and a page of each host's templates for the robots directives its scripts write,
    are settled by short probe renders in `config`'s browser before anything is rendered
    (`_settle_probes`); without it they stay as decided. A job trusts its page's own private
    origin (`RenderJob.trust_own_origin`) only when its shard's crawl ran with
    allow_private_networks and the record is no import (`imported`)."""
    plan = _plan(crawl_dir, mode, config, probe)
    return plan.decisions, plan.jobs


@dataclasses.dataclass
class _RenderPlan:
    """`plan_renders`, with each job's journal key (`page_key`), by URL the `LinkSource` of
    each job whose new links go back to its crawl, and the keys of every page that was a
    candidate (jobs and probed pages: what names the render to its journal, whatever a probe
    found)."""

    decisions: list[dict]
    jobs: list[RenderJob]
    keys: list[str]
    sources: dict[str, LinkSource]
    candidates: list[str]


def _plan(
    crawl_dir: str | Path, mode: str, config: RenderConfig | None = None, probe: bool = False
) -> _RenderPlan:
    if mode not in RENDER_MODES:
        raise ValueError(f"render mode {mode!r}: choose one of {', '.join(RENDER_MODES)}")
    planned: list[tuple[dict, RenderJob | None, str, Callable[[], LinkSource | None] | None]] = []
    probed: list[tuple[dict, RenderJob, RenderDecision]] = []
    tokens = (config.robots_token, config.training_token) if config else ROBOTS_TOKENS
    seen = set()
    crawls: dict[str, tuple[bool, dict | None]] = {}  # pages file -> (trusted, its routing)
    for pages_file, warc_file in crawl_shards(crawl_dir):
        if pages_file not in crawls:
            cfg = frontier_config(pages_file)
            crawls[pages_file] = (
                cfg.get("allow_private_networks") is True,
                _crawl_of(pages_file, cfg),
            )
        told, crawl = crawls[pages_file]
        for rec in iter_shard_records(pages_file, warc_file):
            row, job, decision = _plan_one(rec, mode, seen, told and not imported(rec), tokens)
            if row is None:
                continue
            if job is None:
                planned.append((row, None, "", None))
                continue
            # read only for a page that is rendered (a probe may leave it static)
            source = functools.partial(_link_source, rec, crawl)
            planned.append((row, job, page_key(job, rec["body"]), source))
            if decision is not None and not decision.render:
                probed.append((row, job, decision))
    if probe and probed:
        _settle_probes(probed, config, len(planned))
    plan = _RenderPlan([], [], [], {}, [])
    for row, job, key, source in planned:
        plan.decisions.append(row)
        if job is None:
            continue
        plan.candidates.append(key)
        if row["rendered"]:
            plan.jobs.append(job)
            plan.keys.append(key)
            link_source = source() if source is not None else None
            if link_source is not None:
                plan.sources[job.url] = link_source
    return plan


PROBE_BUDGET_S = 5.0  # seconds of one probe render (crawlers.render.probe.probe_config)


def _settle_probes(
    entries: list[tuple[dict, RenderJob, RenderDecision]],
    config: RenderConfig | None,
    pages: int,
    budget_s: float = PROBE_BUDGET_S,
) -> None:
    """Settle the pages that would stay static with short probe renders, before anything is
    rendered (`crawlers.render.probe.settle_pages`: no clicks, nothing archived,
    `pages_in_flight` at once, `budget_s` each): the ambiguous ones (`RenderDecision.ambiguous`;
    at most PROBE_MAX_SHARE of the crawl's `pages`, at least PROBE_MIN_PAGES, thin pages first),
    and a page of each host's templates (`RenderDecision.scripts`), whose scripts' robots
    directives hold for every page of it. Each row's `rendered` and `render_reason` are set in
    place; the probes' time is logged."""
    from crawlers.render.probe import settle_pages

    settled = settle_pages(
        [job for _, job, _ in entries],
        [decision for _, _, decision in entries],
        config,
        pages=pages,
        budget_s=budget_s,
    )
    for (row, _, _), decision in zip(entries, settled, strict=True):
        row["rendered"], row["render_reason"] = decision.render, decision.reason


def page_key(job: RenderJob, body: bytes) -> str:
    """What identifies a page to render across runs: its URL, the sha256 of the crawl record's
    body, and what the render is told about it (consent, trust of its own origin)."""
    ident = [job.url, hashlib.sha256(body).hexdigest(), job.training_allowed, job.trust_own_origin]
    return hashlib.sha256(json.dumps(ident).encode()).hexdigest()


def _plan_one(
    rec: dict,
    mode: str,
    seen: set[str],
    trust_own_origin: bool,
    tokens: tuple[str, str] = ROBOTS_TOKENS,
) -> tuple[dict | None, RenderJob | None, RenderDecision | None]:
    """One record's decision row, its job (for a page to render, or one a probe may settle: an
    ambiguous page, a page that runs scripts) and, in mode auto, the decision (None, None, None:
    nothing to render or decide). `tokens`: the crawl and training tokens (`needs_render`)."""
    if rec.get("body") is None or rec.get("status") != 200 or rec["url"] in seen:
        return None, None, None  # extraction rejects these with their reason; nothing to render
    seen.add(rec["url"])
    try:
        html = decode_html(rec["body"], rec.get("content_type"))
    except BadPage:
        return None, None, None
    decision = None
    if mode == "never":
        render, reason = False, "render mode never"
    elif mode == "always":
        render, reason = True, "render mode always"
    else:
        decision = needs_render(html, tokens)
        render, reason = decision.render, decision.reason
    row = {"url": rec["url"], "rendered": render, "render_reason": reason}
    if not render and not (decision is not None and (decision.ambiguous or decision.scripts)):
        return row, None, decision  # no scripts: nothing a render would show
    consent = rec.get("training_allowed")
    consent = consent if isinstance(consent, bool) else None
    job = RenderJob(rec["url"], html, training_allowed=consent, trust_own_origin=trust_own_origin)
    return row, job, decision


def render_crawl(
    crawl_dir: str | Path,
    mode: str = "auto",
    config: RenderConfig | None = None,
    on_result: Callable[[RenderOutcome], None] | None = None,
    journal: RenderJournal | None = None,
    hand_on_to_crawl: bool = True,
) -> list[dict]:
    """Rows of rendered.parquet: every decision, with the final DOM of pages that were rendered.

    With a `journal`, the pages an earlier run of the same render finished are taken from it
    (not rendered again), and each page this run finishes is committed to it as it finishes.
    The rows are the same either way, in the same (the plan's) order. With
    `hand_on_to_crawl`, the links only the rendered DOM holds go to the crawl's inboxes
    (`hand_on_links`; journaled pages' too), counted in each row's `links_handed_on`."""
    plan = _plan(crawl_dir, mode, config, probe=mode == "auto")
    decisions, jobs, keys, sources = plan.decisions, plan.jobs, plan.keys, plan.sources
    # The journal is named by every candidate, so a probe's verdict never makes a resumed run
    # look like another crawl's.
    done = journal.open(plan.candidates) if journal is not None else {}
    wanted = set(keys)
    done = {k: o for k, o in done.items() if k in wanted}  # not one the probe left static
    key_of = {j.url: k for j, k in zip(jobs, keys, strict=True)}  # a URL is planned once
    todo = [j for j in jobs if key_of[j.url] not in done]

    def finished(outcome: RenderOutcome) -> None:
        if journal is not None:
            journal.record(key_of[outcome.url], outcome)
        if on_result:
            on_result(outcome)

    outcomes = {o.url: o for o in done.values()}
    if todo:
        outcomes |= {o.url: o for o in render_pages(todo, config, finished)}
    handed = hand_on_links(decisions, outcomes, sources) if hand_on_to_crawl else {}
    rows = []
    for d in decisions:
        o = outcomes.get(d["url"])
        reason = d["render_reason"]
        if o and o.opted_out:
            reason += (
                f"; training opt-out: {len(o.opted_out)} sub-request(s) not loaded, their text "
                "is not in the page (robots.txt for the training token, X-Robots-Tag or meta robots "
                "noai; see blocked_requests)"
            )
        if o and o.navigated_to:
            reason += f"; navigation to {o.navigated_to} not followed"
        rows.append(
            {
                **d,
                "render_reason": reason,
                "html": o.html if o else None,
                "error": o.error if o else None,
                "render_ms": o.render_ms if o else None,
                "blocked_requests": o.blocked_requests if o else [],
                "media_blocked": o.media_blocked if o else 0,
                "interactions": o.interactions if o else 0,
                "subresources": o.subresources if o else [],
                "warc_file": o.archive.file if o and o.archive else None,
                "warc_offset": o.archive.offset if o and o.archive else None,
                "warc_length": o.archive.length if o and o.archive else None,
                "links_handed_on": handed.get(d["url"], 0),
            }
        )
    return rows


def new_links(
    html: str, url: str, source: LinkSource, history: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """The links of a page's rendered DOM its static HTML lacks, as OUTBOX_SCHEMA rows: read as
    the crawl reads a page's links (`parse_html`: canonical URLs, <a href>, <link rel=next...>,
    meta refresh, <base>), none when the DOM says nofollow to the crawl token, none marked
    rel=nofollow, in document order; `found` holds the spellings the DOM wrote a link in that
    robots.txt could judge otherwise than its canonical URL (the crawl asks about each); then
    the same-origin URLs the page pushed into its history (`history`: a client-side pager's
    "?page=2"), canonicalised the same way, in the order pushed."""
    try:
        info = parse_html(html, url, agent=source.agent, training_agent=source.training_agent)
    except Exception as exc:  # one page's markup never ends the render: logged, nothing handed on
        log.warning("render: %s: its rendered DOM's links are unreadable (%s)", url, exc)
        return []
    if info.directives.nofollow:
        return []
    depth = source.depth + 1 if source.depth is not None else None
    links = [(lk.url, lk.anchor, lk.found) for lk in info.links if not lk.nofollow]
    known = {u for u, _, _ in links}
    for href in history:
        try:
            canon = canonicalize(href, url)
        except UrlError:
            continue
        if canon not in known:
            known.add(canon)
            links.append((canon, "", (href.split("#", 1)[0],)))
    return [
        {
            "url": link,
            "depth": depth,
            "source": RENDER_SOURCE,
            "parent": url,
            "anchor": anchor,
            "from_shard": source.shard,
            "found": spellings(link, found)[:MAX_SPELLINGS],
        }
        for link, anchor, found in links
        if link not in source.static
    ]


def hand_on_links(
    decisions: list[dict], outcomes: dict[str, RenderOutcome], sources: dict[str, LinkSource]
) -> dict[str, int]:
    """Write the links only rendered DOMs hold to the inboxes of the crawl that fetched each page
    (the link's host decides the shard: `shard_of`), one part per target shard
    (`crawlers.crawl.routing.hand_on`: named by its rows, so running the render again adds no
    second part); the crawl queues them on its next --resume under its own rules, robots.txt
    judging each under every spelling the pages wrote it in. Returns, per page URL, how many
    links it handed on (a link two pages reveal counts for the first)."""
    parts: dict[tuple[Path, int], dict[str, dict[str, Any]]] = {}
    handed: dict[str, int] = {}
    for d in decisions:  # the plan's order: the same parts whatever order pages finished in
        url, source, o = d["url"], sources.get(d["url"]), outcomes.get(d["url"])
        if source is None or o is None or not o.html:
            continue
        for row in new_links(o.html, url, source, o.history_urls):
            box = parts.setdefault(
                (source.shard_root, shard_of(host_of(row["url"]), source.shards)), {}
            )
            if row["url"] not in box:
                box[row["url"]] = row
                handed[url] = handed.get(url, 0) + 1
            else:  # another page's spellings of it: robots.txt must allow those too
                had = box[row["url"]]["found"]
                more = [f for f in row["found"] if f not in had]
                box[row["url"]]["found"] = [*had, *more][:MAX_SPELLINGS]
    for (root, shard), rows in parts.items():
        hand_on(root, shard, sorted(rows.values(), key=lambda r: r["url"]))
    if handed:
        log.info(
            "render: %d link(s) only rendered DOMs hold were handed on to the crawl's inboxes "
            "(%d part(s)); `crawl --resume` fetches them",
            sum(handed.values()),
            len(parts),
        )
    return handed


def replay_renders(
    crawl_dir: str | Path,
    render_dir: str | Path,
    config: RenderConfig | None = None,
    rendered_file: str = "rendered.parquet",
) -> list[RenderOutcome]:
    """Render every archived page of a render output again from its WARC records alone.

    The main document comes from the crawl, every sub-resource from `render_dir`'s records;
    a request with no record is refused ('not in the render archive'), nothing is fetched.
    """
    import dataclasses

    import pyarrow.parquet as pq

    render_dir = Path(render_dir)
    path = render_dir / rendered_file
    if not path.exists():
        raise FileNotFoundError(f"{path}: no render output; run the render stage first")
    cols = set(pq.read_schema(path).names)
    if not {"warc_file", "warc_offset", "warc_length"} <= cols:
        raise ValueError(f"{path}: has no warc_file/warc_offset columns (rendered without archive)")
    rows = [
        r
        for r in pq.read_table(
            path, columns=["url", "warc_file", "warc_offset", "warc_length"]
        ).to_pylist()
        if r["warc_file"]
    ]
    wanted = {r["url"]: r for r in rows}
    jobs = []
    for rec in iter_crawl_records(crawl_dir):
        row = wanted.pop(rec["url"], None)
        if row is None or rec.get("body") is None:
            continue
        html = decode_html(rec["body"], rec.get("content_type"))
        archive = read_page(render_dir / row["warc_file"], row["warc_offset"], row["warc_length"])
        jobs.append(RenderJob(rec["url"], html, archive))
    if wanted:
        raise ValueError(
            f"{path}: {len(wanted)} rendered page(s) are not in the crawl {crawl_dir}, "
            f"e.g. {next(iter(wanted))}; pass the crawl this render was made from"
        )
    cfg = dataclasses.replace(config or RenderConfig(), archive_dir=None)
    return render_pages(jobs, cfg) if jobs else []


class RenderJournal:
    """The pages a render finished, committed one at a time to a sqlite file in its out_dir, so
    that a render killed part way resumes where it was: a later run of the same render takes
    those pages from here and renders only the rest (`render_crawl`).

    The journal names the render's settings and the crawl it renders (the plan's page keys, in
    order); one written for other settings or another crawl is discarded, with a log line,
    never mixed. A page is committed only once its WARC batch is on disk (`RenderArchive`
    fsyncs it first), so a journaled row never points at records a kill cut short: the
    records of a page killed mid-way are orphans no row refers to. Pages the browser never
    rendered (`browser unavailable`, a crash it could not be relaunched after) are not
    committed: the next run tries them again.
    """

    def __init__(
        self, path: str | Path, settings: dict[str, Any], archive_dir: str | Path | None = None
    ):
        self.path = Path(path)
        settings = {**settings, "journal_version": JOURNAL_VERSION}
        self.settings = json.loads(json.dumps(settings, sort_keys=True, default=str))
        self.archive_dir = Path(archive_dir) if archive_dir is not None else None
        self.resumed = 0  # pages taken from an earlier run
        self._con: sqlite3.Connection | None = None
        self._dropped: list[str] = []  # journaled pages not reusable: deleted on open

    def open(self, keys: list[str]) -> dict[str, RenderOutcome]:
        """Start journaling a render of the pages `keys`; the outcomes an earlier run of the same
        render and crawl committed, by key (an empty dict when there is none to reuse)."""
        crawl = hashlib.sha256("\n".join(keys).encode()).hexdigest()
        done: dict[str, RenderOutcome] = {}
        if self.path.exists():
            why = self._mismatch(crawl)
            if why:
                log.warning(
                    "render: discarding the journal %s (%s); every page is rendered", self.path, why
                )
                self.remove()
            else:
                done = self._load(set(keys))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = self._con = sqlite3.connect(self.path)
        con.execute("PRAGMA synchronous = FULL")
        con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        con.execute(
            "CREATE TABLE IF NOT EXISTS pages (key TEXT PRIMARY KEY, url TEXT, outcome BLOB)"
        )
        meta = [("settings", json.dumps(self.settings, sort_keys=True)), ("crawl", crawl)]
        con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta)
        con.executemany("DELETE FROM pages WHERE key = ?", [(k,) for k in self._dropped])
        con.commit()
        self.resumed = len(done)
        if done:
            log.info(
                "render: resuming from the journal %s: %d of %d page(s) were finished by an "
                "earlier run and are reused; %d to render",
                self.path,
                len(done),
                len(keys),
                len(keys) - len(done),
            )
        return done

    def _mismatch(self, crawl: str) -> str | None:
        """Why the journal on disk is not this render's (None: it is)."""
        try:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            finally:
                con.close()
            old = json.loads(meta["settings"])
        except (sqlite3.Error, KeyError, ValueError, TypeError) as exc:
            return f"unreadable: {type(exc).__name__}: {exc}"
        if old != self.settings:
            changed = sorted(
                k for k in set(old) | set(self.settings) if old.get(k) != self.settings.get(k)
            )
            diffs = ", ".join(f"{k} {old.get(k)!r} -> {self.settings.get(k)!r}" for k in changed)
            return f"written with other settings: {diffs}"
        if meta.get("crawl") != crawl:
            return "written for another crawl: its pages to render differ"
        return None

    def _load(self, keys: set[str]) -> dict[str, RenderOutcome]:
        """The journaled outcomes of `keys` whose WARC batch is still whole on disk."""
        done, dropped = {}, []
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT key, outcome FROM pages").fetchall()
        finally:
            con.close()
        for key, blob in rows:
            try:
                outcome = _decode_outcome(blob)
            except (zlib.error, ValueError, TypeError):
                outcome = None
            if key in keys and outcome is not None and self._archived(outcome):
                done[key] = outcome
            else:
                dropped.append(key)
        if dropped:
            log.warning(
                "render: %d page(s) in the journal %s are not reusable (their WARC batch is "
                "gone or cut short, or the entry is unreadable); they are rendered again",
                len(dropped),
                self.path,
            )
        self._dropped = dropped
        return done

    def _archived(self, outcome: RenderOutcome) -> bool:
        """The page's WARC batch (if it has one) is still whole where the row will point."""
        loc = outcome.archive
        if loc is None:
            return True
        if self.archive_dir is None:
            return False
        path = self.archive_dir / loc.file
        return path.is_file() and path.stat().st_size >= loc.offset + loc.length

    def record(self, key: str, outcome: RenderOutcome) -> None:
        """Commit one finished page (its WARC batch is on disk already)."""
        err = outcome.error or ""
        if err.startswith("browser unavailable") or "could not be relaunched" in err:
            return  # never rendered: the next run tries it again
        assert self._con is not None, "RenderJournal.open first"
        blob = zlib.compress(json.dumps(dataclasses.asdict(outcome)).encode(), 3)
        self._con.execute("INSERT OR REPLACE INTO pages VALUES (?, ?, ?)", (key, outcome.url, blob))
        self._con.commit()

    def close(self) -> None:
        """Close the database (the journal stays, for a later run to resume from)."""
        if self._con is not None:
            self._con.close()
            self._con = None

    def remove(self) -> None:
        """Close and delete the journal (with sqlite's side files)."""
        self.close()
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)


def _decode_outcome(blob: bytes) -> RenderOutcome:
    """A journaled RenderOutcome (`RenderJournal.record`)."""
    data = json.loads(zlib.decompress(blob))
    archive = data.pop("archive", None)
    return RenderOutcome(**data, archive=ArchiveLocation(**archive) if archive else None)
