"""Running the lake as a service: the consent re-check sensor and the recrawl schedules.

`consent_recheck` (a sensor) re-fetches robots.txt for every host with documents in the lake
(`crawlers.consent.recheck`, through the crawler's downloader: SSRF guard, politeness, RFC 9309)
and, when the consent ledger grew since the sensor last asked, requests a run of the mixture
assets, whose builds exclude the opted-out documents and record the ledger version honoured.
The sensor's cursor is the ledger version it last acted on.

`recrawl_shard_<k>` (one schedule per host-hash shard of `raw_pages`) runs `recrawl_job` for
partition k: due pages are re-fetched with conditional requests and the revisit policy of
`crawlers.crawl.recrawl`, and the shard's `raw_pages` partition is reported materialized.
"""

# No `from __future__ import annotations`: Dagster reads the op's Config and resource
# annotations at definition time.
from collections.abc import Sequence
from typing import Any

from dagster import (
    AssetKey,
    AssetMaterialization,
    Config,
    OpExecutionContext,
    RunRequest,
    ScheduleDefinition,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    StaticPartitionsDefinition,
    job,
    op,
    schedule,
    sensor,
)

from pipelines.resources import LakeResource
from pipelines.stages.crawl import CRAWL_SHARDS

MIXTURE_ASSETS = ("pretrain_mixture", "cpt_mixture", "long_context_mixture", "multimodal_mixture")
CONSENT_INTERVAL_S = 6 * 3600  # robots.txt is cached for at most 24 h (RFC 9309); check 4x/day
# The crawl's settings the downloader of a recheck or a recrawl shares with it.
DOWNLOADER_FIELDS = ("agent", "training_agent", "delay", "allow_private_networks")


def downloader_config(raw_pages_config: dict[str, Any] | None) -> dict[str, Any]:
    """The downloader settings (tokens, politeness delay, SSRF policy) of the crawl's asset
    config, e.g. its $REFINERY_ASSET_CONFIG defaults, so a recheck and a recrawl fetch as the
    crawl did; unset fields (and an empty delay) keep CrawlConfig's defaults."""
    values = dict(raw_pages_config or {})
    return {k: values[k] for k in DOWNLOADER_FIELDS if values.get(k) is not None}


def consent_recheck_sensor(
    crawl_config: dict[str, Any] | None = None,
    mixtures: Sequence[str] = MIXTURE_ASSETS,
    *,
    name: str = "consent_recheck",
    minimum_interval_seconds: int = CONSENT_INTERVAL_S,
) -> SensorDefinition:
    """The sensor: recheck consent; when the ledger grew, request the `mixtures` assets.

    `crawl_config` (CrawlConfig fields) is what the downloader fetches robots.txt with: the
    training token, SSRF policy (`allow_private_networks`), politeness and timeouts.
    """
    keys = [AssetKey(m) for m in mixtures]

    @sensor(
        name=name,
        asset_selection=keys,
        minimum_interval_seconds=minimum_interval_seconds,
        description="Re-fetch robots.txt for the lake's hosts; a new opt-out in the consent "
        "ledger requests the mixtures again (they exclude those documents).",
    )
    def consent_recheck(context: SensorEvaluationContext, lake: LakeResource):
        from crawlers.consent import recheck

        result = recheck(lake.path(), crawl_config)
        figures = result.as_dict()
        context.log.info(f"consent recheck: {figures}")
        version = result.version.get("sha256")
        if not version or version == context.cursor:
            return SkipReason(
                f"consent ledger unchanged ({result.hosts} hosts, {result.documents} documents, "
                f"{len(result.unreachable)} unreachable)"
            )
        context.update_cursor(version)
        return RunRequest(
            run_key=f"consent-{version[:16]}",
            asset_selection=keys,
            tags={"refinery/consent_ledger": version, "refinery/reason": "consent-recheck"},
        )

    return consent_recheck


# --- recrawl: one schedule per host-hash shard of raw_pages ---------------------------------

RECRAWL_CRON = "{minute} */6 * * *"  # every 6 hours; shards staggered by 15 minutes


RECRAWL_PARTITIONS = StaticPartitionsDefinition([str(k) for k in range(CRAWL_SHARDS)])


class RecrawlConfig(Config):
    """How a shard is revisited (CrawlConfig fields the downloader uses, and the policy)."""

    agent: str = "RefineryBot"
    training_agent: str = "RefineryBot-Extended"
    delay: float = 1.0
    allow_private_networks: bool = False
    due_only: bool = True
    initial_s: float = 86400.0
    min_s: float = 3600.0
    max_s: float = 30 * 86400.0


@op(name="recrawl_shard")
def recrawl_shard(context: OpExecutionContext, config: RecrawlConfig, lake: LakeResource) -> None:
    """Revisit the due pages of one raw_pages shard with conditional requests."""
    from crawlers.crawl.recrawl import RevisitPolicy, run_recrawl

    shard = context.partition_key
    out = lake.stage_dir("crawl") / f"shard={shard}"
    crawl_config = {
        "agent": config.agent,
        "training_agent": config.training_agent,
        "delay": config.delay,
        "allow_private_networks": config.allow_private_networks,
    }
    policy = RevisitPolicy(initial_s=config.initial_s, min_s=config.min_s, max_s=config.max_s)
    summary = run_recrawl(out, crawl_config, policy=policy, due_only=config.due_only)
    context.log.info(f"recrawl shard {shard}: {summary}")
    context.log_event(
        AssetMaterialization(
            asset_key="raw_pages",
            partition=shard,
            description=f"recrawl of {out}",
            metadata={"path": str(out), **summary},
        )
    )


@job(name="recrawl_job", partitions_def=RECRAWL_PARTITIONS)
def recrawl_job():
    """Recrawl one host-hash shard of raw_pages (partition = shard)."""
    recrawl_shard()


def _recrawl_schedule(shard: str, config: dict[str, Any]) -> ScheduleDefinition:
    @schedule(
        name=f"recrawl_shard_{shard}",
        job=recrawl_job,
        cron_schedule=RECRAWL_CRON.format(minute=15 * int(shard) % 60),
        description=f"Revisit the due pages of raw_pages shard {shard} (conditional requests).",
    )
    def recrawl_schedule(context):
        run_config = {"ops": {"recrawl_shard": {"config": config}}} if config else None
        return RunRequest(partition_key=shard, run_config=run_config)

    return recrawl_schedule


def recrawl_schedules(config: dict[str, Any] | None = None) -> list[ScheduleDefinition]:
    """One schedule per host-hash shard of raw_pages; `config` (RecrawlConfig fields, e.g.
    `downloader_config(...)`) goes into each run's config."""
    return [
        _recrawl_schedule(k, dict(config or {})) for k in RECRAWL_PARTITIONS.get_partition_keys()
    ]
