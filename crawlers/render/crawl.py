"""Render the pages of a crawl that need it: plan from static HTML, then drive the browser.

`replay_renders` renders those pages again from the render's own WARC records (no network), so
a render can be re-extracted later exactly as it was seen.

A page on a private IP literal may reach its own origin (and nothing else private) only when the
crawl that fetched it was told to allow private networks (its own `allow_private_networks`, in
the shard's frontier.sqlite) and the record is no import: an imported archive's URLs are data,
and data never grants a fetch (`plan_renders`, `RenderJob.trust_own_origin`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crawlers.extract.crawl_io import crawl_shards, iter_crawl_records, iter_shard_records
from crawlers.extract.decode import BadPage, decode_html
from crawlers.render.archive import read_page
from crawlers.render.decide import needs_render
from crawlers.render.session import RenderConfig, RenderJob, RenderOutcome, render_pages

RENDER_MODES = ("auto", "never", "always")


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


def imported(rec: dict) -> bool:
    """A record an import wrote (`source` 'import:warc', an `import_mode`): an archive's data,
    not a fetch this project made."""
    return str(rec.get("source") or "").startswith("import") or bool(rec.get("import_mode"))


def plan_renders(crawl_dir: str | Path, mode: str = "auto") -> tuple[list[dict], list[RenderJob]]:
    """One decision row per fetched HTML page (url, rendered, render_reason) and the jobs to render.

    A job trusts its page's own private origin (`RenderJob.trust_own_origin`) only when its
    shard's crawl ran with allow_private_networks and the record is no import (`imported`)."""
    if mode not in RENDER_MODES:
        raise ValueError(f"render mode {mode!r}: choose one of {', '.join(RENDER_MODES)}")
    decisions, jobs = [], []
    seen = set()
    told: dict[str, bool] = {}  # pages file -> its crawl was told to allow private networks
    for pages_file, warc_file in crawl_shards(crawl_dir):
        if pages_file not in told:
            told[pages_file] = frontier_config(pages_file).get("allow_private_networks") is True
        for rec in iter_shard_records(pages_file, warc_file):
            decision, job = _plan_one(rec, mode, seen, told[pages_file] and not imported(rec))
            if decision is not None:
                decisions.append(decision)
            if job is not None:
                jobs.append(job)
    return decisions, jobs


def _plan_one(
    rec: dict, mode: str, seen: set[str], trust_own_origin: bool
) -> tuple[dict | None, RenderJob | None]:
    """One record's decision row and job (None, None: nothing to render or decide)."""
    if rec.get("body") is None or rec.get("status") != 200 or rec["url"] in seen:
        return None, None  # extraction rejects these with their reason; nothing to render
    seen.add(rec["url"])
    try:
        html = decode_html(rec["body"], rec.get("content_type"))
    except BadPage:
        return None, None
    if mode == "never":
        render, reason = False, "render mode never"
    elif mode == "always":
        render, reason = True, "render mode always"
    else:
        decision = needs_render(html)
        render, reason = decision.render, decision.reason
    row = {"url": rec["url"], "rendered": render, "render_reason": reason}
    if not render:
        return row, None
    consent = rec.get("training_allowed")
    consent = consent if isinstance(consent, bool) else None
    return row, RenderJob(
        rec["url"], html, training_allowed=consent, trust_own_origin=trust_own_origin
    )


def render_crawl(
    crawl_dir: str | Path,
    mode: str = "auto",
    config: RenderConfig | None = None,
    on_result: Callable[[RenderOutcome], None] | None = None,
) -> list[dict]:
    """Rows of rendered.parquet: every decision, with the final DOM of pages that were rendered."""
    decisions, jobs = plan_renders(crawl_dir, mode)
    outcomes = {o.url: o for o in render_pages(jobs, config, on_result)} if jobs else {}
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
            }
        )
    return rows


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
