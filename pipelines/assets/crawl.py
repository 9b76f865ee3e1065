"""Asset `raw_pages`: the crawl, partitioned into host-hash shards (no host is split across shards)."""

import shutil

from dagster import (
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    asset,
)

from pipelines.resources import LakeResource
from pipelines.stages.crawl import run_crawl

CRAWL_SHARDS = 4
crawl_shards = StaticPartitionsDefinition([str(k) for k in range(CRAWL_SHARDS)])


class RawPagesConfig(Config):
    """Seeds (empty: the sample web's home pages, served for the crawl) and crawl limits."""

    seeds: list[str] = []
    max_pages: int | None = None
    delay: float = 0.05
    concurrency: int = 64
    resume: bool = False
    extra: dict = {}  # any other CrawlConfig field


@asset(
    group_name="crawl",
    deps=["sample_web"],
    partitions_def=crawl_shards,
    description="WARC files and pages.parquet of one host-hash shard of the crawl (lake crawl/shard=<k>/).",
)
def raw_pages(
    context: AssetExecutionContext, config: RawPagesConfig, lake: LakeResource
) -> MaterializeResult:
    shard = int(context.partition_key)
    out = lake.stage_dir("crawl") / f"shard={shard}"
    if out.exists() and not config.resume:
        shutil.rmtree(out)  # a re-materialisation is a fresh crawl unless resume is asked for
    crawl_config = {**config.extra, "max_pages": config.max_pages, "delay": config.delay,
                    "concurrency": config.concurrency, "shard": shard, "shards": CRAWL_SHARDS}  # fmt: skip
    if config.seeds:
        summary = run_crawl(list(config.seeds), out, config=crawl_config, resume=config.resume)
    else:
        from crawlers.sampleweb import build_web, serve

        # The sample web lives on loopback, so this crawl must lift the SSRF guard.
        crawl_config["allow_private_networks"] = True
        with serve(build_web(0)) as sw:
            summary = run_crawl(sw.seeds(), out, config=crawl_config, resume=config.resume)
    context.log.info(f"crawl shard {shard}: {summary}")
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(str(out)),
            "pages": summary["pages"],
            "pages_fetched": summary["fetched"],
            "robots_denials": summary["denied"],
            "skipped": summary["skipped"],
            "errors": summary["errors"],
            "bytes": summary["bytes"],
            "pages_per_s": summary["pages_per_s"],
            "statuses": MetadataValue.json(summary["statuses"]),
        }
    )
