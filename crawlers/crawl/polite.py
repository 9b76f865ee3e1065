"""`PoliteFetcher` is the `Downloader` (robots, SSRF guard, politeness, retry, caps as layers).

Kept as a name because `crawlers.crawl` exports it; new code uses `crawlers.crawl.downloader`.
"""

from __future__ import annotations

from crawlers.crawl.downloader import Downloader

PoliteFetcher = Downloader

__all__ = ["PoliteFetcher"]
