"""Review s33, image stages: one server in Unicode and punycode is one shard; a `duplicate_of`
names a kept row after the CLIP score cut; a reading without letters has no language; a numeric
IPv4 host spelled otherwise than dotted-decimal is fetched at its address."""

from __future__ import annotations

import ipaddress

import numpy as np
import pyarrow.parquet as pq

from crawlers.images import FETCHED, fetch_images
from crawlers.images.ocr import OcrConfig, OcrEngine
from crawlers.images.ocr_scripts import reading_labels
from crawlers.images.shards import image_shard, server_key, shard_refs
from filters.images.pairs import LOW_CLIP_SCORE, apply_score_cut, build_pairs
from tests.images.ocr_render import render

from .conftest import FAST, Resource, png, ref

# --- shards: IDN hosts


IDN_SPELLINGS = [
    "http://bücher.example/a.jpg",
    "http://xn--bcher-kva.example/b.jpg",
    "http://img.bücher.example/c.jpg",
    "http://BÜCHER.example/d.jpg",
    "http://IMG.Bücher.Example./e.jpg",
    "http://user@xn--BCHER-kva.example:8080/f.jpg",
]


def test_a_server_in_unicode_and_punycode_is_one_server_and_one_shard():
    assert {server_key(u) for u in IDN_SPELLINGS} == {"xn--bcher-kva.example"}
    for shards in (2, 3, 4, 7):
        assert len({image_shard(u, shards) for u in IDN_SPELLINGS}) == 1
    refs = [{"src": u} for u in IDN_SPELLINGS]
    assert sorted(len(shard_refs(refs, k, 4)) for k in range(4)) == [0, 0, 0, len(refs)]


def test_a_src_without_a_canonical_form_keys_on_its_host():
    assert server_key("http://a..example/x.png") == server_key("http://b.a..EXAMPLE/y.png")
    assert server_key("not a url") == ""


# --- pairs: duplicate_of after the score cut


def _pairs(scores: dict[str, float], groups: dict[str, str], tmp_path, **cut):
    """Pairs of fetched rows whose image_sha256 is their group (exact duplicates), scored."""

    class Lang:
        def predict_batch(self, texts):
            return [("en", 0.99)] * len(texts)

    fetched = [
        {
            "id": rid,
            "doc_id": f"d{rid}",
            "src": f"http://h.example/{rid}.png",
            "alt": f"a red brick house by a quiet river, picture {rid}",
            "image_sha256": groups[rid],
            "image_path": f"images/{rid}.png",  # no file: no pHash, exact duplicates only
            "training_allowed": True,
            "drop_reason": None,
        }
        for rid in scores
    ]

    def score(paths, captions):
        return np.array([scores[p.rsplit("/", 1)[1][:-4]] for p in paths])

    return {r["id"]: r for r in build_pairs(fetched, tmp_path, score=score, lang_id=Lang(), **cut)}


def _duplicates_name_kept_rows(rows: dict[str, dict]) -> None:
    for r in rows.values():
        if r["duplicate_of"] is not None:
            assert rows[r["duplicate_of"]]["drop_reason"] is None, (r["id"], r["duplicate_of"])


def test_duplicates_of_a_representative_cut_by_score_are_cut_too(tmp_path):
    scores = {"a1": 0.40, "a2": 0.30, "a3": 0.35, "b1": 0.90, "b2": 0.20, "c1": 0.80}
    groups = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B", "c1": "C"}
    rows = _pairs(scores, groups, tmp_path, min_score=0.5)
    _duplicates_name_kept_rows(rows)
    got = {rid: (r["drop_reason"], r["duplicate_of"]) for rid, r in rows.items()}
    assert got == {
        "a1": (LOW_CLIP_SCORE, None),
        "a2": (LOW_CLIP_SCORE, None),
        "a3": (LOW_CLIP_SCORE, None),
        "b1": (None, None),
        "b2": ("duplicate", "b1"),  # a kept representative: stays its duplicate
        "c1": (None, None),
    }
    top = _pairs(scores, groups, tmp_path, top_fraction=0.5)
    _duplicates_name_kept_rows(top)
    assert sum(r["drop_reason"] is None for r in top.values()) == 2


def test_a_cut_representatives_duplicate_over_the_cut_takes_its_place():
    def row(rid, score, reason=None, dup=None):
        return {"id": rid, "clip_score": score, "drop_reason": reason, "duplicate_of": dup}

    rows = [
        row("r", 0.4),
        row("x", 0.7, "duplicate", "r"),
        row("y", 0.9, "duplicate", "r"),
        row("z", 0.2, "duplicate", "r"),
        row("w", 0.9, "duplicate", "r"),
    ]
    apply_score_cut(rows, 0.5)
    got = {r["id"]: (r["drop_reason"], r["duplicate_of"]) for r in rows}
    assert got == {
        "r": (LOW_CLIP_SCORE, None),
        "w": (None, None),  # the best over the cut, then the smallest id
        "x": ("duplicate", "w"),
        "y": ("duplicate", "w"),
        "z": (LOW_CLIP_SCORE, None),
    }


# --- OCR: no letters, no language


def test_a_reading_without_letters_has_no_language_nor_script():
    assert reading_labels("ara", "540") == ("und", "")
    assert reading_labels("Greek", "2024 - 17") == ("und", "")
    assert reading_labels("kor", "") == ("und", "")
    assert reading_labels("ara", "يه 12") == ("ar", "Arabic")
    assert reading_labels("Latin", "A1") == ("en", "Latin")


def test_digits_read_by_a_script_model_are_not_that_scripts_language():
    got = OcrEngine(OcrConfig(languages=("Greek",))).read(render(["3904"], "latin", size=40))
    assert got.text and not any(ch.isalpha() for ch in got.text), got.text
    assert (got.language, got.script) == ("und", "")  # was ("el", "Greek")


# --- fetch: numeric IPv4 spellings


A = "127.0.0.163"


def test_every_numeric_spelling_of_an_address_is_fetched_at_it(image_server, tmp_path):
    server = image_server({f"/{i}.png": Resource(png(40, 40 + i)) for i in range(6)}, ips=[A])
    port = server.port
    spellings = [
        str(int(ipaddress.IPv4Address(A))),  # 2130706595
        "0177.0.0.0243",
        "127.163",
        "127.0.0.0243",
        "0x7f0000a3",
    ]
    refs = [ref(f"r{i}", f"http://{h}:{port}/{i}.png") for i, h in enumerate(spellings)]
    # the same URL in two spellings: one fetch
    refs += [ref("same1", f"http://{A}:{port}/5.png"), ref("same2", f"http://127.163:{port}/5.png")]
    fetch_images(refs, tmp_path, FAST)
    rows = {r["id"]: r for r in pq.read_table(tmp_path / FETCHED).to_pylist()}
    for r in refs:
        got = rows[r["id"]]
        assert got["src"] == r["src"]  # as the page wrote it
        assert got["drop_reason"] is None and got["image_path"], (r["src"], got["error"])
    assert server.hits("/5.png") == 1
    assert all(ip == A for ip, _ in server.requests)
