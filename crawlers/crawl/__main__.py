"""`python -m crawlers.crawl SEEDS OUT [--resume] [--config JSON]`: a crawl without the CLI layer
(used by tests that kill the crawler process and by scale-out workers)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from crawlers.crawl import crawl


def main() -> None:
    """Parse arguments and run the crawl."""
    p = argparse.ArgumentParser(prog="python -m crawlers.crawl")
    p.add_argument("seeds", type=Path, help="file with one seed URL per line")
    p.add_argument("out", type=Path)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--config", default="{}", help="CrawlConfig fields as JSON")
    a = p.parse_args()
    seeds = [
        s.strip() for s in a.seeds.read_text().splitlines() if s.strip() and not s.startswith("#")
    ]
    summary = asyncio.run(crawl(seeds, a.out, json.loads(a.config), resume=a.resume))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
