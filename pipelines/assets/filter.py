"""Filter-stage assets: language IDs, per-language quality models, filtered and de-duplicated documents."""

from dagster import (
    AssetExecutionContext,
    AssetSpec,
    Config,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    asset,
    multi_asset,
)

from filters.config import FilterConfig
from pipelines.resources import BeamRunnerResource, LakeResource, TeacherResource
from pipelines.stages.filter import run_filter, run_language_ids, run_quality_train

LANGUAGES = StaticPartitionsDefinition(FilterConfig().languages)


@asset(
    group_name="filter",
    deps=["documents"],
    description="lid.176 language per document and per-host language shares.",
)
def language_ids(context: AssetExecutionContext, lake: LakeResource) -> MaterializeResult:
    summary = run_language_ids(lake.stage_dir("extract"), lake.stage_dir("filter"))
    context.log.info(f"language ids: {summary['languages']}")
    return MaterializeResult(
        metadata={
            "documents": summary["rows"],
            "languages": MetadataValue.json(summary["languages"]),
            "host_languages": MetadataValue.path(summary["host_languages"]),
        }
    )


class QualityTrainConfig(Config):
    """Label source (reference | reference+shuffled | llm | benchmark) and the cut of one
    language's classifier."""

    source: str = "reference"
    labels: str = "sampleweb"
    # Neither set: the default cut, the lower of the keep-rate 0.95 and positive-recall 0.98 cuts.
    keep_rate: float | None = None
    positive_recall: float | None = None
    seed: int = 0


@asset(
    group_name="filter",
    deps=["sample_web"],
    partitions_def=LANGUAGES,
    description="fastText quality classifier of one language, with its held-out evaluation.",
)
def quality_models(
    context: AssetExecutionContext,
    config: QualityTrainConfig,
    lake: LakeResource,
    teacher: TeacherResource,
) -> MaterializeResult:
    lang = context.partition_key
    out = lake.stage_dir("quality_models") / f"{lang}.bin"
    meta = run_quality_train(
        lang,
        config.labels,
        out,
        source=config.source,
        seed=config.seed,
        keep_rate=config.keep_rate,
        positive_recall=config.positive_recall,
        teacher_url=teacher.base_url,
        teacher_model=teacher.model,
        teacher_api_key=teacher.api_key(),
    )
    m = meta["metrics"]
    return MaterializeResult(
        metadata={
            "model": MetadataValue.path(str(out)),
            "label_source": meta["label_source"],
            # Held-out metrics of the deployed scorer (the fold ensemble) on a grouped split
            # none of its models saw.
            "scorer": m["scorer"],
            "n_test": m["n_test"],
            "auc": m["auc"],
            "precision": m["precision"],
            "recall": m["recall"],
            "threshold": m["threshold"],
            "threshold_method": meta["threshold_method"],
            "oof_auc": meta["oof"].get("auc"),
            "ensemble_members": len(meta["ensemble"]),
            "training_set_sha256": meta["training_set_sha256"],
        }
    )


@multi_asset(
    group_name="filter",
    specs=[
        AssetSpec(
            "filtered_documents",
            deps=["documents", "language_ids", "quality_models"],
            description="Every document annotated (lang, quality, drop_reason, scrubbed text).",
        ),
        AssetSpec(
            "deduplicated_documents",
            deps=["filtered_documents"],
            description="Kept documents after exact, URL and MinHash de-duplication; dup clusters.",
        ),
    ],
)
def filter_documents(context: AssetExecutionContext, lake: LakeResource, beam: BeamRunnerResource):
    out = lake.stage_dir("filter")
    s = run_filter(
        lake.stage_dir("extract"),
        out,
        models_dir=lake.stage_dir("quality_models"),
        beam_args=beam.pipeline_args(),
    )
    context.log.info(f"filter: {s['rows_in']} in, {s['rows_kept']} kept")
    yield MaterializeResult(
        asset_key="filtered_documents",
        metadata={
            "annotated": MetadataValue.path(str(out / "annotated.parquet")),
            "rows_in": s["rows_in"],
            "funnel": MetadataValue.md(s["funnel_markdown"]),
            "funnel_plot": MetadataValue.path(s["funnel_plot"]),
            "unscored_languages": MetadataValue.json(s["unscored_languages"]),
            "quality_models": MetadataValue.json(s["quality_models"]),
        },
    )
    yield MaterializeResult(
        asset_key="deduplicated_documents",
        metadata={
            "documents": MetadataValue.path(str(out / "documents.parquet")),
            "dup_clusters": MetadataValue.path(str(out / "dup_clusters.parquet")),
            "rows_kept": s["rows_kept"],
            "dedup_rate": s["dedup_rate"],
            "clusters": s["clusters"],
            "tokens_kept": s["tokens_kept"],
        },
    )
