"""Readers of pairs settle the de-duplication again (`common.pairs.settle`): a duplicate takes the
place of its kept copy once the consent ledger opts that copy out, one image kept in two shards
is read once, and `refinery images domains` scores and writes only what the consent rule allows."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from common.consent import Consent
from common.pairs import DUPLICATE, LOW_CLIP_SCORE, kept_pairs, settled_rows

from .pairsets import opt_out, pair, stored_image, write_pairs

pytestmark = pytest.mark.timeout(60)


def test_a_duplicate_takes_the_place_of_its_kept_copy_once_the_ledger_opts_that_out(tmp_path):
    lake = tmp_path / "lake"
    out = lake / "images" / "pairs"
    img = stored_image(out, (200, 100, 0))
    rows = [
        pair("d0-0", "http://h/a/x.png", img),
        pair("d1-0", "http://h/b/x.png", img, drop_reason=DUPLICATE, duplicate_of="d0-0"),
        pair("d2-0", "http://h/c/x.png", img, drop_reason=DUPLICATE, duplicate_of="d0-0"),
    ]
    write_pairs(out, rows)
    assert [k["pair_id"] for k in kept_pairs(out, Consent.load(lake))] == ["d0-0"]
    opt_out(lake, "http://h/a/x.png", ["d0-0"])
    kept = kept_pairs(out, Consent.load(lake))
    assert [k["pair_id"] for k in kept] == ["d1-0"]  # the smallest id of the allowed copies
    ((_, settled),) = settled_rows(out, Consent.load(lake))
    by_id = {r["id"]: r for r in settled}
    assert (by_id["d2-0"]["drop_reason"], by_id["d2-0"]["duplicate_of"]) == (DUPLICATE, "d1-0")
    assert by_id["d0-0"]["drop_reason"] is None  # dropped by every reader for its consent
    opt_out(lake, "http://h/b/x.png", ["d1-0"])
    assert [k["pair_id"] for k in kept_pairs(out, Consent.load(lake))] == ["d2-0"]
    opt_out(lake, "http://h/c/x.png", ["d2-0"])
    assert kept_pairs(out, Consent.load(lake)) == []  # no allowed copy left


def test_one_image_kept_in_two_shards_is_read_once_whatever_the_order(tmp_path):
    base = tmp_path / "lake" / "images" / "pairs"
    s0, s1 = base / "shard=0", base / "shard=1"
    img0, img1 = stored_image(s0, (10, 120, 200)), stored_image(s1, (10, 120, 200))
    other = stored_image(s1, (0, 0, 0))
    write_pairs(s0, [pair("d1-0", "http://a/x.png", img0, clip_score=0.30)], "0/2")
    write_pairs(
        s1,
        [
            pair("d0-0", "http://b/x.png", img1, clip_score=0.30),
            pair("d5-0", "http://b/y.png", other, clip_score=0.10),
        ],
        "1/2",
    )
    for given in (base, [s1 / "pairs.parquet", s0 / "pairs.parquet"]):
        kept = kept_pairs(given)
        assert sorted(k["pair_id"] for k in kept) == ["d0-0", "d5-0"]  # tie: the smaller id
    settled = {r["id"]: r for _, rows in settled_rows(base) for r in rows}
    assert (settled["d1-0"]["drop_reason"], settled["d1-0"]["duplicate_of"]) == (
        DUPLICATE,
        "d0-0",
    )
    # the better-scored copy wins, in whichever shard it is
    write_pairs(s0, [pair("d1-0", "http://a/x.png", img0, clip_score=0.35)], "0/2")
    assert sorted(k["pair_id"] for k in kept_pairs(base)) == ["d1-0", "d5-0"]
    # one shard read alone keeps its own copy
    assert [k["pair_id"] for k in kept_pairs(s1)] == ["d0-0", "d5-0"]


@pytest.mark.parametrize("cut", [0.25, "absent"])
def test_a_duplicate_under_the_builds_score_cut_is_never_promoted(tmp_path, cut):
    """The cut comes from the pairs manifest, or, without one there, is taken as the lowest
    score kept when some pair was cut (0.25 here): a copy scoring 0.2 stays a duplicate."""
    lake = tmp_path / "lake"
    out = lake / "images" / "pairs"
    img, low = stored_image(out, (1, 2, 3)), stored_image(out, (9, 9, 9))
    rows = [
        pair("d0-0", "http://h/a/x.png", img, clip_score=0.4),
        pair("d1-0", "http://h/b/x.png", img, clip_score=0.2, drop_reason=DUPLICATE),
        pair("d2-0", "http://h/c/z.png", low, clip_score=0.25),
        pair("d3-0", "http://h/c/w.png", low, clip_score=0.1, drop_reason=LOW_CLIP_SCORE),
    ]
    rows[1]["duplicate_of"] = "d0-0"
    rows[3]["image_sha256"] = "f" * 64
    write_pairs(out, rows, cut=cut)
    opt_out(lake, "http://h/a/x.png", ["d0-0"])
    assert [k["pair_id"] for k in kept_pairs(out, Consent.load(lake))] == ["d2-0"]
    rows[1]["clip_score"] = 0.3  # over the cut: promoted
    write_pairs(out, rows, cut=cut)
    assert [k["pair_id"] for k in kept_pairs(out, Consent.load(lake))] == ["d1-0", "d2-0"]


def test_the_reasons_are_the_filters_own():
    from filters.images.dedup import DUPLICATE as FILTER_DUPLICATE
    from filters.images.pairs import LOW_CLIP_SCORE as FILTER_LOW

    assert (DUPLICATE, LOW_CLIP_SCORE) == (FILTER_DUPLICATE, FILTER_LOW)


class _Scorer:
    """A stand-in CLIP: records the images it is handed."""

    seen: list[str] = []

    def __init__(self, spec: str):
        pass

    def similarity(self, paths, prompts):
        _Scorer.seen.extend(paths)
        sims = np.full((len(paths), len(prompts)), 0.3)
        sims[:, 0] = 0.9
        return sims


def test_domains_scores_and_writes_only_what_the_consent_rule_allows(tmp_path, monkeypatch):
    import types

    from pipelines.cli import app

    lake = tmp_path / "lake"
    out = lake / "images" / "pairs"
    rows = [
        pair(
            f"d{i}-0", f"http://h/{i}.png", stored_image(out, (i * 40, 9, 9)), caption="a map of x"
        )
        for i in range(4)
    ]
    rows[2]["training_allowed"] = False  # the flag alone
    write_pairs(out, rows)
    opt_out(lake, "http://h/1.png", ["d1-0"])  # by the image URL, as the recheck writes it
    # the stand-in without importing torch and open_clip for it (7 s)
    monkeypatch.setitem(sys.modules, "training.clip", types.SimpleNamespace(ClipScorer=_Scorer))
    monkeypatch.setenv("REFINERY_HOME", str(lake))
    _Scorer.seen = []
    res = CliRunner().invoke(
        app,
        ["images", "domains", "--pairs", str(out), "--clip", "stub", "--out", str(tmp_path / "d")],
    )
    assert res.exit_code == 0, res.output
    assert sorted(Path(p).name for p in _Scorer.seen) == sorted(
        Path(rows[i]["image_path"]).name for i in (0, 3)
    )
    table = pq.read_table(tmp_path / "d" / "domain_images.parquet")
    assert set(table["id"].to_pylist()) == {"d0-0", "d3-0"}
    assert set(table["training_allowed"].to_pylist()) == {True}
    assert {"doc_id", "src", "caption"} <= set(table.column_names)
    got = {r["id"]: r for r in table.to_pylist()}
    assert (got["d3-0"]["doc_id"], got["d3-0"]["src"]) == ("d3", "http://h/3.png")
    assert '"opted_out_skipped": 2' in res.output or "opted_out_skipped=2" in res.output
