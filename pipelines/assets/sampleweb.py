"""The `sample_web` asset: the bundled sample web's pages and ground-truth labels, in the lake."""

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from pipelines.resources import LakeResource
from pipelines.stages.sampleweb import run_sampleweb_write


@asset(
    group_name="crawl",
    description="The bundled sample web: pages, images, robots.txt variants and labels.",
)
def sample_web(context: AssetExecutionContext, lake: LakeResource) -> MaterializeResult:
    out = lake.stage_dir("sampleweb")
    summary = run_sampleweb_write(out)
    context.log.info(f"sample web written to {out}: {summary}")
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(str(out)),
            "sites": summary["sites"],
            "pages": summary["content_pages"],
            "responses": summary["pages"],
            "images": summary["images"],
            "languages": MetadataValue.text(", ".join(summary["languages"])),
            "labels": MetadataValue.path(str(out / "labels.parquet")),
        }
    )
