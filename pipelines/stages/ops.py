"""Running the lake as a service, from the CLI: `refinery consent recheck` (what the
`consent_recheck` sensor runs) and `refinery recrawl` (what the `recrawl_shard_<k>` schedules
run). Neither is an asset: a recheck appends to the consent ledger the mixtures read; a recrawl
updates a crawl shard in place (`pipelines/sensors.py` reports it as a `raw_pages`
materialization)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.stage import Lake, Params, Stage, Summary, param


class DownloaderOptions(Params):
    """The crawl's downloader settings a recheck or a recrawl fetches with."""

    agent: str | None = param(None, help="Crawl product token (default: the crawl's).")
    training_agent: str | None = param(
        None, help="Training opt-out product token (default: the crawl's)."
    )
    delay: float | None = param(None, min=0, help="Seconds between requests to one server.")
    allow_private_networks: bool = param(
        False, help="Allow loopback/private addresses (the sample web on 127.0.0.x)."
    )

    def downloader(self) -> dict[str, Any]:
        fields = ("agent", "training_agent", "delay", "allow_private_networks")
        return {k: getattr(self, k) for k in fields if getattr(self, k) is not None}


class RecheckParams(DownloaderOptions):
    pass


class RecheckSummary(Summary):
    hosts: int
    documents: int
    images: int  # image URLs (`src` of the images stage's outputs) asked about
    changed: int
    opted_out: int
    re_allowed: int
    unreachable: dict[str, str]
    file: str | None
    ledger_version: str | None


def consent_recheck(p: RecheckParams, lake: Lake) -> RecheckSummary:
    """Re-fetch robots.txt for every host with documents in the lake; append training-permission
    changes to the consent ledger (<lake>/consent/ledger/), which the next mixture build honours."""
    from crawlers.consent import recheck

    result = recheck(lake.root, p.downloader())
    return RecheckSummary(**result.as_dict())


class RecrawlParams(DownloaderOptions):
    crawl: Path | None = param(
        None, help="A crawl output directory (default: every lake crawl shard)."
    )
    all_pages: bool = param(
        False, flag="--all/--due", help="Revisit every page, not only those due."
    )


class RecrawlSummary(Summary):
    shards: dict[str, dict[str, Any]]


def recrawl(p: RecrawlParams, lake: Lake) -> RecrawlSummary:
    """Revisit crawled pages with conditional requests (ETag / Last-Modified; 304 = unchanged)
    and the revisit policy by change rate (interval doubles when unchanged, halves when changed)."""
    from crawlers.crawl.recrawl import run_recrawl

    dirs = [Path(p.crawl)] if p.crawl else sorted((lake.root / "crawl").glob("shard=*"))
    if not dirs:
        raise FileNotFoundError(
            f"{lake.root / 'crawl'}: no crawl shards to revisit; crawl first or pass --crawl DIR"
        )
    shards = {}
    for out in dirs:
        summary = run_recrawl(out, p.downloader(), due_only=not p.all_pages)
        shards[out.name] = summary
        lake.log(f"recrawl {out}: {summary}")
    return RecrawlSummary(shards=shards)


CONSENT_RECHECK = Stage(
    name="consent recheck",
    params=RecheckParams,
    run=consent_recheck,
    description=consent_recheck.__doc__,
)
RECRAWL = Stage(name="recrawl", params=RecrawlParams, run=recrawl, description=recrawl.__doc__)
