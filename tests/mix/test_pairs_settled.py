"""A mixture's `pairs` source reads the pairs as every reader of them does (`common.pairs.settle`):
a duplicate whose kept copy the consent ledger opted out enters in its place, and one image kept
in two shards of a build enters once."""

from __future__ import annotations

import pytest

from common.consent import ledger_files
from tests.images.pairsets import opt_out, pair, stored_image, write_pairs
from training.mixture.images import read_image_unit_batches
from training.mixture.sources import ReadUnit
from training.tokenizer import load_tokenizer

pytestmark = pytest.mark.timeout(60)


def _entered(files, lake, tokenizer) -> dict[str, list[int]]:
    """Row numbers of each file that become documents (the builder's read of a pairs source)."""
    consent = tuple(str(f) for f in ledger_files(lake))
    image_id = tokenizer.token_to_id("<|image|>")
    out = {}
    for f in files:
        unit = ReadUnit(
            "pairs",
            0,
            str(f),
            "drop_reason IS NULL",
            "caption",
            None,
            (),
            consent,
            "pairs",
            image_tokens=4,
        )
        batches = list(read_image_unit_batches(unit, tokenizer, image_id))
        out[f.parent.name] = [r for b in batches for r in b.rows.tolist()]
    return out


def test_a_pairs_source_enters_a_promoted_duplicate_and_one_copy_across_shards(lake, tmp_path):
    tokenizer = load_tokenizer(lake / "tokenizer" / "tokenizer.json")
    mm = tmp_path / "lake"
    base = mm / "images" / "pairs"
    s0, s1 = base / "shard=0", base / "shard=1"
    a0, a1 = stored_image(s0, (200, 100, 0)), stored_image(s1, (200, 100, 0))
    b0 = stored_image(s0, (0, 90, 200))
    shard0 = [
        pair("d0-0", "http://h/a/x.png", a0, caption="the river garden"),
        pair("d1-0", "http://h/b/x.png", a0, drop_reason="duplicate", duplicate_of="d0-0"),
        pair("d3-0", "http://h/z.png", b0, caption="the quiet house"),
    ]
    shard1 = [pair("d2-0", "http://g/x.png", a1, caption="the light house")]
    files = [write_pairs(s0, shard0, "0/2"), write_pairs(s1, shard1, "1/2")]
    # one image in two shards: the copy with the smallest id (d0-0) enters, d2-0 does not
    assert _entered(files, mm, tokenizer) == {"shard=0": [0, 2], "shard=1": []}
    opt_out(mm, "http://h/a/x.png", ["d0-0"])
    # its kept copy opted out: the other shard's kept copy enters (a kept row before a duplicate)
    assert _entered(files, mm, tokenizer) == {"shard=0": [2], "shard=1": [0]}
    opt_out(mm, "http://g/x.png", ["d2-0"])
    # no kept copy allowed: the allowed duplicate d1-0 (row 1) enters in their place
    assert _entered(files, mm, tokenizer) == {"shard=0": [1, 2], "shard=1": []}
