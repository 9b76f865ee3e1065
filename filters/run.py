"""The filter stage's driver: documents.parquet in, annotated/documents/dup_clusters/host_languages
/funnel out, with the manifests. Plain Python over files: `pipelines/stages/filter.py` declares the
stage and picks where the steps run (an `Executor`), `pipelines/beam/filter.py` is the Beam one.

An executor knows where the steps of `filters.pipeline` run, never what they do (datatrove's
`executor/local.py`): `InProcess` runs them here (`filters.pipeline.run_local`); the Beam
executor runs the same steps on any Beam runner. Both write the same outputs and counts.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypedDict

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from common.manifest import write_manifest, write_parquet
from filters.config import ConfigError, FilterConfig, config_from_dict, load_config

REQUIRED_COLUMNS = {"id": "string", "url": "string", "text": "string", "training_allowed": "any"}
FIX = "documents.parquet comes from `refinery extract` (re-run it, or write these columns)"


class Executor(Protocol):
    """Where the filter's steps run: `workers` hold rows at once (for a memory budget),
    `prepare()` imports what the workers will have resident, `run(...)` returns the counts."""

    workers: int

    def prepare(self) -> None: ...

    def run(
        self,
        docs_path: str,
        out_dir: str,
        work_dir: str,
        schema: pa.Schema,
        cfg: FilterConfig,
        models_dir: str | None,
        max_rows: int | None,
    ) -> dict: ...


@dataclass
class InProcess:
    """The steps in this process, one worker (`filters.pipeline.run_local`)."""

    workers: int = 1

    def prepare(self) -> None:
        return None

    def run(self, docs_path, out_dir, work_dir, schema, cfg, models_dir, max_rows) -> dict:
        from filters.pipeline import run_local

        return run_local(docs_path, out_dir, work_dir, schema, cfg, models_dir, max_rows=max_rows)


class FilterResult(TypedDict, total=False):
    """What `run_filter` returns (also written to funnel.json, less the markdown)."""

    rows_in: int
    rows_kept: int
    dropped: dict[str, int]
    dedup_rate: float
    tokens_kept: int
    unscored_languages: list[str]
    out_dir: str
    funnel: list[dict[str, Any]]
    funnel_markdown: str
    funnel_plot: str
    quality_models: list[str]
    clusters: int
    dedup_leftover_edges: int
    chunks: int
    chunk_rows: int
    memory_budget: dict[str, Any] | None
    line_dedup_threshold: int | None
    url_filter: dict[str, Any] | None
    decontamination: dict[str, Any] | None


def load_filter_config(config: FilterConfig | dict | str | Path | None) -> FilterConfig:
    if isinstance(config, FilterConfig):
        return config
    if isinstance(config, dict):
        return config_from_dict(config)
    return load_config(config)


def check_input(path: Path) -> pa.Schema:
    """The input's schema, after checking it is readable with the columns the filter needs and
    its string columns other than `text` valid UTF-8 (one line naming the file otherwise).
    Rows the filter cannot take as documents are rejects, not errors (`input_rejects`)."""
    from common.inputs import check_file, read_schema

    if not path.exists():
        raise FileNotFoundError(f"{path}: no documents.parquet (run `refinery extract` first)")
    schema = read_schema(path, FIX)
    utf8 = [f.name for f in schema if f.name != "text"]
    return check_file(path, REQUIRED_COLUMNS, fix=FIX, utf8=utf8)


def input_rejects(path: Path) -> dict[int, str]:
    """Input rows (0-based) the filter records as rejects instead of documents, with the reason:
    `invalid_utf8` (its text is not UTF-8), `null_id`, `duplicate_id` (an id an earlier row
    has: the first row with an id is the document, `duplicate_of` and dedup refer to ids)."""
    import numpy as np

    from common.inputs import invalid_utf8_rows

    rejects = dict.fromkeys(invalid_utf8_rows(path, "text"), "invalid_utf8")
    ids = pq.read_table(path, columns=["id"])["id"]
    if ids.null_count:
        rejects.update(
            dict.fromkeys(np.flatnonzero(pc.is_null(ids).to_numpy(False)).tolist(), "null_id")
        )
    if pc.count_distinct(ids).as_py() + (1 if ids.null_count else 0) != len(ids):
        rows = pa.table({"id": ids, "row": pa.array(np.arange(len(ids)))})
        first = rows.group_by("id", use_threads=False).aggregate([("row", "min")])["row_min"]
        later = pc.invert(pc.is_in(rows["row"], value_set=first.combine_chunks()))
        later = pc.and_(later, pc.is_valid(ids))
        rejects.update(
            dict.fromkeys(np.flatnonzero(later.to_numpy(False)).tolist(), "duplicate_id")
        )
    return rejects


OUTPUTS = ("annotated.parquet", "documents.parquet", "dup_clusters.parquet")
OUTPUTS += ("host_languages.parquet", "stats.json", "funnel.json")
WORK_PREFIX = "_beam-"


# What a run writes beside OUTPUTS (the funnel's report, the decontamination report, the stage's
# inspection page): stale once a new run starts, so they go with the outputs.
REPORTS = ("funnel.md", "funnel.png", "decontamination.json", "inspect.html")


def clear_previous_run(out: Path) -> None:
    """Before a run writes anything into `out`: remove the previous run's outputs (OUTPUTS and
    REPORTS), their manifests first, the temporary files of writes a kill cut short, and the
    work dirs (`_beam-*`, a copy of the data) that killed runs left. A run killed before it
    finishes then leaves only its own outputs without manifests (or none), never an old
    dataset that reads as whole: a killed run's documents.parquet was the run before's, which
    tokenizer and mixture builds took as complete. A filter run does not resume; a re-run
    writes everything again."""
    from common.manifest import manifest_path

    for name in OUTPUTS:
        manifest_path(out / name).unlink(missing_ok=True)
    for name in OUTPUTS + REPORTS:
        (out / name).unlink(missing_ok=True)
        (out / f"{name}.tmp").unlink(missing_ok=True)
    for work in out.glob(f"{WORK_PREFIX}*"):
        if work.is_dir():
            shutil.rmtree(work, ignore_errors=True)


def quality_models_for(
    models_dir: str | Path | None,
    cfg: FilterConfig,
    lake_root: str | Path | None = None,
    reference_rows: Callable[[], list[dict]] | None = None,
) -> tuple[str | Path | None, FilterConfig, dict, bool]:
    """Resolve the quality models of a run: (models directory, config with the fallback's
    directory filled in, per-language models, whether a multilingual fallback exists).

    Without `models_dir` the default set is used (built on first use under
    `<lake_root>/models/quality/default`, or $REFINERY_QUALITY_DEFAULTS; `lake_root` None: the
    environment's lake); a `models_dir` without `multilingual.bin` borrows the default set's
    fallback. `quality.use_default_models: false` turns both off (languages without a model are
    then unscored: NULL). `reference_rows()` gives the labelled documents the default set is
    trained from (the stage passes the sample web's, `sampleweb.labels.labelled_documents`).
    """
    import logging

    from common.lake import STAGE_DIRS
    from common.lake import lake_root as env_lake_root
    from filters.quality import load_models
    from filters.quality.default import (
        FALLBACK_NAME,
        default_root,
        ensure_default_models,
        load_fallback,
    )

    own_fallback = models_dir is not None and (Path(models_dir) / f"{FALLBACK_NAME}.bin").exists()
    if models_dir is not None and cfg.quality.default_label_sources:
        logging.getLogger(__name__).warning(
            "quality.default_label_sources trains the default set; the models of %s keep the "
            "label sources they were trained with (leave out --models to use the table)",
            models_dir,
        )
    if cfg.quality.use_default_models and not (own_fallback or cfg.quality.fallback_models_dir):
        if reference_rows is None:
            raise ValueError(
                "the default quality models need their reference documents: pass "
                "reference_rows (e.g. sampleweb.labels.labelled_documents), your own --models, "
                "or set quality.use_default_models: false"
            )
        log = logging.getLogger(__name__).warning
        root = Path(lake_root) if lake_root is not None else env_lake_root()
        default = ensure_default_models(
            default_root(root / STAGE_DIRS["quality_models"]),
            reference_rows(),
            log=log,
            label_sources=cfg.quality.default_label_sources,
        )
        if models_dir is None:
            models_dir = default
        cfg = cfg.model_copy(deep=True)
        cfg.quality.fallback_models_dir = str(default)
    models = load_models(models_dir, cfg.languages)
    models.pop(FALLBACK_NAME, None)
    fallback = own_fallback or load_fallback(cfg.quality.fallback_models_dir) is not None
    return models_dir, cfg, models, fallback


def check_languages(
    cfg: FilterConfig, labels: frozenset[str] | None = None, source: str = "filter config"
) -> None:
    """Every language the config names must be one the language identifier can give: a document
    is kept only in its identified language, and per-language settings apply by it, so any other
    code keeps nothing or never applies, silently (every Norwegian page dropped as
    unsupported_language under `nb`, which lid.176 calls `no`; `heuristics_by_lang.nb` ignored).
    Checked over `languages` and every per-language key and list
    (`FilterConfig.language_fields`)."""
    from common.langid import LanguageIdentifier, code_fix

    if labels is None:
        labels = LanguageIdentifier().labels()
    for field, lang, cost in cfg.language_fields():
        if lang in labels:
            continue
        raise ConfigError(
            f"{source}: {field}: {lang!r} is not a language the language identifier can "
            f"give, so {cost}; {code_fix(lang, labels)}"
        )


def run_filter(
    docs_dir: str | Path,
    out_dir: str | Path,
    *,
    models_dir: str | Path | None = None,
    config: FilterConfig | dict | str | Path | None = None,
    executor: Executor | None = None,
    memory_budget_mib: float | None = None,
    lake_root: str | Path | None = None,
    reference_rows: Callable[[], list[dict]] | None = None,
    decontaminate: Sequence[str | Path] = (),
    blocklist: str | Path | None = None,
) -> FilterResult:
    """Filter DIR2/documents.parquet into DIR3 (annotated, documents, dup_clusters, host_languages, funnel).

    `executor` runs the steps (default: `InProcess`). With `memory_budget_mib`, the rows a
    worker holds at once (a chunk) are as many as fit in the budget
    (`filters.pipeline.rows_for_budget`); the outputs do not change. `lake_root` is where the
    default quality models live (default: the environment's lake); `reference_rows` trains them
    (see `quality_models_for`). `decontaminate`: eval files added to `decontamination.evals`.
    `blocklist`: a directory of lists in the UT1 layout, in place of `urls.blocklist_dir`.
    """
    from filters import decontam, report, urls
    from filters.linededup import threshold as line_threshold
    from filters.pipeline import output_schema, plan_chunks, write_input_rejects

    executor = executor or InProcess()
    cfg = urls.with_blocklist(
        decontam.with_evals(load_filter_config(config), decontaminate), blocklist
    )
    check_languages(cfg, source=str(config) if isinstance(config, str | Path) else "filter config")
    # The consent ledgers of the run's lake and of the input's: their opt-outs are out before
    # de-duplication (an allowed copy of an opted-out text is kept in its place).
    from common.consent import ledger_files_for, ledger_version

    ledgers = [str(f) for f in ledger_files_for(lake_root, docs_dir)]
    cfg.consent_ledger = [*cfg.consent_ledger, *(f for f in ledgers if f not in cfg.consent_ledger)]
    # Lists and eval sets are read here first: a bad file is one line before any work starts.
    url_info = urls.describe(cfg.urls)
    index = decontam.load_index(cfg.decontamination) if cfg.decontamination.evals else None
    docs_path = Path(docs_dir) / "documents.parquet"
    in_schema = check_input(docs_path)
    rejects = input_rejects(docs_path)
    out = Path(out_dir)
    if out.resolve() == docs_path.parent.resolve():
        raise ValueError(
            f"--out {out}: is the --docs directory, whose documents.parquet the filter's own "
            "would replace (the input lost); give another --out"
        )
    out.mkdir(parents=True, exist_ok=True)
    clear_previous_run(out)
    models_dir, cfg, models, fallback = quality_models_for(
        models_dir, cfg, lake_root, reference_rows
    )
    schema = output_schema(in_schema)
    budget = None
    if memory_budget_mib is not None:
        from filters.pipeline import rows_for_budget

        executor.prepare()
        import filters.annotate  # noqa: F401 - as the workers do: resident before the fit

        budget = rows_for_budget(
            str(docs_path), memory_budget_mib, cfg, models_dir, executor.workers
        )
    # Workers write the outputs and a counts file under OUT; the driver reads only the counts.
    chunks = plan_chunks(str(docs_path), max_rows=budget.units if budget else None)
    work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=out))
    try:
        write_input_rejects(rejects, chunks, str(work.resolve()))
        counts = executor.run(
            str(docs_path.resolve()),
            str(out.resolve()),
            str(work.resolve()),
            schema,
            cfg,
            str(models_dir) if models_dir else None,
            budget.units if budget else None,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n_in = pq.ParquetFile(docs_path).metadata.num_rows
    if counts["rows"] != n_in:
        raise RuntimeError(f"filter lost rows: {n_in} in, {counts['rows']} annotated")
    manifest_cfg = {
        "filter": json.loads(cfg.model_dump_json()),
        "models": {k: m.meta.get("training_set_sha256") for k, m in models.items()},
    }
    # The ledger snapshot the rows were judged against (as a mixture manifest records it).
    ledger = {"consent_ledger": ledger_version(cfg.consent_ledger)}
    inputs = [str(docs_path)] + ([str(models_dir)] if models_dir else [])
    write_manifest(
        out / "annotated.parquet",
        rows=counts["rows"],
        inputs=inputs,
        config=manifest_cfg,
        extra=ledger,
    )
    for name, rows in (("documents", counts["kept"]), ("dup_clusters", counts["cluster_rows"])):
        write_manifest(
            out / f"{name}.parquet",
            rows=rows,
            inputs=[str(out / "annotated.parquet")],
            config=manifest_cfg,
            extra=ledger,
        )
    write_parquet(report.host_languages(counts), out / "host_languages.parquet", inputs=inputs)
    funnel = [{"lang": a, "outcome": b, "docs": n} for a, b, n in counts["funnel"]]
    no_own = [lang for lang in cfg.languages if lang not in models]
    unscored = [] if fallback else no_own
    md = report.funnel_markdown(funnel, unscored, no_own if fallback else [])
    md += decontam.funnel_note(counts) if index is not None else ""
    from filters.stats import stats_markdown, step_stats

    stats = step_stats(docs_path, out / "annotated.parquet")  # from the outputs: any executor
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    write_manifest(
        out / "stats.json", rows=len(stats["rows"]), inputs=[str(out / "annotated.parquet")]
    )
    md += "\nPer step (all languages):\n\n" + stats_markdown(stats)
    (out / "funnel.md").write_text(md)
    report.funnel_plot(funnel, out / "funnel.png", stats)
    summary: FilterResult = report.summary(counts)  # type: ignore[assignment]
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
            # Documents a line had to be in to be removed (filters.linededup); null when off.
            "line_dedup_threshold": (
                line_threshold(cfg.line_dedup, n_in) if cfg.line_dedup.enabled else None
            ),
        }
    )
    summary["url_filter"] = url_info
    summary["decontamination"] = None
    if index is not None:
        summary["decontamination"] = decontam.report(index, cfg.decontamination, counts)
        (out / "decontamination.json").write_text(
            json.dumps(summary["decontamination"], indent=2) + "\n"
        )
    (out / "funnel.json").write_text(
        json.dumps({k: v for k, v in summary.items() if k != "funnel_markdown"}, indent=2)
    )
    write_manifest(out / "funnel.json", rows=len(funnel), inputs=[str(out / "annotated.parquet")])
    return summary
