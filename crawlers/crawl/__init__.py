"""The polite, robots-aware crawler: fetcher, politeness, SSRF guard, frontier, WARC output.

`crawl(seeds, out_dir, config)` runs a crawl; `Fetcher` is the reusable fetch layer (the image
stage fetches through it with the same safety rules); `Downloader` adds robots.txt and per-host
politeness on top for one-off fetches.
"""

from crawlers.crawl.config import CrawlConfig, CrawlError, shard_of
from crawlers.crawl.downloader import Downloader
from crawlers.crawl.engine import Crawler, crawl
from crawlers.crawl.fetcher import Fetcher, FetchResult

__all__ = [
    "CrawlConfig",
    "CrawlError",
    "Crawler",
    "Downloader",
    "FetchResult",
    "Fetcher",
    "crawl",
    "shard_of",
]
