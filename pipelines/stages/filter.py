"""The filter stage: language ID, PII scrub, heuristics, safety, quality and de-duplication;
`refinery filter` and the assets `filtered_documents` -> `deduplicated_documents`."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from filters.config import FilterConfig, config_from_dict, load_config
from pipelines.lake import write_manifest, write_parquet
from pipelines.stage import Check, Lake, Params, Stage, Summary, param

REQUIRED_COLUMNS = {"id": "string", "url": "string", "text": "string", "training_allowed": "any"}
FIX = "documents.parquet comes from `refinery extract` (re-run it, or write these columns)"


def _config(config: FilterConfig | dict | str | Path | None) -> FilterConfig:
    if isinstance(config, FilterConfig):
        return config
    if isinstance(config, dict):
        return config_from_dict(config)
    return load_config(config)


def _check_input(path: Path) -> pa.Schema:
    from common.inputs import check_file

    if not path.exists():
        raise FileNotFoundError(f"{path}: no documents.parquet (run `refinery extract` first)")
    # Readable, the columns there and of their kind, text valid UTF-8: one line naming the file
    schema = check_file(path, REQUIRED_COLUMNS, fix=FIX)
    ids = pq.read_table(path, columns=["id"])["id"]
    if pc.count_distinct(ids).as_py() != len(ids) or ids.null_count:
        raise ValueError(
            f"{path}: column `id` must be unique and non-null (duplicate_of refers to it)"
        )
    return schema


def _host_languages(counts: dict) -> pa.Table:
    """host, lang, docs, share from the workers' counts (as `filters.report.host_languages`)."""
    per_host: dict[str, list] = {}
    for host, lang, n in counts["hosts"]:
        per_host.setdefault(host, []).append((lang, n))
    rows = []
    for host in sorted(per_host):
        total = sum(n for _, n in per_host[host])
        rows += [
            {"host": host, "lang": lang, "docs": n, "share": n / total}
            for lang, n in sorted(per_host[host])
        ]
    schema = pa.schema(
        [
            ("host", pa.string()),
            ("lang", pa.string()),
            ("docs", pa.int64()),
            ("share", pa.float64()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def _summary(counts: dict) -> dict[str, Any]:
    """`filters.report.summary` from the workers' counts."""
    dropped: dict[str, int] = {}
    for _, outcome, n in counts["funnel"]:
        if outcome != "kept":
            dropped[outcome] = dropped.get(outcome, 0) + n
    dups = sum(n for reason, n in dropped.items() if reason.endswith("_duplicate"))
    inputs = counts["kept"] + dups
    scored = {(lang, ok): n for lang, ok, n in counts["scored"]}
    return {
        "rows_in": counts["rows"],
        "rows_kept": counts["kept"],
        "dropped": dict(sorted(dropped.items())),
        "dedup_rate": dups / inputs if inputs else 0.0,
        "tokens_kept": counts["tokens_kept"],
        "unscored_languages": sorted(
            {lang for (lang, ok) in scored if not ok and not scored.get((lang, True))}
        ),
    }


def run_filter(
    docs_dir: str | Path,
    out_dir: str | Path,
    *,
    models_dir: str | Path | None = None,
    config: FilterConfig | dict | str | Path | None = None,
    beam_args: Sequence[str] = (),
    memory_budget_mib: float | None = None,
) -> dict[str, Any]:
    """Filter DIR2/documents.parquet into DIR3 (annotated, documents, dup_clusters, host_languages, funnel).

    With `memory_budget_mib`, the rows a worker holds at once (a chunk) are as many as fit in
    the budget (`filters.pipeline.rows_for_budget`); the outputs do not change.
    """
    cfg = _config(config)
    docs_path = Path(docs_dir) / "documents.parquet"
    in_schema = _check_input(docs_path)
    from filters import report
    from filters.pipeline import plan_chunks
    from pipelines.beam.filter import build_and_run, output_schema

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    models_dir, cfg, models, fallback = quality_models_for(models_dir, cfg)
    schema = output_schema(in_schema)
    args = list(beam_args)
    if not any(a.startswith("--runner") for a in args):
        args.insert(0, "--runner=DirectRunner")
    budget = None
    if memory_budget_mib is not None:
        from filters.pipeline import rows_for_budget
        from pipelines.beam.filter import direct_workers, is_in_process

        workers = 1 if is_in_process(args) else direct_workers(args)
        if not is_in_process(args):  # Beam imports its runner when the pipeline runs
            import apache_beam.runners.portability.fn_api_runner  # noqa: F401
        import filters.annotate  # noqa: F401 - as the workers do: resident before the fit

        budget = rows_for_budget(str(docs_path), memory_budget_mib, cfg, models_dir, workers)
    # Workers write the outputs and a counts file under OUT; the driver reads only the counts.
    work = Path(tempfile.mkdtemp(prefix="_beam-", dir=out))
    try:
        counts = build_and_run(
            str(docs_path.resolve()),
            str(out.resolve()),
            str(work.resolve()),
            schema,
            cfg,
            str(models_dir) if models_dir else None,
            args,
            max_rows=budget.units if budget else None,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n_in = pq.ParquetFile(docs_path).metadata.num_rows
    chunks = plan_chunks(str(docs_path), max_rows=budget.units if budget else None)
    if counts["rows"] != n_in:
        raise RuntimeError(f"filter lost rows: {n_in} in, {counts['rows']} annotated")
    manifest_cfg = {
        "filter": json.loads(cfg.model_dump_json()),
        "models": {k: m.meta.get("training_set_sha256") for k, m in models.items()},
    }
    inputs = [str(docs_path)] + ([str(models_dir)] if models_dir else [])
    write_manifest(
        out / "annotated.parquet", rows=counts["rows"], inputs=inputs, config=manifest_cfg
    )
    for name, rows in (("documents", counts["kept"]), ("dup_clusters", counts["cluster_rows"])):
        write_manifest(
            out / f"{name}.parquet",
            rows=rows,
            inputs=[str(out / "annotated.parquet")],
            config=manifest_cfg,
        )
    write_parquet(_host_languages(counts), out / "host_languages.parquet", inputs=inputs)
    funnel = [{"lang": a, "outcome": b, "docs": n} for a, b, n in counts["funnel"]]
    no_own = [lang for lang in cfg.languages if lang not in models]
    unscored = [] if fallback else no_own
    md = report.funnel_markdown(funnel, unscored, no_own if fallback else [])
    (out / "funnel.md").write_text(md)
    report.funnel_plot(funnel, out / "funnel.png")
    summary = _summary(counts)
    summary.update(
        {
            "out_dir": str(out),
            "funnel": funnel,
            "funnel_markdown": md,
            "funnel_plot": str(out / "funnel.png"),
            "unscored_languages": unscored,
            "quality_models": sorted(models),
            "clusters": counts["clusters"],
            "dedup_leftover_edges": counts["dedup_leftover_edges"],
            "chunks": len(chunks),
            "chunk_rows": max((c[3] - c[2] for c in chunks), default=0),
            "memory_budget": budget.as_dict() if budget else None,
        }
    )
    (out / "funnel.json").write_text(
        json.dumps({k: v for k, v in summary.items() if k != "funnel_markdown"}, indent=2)
    )
    write_manifest(out / "funnel.json", rows=len(funnel), inputs=[str(out / "annotated.parquet")])
    return summary


def quality_models_for(
    models_dir: str | Path | None, cfg: FilterConfig
) -> tuple[str | Path | None, FilterConfig, dict, bool]:
    """Resolve the quality models of a run: (models directory, config with the fallback's
    directory filled in, per-language models, whether a multilingual fallback exists).

    Without `models_dir` the default set is used (built on first use under
    `<lake>/models/quality/default`, or $REFINERY_QUALITY_DEFAULTS); a `models_dir` without
    `multilingual.bin` borrows the default set's fallback. `quality.use_default_models: false`
    turns both off (languages without a model are then unscored: NULL).
    """
    import logging

    from filters.quality import load_models
    from filters.quality.default import (
        FALLBACK_NAME,
        default_root,
        ensure_default_models,
        load_fallback,
    )
    from pipelines.lake import STAGE_DIRS, lake_root
    from sampleweb.labels import labelled_documents

    own_fallback = models_dir is not None and (Path(models_dir) / f"{FALLBACK_NAME}.bin").exists()
    if cfg.quality.use_default_models and not (own_fallback or cfg.quality.fallback_models_dir):
        log = logging.getLogger(__name__).warning
        default = ensure_default_models(
            default_root(lake_root() / STAGE_DIRS["quality_models"]), labelled_documents(0), log=log
        )
        if models_dir is None:
            models_dir = default
        cfg = cfg.model_copy(deep=True)
        cfg.quality.fallback_models_dir = str(default)
    models = load_models(models_dir, cfg.languages)
    models.pop(FALLBACK_NAME, None)
    fallback = own_fallback or load_fallback(cfg.quality.fallback_models_dir) is not None
    return models_dir, cfg, models, fallback


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
    config: Path | None = param(None, help="Filter config YAML (default: built-in defaults).")
    models: Path | None = param(
        None,
        input="quality_models",
        help="Directory of <lang>.bin quality models (default: the default set, built on first "
        "use under <lake>/models/quality/default).",
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

        keys = ("rows_in", "rows_kept", "dedup_rate", "tokens_kept", "dropped")
        return format_figures({k: getattr(self, k) for k in keys})

    def text(self) -> str:
        return (
            f"{self.funnel}\n{self.rows_in} in, {self.rows_kept} kept, dedup rate "
            f"{self.dedup_rate:.3f}, {self.tokens_kept} tokens kept -> "
            f"{Path(self.outputs['deduplicated_documents']).parent}"
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
    )
    lake.log(f"filter: {s['rows_in']} in, {s['rows_kept']} kept")
    return FilterSummary(
        outputs={
            "filtered_documents": str(out / "annotated.parquet"),
            "deduplicated_documents": str(out / "documents.parquet"),
        },
        docs=str(docs),
        funnel=s["funnel_markdown"],
        **{k: s[k] for k in FilterSummary.model_fields if k in s and k != "funnel"},
    )


def _filter_check(name: str):
    def fn(summary: FilterSummary, lake: Lake):
        from pipelines import checks

        out = Path(summary.outputs["filtered_documents"]).parent
        if name == "filter_rows_accounted":
            return checks.filter_rows_accounted(Path(summary.docs), out)
        return getattr(checks, name)(out)

    return fn


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
            _filter_check("filter_rows_accounted"),
            "Rows in = annotated rows: no document is silently lost.",
        ),
        Check(
            "no_duplicate_kept",
            "deduplicated_documents",
            _filter_check("filter_no_duplicate_kept"),
            "No kept document is a duplicate of another kept document.",
        ),
    ),
)
