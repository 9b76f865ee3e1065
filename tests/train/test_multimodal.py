"""The vision side (training/vision.py) and the multimodal stage (training/multimodal.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from training.model import ModelConfig, Transformer

pytestmark = pytest.mark.timeout(300)

IMAGE_ID, BOUNDARY, PAD = 2, 0, 1
COLOURS = np.array([[220, 30, 30], [30, 200, 40], [40, 60, 220], [230, 220, 40]], dtype=np.float32)


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    """A randomly initialised refinery-tiny CLIP saved like `refinery clip train` saves it."""
    from training.clip import load_clip, save_clip

    torch.manual_seed(0)
    clip = load_clip("refinery-tiny", "cpu", for_training=True)
    return save_clip(clip.model, clip.model_cfg, tmp_path_factory.mktemp("clip") / "model")


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
