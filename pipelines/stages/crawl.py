"""The crawl stage: seeds -> WARC + pages.parquet, robots-aware, polite; `refinery crawl` and
the `raw_pages` asset (partitioned into host-hash shards; no host is split across shards).

Into the lake, a crawl is unsharded (crawl/) or one shard of N (crawl/shard=<k>); extraction
reads all of crawl/pages.parquet and crawl/shard=*/pages.parquet, so a run removes the builds of
the other layout and of another N first (`_clear_lake_out`), after its seeds and config are
checked, so that a stale copy of a page (e.g. consented before a newer opt-out) is not read."""

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
from pipelines.stage import Check, Lake, Params, Stage, Summary, flag_of, param

CRAWL_SHARDS = 4
SHARD_PREFIX = "shard="  # crawl/shard=<k>: one host-hash shard (shard=import*: an import)
OUTBOX = "outbox"  # crawl/outbox/to-<k>/: links the shards route to each other
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
        _check_seeds(seeds, p)
    if p.out is not None:
        out = Path(p.out)
    elif lake.partition is not None:
        out = lake.dir("crawl") / f"{SHARD_PREFIX}{lake.partition}"
    else:
        out = _lake_out(lake.dir("crawl"), cfg.shard, cfg.shards)
    resume = p.resume and (not lake.partition or (out / "frontier.sqlite").exists())
    if p.out is None:
        if lake.partition is None:  # a CLI run: refuse now what the crawl would refuse later
            _check_start(out, resume)
        _clear_lake_out(out, cfg.shards, fresh=lake.partition is not None and not p.resume)
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


def _check_seeds(seeds: list[str], p: CrawlParams) -> None:
    """Refuse seeds none of which can be crawled, by the crawl's own test of a seed
    (`canonicalize`: http(s) and a host), before anything is written: the crawl would refuse
    them too, but only after creating its frontier and WARC directory. One usable seed is
    enough (the crawl records the others as skipped)."""
    from crawlers.crawl.canon import UrlError, canonicalize
    from crawlers.crawl.config import CrawlError

    problem = None
    for seed in seeds:
        try:
            canonicalize(seed)
            return
        except UrlError as exc:
            problem = problem or exc
    where = f"--seeds {p.seeds_file}" if p.seeds_file else "config.seeds"
    raise CrawlError(f"{where}: no usable seed URL ({problem}); give http(s) URLs with a host")


def _lake_out(base: Path, k: int, n: int) -> Path:
    """The lake's crawl directory of shard k of n: crawl/, or crawl/shard=<k> when n > 1."""
    return base if n == 1 else base / f"{SHARD_PREFIX}{k}"


def _check_start(out: Path, resume: bool) -> None:
    """The crawl's own refusals of `out` (a crawl there without --resume, --resume with none),
    raised before `_clear_lake_out` removes anything."""
    from crawlers.crawl.config import CrawlError

    held = (out / "frontier.sqlite").exists()
    if held and not resume:
        raise CrawlError(
            f"{out} already holds a crawl (frontier.sqlite); pass --resume to continue it or "
            "pick a new --out"
        )
    if resume and not held:
        raise CrawlError(
            f"--resume: {out / 'frontier.sqlite'} does not exist; start the crawl without --resume"
        )


def _clear_lake_out(out: Path, n: int, fresh: bool) -> None:
    """Clear the lake's crawl/ of the builds whose pages would mix with those of `out`
    (`_lake_out`; extraction reads crawl/pages.parquet and every crawl/shard=*/pages.parquet):
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
