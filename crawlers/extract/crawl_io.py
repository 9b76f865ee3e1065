"""Iterate a crawl's pages as records (pages row + stored response), shard by shard."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
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


# Rows a shard may read beyond its own before the whole pages file is read (once, and kept)
# instead of its row groups: an import writes each source file's rows as their own row groups,
# a crawl writes one table whose WARC files share row groups.
_SPARE_ROWS = 1024
_CACHE_FILES = 2  # pages files whose index (and table, if read whole) a process keeps, LRU
_cache: OrderedDict[tuple, _PagesIndex] = OrderedDict()
_cache_lock = threading.Lock()


class _PagesIndex:
    """One pages.parquet, indexed once: `groups` maps each WARC file ("" for rows without one)
    to its row numbers in file order, `first[i]` is the first row with row i's URL, and `rows`
    reads the rows asked for, touching only the row groups that hold them while that is
    selective, else the whole table once (then kept with the index)."""

    def __init__(self, path: str):
        self.path = path
        with pq.ParquetFile(path) as pf:
            self.metadata = pf.metadata
            cols = pf.read(columns=["url", "warc_file"])
        sizes = [self.metadata.row_group(g).num_rows for g in range(self.metadata.num_row_groups)]
        self.starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self.first = _first_rows(cols.column("url"))
        warc = pc.fill_null(cols.column("warc_file"), "")
        names, codes = _codes(warc)
        order = np.argsort(codes, kind="stable")  # row numbers grouped by WARC, file order kept
        bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(names)))])
        self.groups = {n: order[bounds[k] : bounds[k + 1]] for k, n in enumerate(names)}
        self._table: pa.Table | None = None
        self._lock = threading.Lock()

    def rows(self, indices: np.ndarray) -> list[dict]:
        groups = np.unique(np.searchsorted(self.starts, indices, side="right") - 1)
        sizes = self.starts[groups + 1] - self.starts[groups]
        if self._table is None and int(sizes.sum()) <= 2 * len(indices) + _SPARE_ROWS:
            with pq.ParquetFile(self.path, metadata=self.metadata) as pf:
                part = pf.read_row_groups(groups.tolist())
            # a row's place in `part`: rows of the chosen groups before its own, then its offset
            before = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            at = np.searchsorted(groups, np.searchsorted(self.starts, indices, side="right") - 1)
            positions = before[at] + indices - self.starts[groups[at]]
            return part.take(pa.array(positions, type=pa.int64())).to_pylist()
        with self._lock:
            if self._table is None:
                with pq.ParquetFile(self.path, metadata=self.metadata) as pf:
                    self._table = pf.read()
        return self._table.take(pa.array(indices, type=pa.int64())).to_pylist()


def _codes(column: pa.ChunkedArray) -> tuple[list, np.ndarray]:
    """(distinct values, each row's value number), nulls a value of their own."""
    encoded = pa.table({"v": pc.dictionary_encode(column, null_encoding="encode")})
    chunks = encoded.unify_dictionaries().column("v").chunks
    if not chunks:
        return [], np.zeros(0, dtype=np.int64)
    codes = np.concatenate(
        [c.indices.to_numpy(zero_copy_only=False).astype(np.int64) for c in chunks]
    )
    return chunks[0].dictionary.to_pylist(), codes


def _first_rows(urls: pa.ChunkedArray) -> np.ndarray:
    """For each row, the first row with the same URL (the row itself when it is the first)."""
    names, codes = _codes(urls)
    first = np.zeros(len(names), dtype=np.int64)
    if len(codes):
        seen, at = np.unique(codes, return_index=True)
        first[seen] = at
    return first[codes]


def _pages_index(pages_file: str) -> _PagesIndex:
    """The index of a pages file, built once per process and version of the file (path, size,
    mtime, inode): a Beam worker that gets several shards of one file reads it once; correctness
    never depends on the cache, as a changed file gets a fresh index."""
    st = os.stat(pages_file)
    key = (os.path.abspath(pages_file), st.st_size, st.st_mtime_ns, st.st_ino)
    with _cache_lock:
        index = _cache.get(key)
        if index is not None:
            _cache.move_to_end(key)
            return index
    index = _PagesIndex(pages_file)
    with _cache_lock:
        _cache[key] = index
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_FILES:
            _cache.popitem(last=False)
    return index


def iter_shard_records(
    pages_file: str, warc_file: str, *, max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES
) -> Iterator[dict]:
    """Records of one shard: each pages row plus `body` and `content_type`.

    A row whose stored response cannot be used gets no body but `warc_error` (unreadable) or
    `body_reject` + `body_reject_detail` (a BadPage reason such as truncated or too_large), so
    extraction rejects it with that reason.

    The pages file is indexed once per process (`_pages_index`: which rows each WARC file has,
    and each URL's first row), then only this shard's rows are read, so an import with one shard
    per source file costs the same per record at 5 files as at 90,000.
    """
    index = _pages_index(pages_file)
    indices = index.groups.get(warc_file)
    if indices is None or not len(indices):
        return
    rows = index.rows(indices)
    for i, first, row in zip(indices.tolist(), index.first[indices].tolist(), rows, strict=True):
        yield _record(row, i, first, pages_file, warc_file, max_decompressed_bytes)


def _record(
    row: dict, i: int, first: int, pages_file: str, warc_file: str, max_decompressed_bytes: int
) -> dict:
    """Pages row `i` (whose URL first appears in row `first`) with its stored response."""
    row = dict(row)
    row["body"] = None
    if first != i:
        row["duplicate_of"] = f"{Path(pages_file).name} row {first}"
    elif str(row.get("error") or "").startswith("unwanted-content-type"):
        pass  # the crawler stored its headers only (WARC-Truncated): there is no body to read
    elif warc_file and row.get("warc_offset") is not None and row.get("status") is not None:
        base = Path(pages_file).parent
        try:
            resp = read_response(
                base / warc_file,
                row["warc_offset"],
                row.get("warc_length"),
                max_decompressed_bytes=max_decompressed_bytes,
            )
            row["body"] = resp.body
            # the response's own header first: it keeps the charset that pages.parquet's
            # content_type (a crawl stores the media type alone) has dropped
            row["content_type"] = resp.headers.get("content-type") or row.get("content_type")
            _provenance(row, base / warc_file, resp)
        except BadPage as bad:  # a stored body we refuse to trust: truncated, bomb, ...
            row["body_reject"] = bad.reason
            row["body_reject_detail"] = bad.detail
        except Exception as exc:  # any unreadable record is one reject, never a dead run
            row["warc_error"] = f"{warc_file}@{row['warc_offset']}: {type(exc).__name__}: {exc}"
    return row


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
