"""The shipped multimodal specs find the image stage's pairs in either of its lake layouts: an
unsharded `refinery images build` writes `images/pairs/pairs.parquet`, a sharded one (and the
Dagster partitions) `images/pairs/shard=<k>/pairs.parquet`."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.mixture.sources import _pairs_files, source_files
from training.mixture.spec import load_spec

SPECS = Path(__file__).resolve().parents[2] / "training" / "mixtures"


@pytest.mark.parametrize("spec_name", ["multimodal.yaml", "tiny/multimodal.yaml"])
@pytest.mark.parametrize(
    "layout", [["pairs.parquet"], ["shard=0/pairs.parquet", "shard=1/pairs.parquet"]]
)
def test_the_shipped_multimodal_specs_read_pairs_of_either_layout(tmp_path, spec_name, layout):
    lake = tmp_path / "lake"
    made = []
    for rel in layout:
        path = lake / "images" / "pairs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
        made.append(str(path))
    spec_path = SPECS / spec_name
    spec = load_spec(spec_path)
    pairs_sources, resolvers = 0, 0
    for name, bucket in spec.buckets.items():
        for i, src in enumerate(bucket.sources):
            if src.kind == "pairs" and src.path.startswith("lake/images/pairs/"):
                pairs_sources += 1
                assert source_files(spec, name, i, spec_path.parent, lake) == made
            if src.pairs and src.pairs.startswith("lake/images/pairs/"):
                resolvers += 1
                assert list(_pairs_files(src.pairs, spec_path.parent, lake)) == made
    assert pairs_sources and resolvers
