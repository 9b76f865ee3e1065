"""Reading a crawl's records back stays linear in the number of shards: an import has one
(pages file, WARC) shard per source archive, and each shard reads its own rows, not the whole
pages.parquet again (`crawlers/extract/crawl_io.py::iter_shard_records`)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from crawlers.crawl.output import PAGES_SCHEMA
from crawlers.extract import crawl_io
from crawlers.extract.crawl_io import crawl_shards, iter_crawl_records, iter_shard_records
from crawlers.imports.run import import_warc
from tests.imports.archives import TEST_CONFIG, page, response, write_warc

FILES, PER_FILE = 40, 5


def _reference(pages_file: str) -> dict[str, list[dict]]:
    """The rows the reader yielded before it kept an index (it read the whole pages file for
    every shard), by WARC file: each shard's rows in file order, a later copy of a URL marked
    duplicate_of its first row."""
    table = pq.read_table(pages_file)
    first: dict = {}
    for i, url in enumerate(table.column("url").to_pylist()):
        first.setdefault(url, i)
    warcs = pc.fill_null(table.column("warc_file"), "").to_pylist()
    out: dict[str, list[dict]] = {}
    for i, row in enumerate(table.to_pylist()):
        if first[row["url"]] != i:
            row["duplicate_of"] = f"{Path(pages_file).name} row {first[row['url']]}"
        out.setdefault(warcs[i], []).append(row)
    return out


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """40 archives of 5 pages, imported offline."""
    tmp = tmp_path_factory.mktemp("many")
    files = []
    for f in range(FILES):

        def fill(w, f=f):
            for k in range(PER_FILE):
                response(w, f"http://127.0.0.2/f{f}/p{k}", page(f"file {f} page {k}"))

        files.append(str(write_warc(tmp / f"a-{f:03d}.warc.gz", fill)))
    out = tmp / "crawl"
    import_warc(files, out, config=TEST_CONFIG, offline=True)
    return out


class _Reads:
    """Rows read from pages.parquet files, by any pyarrow.parquet entry point."""

    def __init__(self, monkeypatch):
        self.rows = 0
        self.calls = 0
        read_table = pq.read_table

        def counted_read_table(source, *a, **kw):
            return self._count(source, read_table(source, *a, **kw))

        monkeypatch.setattr(pq, "read_table", counted_read_table)
        for name in ("read", "read_row_groups", "read_row_group"):
            method = getattr(pq.ParquetFile, name)

            def counted(pf, *a, _method=method, **kw):
                return self._count("pages.parquet", _method(pf, *a, **kw))

            monkeypatch.setattr(pq.ParquetFile, name, counted)

    def _count(self, source, table):
        if str(source).endswith("pages.parquet"):
            self.rows += table.num_rows
            self.calls += 1
        return table


def test_each_shard_reads_its_own_rows_not_the_whole_pages_file(imported, monkeypatch):
    crawl_io._cache.clear()
    shards = crawl_shards(imported)
    assert len(shards) == FILES
    total = pq.ParquetFile(shards[0][0]).metadata.num_rows
    reads = _Reads(monkeypatch)
    records = [r for shard in shards for r in iter_shard_records(*shard)]
    assert len(records) == total == FILES * PER_FILE
    # the old reader read all 200 rows for each of the 40 shards: 8,000 rows; now the index
    # (two columns, once) and each shard's own row groups
    assert reads.rows <= 2 * total, (reads.rows, reads.calls)
    assert all(r["body"] and not r.get("duplicate_of") for r in records)


def test_records_are_the_ones_the_whole_file_reader_gave(imported):
    crawl_io._cache.clear()
    shards = crawl_shards(imported)
    reference = _reference(shards[0][0])
    for pages_file, warc_file in shards:
        got = list(iter_shard_records(pages_file, warc_file))
        want = reference[warc_file]
        assert len(got) == len(want) == PER_FILE
        for record, row in zip(got, want, strict=True):
            assert {k: record[k] for k in row} == row
            assert record["body"] and record["source_file"].endswith(warc_file)


def _pages(path: Path, rows: list[dict], row_group_size: int | None = None) -> str:
    full = [{**{n: None for n in PAGES_SCHEMA.names}, **r} for r in rows]
    pq.write_table(
        pa.Table.from_pylist(full, schema=PAGES_SCHEMA), path, row_group_size=row_group_size
    )
    return str(path)


@pytest.mark.parametrize("row_group_size", [None, 3])
def test_interleaved_warcs_duplicates_and_missing_values(tmp_path, row_group_size):
    """A crawl's WARC files share row groups (the whole file is read once, then kept); rows
    without a WARC file, null URLs and URLs repeated across WARC files come out as before."""
    crawl_io._cache.clear()
    names = ["w/a.warc.gz", "w/b.warc.gz", None, "w/c.warc.gz", ""]
    rows = [
        {"url": None if i % 11 == 5 else f"http://127.0.0.2/{i % 7}", "warc_file": names[i % 5]}
        for i in range(40)
    ]
    path = _pages(tmp_path / "pages.parquet", rows, row_group_size)
    shards = crawl_shards(tmp_path)
    assert [w for _, w in shards] == ["", "w/a.warc.gz", "w/b.warc.gz", "w/c.warc.gz"]
    reference = _reference(path)
    for _, warc_file in shards + [(path, "w/none.warc.gz")]:
        got = list(iter_shard_records(path, warc_file))
        assert got == [{**row, "body": None} for row in reference.get(warc_file, [])]
    assert len(list(iter_crawl_records(tmp_path))) == 40


def test_a_rewritten_pages_file_is_read_again(tmp_path):
    """The per-process index is keyed by the file's path, size, mtime and inode: a pages file
    written again (a resumed crawl, a re-import) is never answered from the old index."""
    crawl_io._cache.clear()
    path = _pages(tmp_path / "pages.parquet", [{"url": "http://127.0.0.2/a"}])
    assert [r["url"] for r in iter_shard_records(path, "")] == ["http://127.0.0.2/a"]
    before = os.stat(path).st_mtime_ns
    tmp = _pages(tmp_path / "new.parquet", [{"url": "http://127.0.0.2/b"}] * 2)
    os.replace(tmp, path)
    os.utime(path, ns=(before, before))  # same mtime: size and inode still tell them apart
    got = list(iter_shard_records(path, ""))
    assert [r["url"] for r in got] == ["http://127.0.0.2/b"] * 2
    assert got[1]["duplicate_of"] == "pages.parquet row 0"
