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


SAMPLE_WEB_DELAY_S = 0.05  # the bundled sample web is served on loopback for this run only


class RawPagesConfig(Config):
    """Seeds (empty: the sample web's home pages, served for the crawl) and crawl limits.

    `delay` defaults to the CLI's polite 1 s for real seeds (0.05 s only for the bundled sample
    web). Links to other partitions' hosts are routed through `crawl/outbox/to-<k>/`; a partition
    run with `resume: true` picks up what the others sent it since its last run.
    """

    seeds: list[str] = []
    max_pages: int | None = None
    delay: float | None = None  # None: 1.0 s (CrawlConfig's default) for seeds, 0.05 s sample web
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
    crawl_config = {**config.extra, "max_pages": config.max_pages,
                    "concurrency": config.concurrency, "shard": shard, "shards": CRAWL_SHARDS}  # fmt: skip
    if config.delay is not None:
        crawl_config["delay"] = config.delay
    # resume on a partition never crawled before starts it (a round over all partitions with
    # resume: true is how each picks up the links the others routed to it)
    resume = config.resume and (out / "frontier.sqlite").exists()
    if config.seeds:
        summary = run_crawl(list(config.seeds), out, config=crawl_config, resume=resume)
    else:
        from crawlers.sampleweb import build_web, serve

        # The sample web lives on loopback, so this crawl must lift the SSRF guard.
        crawl_config["allow_private_networks"] = True
        crawl_config.setdefault("delay", SAMPLE_WEB_DELAY_S)
        with serve(build_web(0)) as sw:
            summary = run_crawl(sw.seeds(), out, config=crawl_config, resume=resume)
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
