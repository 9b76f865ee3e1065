"""Stage entry point: write the sample web to the lake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines import lake


def run_sampleweb_write(out_dir: Path, *, seed: int = 0) -> dict[str, Any]:
    """Build the deterministic sample web and write its pages, labels and manifest to out_dir."""
    from crawlers.sampleweb import build_web, write_to_lake

    web = build_web(seed=seed)
    summary = dict(write_to_lake(web, Path(out_dir)))
    languages = sorted({lang for site in web.sites for lang in site.langs})
    summary.setdefault("sites", len(web.sites))
    summary.setdefault("pages", len(web.pages))
    summary["languages"] = languages
    lake.write_manifest(
        Path(out_dir),
        rows=summary["pages"],
        config={"seed": seed},
        extra={"sites": summary["sites"], "languages": languages},
    )
    return summary
