"""Damaged and unusual inputs lose only what is damaged: one recorded skip per bad stretch, and
the records after it are read (ARC, WARC/0.18, WET); a WET record without a type, a charset
other than UTF-8, a damaged Parquet page or a string that is not UTF-8 is a reject with its
reason, never a crash; a WACZ with two members of one name is refused in one line."""

from __future__ import annotations

import gzip
import json
import uuid
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawlers.imports.docs import import_docs
from crawlers.imports.run import import_warc
from crawlers.imports.wet import import_wet


def _html(i: int) -> bytes:
    return b"<html><body>page %d of a damaged archive</body></html>" % i


def _arc_record(i: int) -> bytes:
    http = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(
        _html(i)
    )
    body = http + _html(i)
    return b"http://127.0.0.2/a%d 127.0.0.2 20140101000000 text/html %d\n" % (i, len(body)) + (
        body + b"\n"
    )


def _arc_records() -> list[bytes]:
    desc = b"1 0 test\nURL IP-address Archive-date Content-type Archive-length\n"
    head = b"filedesc://t.arc 0.0.0.0 20140101000000 text/plain %d\n" % len(desc) + desc + b"\n"
    return [head] + [_arc_record(i) for i in range(5)]


def _warc_record(url: str, block: bytes, version: bytes = b"WARC/1.0") -> bytes:
    head = [
        version.decode(),
        "WARC-Type: response",
        f"WARC-Record-ID: <urn:uuid:{uuid.uuid4()}>",
        "WARC-Date: 2024-01-01T00:00:00Z",
        f"WARC-Target-URI: {url}",
        "Content-Type: application/http; msgtype=response",
        f"Content-Length: {len(block)}",
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + block + b"\r\n\r\n"


def _http(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(
        body
    ) + (body)


def _pages(out: Path) -> list[str]:
    return [r["url"].rsplit("/", 1)[1] for r in pq.read_table(out / "pages.parquet").to_pylist()]


def _one_skip_per_bad_stretch(s: dict) -> None:
    assert s["records"] == s["pages"] + s["skipped"]
    assert s["skipped_by_reason"].get("malformed_record") == 1, s["skipped_by_reason"]


def test_an_uncompressed_arc_is_read_on_after_garbage(tmp_path):
    recs = _arc_records()
    src = tmp_path / "garbage.arc"
    src.write_bytes(b"".join(recs[:3]) + b"JUNK JUNK\n" * 3 + b"".join(recs[3:]))
    s = import_warc([str(src)], tmp_path / "out", offline=True)
    assert _pages(tmp_path / "out") == ["a0", "a1", "a2", "a3", "a4"]
    _one_skip_per_bad_stretch(s)


def test_a_gzip_per_record_arc_is_read_on_after_a_cut_member(tmp_path):
    members = [gzip.compress(r) for r in _arc_records()]
    members[2] = members[2][: len(members[2]) // 2]  # the record of a1, cut
    src = tmp_path / "cut.arc.gz"
    src.write_bytes(b"".join(members))
    s = import_warc([str(src)], tmp_path / "out", offline=True)
    assert _pages(tmp_path / "out") == ["a0", "a2", "a3", "a4"]
    _one_skip_per_bad_stretch(s)


@pytest.mark.parametrize("version", [b"WARC/0.17", b"WARC/0.18", b"WARC/1.1"])
def test_an_uncompressed_warc_of_any_version_is_read_on_after_garbage(tmp_path, version):
    recs = [_warc_record(f"http://127.0.0.2/v{i}", _http(_html(i)), version) for i in range(5)]
    src = tmp_path / "g.warc"
    src.write_bytes(b"".join(recs[:2]) + b"GARBAGE LINE\r\n" * 3 + b"".join(recs[2:]))
    s = import_warc([str(src)], tmp_path / "out", offline=True)
    assert _pages(tmp_path / "out") == ["v0", "v1", "v2", "v3", "v4"]
    _one_skip_per_bad_stretch(s)


def _wet_record(url: str | None, text: bytes, ctype: str = "text/plain", rtype="conversion"):
    head = ["WARC/1.0"]
    if rtype:
        head.append(f"WARC-Type: {rtype}")
    head += [f"WARC-Record-ID: <urn:uuid:{uuid.uuid4()}>", "WARC-Date: 2024-01-01T00:00:00Z"]
    if url:
        head.append(f"WARC-Target-URI: {url}")
    head += [f"Content-Type: {ctype}", f"Content-Length: {len(text)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + text + b"\r\n\r\n"


def _texts(out: Path) -> dict[str, str]:
    rows = pq.read_table(out / "documents.parquet").to_pylist()
    return {r["url"].rsplit("/", 1)[1]: r["text"] for r in rows}


def test_a_wet_file_is_read_on_after_a_cut_member(tmp_path):
    members = [
        gzip.compress(_wet_record(f"http://127.0.0.2/w{i}", b"text number %d" % i))
        for i in range(6)
    ]
    members[2] = members[2][: len(members[2]) // 2]
    src = tmp_path / "cut.warc.wet.gz"
    src.write_bytes(b"".join(members))
    s = import_wet([str(src)], tmp_path / "out", offline=True)
    assert sorted(_texts(tmp_path / "out")) == ["w0", "w1", "w3", "w4", "w5"]
    assert s["records"] == 6 and s["skipped_by_reason"] == {"malformed_record": 1}


def test_a_whole_file_gzip_wet_is_read_whole(tmp_path):
    recs = [_wet_record(f"http://127.0.0.2/w{i}", b"text number %d" % i) for i in range(4)]
    src = tmp_path / "whole.warc.wet.gz"
    src.write_bytes(gzip.compress(b"".join(recs)))
    s = import_wet([str(src)], tmp_path / "out", offline=True)
    assert sorted(_texts(tmp_path / "out")) == ["w0", "w1", "w2", "w3"]
    assert s["records"] == 4 and s["skipped"] == 0


def test_a_wet_record_without_a_type_is_a_skip_not_a_crash(tmp_path):
    src = tmp_path / "notype.wet"
    src.write_bytes(
        _wet_record(None, b"software: test", "application/warc-fields", "warcinfo")
        + _wet_record("http://127.0.0.2/notype", b"text without a WARC-Type", rtype=None)
        + _wet_record("http://127.0.0.2/ok", b"good text")
    )
    s = import_wet([str(src)], tmp_path / "out", offline=True)
    assert s["documents"] == 1 and s["skipped_by_reason"] == {"record_type": 1, "warcinfo": 1}
    skip = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()[1]
    assert skip["url"].endswith("/notype") and "WARC-Type" in skip["skip_detail"]


def test_wet_text_is_decoded_with_its_declared_charset_or_refused(tmp_path):
    latin = "café naïve résumé"
    src = tmp_path / "charsets.wet"
    src.write_bytes(
        _wet_record(
            "http://127.0.0.2/latin1", latin.encode("latin-1"), "text/plain; charset=iso-8859-1"
        )
        + _wet_record(
            "http://127.0.0.2/utf16", "hello utf16".encode("utf-16"), 'text/plain; charset="utf-16"'
        )
        + _wet_record("http://127.0.0.2/undeclared", "hello utf16".encode("utf-16"))
        + _wet_record("http://127.0.0.2/unknown", b"text", "text/plain; charset=x-no-such")
    )
    s = import_wet([str(src)], tmp_path / "out", offline=True)
    assert _texts(tmp_path / "out") == {"latin1": latin, "utf16": "hello utf16"}
    skipped = {
        r["url"].rsplit("/", 1)[1]: r
        for r in pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    }
    assert {k: r["skip_reason"] for k, r in skipped.items()} == {
        "undeclared": "decode_error",
        "unknown": "decode_error",
    }
    assert "not utf-8" in skipped["undeclared"]["skip_detail"]
    assert str(src) in skipped["undeclared"]["skip_detail"]
    assert "x-no-such" in skipped["unknown"]["skip_detail"]
    assert s["records"] == 4


def _damaged_parquet(path: Path, rows: int = 3000, group: int = 1000) -> Path:
    table = pa.table(
        {"id": list(range(rows)), "text": [f"document number {i} " * 5 for i in range(rows)]}
    )
    pq.write_table(table, path, row_group_size=group, compression="none", use_dictionary=False)
    chunk = pq.ParquetFile(path).metadata.row_group(1).column(1)  # the text of rows 1000-1999
    data = bytearray(path.read_bytes())
    at = chunk.data_page_offset + chunk.total_compressed_size // 2
    data[at : at + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    return path


def test_a_damaged_parquet_row_group_rejects_its_rows_and_the_rest_is_read(tmp_path):
    bad = _damaged_parquet(tmp_path / "corrupt.parquet")
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"id": "g", "text": "a good document in another file"}) + "\n")
    out = tmp_path / "out"
    s = import_docs([str(bad), str(good)], out, id_field="id", license="x", offline=True)
    ids = {r["id"] for r in pq.read_table(out / "documents.parquet").to_pylist()}
    assert "g" in ids and "0" in ids and "2999" in ids and "1500" not in ids
    skipped = pq.read_table(out / "skipped.parquet").to_pylist()
    assert s["records"] == 3001 == s["documents"] + s["skipped"]
    assert {r["skip_reason"] for r in skipped} == {"malformed_row"}
    assert {r["record_offset"] for r in skipped} == set(range(1000, 2000))
    assert str(bad) in skipped[0]["skip_detail"] and "row group 1" in skipped[0]["skip_detail"]
    assert not (out / "_parts").exists()


def test_a_parquet_string_that_is_not_utf8_rejects_only_its_row(tmp_path):
    text = pa.array([b"fine text", b"bad \xff\xfe text", b"more fine"], type=pa.binary())
    path = tmp_path / "badutf8.parquet"
    pq.write_table(pa.table({"id": ["1", "2", "3"], "text": text.view(pa.string())}), path)
    s = import_docs([str(path)], tmp_path / "out", id_field="id", license="x", offline=True)
    ids = {r["id"] for r in pq.read_table(tmp_path / "out" / "documents.parquet").to_pylist()}
    (skip,) = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    assert ids == {"1", "3"} and s["records"] == 3
    assert skip["record_offset"] == 1 and skip["skip_reason"] == "malformed_row"
    assert "'text'" in skip["skip_detail"] and "UTF-8" in skip["skip_detail"]


def test_a_wacz_with_two_members_of_one_name_is_refused_in_one_line(tmp_path):
    import warnings

    warc = _warc_record("http://127.0.0.2/x", _http(_html(1)))
    path = tmp_path / "dup.wacz"
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as z:
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name, and writes it
        z.writestr(zipfile.ZipInfo("archive/a.warc"), warc)
        z.writestr(zipfile.ZipInfo("archive/a.warc"), warc.replace(b"/x", b"/y"))
    with pytest.raises(ValueError, match=r"dup\.wacz: .*more than once: archive/a\.warc;"):
        import_warc([str(path)], tmp_path / "out", offline=True)
