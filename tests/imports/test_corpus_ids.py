"""`import docs --id-field`: an id names one document. A repeated id on the same text is a
duplicate; on a different text it is an `id_conflict` reject naming both places (never a
silent drop as a duplicate); ids made from URLs (no --id-field) still find another capture."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from crawlers.imports.docs import import_docs


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _skipped(out: Path) -> list[dict]:
    return pq.read_table(out / "skipped.parquet").to_pylist()


def test_a_repeated_id_on_a_different_text_is_an_id_conflict_naming_both_places(tmp_path):
    shards = [
        _jsonl(
            tmp_path / f"shard{s}.jsonl",
            [{"id": i, "text": f"shard {s} text {i}"} for i in range(3)],
        )
        for s in range(2)
    ]
    out = tmp_path / "out"
    s = import_docs([str(p) for p in shards], out, id_field="id", license="x", offline=True)
    assert s["documents"] == 3 and s["skipped_by_reason"] == {"id_conflict": 3}
    first = _skipped(out)[0]
    assert first["source_file"] == str(shards[1]) and first["record_offset"] == 0
    assert f"{shards[0]}@0" in first["skip_detail"] and "--id-field" in first["skip_detail"]


def test_a_repeated_id_on_the_same_text_is_a_duplicate(tmp_path):
    rows = [{"id": "a", "text": "the same words"}, {"id": "a", "text": "the same words"}]
    out = tmp_path / "out"
    s = import_docs([str(_jsonl(tmp_path / "c.jsonl", rows))], out, id_field="id", offline=True)
    assert s["documents"] == 1 and s["skipped_by_reason"] == {"duplicate_payload": 1}


def test_without_id_field_two_texts_of_one_url_are_a_duplicate_capture(tmp_path):
    rows = [
        {"url": "https://example.com/p", "text": "the page as it was"},
        {"url": "https://example.com/p", "text": "the page as it is now"},
    ]
    out = tmp_path / "out"
    s = import_docs([str(_jsonl(tmp_path / "c.jsonl", rows))], out, offline=True)
    assert s["documents"] == 1 and s["skipped_by_reason"] == {"duplicate_id": 1}
