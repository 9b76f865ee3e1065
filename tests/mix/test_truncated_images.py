"""A truncated JPEG or GIF is an `image_undecodable` reject, never an image the loader chokes on."""

from __future__ import annotations

import io
import itertools
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image, ImageFile

from training.loader import ImageStore, ShardLoader
from training.mixture.builder import build_mixture
from training.mixture.images import _inspect

from .conftest import WORDS

pytestmark = pytest.mark.timeout(120)


def _noise(seed: int, fmt: str) -> bytes:
    """A 64x64 picture of noise (no decoder can guess the missing part) as `fmt` bytes."""
    arr = np.random.default_rng(seed).integers(0, 255, size=(64, 64, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["JPEG", "GIF"])
def test_a_truncated_jpeg_or_gif_is_undecodable(tmp_path, fmt, monkeypatch):
    data = _noise(1, fmt)
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    whole.write_bytes(data)
    cut.write_bytes(data[: len(data) * 6 // 10])
    assert isinstance(_inspect(str(whole)), dict)
    assert _inspect(str(cut)) == "image_undecodable"
    # a process that lets Pillow fill truncated images in still gets the reject (and its setting back)
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    assert _inspect(str(cut)) == "image_undecodable"
    assert ImageFile.LOAD_TRUNCATED_IMAGES is True


def test_truncated_images_are_rejected_rows_and_the_loader_decodes_every_batch(lake, tmp_path):
    rng = random.Random(4)
    pairs_dir = tmp_path / "pairs"
    (pairs_dir / "images").mkdir(parents=True)
    rows = []
    for i in range(12):
        fmt, ext = [("PNG", "png"), ("JPEG", "jpg"), ("GIF", "gif")][i % 3]
        data = _noise(i, fmt)
        if i in (4, 8):  # a JPEG and a GIF cut short
            data = data[: len(data) * 6 // 10]
        (pairs_dir / "images" / f"p{i}.{ext}").write_bytes(data)
        rows.append(
            {
                "id": f"p{i}",
                "caption": " ".join(rng.choice(WORDS["en"]) for _ in range(rng.randint(5, 20))),
                "image_path": f"images/p{i}.{ext}",
                "training_allowed": True,
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), pairs_dir / "pairs.parquet")
    spec = {
        "name": "trunc",
        "seq_len": 32,
        "total_tokens": 3000,
        "seed": 3,
        "tokenizer": str(lake / "tokenizer" / "tokenizer.json"),
        "image_tokens": 4,
        "allow_shortfall": True,
        "buckets": {
            "text": {
                "weight": 0.7,
                "sources": [
                    {"path": str(lake / "filter/documents.parquet"), "where": "lang = 'en'"}
                ],
            },
            "image_caption": {
                "weight": 0.3,
                "modality": "image_caption",
                "sources": [
                    {
                        "path": str(pairs_dir / "pairs.parquet"),
                        "kind": "pairs",
                        "text_column": "caption",
                    }
                ],
            },
        },
        "eval": {"sequences_per_group": 1, "max_fraction": 0.1},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    mix = tmp_path / "mix"
    manifest = build_mixture(path, mix)
    rejects = pq.read_table(mix / "rejects.parquet").to_pylist()
    assert sorted((r["id"], r["reason"]) for r in rejects) == [
        ("p4", "image_undecodable"),
        ("p8", "image_undecodable"),
    ]
    assert manifest["images"]["count"] == 10
    store, loader = ImageStore(mix), ShardLoader(mix, batch_size=4, seed=0, with_images=True)
    seen = 0
    for _, shas in itertools.islice(iter(loader), len(loader)):
        if shas:
            assert store.pixels(shas, 16).shape[0] == len(shas)
            seen += len(shas)
    assert seen > 0
