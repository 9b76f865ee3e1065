"""Quality classifiers: `refinery quality train` (one language, any label source) and the
`quality_models` asset (the default set the filter uses: one fastText model per language trained
from the sample web's reference pages, plus the multilingual fallback)."""

from __future__ import annotations

import json
from pathlib import Path

from common import lake as lake_mod
from pipelines.stage import Lake, Params, Stage, Summary, param


class QualityTrainParams(Params):
    lang: str = param(help="ISO 639-1 language code, e.g. de.")
    labels: str = param(help="Labelled documents: .parquet/.jsonl file or `sampleweb[:SEED]`.")
    out: Path = param(help="Model path (.bin); metadata JSON is written beside it.")
    source: str = param(
        "reference",
        help="Label source: reference, reference+shuffled (the default models' recipe), graded, "
        "graded+shuffled (English's default recipe; a `quality` column: high/medium/low), llm or "
        "benchmark.",
    )
    seed: int = param(0, help="Seed of the folds and the model's training.")
    threshold: float | None = param(None, help="Score cut in [0,1].")
    keep_rate: float | None = param(
        None, help="Share of the crawl to keep, on out-of-fold scores (sets the cut)."
    )
    positive_recall: float | None = param(
        None,
        help="Share of the positive class to keep, on out-of-fold scores (sets the cut). "
        "Default: the lower of the --keep-rate 0.95 and --positive-recall 0.98 cuts.",
    )
    teacher_url: str = param(
        "", envvar="REFINERY_TEACHER_URL", help="OpenAI-compatible base URL (llm source)."
    )
    teacher_model: str = param(
        "", envvar="REFINERY_TEACHER_MODEL", help="Model name the teacher serves (llm source)."
    )
    targets: Path | None = param(None, help="Target examples, one per line (benchmark source).")
    top_frac: float = param(
        0.3, help="Share of top-ranked documents used as positives (benchmark)."
    )


class QualityTrainSummary(Summary):
    lang: str
    label_source: str
    n_train: int
    n_test: int
    scorer: str
    auc: float | None
    precision: float | None
    recall: float | None
    threshold: float | None
    threshold_method: str
    oof_auc: float | None
    ensemble_members: int
    training_set_sha256: str
    model: str

    def text(self) -> str:
        def f(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.3f}"

        line = (
            f"{self.lang} ({self.label_source}): train {self.n_train}, held-out {self.n_test}; "
            f"scorer {self.scorer} on the held-out split: AUC {f(self.auc)}, precision "
            f"{f(self.precision)}, recall {f(self.recall)} at threshold {f(self.threshold)}"
        )
        paths = {"model": self.model, "metadata": str(Path(self.model).with_suffix(".json"))}
        return line + "\n" + json.dumps(paths)


def _targets(path: Path | None) -> list[str]:
    if not path:
        return []
    if not path.exists():
        raise FileNotFoundError(
            f"--targets {path}: no such file (one example per line or .jsonl with `text`)"
        )
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    return [json.loads(line)["text"] for line in lines] if path.suffix == ".jsonl" else lines


def label_rows(labels: str) -> list[dict]:
    """Labelled documents from a file, or the sample web's for `sampleweb[:SEED]`."""
    from filters.labels import load_label_rows
    from sampleweb.labels import labelled_documents, parse_spec

    web_seed = parse_spec(labels)
    return load_label_rows(labels) if web_seed is None else labelled_documents(web_seed)


def quality_train(p: QualityTrainParams, lake: Lake) -> QualityTrainSummary:
    """Train one language's classifier and print its held-out evaluation report."""
    import os

    from common.consent import Consent, ledger_files_for
    from filters.labels import LabelOptions, build_training_set
    from filters.quality import train_model

    labels_file = Path(p.labels) if Path(p.labels).exists() else None
    opts = LabelOptions(
        # the llm source grades only documents the consent rule allows: the row's flag, then the
        # consent ledger (the lake's, and that of the lake the labels file lies in)
        consent=Consent.load(None, files=ledger_files_for(lake.root, labels_file)),
        seed=p.seed,
        teacher_url=p.teacher_url,
        teacher_model=p.teacher_model,
        teacher_api_key=os.environ.get("REFINERY_TEACHER_API_KEY"),
        targets=_targets(p.targets),
        top_frac=p.top_frac,
    )
    ts = build_training_set(label_rows(p.labels), p.lang, p.source, opts)
    meta = train_model(
        ts,
        p.out,
        seed=p.seed,
        threshold=p.threshold,
        keep_rate=p.keep_rate,
        positive_recall=p.positive_recall,
    )
    m = meta["metrics"]
    return QualityTrainSummary(
        lang=p.lang,
        label_source=meta["label_source"],
        n_train=meta["n_train"],
        n_test=m["n_test"],
        scorer=m["scorer"],
        auc=m["auc"],
        precision=m["precision"],
        recall=m["recall"],
        threshold=m["threshold"],
        threshold_method=meta["threshold_method"],
        oof_auc=meta["oof"].get("auc"),
        ensemble_members=len(meta["ensemble"]),
        training_set_sha256=meta["training_set_sha256"],
        model=str(p.out),
    )


class QualityModelsParams(Params):
    sample_web: Path | None = param(
        None,
        input="sample_web",
        help="Sample web directory (labels.parquet); default: built in memory (seed 0).",
    )
    out: Path | None = param(
        None, output=True, help="Root of the default sets (default: lake models/quality/default)."
    )
    config: Path | None = param(
        None,
        file=True,
        help="Filter config YAML whose quality.default_label_sources (a label source per "
        "language, '*' for the rest) trains the set; default: the built-in table (English "
        "graded+shuffled, the rest reference+shuffled).",
    )


class QualityModelsSummary(Summary):
    path: str
    languages: list[str]
    fallback: bool
    auc: dict[str, float]


def quality_models(p: QualityModelsParams, lake: Lake) -> QualityModelsSummary:
    """Build (or find, by the key of their training data) the default quality models."""
    from filters.quality.default import (
        FALLBACK_NAME,
        default_root,
        ensure_default_models,
        place_set,
    )
    from sampleweb.labels import labelled_documents, labelled_documents_from_file

    labels = Path(p.sample_web) / "labels.parquet" if p.sample_web else None
    rows = labelled_documents_from_file(labels) if labels else labelled_documents(0)
    mine = Path(p.out) if p.out else Path(lake.dir("quality_models")) / "default"
    # Built in (or found in) the shared cache when $REFINERY_QUALITY_DEFAULTS names one, then
    # placed in this lake, where its manifest names this lake's sample web.
    sources = None
    if p.config is not None:
        from filters.run import load_filter_config

        sources = load_filter_config(p.config).quality.default_label_sources or None
    built = ensure_default_models(
        Path(p.out) if p.out else default_root(mine.parent),
        rows,
        log=lake.log,
        label_sources=sources,
    )
    target = place_set(built, mine)
    models = sorted(m.stem for m in target.glob("*.bin"))
    auc = {}
    for lang in models:
        meta = target / f"{lang}.json"
        value = (
            (json.loads(meta.read_text()).get("metrics") or {}).get("auc")
            if meta.exists()
            else None
        )
        if value is not None:
            auc[lang] = round(value, 3)
    lake_mod.write_manifest(
        target, rows=len(models), inputs=[str(labels)] if labels else [], extra={"models": models}
    )
    return QualityModelsSummary(
        outputs={"quality_models": str(target)},
        path=str(target),
        languages=[m for m in models if m != FALLBACK_NAME],
        fallback=FALLBACK_NAME in models,
        auc=auc,
    )


QUALITY_TRAIN = Stage("quality train", QualityTrainParams, quality_train, quality_train.__doc__)
QUALITY_MODELS = Stage(
    name="quality defaults",
    params=QualityModelsParams,
    run=quality_models,
    description=quality_models.__doc__,
    outputs=("quality_models",),
    inputs=("sample_web",),
    group="filter",
    output_descriptions={
        "quality_models": "The default quality models: one fastText model per language trained "
        "from the sample web's labels (English: its graded pages; the others: its reference "
        "pages against shuffled text; quality.default_label_sources), and a multilingual "
        "fallback, each with its held-out evaluation (lake models/quality/default/<key>/)."
    },
)
