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
    with pytest.raises(ValueError, match=r"documents.parquet: .*training_allowed"):
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
    from common.pairs import kept_pairs as kept

    def kept_pairs(*args):
        return [(k["image_file"], k["caption"]) for k in kept(*args)]

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


# --- the filter: only the boolean true is kept; a real boolean and the reason go out -----------

_TEXT = (
    "The river valley was settled early, and the old mill still stands beside the bridge. "
    "Farmers brought their grain there for two centuries before the railway arrived in town."
)


def _filter(tmp_path, flags: list, flag_type: pa.DataType | None = None):
    from filters.config import FilterConfig
    from filters.pipeline import output_schema, run_local

    rows = [
        {
            "id": f"d{i}",
            "url": f"http://h{i}.test/p",
            "text": f"{_TEXT} Page {i}.",
            "training_allowed": f,
        }
        for i, f in enumerate(flags)
    ]
    src = tmp_path / "documents.parquet"
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("url", pa.string()),
            ("text", pa.string()),
            (
                "training_allowed",
                flag_type or pa.Table.from_pylist(rows).schema.field("training_allowed").type,
            ),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), src)
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    work.mkdir()
    cfg = FilterConfig.model_validate({"quality": {"use_default_models": False}})
    run_local(src, out, work, output_schema(pq.read_schema(src)), cfg, None)
    return pq.read_table(out / "annotated.parquet"), pq.read_table(out / "documents.parquet")


@pytest.mark.parametrize(
    ("flags", "flag_type"),
    [
        (["false", "true", "False", "", "yes"], pa.string()),
        ([1, 0, 1], pa.int64()),
        ([math.nan, 1.0, 0.0], pa.float64()),
        ([None, None], pa.bool_()),
    ],
)
def test_filter_keeps_no_row_whose_flag_is_not_the_boolean_true(tmp_path, flags, flag_type):
    ann, kept = _filter(tmp_path, flags, flag_type)
    assert ann.schema.field("training_allowed").type == pa.bool_()
    assert kept.schema.field("training_allowed").type == pa.bool_()
    rows = ann.to_pylist()
    assert [r["training_allowed"] for r in rows] == [False] * len(flags)
    assert {r["drop_reason"] for r in rows} == {"training_not_allowed"}
    assert all(r["consent_reason"].startswith("training_allowed is") for r in rows)
    assert kept.num_rows == 0


def test_filter_true_row_goes_on_and_false_row_says_why(tmp_path):
    ann, _ = _filter(tmp_path, [True, False, None])
    rows = ann.to_pylist()
    assert [r["training_allowed"] for r in rows] == [True, False, False]
    assert rows[0]["drop_reason"] != "training_not_allowed" and rows[0]["consent_reason"] is None
    assert [r["consent_reason"] for r in rows[1:]] == [
        "training_allowed is false",
        "training_allowed is missing or null",
    ]


# --- the stage checks count a non-boolean flag as opted out, never as allowed -----------------


def _pairs_dir(tmp_path, flag_values: list, flag_type: pa.DataType):
    """pairs.parquet with one stored, kept image per row, the flags typed as another tool wrote."""
    rows = []
    for i, _ in enumerate(flag_values):
        sha = f"{i:02d}" + "ab" * 31
        path = tmp_path / "images" / sha[:2] / f"{sha}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"png")
        rows.append(
            {"id": f"p{i}", "image_path": f"images/{sha[:2]}/{sha}.png", "image_sha256": sha}
        )
    table = pa.Table.from_pylist(rows).append_column(
        "training_allowed", pa.array(flag_values, flag_type)
    )
    table = table.append_column("drop_reason", pa.array([None] * len(rows), pa.string()))
    pq.write_table(table, tmp_path / "pairs.parquet")
    return tmp_path


@pytest.mark.parametrize(
    ("flags", "flag_type"),
    [(["false", "true"], pa.string()), ([math.nan, 1.0], pa.float64()), ([0, 1], pa.int64())],
)
def test_image_pairs_check_counts_non_boolean_flags_as_opted_out(tmp_path, flags, flag_type):
    from crawlers.images.checks import image_pairs_consent

    out = image_pairs_consent(_pairs_dir(tmp_path, flags, flag_type))
    assert not out.passed
    assert out.metadata["opted_out_rows"] == len(flags)
    assert out.metadata["leaked_rows"] == len(flags)
    assert out.metadata["orphan_files"] == len(flags)


def test_image_pairs_check_passes_boolean_true(tmp_path):
    from crawlers.images.checks import image_pairs_consent

    out = image_pairs_consent(_pairs_dir(tmp_path, [True, True], pa.bool_()))
    assert out.passed and out.metadata["opted_out_rows"] == 0


def test_flag_mask_is_flag_true_over_a_column():
    from common.consent import flag_true
    from training.mixture.checks import flag_mask

    cols = [
        pa.array([True, False, None]),
        pa.array(["false", "true", None]),
        pa.array([1, 0, None], pa.int64()),
        pa.array([math.nan, 1.0, None]),
        pa.chunked_array([[True], [None, True]]),
    ]
    for col in cols:
        assert flag_mask(col).tolist() == [flag_true(v) for v in col.to_pylist()]
    assert flag_mask(cols[1]).tolist() == [False, False, False]


# --- extract: the crawl's flag only when it is the boolean true; the page's own meta opt-outs ---


def _article(head: str = "") -> bytes:
    para = " ".join(
        f"Otters live in rivers and eat fish; sentence {i} tells more about them."
        for i in range(12)
    )
    return (
        f'<html><head><meta charset="utf-8">{head}<title>Otters</title></head><body><article>'
        f'<h1>Otters</h1><p>{para}</p><img src="/o.png" alt="an otter"><p>{para}</p>'
        "</article></body></html>"
    ).encode()


def _record(body: bytes, **over) -> dict:
    rec = {
        "url": "http://127.0.0.9:8000/otters",
        "status": 200,
        "body": body,
        "content_type": "text/html; charset=utf-8",
        "crawl_allowed": True,
        "training_allowed": True,
        "robots_crawl": "allowed",
        "noai": False,
        "noimageai": False,
    }
    rec.update(over)
    return rec


@pytest.mark.parametrize("flag", NOT_TRUE)
def test_extract_carries_only_the_boolean_true(flag):
    from crawlers.extract import extract_page

    res = extract_page(_record(_article(), training_allowed=flag))
    assert res.document is not None and res.document["training_allowed"] is False
    assert [r["training_allowed"] for r in res.image_refs] == [False]
    assert res.interleaved["training_allowed"] is False
    rej = extract_page(_record(b"", training_allowed=flag, status=404)).reject
    assert rej["training_allowed"] is False


@pytest.mark.parametrize(
    ("head", "noai", "noimageai"),
    [
        ('<meta name="robots" content="noindex; noai">', True, False),
        ('<meta name="robots" content="noai noimageai">', True, True),
        ('<meta name="RefineryBot-Extended" content="NOIMAGEAI">', False, True),
        ('<meta http-equiv="X-Robots-Tag" content="noai">', True, False),
        ('<meta name="OtherBot" content="noai">', False, False),
    ],
)
def test_extract_reads_the_pages_own_opt_outs(head, noai, noimageai):
    """A page whose HTML says noai (a rendered DOM, an imported page) while its crawl record
    does not: the document and its images are not allowed; the record's flags only grow."""
    from crawlers.extract import extract_page

    res = extract_page(_record(_article(head)))
    doc = res.document
    assert (doc["noai"], doc["noimageai"]) == (noai, noimageai)
    assert doc["training_allowed"] is (not noai)
    assert [r["training_allowed"] for r in res.image_refs] == [not noai]
    res = extract_page(_record(_article(), noai=True))
    assert res.document["training_allowed"] is False and res.document["noai"] is True


def test_recheck_reads_a_string_false_as_not_allowed_at_crawl(tmp_path):
    from crawlers.consent import lake_documents

    (tmp_path / "extract").mkdir()
    rows = [
        {"id": "a", "url": "http://h.test/a", "training_allowed": "false"},
        {"id": "b", "url": "http://h.test/b", "training_allowed": "true"},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "extract" / "documents.parquet")
    docs = lake_documents(tmp_path)
    assert [docs[u].allowed_at_crawl for u in ("http://h.test/a", "http://h.test/b")] == [
        False,
        False,
    ]


def test_interleaved_documents_carry_a_boolean_and_drop_refused_pairs():
    from filters.images.config import InterleavedConfig
    from filters.images.interleaved import documents_table, filter_documents

    blocks = [
        {"kind": "text", "text": "x" * 300, "src": None, "alt": None},
        {"kind": "image", "text": None, "src": "http://i.test/a.png", "alt": "a"},
        {"kind": "image", "text": None, "src": "http://i.test/b.png", "alt": "b"},
    ]
    docs = [
        {"doc_id": d, "url": f"http://h.test/{d}", "blocks": blocks, "training_allowed": f}
        for d, f in (("d1", "false"), ("d2", True))
    ]
    pairs = [
        {"id": f"{d}-{i}", "doc_id": d, "src": b["src"], "position": i, "drop_reason": None}
        | {"training_allowed": "false" if i == 2 else True}
        for d in ("d1", "d2")
        for i, b in enumerate(blocks)
        if b["kind"] == "image"
    ]
    cfg = InterleavedConfig(min_images=1, min_text_chars=1, max_images_per_1k_chars=100)
    kept, _ = filter_documents(docs, pairs, cfg)
    assert [d["training_allowed"] for d in kept] == [False, True]
    assert [[b["src"] for b in d["blocks"] if b["kind"] == "image"] for d in kept] == [
        ["http://i.test/a.png"]
    ] * 2
    assert documents_table(kept).column("training_allowed").to_pylist() == [False, True]


def test_images_cli_honours_the_ledger_of_the_extract_outputs_lake(tmp_path, capsys):
    """`python -m crawlers.images <lake>/extract OUT`: a document the lake's ledger opted out
    has its images refused before any request (the src is a port nobody serves)."""
    import json

    from crawlers.images.__main__ import main

    lake = tmp_path / "lake"
    d = _extract_dir(lake / "extract", [_doc("d1", True)], [_ref("d1", 0, True)])
    src = "http://127.0.0.9:9/x.png"
    pq.write_table(
        pa.Table.from_pylist([{**_ref("d1", 0, True), "src": src}]), d / "image_refs.parquet"
    )
    append_ledger(lake, [_ledger_row("http://h.test/d1", ["d1"], False)])
    assert main([str(d), str(tmp_path / "out"), "--config", '{"delay": 0}']) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["requests"], summary["drop_reasons"]) == (0, {"training_opt_out": 1})
    (row,) = pq.read_table(tmp_path / "out" / "fetched.parquet").to_pylist()
    assert "consent ledger opted out" in row["error"]


def test_crawl_decisions_check_reads_flags_with_the_consent_rule(tmp_path):
    """A page whose flag is the string "false" is not marked allowed (no leak); the boolean true
    with a disallowed training decision is."""
    from crawlers.checks import crawl_robots_decisions_recorded

    def pages(flags, flag_type):
        table = pa.table(
            {
                "url": [f"http://h.test/{i}" for i in range(len(flags))],
                "robots_crawl": ["allowed"] * len(flags),
                "robots_training": ["disallowed"] * len(flags),
                "training_allowed": pa.array(flags, flag_type),
                "warc_file": pa.array([None] * len(flags), pa.string()),
            }
        )
        pq.write_table(table, tmp_path / "pages.parquet")
        return crawl_robots_decisions_recorded(tmp_path)

    out = pages(["false", "False", "true"], pa.string())
    assert out.passed and out.metadata["training_allowed_without_training_robots"] == 0
    out = pages([False, True], pa.bool_())
    assert not out.passed and out.metadata["training_allowed_without_training_robots"] == 1
