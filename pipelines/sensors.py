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

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dagster import (
    AssetKey,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from pipelines.resources import LakeResource

MIXTURE_ASSETS = ("pretrain_mixture", "cpt_mixture", "long_context_mixture", "multimodal_mixture")
CONSENT_INTERVAL_S = 6 * 3600  # robots.txt is cached for at most 24 h (RFC 9309); check 4x/day


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
