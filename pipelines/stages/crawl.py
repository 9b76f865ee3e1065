"""The crawl stage: seeds -> WARC + pages.parquet, robots-aware, polite; `refinery crawl` and
the `raw_pages` asset (partitioned into host-hash shards; no host is split across shards)."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import lake as lake_mod
from crawlers import checks as crawl_checks
from crawlers.crawl.config import CrawlConfig
from pipelines.stage import Check, Lake, Params, Stage, Summary, param

CRAWL_SHARDS = 4
SAMPLE_WEB_DELAY_S = 0.05  # the bundled sample web is served on loopback for this run only


class CrawlParams(Params):
    seeds_file: Path | None = param(
        None, flag="--seeds", help="File with one seed URL per line.", asset=False
    )
    seeds: list[str] = param(
        [], cli=False, help="Seed URLs; empty: the bundled sample web, served for this crawl."
    )
    out: Path | None = param(None, output=True, help="Output directory (warc/, pages.parquet).")
    agent: str = param("RefineryBot", help="Crawl product token.")
    training_agent: str = param("RefineryBot-Extended", help="Training product token.")
    max_pages: int | None = param(None, help="Content pages (robots/sitemaps not counted).")
    delay: float | None = param(
        1.0,
        help="Min seconds between requests to one server (Dagster: empty means 1 s for seeds, "
        "0.05 s for the sample web).",
    )
    allow_private_networks: bool = param(False, help="Allow loopback/private addresses.")
    resume: bool = param(False, help="Continue a crawl in --out.")
    concurrency: int = param(64, help="Requests in flight at once (all servers).")
    per_host_connections: int = param(1, min=1, help="Requests in flight at once to one server.")
    politeness_key: str = param(
        "ip",
        help="What one politeness slot covers: ip (resolved address), domain (registered "
        "domain) or host (host:port).",
    )
    shard: str = param("0/1", help="K/N: only hosts with hash(host) % N == K.", asset=False)
    shard_root: Path | None = param(
        None,
        help="Directory shared by all shards: links to other shards' hosts go to "
        "outbox/to-<j>/ there (default: the parent of an --out named shard=<k>).",
        asset=False,
    )
    blocklist: Path | None = param(
        None,
        help="Directory of URL blocklists in the UT1 layout (<category>/domains, "
        "<category>/urls): listed URLs are never fetched, recorded as skipped with the category.",
    )
    config: Path | None = param(None, help="YAML file with more CrawlConfig fields.", asset=False)
    extra: dict[str, Any] = param({}, cli=False, help="Any other CrawlConfig field.")
    quiet: bool = param(False, help="No progress bar.", asset=False)


# Params fields that are CrawlConfig fields, derived: a crawl parameter is one field here named as
# CrawlConfig names it (`shard` is spelled K/N here and set apart). A flag overrides the --config
# YAML only when given on the command line; otherwise the YAML value stands, and CrawlConfig's
# default applies when neither sets it.
CONFIG_FIELDS = tuple(
    f for f in CrawlParams.model_fields if f in CrawlConfig.model_fields and f != "shard"
)


class CrawlSummary(Summary):
    pages: int
    fetched: int
    denied: int
    skipped: int
    errors: int
    bytes: int
    pages_per_s: float | None = None
    statuses: dict[str, int] = {}
    details: dict[str, Any] = {}

    def metadata(self) -> dict[str, Any]:
        names = {"fetched": "pages_fetched", "denied": "robots_denials"}
        figures = self.model_dump(exclude={"outputs", "details"})
        return {names.get(k, k): v for k, v in figures.items() if v is not None}

    def text(self) -> str:
        return json.dumps(self.details, indent=2, default=str)


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


def _yaml(path: Path | None) -> dict[str, Any]:

    from common import yamlio

    if path is None:
        return {}
    if not path.exists():
        raise FileNotFoundError(f"--config {path}: file does not exist")
    try:
        loaded = yamlio.load_file(path)
    except yamlio.YamlFileError as exc:
        raise ValueError(f"--config {exc}") from None
    if loaded is not None and not isinstance(loaded, dict):
        raise ValueError(f"--config {path}: expected a mapping of CrawlConfig fields")
    return dict(loaded or {})


def crawl_config(p: CrawlParams, lake: Lake) -> dict[str, Any]:
    """Precedence: a flag given explicitly, then the YAML file, then the flag's default."""
    values = {f: getattr(p, f) for f in CONFIG_FIELDS}
    for name in ("shard_root", "blocklist"):
        if values[name] is not None:
            values[name] = str(values[name])
    explicit = {f: values[f] for f in CONFIG_FIELDS if f in p.model_fields_set}
    defaults = {f: values[f] for f in CONFIG_FIELDS if f not in p.model_fields_set}
    config = {**defaults, **_yaml(p.config), **explicit, **p.extra}
    if lake.partition is not None:
        config.update(shard=int(lake.partition), shards=CRAWL_SHARDS)
    else:
        try:
            k, n = (int(x) for x in p.shard.split("/"))
        except ValueError as exc:
            raise ValueError(f"--shard {p.shard!r}: expected K/N, e.g. 0/4") from exc
        if "shard" in p.model_fields_set or ("shard" not in config and "shards" not in config):
            config.update(shard=k, shards=n)
    return config


def _validated(config: dict[str, Any], p: CrawlParams):
    from pydantic import ValidationError

    from crawlers.crawl import CrawlConfig

    try:
        return CrawlConfig.model_validate(config)
    except ValidationError as exc:
        where = f"--config {p.config} / flags" if p.config else "flags"
        from common.errors import validation_problems

        raise ValueError(f"{where}: {validation_problems(exc, model=CrawlConfig)}") from None


def run(p: CrawlParams, lake: Lake) -> CrawlSummary:
    """Crawl from seeds, obeying robots.txt for two tokens, politely, into WARC + pages.parquet."""

    config = crawl_config(p, lake)
    if p.out is not None:
        out = Path(p.out)
    elif lake.partition is not None:
        out = lake.dir("crawl") / f"shard={lake.partition}"
    else:
        out = lake.dir("crawl")
    resume = p.resume and (not lake.partition or (out / "frontier.sqlite").exists())
    if lake.partition is not None and out.exists() and not p.resume:
        shutil.rmtree(out)  # a re-materialisation is a fresh crawl unless resume is asked for
    seeds = read_seeds(p.seeds_file) if p.seeds_file else list(p.seeds)
    if seeds:
        if config.get("delay") is None:
            config["delay"] = 1.0
        cfg = _validated(config, p)
        summary = _crawl(seeds, out, cfg, resume, lake, p.quiet)
    elif lake.interactive:
        raise ValueError("--seeds: required (a file with one seed URL per line)")
    else:
        from sampleweb import build_web, serve

        # The sample web lives on loopback, so this crawl must lift the SSRF guard.
        config["allow_private_networks"] = True
        if config.get("delay") is None:
            config["delay"] = SAMPLE_WEB_DELAY_S
        cfg = _validated(config, p)
        with serve(build_web(0)) as web:
            summary = _crawl(web.seeds(), out, cfg, resume, lake, True)
    lake.log(f"crawl {out}: {summary['pages']} pages, {summary['fetched']} fetched")
    return CrawlSummary(
        outputs={"raw_pages": str(out)},
        details=summary,
        **{k: summary[k] for k in CrawlSummary.model_fields if k in summary},
    )


def _crawl(seeds, out: Path, cfg, resume: bool, lake: Lake, quiet: bool) -> dict[str, Any]:
    if not lake.interactive or quiet:
        return run_crawl(seeds, out, config=cfg, resume=resume)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("[bold]crawl"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task("crawl", total=cfg.max_pages, info="")

        def progress(ev: dict) -> None:
            info = f"{ev['status']} {ev['url'][-60:]} queued={ev['queued']}"
            bar.update(task, completed=ev["fetched"], info=info)

        return run_crawl(seeds, out, config=cfg, resume=resume, progress=progress)


def run_crawl(
    seeds: list[str],
    out_dir: Path,
    *,
    config: Any = None,
    resume: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Crawl `seeds` into `out_dir` (or resume it); `config` is a CrawlConfig or dict. Returns the summary."""
    from crawlers.crawl import CrawlConfig, crawl

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
    return summary


def _check(check: Callable[[Path], Any]):
    def fn(summary: Summary, lake: Lake):
        return check(Path(summary.outputs["raw_pages"]))

    return fn


CRAWL = Stage(
    name="crawl",
    params=CrawlParams,
    run=run,
    description=run.__doc__.splitlines()[0],
    outputs=("raw_pages",),
    group="crawl",
    partitions=[str(k) for k in range(CRAWL_SHARDS)],
    asset_defaults={"delay": None},
    output_descriptions={
        "raw_pages": "WARC files and pages.parquet of one host-hash shard of the crawl "
        "(lake crawl/shard=<k>/). Links to other shards' hosts go to crawl/outbox/to-<k>/; a "
        "partition run with resume: true picks up what the others sent it."
    },
    checks=(
        Check(
            "no_disallowed_fetch",
            "raw_pages",
            _check(crawl_checks.crawl_robots_respected),
            "0 pages fetched that robots.txt disallows for the crawl token.",
        ),
        Check(
            "robots_decisions_recorded",
            "raw_pages",
            _check(crawl_checks.crawl_robots_decisions_recorded),
            "Every page has both robots decisions (crawl token and training token).",
        ),
    ),
)
