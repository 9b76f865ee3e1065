"""Stage entry point: write the sample web to the lake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines import lake


def run_sampleweb_write(out_dir: Path | None = None, *, seed: int = 0) -> dict[str, Any]:
    """Build the deterministic sample web; write pages, labels.parquet, sites.json and manifests."""
    from crawlers.sampleweb import build_web, write_to_lake

    out = Path(out_dir) if out_dir else lake.stage_dir("sampleweb")
    summary = dict(write_to_lake(build_web(seed), out))
    config = {"seed": seed}
    lake.write_manifest(out / "labels.parquet", rows=summary["pages"], config=config)
    lake.write_manifest(out, rows=summary["pages"], config=config, extra={"summary": summary})
    return summary
