"""Filter stage entry points: `run_filter` (annotate + dedup via Beam) and `run_quality_train`."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from filters.config import FilterConfig, config_from_dict, load_config
from pipelines.lake import write_manifest, write_parquet

REQUIRED_COLUMNS = ("id", "url", "text", "training_allowed")


def _config(config: FilterConfig | dict | str | Path | None) -> FilterConfig:
    if isinstance(config, FilterConfig):
        return config
    if isinstance(config, dict):
        return config_from_dict(config)
    return load_config(config)


def _check_input(path: Path) -> pa.Schema:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no documents.parquet (run `refinery extract` first)")
    schema = pq.read_schema(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in schema.names]
    if missing:
        raise ValueError(
            f"{path}: missing required column(s) {', '.join(missing)}; "
            f"documents.parquet needs {', '.join(REQUIRED_COLUMNS)}"
        )
    if not pa.types.is_string(schema.field("id").type) and not pa.types.is_large_string(
        schema.field("id").type
    ):
        raise ValueError(f"{path}: column `id` must be a string, got {schema.field('id').type}")
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
        rows += [{"host": host, "lang": lang, "docs": n, "share": n / total}
                 for lang, n in sorted(per_host[host])]  # fmt: skip
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
) -> dict[str, Any]:
    """Filter DIR2/documents.parquet into DIR3 (annotated, documents, dup_clusters, host_languages, funnel)."""
    from filters import report
    from pipelines.beam.filter import build_and_run, output_schema

    cfg = _config(config)
    docs_path = Path(docs_dir) / "documents.parquet"
    in_schema = _check_input(docs_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    models_dir, cfg, models, fallback = quality_models_for(models_dir, cfg)
    schema = output_schema(in_schema)
    args = list(beam_args)
    if not any(a.startswith("--runner") for a in args):
        args.insert(0, "--runner=DirectRunner")
    # Workers write the outputs and a counts file under OUT; the driver reads only the counts.
    work = Path(tempfile.mkdtemp(prefix="_beam-", dir=out))
    try:
        counts = build_and_run(
            str(docs_path.resolve()), str(out.resolve()), str(work.resolve()), schema, cfg,
            str(models_dir) if models_dir else None, args,
        )  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n_in = pq.ParquetFile(docs_path).metadata.num_rows
    if counts["rows"] != n_in:
        raise RuntimeError(f"filter lost rows: {n_in} in, {counts['rows']} annotated")
    manifest_cfg = {
        "filter": json.loads(cfg.model_dump_json()),
        "models": {k: m.meta.get("training_set_sha256") for k, m in models.items()},
    }
    inputs = [str(docs_path)]
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
        }
    )
    (out / "funnel.json").write_text(
        json.dumps({k: v for k, v in summary.items() if k != "funnel_markdown"}, indent=2)
    )
    write_manifest(out / "funnel.json", rows=len(funnel), inputs=[str(out / "annotated.parquet")])
    return summary


def run_quality_train(
    lang: str,
    labels: str | Path,
    out: str | Path,
    *,
    source: str = "reference",
    seed: int = 0,
    threshold: float | None = None,
    keep_rate: float | None = None,
    positive_recall: float | None = None,
    teacher_url: str = "",
    teacher_model: str = "",
    teacher_api_key: str | None = None,
    targets: str | Path | None = None,
    top_frac: float = 0.3,
) -> dict[str, Any]:
    """Train one language's quality classifier from a label source; returns its metadata."""
    from filters.labels import LabelOptions, build_training_set, load_label_rows
    from filters.quality import train_model
    from sampleweb.labels import labelled_documents, parse_spec

    web_seed = parse_spec(str(labels))
    rows = load_label_rows(labels) if web_seed is None else labelled_documents(web_seed)
    target_texts: list[str] = []
    if targets:
        tpath = Path(targets)
        if not tpath.exists():
            raise FileNotFoundError(
                f"--targets {tpath}: no such file (one example per line or .jsonl with `text`)"
            )
        lines = [line for line in tpath.read_text().splitlines() if line.strip()]
        target_texts = (
            [json.loads(line)["text"] for line in lines] if tpath.suffix == ".jsonl" else lines
        )
    opts = LabelOptions(
        seed=seed,
        teacher_url=teacher_url,
        teacher_model=teacher_model,
        teacher_api_key=teacher_api_key,
        targets=target_texts,
        top_frac=top_frac,
    )
    ts = build_training_set(rows, lang, source, opts)
    meta = train_model(
        ts,
        out,
        seed=seed,
        threshold=threshold,
        keep_rate=keep_rate,
        positive_recall=positive_recall,
    )
    meta["model_path"] = str(out)
    return meta


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


def run_language_ids(
    docs_dir: str | Path, out_dir: str | Path, batch: int = 2048
) -> dict[str, Any]:
    """lid.176 label per document (DIR3/language_ids.parquet) and per-host shares (host_languages.parquet)."""
    from filters import report
    from filters.langid import LanguageIdentifier

    docs_path = Path(docs_dir) / "documents.parquet"
    _check_input(docs_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = pq.read_table(docs_path, columns=["id", "url", "text"])
    lid = LanguageIdentifier()
    texts = table["text"].to_pylist()
    preds = [
        p for i in range(0, len(texts), batch) for p in lid.predict_batch(texts[i : i + batch])
    ]
    ids = pa.table(
        {
            "id": table["id"],
            "url": table["url"],
            "lang": pa.array([p[0] for p in preds], pa.string()),
            "lang_score": pa.array([p[1] for p in preds], pa.float64()),
        }
    )
    write_parquet(ids, out / "language_ids.parquet", inputs=[str(docs_path)])
    hosts = report.host_languages(ids)
    write_parquet(hosts, out / "host_languages.parquet", inputs=[str(docs_path)])
    langs: dict[str, int] = {}
    for p in preds:
        langs[p[0]] = langs.get(p[0], 0) + 1
    return {
        "rows": ids.num_rows,
        "languages": dict(sorted(langs.items())),
        "host_languages": str(out / "host_languages.parquet"),
    }
