"""Stage entry point: crawl seeds into an output directory (WARC + pages.parquet + manifests)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipelines import lake


def read_seeds(path: Path) -> list[str]:
    """Seed URLs from a text file: one per line, blank lines and '#' comments ignored."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"seeds file {path} does not exist (--seeds expects one URL per line)"
        )
    seeds = [
        ln.strip()
        for ln in path.read_text().splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not seeds:
        raise ValueError(f"seeds file {path} lists no URLs (one per line; '#' starts a comment)")
    return seeds


def run_crawl(
    seeds: list[str],
    out_dir: Path,
    *,
    config: Any = None,
    resume: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Crawl `seeds` into `out_dir` (or resume it); `config` is a CrawlConfig or dict. Returns the summary."""
    from crawlers.crawl import CrawlConfig, crawl

    cfg = CrawlConfig.from_any(config)
    out_dir = Path(out_dir)
    summary = asyncio.run(crawl(seeds, out_dir, cfg, resume=resume, progress=progress))
    inputs = list(seeds[:50])
    conf = cfg.model_dump()
    lake.write_manifest(out_dir / "pages.parquet", rows=summary["pages"], inputs=inputs, config=conf,
                        extra={"summary": summary})  # fmt: skip
    lake.write_manifest(
        out_dir / "skipped.parquet", rows=summary["skipped"], inputs=inputs, config=conf
    )
    lake.write_manifest(out_dir / "warc", rows=summary["fetched"], inputs=inputs, config=conf,
                        extra={"format": "WARC/1.1, gzip member per record"})  # fmt: skip
    return summary
