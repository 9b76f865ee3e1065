"""The crawl stage's driver: seeds in, WARC + pages.parquet + skipped.parquet out, with their
manifests, returning a typed result; and the crawl's layout in the lake (crawl/ unsharded, or
crawl/shard=<k> for one host-hash shard of N). Plain Python over files: `pipelines/stages/crawl.py`
declares the stage, maps its flags and config keys onto a CrawlConfig and calls these.

A crawl into the lake's crawl/ removes the builds of the other layout and of another N first
(`clear_lake_out`): extraction reads crawl/pages.parquet and every crawl/shard=*/pages.parquet, so
a stale copy of a page (e.g. consented before a newer opt-out) would be read too."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict, cast

from common import lake as lake_mod
from crawlers.crawl.config import CrawlConfig, CrawlError
from crawlers.crawl.engine import crawl, crawl_left_in

SHARD_PREFIX = "shard="  # crawl/shard=<k>: one host-hash shard (shard=import*: an import)
OUTBOX = "outbox"  # crawl/outbox/to-<k>/: links the shards route to each other


class CrawlResult(TypedDict, total=False):
    """What `run_crawl` returns: the crawl's summary (also in pages.parquet's manifest)."""

    out_dir: str
    pages: int  # rows of pages.parquet
    skipped: int  # rows of skipped.parquet
    fetched: int  # content pages fetched (robots.txt and sitemaps not counted)
    denied: int  # URLs robots.txt denied the crawl token
    errors: int
    retries: int
    bytes: int
    statuses: dict[str, int]  # HTTP status -> pages
    robots_fetched: int
    robots_waits: int
    robots_gave_up: dict[str, Any]  # origins whose robots.txt outage outlasted robots_give_up_s
    sitemaps: int
    sitemaps_left: int  # sitemap documents left queued (--resume reads them)
    sitemap_capped: int
    sitemap_dropped: int
    elapsed_s: float
    pages_per_s: float
    crawl_cpu_s: float
    scheduler_s: float
    scheduler_us_per_page: float
    recovered: list[Any]
    resume_started_fresh: bool  # --resume found no crawl in out_dir: it started fresh
    requeued: int
    breaker_probes: int
    routed_out: int
    inbox: int
    inbox_rejected: int
    queued_left: int


def run_crawl(
    seeds: list[str],
    out_dir: Path,
    *,
    config: Any = None,
    resume: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> CrawlResult:
    """Crawl `seeds` into `out_dir` (or resume it); `config` is a CrawlConfig or dict. Writes the
    manifests of pages.parquet, skipped.parquet and warc/; returns the crawl's summary."""
    cfg = CrawlConfig.from_any(config)
    out_dir = Path(out_dir)
    summary = asyncio.run(crawl(seeds, out_dir, cfg, resume=resume, progress=progress))
    inputs = list(seeds[:50])
    conf = cfg.model_dump()
    for name, rows, extra in (
        ("pages.parquet", summary["pages"], {"summary": summary}),
        ("skipped.parquet", summary["skipped"], None),
        ("warc", summary["fetched"], {"format": "WARC/1.1, gzip member per record"}),
    ):
        lake_mod.write_manifest(out_dir / name, rows=rows, inputs=inputs, config=conf, extra=extra)
    return cast(CrawlResult, summary)


def read_seeds(path: Path) -> list[str]:
    """Seed URLs from a text file: one per line, blank lines and '#' comments ignored."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"seeds file {path} does not exist (--seeds expects one URL per line)"
        )
    # Bytes that are not UTF-8 become U+FFFD: such a line is no URL, and the crawl records it as
    # a skipped bad seed (with the others crawled) instead of ending on a UnicodeDecodeError.
    seeds = [
        ln.strip()
        for ln in path.read_bytes().decode("utf-8", errors="replace").splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not seeds:
        raise ValueError(f"seeds file {path} lists no URLs (one per line; '#' starts a comment)")
    return seeds


def check_seeds(seeds: list[str], where: str) -> None:
    """Refuse seeds none of which can be crawled, by the crawl's own test of a seed
    (`canonicalize`: http(s) and a host), before anything is written: the crawl would refuse
    them too, but only after creating its frontier and WARC directory. One usable seed is
    enough (the crawl records the others as skipped). `where` names the seeds' source in the
    error (`--seeds FILE`, `config.seeds`)."""
    from crawlers.crawl.canon import UrlError, canonicalize

    problem = None
    for seed in seeds:
        try:
            canonicalize(seed)
            return
        except UrlError as exc:
            problem = problem or exc
    raise CrawlError(f"{where}: no usable seed URL ({problem}); give http(s) URLs with a host")


def lake_out(base: Path, k: int, n: int) -> Path:
    """The lake's crawl directory of shard k of n: crawl/, or crawl/shard=<k> when n > 1."""
    return base if n == 1 else base / f"{SHARD_PREFIX}{k}"


def check_start(out: Path, resume: bool) -> None:
    """The crawl's own refusals of `out` (a crawl there without --resume; --resume where a
    crawl's outputs are but no frontier), raised before `clear_lake_out` removes anything.
    --resume finding nothing of a crawl (killed before its frontier was made) starts fresh."""
    held = (out / "frontier.sqlite").exists()
    if held and not resume:
        raise CrawlError(
            f"{out} already holds a crawl (frontier.sqlite); pass --resume to continue it or "
            "pick a new --out"
        )
    if resume and not held and (left := crawl_left_in(out)):
        raise CrawlError(
            f"--resume: {out / 'frontier.sqlite'} does not exist but {out} holds "
            f"{', '.join(left)} of a crawl; move them away, or pick a new --out"
        )


def clear_lake_out(out: Path, n: int, fresh: bool) -> None:
    """Clear the lake's crawl/ of the builds whose pages would mix with those of `out`
    (`lake_out`; extraction reads crawl/pages.parquet and every crawl/shard=*/pages.parquet):
    an unsharded run (n == 1, out = crawl/) removes the shard=<k> builds and their inboxes
    (outbox/to-<k>, but to-0: its own, where the render hands on links scripts revealed); a
    shard run the unsharded build's outputs and state (pages, skipped, warc/, frontier,
    checkpoints/, recrawl table, manifests) and the shard builds of another shard count. Imports
    (shard=import*) are datasets of their own and stay. `fresh`: `out` itself is removed too
    (a raw_pages partition re-materialised without resume is a fresh crawl)."""
    base = out if n == 1 else out.parent
    for entry in sorted(base.iterdir()) if base.is_dir() else ():
        name = entry.name
        shard = name.startswith(SHARD_PREFIX)
        if shard and not name[len(SHARD_PREFIX) :].isdigit():
            continue  # an import (shard=import, shard=import-<k>), or not a crawl shard
        if n == 1:
            if shard:
                _remove(entry)
            elif name == OUTBOX:  # the shard builds' inboxes; to-0 is this crawl's own (the
                for box in sorted(entry.iterdir()):  # render hands links on there)
                    if box.name != "to-0":
                        _remove(box)
        elif not shard:
            if name != OUTBOX:  # the shards' shared outbox stays
                _remove(entry)  # the unsharded build's
        elif entry != out and _other_count(entry, n):
            _remove(entry)
    if fresh and out.exists():
        _remove(out)


def _other_count(shard_dir: Path, n: int) -> bool:
    """Whether `shard_dir` (shard=<j>) belongs to a crawl of another shard count than n: j is n
    or more, or the N its frontier (else its pages.parquet manifest) records is not n. A shard
    that records nothing (or cannot be read now) stays."""
    if int(shard_dir.name[len(SHARD_PREFIX) :]) >= n:
        return True
    recorded = _recorded_shards(shard_dir)
    return recorded is not None and recorded != n


def _recorded_shards(shard_dir: Path) -> int | None:
    """The shard count N of the crawl in `shard_dir`, as its frontier.sqlite's config or its
    pages.parquet manifest's records it; None when neither says."""
    import sqlite3

    try:
        uri = (shard_dir / "frontier.sqlite").resolve().as_uri() + "?mode=ro"  # change nothing
        db = sqlite3.connect(uri, uri=True, timeout=1)
        try:
            row = db.execute("SELECT value FROM meta WHERE key='config'").fetchone()
        finally:
            db.close()
        return int(json.loads(row[0])["shards"])
    except (sqlite3.Error, ValueError, KeyError, TypeError):
        pass
    try:
        return int(lake_mod.read_manifest(shard_dir / "pages.parquet")["config"]["shards"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)  # partitions may clear the same path at once
    else:
        path.unlink(missing_ok=True)
