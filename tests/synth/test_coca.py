"""The CoCa captioner trained here (training/coca.py): open_clip's own CoCa class and CoCaLoss on
a tiny lake of sample-web scenes; training is deterministic for a seed and its loss falls;
generation returns text made of the captions' words; the directory loads back (also through
open_clip's local-dir) and a wrong directory is refused with the fix."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from safetensors.torch import load_file

import training.coca as coca
from sampleweb.images import random_scene, render_png

torch = coca.torch
open_clip = coca.open_clip
pytestmark = pytest.mark.timeout(300)

STEPS, BATCH = 40, 16


def make_pairs_dir(root: Path, n: int, seed: int = 0, extra: list[dict] | None = None) -> Path:
    """An `images build`-like output: pairs.parquet (kept, consented rows) and images by sha256."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        scene = random_scene(rng)
        png = render_png(scene)
        sha = hashlib.sha256(png).hexdigest()
        rel = f"images/{sha[:2]}/{sha}.png"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(png)
        rows.append(
            {
                "id": f"p{i:03d}",
                "caption": scene.alt(),
                "image_sha256": sha,
                "image_path": rel,
                "training_allowed": True,
                "drop_reason": None,
            }
        )
    rows += extra or []
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("caption", pa.string()),
            ("image_sha256", pa.string()),
            ("image_path", pa.string()),
            ("training_allowed", pa.bool_()),
            ("drop_reason", pa.string()),
        ]
    )
    root.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), root / "pairs.parquet")
    return root


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("coca")
    pairs = make_pairs_dir(root / "lake" / "images" / "pairs" / "shard=0", 48)
    dropped = {"id": "gone", "caption": "a red circle", "image_sha256": None}
    dropped |= {"image_path": None, "training_allowed": True, "drop_reason": "too_small"}
    make_pairs_dir(root / "lake" / "images" / "pairs" / "shard=1", 0, extra=[dropped])
    runs = []
    for name in ("a", "b"):
        s = coca.train_coca(
            [root / "lake" / "images" / "pairs"],
            root / name,
            steps=STEPS,
            batch_size=BATCH,
            seed=3,
            device="cpu",
        )
        runs.append(s)
    return root, pairs, runs


def test_training_is_deterministic_and_the_loss_falls(trained):
    root, _, (a, b) = trained
    assert a["pairs"] == 48  # the dropped row of shard=1 is not trained on
    assert a["final_loss"] < 0.7 * a["first_loss"], a
    assert a["final_caption_loss"] < 0.7 * a["first_caption_loss"], a
    sa = load_file(str(root / "a" / coca.WEIGHTS_FILE))
    sb = load_file(str(root / "b" / coca.WEIGHTS_FILE))
    assert sa.keys() == sb.keys()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    # the decoder's output projection was initialised (open_clip leaves it torch.empty)
    proj = sa["text_decoder.text_projection"]
    assert torch.isfinite(proj).all() and 0.05 < float(proj.std()) < 0.3


def test_model_card_and_open_clip_layout(trained):
    root, _, (a, _) = trained
    card = json.loads((root / "a" / coca.CARD_FILE).read_text())
    assert card["description"] == "CoCa trained here on 48 sample-web pairs"
    assert card["architecture"] == "open_clip.CoCa" and card["loss"] == "open_clip.loss.CoCaLoss"
    model, _, _ = open_clip.create_model_and_transforms(f"local-dir:{root / 'a'}")
    assert isinstance(model, open_clip.CoCa)
    vocab = json.loads((root / "a" / coca.VOCAB_FILE).read_text())["bpe_ids"]
    assert a["vocab_size"] == len(vocab) < 100  # the captions' words, not 49,408 BPE ids


def test_generation_returns_caption_words(trained):
    root, pairs, _ = trained
    cap = coca.load_captioner(root / "a", device="cpu")
    rows = pq.read_table(pairs / "pairs.parquet").to_pylist()[:8]
    images = [pairs / r["image_path"] for r in rows]
    texts = cap.generate([*images, b"not an image"])
    assert texts[-1] == ""  # an undecodable image gets no caption
    words = {w for r in rows for w in r["caption"].split()}
    vocab = set(" ".join(pq.read_table(pairs / "pairs.parquet")["caption"].to_pylist()).split())
    for text in texts[:-1]:
        assert text and set(text.split()) <= vocab, text
    assert words & {w for t in texts for w in t.split()}
    assert cap.generate(images) == texts[:-1]  # greedy: the same captions again


def test_tokenizer_round_trip():
    tok = coca.CompactTokenizer.build(["an x-ray of two red cats", "a tree"], 24)
    ids = tok(["an x-ray of two red cats", "a tree at the top"])
    assert ids.shape == (2, 24) and int(ids.max()) == tok.eot == tok.vocab_size - 1
    assert tok.decode(ids[0].tolist()) == "an x-ray of two red cats"
    assert tok.decode(ids[1].tolist()) == "a tree"  # unknown words decode as nothing


def test_a_wrong_directory_is_refused_with_the_fix(trained, tmp_path):
    root, _, _ = trained
    with pytest.raises(coca.CaptionerError, match="refinery captioner train"):
        coca.load_captioner(tmp_path / "nowhere")
    clip_like = tmp_path / "clip"
    clip_like.mkdir()
    for name in (coca.CONFIG_FILE, coca.WEIGHTS_FILE, coca.VOCAB_FILE):
        (clip_like / name).write_bytes((root / "a" / name).read_bytes())
    cfg = json.loads((clip_like / coca.CONFIG_FILE).read_text())
    del cfg["model_cfg"]["multimodal_cfg"]
    (clip_like / coca.CONFIG_FILE).write_text(json.dumps(cfg))
    with pytest.raises(coca.CaptionerError, match="multimodal_cfg"):
        coca.load_captioner(clip_like)
    with pytest.raises(coca.CaptionerError, match="steps"):
        coca.train_coca([], tmp_path / "x", steps=0)
    with pytest.raises(FileNotFoundError, match="images build"):
        coca.train_coca([tmp_path / "empty"], tmp_path / "x", steps=1)


def test_a_pair_without_a_caption_is_skipped_and_counted(tmp_path):
    """One kept pair with a null caption ended training: `CaptionerError training pair 1 has
    caption None`."""
    torch.set_num_threads(1)
    root = tmp_path / "pairs"
    make_pairs_dir(root, 5, seed=2)
    rows = pq.read_table(root / "pairs.parquet").to_pylist()
    rows[1]["caption"], rows[2]["caption"] = None, "   "
    pq.write_table(
        pa.Table.from_pylist(rows, schema=pq.read_schema(root / "pairs.parquet")),
        root / "pairs.parquet",
    )
    s = coca.train_coca([root], tmp_path / "model", steps=1, batch_size=2, device="cpu")
    assert s["pairs"] == 3 and s["skipped_no_caption"] == 2
    f = root / "pairs.parquet"
    assert s["skipped_no_caption_examples"] == [
        f"{f} pair 'p001' (caption None)",
        f"{f} pair 'p002' (caption '   ')",
    ]
    saved = json.loads((tmp_path / "model" / "train_summary.json").read_text())
    assert saved["skipped_no_caption"] == 2
    for r in rows[3:]:
        r["caption"] = None
    pq.write_table(
        pa.Table.from_pylist(rows, schema=pq.read_schema(root / "pairs.parquet")),
        root / "pairs.parquet",
    )
    with pytest.raises(coca.CaptionerError, match="only 1 of 5 kept pairs .*no caption: \\[.*p001"):
        coca.train_coca([root], tmp_path / "m2", steps=1, batch_size=2, device="cpu")
