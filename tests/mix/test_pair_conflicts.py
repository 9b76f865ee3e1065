"""A pair id that several pairs.parquet files record (two image-stage runs): an opt-out in any
of them wins, and which image it names does not depend on the files' names or order."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from training.mixture.builder import build_mixture
from training.mixture.images import PairIndex

pytestmark = pytest.mark.timeout(120)


def _run(root, run: str, allowed: bool, seed: int = 1) -> str:
    """One image-stage run's pairs.parquet knowing pair p1 (its image drawn from `seed`)."""
    d = root / "images" / "pairs" / run
    (d / "images").mkdir(parents=True)
    pixels = np.random.default_rng(seed).integers(0, 255, (16, 16, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(d / "images" / "p1.png", "PNG")
    sha = hashlib.sha256((d / "images" / "p1.png").read_bytes()).hexdigest()
    row = {"id": "p1", "doc_id": "docX", "caption": "a cat", "image_sha256": sha}
    row |= {"image_path": "images/p1.png", "training_allowed": allowed}
    pq.write_table(pa.Table.from_pylist([row]), d / "pairs.parquet")
    return str(d / "pairs.parquet")


@pytest.mark.parametrize("opted_out_run", ["a-2025", "c-2025"])  # sorts first, sorts last
def test_an_opt_out_in_any_pairs_file_keeps_the_image_out(lake, tmp_path, opted_out_run):
    root = tmp_path / "lake"
    _run(root, opted_out_run, allowed=False)
    _run(root, "b-2024", allowed=True)
    (root / "images" / "interleaved").mkdir(parents=True)
    text = {"kind": "text", "text": "the river garden music " * 5, "pair_id": None}
    image = {"kind": "image", "text": None, "pair_id": "p1"}
    rows = [
        {"doc_id": f"i{k}", "training_allowed": True, "blocks": [text, image]} for k in range(20)
    ]
    pq.write_table(pa.Table.from_pylist(rows), root / "images/interleaved/interleaved.parquet")
    source = {
        "path": "lake/images/interleaved/interleaved.parquet",
        "kind": "interleaved",
        "pairs": "lake/images/pairs/*/pairs.parquet",
    }
    spec = {
        "name": "pairs",
        "seq_len": 64,
        "total_tokens": 800,
        "seed": 1,
        "tokenizer": str(lake / "tokenizer" / "tokenizer.json"),
        "image_tokens": 4,
        "allow_shortfall": True,
        "eval": {"sequences_per_group": 0},
        "buckets": {"mm": {"weight": 1.0, "modality": "interleaved", "sources": [source]}},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    m = build_mixture(path, tmp_path / "mix", lake_root=root)
    assert m["images"]["count"] == 0 and m["buckets"]["mm"]["images"] == 0
    assert m["sources"][0]["rejected"] == {"image_opted_out": 20}


def test_a_pair_recorded_twice_resolves_the_same_whatever_the_file_order(tmp_path):
    one = _run(tmp_path / "x", "r1", allowed=True, seed=1)
    two = _run(tmp_path / "x", "r2", allowed=True, seed=2)  # another image under the same id
    a, b = PairIndex((one, two)).get("p1"), PairIndex((two, one)).get("p1")
    assert (
        a == b
        and a.allowed
        and a.sha256 == min(pq.read_table(f)["image_sha256"][0].as_py() for f in (one, two))
    )
    out = _run(tmp_path / "y", "r3", allowed=False, seed=3)
    for files in ((one, out), (out, one)):
        assert PairIndex(files).get("p1").allowed is False
