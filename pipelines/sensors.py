"""Running the lake as a service: the consent re-check sensor and the recrawl schedules.

`consent_recheck` (a sensor) re-fetches robots.txt for every host with documents in the lake
(`crawlers.consent.recheck`, through the crawler's downloader: SSRF guard, politeness, RFC 9309)
and requests a run of the mixture assets whose manifests lag the lake's current ledger version
(their builds exclude the opted-out documents and record the version honoured). When the
ledger grew, every mixture that does not record the new version is requested; on later ticks
of the same version, the built mixtures that still lag (and, after a failed or canceled run,
the never-built ones too) are requested again, one request per tick, none while a requested run
of that version is queued or in progress. The sensor's cursor (JSON) is the ledger version it
last acted on and how many requests it made for it.

`recrawl_shard_<k>` (one schedule per host-hash shard of `raw_pages`) runs `recrawl_job` for
partition k: due pages are re-fetched with conditional requests and the revisit policy of
`crawlers.crawl.recrawl`, and the shard's `raw_pages` partition is reported materialized.
"""

# No `from __future__ import annotations`: Dagster reads the op's Config and resource
# annotations at definition time.
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dagster import (
    AssetKey,
    AssetMaterialization,
    Config,
    DagsterRunStatus,
    OpExecutionContext,
    RunRequest,
    RunsFilter,
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
CONSENT_TAG = "refinery/consent_ledger"  # a requested run's tag: the ledger version it honours
PENDING = (
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
)
ENDED_BADLY = (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)


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
    """The sensor: recheck consent; request the `mixtures` assets whose manifests lag the
    lake's consent ledger (all that do when it grew; then the built ones still lagging, retried
    once per tick while no run of that version is pending; see the module docstring).

    `crawl_config` (CrawlConfig fields) is what the downloader fetches robots.txt with: the
    training token, SSRF policy (`allow_private_networks`), politeness and timeouts.
    """
    keys = [AssetKey(m) for m in mixtures]

    @sensor(
        name=name,
        asset_selection=keys,
        minimum_interval_seconds=minimum_interval_seconds,
        description="Re-fetch robots.txt for the lake's hosts; a new opt-out in the consent "
        "ledger requests the mixtures again (they exclude those documents), and a mixture whose "
        "manifest still lags the ledger is requested on later ticks until it honours it.",
    )
    def consent_recheck(context: SensorEvaluationContext, lake: LakeResource):
        from crawlers.consent import recheck

        result = recheck(lake.path(), crawl_config)
        figures = result.as_dict()
        context.log.info(f"consent recheck: {figures}")
        version = result.version.get("sha256")
        seen = (
            f"{result.hosts} hosts, {result.documents} documents, "
            f"{len(result.unreachable)} unreachable"
        )
        if not version:
            return SkipReason(f"consent ledger empty ({seen})")
        cursor = _cursor(context.cursor)
        honoured = {m: honoured_version(lake.path(), m) for m in mixtures}
        lagging = [m for m, v in honoured.items() if v != version]
        if cursor["version"] != version:  # the ledger grew: every mixture not recording it
            context.update_cursor(json.dumps({"version": version, "attempt": 0}))
            if not lagging:
                return SkipReason(
                    f"consent ledger {version[:16]}: every mixture honours it ({seen})"
                )
            return _request(version, lagging, 0)
        runs = _runs_of(context, version)
        last = runs[0] if runs else None
        if last is not None and last.status in PENDING:
            return SkipReason(
                f"consent ledger {version[:16]}: run {last.run_id} ({last.status.value}) is "
                f"building {', '.join(lagging) or 'the mixtures'}; not requested again ({seen})"
            )
        # A mixture never built holds no opted-out document: requested again only after a run
        # of this version failed (a built one that lags is requested until it honours it).
        failed = last is not None and last.status in ENDED_BADLY
        retry = [m for m in lagging if honoured[m] is not NOT_BUILT or failed]
        if not retry:
            unbuilt = f"; not built (requested again after a failed run): {', '.join(lagging)}"
            return SkipReason(
                f"consent ledger unchanged ({version[:16]}; {seen}); no built mixture lags it"
                + (unbuilt if lagging else "")
            )
        attempt = cursor["attempt"] + 1
        context.update_cursor(json.dumps({"version": version, "attempt": attempt}))
        context.log.info(f"consent ledger {version[:16]}: {', '.join(retry)} still lag; retry")
        return _request(version, retry, attempt)

    def _request(version: str, names: list[str], attempt: int) -> RunRequest:
        # The first request of a version keeps the key `consent-<version>`; each retry gets its
        # own (Dagster skips a run key it has seen), naming the attempt and the mixtures.
        key = f"consent-{version[:16]}"
        if attempt:
            key += f"-retry{attempt}-{'+'.join(names)}"
        return RunRequest(
            run_key=key,
            asset_selection=[AssetKey(m) for m in names],
            tags={CONSENT_TAG: version, "refinery/reason": "consent-recheck"},
        )

    return consent_recheck


def _runs_of(context: SensorEvaluationContext, version: str) -> list:
    """The newest run requested for ledger `version` (one tag query), none without an instance."""
    from dagster import DagsterInvariantViolationError

    try:
        instance = context.instance
    except DagsterInvariantViolationError:  # evaluated outside an instance (a test's context)
        return []
    return list(instance.get_runs(RunsFilter(tags={CONSENT_TAG: version}), limit=1))


NOT_BUILT = object()  # honoured_version of a mixture with no manifest


def _cursor(raw: str | None) -> dict[str, Any]:
    """The sensor's cursor: {"version", "attempt"}; an older cursor is the bare version."""
    if not raw:
        return {"version": None, "attempt": 0}
    try:
        loaded = json.loads(raw)
    except ValueError:
        loaded = None
    if isinstance(loaded, dict):
        return {"version": loaded.get("version"), "attempt": int(loaded.get("attempt") or 0)}
    return {"version": raw, "attempt": 0}


def mixture_dir(root: Path, asset: str) -> Path:
    """Where the lake's `asset` mixture is: its Dagster handle's path, else its standard place."""
    from common import lake as lake_mod
    from pipelines.resources import HANDLES_DIR

    handle = Path(root) / HANDLES_DIR / f"{asset}.json"
    try:
        stored = Path(json.loads(handle.read_text())["path"])
    except (OSError, ValueError, KeyError, TypeError):
        return Path(root) / lake_mod.DATASETS.get(asset, asset)
    # a handle's path is relative to the lake (LakeIOManager.read_handle), or absolute outside it
    return stored if stored.is_absolute() else Path(root) / stored


def honoured_version(root: Path, asset: str) -> Any:
    """The sha256 of the lake's consent ledger that the built `asset` mixture honoured (its
    manifest's `consent_ledgers` entry for this lake, else an older manifest's `consent_ledger`);
    None when it honoured none or its manifest is unreadable, NOT_BUILT with no manifest."""
    from training.mixture.sources import RUN_LAKE

    path = mixture_dir(root, asset) / "manifest.json"
    if not path.exists():
        return NOT_BUILT
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # unreadable: it proves nothing, a rebuild rewrites it
    if not isinstance(manifest, dict):
        return None
    entries = manifest.get("consent_ledgers")
    if isinstance(entries, list):
        here = {RUN_LAKE, str(Path(root).resolve())}
        for e in entries:
            if isinstance(e, dict) and e.get("lake") in here:
                return e.get("sha256")
        return None
    combined = manifest.get("consent_ledger")
    return combined.get("sha256") if isinstance(combined, dict) else None


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
