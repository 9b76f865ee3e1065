"""Edge cases of the importers, each a reviewer's finding: a WET record cut mid-way is a skip,
not part of its text; meta robots is read as the HTML parser reads it (UTF-16, character
references); an archive's unverifiable payload digests never make two bodies one; an
upper-case scheme is still http; a corpus row's nested no to training wins; a host spelling
aiohttp refuses is one line with the fix; a status code is three ASCII digits; a text file
named .warc is one skip."""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawlers.extract.warc import read_response
from crawlers.imports import warc as warc_mod
from crawlers.imports.docs import import_docs
from crawlers.imports.run import import_warc
from crawlers.imports.sources import RemoteRefused, remote_info
from crawlers.imports.wet import import_wet
from tests.imports.styles import http, record, write

HOST = "http://127.0.0.2:9"


def _scan(path: Path, tmp: Path) -> list[dict]:
    return warc_mod.scan_file(str(path), warc_mod.ScanOptions(), tmp / "warc", path.name)


def _table(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


# -- a WET record cut mid-way -------------------------------------------------------------------


def _wet(url: str, text: bytes) -> bytes:
    return record("conversion", url, text, "text/plain")


def test_a_wet_record_cut_mid_way_is_a_short_record_and_the_whole_copy_is_kept(tmp_path):
    rng = random.Random(7)
    words = " ".join(f"{rng.getrandbits(40):x}" for _ in range(800)).encode()  # ~9 KB
    full = write(
        tmp_path / "b-full.warc.wet.gz",
        [_wet(f"{HOST}/w0", b"short one"), _wet(f"{HOST}/w1", words)],
    )
    raw = full.read_bytes()
    last = raw.rfind(b"\x1f\x8b\x08")
    cut = tmp_path / "a-cut.warc.wet.gz"
    cut.write_bytes(raw[: last + (len(raw) - last) // 2])  # the file ends inside record 2
    s = import_wet([str(cut), str(full)], tmp_path / "out", offline=True)
    docs = _table(tmp_path / "out" / "documents.parquet")
    skips = _table(tmp_path / "out" / "skipped.parquet")
    assert s["records"] == 4 and s["documents"] == 2
    by_file = {(Path(d["source_file"]).name, d["url"][-2:]): d for d in docs}
    assert by_file[("b-full.warc.wet.gz", "w1")]["text"] == words.decode()  # the whole text
    assert [(Path(r["source_file"]).name, r["skip_reason"]) for r in skips] == [
        ("a-cut.warc.wet.gz", "short_record"),
        ("b-full.warc.wet.gz", "duplicate_payload"),  # w0 again; w1 repeats no cut copy
    ]
    assert "bytes before its Content-Length" in skips[0]["skip_detail"]


def test_a_wet_record_failing_its_block_digest_is_a_skip(tmp_path):
    rec = _wet(f"{HOST}/w", b"the text the digest was made for")
    rec = rec.replace(b"made for", b"not made")  # same length, other bytes
    s = import_wet([str(write(tmp_path / "d.wet.gz", [rec]))], tmp_path / "out", offline=True)
    assert s["documents"] == 0 and s["skipped_by_reason"] == {"digest_mismatch": 1}


# -- meta robots as the parser reads it --------------------------------------------------------

META = '<meta name="robots" content="noai">'


def _html(head: str, word: str) -> str:
    return (
        f"<!doctype html><html><head>{head}<title>t</title></head><body><p>{word}</p></body></html>"
    )


@pytest.mark.parametrize(
    ("body", "ctype", "noai"),
    [
        (_html(META, "utf8").encode(), "text/html; charset=utf-8", True),
        (_html(META, "bom").encode("utf-16"), "text/html; charset=utf-16", True),
        (_html(META, "le").encode("utf-16-le"), "text/html; charset=utf-16le", True),
        (_html(META, "bom-only").encode("utf-16"), "text/html", True),
        (_html(META, "be").encode("utf-16-be"), "text/html", True),
        (_html('<meta name="robots" content="no&#97;i">', "ref").encode(), "text/html", True),
        (_html('<meta name="rob&#x6f;ts" content="noai">', "ref2").encode(), "text/html", True),
        (_html('<meta content="a>b" name="robots" x="noai">', "gt").encode(), "text/html", False),
        (_html('<meta content="noai" data-x="a>b" name="robots">', "gt2").encode(), "", True),
        (
            _html('<meta name="ＲＯＢＯＴＳ" content="ＮＯＡＩ">', "wide").encode(),
            "text/html",
            True,
        ),
        (_html('<meta name="robots" content="index, follow">', "plain").encode(), "", False),
        (_html('<meta name="viewport" content="noai">', "other").encode(), "", False),
        (_html('<meta name="RefineryBot-Extended" content="noai">', "token").encode(), "", True),
    ],
)
def test_meta_robots_is_read_as_the_html_parser_reads_it(tmp_path, body, ctype, noai):
    headers = [("Content-Type", ctype)] if ctype else []
    src = write(
        tmp_path / "m.warc",
        [record("response", f"{HOST}/m", http("HTTP/1.1 200 OK", headers, body))],
        gz="none",
    )
    (row,) = _scan(src, tmp_path)
    assert row["kind"] == "page" and row["noai"] is noai
    assert row["archived_meta_optout"] == ("noai" if noai else None)


def test_an_imported_utf16_page_with_meta_noai_is_not_allowed(tmp_path):
    body = _html(META, "utf16 page").encode("utf-16")
    block = http("HTTP/1.1 200 OK", [("Content-Type", "text/html; charset=utf-16")], body)
    src = write(tmp_path / "u.warc.gz", [record("response", f"{HOST}/u", block)])
    import_warc([str(src)], tmp_path / "out", offline=True)
    (row,) = _table(tmp_path / "out" / "pages.parquet")
    assert row["noai"] is True and row["archived_meta_optout"] == "noai"
    assert "archived meta: robots noai" in row["consent_source"]


# -- payload digests the archive states but nobody verified ------------------------------------


def test_pages_sharing_an_unverifiable_payload_digest_are_not_repeats(tmp_path):
    digests = ["md5:d41d8cd98f00b204e9800998ecf8427e", "foo:bar", "sha256:0000", "sha1:AAAA"]
    recs = []
    for i in range(8):
        block = http(
            "HTTP/1.1 200 OK", [("Content-Type", "text/html")], _html("", f"p{i}").encode()
        )
        extra = [("WARC-Payload-Digest", digests[i // 2])]
        recs.append(record("response", f"{HOST}/d{i}", block, digests=False, extra=extra))
    same = http("HTTP/1.1 200 OK", [("Content-Type", "text/html")], _html("", "p0").encode())
    recs.append(record("response", f"{HOST}/again", same, digests=False))  # a real repeat
    revisit = record(
        "revisit",
        f"{HOST}/d2",
        b"",
        digests=False,
        extra=[("WARC-Payload-Digest", "foo:bar"), ("WARC-Refers-To-Target-URI", f"{HOST}/d2")],
    )
    src = write(tmp_path / "d.warc", [*recs, revisit], gz="none")
    s = import_warc([str(src)], tmp_path / "out", offline=True)
    pages = [r["url"].rsplit("/", 1)[1] for r in _table(tmp_path / "out" / "pages.parquet")]
    assert pages == [f"d{i}" for i in range(8)]
    assert s["skipped_by_reason"] == {"duplicate_payload": 1, "revisit": 1}
    skips = {r["url"].rsplit("/", 1)[1]: r for r in _table(tmp_path / "out" / "skipped.parquet")}
    assert skips["again"]["skip_detail"].endswith("d.warc@0")  # the page with the same body


# -- an upper-case scheme ----------------------------------------------------------------------


@pytest.mark.parametrize("gz", ["record", "none"])
def test_a_response_under_an_upper_case_scheme_is_a_page_extraction_reads(tmp_path, gz):
    recs = []
    for uri in ["HTTP://127.0.0.2:9/UP", "Https://127.0.0.2:9/mixed", "http://127.0.0.2:9/low"]:
        body = _html("", f"page at {uri}").encode()
        recs.append(
            record("response", uri, http("HTTP/1.1 200 OK", [("Content-Type", "text/html")], body))
        )
    src = write(tmp_path / f"up.warc{'.gz' if gz == 'record' else ''}", recs, gz=gz)
    s = import_warc([str(src)], tmp_path / "out", offline=True)
    pages = _table(tmp_path / "out" / "pages.parquet")
    assert s["skipped"] == 0
    assert [p["url"] for p in pages] == [
        "http://127.0.0.2:9/UP",
        "https://127.0.0.2:9/mixed",
        "http://127.0.0.2:9/low",
    ]
    for p in pages:
        path = p["warc_file"]
        path = path if path.startswith("/") else str(tmp_path / "out" / path)
        got = read_response(path, p["warc_offset"], p["warc_length"])
        assert got.status == 200 and got.body.startswith(b"<!doctype html>"), p["import_mode"]
    assert pages[2]["import_mode"] == "referenced"


# -- status codes ------------------------------------------------------------------------------


def test_a_status_code_is_three_ascii_digits(tmp_path):
    statuses = ["2OO OK", "２００ OK", "²⁰⁰ OK", "0200 OK", "200 OK"]
    recs = [
        record(
            "response",
            f"{HOST}/s{i}",
            http(f"HTTP/1.1 {st}", [("Content-Type", "text/html")], _html("", str(i)).encode()),
        )
        for i, st in enumerate(statuses)
    ]
    rows = _scan(write(tmp_path / "s.warc", recs, gz="none"), tmp_path)
    assert [(r["url"][-2:], r["kind"], r.get("skip_reason")) for r in rows] == [
        ("s0", "skip", "no_http_headers"),
        ("s1", "skip", "no_http_headers"),
        ("s2", "skip", "no_http_headers"),
        ("s3", "skip", "no_http_headers"),
        ("s4", "page", None),
    ]


# -- a text file named .warc -------------------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True])
def test_a_text_file_named_warc_is_one_malformed_record(tmp_path, gz):
    text = b"hello this is not a warc\n" * 5
    src = tmp_path / ("t.warc.gz" if gz else "t.warc")
    src.write_bytes(gzip.compress(text) if gz else text)
    rows = _scan(src, tmp_path)
    assert [r["skip_reason"] for r in rows] == ["malformed_record"]
    assert "does not begin with a WARC or ARC record" in rows[0]["skip_detail"]
    assert "'hello this is not a warc'" in rows[0]["skip_detail"]


def test_text_before_the_records_is_one_skip_and_the_records_are_read(tmp_path):
    recs = [
        record(
            "response",
            f"{HOST}/r{i}",
            http("HTTP/1.1 200 OK", [("Content-Type", "text/html")], _html("", str(i)).encode()),
        )
        for i in range(2)
    ]
    src = tmp_path / "j.warc"
    src.write_bytes(b"some notes\nabout this file\n" + b"".join(recs))
    rows = _scan(src, tmp_path)
    assert [(r["kind"], r.get("skip_reason")) for r in rows] == [
        ("skip", "malformed_record"),
        ("page", None),
        ("page", None),
    ]


# -- a corpus row's nested consent flag --------------------------------------------------------

TEXT = "A corpus document about rivers, with enough words to be a document of its own. "


def test_a_nested_training_allowed_that_is_not_true_wins(tmp_path):
    rows = [
        {"id": "url-false", "metadata": {"url": f"{HOST}/a", "training_allowed": False}},
        {"id": "false", "metadata": {"training_allowed": False}},
        {"id": "string", "metadata": {"training_allowed": "true"}},
        {"id": "zero", "training_allowed": True, "meta": {"training_allowed": 0}},
        {"id": "json", "metadata": json.dumps({"training_allowed": "false"})},
        {"id": "nested-noai", "metadata": {"noai": True}},
        {"id": "true", "metadata": {"training_allowed": True}},
        {"id": "none", "metadata": {"source": "x"}},
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({**r, "text": TEXT + r["id"]}) + "\n" for r in rows))
    import_docs([str(path)], tmp_path / "out", id_field="id", license="cc0", offline=True)
    docs = {d["id"]: d for d in _table(tmp_path / "out" / "documents.parquet")}
    allowed = {k for k, d in docs.items() if d["training_allowed"] is True}
    assert allowed == {"true", "none"}
    assert "source row: metadata.training_allowed is false" in docs["url-false"]["consent_source"]
    assert docs["false"]["consent_source"] == (
        "licence: cc0; source row: metadata.training_allowed is false"
    )
    assert "metadata.training_allowed is 'true' (str)" in docs["string"]["consent_source"]
    assert "meta.training_allowed is 0 (int)" in docs["zero"]["consent_source"]
    assert "metadata.training_allowed is 'false' (str)" in docs["json"]["consent_source"]
    assert docs["nested-noai"]["noai"] is True


def test_a_repeat_with_a_nested_no_carries_it_to_the_document_kept(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [
        {"id": "a", "text": TEXT},
        {"id": "b", "text": TEXT, "metadata": {"training_allowed": False}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_docs([str(path)], tmp_path / "out", id_field="id", license="cc0", offline=True)
    (doc,) = _table(tmp_path / "out" / "documents.parquet")
    assert doc["id"] == "a" and doc["training_allowed"] is False
    assert "source row: metadata.training_allowed is false" in doc["consent_source"]


# -- a host spelling aiohttp refuses -----------------------------------------------------------


@pytest.mark.parametrize("host", ["2130706433", "0177.0.0.1", "127.1", "127.0.0.1.", "0"])
def test_a_non_canonical_ipv4_host_is_one_line_with_the_fix(host):
    url = f"http://{host}:9/x.warc.gz"
    with pytest.raises(RemoteRefused) as err:  # refused before any connection is made
        remote_info(url, allow_private=True)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(url)
    assert "not a canonical IPv4 address" in msg
    want = "0.0.0.0" if host == "0" else "127.0.0.1"
    assert re.search(rf"write it as {re.escape(want)}$", msg), msg
