"""CLIP trained here (training/clip.py): held-out AUC, load round trip, determinism, spec errors.

The held-out split comes from the sample web's scene grammar: the model trains on scenes that never
pair certain colours with certain things (a purple star, a green car...) and is scored on scenes
that all contain one of those held-out compositions, each against its true alt text and against
`wrong_alt` (a wrong colour, a wrong count or a generic alt).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import training.clip as clip_module
from sampleweb.images import GENERIC_ALTS, random_scene, render_png, wrong_alt
from training.clip import (
    CONFIG_FILE,
    SUMMARY_FILE,
    WEIGHTS_FILE,
    ClipError,
    ClipScorer,
    load_clip,
    load_state,
    resolve_spec,
    roc_auc,
    train_clip,
)

# torch and open_clip load through training.clip: the training package sets OMP_WAIT_POLICY
# before torch starts its thread pool (spin-waiting threads stall a small shared CPU).
torch = clip_module.torch
open_clip = clip_module.open_clip

HELD_OUT = {
    ("purple", "star"),
    ("green", "car"),
    ("orange", "circle"),
    ("blue", "triangle"),
    ("yellow", "cat"),
}
TRAIN_IMAGES, TEST_IMAGES = 2000, 200
STEPS, BATCH = 120, 128


def _held_out(scene) -> bool:
    return any((g.colour, g.thing) in HELD_OUT for g in scene.groups)


def _render(root: Path, scenes) -> list[tuple[Path, object]]:
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i, scene in enumerate(scenes):
        path = root / f"{i:05d}.png"
        path.write_bytes(render_png(scene))
        out.append((path, scene))
    return out


def _scenes(seed: int, n: int, keep) -> list:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        scene = random_scene(rng)
        if keep(scene):
            out.append(scene)
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One model trained on non-held-out scenes; held-out scenes rendered for scoring."""
    root = tmp_path_factory.mktemp("clip")
    train = _render(root / "train", _scenes(1, TRAIN_IMAGES, lambda s: not _held_out(s)))
    seen = {scene.spec() for _, scene in train}
    test = _render(
        root / "heldout",
        _scenes(2, TEST_IMAGES, lambda s: _held_out(s) and s.spec() not in seen),
    )
    steps: list[tuple[int, int, dict]] = []
    summary = train_clip(
        [(path, scene.alt()) for path, scene in train],
        root / "model",
        steps=STEPS,
        batch_size=BATCH,
        seed=0,
        on_step=lambda step, total, row: steps.append((step, total, row)),
    )
    return root / "model", summary, test, steps


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """A model trained for a few steps (any quality): what the round trip and batching need,
    without the held-out run's minute of training."""
    root = tmp_path_factory.mktemp("clip-quick")
    train = _render(root / "train", _scenes(1, 32, lambda s: True))
    test = _render(root / "heldout", _scenes(2, 24, lambda s: True))
    pairs = [(path, scene.alt()) for path, scene in train]
    summary = train_clip(pairs, root / "model", steps=4, batch_size=16, seed=0)
    return root / "model", summary, test, []


@pytest.mark.slow  # a minute of CLIP training on 2,000 images
def test_heldout_compositions_are_separated_with_auc_above_0_9(trained):
    model_dir, summary, test, steps = trained
    assert [s for s, _, _ in steps] == list(range(1, STEPS + 1))
    assert summary["final_loss"] < summary["first_loss"]
    scorer = ClipScorer(model_dir, device="cpu", batch_size=64)
    rng = random.Random(3)
    paths = [path for path, _ in test]
    wrong = [wrong_alt(scene, rng) for _, scene in test]
    matched = scorer.score(paths, [scene.alt() for _, scene in test])
    mismatched = scorer.score(paths, wrong)
    auc = roc_auc(matched, mismatched)
    generic = np.array([w in GENERIC_ALTS for w in wrong])
    hard = roc_auc(matched[~generic], mismatched[~generic])
    print(
        f"\nheld-out AUC {auc:.3f} (wrong colour/count only: {hard:.3f}); trained "
        f"{summary['steps']} steps x {summary['batch_size']} on {summary['pairs']} pairs "
        f"in {summary['seconds']:.1f}s"
    )
    assert auc >= 0.9


def test_checkpoint_dir_is_open_clip_local_dir_and_round_trips(quick):
    model_dir, summary, test, _ = quick
    assert {CONFIG_FILE, WEIGHTS_FILE, SUMMARY_FILE} <= {p.name for p in model_dir.iterdir()}
    paths = [path for path, _ in test[:24]]
    captions = [scene.alt() for _, scene in test[:24]]
    ours = ClipScorer(str(model_dir), device="cpu", batch_size=7).score(paths, captions)
    again = ClipScorer(f"local-dir:{model_dir}", device="cpu", batch_size=64).score(paths, captions)
    # open_clip alone, without this module, loads the same directory and gives the same scores.
    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{model_dir}")
    tokenizer = open_clip.get_tokenizer(f"local-dir:{model_dir}")
    model.eval()
    with torch.inference_mode():
        images = torch.stack([preprocess(Image.open(p).convert("RGB")) for p in paths])
        img = model.encode_image(images, normalize=True)
        txt = model.encode_text(tokenizer(captions), normalize=True)
        plain = (img * txt).sum(-1).numpy()
    np.testing.assert_allclose(ours, again, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours, plain, rtol=0, atol=1e-5)
    state = load_state(model_dir)
    for name, tensor in load_clip(model_dir, "cpu").model.state_dict().items():
        assert torch.equal(tensor, state[name]), name


def test_similarity_is_batched_and_undecodable_images_score_nan(quick, tmp_path):
    model_dir, _, test, _ = quick
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes(test[0][0].read_bytes()[:60])
    not_image = tmp_path / "page.png"
    not_image.write_text("<html>not an image</html>")
    images = [test[0][0], truncated, test[1][0], not_image, tmp_path / "missing.png"]
    images.append(test[2][0].read_bytes())  # bytes are accepted too
    prompts = ["a red circle on the left", "three blue squares at the top"]
    scorer = ClipScorer(model_dir, device="cpu", batch_size=2)
    sim = scorer.similarity(images, prompts)
    assert sim.shape == (6, 2)
    assert np.isnan(sim[[1, 3, 4]]).all()
    assert np.isfinite(sim[[0, 2, 5]]).all() and (np.abs(sim[[0, 2, 5]]) <= 1 + 1e-5).all()
    scores = scorer.score(images, [prompts[0]] * 5 + [None])
    assert np.isnan(scores[[1, 3, 4, 5]]).all() and np.isfinite(scores[[0, 2]]).all()
    np.testing.assert_allclose(scores[[0, 2]], sim[[0, 2], 0], atol=1e-6)


def _small_pairs(root: Path, n: int = 24) -> list[tuple[Path, str]]:
    scenes = _scenes(7, n, lambda s: True)
    return [(path, scene.alt()) for path, scene in _render(root, scenes)]


def test_same_seed_same_weights_other_seed_differs(tmp_path):
    pairs = _small_pairs(tmp_path / "img")
    runs = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        train_clip(pairs, tmp_path / name, steps=4, batch_size=8, seed=seed, device="cpu")
        runs[name] = load_state(tmp_path / name)
    assert all(torch.equal(runs["a"][k], runs["b"][k]) for k in runs["a"])
    assert not all(torch.equal(runs["a"][k], runs["c"][k]) for k in runs["a"])
    # A checkpoint directory is also a starting point: fine-tuning starts from its weights.
    rows = []
    summary = train_clip(
        pairs,
        tmp_path / "tuned",
        model=str(tmp_path / "a"),
        steps=2,
        batch_size=8,
        lr=1e-9,
        on_step=lambda step, total, row: rows.append(row),
    )
    assert summary["model"] == str(tmp_path / "a") and [r["step"] for r in rows] == [1, 2]
    assert {"loss", "lr", "pairs_per_s"} <= set(rows[0])
    tuned = load_state(tmp_path / "tuned")
    weights = [k for k in tuned if "running_" not in k and "num_batches" not in k]  # not BN stats
    assert max(float((tuned[k] - runs["a"][k]).abs().max()) for k in weights) < 1e-3
    assert not all(torch.equal(tuned[k], runs["c"][k]) for k in tuned)


def test_undecodable_training_images_are_skipped_and_counted(tmp_path):
    pairs = _small_pairs(tmp_path / "img", 8)
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    summary = train_clip(
        pairs + [(bad, "a red circle on the left")], tmp_path / "m", steps=2, batch_size=4
    )
    assert summary["pairs"] == 8 and summary["skipped_images"] == 1
    assert summary["skipped_examples"] == [str(bad)]
    with pytest.raises(ClipError, match="only 0 of 1 training pairs"):
        train_clip([(bad, "x")], tmp_path / "n", steps=1, batch_size=2)
    with pytest.raises(ClipError, match="training pair 0"):
        train_clip([(pairs[0][0], "")], tmp_path / "n", steps=1, batch_size=2)
    with pytest.raises(ClipError, match="--batch-size"):
        train_clip(pairs, tmp_path / "n", steps=1, batch_size=1)


@pytest.mark.parametrize(
    "spec, words",
    [
        ("refinery-tiny", ["'refinery-tiny'", "without weights", "refinery clip train"]),
        ("ViT-B-32", ["'ViT-B-32'", "without weights", "'ViT-B-32:"]),
        ("ViT-B-32:no_such_tag", ["'ViT-B-32:no_such_tag'", "known tags", "laion2b_s34b_b79k"]),
        ("NoSuchNet:openai", ["'NoSuchNet:openai'", "not an open_clip architecture"]),
        ("laion/some-model", ["no such directory", "'hf-hub:laion/some-model'"]),
        ("hf-hub:", ["'hf-hub:'", "hf-hub:ORG/REPO"]),
        ("nonsense", ["'nonsense'", "refinery clip train", "ARCH:TAG"]),
        ("", ["empty CLIP model spec"]),
    ],
)
def test_bad_model_spec_names_the_spec_and_the_fix(spec, words):
    with pytest.raises(ClipError) as err:
        ClipScorer(spec, device="cpu")
    for word in words:
        assert word in str(err.value), (word, str(err.value))


def test_directory_specs_need_config_and_weights(tmp_path):
    with pytest.raises(ClipError, match=f"has no {CONFIG_FILE}"):
        resolve_spec(tmp_path)
    (tmp_path / CONFIG_FILE).write_text('{"model_cfg": {}}')
    with pytest.raises(ClipError, match=f"no weights \\({WEIGHTS_FILE}\\)"):
        resolve_spec(f"local-dir:{tmp_path}")
    (tmp_path / CONFIG_FILE).write_text("{not json")
    with pytest.raises(ClipError, match="not readable JSON"):
        resolve_spec(tmp_path)
    with pytest.raises(ClipError, match="no such directory"):
        resolve_spec(f"local-dir:{tmp_path / 'absent'}")


def test_specs_that_name_weights_resolve_without_downloading():
    assert resolve_spec("ViT-B-32:laion2b_s34b_b79k").kind == "pretrained"
    assert resolve_spec("hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K").kind == "hub"
    assert resolve_spec("refinery-tiny", for_training=True).kind == "config"
    assert resolve_spec("RN50", for_training=True).kind == "architecture"


def test_roc_auc_matches_the_rank_statistic():
    rng = np.random.default_rng(0)
    pos = np.round(rng.normal(1, 1, 300), 1)  # rounded: many ties
    neg = np.round(rng.normal(0, 1, 200), 1)
    pairs = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    assert roc_auc(pos, neg) == pytest.approx(pairs, abs=1e-12)
    assert roc_auc([1.0, np.nan], [0.0]) == 1.0
    with pytest.raises(ClipError, match="both sides"):
        roc_auc([np.nan], [0.0])


def test_cpu_scorer_convolves_channels_last_and_ranks_as_the_plain_layout(quick):
    """On the CPU the scorer holds its convolution weights channels-last (oneDNN's own layout:
    the forward ~1.4x cheaper); its scores stay within 1e-6 of the same model in the plain
    layout and rank the images the same way (the de-duplication keeps a group's best score)."""
    model_dir, _, test, _ = quick
    paths = [path for path, _ in test[:24]]
    captions = [scene.alt() for _, scene in test[:24]]
    scorer = ClipScorer(str(model_dir), device="cpu", batch_size=8)
    convs = [m.weight for m in scorer.loaded.model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert convs and all(w.is_contiguous(memory_format=torch.channels_last) for w in convs)
    assert any(not w.is_contiguous() for w in convs)  # a 1x1 kernel is both layouts at once
    ours = scorer.score(paths, captions)
    scorer.loaded.model.to(memory_format=torch.contiguous_format)
    plain = scorer.score(paths, captions)
    np.testing.assert_allclose(ours, plain, rtol=0, atol=1e-6)
    gaps = np.diff(np.sort(plain))
    if gaps.min() > 2e-6:  # no near-ties: the order must be the same
        assert np.argsort(ours).tolist() == np.argsort(plain).tolist()


def test_kept_images_are_encoded_in_full_batches_by_one_background_thread(quick):
    """`keep` (the image fetch's on_image) encodes kept images while the fetch goes on: one
    background thread, one intra-op thread, every batch a full `batch_size`, and only the
    embeddings are held; scoring a kept path encodes nothing more for it, an image not kept is
    decoded and encoded as before, and the scores are those of decoding the files."""
    import threading

    from PIL import Image

    model_dir, _, test, _ = quick
    paths = [str(path) for path, _ in test[:6]]
    captions = [scene.alt() for _, scene in test[:6]]
    scorer = ClipScorer(str(model_dir), device="cpu", batch_size=2)
    calls = []
    encode = scorer.loaded.model.encode_image

    def recording(batch, **kw):
        calls.append((threading.current_thread().name, len(batch), torch.get_num_threads()))
        return encode(batch, **kw)

    scorer.loaded.model.encode_image = recording
    for path in paths[:5]:
        with Image.open(path) as im:
            scorer.keep(path, im.convert("RGB"))
    assert scorer.kept == 5
    assert scorer._kept_bytes == 5 * 4 * scorer.embed_dim  # embeddings, not images
    ours = scorer.score(paths, captions)
    background = [c for c in calls if c[0].startswith("clip-encode")]
    assert [n for _, n, _ in background] == [2, 2, 2]  # the fifth image padded to a batch
    assert all(threads == 1 for _, _, threads in background)
    assert [n for name, n, _ in calls if name == threading.current_thread().name] == [1]
    plain = ClipScorer(str(model_dir), device="cpu", batch_size=2).score(paths, captions)
    np.testing.assert_allclose(ours, plain, rtol=0, atol=1e-6)
    scorer.close()
    assert scorer.score(paths[:1], captions[:1]) == pytest.approx(ours[:1], abs=1e-6)


def test_kept_images_become_tensors_a_batch_at_a_time_bit_for_bit(quick):
    """`keep` holds the pixel stage's 64x64 RGB output as uint8 and the encoder thread makes the
    whole batch a tensor in one call: the same floats, bit for bit, as the model's own tensor
    stage run image by image and stacked; a tensor stage of another shape runs image by image."""
    from PIL import Image
    from torchvision import transforms as T

    model_dir, _, test, _ = quick
    paths = [str(path) for path, _ in test[:5]]
    scorer = ClipScorer(str(model_dir), device="cpu", batch_size=8)
    assert scorer._batch_tensors is not None
    smalls = []
    for path in paths:
        with Image.open(path) as im:
            smalls.append(scorer._pixel_stage(im.convert("RGB")))
    one_by_one = torch.stack([scorer._tensor_stage(s) for s in smalls])
    batched = scorer._batch_tensors(np.stack([np.asarray(s) for s in smalls]))
    assert batched.dtype == one_by_one.dtype and torch.equal(batched, one_by_one)
    # what keep holds until its batch is encoded: the uint8 pixels, not a float tensor
    with Image.open(paths[0]) as im:
        scorer.keep(paths[0], im.convert("RGB"))
    held = scorer._pending[0][1]
    assert isinstance(held, np.ndarray) and held.dtype == np.uint8 and held.shape == (64, 64, 3)
    scorer.close()
    # another tensor stage (a Lambda after the tensor) is not batched
    odd = T.Compose([T.ToTensor(), T.Lambda(lambda t: t * 2)])
    assert clip_module._batched_tensor_stage(odd) is None
    assert clip_module._batched_tensor_stage(scorer._tensor_stage) is not None
