"""`import docs` and `import wet` on the inputs a reviewer found them weak on: a UTF-16/32 JSONL
file keeps every row; exact repeats that differ only in white space around the text (or in the
control characters extraction turns into spaces) are one document, in both; the corpus's own id,
language and dates reach `source_id`, `lang_hint`, `date` and `fetched_at`; an empty text says
it is empty; a text over the cap is a `too_large` skip; a directory, or a glob, is read without
its bookkeeping files, and a file without the text field is a file-level reject naming the fix;
an object store whose package is missing is one line naming it."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner
from warcio.warcwriter import WARCWriter

from crawlers.imports.docs import import_docs
from crawlers.imports.wet import import_wet

WORDS = "Some words here. " * 4


def row(i, **k):  # as /tmp/s34/archives/gen_edge.py writes its rows
    return {"id": f"e{i}", "text": f"Edge row {i}. " + WORDS, **k}


def _docs(out: Path) -> list[dict]:
    return pq.read_table(out / "documents.parquet").to_pylist()


def _skips(out: Path) -> list[dict]:
    return pq.read_table(out / "skipped.parquet").to_pylist()


def _cli(args: list[str]) -> tuple[int, str]:
    from pipelines.cli import app

    res = CliRunner().invoke(app, args)
    return res.exit_code, res.output


def _wet(path: Path, records: list[tuple[str, bytes]]) -> Path:
    """A WET file (gzip per record, Common Crawl's header shape) of (url, body) conversions."""
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        w.write_record(w.create_warcinfo_record(path.name, {"software": "test"}))
        for url, body in records:
            headers = {
                "WARC-Date": "2024-05-20T10:00:00Z",
                "WARC-Identified-Content-Language": "eng",
            }
            rec = w.create_warc_record(
                url,
                "conversion",
                payload=io.BytesIO(body),
                warc_content_type="text/plain",
                warc_headers_dict=headers,
            )
            w.write_record(rec)
    return path


# -- 4: UTF-16/32 JSON Lines -------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-16-le"])
def test_a_utf16_or_utf32_jsonl_file_keeps_every_row_and_invents_none(tmp_path, encoding):
    """PowerShell and Excel write JSON Lines as UTF-16 with a byte order mark (`utf-16`,
    `utf-32`: with one; `utf-16-be`: the mark written by hand; `utf-16-le`: none). Its 2-byte
    newline was cut by a split on b"\\n": row 0 was lost and a phantom row 4 invented."""
    rows = [row(i, url=f"http://127.0.0.8:18088/u16-{i}") for i in range(3)]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = "\ufeff".encode(encoding) + data
    path = tmp_path / "utf16.jsonl"
    path.write_bytes(data)
    s = import_docs([str(path)], tmp_path / "out", offline=True)
    assert (s["records"], s["documents"], s["skipped"]) == (3, 3, 0), _skips(tmp_path / "out")
    got = {d["url"]: d["text"] for d in _docs(tmp_path / "out")}
    assert got == {r["url"]: r["text"].strip() for r in rows}


def test_a_utf16_file_with_a_lone_surrogate_rejects_that_row_only(tmp_path):
    good = [json.dumps(row(i), ensure_ascii=False) for i in (0, 2)]
    bad = json.dumps(row(1), ensure_ascii=False).replace("Edge row 1", "Edge row \ud800")
    text = "\n".join([good[0], bad, good[1]]) + "\n"
    path = tmp_path / "c.jsonl"
    path.write_bytes(text.encode("utf-16", "surrogatepass"))
    s = import_docs([str(path)], tmp_path / "out", license="CC0", offline=True)
    assert (s["records"], s["documents"], s["skipped"]) == (3, 2, 1)
    (skip,) = _skips(tmp_path / "out")
    assert skip["record_offset"] == 1 and skip["skip_reason"] == "malformed_row"
    assert "line 2" in skip["skip_detail"] and "surrogate" in skip["skip_detail"]


def test_a_gzipped_utf16_jsonl_file_keeps_every_row(tmp_path):
    rows = [row(i, url=f"http://127.0.0.8:18088/g{i}") for i in range(3)]
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\r\n" for r in rows).encode("utf-16")))
    s = import_docs([str(path)], tmp_path / "out", offline=True)
    assert (s["records"], s["documents"], s["skipped"]) == (3, 3, 0)


# -- 5: exact repeats differing only in white space (docs and WET) -------------------------------


def test_corpus_rows_differing_only_in_surrounding_white_space_are_one_document(tmp_path):
    path = tmp_path / "odd.jsonl"
    rows = [
        {"id": "e34", "text": "Dup text " * 10, "url": "http://127.0.0.8:18088/o34"},
        {"id": "e35", "text": "Dup text " * 10 + "\n", "url": "http://127.0.0.8:18088/o35"},
        {"id": "e36", "text": "\t  Dup text " * 1 + "Dup text " * 9, "url": "http://h/o36"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    s = import_docs([str(path)], out, offline=True)
    (doc,) = _docs(out)
    assert doc["url"].endswith("/o34")
    assert doc["content_sha256"] == hashlib.sha256(doc["text"].encode()).hexdigest()
    assert s["skipped_by_reason"] == {"duplicate_payload": 2}


def test_wet_records_differing_only_in_surrounding_white_space_are_one_document(tmp_path):
    body = b"One text of a page, said once. " * 4
    wet = _wet(
        tmp_path / "t.warc.wet.gz",
        [("http://127.0.0.8/a", body), ("http://127.0.0.8/b", b"\n\n" + body + b"  \n")],
    )
    s = import_wet([str(wet)], tmp_path / "out", offline=True)
    (doc,) = _docs(tmp_path / "out")
    assert doc["url"] == "http://127.0.0.8/a"
    assert doc["content_sha256"] == hashlib.sha256(doc["text"].encode()).hexdigest()
    assert s["skipped_by_reason"] == {"duplicate_payload": 1, "warcinfo": 1}


# -- 6a: the corpus's own fields -----------------------------------------------------------------


def test_the_corpus_id_language_and_dates_are_kept(tmp_path):
    text = "Lorem ipsum dolor sit amet text body. " * 5
    dolma = {
        "id": "dolma-0",
        "text": text + "dolma",
        "source": "common-crawl",
        "added": "2023-08-01T00:00:00.000Z",
        "created": "2020-05-01T00:00:00.000Z",
        "metadata": {"url": "http://127.0.0.8:18088/ok-dolma"},
    }
    datatrove = {
        "text": text + "dt",
        "id": "<urn:uuid:00000000-dt>",
        "media": [],
        "metadata": {"url": "http://127.0.0.2:18082/dt0", "dump": "CC-MAIN-2024-10"}
        | {"language": "en", "language_score": 0.9},
    }
    c4 = {"text": text + "c4", "url": "http://127.0.0.8:18088/c4a"}
    c4["timestamp"] = "2019-04-25T12:57:54Z"
    (tmp_path / "c").mkdir()
    with gzip.open(tmp_path / "c" / "dolma.json.gz", "wt") as fh:
        fh.write(json.dumps(dolma) + "\n" + json.dumps(datatrove) + "\n" + json.dumps(c4) + "\n")
    fineweb = [
        {
            "text": text + f"fw{i}",
            "id": f"<urn:uuid:fw-{i}>",
            "dump": "CC-MAIN-2024-10",
            "url": f"http://127.0.0.8:18088/fw{i}",
            "date": "2024-02-20T00:00:00Z",
            "language": lang,
            "language_score": 0.93,
        }
        for i, lang in enumerate(["en", "fra_Latn"])
    ]
    pq.write_table(pa.Table.from_pylist(fineweb), tmp_path / "c" / "000_00000.parquet")
    import_docs([str(tmp_path / "c" / "*")], tmp_path / "out", offline=True)
    by_id = {d["source_id"]: d for d in _docs(tmp_path / "out")}
    assert set(by_id) == {"dolma-0", "<urn:uuid:00000000-dt>", None, "<urn:uuid:fw-0>"} | {
        "<urn:uuid:fw-1>"
    }
    # the document id is still made from the URL (one document per page)
    assert by_id["dolma-0"]["id"] != "dolma-0" and len(by_id["dolma-0"]["id"]) == 16
    assert by_id["dolma-0"]["date"] == "2020-05-01T00:00:00.000Z"  # when it was created
    assert by_id["dolma-0"]["fetched_at"] is None and by_id["dolma-0"]["lang_hint"] is None
    assert by_id["<urn:uuid:00000000-dt>"]["lang_hint"] == "en"
    assert by_id[None]["fetched_at"] == "2019-04-25T12:57:54Z"  # C4's capture time
    fw0, fw1 = by_id["<urn:uuid:fw-0>"], by_id["<urn:uuid:fw-1>"]
    assert fw0["fetched_at"] == "2024-02-20T00:00:00Z" and fw0["date"] is None  # the capture's
    assert (fw0["lang_hint"], fw1["lang_hint"]) == ("en", "fr")


def test_with_id_field_source_id_is_that_field_and_a_timestamp_column_is_iso(tmp_path):
    import datetime

    t = datetime.datetime(2024, 2, 20, 10, 0, tzinfo=datetime.UTC)
    table = pa.table(
        {
            "text": ["one text " * 5, "two text " * 5],
            "key": [1, 2],
            "timestamp": pa.array([t, t], pa.timestamp("us", tz="UTC")),
        }
    )
    pq.write_table(table, tmp_path / "c.parquet")
    out = tmp_path / "out"
    import_docs([str(tmp_path / "c.parquet")], out, id_field="key", license="MIT", offline=True)
    docs = sorted(_docs(out), key=lambda d: d["id"])
    assert [(d["id"], d["source_id"]) for d in docs] == [("1", "1"), ("2", "2")]
    assert docs[0]["fetched_at"] == "2024-02-20T10:00:00+00:00"


# -- 6b: an empty text says so -------------------------------------------------------------------


def test_an_empty_text_is_said_to_be_empty(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [{"text": ""}, {"text": "  \n "}, {"text": None}, {"text": ["a"]}, {"text": "\x00\x1b "}]
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, {"text": WORDS}]))
    import_docs([str(path)], tmp_path / "out", license="CC0", offline=True)
    details = [
        s["skip_detail"] for s in sorted(_skips(tmp_path / "out"), key=lambda s: s["record_offset"])
    ]
    assert details == [
        "field 'text' is empty",
        "field 'text' is white space only",
        "field 'text' is null",
        "field 'text' is a list, not a string (--text-field)",
        "field 'text' holds only control characters and white space",
    ]


# -- 6c: a size cap --------------------------------------------------------------------------


def test_a_text_over_the_cap_is_a_too_large_skip_and_the_rest_is_read(tmp_path):
    path = tmp_path / "huge.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(
            json.dumps({"id": "huge", "text": "lorem ipsum " * 700_000, "url": "http://h/huge"})
        )
        fh.write("\n" + json.dumps(row(40, url="http://h/after-huge")) + "\n")
    s = import_docs([str(path)], tmp_path / "out", offline=True)
    assert (s["documents"], s["skipped_by_reason"]) == (1, {"too_large": 1})
    (skip,) = _skips(tmp_path / "out")
    assert skip["url"] == "http://h/huge" and "8399999 bytes" in skip["skip_detail"]
    assert "over the cap of 8000000" in skip["skip_detail"]
    # the cap is the caller's to set (the flag of `import warc`: max_record_bytes)
    s = import_docs([str(path)], tmp_path / "out2", offline=True, max_record_bytes=50)
    assert (s["documents"], s["skipped_by_reason"]) == (0, {"too_large": 2})


# -- 6d: control characters ------------------------------------------------------------------


def test_control_characters_are_spaces_in_wet_and_corpus_text_as_in_extraction(tmp_path):
    from crawlers.extract.decode import drop_controls

    raw = "text with a \x00 NUL byte and \x1b escape\tand a tab\r\nline two\x0c"
    want = "text with a   NUL byte and   escape\tand a tab\r\nline two"
    assert drop_controls(raw).strip() == want  # what extraction makes of a crawled page's
    wet = _wet(tmp_path / "t.warc.wet.gz", [("http://127.0.0.8/nul", raw.encode())])
    import_wet([str(wet)], tmp_path / "wet", offline=True)
    (doc,) = _docs(tmp_path / "wet")
    assert doc["text"] == want
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"text": raw, "title": "a\x07title"}) + "\n")
    import_docs([str(path)], tmp_path / "docs", license="CC0", offline=True)
    (doc,) = _docs(tmp_path / "docs")
    assert (doc["text"], doc["title"]) == (want, "a title")


# -- 6e: directories, bookkeeping files, a file without the text field --------------------------


def _export_dir(root: Path) -> Path:
    """An export directory as Spark/datatrove/RedPajama leave it."""
    (root / "sub").mkdir(parents=True)
    (root / "_temporary").mkdir()
    (root / "_temporary" / "part-9.jsonl").write_text(json.dumps(row(9)) + "\n")
    (root / "b.jsonl").write_text(json.dumps(row(1)) + "\n")
    (root / "sub" / "a.jsonl").write_text(json.dumps(row(2)) + "\n")
    (root / "_SUCCESS").write_text("")
    (root / ".b.jsonl.crc").write_bytes(b"crc")
    (root / "empty.jsonl").write_text("")
    (root / "README.md").write_text("# an export\n")
    rp = {"url": "http://127.0.0.8:18088/rp0", "raw_content": "rpv2 " * 20, "language": "en"}
    with gzip.open(root / "0000_en_head.json.gz", "wt") as fh:
        fh.write(json.dumps(rp) + "\n")
    return root


def test_a_directory_reads_its_corpus_files_and_a_file_without_the_text_field_is_rejected(
    tmp_path,
):
    root = _export_dir(tmp_path / "corpus")
    out = tmp_path / "out"
    s = import_docs([str(root)], out, license="CC0", offline=True)
    assert s["files"] == 3 and s["documents"] == 2
    passed = {Path(p["file"].rstrip("/")).name: p["reason"] for p in s["files_skipped"]}
    assert set(passed) == {"_temporary", "_SUCCESS", ".b.jsonl.crc", "empty.jsonl", "README.md"}
    (why,) = s["files_rejected"]
    assert why.startswith(f"{root / '0000_en_head.json.gz'}: no row has the field 'text'")
    assert why.endswith("--text-field raw_content")
    (skip,) = _skips(out)
    assert (skip["skip_reason"], skip["skip_detail"]) == ("no_text_field", why)
    assert s["records"] == s["documents"] + s["skipped"]
    # a glob over it passes over the bookkeeping files too
    s = import_docs([str(root / "*")], tmp_path / "out2", license="CC0", offline=True)
    assert s["documents"] == 1 and len(s["files_rejected"]) == 1
    assert {Path(p["file"]).name for p in s["files_skipped"]} >= {"_SUCCESS", "empty.jsonl"}


def test_rows_before_the_first_with_the_text_field_are_recorded(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [{"body": "no text"}, {"body": "none"}, row(2), {"body": "after"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = import_docs([str(path)], tmp_path / "out", license="CC0", offline=True)
    assert (s["records"], s["documents"], s["files_rejected"]) == (4, 1, [])
    skips = sorted(_skips(tmp_path / "out"), key=lambda r: r["record_offset"])
    assert [(r["record_offset"], r["skip_reason"]) for r in skips] == [
        (0, "empty_text"), (1, "empty_text"), (3, "empty_text"),
    ]  # fmt: skip


def test_when_no_file_has_the_text_field_the_import_stops_with_the_fix(tmp_path):
    root = tmp_path / "rp"
    root.mkdir()
    for k in range(2):
        with gzip.open(root / f"000{k}_en_head.json.gz", "wt") as fh:
            fh.write(json.dumps({"url": f"http://h/{k}", "raw_content": "rpv2 " * 20}) + "\n")
    with pytest.raises(KeyError, match=r"--text-field raw_content \(and 1 more files\)"):
        import_docs([str(root)], tmp_path / "out", offline=True)
    assert not (tmp_path / "out" / "_parts").exists()
    code, output = _cli(["import", "docs", str(root), "--out", str(tmp_path / "o"), "--offline"])
    errors = [ln for ln in output.splitlines() if ln.startswith("error: ")]
    assert code == 2 and len(errors) == 1, output
    assert "0000_en_head.json.gz: no row has the field 'text'" in errors[0]
    assert "--text-field raw_content" in errors[0]


# -- 6f: an object store whose package is not installed --------------------------------------


def test_an_object_store_without_its_package_is_one_line_naming_the_fix(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "s3fs", None)  # not installed (whether or not it is here)
    from crawlers.imports.sources import MissingStore

    with pytest.raises(MissingStore, match=r"s3://bucket/x/\*\.jsonl: .*pip install s3fs"):
        import_docs(["s3://bucket/x/*.jsonl"], tmp_path / "out", offline=True)
    args = ["import", "docs", "s3://bucket/x/*.jsonl", "--out", str(tmp_path / "o"), "--offline"]
    code, output = _cli(args)
    errors = [ln for ln in output.splitlines() if ln.startswith("error: ")]
    assert code == 2 and len(errors) == 1 and "pip install s3fs" in errors[0], output
