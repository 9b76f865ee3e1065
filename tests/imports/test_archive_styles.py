"""`import warc` on archives shaped as other producers write them (tests/imports/styles.py):
wget, Heritrix, Browsertrix/pywb (and its WACZ), StormCrawler, ARC v1, whole-file gzip,
uncompressed WARC/1.1, the encodings servers send, odd target URIs, segmented and split
records. Each record is a page or a skip with its reason (rows in = pages + skipped), every page
has its consent decided and its record is readable where pages.parquet says it is."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawlers.extract.warc import read_response
from crawlers.imports.run import import_warc
from crawlers.imports.warc import ScanOptions, scan_file
from tests.imports.archives import (
    ALLOW,
    DENY_TRAINING,
    TEST_CONFIG,
    base,
    page,
)
from tests.imports.styles import HTML, STYLES, http, record, segmented


def _reasons(rows: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r["skip_reason"]] = out.get(r["skip_reason"], 0) + 1
    return out


def _whole_gzip(path: Path) -> Path:
    """The same archive as one gzip stream (`gzip crawl.warc`), read as a stream and copied."""
    raw = path.read_bytes()
    plain = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    out = path.with_name("whole-" + path.name.removesuffix(".gz") + ".gz")
    out.write_bytes(gzip.compress(plain))
    return out


CASES = [(s, "as_written") for s in sorted(STYLES)]
CASES += [(s, "whole_gzip") for s in sorted(STYLES) if s != "wacz"]  # a zip: no gzip around it
# byte ranges of ~700 bytes (a gzip-per-record file is cut into several); a record split across
# gzip members is a named skip in a range (test_a_record_split_across_gzip_members_...)
CASES += [(s, "ranges") for s in sorted(STYLES) if s != "segmented"]
SPLITTABLE = {"wget", "heritrix", "browsertrix", "stormcrawler", "encodings", "odd_uris"}


@pytest.mark.parametrize(("style", "container"), CASES)
def test_each_producers_archive_imports_as_pages_and_recorded_skips(
    tmp_path, robots, style, container
):
    path, want = STYLES[style](tmp_path, lambda ip: base(ip, robots.port))
    if container == "whole_gzip":
        path = _whole_gzip(path)
    offline = style == "odd_uris"  # IDN hosts: no DNS lookups of invented names in tests
    out = tmp_path / "out"
    split = 700 if container == "ranges" else None
    s = import_warc([str(path)], out, config=TEST_CONFIG, offline=offline, split_bytes=split)
    pages = pq.read_table(out / "pages.parquet").to_pylist()
    skipped = pq.read_table(out / "skipped.parquet").to_pylist()
    assert s["records"] == s["pages"] + s["skipped"] == len(pages) + len(skipped)
    if container == "ranges" and style in SPLITTABLE:
        assert s["ranges"] > 1
    assert sorted(p["url"] for p in pages) == sorted(want.pages)
    assert _reasons(skipped) == want.skips
    assert all(r["skip_detail"] for r in skipped)
    for p in pages:
        assert p["consent_source"], p["url"]
        assert isinstance(p["training_allowed"], bool)
        if offline:
            assert p["training_allowed"] is False
        elif p["url"].startswith(f"http://{DENY_TRAINING}:"):
            assert p["training_allowed"] is False and "robots.txt" in p["consent_source"]
        elif p["url"].startswith(f"http://{ALLOW}:"):
            assert p["training_allowed"] is True, (p["url"], p["consent_source"])
        warc = Path(p["warc_file"]) if Path(p["warc_file"]).is_absolute() else out / p["warc_file"]
        resp = read_response(warc, p["warc_offset"])
        assert resp.status == 200 and b"<title>" in resp.body.lower(), p["url"]


def test_a_converted_arc_member_warcio_cannot_parse_is_a_skip_not_lost(tmp_path):
    """A gzip member of an ARC that opens with a blank line: warcio's ARC-to-WARC conversion
    yields a record with no type and no headers; it was taken for an empty member and dropped."""
    desc = b"1 0 Alexa Internet\nURL IP-address Archive-date Content-type Archive-length\n"
    head = f"filedesc://x.arc.gz 0.0.0.0 19961104142103 text/plain {len(desc)}\n".encode()
    body = b"HTTP/1.0 200 OK\nContent-type: text/html\n\n<html>old</html>"
    rec = f"\nhttp://127.0.0.2/old 127.0.0.2 19961104142103 text/html {len(body)}\n".encode()
    path = tmp_path / "lead.arc.gz"
    path.write_bytes(gzip.compress(head + desc + b"\n") + gzip.compress(rec + body + b"\n"))
    rows = scan_file(str(path), ScanOptions(), tmp_path / "warc", "k")
    assert [r.get("skip_reason") for r in rows] == ["warcinfo", "malformed_record"]
    assert "no record header" in rows[1]["skip_detail"]


def test_a_record_split_across_gzip_members_in_a_byte_range_is_a_named_skip(tmp_path):
    """Read whole, the file is read as one gzip stream (the styles test); a byte range cannot do
    that, so the record is a skip that says how to read it, and the range goes on after it."""
    path, _ = segmented(tmp_path, lambda ip: f"http://{ip}")
    rows = scan_file(str(path), ScanOptions(), tmp_path / "warc", "k", start=1)
    reasons = [r.get("skip_reason") for r in rows]
    assert reasons == ["continuation", "split_record", "malformed_record", None]
    assert "--split-bytes 0" in rows[1]["skip_detail"]
    assert rows[-1]["kind"] == "page" and rows[-1]["url"].endswith("/after-split")


def _records(n: int) -> list[bytes]:
    return [
        record("response", f"http://127.0.0.2/p{i}", http("HTTP/1.1 200 OK", HTML, page(f"P{i}")))
        for i in range(n)
    ]


def _zstd_warc(recs: list[bytes], with_dict: bool) -> bytes:
    """The IIPC WARC-zstd layout: a frame per record; ArchiveTeam's files open with their
    dictionary (zstd-compressed) in a skippable frame, magic 0x184D2A5D."""
    import struct

    import zstandard

    if not with_dict:
        return b"".join(zstandard.ZstdCompressor().compress(r) for r in recs)
    raw = b"".join(recs[:1])  # a raw-content dictionary: the first record's bytes
    cdict = zstandard.ZstdCompressionDict(raw, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    packed = zstandard.ZstdCompressor().compress(raw)
    out = struct.pack("<II", 0x184D2A5D, len(packed)) + packed
    return out + b"".join(zstandard.ZstdCompressor(dict_data=cdict).compress(r) for r in recs)


@pytest.mark.parametrize("with_dict", [False, True])
def test_a_zstd_warc_is_read_and_its_records_copied(tmp_path, with_dict):
    path = tmp_path / "at.warc.zst"
    path.write_bytes(_zstd_warc(_records(3), with_dict))
    out = tmp_path / "out"
    s = import_warc([str(path)], out, offline=True)
    assert (s["records"], s["pages"], s["skipped"]) == (3, 3, 0)
    for p in pq.read_table(out / "pages.parquet").to_pylist():
        assert p["import_mode"].startswith("copied: zstd")
        assert read_response(out / p["warc_file"], p["warc_offset"]).status == 200


def test_a_cut_whole_file_gzip_keeps_the_records_before_the_cut(tmp_path):
    """gzip.GzipFile raises EOFError at the cut for the whole last read (warcio's 16 KiB), which
    warcio takes for the end of the file: the whole records in that read were lost quietly."""
    recs = _records(40)
    data = gzip.compress(b"".join(recs))
    cut = data[: len(data) - 200]
    readable = len(zlib.decompressobj(31).decompress(cut))
    ends = [sum(len(r) for r in recs[: i + 1]) for i in range(len(recs))]
    whole = sum(1 for e in ends if e <= readable)
    path = tmp_path / "crawl.warc.gz"
    path.write_bytes(cut)
    s = import_warc([str(path)], tmp_path / "out", offline=True)
    skipped = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    assert (s["pages"], s["skipped"]) == (whole, 1)
    assert skipped[0]["skip_reason"] == "malformed_record"
    assert "ends inside a member" in skipped[0]["skip_detail"]


def test_junk_before_gzip_members_is_one_skip_and_the_records_after_it_are_read(tmp_path):
    path = tmp_path / "junk.warc.gz"
    path.write_bytes(b"JUNK" * 3 + b"".join(gzip.compress(r) for r in _records(3)))
    s = import_warc([str(path)], tmp_path / "out", offline=True)
    assert (s["pages"], s["skipped_by_reason"]) == (3, {"malformed_record": 1})
    pages = pq.read_table(tmp_path / "out" / "pages.parquet").to_pylist()
    assert [p["warc_offset"] for p in pages][0] == 12  # referred to in place, after the junk
    assert read_response(pages[0]["warc_file"], pages[0]["warc_offset"]).status == 200


@pytest.mark.parametrize("gz", [False, True])
def test_an_arc_imports_the_same_record_ids_and_copies_every_run(tmp_path, gz):
    """ARC records have no WARC-Record-ID: warcio's conversion draws a random one and the copy
    was stamped with the time of the copy; an import is the same every run."""
    from tests.imports.styles import arc_v1

    path, _ = arc_v1(tmp_path, lambda ip: "http://127.0.0.2", gz)
    runs = []
    for k in ("a", "b"):
        rows = scan_file(str(path), ScanOptions(), tmp_path / k / "warc", "k")
        copies = sorted((tmp_path / k / "warc").glob("*"))
        runs.append(([r.get("warc_record_id") for r in rows], [c.read_bytes() for c in copies]))
    assert runs[0] == runs[1]
    ids, copies = runs[0]
    assert copies and all(i and i.startswith("<urn:uuid:") for i in ids)
    assert len(set(ids)) == len(ids)
    pages = [
        r
        for r in scan_file(str(path), ScanOptions(), tmp_path / "c" / "warc", "k")
        if r.get("kind") == "page"
    ]
    for row in pages:  # the copy carries the row's id and the ARC's capture date
        rec = read_response(
            str(tmp_path / "c" / "warc" / Path(row["warc_file"]).name), row["warc_offset"]
        )
        assert rec is not None
