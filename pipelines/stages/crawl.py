"""The crawl stage: seeds -> WARC + pages.parquet, robots-aware, polite; `refinery crawl` and
the `raw_pages` asset (partitioned into host-hash shards; no host is split across shards).

Into the lake, a crawl is unsharded (crawl/) or one shard of N (crawl/shard=<k>); extraction
reads all of crawl/pages.parquet and crawl/shard=*/pages.parquet, so a run removes the builds of
the other layout and of another N first (`crawlers.crawl.run.clear_lake_out`), after its seeds
and config are checked, so that a stale copy of a page (e.g. consented before a newer opt-out) is
not read. The driver (`run_crawl`) and the lake layout live in `crawlers/crawl/run.py`; this module
keeps the parameters, their mapping onto a CrawlConfig (and the flag or config key an error names),
the summary and the Stage."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crawlers import checks as crawl_checks
from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.run import (
    SHARD_PREFIX,
    CrawlResult,
    check_seeds,
    check_start,
    clear_lake_out,
    lake_out,
    read_seeds,
    run_crawl,
)
from pipelines.stage import Check, Lake, Params, Stage, Summary, flag_of, param

CRAWL_SHARDS = 4
SAMPLE_WEB_DELAY_S = 0.05  # the bundled sample web is served on loopback for this run only


class CrawlParams(Params):
    seeds_file: Path | None = param(
        None, flag="--seeds", help="File with one seed URL per line.", asset=False
    )
    seeds: list[str] = param(
        [], cli=False, help="Seed URLs; empty: the bundled sample web, served for this crawl."
    )
    out: Path | None = param(
        None,
        output=True,
        help="Output directory (warc/, pages.parquet); default: the lake's crawl/, or "
        "crawl/shard=<k> for --shard K/N with N > 1. A crawl into the lake's crawl removes the "
        "builds its pages would mix with: an unsharded one the shard=<k> crawls, a shard the "
        "unsharded crawl and the shards of another N (imports, shard=import*, stay).",
    )
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
    concurrency: int = param(
        64, min=1, max=100_000, help="Requests in flight at once (all servers)."
    )
    per_host_connections: int = param(
        1, min=1, max=1000, help="Requests in flight at once to one server."
    )
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
    config: Path | None = param(
        None, file=True, help="YAML file with more CrawlConfig fields.", asset=False
    )
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
            if not 0 <= k < n:
                raise ValueError(
                    f"--shard {p.shard!r}: K/N needs 0 <= K < N (shard K of N shards), e.g. 0/4"
                )
            config.update(shard=k, shards=n)
    return config


def _validated(config: dict[str, Any], p: CrawlParams, lake: Lake) -> CrawlConfig:
    """`config` as a CrawlConfig; refused in one line naming where each bad value came from: its
    flag or --config file key (CLI), its run config key (Dagster: `config.max_pages`)."""
    from pydantic import ValidationError

    from common.errors import validation_problems

    try:
        return CrawlConfig.model_validate(config)
    except ValidationError as exc:
        yaml_keys = set(_yaml(p.config)) if lake.interactive else set()
        # CrawlConfig's checks across fields raise once, at the root: name the fields compared
        root = next((e["msg"] for e in exc.errors() if not _loc(e)), "")
        compared = ["shard", "shards"] if "shard=" in root else ["agent", "training_agent"]

        def where(loc: list[str]) -> str:
            fields = [loc[0]] if loc else compared
            rest = "".join(f".{x}" for x in loc[1:])
            return _source(fields, p, yaml_keys, lake.interactive) + rest

        raise ValueError(validation_problems(exc, where, model=CrawlConfig)) from None


def _loc(error: dict[str, Any]) -> list[str]:
    return [str(x) for x in error["loc"] if x != "function-after"]


def _source(fields: list[str], p: CrawlParams, yaml_keys: set[str], cli: bool) -> str:
    """Where the values of CrawlConfig `fields` came from, as the user wrote them: the flags
    (or run config keys) given, the --config file's keys, `extra`'s keys; all of the fields'
    flags when none was set (a default compared with another default)."""
    flags: list[str] = []
    from_yaml: list[str] = []
    from_extra: list[str] = []
    for name in fields:
        param = "shard" if name == "shards" else name  # --shard K/N sets both
        if name in p.extra:
            from_extra.append(f"extra.{name}")
        elif param in p.model_fields_set or (not cli and param in CrawlParams.model_fields):
            flags.append(flag_of(CRAWL, param) if cli else name)
        elif name in yaml_keys:
            from_yaml.append(name)
    parts = [*dict.fromkeys(flags), *from_extra]
    if not cli:
        return "/".join(f"config.{part}" for part in parts or fields)
    if from_yaml:
        parts.append(f"--config {p.config}: {'/'.join(from_yaml)}")
    if not parts:  # defaults only
        parts = list(dict.fromkeys(flag_of(CRAWL, "shard" if f == "shards" else f) for f in fields))
    return " and ".join(parts)


def run(p: CrawlParams, lake: Lake) -> CrawlSummary:
    """Crawl from seeds, obeying robots.txt for two tokens, politely, into WARC + pages.parquet."""

    config = crawl_config(p, lake)
    seeds = read_seeds(p.seeds_file) if p.seeds_file else list(p.seeds)
    if not seeds and lake.interactive:
        raise ValueError("--seeds: required (a file with one seed URL per line)")
    if not seeds:  # the sample web lives on loopback, so this crawl must lift the SSRF guard
        config["allow_private_networks"] = True
    if config.get("delay") is None:
        config["delay"] = 1.0 if seeds else SAMPLE_WEB_DELAY_S
    # Seeds and config are read and checked before anything in the lake is removed or written:
    # a typo leaves the crawl that is there (or the empty lake) as it was.
    cfg = _validated(config, p, lake)
    if seeds and not p.resume:
        check_seeds(seeds, f"--seeds {p.seeds_file}" if p.seeds_file else "config.seeds")
    if p.out is not None:
        out = Path(p.out)
    elif lake.partition is not None:
        out = lake.dir("crawl") / f"{SHARD_PREFIX}{lake.partition}"
    else:
        out = lake_out(lake.dir("crawl"), cfg.shard, cfg.shards)
    resume = p.resume and (not lake.partition or (out / "frontier.sqlite").exists())
    if p.out is None:
        if lake.partition is None:  # a CLI run: refuse now what the crawl would refuse later
            check_start(out, resume)
        clear_lake_out(out, cfg.shards, fresh=lake.partition is not None and not p.resume)
    if seeds:
        summary = _crawl(seeds, out, cfg, resume, lake, p.quiet)
    else:
        from sampleweb import build_web, serve

        with serve(build_web(0)) as web:
            summary = _crawl(web.seeds(), out, cfg, resume, lake, True)
    lake.log(f"crawl {out}: {summary['pages']} pages, {summary['fetched']} fetched")
    return CrawlSummary(
        outputs={"raw_pages": str(out)},
        details=summary,
        **{k: summary[k] for k in CrawlSummary.model_fields if k in summary},
    )


def _crawl(seeds, out: Path, cfg, resume: bool, lake: Lake, quiet: bool) -> CrawlResult:
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
        "partition run with resume: true picks up what the others sent it. A partition run "
        "removes an unsharded crawl in crawl/ (`refinery crawl`'s default: pages.parquet, "
        "warc/, its state) and shards of another shard count, whose pages documents would "
        "read too; imports (crawl/shard=import*) stay."
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
