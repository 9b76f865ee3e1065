"""The shared sample-web lake: the sample web (seed 0) served, crawled and extracted once per
test session, each stage on first use.

Every module that reads the sample web's stage outputs takes the session fixture `sample_lake`
(tests/conftest.py) instead of serving and crawling the web for itself. The web stays served for
the whole session, so a module can fetch from it again (images, a sharded re-crawl). Under
pytest-xdist each worker is a session and builds its own lake on first use: the lake's URLs carry
the port of its worker's server, so it cannot be shared between processes.

A module that needs its own variant serves its own web and says why in its fixture's docstring:
one that edits the served web or its robots.txt (consent, recrawl), one that kills a run, one
that measures memory, one that crawls a subset under the CLI.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

# Loopback, no politeness delay (robots Crawl-delay still applies), no robots retries: the sample
# web's robots answers are all final.
CRAWL_CONFIG = {
    "delay": 0.0,
    "allow_private_networks": True,
    "robots_retries": 0,
    "concurrency": 16,
}
FIRST_OCTET = 120  # sites bind 127.0.0.120 .. 127.0.0.137, each on an ephemeral port


@dataclass
class Stage:
    """One stage's output directory and the summary its run returned."""

    dir: Path
    summary: Any


@dataclass
class SampleLake:
    """The served sample web and its stage outputs under `root`, each built on first use."""

    served: Any  # sampleweb.server.ServedWeb
    root: Path

    @property
    def web(self):
        return self.served.web

    def labels(self) -> list[dict]:
        """The served web's ground truth, one row per page (`ServedWeb.labels_table`)."""
        return self.served.labels_table().to_pylist()

    @cached_property
    def crawl(self) -> Stage:
        """One unsharded crawl of all 18 hosts (`crawlers.crawl.crawl`)."""
        from crawlers.crawl import crawl

        out = self.root / "crawl"
        summary = asyncio.run(crawl(self.served.seeds(), out, CRAWL_CONFIG))
        return Stage(out, summary)

    @cached_property
    def extract(self) -> Stage:
        """The crawl extracted with `--render auto` (Chromium renders the pages that need it)."""
        from pipelines.stages.extract import run_extract

        out = self.root / "extract"
        summary = run_extract(self.crawl.dir, out, "auto", pages_in_flight=4)
        return Stage(out, summary)
