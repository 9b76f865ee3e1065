"""Consent flags where the producers read them (issue 23): a flag is consent only when it is the
boolean true (`common.consent.flag_true`), whatever other tools wrote: the string "false" (or
"true"), 1, None and NaN are all no. Image refs ask for their own flag AND their document's AND
the ledger; the filter keeps no row whose flag is not the boolean true and writes a real boolean;
the stage checks count such rows as opted out, never as allowed. Small Parquet files, no network.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.consent import Consent, append_ledger
from crawlers.images import fetch_images, load_refs, page_opt_out

NOT_TRUE = ["false", "true", "False", 1, 0, None, math.nan, "", "yes"]


def _ledger_row(url: str, doc_ids: list[str], allowed: bool) -> dict:
    return {
        "checked_at": "2026-01-01T00:00:00Z",
        "host": "h.test",
        "url": url,
        "doc_ids": doc_ids,
        "training_allowed": allowed,
        "previous": True,
        "agent": "RefineryBot-Extended",
        "agent_group": "refinerybot-extended",
        "rule": "Disallow: /",
    }


def _extract_dir(tmp_path, docs: list[dict], refs: list[dict]):
    """documents.parquet and image_refs.parquet as another tool may write them: the flags'
    types come from the values (a string column for "false")."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(docs), tmp_path / "documents.parquet")
    pq.write_table(pa.Table.from_pylist(refs), tmp_path / "image_refs.parquet")
    return tmp_path


def _doc(i: str, allowed, noai=False) -> dict:
    return {"id": i, "url": f"http://h.test/{i}", "training_allowed": allowed, "noai": noai}


def _ref(doc: str, pos: int, allowed) -> dict:
    return {
        "doc_id": doc,
        "url": f"http://h.test/{doc}",
        "position": pos,
        "src": f"http://img.test/{doc}/{pos}.png",
        "alt": "a",
        "surrounding_text": "t",
        "training_allowed": allowed,
    }


# --- image refs: the ref's flag, its document's flag, the ledger --------------------------------


def test_image_ref_string_false_is_not_consent(tmp_path):
    d = _extract_dir(
        tmp_path,
        [_doc("d1", True)],
        [_ref("d1", 0, "false"), _ref("d1", 1, "true"), _ref("d1", 2, "False")],
    )
    refs = load_refs(d)
    assert [r["training_allowed"] for r in refs] == [False, False, False]
    for r in refs:
        reason, detail = page_opt_out(r)
        assert reason == "training_opt_out"
        assert "image ref's training_allowed is" in detail and "not the boolean true" in detail


@pytest.mark.parametrize("doc_flag", [False, None, "false", "true", 1, math.nan])
def test_image_ref_needs_its_documents_flag(tmp_path, doc_flag):
    """The ref says true; its document (column typed by the value, as another tool writes it)
    does not: the image is not allowed."""
    d = _extract_dir(tmp_path, [_doc("d2", doc_flag)], [_ref("d2", 0, True)])
    (ref,) = load_refs(d)
    assert ref["training_allowed"] is False
    reason, detail = page_opt_out(ref)
    assert reason == "training_opt_out" and detail.startswith("document's training_allowed")


def test_image_ref_of_an_unknown_document_is_not_allowed(tmp_path):
    d = _extract_dir(tmp_path, [_doc("d1", True)], [_ref("d9", 0, True)])
    (ref,) = load_refs(d)
    assert ref["training_allowed"] is False
    assert "d9 is not in documents.parquet" in page_opt_out(ref)[1]


def test_image_ref_ledger_opt_out_by_document_id_or_url(tmp_path):
    lake = tmp_path / "lake"
    d = _extract_dir(
        tmp_path / "extract",
        [_doc("d1", True), _doc("d2", True), _doc("d3", True)],
        [_ref("d1", 0, True), _ref("d2", 0, True), _ref("d3", 0, True)],
    )
    append_ledger(lake, [_ledger_row("http://elsewhere.test/x", ["d1"], False)])
    append_ledger(lake, [_ledger_row("http://h.test/d2", [], False)])
    refs = load_refs(d, Consent.load(lake))
    assert [r["training_allowed"] for r in refs] == [False, False, True]
    assert "consent ledger opted out doc_id=d1" in page_opt_out(refs[0])[1]
    assert "consent ledger opted out url=http://h.test/d2" in page_opt_out(refs[1])[1]
    # Without the ledger the same refs are allowed: the ledger is what took them out.
    assert all(r["training_allowed"] for r in load_refs(d))


def test_documents_without_a_training_flag_is_one_line_error(tmp_path):
    d = _extract_dir(tmp_path, [{"id": "d1", "noai": False}], [_ref("d1", 0, True)])
    with pytest.raises(ValueError, match=r"documents.parquet: needs columns .*training_allowed"):
        load_refs(d)


@pytest.mark.parametrize("flag", NOT_TRUE)
def test_fetch_never_requests_an_image_whose_flag_is_not_true(tmp_path, flag):
    """Refs handed to fetch_images directly (a refs file): nothing but True is consent. The
    src is an address nobody serves; it is never requested (requests == 0)."""
    ref = {"id": "r", "doc_id": "d", "src": "http://127.0.0.9:9/x.png", "alt": "", "noai": False}
    s = fetch_images([{**ref, "training_allowed": flag}], tmp_path, {"delay": 0.0})
    assert (s["requests"], s["training_allowed"], s["drop_reasons"]) == (
        0,
        0,
        {"training_opt_out": 1},
    )
    (row,) = pq.read_table(tmp_path / "fetched.parquet").to_pylist()
    assert row["training_allowed"] is False and "image not requested" in row["error"]


def test_clip_pairs_need_a_true_flag_and_no_ledger_opt_out(tmp_path):
    """`refinery clip train` reads the kept pairs through the consent rule."""
    from pipelines.stages.images import kept_pairs

    rows = [
        {"id": f"p{i}", "doc_id": f"d{i}", "url": f"http://h.test/d{i}", "image_path": f"i{i}.png"}
        for i in range(4)
    ]
    flags = ["false", "true", "true", "true"]  # a string column, as another tool wrote it
    table = pa.Table.from_pylist(
        [
            {**r, "caption": "c", "drop_reason": None, "training_allowed": f}
            for r, f in zip(rows, flags, strict=True)
        ]
    )
    pq.write_table(table, tmp_path / "pairs.parquet")
    assert kept_pairs([tmp_path / "pairs.parquet"]) == []
    bools = table.set_column(
        table.schema.get_field_index("training_allowed"),
        "training_allowed",
        pa.array([False, True, True, True]),
    )
    pq.write_table(bools, tmp_path / "pairs.parquet")
    lake = tmp_path / "lake"
    append_ledger(lake, [_ledger_row("http://h.test/d2", ["d2"], False)])
    got = kept_pairs([tmp_path / "pairs.parquet"], Consent.load(lake))
    assert [p for p, _ in got] == [str(tmp_path / "i1.png"), str(tmp_path / "i3.png")]
