"""Stage entry points: `run_render` (headless rendering) and `run_extract` (Beam extraction)."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from common import lake
from pipelines.stage import Check, Lake, Params, Stage, Summary, param

RENDERED_FILE = "rendered.parquet"
OUTPUT_NAMES = ("documents", "image_refs", "tables", "interleaved", "rejects")


def _rendered_schema():
    import pyarrow as pa

    blocked = pa.list_(pa.struct([("url", pa.string()), ("reason", pa.string())]))
    subresources = pa.list_(
        pa.struct(
            [
                ("url", pa.string()),
                ("status", pa.int32()),
                ("resource_type", pa.string()),
                ("robots_training", pa.string()),
            ]
        )
    )
    return pa.schema(
        [
            ("url", pa.string()),
            ("rendered", pa.bool_()),
            ("render_reason", pa.string()),
            ("html", pa.string()),
            ("error", pa.string()),
            ("render_ms", pa.int32()),
            ("blocked_requests", blocked),
            ("media_blocked", pa.int32()),
            ("interactions", pa.int32()),
            ("subresources", subresources),
            ("warc_file", pa.string()),
            ("warc_offset", pa.int64()),
            ("warc_length", pa.int64()),
        ]
    )


def _crawl_settings(crawl_dir: str | Path) -> dict[str, Any]:
    """The crawl's configuration (its frontier's `config`), read-only; {} when there is none."""
    import json
    import sqlite3

    from crawlers.extract.warc import find_pages_files

    for pages in find_pages_files(crawl_dir)[:1]:
        db = pages.parent / "frontier.sqlite"
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
    return {}


def run_render(
    crawl_dir: str | Path,
    out_dir: str | Path,
    mode: str = "auto",
    *,
    pages_in_flight: int = 4,
    page_timeout_s: float = 20.0,
    chromium: str | None = None,
    block_media: bool = True,
    robots_token: str | None = None,
    training_token: str | None = None,
    user_agent: str | None = None,
    allow_private_networks: bool = False,
    delay: float | None = None,
    sandbox: str = "auto",
    archive: bool = True,
    memory_budget_mib: float | None = None,
) -> dict[str, Any]:
    """Render the crawl's pages that need it; write out_dir/rendered.parquet and return a summary.

    Sub-requests go through the crawl's downloader (robots for both tokens, SSRF guard,
    politeness); with `archive`, every response a page used is written to
    out_dir/render-*.warc.gz and located by the warc_* columns. Tokens, User-Agent and delay
    left as None are the crawl's own (from its frontier.sqlite), else the crawl defaults.
    Private networks are never inherited: pass `allow_private_networks` to lift the guard.
    With `memory_budget_mib`, at most `pages_in_flight` pages are in flight, as many as fit in
    the budget (`crawlers.render.budget`).
    """
    import pyarrow as pa

    from crawlers.render import RenderConfig
    from crawlers.render.crawl import render_crawl

    budget = None
    if memory_budget_mib is not None:
        import playwright.async_api  # noqa: F401 - the render imports it: resident before the fit

        from crawlers.render.budget import pages_in_flight_for

        budget = pages_in_flight_for(memory_budget_mib, pages_in_flight)
        pages_in_flight = budget.units

    out_dir = Path(out_dir)
    crawl_cfg = _crawl_settings(crawl_dir)
    robots_token = robots_token or crawl_cfg.get("agent") or "RefineryBot"
    training_token = training_token or crawl_cfg.get("training_agent") or "RefineryBot-Extended"
    if user_agent is None and robots_token == crawl_cfg.get("agent"):
        user_agent = crawl_cfg.get("user_agent")  # the template, {agent} filled in later
    if delay is None:
        delay = float(crawl_cfg.get("delay", 1.0))
    config = RenderConfig(
        chromium=chromium,
        pages_in_flight=pages_in_flight,
        page_timeout_s=page_timeout_s,
        block_media=block_media,
        robots_token=robots_token,
        training_token=training_token,
        user_agent=user_agent,
        allow_private_networks=allow_private_networks,
        delay=delay,
        sandbox=sandbox,
        archive_dir=out_dir if archive else None,
    )
    start = time.monotonic()
    rows = render_crawl(crawl_dir, mode, config)
    elapsed = time.monotonic() - start
    path = out_dir / RENDERED_FILE
    settings = {
        "mode": mode,
        "pages_in_flight": pages_in_flight,
        "page_timeout_s": page_timeout_s,
        "block_media": block_media,
        "robots_token": robots_token,
        "training_token": training_token,
        "user_agent": config.crawl_config().user_agent_header(),
        "allow_private_networks": allow_private_networks,
        "delay": delay,
        "sandbox": sandbox,
        "archive": archive,
    }
    if budget is not None:
        settings["memory_budget_mib"] = memory_budget_mib
    lake.write_parquet(
        pa.Table.from_pylist(rows, schema=_rendered_schema()),
        path,
        inputs=[str(crawl_dir)],
        config=settings,
    )
    rendered = [r for r in rows if r["rendered"]]
    return {
        "path": str(path),
        "candidates": len(rows),
        "rendered": len(rendered),
        "render_errors": sum(1 for r in rendered if r["error"]),
        "blocked_requests": sum(len(r["blocked_requests"]) for r in rendered),
        "subresources": sum(len(r["subresources"]) for r in rendered),
        "seconds": round(elapsed, 2),
        "pages_per_s": round(len(rendered) / elapsed, 3) if rendered and elapsed > 0 else 0.0,
        "pages_in_flight": pages_in_flight,
        "memory_budget": budget.as_dict() if budget else None,
    }


def _merge_parts(
    parts_dir: Path, name: str, out_path: Path, inputs: list[str], config: dict
) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from common.schemas import OUTPUTS, SORT_KEYS

    files = sorted((parts_dir / name).glob("part*.parquet"))
    tables = [pq.read_table(f, schema=OUTPUTS[name]) for f in files]
    table = pa.concat_tables(tables) if tables else OUTPUTS[name].empty_table()
    table = table.sort_by(SORT_KEYS[name])  # deterministic regardless of worker scheduling
    lake.write_parquet(table, out_path, inputs=inputs, config=config)
    return table.num_rows


def run_extract(
    crawl_dir: str | Path,
    out_dir: str | Path,
    render_mode: str = "auto",
    *,
    rendered_dir: str | Path | None = None,
    pipeline_args: list[str] | None = None,
    favor: str = "balanced",
    teacher: dict | None = None,
    **render_kwargs: Any,
) -> dict[str, Any]:
    """Extract documents from a crawl with Beam; render first (into out_dir/rendered) unless given."""
    import pyarrow.parquet as pq

    from crawlers.extract.crawl_io import count_pages, crawl_shards

    crawl_dir, out_dir = Path(crawl_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    render_summary = None
    rendered_path = None
    if rendered_dir is not None:
        rendered_path = Path(rendered_dir) / RENDERED_FILE
        if not rendered_path.exists():
            raise FileNotFoundError(
                f"{rendered_path}: no render output; run the render stage first"
            )
    elif render_mode != "never":
        render_summary = run_render(crawl_dir, out_dir / "rendered", render_mode, **render_kwargs)
        rendered_path = Path(render_summary["path"])
    pages_in = count_pages(crawl_dir)
    shards = crawl_shards(crawl_dir)
    parts = out_dir / "_parts"
    shutil.rmtree(parts, ignore_errors=True)
    start = time.monotonic()
    from pipelines.beam.extract import run_pipeline

    config = {"favor": favor}
    run_pipeline(
        shards,
        parts,
        rendered_path=str(rendered_path) if rendered_path else None,
        config=config,
        teacher=teacher,
        pipeline_args=pipeline_args,
    )
    elapsed = time.monotonic() - start
    inputs = [str(crawl_dir)] + ([str(rendered_path)] if rendered_path else [])
    settings = {"render_mode": render_mode, "favor": favor, "llm": bool(teacher)}
    counts = {
        name: _merge_parts(parts, name, out_dir / f"{name}.parquet", inputs, settings)
        for name in OUTPUT_NAMES
    }
    shutil.rmtree(parts, ignore_errors=True)
    if counts["documents"] + counts["rejects"] != pages_in:
        raise RuntimeError(
            f"extraction lost rows: {pages_in} pages in, {counts['documents']} documents + "
            f"{counts['rejects']} rejects out; see {out_dir}"
        )
    docs = pq.read_table(out_dir / "documents.parquet", columns=["rendered"]).column("rendered")
    rejects = pq.read_table(out_dir / "rejects.parquet", columns=["reason"]).column("reason")
    n_rendered = sum(1 for v in docs.to_pylist() if v)
    return {
        "pages": pages_in,
        **counts,
        "rendered": n_rendered,
        "rendered_fraction": round(n_rendered / counts["documents"], 4)
        if counts["documents"]
        else 0.0,
        "rejects_by_reason": dict(sorted(Counter(rejects.to_pylist()).items())),
        "seconds": round(elapsed, 2),
        "docs_per_s": round(counts["documents"] / elapsed, 2) if elapsed > 0 else 0.0,
        "render": render_summary,
        "out_dir": str(out_dir),
    }


# --- declarations: `refinery render`, `refinery extract`, assets rendered_pages and documents ---

MODES = ("auto", "never", "always")


class RenderOptions(Params):
    """What the browser does and which policies its downloader obeys (shared by render and
    extract). Dagster takes executable, pages in flight and timeout from the `browser` resource."""

    pages_in_flight: int = param(
        4, min=1, resource="browser.pages_in_flight", help="Pages rendered at once."
    )
    page_timeout: float = param(
        20.0, resource="browser.page_timeout_s", help="Seconds per page before giving up."
    )
    chromium: str | None = param(
        None,
        resource="browser.executable_or_none",
        help="Chromium executable (default: found automatically).",
    )
    agent: str | None = param(
        None,
        help="Crawl product token: User-Agent and robots.txt decisions (default: the crawl's).",
    )
    training_agent: str | None = param(
        None, help="Training product token, recorded per request (default: the crawl's)."
    )
    allow_private_networks: bool = param(
        False,
        help="Let pages' sub-requests reach loopback/private addresses (a page on a private "
        "IP literal may always reach its own origin).",
    )
    delay: float | None = param(
        None, min=0, help="Minimum seconds between requests to one server (default: the crawl's)."
    )
    sandbox: str = param("auto", help="Chromium sandbox: auto|on|off (auto: where possible).")
    archive: bool = param(
        True,
        flag="--archive/--no-archive",
        help="Write every sub-resource the pages used as WARC records (OUT/render-*.warc.gz).",
    )
    block_media: bool = param(
        True, flag="--block-media/--no-block-media", help="Do not download images, audio, video."
    )
    memory_budget_mib: float | None = param(
        None,
        min=1,
        help="Peak memory (MiB, this process and Chromium) the render stays under: pages in "
        "flight are lowered to what fits (at most --pages-in-flight); too small for one page "
        "is an error naming the smallest budget.",
    )

    def render_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `run_render` (one mapping of options to RenderConfig)."""
        return {
            "pages_in_flight": self.pages_in_flight,
            "page_timeout_s": self.page_timeout,
            "chromium": self.chromium,
            "block_media": self.block_media,
            "robots_token": self.agent,
            "training_token": self.training_agent,
            "allow_private_networks": self.allow_private_networks,
            "delay": self.delay,
            "sandbox": self.sandbox,
            "archive": self.archive,
            "memory_budget_mib": self.memory_budget_mib,
        }


class RenderParams(RenderOptions):
    crawl: Path | None = param(
        None, input="raw_pages", help="Crawl output directory (pages.parquet + warc/, or shard=*/)."
    )
    out: Path | None = param(None, output=True, help="Output directory (rendered.parquet).")
    mode: str = param("auto", help=f"Which pages to render: {'|'.join(MODES)}.")


class RenderSummary(Summary):
    path: str
    candidates: int
    rendered: int
    rendered_fraction: float
    render_errors: int
    blocked_requests: int
    subresources: int
    seconds: float
    pages_per_s: float
    pages_in_flight: int | None = None  # the pool size used (lowered to fit a memory budget)
    memory_budget: dict[str, Any] | None = None  # how the budget was spent (common.budget.Fit)

    def text(self) -> str:
        return json.dumps(self.model_dump(exclude={"outputs"}), indent=2)


def _mode(mode: str, flag: str) -> str:
    if mode not in MODES:
        raise ValueError(f"{flag} {mode!r}: choose {'|'.join(MODES)}")
    return mode


def _crawl_dir(path: Path | None, lake_: Lake) -> Path:
    crawl = Path(path) if path else lake_.root / lake.STAGE_DIRS["crawl"]
    if not crawl.exists():
        raise FileNotFoundError(f"--crawl {crawl}: no crawl output (run `refinery crawl` first)")
    return crawl


def render(p: RenderParams, lake_: Lake) -> RenderSummary:
    """Render only (the `rendered_pages` stage); extraction can reuse it with --rendered."""
    out = Path(p.out) if p.out else lake_.dir("rendered")
    s = run_render(_crawl_dir(p.crawl, lake_), out, _mode(p.mode, "--mode"), **p.render_kwargs())
    frac = s["rendered"] / s["candidates"] if s["candidates"] else 0.0
    return RenderSummary(
        outputs={"rendered_pages": str(out)}, rendered_fraction=round(frac, 4), **s
    )


class ExtractParams(RenderOptions):
    crawl: Path | None = param(
        None, input="raw_pages", help="Crawl output directory (pages.parquet + warc/, or shard=*/)."
    )
    out: Path | None = param(
        None, output=True, help="Output directory (documents.parquet, rejects.parquet, ...)."
    )
    render: str = param("auto", help=f"Which pages to render in Chromium: {'|'.join(MODES)}.")
    rendered: Path | None = param(
        None,
        input="rendered_pages",
        help="Reuse a render output directory instead of rendering.",
    )
    runner: str = param(
        "DirectRunner", resource="beam.runner", help="Beam runner; unknown options go to Beam."
    )
    beam_args: list[str] = param([], extra_args=True, resource="beam.options")
    favor: str = param("balanced", help="trafilatura mode: balanced|precision|recall.")
    llm_url: str = param(
        "",
        envvar="REFINERY_TEACHER_URL",
        resource="teacher.base_url",
        help="OpenAI-compatible base URL; enables LLM extraction.",
    )
    llm_model: str = param("", envvar="REFINERY_TEACHER_MODEL", resource="teacher.model")
    llm_hosts: str = param("", help="Comma-separated hosts whose pages go to the LLM.")


class ExtractSummary(Summary):
    pages: int
    documents: int
    rejects: int
    image_refs: int
    tables: int
    interleaved: int
    rendered: int
    rendered_fraction: float
    rejects_by_reason: dict[str, int]
    seconds: float
    docs_per_s: float
    crawl: str
    details: dict[str, Any] = {}
    markdown_fields: ClassVar[tuple[str, ...]] = ("rejects_table",)

    def metadata(self) -> dict[str, Any]:
        rows = "\n".join(f"| {k} | {v} |" for k, v in self.rejects_by_reason.items())
        figures = self.model_dump(exclude={"outputs", "details"})
        return {**figures, "rejects_table": "| reason | rows |\n|---|---|\n" + rows}

    def text(self) -> str:
        return json.dumps(self.details, indent=2, default=str)


def _teacher(p: ExtractParams, lake_: Lake) -> dict | None:
    """The LLM extraction settings: all three of URL, model and hosts, or none."""
    import os

    if not p.llm_url or (not p.llm_hosts and not lake_.interactive):
        return None  # Dagster: a teacher resource alone does not send pages anywhere
    if not p.llm_model or not p.llm_hosts:
        raise ValueError("--llm-url needs --llm-model and --llm-hosts (comma-separated hosts)")
    return {
        "base_url": p.llm_url,
        "model": p.llm_model,
        "api_key": os.environ.get("REFINERY_TEACHER_API_KEY"),
        "hosts": [h.strip() for h in p.llm_hosts.split(",") if h.strip()],
    }


def _with_ledger(teacher: dict | None, lake_root: Path, crawl: Path) -> dict | None:
    """The teacher settings plus the consent ledger files the LLM path honours (the lake's and
    the crawl's own lake's): a page the ledger opted out is never sent."""
    if teacher is None:
        return None
    from common.consent import ledger_files_for

    return {**teacher, "ledger": [str(f) for f in ledger_files_for(lake_root, crawl)]}


def extract(p: ExtractParams, lake_: Lake) -> ExtractSummary:
    """Render the pages that need it, then extract documents, images, tables and rejects."""
    crawl = _crawl_dir(p.crawl, lake_)
    out = Path(p.out) if p.out else lake_.dir("extract")
    if p.rendered is not None and p.memory_budget_mib is not None:
        raise ValueError(
            f"memory_budget_mib={p.memory_budget_mib:g} (--memory-budget-mib) sizes the browser "
            f"pool, but this extraction reuses the render in {p.rendered}; set it on the render "
            "(`refinery render`, asset rendered_pages) instead"
        )
    s = run_extract(
        crawl,
        out,
        _mode(p.render, "--render"),
        rendered_dir=p.rendered,
        pipeline_args=[f"--runner={p.runner}", *p.beam_args],
        favor=p.favor,
        teacher=_with_ledger(_teacher(p, lake_), lake_.root, crawl),
        **p.render_kwargs(),
    )
    figures = {k: s[k] for k in ExtractSummary.model_fields if k in s}
    return ExtractSummary(outputs={"documents": str(out)}, crawl=str(crawl), details=s, **figures)


def _pages_accounted(summary: ExtractSummary, lake_: Lake):
    from crawlers import checks

    return checks.extract_pages_accounted(Path(summary.crawl), Path(summary.outputs["documents"]))


RENDER = Stage(
    name="render",
    params=RenderParams,
    run=render,
    description=render.__doc__,
    outputs=("rendered_pages",),
    inputs=("raw_pages",),
    group="extract",
    output_descriptions={
        "rendered_pages": "Final DOM of pages that need a browser (rendered.parquet), with "
        "render decisions and the sub-resources they used (render-*.warc.gz)."
    },
)
EXTRACT = Stage(
    name="extract",
    params=ExtractParams,
    run=extract,
    beam_job=True,
    description=extract.__doc__,
    outputs=("documents",),
    inputs=("raw_pages", "rendered_pages"),
    group="extract",
    output_descriptions={
        "documents": "Main-content documents, image references, tables, interleaved form and "
        "rejects (lake extract/)."
    },
    checks=(
        Check(
            "pages_accounted",
            "documents",
            _pages_accounted,
            "Pages in = documents + rejects: no page is silently lost.",
        ),
    ),
)
