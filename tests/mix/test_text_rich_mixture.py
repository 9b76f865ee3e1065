"""Text-rich images as their own mixture bucket: `refinery images ocr`'s transcription pairs (an
image and its OCR text) enter a `text_rich` bucket at its own weight, through the one consent rule
(the row's flag and the lake's consent ledger)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw
from tokenizers import Tokenizer

from common.consent import append_ledger
from synth.text_rich import PAIRS_SCHEMA
from training.mixture.builder import build_mixture

from .conftest import OPTED_OUT_MARKER, base_spec

WORDS = "invoice total amount paid station platform departure notice exit".split()


def _ocr_output(lake: Path) -> Path:
    """images/ocr/pairs.parquet as the OCR stage writes it: 12 text-rich images with their text;
    one with training_allowed false, one whose page the consent ledger opts out, one dropped."""
    out = lake / "images" / "ocr"
    (out / "images").mkdir(parents=True)
    rows = []
    for i in range(12):
        text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(6)) + f" {i}"
        image = Image.new("RGB", (96, 40), (250, 250, 250))
        ImageDraw.Draw(image).text((4, 12), text[:14], fill=(0, 0, 0))
        rel = f"images/t{i}.png"
        image.save(out / rel)
        sha = hashlib.sha256((out / rel).read_bytes()).hexdigest()
        rows.append(
            {
                "id": f"ocr-d{i}-0",
                "pair_id": f"d{i}-0",
                "doc_id": f"d{i}",
                "caption": text,
                "language": "en",
                "modality": "text_rich",
                "image_sha256": sha,
                "stored_sha256": sha,
                "image_path": rel,
                "training_allowed": True,
                "drop_reason": None,
            }
        )
    rows[3]["training_allowed"] = False
    rows[5]["drop_reason"] = "low_text_share"
    for i in (3, 5, 7):
        rows[i]["caption"] += f" {OPTED_OUT_MARKER}{i}"
    pq.write_table(pa.Table.from_pylist(rows, schema=PAIRS_SCHEMA), out / "pairs.parquet")
    append_ledger(
        lake,
        [
            {
                "checked_at": "2026-11-28T00:00:00Z",
                "host": "127.0.0.1",
                "url": "http://127.0.0.1/page/7",
                "doc_ids": ["d7"],
                "training_allowed": False,
                "previous": True,
                "agent": "RefineryBot-Extended",
            }
        ],
    )
    return out / "pairs.parquet"


def test_text_rich_images_are_a_bucket_of_their_own_weight_behind_consent(lake, tmp_path):
    import yaml

    root = tmp_path / "lake"
    pairs = _ocr_output(root)
    spec = base_spec(lake, image_tokens=4, allow_shortfall=True, total_tokens=6000)
    spec["buckets"]["web"]["weight"] = 0.5
    spec["buckets"]["multilingual"]["weight"] = 0.3
    spec["buckets"]["text_rich"] = {
        "weight": 0.2,
        "modality": "text_rich",
        "sources": [
            {
                "path": str(pairs),
                "kind": "pairs",
                "text_column": "caption",
                "where": "drop_reason IS NULL",
            }
        ],
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    m = build_mixture(path, tmp_path / "mix", lake_root=root)
    bucket = m["modality_shares"]["buckets"]["text_rich"]
    assert bucket["modality"] == "text_rich" and bucket["target_share"] == 0.2
    assert bucket["images"] > 0 and bucket["image_tokens"] == 4 * bucket["images"]
    tok = Tokenizer.from_file(str(tmp_path / "mix" / "tokenizer.json"))
    text = "".join(
        tok.decode(np.load(tmp_path / "mix" / s["path"]).reshape(-1).tolist())
        for s in m["shards"] + m["eval"]
    )
    assert "invoice" in text and "departure" in text  # the OCR text entered with its images
    assert OPTED_OUT_MARKER not in text  # flag false, ledger opt-out, dropped row: none entered
    stored = {r["sha256"] for r in pq.read_table(tmp_path / "mix" / "images.parquet").to_pylist()}
    allowed = {r["stored_sha256"] for i, r in enumerate(pq.read_table(pairs).to_pylist())}
    allowed -= {
        r["stored_sha256"] for i, r in enumerate(pq.read_table(pairs).to_pylist()) if i in (3, 5, 7)
    }
    assert stored and stored <= allowed
    assert m.get("consent_ledger", {}).get("files") == 1
