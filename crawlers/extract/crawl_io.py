"""Iterate a crawl's pages as records (pages row + stored response), shard by shard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from crawlers.extract.decode import BadPage
from crawlers.extract.warc import MAX_DECOMPRESSED_BYTES, find_pages_files, read_response


def crawl_shards(crawl_dir: str | Path) -> list[tuple[str, str]]:
    """(pages file, warc file) pairs; warc file "" groups the rows that have no stored response."""
    shards = []
    for pages in find_pages_files(crawl_dir):
        warcs = pq.read_table(pages, columns=["warc_file"]).column("warc_file").to_pylist()
        for name in sorted({w or "" for w in warcs}):
            shards.append((str(pages), name))
    return shards


def count_pages(crawl_dir: str | Path) -> int:
    """Rows of every pages.parquet of the crawl."""
    return sum(pq.ParquetFile(p).metadata.num_rows for p in find_pages_files(crawl_dir))


def iter_shard_records(
    pages_file: str, warc_file: str, *, max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES
) -> Iterator[dict]:
    """Records of one shard: each pages row plus `body` and `content_type`.

    A row whose stored response cannot be used gets no body but `warc_error` (unreadable) or
    `body_reject` + `body_reject_detail` (a BadPage reason such as truncated or too_large), so
    extraction rejects it with that reason.
    """
    table = pq.read_table(pages_file)
    urls = table.column("url").to_pylist()
    first_row = {}
    for i, url in enumerate(urls):
        first_row.setdefault(url, i)
    col = pc.fill_null(table.column("warc_file"), "")
    mask = pc.equal(col, warc_file)
    indices = [i for i, keep in enumerate(mask.to_pylist()) if keep]
    rows = table.take(pa.array(indices, type=pa.int64())).to_pylist()
    base = Path(pages_file).parent
    for i, row in zip(indices, rows, strict=True):
        row = dict(row)
        row["body"] = None
        if first_row[row["url"]] != i:
            row["duplicate_of"] = f"{Path(pages_file).name} row {first_row[row['url']]}"
        elif str(row.get("error") or "").startswith("unwanted-content-type"):
            pass  # the crawler stored its headers only (WARC-Truncated): there is no body to read
        elif warc_file and row.get("warc_offset") is not None and row.get("status") is not None:
            try:
                resp = read_response(
                    base / warc_file,
                    row["warc_offset"],
                    row.get("warc_length"),
                    max_decompressed_bytes=max_decompressed_bytes,
                )
                row["body"] = resp.body
                row["content_type"] = row.get("content_type") or resp.headers.get("content-type")
                _provenance(row, base / warc_file, resp)
            except BadPage as bad:  # a stored body we refuse to trust: truncated, bomb, ...
                row["body_reject"] = bad.reason
                row["body_reject_detail"] = bad.detail
            except Exception as exc:  # any unreadable record is one reject, never a dead run
                row["warc_error"] = f"{warc_file}@{row['warc_offset']}: {type(exc).__name__}: {exc}"
        yield row


def _provenance(row: dict, warc_path: Path, resp) -> None:
    """Where the page came from (`common.schemas.PROVENANCE`): an import's pages carry their
    source archive's already; a crawled page gets its own WARC file, offset and record."""
    if not row.get("source_file"):
        row["source_file"] = str(warc_path.resolve())
        row["record_offset"] = row["warc_offset"]
    row["warc_record_id"] = row.get("warc_record_id") or resp.record_id
    row["capture_time"] = row.get("capture_time") or resp.capture_time or row.get("fetched_at")


def iter_crawl_records(
    crawl_dir: str | Path, *, max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES
) -> Iterator[dict]:
    """Every record of a crawl, shard by shard (for code paths that do not need Beam)."""
    for pages_file, warc_file in crawl_shards(crawl_dir):
        yield from iter_shard_records(
            pages_file, warc_file, max_decompressed_bytes=max_decompressed_bytes
        )
