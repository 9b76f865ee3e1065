"""The render and extract stages' declarations (`refinery render`, `refinery extract`); their
drivers are `crawlers/render/run.py` and `crawlers/extract/run.py`, the Beam executor
`pipelines/beam/extract.py`."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from common import lake
from pipelines.stage import Check, Lake, Params, Stage, Summary, param

if TYPE_CHECKING:
    from crawlers.extract.run import ExtractResult


def run_extract(
    crawl_dir: str | Path,
    out_dir: str | Path,
    render_mode: str = "auto",
    *,
    pipeline_args: list[str] | None = None,
    **kwargs: Any,
) -> ExtractResult:
    """`crawlers.extract.run.run_extract` on Beam (`pipeline_args`, default the DirectRunner).
    The args are checked first (`pipelines.beam.fs.check_args`): a misspelt runner or a job
    service that does not answer is one line before the render and the parts are touched."""
    from functools import partial

    from crawlers.extract.run import run_extract as extract_crawl
    from pipelines.beam import fs
    from pipelines.beam.extract import run_pipeline

    if pipeline_args:
        fs.check_args(pipeline_args)
    execute = partial(run_pipeline, pipeline_args=pipeline_args)
    return extract_crawl(crawl_dir, out_dir, render_mode, execute=execute, **kwargs)


# --- declarations: `refinery render`, `refinery extract`, assets rendered_pages and documents ---

MODES = ("auto", "never", "always")


class RenderOptions(Params):
    """What the browser does and which policies its downloader obeys (shared by render and
    extract). Dagster takes executable, pages in flight and timeout from the `browser` resource."""

    pages_in_flight: int = param(
        4, min=1, resource="browser.pages_in_flight", help="Pages rendered at once."
    )
    page_timeout: float = param(
        20.0,
        gt=0,
        finite=True,
        resource="browser.page_timeout_s",
        help="Seconds per page before giving up.",
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
        help="Let pages' sub-requests reach loopback/private addresses (without it, a page on "
        "a private IP literal reaches its own origin only when the crawl that fetched it ran "
        "with --allow-private-networks; an imported page never).",
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
    crashed_pages: int = 0  # pages a browser crash took down: retried once, or an error
    resumed_pages: int = 0  # pages a killed earlier run finished, taken from its journal
    blocked_requests: int
    subresources: int
    links_handed_on: int = 0  # links only rendered DOMs hold, put in the crawl's inboxes
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
    from crawlers.render.run import run_render

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
    llm_model: str = param(
        "",
        envvar="REFINERY_TEACHER_MODEL",
        resource="teacher.model",
        help="Model name the LLM server serves (with --llm-url).",
    )
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
    details = asdict(s)
    figures = {k: v for k, v in details.items() if k in ExtractSummary.model_fields}
    return ExtractSummary(
        outputs={"documents": str(out)}, crawl=str(crawl), details=details, **figures
    )


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
