"""One decode per fetched image: a large JPEG decoded reduced (DCT scaling) for the face search
and the pHash, faces searched only in the regions that could hold one, and the pHash
recorded by the fetch the same as the one read back from the stored file."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

from crawlers.images import FETCHED, decode_image, fetch_images
from crawlers.images.faces import FaceConfig, FaceDetector, redact
from filters.images.dedup import hamming, phash_bytes
from filters.images.pairs import build_pairs
from sampleweb.images import random_scene, render_png

from .conftest import FAST, Resource, ref
from .face_render import background, drawn_face, photo_face, scene
from .test_faces import DET, _encode, _found

CAPS = dict(max_bytes=8 * 2**20, max_pixels=40_000_000, min_side=16, max_aspect=3.0)


def _counting(det: FaceDetector) -> list:
    """Record the (rows, columns) of every copy `det` searches (grey for the cascades, RGB for
    MTCNN)."""
    calls: list = []
    search = det._search

    def counted(grey, upright=True):
        calls.append(grey.shape[:2])
        return search(grey, upright)

    det._search = counted
    return calls


def test_a_large_jpeg_is_decoded_reduced_with_its_header_size():
    img, _ = scene(photo_face(400), (1400, 1100), bg="photo", seed=3)
    data = _encode(img, "JPEG", quality=90)
    dec = decode_image(data, **CAPS, draft_side=480)
    assert (dec.drop_reason, dec.width, dec.height) == (None, 1400, 1100)
    assert dec.reduced and dec.image.size == (700, 550)  # 1/2: the longer side stays >= 480
    full = decode_image(data, **CAPS)
    assert not full.reduced and full.image.size == (1400, 1100)
    # a truncated body is still undecodable when decoded reduced
    cut = decode_image(data[: len(data) // 2], **CAPS, draft_side=480)
    assert cut.drop_reason == "undecodable"


def test_a_face_found_in_a_reduced_decode_is_blurred_in_the_full_image():
    img, true = scene(photo_face(300), (1200, 1000), bg="gradient", seed=4)
    data = _encode(img, "JPEG", quality=92)
    dec = decode_image(data, **CAPS, draft_side=480)
    assert dec.reduced
    red = redact(data, dec.image, "JPEG", DET, size=(dec.width, dec.height))
    assert (red.width, red.height) == (1200, 1000)
    assert _found(red.boxes, true)
    with Image.open(io.BytesIO(red.data)) as out:
        assert out.size == (1200, 1000)
        assert not _found(DET.detect(out.convert("RGB")), true)


def test_a_small_face_in_a_large_photograph_is_found_and_blurred_at_full_size():
    """A 96 px face in a 4000x3000 photograph: searched at 480 px it was 12 px wide, under the
    smallest face searched, and stored unblurred. The copy searched is now large enough for a
    face of FaceConfig.large_face pixels, and the JPEG is decoded reduced only that far."""
    cfg = FaceConfig()
    assert cfg.search_side(640, 480) == 480 and cfg.search_side(1500, 1000) == 480
    assert cfg.search_side(4000, 3000) == 1250 and cfg.search_side(9000, 3000) == 1280
    img, true = scene(photo_face(96), (4000, 3000), at=(0.3, 0.4), bg="photo", seed=0)
    data = _encode(img, "JPEG", quality=85)
    dec = decode_image(data, **CAPS, draft_side=cfg.search_side)
    assert dec.reduced and dec.image.size == (2000, 1500)  # 1/2: the longer side stays >= 1250
    det = FaceDetector(cfg)
    red = redact(data, dec.image, "JPEG", det, size=(dec.width, dec.height))
    assert _found(red.boxes, true) and (red.width, red.height) == (4000, 3000)
    with Image.open(io.BytesIO(red.data)) as out:
        assert not _found(det.detect(out.convert("RGB")), true), "the blurred face is still found"


def test_flat_shapes_and_backgrounds_are_not_searched():
    """A sample-web scene (flat shapes on a flat background, skin-toned brown among them) and a
    flat colour: no region could hold a face, so the cascades never run."""
    det = FaceDetector()
    calls = _counting(det)
    rng = random.Random(11)
    for _ in range(4):
        with Image.open(io.BytesIO(render_png(random_scene(rng)))) as im:
            assert det.detect(im.convert("RGB")) == []
    assert det.detect(Image.new("RGB", (400, 300), (198, 140, 105))) == []  # flat skin tone
    assert calls == []


def test_a_face_in_a_grey_photograph_is_found():
    img, true = scene(photo_face(90), (260, 260), bg="photo", seed=1)
    grey = img.convert("L")
    det = FaceDetector()
    calls = _counting(det)
    assert _found(det.detect(grey), true)
    assert calls


def test_a_face_in_a_large_colour_image_is_searched_only_around_itself():
    face, true = scene(drawn_face(70), (200, 200), bg="flat", seed=2)
    canvas = Image.new("RGB", (640, 480), (30, 110, 60))
    canvas.paste(face, (400, 200))
    true = (true[0] + 400, true[1] + 200, true[2] + 400, true[3] + 200)
    det = FaceDetector()
    calls = _counting(det)
    assert _found(det.detect(canvas), true)
    assert calls and all(h * w < 0.5 * 480 * 360 for h, w in calls)
    # searched whole, it is found in a turned copy searched from the smallest face up (a drawn
    # face MTCNN misses upright at this scale; the default's turned copies start at 1.5x)
    whole = FaceDetector(FaceConfig(face_regions=False, turned_min_face=1.0))
    assert _found(whole.detect(canvas), true)


def test_the_fetch_records_the_stored_files_phash_and_pairs_use_it(tmp_path, image_server):
    face, _ = scene(photo_face(120), (320, 280), bg="photo", seed=2)
    big, _ = scene(drawn_face(60), (1300, 1000), bg="noise", seed=5)
    bodies = {
        "/a.jpg": _encode(face, "JPEG", quality=92),  # blurred: a new file
        "/b.png": _encode(background("gradient", (300, 200), seed=1), "PNG"),
        "/c.jpg": _encode(big.convert("RGB"), "JPEG", quality=85),  # decoded reduced
    }
    kinds = {"jpg": "image/jpeg", "png": "image/png"}
    server = image_server({p: Resource(b, kinds[p[-3:]]) for p, b in bodies.items()})
    refs = [ref(p[1], server.url("127.0.0.152", p)) for p in bodies]
    out = tmp_path / "fetch"
    fetch_images(refs, out, FAST)
    rows = pq.read_table(out / FETCHED).to_pylist()
    assert all(r["image_path"] for r in rows)
    assert rows[0]["face_count"] >= 1
    for r in rows[:2]:  # decoded in full: the very hash of the file as stored
        assert r["phash"] == phash_bytes((out / r["image_path"]).read_bytes())
    # decoded reduced: within the de-duplication's distance of the full decode's hash
    assert hamming(rows[2]["phash"], phash_bytes(bodies["/c.jpg"])) <= 4
    pairs = build_pairs([{**r, "image_path": r["image_path"] + ".gone"} for r in rows], out)
    assert [p["phash"] for p in pairs] == [r["phash"] for r in rows]


def _clip_dir(root):
    """refinery-tiny at its seeded random initialisation, saved as a checkpoint directory."""
    import torch

    from training.clip import load_clip, save_clip

    torch.manual_seed(0)
    loaded = load_clip("refinery-tiny", "cpu", for_training=True)
    return str(save_clip(loaded.model, loaded.model_cfg, root / "clip"))


def test_clip_scores_reuse_the_fetchs_decode_and_equal_scores_from_the_files(
    tmp_path, image_server, monkeypatch
):
    """A scorer handed the fetch's decodes (`on_image=scorer.keep`) decodes no stored file again
    but a blurred one and one decoded reduced, and its scores are the very scores of decoding
    every file (PNG, JPEG, palette GIF, WebP with alpha)."""
    import training.clip as clip_mod
    from training.clip import ClipScorer

    rng = random.Random(29)
    scenes = [random_scene(rng) for _ in range(7)]
    bodies, alts = {}, {}
    for i, s in enumerate(scenes):
        im = Image.open(io.BytesIO(render_png(s)))
        fmt = ("PNG", "JPEG", "GIF", "WEBP")[i % 4]
        im = im.convert("P") if fmt == "GIF" else im.convert("RGBA" if i == 4 else "RGB")
        bodies[f"/s{i}.{fmt.lower()}"] = _encode(im, fmt)
        alts[f"/s{i}.{fmt.lower()}"] = s.alt()
    face, _ = scene(photo_face(120), (320, 280), bg="photo", seed=2)
    bodies["/face.jpeg"], alts["/face.jpeg"] = (
        _encode(face, "JPEG", quality=92),
        "a portrait photograph of a person in a room",
    )
    big, _ = scene(drawn_face(60), (1300, 1000), bg="noise", seed=5)
    bodies["/big.jpeg"] = _encode(big.convert("RGB"), "JPEG", quality=85)
    alts["/big.jpeg"] = "a drawing of a face on a noisy background"
    server = image_server(
        {p: Resource(b, f"image/{p.rsplit('.', 1)[1]}") for p, b in bodies.items()}
    )
    refs = [ref(f"r{i}", server.url("127.0.0.152", p), alt=alts[p]) for i, p in enumerate(bodies)]
    model = _clip_dir(tmp_path)
    decoded: list[str] = []
    opened = clip_mod.open_image

    def counting(image):
        decoded.append(str(image))
        return opened(image)

    monkeypatch.setattr(clip_mod, "open_image", counting)
    fed = ClipScorer(model, device="cpu", batch_size=3)
    out = tmp_path / "fetch"
    fetch_images(refs, out, FAST, on_image=fed.keep)
    assert fed.kept == 7  # the two others: blurred, and decoded reduced
    rows = pq.read_table(out / FETCHED).to_pylist()
    assert all(r["image_path"] for r in rows)
    pairs = build_pairs(rows, out, score=fed.score)
    again = {Path(p).name for p in decoded}
    assert again == {Path(r["image_path"]).name for r in rows[-2:]}
    decoded.clear()
    plain = build_pairs(rows, out, score=ClipScorer(model, device="cpu", batch_size=3).score)
    assert len(decoded) == len(rows)  # without a feed, every stored file is decoded
    scores = [p["clip_score"] for p in pairs]
    assert all(s is not None for s in scores[:7])
    # The fed images are encoded by the scorer's background thread with one intra-op thread,
    # the files here with torch's own count: the sums run in another order (~3e-8 apart).
    assert scores == pytest.approx([p["clip_score"] for p in plain], abs=1e-6)
    without = [{k: v for k, v in p.items() if k != "clip_score"} for p in pairs]
    assert without == [{k: v for k, v in p.items() if k != "clip_score"} for p in plain]
