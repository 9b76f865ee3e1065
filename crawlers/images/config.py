"""Configuration of the image fetch: tokens, politeness, SSRF, caps; validated by pydantic."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from crawlers.crawl.config import CrawlConfig
from crawlers.images.faces import FaceConfig


class ImageFetchConfig(BaseModel):
    """Every knob of `fetch_images`; defaults are the polite and safe ones."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field("RefineryBot", min_length=1, description="crawl product token")
    training_agent: str = Field(
        "RefineryBot-Extended", min_length=1, description="training product token"
    )
    delay: float = Field(1.0, ge=0, description="minimum seconds between requests to one server")
    allow_private_networks: bool = Field(
        False, description="fetch loopback/private/link-local targets (tests, local mirrors only)"
    )
    max_images: int | None = Field(
        None,
        ge=0,
        description="image refs processed, in input order; later refs are recorded as "
        "fetch_error 'not-fetched: max_images' (None: all)",
    )
    max_bytes: int = Field(
        10 * 2**20, gt=0, description="byte cap per image; reading stops at the cap (too_large)"
    )
    max_pixels: int = Field(
        40_000_000,
        gt=0,
        description="pixel cap (width x height) read from the header before decoding "
        "(decompression_bomb); Pillow's own MAX_IMAGE_PIXELS applies as well",
    )
    min_side: int = Field(32, ge=1, description="shorter side below this is too_small")
    max_aspect: float = Field(
        3.0, ge=1.0, description="longer side / shorter side above this is bad_aspect"
    )
    timeout_s: float = Field(30.0, gt=0, description="total seconds per request")
    concurrency: int = Field(32, ge=1, description="images in flight at once (all servers)")
    per_host_connections: int = Field(
        1, ge=1, description="requests in flight at once to one server (politeness key)"
    )
    max_retries: int = Field(2, ge=0, description="retries after 429/5xx/network errors")
    max_retry_after_s: float | None = Field(
        None,
        ge=0,
        description="longest Retry-After (429/503) waited for before a retry; a longer one is "
        "not waited for: the row is http_status at once and a resumed run asks again, and the "
        "host's other images wait for the resume (None: timeout_s)",
    )
    robots_retries: int = Field(
        3, ge=0, description="re-fetches of a robots.txt that answered 5xx/429 or timed out"
    )
    commit_every: int = Field(
        64, ge=1, description="rows per resume-journal commit (a kill -9 redoes at most these)"
    )
    faces: FaceConfig = Field(
        default_factory=FaceConfig,
        description="face detection and blur before an image is stored (always on)",
    )

    @model_validator(mode="after")
    def _check(self) -> ImageFetchConfig:
        if self.agent.lower() == self.training_agent.lower():
            raise ValueError(
                "agent and training_agent must differ (one decides fetching, one training use)"
            )
        if self.max_retry_after_s is None:
            # an image is not held (nor its server's other images) for longer than a request
            self.max_retry_after_s = self.timeout_s
        return self

    @classmethod
    def from_any(cls, config: ImageFetchConfig | dict[str, Any] | None) -> ImageFetchConfig:
        """Accept an ImageFetchConfig, a dict (validated) or None (defaults)."""
        if isinstance(config, ImageFetchConfig):
            return config
        return cls.model_validate(config or {})

    def crawl_config(self) -> CrawlConfig:
        """The downloader's configuration: same tokens, politeness, SSRF guard and byte caps."""
        return CrawlConfig(
            agent=self.agent,
            training_agent=self.training_agent,
            delay=self.delay,
            allow_private_networks=self.allow_private_networks,
            concurrency=self.concurrency,
            per_host_connections=self.per_host_connections,
            total_timeout=self.timeout_s,
            connect_timeout=min(10.0, self.timeout_s),
            read_timeout=min(20.0, self.timeout_s),
            max_body_bytes=self.max_bytes,
            max_decompressed_bytes=self.max_bytes,
            max_retries=self.max_retries,
            max_retry_after=self.max_retry_after_s,
            robots_retries=self.robots_retries,
            wanted_types=list(IMAGE_TYPES),
        )


# Content types whose body is read; anything else is not_image without reading it. Octet-stream
# (and a missing type) is read and judged by its magic bytes.
IMAGE_TYPES = ("image/*", "application/octet-stream", "binary/octet-stream")
