"""Scale: `import warc` is partitioned by file (the in-process and the Beam scan write the same
outputs), and its driver streams the parts instead of holding every row."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pyarrow.parquet as pq

from crawlers.imports.run import import_warc
from tests.imports.archives import page, response, write_warc


def _files(tmp: Path, n: int, per_file: int) -> list[str]:
    """n files of per_file pages; file k > 0 repeats the first page of file k - 1 (same URL) and
    the body of its second page under a new URL (same payload)."""
    out = []
    for f in range(n):

        def fill(w, f=f):
            for i in range(per_file):
                response(w, f"http://127.0.0.2/f{f}/p{i}", page(f"file {f} page {i}"))
            if f:
                response(w, f"http://127.0.0.2/f{f - 1}/p0", page(f"file {f - 1} page 0 again"))
                response(w, f"http://127.0.0.2/f{f}/copy", page(f"file {f - 1} page 1"))

        tmp.mkdir(parents=True, exist_ok=True)
        out.append(str(write_warc(tmp / f"part-{f:02d}.warc.gz", fill)))
    return out


def _driver_peak(files: list[str], out: Path) -> int:
    """Peak Python memory of an import whose files are all scanned already (the driver alone)."""
    import_warc(files, out, offline=True)
    tracemalloc.start()
    try:
        import_warc(files, out, offline=True)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_driver_streams_the_parts_and_finds_repeats_across_files(tmp_path):
    """Four times the files: the driver's peak grows by its per-URL index (key hashes, robots
    outcome: ~300 bytes a page), not by the rows (it held every row before: ~2.1 KB a page)."""
    small = _driver_peak(_files(tmp_path / "in2", 2, 50), tmp_path / "out2")
    files = _files(tmp_path / "in8", 8, 50)
    big = _driver_peak(files, tmp_path / "out8")
    assert (big - small) / 300 < 1000, (small, big)  # bytes per page added
    out = tmp_path / "out8"
    table = pq.read_table(out / "pages.parquet")
    assert table.num_rows == 400 and len(set(table.column("url").to_pylist())) == 400
    skipped = pq.read_table(out / "skipped.parquet").to_pylist()
    assert sorted({r["skip_reason"] for r in skipped}) == ["duplicate_payload", "duplicate_url"]
    assert len(skipped) == 14
    again = {r["url"]: r for r in skipped}["http://127.0.0.2/f0/p0"]
    assert again["source_file"] == files[1]
    assert again["skip_detail"].startswith(f"same URL as {files[0]}@")
    copy = {r["url"]: r for r in skipped}["http://127.0.0.2/f3/copy"]
    assert copy["skip_reason"] == "duplicate_payload" and files[2] in copy["skip_detail"]


def test_a_corpus_import_streams_its_rows(tmp_path, monkeypatch):
    """`import docs` (and `import wet`, the same writer) spools rows to disk and decides them a
    batch at a time: four times the rows add the per-row index, not the texts (it held every
    document, text included, before: ~4 KB a document here)."""
    import json

    from crawlers.imports import wet
    from crawlers.imports.docs import import_docs

    monkeypatch.setattr(wet, "BATCH_ROWS", 50)  # batches far smaller than the corpus

    def corpus(n: int) -> Path:
        path = tmp_path / f"c{n}.jsonl"
        rows = [{"text": f"document {i} " + "lorem ipsum dolor " * 60} for i in range(n)]
        rows.append(rows[0])  # an exact repeat
        path.write_text("\n".join(json.dumps(r) for r in rows))
        return path

    import_docs([str(corpus(5))], tmp_path / "warm", license="CC0-1.0")  # imports made
    peaks = {}
    for n in (100, 400):
        src = corpus(n)
        tracemalloc.start()
        try:
            s = import_docs([str(src)], tmp_path / f"out{n}", license="CC0-1.0")
            peaks[n] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert s["documents"] == n and s["skipped_by_reason"] == {"duplicate_payload": 1}
        assert not (tmp_path / f"out{n}" / "_parts").exists()
    assert (peaks[400] - peaks[100]) / 300 < 1000, peaks  # bytes per document added
