"""pages.parquet and skipped.parquet, built from the frontier database.

During a crawl, checkpoints are incremental: every `checkpoint_every` pages the rows finished
since the last checkpoint are appended as `checkpoints/pages-<n>.parquet` and
`checkpoints/skipped-<n>.parquet` (same columns as the final files), so a checkpoint costs what it
adds, not the size of the crawl. At the end (and after a resumed crawl ends) the frontier is
compacted into `pages.parquet` / `skipped.parquet` and the parts are removed. A part may repeat a
URL that a later part has again (a URL re-queued on --resume); the last one wins.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from crawlers.crawl.frontier import Frontier

PAGES_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("host", pa.string()),
        ("depth", pa.int32()),
        ("source", pa.string()),
        ("parent", pa.string()),
        ("anchor", pa.string()),
        ("status", pa.int32()),
        ("fetched_at", pa.string()),
        ("final_url", pa.string()),
        ("redirect_to", pa.string()),
        ("crawl_allowed", pa.bool_()),
        ("training_allowed", pa.bool_()),
        ("robots_crawl", pa.string()),
        ("robots_training", pa.string()),
        ("noindex", pa.bool_()),
        ("nofollow", pa.bool_()),
        ("noai", pa.bool_()),
        ("noimageai", pa.bool_()),
        ("warc_file", pa.string()),
        ("warc_offset", pa.int64()),
        ("warc_length", pa.int64()),
        ("content_sha256", pa.string()),
        ("content_type", pa.string()),
        ("content_length", pa.int64()),
        ("title", pa.string()),
        ("lang", pa.string()),
        ("lang_score", pa.float32()),
        ("page_topic", pa.string()),
        ("outlinks", pa.int32()),
        ("error", pa.string()),
        ("attempts", pa.int32()),
        ("elapsed_s", pa.float32()),
        ("priority", pa.float32()),
        ("lang_signal", pa.float32()),
        ("topic", pa.string()),
        ("topic_signal", pa.float32()),
        ("path_signal", pa.float32()),
        ("priority_reasons", pa.string()),
    ]
)
SKIPPED_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("host", pa.string()),
        ("depth", pa.int32()),
        ("source", pa.string()),
        ("parent", pa.string()),
        ("skip_reason", pa.string()),
    ]
)
_BOOLS = {"crawl_allowed", "training_allowed", "noindex", "nofollow", "noai", "noimageai"}


def _table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    cols = {}
    for field in schema:
        values = [r.get(field.name) for r in rows]
        if field.name in _BOOLS:
            values = [None if v is None else bool(v) for v in values]
        cols[field.name] = pa.array(values, type=field.type)
    return pa.table(cols, schema=schema)


def _write(table: pa.Table, path: Path) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)  # readers never see a half-written file
    return path


CHECKPOINTS = "checkpoints"


def write_outputs(frontier: Frontier, out_dir: Path) -> dict[str, int]:
    """Compact: write OUT/pages.parquet (fetched + robots-denied) and OUT/skipped.parquet from the
    frontier, then drop the checkpoint parts; return row counts."""
    pages = list(frontier.rows(["done", "denied"]))
    skipped = list(frontier.rows(["skipped"]))
    _write(_table(pages, PAGES_SCHEMA), Path(out_dir) / "pages.parquet")
    _write(_table(skipped, SKIPPED_SCHEMA), Path(out_dir) / "skipped.parquet")
    shutil.rmtree(Path(out_dir) / CHECKPOINTS, ignore_errors=True)
    return {"pages": len(pages), "skipped": len(skipped)}


def write_checkpoint(frontier: Frontier, out_dir: Path, urls: list[str]) -> int:
    """Append the rows of `urls` (finished since the last checkpoint) as new parts; returns rows."""
    rows = frontier.rows_by_url(urls)
    pages = [r for r in rows if r["state"] in ("done", "denied")]
    skipped = [r for r in rows if r["state"] == "skipped"]
    parts = Path(out_dir) / CHECKPOINTS
    parts.mkdir(exist_ok=True)
    n = 1 + max((int(p.stem.rsplit("-", 1)[1]) for p in parts.glob("*-*.parquet")), default=0)
    if pages:
        _write(_table(pages, PAGES_SCHEMA), parts / f"pages-{n:06d}.parquet")
    if skipped:
        _write(_table(skipped, SKIPPED_SCHEMA), parts / f"skipped-{n:06d}.parquet")
    return len(pages) + len(skipped)
