"""The filter stage: language ID, PII scrub, heuristics, safety, quality and de-duplication;
`refinery filter` and the assets `filtered_documents` -> `deduplicated_documents`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from filters import checks as filter_checks
from filters import run as filters_run
from filters.run import Executor, FilterResult, InProcess
from pipelines.stage import Check, Lake, Params, Stage, Summary, param

IN_PROCESS = "InProcess"  # the runner name that selects the in-process executor
INSPECT_ROWS = 20  # rows per outcome on the inspection page the asset links (inspect.html)


def run_filter(
    docs_dir: str | Path,
    out_dir: str | Path,
    *,
    beam_args: Sequence[str] = (),
    **kwargs: Any,
) -> FilterResult:
    """`filters.run.run_filter` on the executor the runner in `beam_args` names (the stage's
    choice, not Beam's): `--runner=InProcess` runs the steps here, any other runner (default
    DirectRunner) on Beam (`pipelines.beam.filter.BeamExecutor`). The default quality models
    are trained from the sample web's labelled documents."""
    from sampleweb.labels import labelled_documents

    kwargs.setdefault("reference_rows", lambda: labelled_documents(0))
    return filters_run.run_filter(docs_dir, out_dir, executor=executor_for(beam_args), **kwargs)


def executor_for(beam_args: Sequence[str]) -> Executor:
    """The executor the stage runs the filter on: in process, or Beam with these args.

    Built before `filters.run.run_filter` clears the previous run's outputs, so a misspelt
    runner, a bad option value or a job service that does not answer fails here, one line,
    with the outputs intact. InProcess takes no Beam options: one given with it is refused
    rather than ignored."""
    from pipelines.beam import fs

    args = list(beam_args)
    if not any(a.startswith("--runner") for a in args):
        args.insert(0, "--runner=DirectRunner")
    if fs.runner_name(args) == IN_PROCESS:
        extra = [a for a in fs.runner_args(args) if not a.startswith("--runner=")]
        if extra:
            raise ValueError(
                f"--runner {IN_PROCESS} takes no Beam options: drop {' '.join(extra)}, or pick "
                "a Beam runner (DirectRunner, DaskRunner, PortableRunner, ...)"
            )
        return InProcess()
    from pipelines.beam.filter import BeamExecutor

    return BeamExecutor(args, own_runners=(IN_PROCESS,))


# --- declaration ---


class FilterParams(Params):
    docs: Path | None = param(
        None,
        input="documents",
        help="Directory holding documents.parquet (extract output); default: lake extract/.",
    )
    out: Path | None = param(
        None,
        output=True,
        help="Output directory (annotated.parquet, documents.parquet, ...); default: lake filter/.",
    )
    runner: str = param(
        "DirectRunner",
        resource="beam.runner",
        help="Beam runner (DirectRunner, PortableRunner, FlinkRunner, DaskRunner, ...), or "
        "InProcess (the same steps in this process, no Beam).",
    )
    beam_args: list[str] = param([], extra_args=True, resource="beam.options")
    config: Path | None = param(
        None, file=True, help="Filter config YAML (default: built-in defaults)."
    )
    models: Path | None = param(
        None,
        input="quality_models",
        help="Directory of <lang>.bin quality models (default: the default set, built on first "
        "use under <lake>/models/quality/default).",
    )
    decontaminate: list[str] = param(
        [],
        help="Eval sets (JSONL or Parquet; one or more after the flag, or the flag repeated) to "
        "decontaminate against: documents sharing 13-grams with one are marked `contaminated` "
        "(dropped with decontamination.drop); report in decontamination.json.",
    )
    blocklist: Path | None = param(
        None,
        help="Directory of URL blocklists in the UT1 layout (<category>/domains, "
        "<category>/urls), in place of the config's urls.blocklist_dir: listed pages are dropped "
        "as url_blocked:<category>.",
    )
    memory_budget_mib: float | None = param(
        None,
        min=1,
        help="Peak memory (MiB) the filter stays under: the rows a worker holds at once are "
        "lowered to what fits; too small for one row is an error naming the smallest budget.",
    )


class FilterSummary(Summary):
    docs: str
    rows_in: int
    rows_kept: int
    dropped: dict[str, int]
    dedup_rate: float
    tokens_kept: int
    clusters: int
    dedup_leftover_edges: int
    unscored_languages: list[str]
    quality_models: list[str]
    funnel: str
    funnel_plot: str
    chunks: int | None = None  # row ranges annotated (one element of the Annotate step each)
    chunk_rows: int | None = None  # rows a worker held at once (the largest chunk)
    memory_budget: dict[str, Any] | None = None  # how the budget was spent (common.budget.Fit)
    stats: str | None = None  # stats.json: docs, chars, tokens in and out per step and language
    inspect_html: Path | None = None  # inspect.html: the funnel and samples per outcome
    # documents sharing n-grams with the eval sets given (None: no decontamination asked)
    contaminated: int | None = None
    markdown_fields: ClassVar[tuple[str, ...]] = ("funnel",)

    def metadata(self) -> dict[str, Any]:
        return self.model_dump(
            include={
                "rows_in",
                "dropped",
                "funnel",
                "funnel_plot",
                "unscored_languages",
                "quality_models",
                "chunks",
                "chunk_rows",
                "memory_budget",
                "stats",
                "inspect_html",
                "contaminated",
            },
            exclude_none=True,
        )

    def metadata_for(self, output: str, first: bool) -> dict[str, Any]:
        if output == "deduplicated_documents":
            return self.model_dump(
                include={
                    "rows_kept",
                    "dedup_rate",
                    "clusters",
                    "dedup_leftover_edges",
                    "tokens_kept",
                }
            )
        return self.metadata()

    def line(self) -> str:
        from pipelines.stage import format_figures

        keys = ("rows_in", "rows_kept", "dedup_rate", "tokens_kept", "dropped", "contaminated")
        return format_figures({k: getattr(self, k) for k in keys})

    def text(self) -> str:
        return (
            f"{self.funnel}\n{self.rows_in} in, {self.rows_kept} kept, dedup rate "
            f"{self.dedup_rate:.3f}, {self.tokens_kept} tokens kept"
            + (f", {self.contaminated} contaminated" if self.contaminated is not None else "")
            + f" -> {Path(self.outputs['deduplicated_documents']).parent}"
        )


def filter_stage(p: FilterParams, lake: Lake) -> FilterSummary:
    """Language ID, PII scrub, heuristics, safety, quality and dedup; unknown options go to Beam."""
    docs = Path(p.docs) if p.docs else lake.root / "extract"
    out = Path(p.out) if p.out else lake.dir("filter")
    s = run_filter(
        docs,
        out,
        models_dir=p.models,
        config=p.config,
        beam_args=[f"--runner={p.runner}", *p.beam_args],
        memory_budget_mib=p.memory_budget_mib,
        lake_root=lake.root,
        decontaminate=p.decontaminate,
        blocklist=p.blocklist,
    )
    lake.log(f"filter: {s['rows_in']} in, {s['rows_kept']} kept")
    from filters.inspect import write_html

    page = write_html(out, out / "inspect.html", n=INSPECT_ROWS, seed=0)
    return FilterSummary(
        outputs={
            "filtered_documents": str(out / "annotated.parquet"),
            "deduplicated_documents": str(out / "documents.parquet"),
        },
        docs=str(docs),
        funnel=s["funnel_markdown"],
        inspect_html=page,
        stats=str(out / "stats.json"),
        contaminated=(s.get("decontamination") or {}).get("docs_contaminated"),
        **{k: s[k] for k in FilterSummary.model_fields if k in s and k != "funnel"},
    )


def _rows_accounted(summary: FilterSummary, lake: Lake):
    out = Path(summary.outputs["filtered_documents"]).parent
    return filter_checks.filter_rows_accounted(Path(summary.docs), out)


def _no_duplicate_kept(summary: FilterSummary, lake: Lake):
    return filter_checks.filter_no_duplicate_kept(
        Path(summary.outputs["filtered_documents"]).parent
    )


FILTER = Stage(
    name="filter",
    params=FilterParams,
    run=filter_stage,
    beam_job=True,
    description=filter_stage.__doc__,
    outputs=("filtered_documents", "deduplicated_documents"),
    inputs=("documents", "quality_models"),
    internal_deps={"deduplicated_documents": ("filtered_documents",)},
    group="filter",
    output_descriptions={
        "filtered_documents": "Every document annotated (lang, quality, drop_reason, scrubbed "
        "text): lake filter/annotated.parquet, with funnel.md/png and host_languages.parquet.",
        "deduplicated_documents": "Kept documents after exact, URL and MinHash de-duplication "
        "(lake filter/documents.parquet), with dup_clusters.parquet.",
    },
    checks=(
        Check(
            "rows_accounted",
            "filtered_documents",
            _rows_accounted,
            "Rows in = annotated rows: no document is silently lost.",
        ),
        Check(
            "no_duplicate_kept",
            "deduplicated_documents",
            _no_duplicate_kept,
            "No kept document is a duplicate of another kept document.",
        ),
    ),
)
