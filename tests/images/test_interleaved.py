"""Interleaved documents filtered in place: dropped images leave, text and order stay, kept image
blocks carry pair id and score, document rules drop with a reason; extract's real output shape."""

from __future__ import annotations

import pyarrow as pa
import pytest

from common.schemas import INTERLEAVED
from crawlers.extract.content import extract_content, image_refs
from filters.images.config import ImageFilterConfig, InterleavedConfig
from filters.images.interleaved import (
    DOC_DROP_REASONS,
    INTERLEAVED_OUT,
    PairIndex,
    documents_table,
    filter_document,
    filter_documents,
    report_table,
)

TEXT = "Paragraph text that is long enough to count as prose on the page. " * 4


def _text(t: str) -> dict:
    return {"kind": "text", "text": t, "src": None, "alt": None}


def _image(src: str, alt: str = "") -> dict:
    return {"kind": "image", "text": None, "src": src, "alt": alt}


def _doc(doc_id: str, blocks: list[dict], allowed: bool = True) -> dict:
    return {
        "doc_id": doc_id,
        "url": f"https://x.test/{doc_id}",
        "blocks": blocks,
        "training_allowed": allowed,
    }


def _pair(pid: str, doc_id: str, src: str, reason=None, score=None, position=None) -> dict:
    row = {"id": pid, "doc_id": doc_id, "src": src, "drop_reason": reason, "clip_score": score}
    row["training_allowed"] = True  # as every `images build` pairs row carries it
    if position is not None:
        row["position"] = position
    return row


def test_dropped_image_leaves_text_and_order_stay():
    doc = _doc(
        "d1",
        [
            _text("A" + TEXT),
            _image("u/a.png", "a"),
            _text("B" + TEXT),
            _image("u/b.png", "b"),
            _image("u/c.png", "c"),
            _text("C" + TEXT),
        ],
    )
    pairs = [
        _pair("p-a", "d1", "u/a.png", score=0.31),
        _pair("p-b", "d1", "u/b.png", reason="bad_caption"),
        _pair("p-c", "d1", "u/c.png", score=None),
    ]
    kept, report = filter_documents([doc], pairs)
    assert report == [
        {
            "doc_id": "d1",
            "n_images_in": 3,
            "n_images_kept": 2,
            "n_text_chars": 3 * len("A" + TEXT),
            "drop_reason": None,
        }
    ]
    blocks = kept[0]["blocks"]
    assert [(b["kind"], b["text"] and b["text"][0], b["src"]) for b in blocks] == [
        ("text", "A", None),
        ("image", None, "u/a.png"),
        ("text", "B", None),
        ("image", None, "u/c.png"),
        ("text", "C", None),
    ]
    assert [(b["pair_id"], b["clip_score"]) for b in blocks] == [
        (None, None),
        ("p-a", 0.31),
        (None, None),
        ("p-c", None),
        (None, None),
    ]
    assert blocks[1]["alt"] == "a"  # the original alt is kept on the block
    assert kept[0]["url"] == "https://x.test/d1" and kept[0]["training_allowed"] is True
    assert doc["blocks"][3]["src"] == "u/b.png"  # input not mutated


def test_same_src_twice_matches_by_occurrence_or_position():
    blocks = [_image("u/x.png"), _text(TEXT), _image("u/x.png")]
    doc = _doc("d", blocks)
    by_order = [_pair("first", "d", "u/x.png", reason="duplicate"), _pair("second", "d", "u/x.png")]
    kept, _ = filter_documents([doc], by_order)
    assert [b["pair_id"] for b in kept[0]["blocks"]] == [None, "second"]
    assert [b["kind"] for b in kept[0]["blocks"]] == ["text", "image"]
    # With `position` (image_refs' block index) the order of the pairs rows does not matter.
    by_pos = [
        _pair("second", "d", "u/x.png", position=2),
        _pair("first", "d", "u/x.png", reason="duplicate", position=0),
    ]
    kept, _ = filter_documents([doc], by_pos)
    assert [b["pair_id"] for b in kept[0]["blocks"]] == [None, "second"]


def test_image_without_pairs_row_is_dropped():
    doc = _doc("d", [_text(TEXT), _image("u/a.png"), _image("u/b.png")])
    kept, report = filter_documents([doc], [_pair("p", "d", "u/b.png")])
    assert [b["src"] for b in kept[0]["blocks"]] == [None, "u/b.png"]
    assert report[0]["n_images_in"] == 2 and report[0]["n_images_kept"] == 1


@pytest.mark.parametrize(
    ("n_images", "text", "cfg", "reason"),
    [
        (0, TEXT, InterleavedConfig(), "too_few_images"),
        (31, TEXT * 20, InterleavedConfig(), "too_many_images"),
        (30, TEXT * 20, InterleavedConfig(), None),  # OBELICS: 1-30 images
        (1, TEXT, InterleavedConfig(), None),
        (1, "short", InterleavedConfig(), "too_little_text"),
        (1, "short", InterleavedConfig(min_text_chars=0, max_images_per_1k_chars=1000), None),
        (5, TEXT, InterleavedConfig(max_images_per_1k_chars=10), "too_many_images_per_text"),
        (2, TEXT, InterleavedConfig(max_images_per_1k_chars=10), None),
        (3, "", InterleavedConfig(min_images=0, min_text_chars=0), "too_many_images_per_text"),
        (0, "", InterleavedConfig(min_images=0, min_text_chars=0), None),
    ],
)
def test_document_rules(n_images, text, cfg, reason):
    blocks = [_text(text)] if text else []
    blocks += [_image(f"u/{i}.png") for i in range(n_images)]
    pairs = [_pair(f"p{i}", "d", f"u/{i}.png") for i in range(n_images)]
    document, row = filter_document(
        _doc("d", blocks), PairIndex.build(pairs).for_document("d", blocks), cfg
    )
    assert row["drop_reason"] == reason
    assert reason is None or reason in DOC_DROP_REASONS
    kept, report = filter_documents([_doc("d", blocks)], pairs, cfg)
    assert report[0]["drop_reason"] == reason
    assert len(kept) == (reason is None)


def test_rules_count_images_after_drops():
    blocks = [_text(TEXT)] + [_image(f"u/{i}.png") for i in range(3)]
    pairs = [_pair(f"p{i}", "d", f"u/{i}.png", reason="low_clip_score") for i in range(3)]
    _, report = filter_documents([_doc("d", blocks)], pairs)
    assert report[0] == {
        "doc_id": "d",
        "n_images_in": 3,
        "n_images_kept": 0,
        "n_text_chars": len(TEXT),
        "drop_reason": "too_few_images",
    }


def test_config_validation_names_the_field():
    from filters.config import ConfigError
    from filters.images.config import image_config_from_dict

    with pytest.raises(ConfigError, match="interleaved.*min_images"):
        image_config_from_dict({"interleaved": {"min_images": 5, "max_images": 2}}, "x.yaml")
    with pytest.raises(ConfigError, match=r"x.yaml.*interleaved\.max_imgs"):
        image_config_from_dict({"interleaved": {"max_imgs": 3}}, "x.yaml")
    assert ImageFilterConfig().interleaved.max_images == 30


def test_real_extract_output_round_trips_through_arrow():
    html = f"""<html><head><title>Birds</title></head><body><article>
      <h1>Birds of the coast</h1>
      <p>{TEXT}</p>
      <figure><img src="/img/gull.jpg" alt="A gull on a post"></figure>
      <p>Between the pictures there is more text. {TEXT}</p>
      <p>An inline <img src="/img/logo.png" alt="logo"> image in a paragraph. {TEXT}</p>
      <figure><img src="/img/tern.jpg" alt="A tern diving into the sea"></figure>
      <p>Closing words of the article. {TEXT}</p>
    </article></body></html>"""
    content = extract_content(html, "https://birds.test/coast")
    assert content is not None
    blocks = content.blocks
    refs = image_refs(blocks)
    srcs = [r["src"] for r in refs]
    assert len(refs) >= 2 and "https://birds.test/img/gull.jpg" in srcs
    # Arrow round trip in extract's own schema, as interleaved.parquet holds it.
    doc_table = pa.Table.from_pylist([_doc("doc1", blocks)], schema=INTERLEAVED)
    pairs = [
        _pair(
            f"doc1-{r['position']}",
            "doc1",
            r["src"],
            reason="repeated_url" if r["src"].endswith("logo.png") else None,
            score=0.3,
            position=r["position"],
        )
        for r in refs
    ]
    kept, report = filter_documents(doc_table.to_pylist(), pairs)
    assert report[0]["drop_reason"] is None
    out_blocks = kept[0]["blocks"]
    assert all(not (b["src"] or "").endswith("logo.png") for b in out_blocks)
    texts_in = [b["text"] for b in blocks if b["kind"] == "text"]
    assert [b["text"] for b in out_blocks if b["kind"] == "text"] == texts_in
    kept_ids = [b["pair_id"] for b in out_blocks if b["kind"] == "image"]
    assert kept_ids == [p["id"] for p in pairs if p["drop_reason"] is None]
    table = documents_table(kept)
    assert table.schema == INTERLEAVED_OUT
    assert table.schema.names == INTERLEAVED.names  # same columns as extract's
    assert table.to_pylist() == kept
    assert report_table(report).num_rows == 1


def test_pairs_the_ledger_opted_out_or_without_a_flag_leave_the_document(tmp_path):
    # The consent ledger opts image 1 out by its URL after the pairs were built; pair 3's row
    # has no training_allowed at all (no consent evidence): neither keeps its image slot.
    from common.consent import Consent, append_ledger

    blocks = [
        _text("A" + TEXT),
        _image("http://a.test/1.png", "one"),
        _text("B" + TEXT),
        _image("http://a.test/2.png", "two"),
        _text("C" + TEXT),
        _image("http://a.test/3.png", "three"),
    ]
    pairs = [_pair(f"P{i}", "D1", f"http://a.test/{i}.png", position=2 * i - 1) for i in (1, 2, 3)]
    del pairs[2]["training_allowed"]
    lake = tmp_path / "lake"
    append_ledger(
        lake,
        [{"url": "http://a.test/1.png", "doc_ids": ["P1"], "training_allowed": False}],
    )
    cfg = InterleavedConfig(min_images=1, min_text_chars=10)
    kept, _ = filter_documents([_doc("D1", blocks)], pairs, cfg, Consent.load(lake))
    assert [b["pair_id"] for b in kept[0]["blocks"] if b["kind"] == "image"] == ["P2"]
    kept, _ = filter_documents([_doc("D1", blocks)], pairs, cfg)  # the flags alone
    assert [b["pair_id"] for b in kept[0]["blocks"] if b["kind"] == "image"] == ["P1", "P2"]
