"""`import wet` keeps each record's WARC-Payload-Digest in `payload_digest`, one of the provenance
columns docs/contracts.md lists on every row: on documents and on skipped rows alike (a repeat
too), null where the record carries none; `import docs` rows, from no record, have it null."""

from __future__ import annotations

import json
import uuid

import pyarrow.parquet as pq

from crawlers.imports.docs import import_docs
from crawlers.imports.wet import import_wet


def _wet_record(url: str, text: bytes, digest: str | None) -> bytes:
    head = [
        "WARC/1.0",
        "WARC-Type: conversion",
        f"WARC-Record-ID: <urn:uuid:{uuid.uuid4()}>",
        "WARC-Date: 2024-01-01T00:00:00Z",
        f"WARC-Target-URI: {url}",
    ]
    if digest:
        head.append(f"WARC-Payload-Digest: {digest}")
    head += ["Content-Type: text/plain", f"Content-Length: {len(text)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + text + b"\r\n\r\n"


def test_wet_rows_carry_the_records_payload_digest(tmp_path):
    src = tmp_path / "a.warc.wet"
    src.write_bytes(
        _wet_record("http://127.0.0.2/a", b"first text", "sha1:AAAA")
        + _wet_record("http://127.0.0.2/b", b"second text", None)
        + _wet_record("http://127.0.0.2/c", b"first text", "sha1:CCCC")  # a repeat of /a
        + _wet_record("http://127.0.0.2/d", b"   ", "sha1:DDDD")  # empty text
    )
    s = import_wet([str(src)], tmp_path / "out", offline=True)
    assert s["records"] == 4 and s["documents"] == 2 and s["skipped"] == 2
    docs = pq.read_table(tmp_path / "out" / "documents.parquet")
    skips = pq.read_table(tmp_path / "out" / "skipped.parquet")
    assert docs.schema.field("payload_digest").type == "string"
    assert skips.schema.field("payload_digest").type == "string"
    by_url = {r["url"][-1]: r["payload_digest"] for r in docs.to_pylist() + skips.to_pylist()}
    assert by_url == {"a": "sha1:AAAA", "b": None, "c": "sha1:CCCC", "d": "sha1:DDDD"}


def test_import_docs_rows_have_a_null_payload_digest(tmp_path):
    src = tmp_path / "corpus.jsonl"
    src.write_text(json.dumps({"text": "a corpus text", "id": "1"}) + "\n")
    import_docs([str(src)], tmp_path / "out", license="cc-by-4.0", offline=True)
    (row,) = pq.read_table(tmp_path / "out" / "documents.parquet").to_pylist()
    assert "payload_digest" in row and row["payload_digest"] is None
