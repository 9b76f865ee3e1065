"""Assets `rendered_pages` (headless rendering) and `documents` (Beam extraction) over all crawl shards."""

from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset

from pipelines.resources import BeamRunnerResource, BrowserResource, LakeResource, TeacherResource
from pipelines.stages.extract import run_extract, run_render


class RenderedPagesConfig(Config):
    """Which pages to render: auto (evidence of script-made content), never or always."""

    mode: str = "auto"
    block_media: bool = True


class DocumentsConfig(Config):
    """trafilatura mode, and the hosts whose pages go to the teacher (if one is configured)."""

    favor: str = "balanced"
    llm_hosts: list[str] = []


@asset(
    group_name="extract",
    deps=["raw_pages"],
    description="Final DOM of pages that need a browser (rendered.parquet), with render decisions.",
)
def rendered_pages(
    context: AssetExecutionContext,
    config: RenderedPagesConfig,
    lake: LakeResource,
    browser: BrowserResource,
) -> MaterializeResult:
    summary = run_render(
        lake.stage_dir("crawl"),
        lake.stage_dir("rendered"),
        config.mode,
        pages_in_flight=browser.pages_in_flight,
        page_timeout_s=browser.page_timeout_s,
        chromium=browser.executable_path or None,
        block_media=config.block_media,
    )
    context.log.info(f"render: {summary}")
    frac = summary["rendered"] / summary["candidates"] if summary["candidates"] else 0.0
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(summary["path"]),
            "candidates": summary["candidates"],
            "rendered": summary["rendered"],
            "rendered_fraction": round(frac, 4),
            "render_errors": summary["render_errors"],
            "blocked_requests": summary["blocked_requests"],
            "pages_per_s": summary["pages_per_s"],
        }
    )


@asset(
    group_name="extract",
    deps=["raw_pages", rendered_pages],
    description="Main-content documents, image references, tables, interleaved form and rejects.",
)
def documents(
    context: AssetExecutionContext,
    config: DocumentsConfig,
    lake: LakeResource,
    beam: BeamRunnerResource,
    teacher: TeacherResource,
) -> MaterializeResult:
    llm = None
    if teacher.base_url and config.llm_hosts:
        llm = {"base_url": teacher.base_url, "model": teacher.model, "api_key": teacher.api_key(),
               "hosts": list(config.llm_hosts)}  # fmt: skip
    summary = run_extract(
        lake.stage_dir("crawl"),
        lake.stage_dir("extract"),
        rendered_dir=lake.stage_dir("rendered"),
        pipeline_args=beam.pipeline_args(),
        favor=config.favor,
        teacher=llm,
    )
    context.log.info(f"extract: {summary}")
    rejects = summary["rejects_by_reason"]
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(summary["out_dir"]),
            "pages": summary["pages"],
            "documents": summary["documents"],
            "rejects": summary["rejects"],
            "image_refs": summary["image_refs"],
            "tables": summary["tables"],
            "rendered_fraction": summary["rendered_fraction"],
            "docs_per_s": summary["docs_per_s"],
            "rejects_by_reason": MetadataValue.json(rejects),
            "rejects_table": MetadataValue.md(
                "| reason | rows |\n|---|---|\n"
                + "\n".join(f"| {k} | {v} |" for k, v in rejects.items())
            ),
        }
    )
