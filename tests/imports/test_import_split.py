"""Scale by byte range and by partition: a gzip-per-record WARC read as byte ranges yields
exactly the records of the whole file, each once; a record after a malformed stretch is found at
its own offset; the `imported_pages` partitions together import every file once, each resuming
its own."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawlers.imports.run import import_warc, plan, scan_in_process, shard_of, unit_key
from crawlers.imports.warc import ScanOptions, scan_file, splittable
from tests.imports.archives import page, request, response, whole_file_gzip, write_warc

URL = "http://127.0.0.2"


def _archive(path: Path, n: int = 40) -> Path:
    """n captures (a request, then a response: HTML, an image, a 404) of varied sizes."""

    def fill(w):
        for i in range(n):
            request(w, f"{URL}/p{i}")
            if i % 7 == 3:
                response(w, f"{URL}/img{i}", b"\x89PNG" * (50 * i), [("Content-Type", "image/png")])
            elif i % 11 == 5:
                response(w, f"{URL}/gone{i}", page(f"Gone {i}"), status="404 Not Found")
            else:
                response(w, f"{URL}/p{i}", page(f"Page {i} " + "words " * (i * 37 % 300)))

    return write_warc(path, fill)


def _ranges(path: Path, size: int) -> list[tuple[str, int, int | None]]:
    total = path.stat().st_size
    cuts = list(range(0, total, size))
    return [
        (str(path), a, b if b < total else None)
        for a, b in zip(cuts, cuts[1:] + [total], strict=True)
    ]


def _split_rows(path: Path, size: int, tmp: Path) -> list[dict]:
    rows = []
    for source, start, end in _ranges(path, size):
        rows += scan_file(source, ScanOptions(), tmp / "warc", "k", start, end)
    return rows


def _members(data: bytes) -> list[int]:
    import zlib

    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        d = zlib.decompressobj(31)
        d.decompress(data[pos:])
        pos = len(data) - len(d.unused_data)
    return starts


def test_a_split_file_yields_exactly_the_records_of_the_whole_file(tmp_path):
    warc = _archive(tmp_path / "a.warc.gz")
    assert splittable(str(warc))
    whole = scan_file(str(warc), ScanOptions(), tmp_path / "warc", "k")
    assert len(whole) == 80 and sum(r["kind"] == "page" for r in whole) > 20
    offsets = [r["record_offset"] for r in whole]
    assert offsets == _members(warc.read_bytes())
    # range sizes cutting records anywhere: at a member start, inside headers, inside bodies
    for size in (997, 4093, 1 << 20):
        split = _split_rows(warc, size, tmp_path)
        assert split == whole, size  # every record once, in order, with the same row
    # the planner splits only what it may, and its ranges cover the file
    units = plan([str(warc)], 5000)
    assert len(units) > 3 and units[0][1] == 0 and units[-1][2] is None
    assert all(a[2] == b[1] for a, b in zip(units, units[1:], strict=False))
    plain = write_warc(tmp_path / "b.warc", lambda w: response(w, f"{URL}/x", page("X")), gz=False)
    whole_gz = whole_file_gzip(warc, tmp_path / "w.warc.gz")
    for other in (plain, whole_gz):
        assert not splittable(str(other)) and plan([str(other)], 100) == [(str(other), 0, None)]


def test_a_record_after_a_malformed_stretch_is_read_at_its_own_offset(tmp_path):
    """Garbage between gzip members and a cut last member: the whole scan and the split scan
    give the same rows, and every page's offset is where its record is (the offset after a
    resync was counted twice before)."""
    warc = _archive(tmp_path / "a.warc.gz", 12)
    data = warc.read_bytes()
    starts = _members(data)
    bad = data[: starts[5]] + b"GARBAGE \x1f\x8b\x08 not a member " * 20 + data[starts[5] :]
    warc.write_bytes(bad[:-200])
    whole = scan_file(str(warc), ScanOptions(), tmp_path / "warc", "k")
    malformed = [r for r in whole if r.get("skip_reason") == "malformed_record"]
    assert [r["record_offset"] for r in malformed] == [starts[5]]  # the garbage
    assert whole[-1]["skip_reason"] == "short_record"  # the cut last record
    raw = warc.read_bytes()
    pages = [r for r in whole if r["kind"] == "page"]
    assert len(pages) >= 6
    for r in pages:  # each page's bytes begin its own record
        head = gzip.GzipFile(fileobj=_at(raw, r["record_offset"])).read(4000)
        assert head.startswith(b"WARC/") and r["url"].encode() in head, r["url"]
    for size in (211, 1500):
        assert _split_rows(warc, size, tmp_path) == whole, size


def _at(raw: bytes, offset: int):
    import io

    return io.BytesIO(raw[offset:])


def test_an_import_by_byte_ranges_writes_what_the_whole_import_writes(tmp_path):
    """The driver reads the ranges' parts in file order: the same pages and skips as one part
    per file; a killed range scan redoes only that range; the Beam scan writes the same parts."""
    (tmp_path / "in").mkdir()
    files = [str(_archive(tmp_path / f"in/{n}.warc.gz", 25)) for n in ("a", "b")]
    whole = import_warc(files, tmp_path / "whole", offline=True, split_bytes=None)
    split = import_warc(files, tmp_path / "split", offline=True, split_bytes=3000)
    assert split["ranges"] > 6 and whole["ranges"] == 2
    for name in ("pages", "skipped"):
        a = pq.read_table(tmp_path / "whole" / f"{name}.parquet")
        b = pq.read_table(tmp_path / "split" / f"{name}.parquet")
        assert a.equals(b), name
    assert split["records"] == whole["records"] == 100
    units = plan(files, 3000)
    (tmp_path / "split" / "parts" / f"{unit_key(units[3])}.done.json").unlink()
    again = import_warc(files, tmp_path / "split", offline=True, split_bytes=3000)
    assert again["ranges_scanned"] == 1 and again["files_scanned"] == 1
    assert again["pages"] == whole["pages"]
    # a Beam element is a unit ([file, start, end]; the CLI test runs the pipeline itself)
    import json

    from pipelines.beam.imports import ScanFileFn

    opts = {"agent": "RefineryBot", "training_agent": "RefineryBot-Extended"}
    fn = ScanFileFn(str(tmp_path / "beam"), json.dumps(opts))
    for u in units[:3]:
        (done,) = fn.process(list(u))
        assert done["range"] == [u[1], u[2]]
    scan_in_process(units[:3], tmp_path / "local", opts)
    for u in units[:3]:
        part = f"parts/{unit_key(u)}.parquet"
        assert (tmp_path / "beam" / part).read_bytes() == (tmp_path / "local" / part).read_bytes()


def test_shards_import_every_file_once_and_each_resumes_its_own(tmp_path):
    """`--shard K/N` (a Dagster partition each): the shards' pages together are the files'
    pages, none twice; a second run of one shard reads none of its files again."""
    shards = 4
    from pipelines.stage import Lake
    from pipelines.stages.imports import ImportWarcParams
    from pipelines.stages.imports import import_warc as stage_import

    files = []
    for i in range(8):
        path = tmp_path / "in" / f"f{i}.warc.gz"
        path.parent.mkdir(exist_ok=True)
        files.append(write_warc(path, lambda w, i=i: response(w, f"{URL}/f{i}", page(f"F{i}"))))
    lake = Lake(root=tmp_path / "lake")
    urls: list[str] = []
    for k in range(shards):
        p = ImportWarcParams(files=[str(tmp_path / "in" / "*.warc.gz")], offline=True)
        s = stage_import(p, Lake(root=lake.root, partition=str(k)))
        out = Path(s.outputs["imported_pages"])
        assert out == lake.root / "crawl" / f"shard=import-{k}"
        mine = [str(f.resolve()) for f in files if shard_of(str(f.resolve()), shards) == k]
        assert s.files == len(mine)
        urls += pq.read_table(out / "pages.parquet").column("url").to_pylist()
    busiest = max(
        range(shards), key=lambda k: sum(shard_of(str(f.resolve()), shards) == k for f in files)
    )
    again = stage_import(p, Lake(root=lake.root, partition=str(busiest)))  # nothing read again
    assert again.files > 0 and again.details["files_scanned"] == 0
    assert again.details["files_resumed"] == again.files
    assert sorted(urls) == sorted(f"{URL}/f{i}" for i in range(8))
    # the CLI's --shard K/N is the same split
    p = ImportWarcParams(files=[str(tmp_path / "in" / "*.warc.gz")], offline=True, shard="1/4")
    s = stage_import(p, lake)
    assert s.outputs["imported_pages"] == str(lake.root / "crawl" / "shard=import-1")
    with pytest.raises(ValueError, match="--shard '4/4'"):
        stage_import(ImportWarcParams(files=[], shard="4/4"), lake)


def test_files_from_reads_a_common_crawl_style_list(tmp_path):
    from pipelines.stages.imports import listed_files

    listing = tmp_path / "warc.paths.gz"
    listing.write_bytes(
        gzip.compress(b"crawl-data/a.warc.gz\n\n# note\n/abs/b.warc.gz\ns3://x/c\n")
    )
    assert listed_files(listing, "https://data.commoncrawl.org/") == [
        "https://data.commoncrawl.org/crawl-data/a.warc.gz",
        "/abs/b.warc.gz",
        "s3://x/c",
    ]
    (tmp_path / "empty.txt").write_text("\n# nothing\n")
    with pytest.raises(ValueError, match="lists no file"):
        listed_files(tmp_path / "empty.txt")
    # the CLI takes a list alone (no FILE_OR_GLOB), relative lines under --files-prefix
    import json

    from typer.testing import CliRunner

    from pipelines.cli import app

    (tmp_path / "in").mkdir()
    for name in ("a", "b"):
        write_warc(
            tmp_path / "in" / f"{name}.warc.gz",
            lambda w, n=name: response(w, f"{URL}/{n}", page(n)),
        )
    (tmp_path / "list.txt").write_text("a.warc.gz\nb.warc.gz\n")
    args = ["import", "warc", "--files-from", str(tmp_path / "list.txt"), "--offline"]
    res = CliRunner().invoke(
        app, [*args, "--files-prefix", str(tmp_path / "in"), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output[res.output.index("{") :])["pages"] == 2
    res = CliRunner().invoke(app, ["import", "warc", "--offline"])
    assert res.exit_code == 2 and "--files-from" in res.output
