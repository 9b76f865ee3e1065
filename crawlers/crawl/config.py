"""Crawl configuration: data validated by pydantic, errors name the field."""

from __future__ import annotations

import hashlib
import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# A product token a robots.txt group can name: a `User-agent:` line is read as its leading run of
# letters, '-' and '_' (RFC 9309 2.2.1; crawlers.robots_match.robots_line_token), so a token with
# a digit, a dot or a space is never matched by its own group, only by '*'.
PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]+")
DEFAULT_TARGET_LANGUAGES = ["en", "de", "fr", "es", "ja", "zh", "it", "pt", "nl", "pl", "ru", "ko"]


class CrawlConfig(BaseModel):
    """Every knob of a crawl; defaults are the polite ones."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field("RefineryBot", min_length=1, description="crawl product token")
    training_agent: str = Field(
        "RefineryBot-Extended", min_length=1, description="training product token"
    )
    user_agent: str = Field(
        "Mozilla/5.0 (compatible; {agent}/0.1; +https://example.invalid/bot)",
        description="User-Agent header; {agent} is replaced by the crawl token",
    )
    max_pages: int | None = Field(
        None, ge=0, description="content pages to fetch (robots/sitemaps excluded)"
    )
    delay: float = Field(1.0, ge=0, description="minimum seconds between requests to one host")
    max_crawl_delay: float = Field(10.0, ge=0, description="cap on robots.txt Crawl-delay")
    concurrency: int = Field(64, ge=1, description="requests in flight at once (all servers)")
    per_host_connections: int = Field(
        1, ge=1, description="requests in flight at once to one server (politeness key)"
    )
    politeness_key: Literal["ip", "domain", "host"] = Field(
        "ip",
        description="what one politeness slot covers: the resolved IP address (default), the "
        "registered domain, or host:port",
    )
    allow_private_networks: bool = False
    connect_timeout: float = Field(10.0, gt=0)
    read_timeout: float = Field(20.0, gt=0)
    total_timeout: float = Field(60.0, gt=0)
    max_body_bytes: int = Field(5 * 2**20, gt=0)
    max_decompressed_bytes: int = Field(20 * 2**20, gt=0)
    max_redirects: int = Field(
        5, ge=0, description="redirect chain length per page (followed via the frontier)"
    )
    robots_max_redirects: int = Field(5, ge=0)
    robots_max_age_s: float = Field(86400.0, gt=0, le=86400)
    robots_retries: int | None = Field(
        None,
        ge=0,
        description="re-fetches of a robots.txt that answered 5xx/429 or timed out, with backoff; "
        "its URLs stay queued meanwhile while other hosts proceed (None: as many as "
        "robots_give_up_s allows; 0: the first failure is final, disallow all)",
    )
    robots_retry_base_s: float = Field(
        1.0, ge=0, description="first robots.txt re-fetch wait; doubles per failure"
    )
    robots_retry_max_s: float = Field(
        300.0, ge=0, description="cap on one robots.txt re-fetch wait"
    )
    robots_give_up_s: float = Field(
        3600.0,
        ge=0,
        description="after this long unreachable (RFC 9309: disallow all while it lasts; or "
        "robots_retries failures) robots.txt counts as disallow-all for the run, its URLs are "
        "denied and the origin is reported (summary robots_gave_up)",
    )
    wanted_types: list[str] = ["text/html", "application/xhtml+xml"]
    max_retries: int = Field(2, ge=0, description="retries of a page after 429/5xx/network errors")
    backoff_base: float = Field(1.0, ge=0)
    backoff_max: float = Field(120.0, ge=0)
    max_retry_after: float = Field(300.0, ge=0)
    breaker_threshold: int = Field(5, ge=1)
    breaker_cooldown: float = Field(30.0, ge=0)
    breaker_max_trips: int = Field(3, ge=1)
    seed: int = 0
    max_depth: int = Field(12, ge=0)
    max_pages_per_host: int | None = Field(None, ge=1)
    max_url_length: int = Field(2048, ge=64)
    max_repeated_segments: int = Field(2, ge=1)
    max_urls_per_pattern: int = Field(100, ge=1)
    max_calendar_urls: int = Field(
        12, ge=1, description="cap on date-only URLs per pattern (calendar traps)"
    )
    target_languages: list[str] = DEFAULT_TARGET_LANGUAGES
    host_languages_path: str | None = None
    topic_max_share: float = Field(0.4, gt=0, le=1)
    use_sitemaps: bool = True
    max_sitemap_urls: int = Field(
        50000, ge=0, description="page URLs read from one sitemap document (the rest: counted)"
    )
    max_sitemap_depth: int = Field(3, ge=0)
    max_sitemaps_per_host: int = Field(
        100,
        ge=0,
        description="sitemap documents (robots.txt's and index children) fetched per host; "
        "the rest are recorded in skipped.parquet as sitemap-cap",
    )
    max_sitemap_urls_per_host: int = Field(
        50000,
        ge=0,
        description="page URLs queued from one host's sitemaps; the rest are recorded in "
        "skipped.parquet as sitemap-cap (a link to one still queues it)",
    )
    sitemap_queue_factor: float = Field(
        4.0,
        gt=0,
        description="with max_pages: a host's sitemaps are not expanded while its queue holds "
        "more than this many times the pages max_pages leaves (sitemaps wait for --resume; the "
        "rest of a sitemap being read is recorded as sitemap-cap)",
    )
    follow_external: bool = True
    shard: int = Field(0, ge=0)
    shards: int = Field(1, ge=1)
    shard_root: str | None = Field(
        None,
        description="directory shared by all shards for cross-shard links (outbox/to-<j>/); "
        "default: the parent of an output directory named shard=<k>, else the output directory",
    )
    blocklist: str | None = Field(
        None,
        description="directory of URL blocklists in the UT1 layout (<category>/domains, "
        "<category>/urls): a listed URL is never fetched, it is recorded as skipped with the "
        "category (common.urlblock; read at the start of every run)",
    )
    warc_prefix: str = "refinery"
    warc_max_bytes: int = Field(2**30, gt=0)
    fsync: bool = False
    checkpoint_every: int = Field(
        1000, ge=1, description="append a checkpoint part (checkpoints/) every N pages"
    )

    @field_validator("agent", "training_agent")
    @classmethod
    def _product_token(cls, value: str, info: Any) -> str:
        if not PRODUCT_TOKEN.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a product token a robots.txt group can name (only letters, "
                "'-' and '_', RFC 9309): publishers could never address it; use e.g. "
                f"{cls.model_fields[info.field_name].default!r}"
            )
        return value

    @model_validator(mode="after")
    def _check(self) -> CrawlConfig:
        if self.shard >= self.shards:
            raise ValueError(f"shard={self.shard} must be < shards={self.shards}")
        if self.agent.lower() == self.training_agent.lower():
            raise ValueError(
                "agent and training_agent must differ (one decides fetching, one training use)"
            )
        return self

    def user_agent_header(self) -> str:
        """The User-Agent string sent with every request (contains the crawl token)."""
        ua = self.user_agent.format(agent=self.agent)
        if self.agent.lower() not in ua.lower():
            raise ValueError(f"user_agent {ua!r} must contain the crawl token {self.agent!r}")
        return ua

    @classmethod
    def from_any(cls, config: CrawlConfig | dict[str, Any] | None) -> CrawlConfig:
        """Accept a CrawlConfig, a dict (validated) or None (defaults)."""
        if isinstance(config, CrawlConfig):
            return config
        return cls.model_validate(config or {})


def shard_of(host: str, shards: int) -> int:
    """Stable shard of a host (no host is ever split across shards)."""
    # The port is dropped so a host keeps its shard when served on another port.
    name = urlsplit("//" + host).hostname or host
    digest = hashlib.sha1(name.lower().encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards


class CrawlError(RuntimeError):
    """A crawl that cannot start (bad output directory, bad seeds, unreadable inbox part)."""
