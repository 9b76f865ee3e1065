"""The vision side (training/vision.py) and the multimodal stage (training/multimodal.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from training.model import ModelConfig, Transformer

pytestmark = pytest.mark.timeout(300)

IMAGE_ID, BOUNDARY, PAD = 2, 0, 1
COLOURS = np.array([[220, 30, 30], [30, 200, 40], [40, 60, 220], [230, 220, 40]], dtype=np.float32)


def write_clip_dir(out):
    """A randomly initialised refinery-tiny CLIP saved like `refinery clip train` saves it."""
    from training.clip import load_clip, save_clip

    torch.manual_seed(0)
    clip = load_clip("refinery-tiny", "cpu", for_training=True)
    return save_clip(clip.model, clip.model_cfg, out)


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    return write_clip_dir(tmp_path_factory.mktemp("clip") / "model")


@pytest.fixture(scope="module")
def encoder(clip_dir):
    from training.vision import load_vision_encoder

    return load_vision_encoder(clip_dir)


def colour_pixels(classes: np.ndarray, rng: np.random.Generator, size: int = 64) -> torch.Tensor:
    """Noisy solid-colour squares, normalised like CLIP inputs: the class is the colour."""
    img = COLOURS[classes][:, :, None, None] + rng.normal(0, 25, (len(classes), 3, size, size))
    img = np.clip(img, 0, 255) / 255.0
    mean = np.array([0.481, 0.458, 0.408])[None, :, None, None]
    std = np.array([0.269, 0.261, 0.276])[None, :, None, None]
    return torch.tensor((img - mean) / std, dtype=torch.float32)


def caption_batch(classes: np.ndarray, docs_per_row: int, image_tokens: int) -> np.ndarray:
    """Rows of documents `<|image|> x k, colour word, shade word, boundary`; the words depend
    only on the image's class."""
    docs = [[IMAGE_ID] * image_tokens + [10 + c, 20 + c, BOUNDARY] for c in classes]
    rows = [sum(docs[i : i + docs_per_row], []) for i in range(0, len(docs), docs_per_row)]
    return np.array([[BOUNDARY] + r for r in rows], dtype=np.int64)


def tiny_vlm(encoder, image_tokens: int = 4):
    from training.vision import AdapterConfig, VisionAdapter, VisionLanguageModel

    cfg = ModelConfig(
        vocab_size=32,
        d_model=32,
        n_layer=2,
        n_head=2,
        n_kv_head=1,
        window=32,
        local_per_global=1,
        max_seq_len=64,
        image_embed_dim=32,
        image_token_id=IMAGE_ID,
        boundary_token_id=BOUNDARY,
    )
    adapter = VisionAdapter(AdapterConfig(encoder.width, 32, image_tokens, heads=4, ffn_mult=0.5))
    return VisionLanguageModel(encoder, adapter, Transformer(cfg))


def test_adapter_output_shape_and_exact_token_count():
    from training.vision import AdapterConfig, VisionAdapter, VisionError

    torch.manual_seed(0)
    for grid, tokens in (((2, 2), 4), ((7, 7), 9), ((7, 7), 144), ((3, 5), 4)):
        adapter = VisionAdapter(AdapterConfig(in_dim=16, out_dim=24, image_tokens=tokens, heads=4))
        out = adapter(torch.randn(3, 16, *grid))
        assert out.shape == (3, tokens, 24)
    with pytest.raises(VisionError, match="square number"):
        AdapterConfig(in_dim=16, out_dim=24, image_tokens=6)
    with pytest.raises(VisionError, match="adapter_heads"):
        AdapterConfig(in_dim=18, out_dim=24, image_tokens=4, heads=4)


def test_encoder_is_the_clip_image_tower(encoder, clip_dir):
    from training.clip import load_state

    assert encoder.info.image_size == 64 and (encoder.grid_h, encoder.grid_w) == (2, 2)
    assert encoder.width == 512  # refinery-tiny's ModifiedResNet: width 16 x 32
    saved = load_state(clip_dir)
    for name, t in encoder.visual.state_dict().items():
        assert torch.equal(t, saved[f"visual.{name}"]), name
    encoder.train()
    assert not encoder.visual.training  # BatchNorm statistics stay frozen


def test_image_embeddings_fill_exactly_the_placeholders(encoder):
    torch.manual_seed(0)
    vlm = tiny_vlm(encoder)
    rng = np.random.default_rng(0)
    tokens = torch.from_numpy(caption_batch(np.array([0, 1, 2, 3]), 2, 4))
    pixels = colour_pixels(np.array([0, 1, 2, 3]), rng)
    embeds = vlm.image_embeds(pixels)
    assert embeds.shape == (4 * 4, 32)
    x = vlm.decoder.embed_tokens(tokens, embeds)
    slots = tokens == IMAGE_ID
    assert torch.allclose(x[slots], vlm.decoder.image_proj(embeds))
    assert torch.equal(x[~slots], vlm.decoder.embed(tokens)[~slots])
    with pytest.raises(ValueError, match="one row per image"):
        vlm(tokens, pixels=pixels[:3])


def _grads(params):
    return [p.grad is not None and bool(p.grad.abs().sum() > 0) for p in params]


def test_gradients_flow_only_where_configured(encoder):
    torch.manual_seed(0)
    vlm = tiny_vlm(encoder)
    tokens = torch.from_numpy(caption_batch(np.array([0, 1, 2, 3]), 2, 4))
    pixels = colour_pixels(np.array([0, 1, 2, 3]), np.random.default_rng(0))
    y = tokens[:, 1:].clone()
    y[y == IMAGE_ID] = -100
    x = tokens[:, :-1]
    keep = (tokens == IMAGE_ID).clone()
    keep[:, -1] = False
    for vision, decoder in ((False, False), (False, True), (True, True)):
        vlm.zero_grad(set_to_none=True)
        vlm.set_trainable(vision=vision, decoder=decoder)
        _, loss, _ = vlm(x, y, pixels, slot_keep=keep[tokens == IMAGE_ID])
        loss.backward()
        parts = vlm.groups()
        assert all(_grads(parts["adapter"])), "the adapter always trains"
        assert any(_grads(parts["decoder"])) == decoder
        assert all(p.grad is None for p in parts["decoder"]) != decoder
        assert any(_grads(parts["vision"])) == vision
        assert all(p.grad is None for p in parts["vision"]) != vision


def test_matched_image_beats_mismatched_after_short_training(encoder):
    """Captions name the image's colour: after ~80 steps the matched caption loss is far below
    the loss with a deranged image, on held-out images."""
    from training.multimodal import derangement

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    vlm = tiny_vlm(encoder)
    vlm.set_trainable(vision=False, decoder=True)
    opt = torch.optim.AdamW([p for p in vlm.parameters() if p.requires_grad], lr=3e-3)

    def loss_of(classes, image_classes, pixels_rng):
        tokens = torch.from_numpy(caption_batch(classes, 4, 4))
        y = tokens[:, 1:].clone()
        y[y == IMAGE_ID] = -100
        _, loss, _ = vlm(tokens[:, :-1], y, colour_pixels(image_classes, pixels_rng))
        return loss

    vlm.train()
    for _ in range(80):
        classes = rng.integers(0, 4, 16)
        loss = loss_of(classes, classes, rng)
        opt.zero_grad()
        loss.backward()
        opt.step()
    vlm.eval()
    classes = np.tile(np.arange(4), 4)
    perm = derangement(len(classes), 0)
    assert perm is not None and not np.any(perm == np.arange(len(classes)))
    with torch.no_grad():
        matched = float(loss_of(classes, classes, np.random.default_rng(7)))
        mismatched = float(loss_of(classes, classes[perm], np.random.default_rng(7)))
    # chance on the colour word is log(4) = 1.39 of 3 predicted tokens per document
    assert matched < 0.25 and mismatched > matched + 0.5, (matched, mismatched)


# --- the stage: a tiny multimodal mixture in the builder's layout (training/mixture/store.py) ---

DOC = 7  # <|image|> x 4, colour word, shade word, boundary


def _png(colour: np.ndarray, rng: np.random.Generator) -> bytes:
    import io

    from PIL import Image

    img = np.clip(colour[None, None, :] + rng.normal(0, 25, (64, 64, 3)), 0, 255)
    buf = io.BytesIO()
    Image.fromarray(img.astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def write_multimodal_mixture(mix_dir, seq_len: int = 64, seed: int = 0):
    """Caption rows (documents `<|image|> x 4, 10 + c, 20 + c, boundary` whose words name the
    colour c of the image) and Markov text rows; eval: held-out images and held-out text."""
    import hashlib
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.train.conftest import SPECIAL, VOCAB, _markov_tokens

    rng = np.random.default_rng(seed)
    images: dict[str, dict] = {}

    def image(c: int) -> str:
        data = _png(COLOURS[c], rng)
        sha = hashlib.sha256(data).hexdigest()
        rel = f"images/{sha[:2]}/{sha}.png"
        (mix_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (mix_dir / rel).write_bytes(data)
        images[sha] = {"sha256": sha, "path": rel, "width": 64, "height": 64}
        return sha

    pool = {c: [image(c) for _ in range(4)] for c in range(4)}  # training images
    held = {c: [image(c) for _ in range(2)] for c in range(4)}  # eval images only

    def caption_rows(n: int, source) -> tuple[np.ndarray, list[list[str]]]:
        rows, shas = [], []
        for _ in range(n):
            row, row_shas = [BOUNDARY], []
            while len(row) + DOC <= seq_len:
                c = int(rng.integers(0, 4))
                row_shas.append(source[c][int(rng.integers(0, len(source[c])))])
                row += [SPECIAL["image"]] * 4 + [10 + c, 20 + c, BOUNDARY]
            rows.append(row + [SPECIAL["pad"]] * (seq_len - len(row)))
            shas.append(row_shas)
        return np.array(rows, dtype=np.uint32), shas

    caps, cap_shas = caption_rows(32, pool)
    text = _markov_tokens(rng, 32, seq_len, VOCAB)
    order = rng.permutation(64)
    train = np.concatenate([caps, text])[order]
    train_shas = [(cap_shas + [[]] * 32)[i] for i in order]
    eval_caps, eval_shas = caption_rows(6, held)
    eval_text = _markov_tokens(rng, 6, seq_len, VOCAB)

    table = sorted(images.values(), key=lambda r: r["sha256"])
    code = {r["sha256"]: i for i, r in enumerate(table)}
    pq.write_table(pa.Table.from_pylist(table), mix_dir / "images.parquet")

    def write(path: str, arr: np.ndarray, shas: list[list[str]]) -> dict:
        (mix_dir / path).parent.mkdir(parents=True, exist_ok=True)
        np.save(mix_dir / path, arr)
        side = path.removesuffix(".npy") + ".images.npz"
        offsets = np.cumsum([0] + [len(s) for s in shas]).astype(np.int64)
        index = np.array([code[s] for r in shas for s in r], dtype=np.int64)
        np.savez(mix_dir / side, img_offsets=offsets, img_index=index, img_pos=index * 0)
        return {"path": path, "num_sequences": len(arr), "images": {"path": side}}

    manifest = {
        "seq_len": seq_len,
        "vocab_size": VOCAB,
        "special_tokens": SPECIAL,
        "image_tokens": 4,
        "images": {"table": "images.parquet"},
        "shards": [write("shards/shard_00000.npy", train, train_shas)],
        "eval": [
            {"bucket": "text", "group": "en", **write("eval/text.en.npy", eval_text, [[]] * 6)},
            {
                "bucket": "image_caption",
                "group": "all",
                **write("eval/image_caption.all.npy", eval_caps, eval_shas),
            },
        ],
        "spec_sha256": f"synthetic-multimodal-{seed}",
    }
    (mix_dir / "manifest.json").write_text(json.dumps(manifest))
    (mix_dir / "tokenizer.json").write_text("{}")
    return mix_dir


@pytest.fixture(scope="module")
def mm_mixture(tmp_path_factory):
    return write_multimodal_mixture(tmp_path_factory.mktemp("mixtures") / "tiny-multimodal")


def write_multimodal_config(path, **train_overrides):
    """The trainer tests' config (same model as `pretrained_run`) with a multimodal stage."""
    import yaml

    from tests.train.conftest import write_config

    path = write_config(path, **train_overrides)
    cfg = yaml.safe_load(path.read_text())
    cfg["stages"]["multimodal"] = {
        "mixture": "tiny-multimodal",
        "steps": 24,
        "lr": 3e-3,
        "warmup_steps": 2,
        "adapter_only_steps": 8,
        "adapter_heads": 4,
        "adapter_ffn_mult": 0.25,
        "text_loss_tolerance": 0.05,
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def mm_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("mmconfig") / "train.yaml"
    return write_multimodal_config(path, eval_every=8, checkpoint_every=6)


def _rows(path, keys):
    import json

    return [
        {k: r.get(k) for k in keys} for r in map(json.loads, path.read_text().splitlines()) if r
    ]


@pytest.mark.slow  # over 10 s on a quiet 2-core machine
def test_multimodal_stage_cli_learns_from_images_resumes_exactly_and_feeds_long_context(
    tmp_path, mm_mixture, mm_config, pretrained_run, clip_dir, mixtures, config
):
    import json

    from typer.testing import CliRunner

    from pipelines.cli import app
    from training.checkpoint import latest_checkpoint, load_checkpoint
    from training.multimodal import run_multimodal
    from training.trainer import run_stage

    runner = CliRunner()
    start = ["train", "multimodal", "--config", str(mm_config), "--data", str(mm_mixture)]
    weights = ["--init", str(pretrained_run), "--vision", str(clip_dir)]
    a, b = tmp_path / "a", tmp_path / "b"
    whole = runner.invoke(app, [*start, *weights, "--out", str(a), "--steps", "24"])
    assert whole.exit_code == 0, whole.output
    assert "caption loss, held-out pairs: matched image" in whole.output

    summary = json.loads((a / "summary.json").read_text())
    # the image helps the caption more and more: the gap (mismatched - matched) grows
    assert summary["gap_last"] > max(0.1, summary["gap_first"] + 0.05), summary["gap_by_step"]
    assert summary["caption_loss_mismatched"] > summary["caption_loss_matched"]
    assert summary["text_loss_within_tolerance"] is True, summary
    evals = _rows(a / "eval.jsonl", ["step", "bucket", "images", "gap"])
    assert {r["step"] for r in evals} == {0, 8, 16, 24}
    assert all(r["images"] > 0 for r in evals if r["bucket"] == "image_caption")

    # crash at 14 (after the step-12 checkpoint, in the full phase), resume: the same run
    def crash(step, total, row):
        if step == 14:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_multimodal(
            mm_config, mm_mixture, b, init=pretrained_run, vision=clip_dir, steps=24, on_step=crash
        )
    resumed = runner.invoke(app, [*start, "--out", str(b), "--steps", "24", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    keys = ["step", "loss", "lr"]
    assert _rows(b / "metrics.jsonl", keys) == _rows(a / "metrics.jsonl", keys)
    keys = ["step", "bucket", "loss", "loss_mismatched"]
    assert _rows(b / "eval.jsonl", keys) == _rows(a / "eval.jsonl", keys)

    # the checkpoint is a text model plus the vision side; long context starts from its decoder
    saved = load_checkpoint(latest_checkpoint(b))
    assert saved["model_config"]["image_embed_dim"] == 0
    assert not any(k.startswith("image_proj.") for k in saved["model"])
    assert set(saved["vision_language"]) >= {"adapter", "image_proj", "vision_info"}
    assert saved["vision_language"]["vision"] is None  # frozen tower: spec + fingerprint only
    assert "tokenizer_sha256" in saved and saved["mixture_manifest_sha256"]  # checked on --init
    lc = run_stage(
        "long-context", config, mixtures["long-context"], tmp_path / "lc", init=b, steps=1
    )
    assert lc["steps"] == 1


def test_a_vit_tower_gives_its_patch_grid(tmp_path):
    """Any open_clip checkpoint: a (tiny) ViT's patch tokens after its final LayerNorm."""
    import open_clip

    from training.clip import _write_config, save_clip
    from training.vision import AdapterConfig, VisionAdapter, load_vision_encoder

    cfg = {
        "embed_dim": 16,
        "vision_cfg": {
            "image_size": 32,
            "layers": 1,
            "width": 32,
            "head_width": 16,
            "patch_size": 8,
        },
        "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 2, "layers": 1},
    }
    (tmp_path / "cfg").mkdir()
    _write_config(tmp_path / "cfg", cfg, {})
    torch.manual_seed(0)
    model = open_clip.create_model(f"local-dir:{tmp_path / 'cfg'}")
    out = save_clip(model, cfg, tmp_path / "vit")
    encoder = load_vision_encoder(out)
    assert (encoder.width, encoder.grid_h, encoder.grid_w) == (32, 4, 4)
    pixels = torch.randn(2, 3, 32, 32)
    visual = encoder.visual
    with torch.no_grad():
        tokens = visual.ln_post(visual.transformer(visual._embeds(pixels)))[:, 1:]
        grid = encoder(pixels)
    assert torch.allclose(grid.flatten(2).transpose(1, 2), tokens, atol=1e-5)
    adapter = VisionAdapter(AdapterConfig(32, 24, image_tokens=4, heads=4))
    assert adapter(grid).shape == (2, 4, 24)


def test_a_trained_tower_changes_and_is_carried_in_the_checkpoint(
    tmp_path, mm_mixture, pretrained_run, clip_dir
):
    import yaml

    from training.checkpoint import latest_checkpoint, load_checkpoint
    from training.clip import load_state
    from training.multimodal import run_multimodal

    config = write_multimodal_config(tmp_path / "c.yaml", checkpoint_every=2)
    cfg = yaml.safe_load(config.read_text())
    cfg["stages"]["multimodal"] |= {"freeze_vision": False, "adapter_only_steps": 0}
    config.write_text(yaml.safe_dump(cfg))
    run_multimodal(
        config, mm_mixture, tmp_path / "run", init=pretrained_run, vision=clip_dir, steps=2
    )
    saved = load_checkpoint(latest_checkpoint(tmp_path / "run"))["vision_language"]
    assert saved["vision_fingerprint"] is None
    before = load_state(clip_dir)
    changed = [k for k, v in saved["vision"].items() if not torch.equal(v, before[f"visual.{k}"])]
    assert changed and any(k.startswith("layer4.") for k in changed)


def test_a_text_only_batch_in_the_adapter_only_phase_trains_nothing(
    tmp_path, mm_mixture, mm_config, pretrained_run, clip_dir
):
    """With the decoder frozen and no image in the batch, no trainable weight takes part: the
    loss has no gradient, and the training loop steps over it (no weight moves) instead of
    failing; the next batch, with images, trains the adapter."""
    from training.multimodal import setup_multimodal
    from training.trainer import train_loop

    state = setup_multimodal(
        mm_config, mm_mixture, tmp_path / "run", init=pretrained_run, vision=clip_dir, steps=2
    )
    assert state.section.adapter_only_steps >= 2
    shard = np.load(mm_mixture / "shards" / "shard_00000.npy").astype(np.int64)
    text_rows = shard[~(shard == IMAGE_ID).any(axis=1)][: state.batch_size]
    loader_cls = type(state.loader)

    class TextFirst(loader_cls):
        def __iter__(self):
            yield text_rows, []
            yield from loader_cls.__iter__(self)

    state.loader.__class__ = TextFirst
    before = {k: v.clone() for k, v in state.model.state_dict().items()}
    after: dict[int, dict] = {}

    def snapshot(step, total, row):
        after[step] = {k: v.clone() for k, v in state.model.state_dict().items()}

    train_loop(state, snapshot)
    assert all(torch.equal(after[1][k], v) for k, v in before.items()), "step 1 moved a weight"
    moved = {k for k, v in before.items() if not torch.equal(after[2][k], v)}
    assert moved and all(k.startswith(("adapter.", "decoder.image_proj.")) for k in moved), moved
