"""What the image fetch computes per image, and what it skips: work whose result is known before
it runs is not done, and the outputs stay those of the full computation."""

from __future__ import annotations

import io
import random

import cv2
import pyarrow.parquet as pq
import pytest
from PIL import Image, ImageEnhance

from common.phash import colour_thumbnail
from crawlers.images import FETCHED, faces, fetch_images
from crawlers.images.faces import FaceConfig, FaceDetector, face_regions
from filters.images.pairs import build_pairs
from sampleweb.images import Scene, random_scene, reencode_jpeg, render_png, resize_png

from .conftest import FAST, Resource, ref
from .face_render import drawn_face, face_free_photos, photo_face, scene
from .test_faces import _encode, _found


def _bench_scenes(n: int, seed: int = 3) -> list[Image.Image]:
    """Scenes as bench/images.py draws them: sample-web shapes at 256-640 px."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        s = random_scene(rng)
        w = rng.randrange(256, 641)
        h = max(256, min(640, int(w * rng.uniform(0.6, 1.0))))
        out.append(Image.open(io.BytesIO(render_png(Scene(s.groups, w, h, s.domain)))))
    return out


@pytest.fixture
def labelled(monkeypatch) -> list:
    """Count the face map's connected-component labellings."""
    calls: list = []
    label = cv2.connectedComponentsWithStats

    def counted(*a, **kw):
        calls.append(1)
        return label(*a, **kw)

    monkeypatch.setattr(cv2, "connectedComponentsWithStats", counted)
    return calls


def test_an_image_without_detail_in_skin_or_grey_areas_is_not_labelled(labelled):
    # flat shapes (the sample web's scenes, most of them) have no detail inside a skin-toned or
    # grey area: no region, found without labelling the map (it cost half of face_regions)
    images = _bench_scenes(12)
    results = [face_regions(im, (im.height, im.width), 20) for im in images]
    assert results.count([]) >= 8
    # most are settled before the labelling; every image with a region was labelled
    assert len(images) - results.count([]) <= len(labelled) <= len(images) // 3


def test_images_with_faces_are_still_labelled_and_their_faces_found(labelled):
    det = FaceDetector()
    for face, width in ((drawn_face, 120), (photo_face, 160)):
        img, true = scene(face(width), (480, 360), bg="flat", seed=1)
        assert _found(det.detect(img), true)
    assert len(labelled) == 2
    # face-free photographs are labelled (they have detail in skin-toned areas) and stay so
    for im in face_free_photos():
        face_regions(im, (im.height, im.width), 20)
    assert len(labelled) == 2 + len(face_free_photos())


@pytest.mark.parametrize(
    "size, width, angle, bg",
    [
        ((640, 480), 30, 30, "gradient"),
        ((640, 480), 48, -15, "flat"),
        ((1200, 900), 55, -15, "noise"),
        ((1200, 900), 65, 0, "gradient"),
        ((1200, 900), 75, 30, "flat"),
    ],
    ids=str,
)
def test_a_small_photographed_face_in_a_large_image_keeps_its_region(size, width, angle, bg):
    # 22-36 px in the 480 px copy searched, ~15-25 px on the face map: its skin is speckled at
    # that scale (shading, a JPEG's chroma noise), which the map's erosion once wiped out, so a
    # person in a large photograph went unsearched (each of these; 0.45 of such faces found)
    img, true = scene(photo_face(width), size, angle=angle, at=(0.3, 0.4), bg=bg, seed=2)
    img = _jpeg(img)
    w, h = img.size
    k = 480 / max(w, h)
    regions = face_regions(img, (round(h * k), round(w * k)), 20)
    assert regions != []
    assert _found(FaceDetector().detect(img), true)


def _open_counter(monkeypatch, root) -> list:
    """Count the stored files under `root` that are opened (PIL) from here on."""
    opened: list = []
    real = Image.open

    def counted(fp, *a, **kw):
        if str(fp).startswith(str(root)):
            opened.append(str(fp))
        return real(fp, *a, **kw)

    monkeypatch.setattr(Image, "open", counted)
    return opened


def test_dedup_compares_the_fetchs_colour_thumbnails_and_decides_as_from_the_files(
    tmp_path, image_server, monkeypatch
):
    # scenes, their re-encodes and resizes (the same picture: one kept), and scenes of the same
    # layout in other colours (pHash alike, the colour check tells them apart), a blurred face
    rng = random.Random(7)
    bodies = {}
    for i in range(6):
        s = random_scene(rng)
        png = render_png(s)
        bodies[f"/s{i}.png"] = (png, "image/png")
        bodies[f"/s{i}.jpg"] = (reencode_jpeg(png, 85), "image/jpeg")
        bodies[f"/s{i}-big.png"] = (resize_png(png, 1.4)[0], "image/png")
    face, _ = scene(photo_face(120), (320, 280), bg="photo", seed=2)
    bodies["/face.jpg"] = (_encode(face, "JPEG", quality=92), "image/jpeg")
    server = image_server({p: Resource(b, t) for p, (b, t) in bodies.items()})
    refs = [ref(f"r{i}", server.url("127.0.0.152", p)) for i, p in enumerate(bodies)]
    out = tmp_path / "fetch"
    fetch_images(refs, out, FAST)
    rows = pq.read_table(out / FETCHED).to_pylist()
    assert all(r["image_path"] for r in rows)
    for r in rows:
        if r["face_count"]:  # blurred: the file is not the decode; the check reads the file
            assert r["colour_thumbnail"] is None
            continue
        with Image.open(out / r["image_path"]) as im:
            im.seek(0)
            assert r["colour_thumbnail"] == colour_thumbnail(im).hex()

    opened = _open_counter(monkeypatch, out)
    pairs = build_pairs(rows, out)
    from_fetch = len(opened)
    without = [{**r, "colour_thumbnail": None} for r in rows]
    from_files = build_pairs(without, out)
    decisions = [(p["drop_reason"], p["duplicate_of"]) for p in pairs]
    assert decisions == [(p["drop_reason"], p["duplicate_of"]) for p in from_files]
    assert sum(d == "duplicate" for d, _ in decisions) >= 6
    # only the blurred image's file may be read, and only if its pHash matched another
    assert from_fetch <= 1 and len(opened) - from_fetch >= 12


@pytest.mark.parametrize("size", [(400, 300), (520, 390), (640, 480)])
def test_a_map_drawn_bilinear_at_half_to_full_scale_still_finds_every_face(size, monkeypatch):
    """Between half and full size the face map is scaled bilinearly by OpenCV, not by Pillow's
    box filter (0.85 of the map's 1.3 ms at 640 px): faces drawn and photographed, upright and
    turned, are found as before, and face-free scenes stay unsearched."""
    det = FaceDetector()
    boxed: list = []
    resize = Image.Image.resize

    def counted(self, *a, **kw):
        boxed.append(self.size)
        return resize(self, *a, **kw)

    monkeypatch.setattr(Image.Image, "resize", counted)
    for face, width, angle, bg in (
        (drawn_face, 64, 0, "flat"),
        (drawn_face, 90, 15, "gradient"),
        (photo_face, 100, 30, "flat"),
        (photo_face, 120, 0, "noise"),
    ):
        img, true = scene(face(width), size, bg=bg, angle=angle, seed=width)
        boxed.clear()
        regions = face_regions(img, (img.height, img.width), 20)
        assert regions != [] and boxed == []  # no Pillow resize drew the map
        assert _found(det.detect(img), true), (face.__name__, width, angle, bg)
    scenes = _bench_scenes(8, seed=5)
    assert sum(det.detect(im) == [] for im in scenes) == len(scenes)


@pytest.fixture
def gradients(monkeypatch) -> list:
    """Count the face map's detail gradients (morphological gradients of the luma, the first
    channel of its YCrCb copy; the chroma's gradients are not counted)."""
    calls: list = []
    real = cv2.morphologyEx

    def counted(src, op, *a, **kw):
        base = src.base if src.base is not None else src
        if op == cv2.MORPH_GRADIENT and src.ctypes.data == base.ctypes.data:
            calls.append(src.shape)
        return real(src, op, *a, **kw)

    monkeypatch.setattr(cv2, "morphologyEx", counted)
    return calls


def test_an_image_without_skin_toned_or_grey_areas_gets_no_detail_map(gradients):
    # white backgrounds with coloured shapes (most sample-web scenes) have no area well inside
    # skin tones or mid-grey: no region, decided before the detail gradient is drawn
    images = _bench_scenes(16, seed=11)
    results = [face_regions(im, (im.height, im.width), 20) for im in images]
    assert results.count([]) >= 12
    assert 0 < len(gradients) < len(images) - 4
    # a face, drawn or photographed, still gets its map and is found
    det = FaceDetector()
    for face, width in ((drawn_face, 40), (photo_face, 64)):
        gradients.clear()
        img, true = scene(face(width), (320, 240), bg="gradient", seed=3)
        assert _found(det.detect(img), true)
        assert len(gradients) == 1


def _jpeg(img: Image.Image, quality: int = 85) -> Image.Image:
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return Image.open(io.BytesIO(buf.getvalue()))


def test_detail_only_on_a_jpegs_colour_edges_is_not_searched(monkeypatch):
    # a JPEG keeps its colour at half resolution: a skin tone bleeds across a shape's edge (a
    # brown trunk under a yellow crown) and that edge's luma step becomes "detail" inside a
    # skin area; a region whose every detail pixel is on a colour edge is not a face's
    rng = random.Random(3)
    scenes = []
    for _ in range(60):
        s = random_scene(rng)
        w = rng.randrange(256, 641)
        h = max(256, min(640, int(w * rng.uniform(0.6, 1.0))))
        png = render_png(Scene(s.groups, w, h, s.domain))
        scenes.append(Image.open(io.BytesIO(reencode_jpeg(png, 85))))
    searched = sum(face_regions(im, (im.height, im.width), 20) != [] for im in scenes)
    assert searched <= 15  # a quarter at most
    monkeypatch.setattr(faces, "_COLOUR_EDGE", 256)  # colour-edge detail counted: more searched
    assert sum(face_regions(im, (im.height, im.width), 20) != [] for im in scenes) > searched


# The default detector (MTCNN) misses this one, a large drawn face at 30% contrast turned by 15
# degrees, which the cascades find; on bench/faces.py's full grid MTCNN finds more faces overall.
MTCNN_MISSES = {("drawn_face", 240, 15, "gradient", 0.3)}


@pytest.mark.parametrize(
    "face, width, angle, bg, contrast",
    [
        (drawn_face, 32, 0, "flat", 1.0),
        (drawn_face, 40, 30, "gradient", 1.0),
        (drawn_face, 64, -30, "photo", 1.0),
        (photo_face, 48, 15, "flat", 1.0),
        (photo_face, 64, 30, "noise", 1.0),
        (photo_face, 120, -15, "photo", 1.0),
        (drawn_face, 240, 15, "gradient", 0.3),
        (drawn_face, 64, 15, "gradient", 0.4),
        (photo_face, 64, 0, "flat", 0.3),
    ],
)
def test_faces_in_jpegs_keep_their_regions_and_are_found(face, width, angle, bg, contrast):
    # a face's detail is shading within one skin tone: JPEG-compressed, small, turned or at low
    # contrast (its detail then barely above the map's threshold), it is still searched and found
    side = max(160, width * 3)
    img, true = scene(face(width), (side, side), angle=angle, bg=bg)
    img = _jpeg(ImageEnhance.Contrast(img).enhance(contrast))
    assert face_regions(img, (img.height, img.width), 20) != []
    key = (face.__name__, width, angle, bg, contrast)
    cfg = FaceConfig(detector="haar") if key in MTCNN_MISSES else FaceConfig()
    assert _found(FaceDetector(cfg).detect(img), true), key
    if key in MTCNN_MISSES:  # still missed by the default: when MTCNN finds it, drop it here
        assert not _found(FaceDetector().detect(img), true), key
