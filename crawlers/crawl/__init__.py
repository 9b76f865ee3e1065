"""The polite, robots-aware crawler: fetcher, politeness, SSRF guard, frontier, WARC output.

`crawl(seeds, out_dir, config)` runs a crawl; `Fetcher` is the reusable fetch layer (the image
stage fetches through it with the same safety rules); `PoliteFetcher` adds robots.txt and
per-host politeness on top for one-off fetches.
"""

from crawlers.crawl.config import CrawlConfig, shard_of
from crawlers.crawl.engine import Crawler, CrawlError, crawl
from crawlers.crawl.fetcher import Fetcher, FetchResult
from crawlers.crawl.polite import PoliteFetcher

__all__ = [
    "CrawlConfig",
    "CrawlError",
    "Crawler",
    "FetchResult",
    "Fetcher",
    "PoliteFetcher",
    "crawl",
    "shard_of",
]
