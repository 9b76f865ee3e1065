"""Faces blurred before an image is stored: rendered faces are found and made unrecognisable,
face-free images are stored byte for byte, and the fetch keeps no original bytes of a face."""

from __future__ import annotations

import hashlib
import io
import random

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from crawlers.images import FETCHED, fetch_images
from crawlers.images.faces import Box, FaceConfig, FaceDetector, redact
from sampleweb.images import random_scene, render_png

from .conftest import FAST, Resource, ref
from .face_render import (
    SKINS,
    TONES,
    background,
    cartoon_face,
    drawn_face,
    face_free_graphics,
    face_free_photos,
    photo_face,
    scene,
    toned_photo_face,
)

DET = FaceDetector()


def _encode(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def _found(boxes, true) -> bool:
    x0, y0, x1, y1 = true
    for bx in boxes:
        ix = max(0, min(x1, bx.x + bx.w) - max(x0, bx.x))
        iy = max(0, min(y1, bx.y + bx.h) - max(y0, bx.y))
        if ix * iy >= 0.3 * bx.w * bx.h and ix * iy >= 0.3 * (x1 - x0) * (y1 - y0):
            return True
    return False


# (face, image size, angle, background): a few of bench/faces.py's grid, each found
FACES = [
    ("drawn", 64, 0, "flat"),
    ("drawn", 120, 0, "photo"),
    ("drawn", 120, 30, "gradient"),
    ("photo", 80, 0, "noise"),
    ("photo", 160, -30, "photo"),
    # drawn by another hand (flat ImageDraw shapes), and a photographed face of the darkest tone
    ("cartoon", 80, 0, "gradient"),
    ("cartoon", 160, 20, "noise"),
    ("dark photo", 120, 20, "flat"),
]


@pytest.mark.parametrize(("kind", "width", "angle", "bg"), FACES, ids=lambda v: str(v))
def test_rendered_face_is_found_and_blurred_beyond_recognition(kind, width, angle, bg):
    face = {
        "drawn": lambda: drawn_face(width, SKINS[width % 5]),
        "photo": lambda: photo_face(width),
        "cartoon": lambda: cartoon_face(width, TONES[width % 3], seed=width),
        "dark photo": lambda: toned_photo_face(width, TONES[-1]),
    }[kind]()
    side = int(width * 2.5)
    img, true = scene(face, (side, side), angle=angle, bg=bg, seed=1)
    assert _found(DET.detect(img), true)
    data = _encode(img, "JPEG", quality=95)
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        red = redact(data, im, "JPEG", DET)
    assert red.face_count >= 1 and red.data != data
    with Image.open(io.BytesIO(red.data)) as out:
        assert out.format == "JPEG" and out.size == img.size
        blurred = out.convert("RGB")
    assert not _found(DET.detect(blurred), true), "the blurred face is still found"
    for b in red.boxes:  # the face's own box: its pixel variance is nearly gone
        box = (b.x, b.y, b.x + b.w, b.y + b.h)
        before = np.asarray(img.convert("L").crop(box), dtype=float).var()
        after = np.asarray(blurred.convert("L").crop(box), dtype=float).var()
        assert after < 0.2 * before, (box, before, after)


# Faces past the default search's reach (each missed by FaceDetector()): on their side, turned
# 90 and 105 degrees either way; found when the turns are searched too (FaceConfig.angles).
SIDEWAYS = [
    ("photo", 80, 105, "flat"),
    ("photo", 64, 90, "noise"),
    ("drawn", 80, 90, "flat"),
    ("drawn", 120, -90, "gradient"),
]


@pytest.mark.parametrize(("kind", "width", "angle", "bg"), SIDEWAYS, ids=lambda v: str(v))
def test_faces_on_their_side_are_found_when_those_turns_are_searched(kind, width, angle, bg):
    face = drawn_face(width, SKINS[width % 5]) if kind == "drawn" else photo_face(width)
    img, true = scene(face, (int(width * 2.5),) * 2, angle=angle, bg=bg, seed=1)
    det = FaceDetector(FaceConfig(angles=[-25, 25, 90, -90, 180]))
    data = _encode(img, "PNG")
    red = redact(data, img, "PNG", det)
    assert _found(red.boxes, true) and red.data != data
    with Image.open(io.BytesIO(red.data)) as out:
        assert not _found(det.detect(out.convert("RGB")), true), "the blurred face is still found"


def test_an_angle_that_is_not_a_number_is_refused():
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="is not a turn; give finite degrees"):
            FaceConfig(angles=[25.0, bad])


def _face_free_images():
    rng = random.Random(3)
    out = [render_png(random_scene(rng)) for _ in range(6)]  # what the sample web serves
    for i, kind in enumerate(("flat", "gradient", "noise", "photo")):
        out.append(_encode(background(kind, (200, 150), seed=i), "PNG"))
    out += [_encode(p, "JPEG", quality=85) for p in face_free_photos()]
    return out


def test_face_free_images_are_stored_byte_for_byte():
    for data in _face_free_images():
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            red = redact(data, im, im.format, DET)
        assert red.boxes == [] and red.data is data


def test_charts_and_pages_of_text_on_white_are_stored_byte_for_byte():
    """Line charts and pages of text on white (face_render.face_free_graphics: seeds 0, 1, 15,
    16), as JPEG and PNG: no face is found in a chart's lines or a page's glyphs. (Text on a tinted
    or skin-toned ground is another matter: see bench/faces.py --graphics.)"""
    graphics = face_free_graphics(17)
    for i in (0, 1, 15, 16):
        kind, img = graphics[i]
        assert kind in ("chart", "text")
        for fmt, kw in (("PNG", {}), ("JPEG", {"quality": 85})):
            data = _encode(img, fmt, **kw)
            with Image.open(io.BytesIO(data)) as im:
                im.load()
                red = redact(data, im, fmt, DET)
            assert red.boxes == [] and red.data is data, (i, kind, fmt, red.boxes)


def test_animated_image_is_stored_as_its_checked_first_frame():
    """Only the first frame is decoded and searched: later frames (a face in the second here)
    are not stored."""
    face, _ = scene(drawn_face(100), (240, 240))
    first = background("gradient", (240, 240))
    data = _encode(first, "GIF", save_all=True, append_images=[face])
    with Image.open(io.BytesIO(data)) as im:
        frames = im.n_frames
        im.seek(0)
        im.load()
        red = redact(data, im, "GIF", DET, frames=frames)
    with Image.open(io.BytesIO(red.data)) as out:
        assert getattr(out, "n_frames", 1) == 1
    assert red.data != data


@pytest.mark.parametrize("fmt", ["WEBP", "AVIF"])
def test_a_face_in_a_webp_or_avif_is_blurred_and_stored_in_its_format(fmt):
    from crawlers.images import decode_image, sniff

    img, true = scene(photo_face(120), (300, 300), bg="photo", seed=3)
    data = _encode(img, fmt, quality=90)
    dec = decode_image(data, max_bytes=2**22, max_pixels=2**24, min_side=32, max_aspect=4.0)
    assert dec.drop_reason is None and dec.format == fmt
    red = redact(data, dec.image, fmt, DET)
    assert _found(red.boxes, true) and sniff(red.data) == fmt
    with Image.open(io.BytesIO(red.data)) as out:
        after = np.asarray(out.convert("L").crop(true), dtype=float)
    before = np.asarray(img.convert("L").crop(true), dtype=float)
    assert after.var() < 0.5 * before.var()


def test_exif_orientation_is_applied_and_exif_dropped_when_blurred():
    """A face stored sideways with an EXIF orientation: found upright, blurred, and stored upright
    without the EXIF block (whose thumbnail would show the face)."""
    img, _ = scene(drawn_face(120), (300, 300))
    sideways = img.transpose(Image.Transpose.ROTATE_90)  # orientation 6 turns it back
    exif = Image.Exif()
    exif[0x0112] = 6
    data = _encode(sideways, "JPEG", quality=95, exif=exif.tobytes())
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        red = redact(data, im, "JPEG", DET)
    assert red.face_count >= 1
    with Image.open(io.BytesIO(red.data)) as out:
        assert "exif" not in out.info and out.getexif().get(0x0112) is None
        assert out.size == img.size == (red.width, red.height)


def test_fetch_blurs_faces_records_boxes_and_keeps_no_original_bytes(tmp_path, image_server):
    img, true = scene(photo_face(120), (320, 280), bg="photo", seed=2)
    face_jpeg = _encode(img, "JPEG", quality=92)
    plain_png = render_png(random_scene(random.Random(7)))  # a sample-web scene
    server = image_server(
        {
            "/p/face.jpg": Resource(face_jpeg, "image/jpeg"),
            "/p/plain.png": Resource(plain_png),
            "/private/face.jpg": Resource(face_jpeg, "image/jpeg"),
        }
    )
    ip = "127.0.0.151"
    refs = [
        ref("face", server.url(ip, "/p/face.jpg")),
        ref("plain", server.url(ip, "/p/plain.png")),
        ref("optout", server.url(ip, "/p/face.jpg"), training_allowed=False),
        ref("robots", server.url(ip, "/private/face.jpg")),
    ]
    out = tmp_path / "fetch"
    summary = fetch_images(refs, out, FAST)
    rows = {r["id"]: r for r in pq.read_table(out / FETCHED).to_pylist()}
    face, plain = rows["face"], rows["plain"]
    assert face["image_sha256"] == hashlib.sha256(face_jpeg).hexdigest()
    assert face["face_count"] >= 1 and len(face["face_boxes"]) == face["face_count"]
    assert _found([Box(**b) for b in face["face_boxes"]], true)
    stored = (out / face["image_path"]).read_bytes()
    assert stored != face_jpeg
    assert plain["face_count"] == 0 and plain["face_boxes"] == []
    assert (out / plain["image_path"]).read_bytes() == plain_png
    assert summary["images_with_faces_blurred"] == 1
    # no file under the output holds the face image's original bytes
    for f in out.rglob("*"):
        if f.is_file():
            assert face_jpeg not in f.read_bytes(), f
    for rid in ("optout", "robots"):  # opted out: never stored, nothing recorded about faces
        assert rows[rid]["image_path"] is None and rows[rid]["face_count"] is None


@pytest.mark.parametrize(("fmt", "ext"), [("JPEG", "jpg"), ("AVIF", "avif")])
def test_a_blurred_image_passes_the_mixture_file_check(tmp_path, fmt, ext):
    """The mixture checks each image file against the hash its pairs row records: a blurred
    image is checked against stored_sha256 (the stored file), not the fetched bytes' hash."""
    from filters.images.pairs import pairs_table
    from training.mixture.images import ImageCheck, PairIndex

    img, _ = scene(photo_face(120), (300, 300), bg="gradient")
    data = _encode(img, fmt, quality=92)
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        red = redact(data, im, fmt, DET)
    assert red.face_count >= 1
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / f"f.{ext}").write_bytes(red.data)
    row = {
        "id": "d-0",
        "doc_id": "d",
        "image_path": f"images/f.{ext}",
        "image_sha256": hashlib.sha256(data).hexdigest(),
        "stored_sha256": hashlib.sha256(red.data).hexdigest(),
        "training_allowed": True,
        "caption": "a portrait",
    }
    pq.write_table(pairs_table([row]), tmp_path / "pairs.parquet")
    pair = PairIndex((str(tmp_path / "pairs.parquet"),)).get("d-0")
    assert pair.sha256 == row["stored_sha256"]
    assert ImageCheck()(pair.path, pair.sha256)["ext"] == ext
    assert ImageCheck()(pair.path, row["image_sha256"]) == "image_sha256_mismatch"


@pytest.mark.parametrize("detector", ["mtcnn", "haar"])
def test_threads_searching_at_once_in_a_fresh_process_all_succeed(tmp_path, detector):
    """OpenCV's loader is not thread-safe: the demo's four fetch threads loading cv2 at once got
    `module 'cv2' has no attribute 'data'` (3 runs in 4 of this script failed before the fix).
    The detector loads it when it is built, in the building thread, under a lock, and turns
    OpenCV's own thread pool off (the callers' threads search: a pool on top only adds CPU).
    MTCNN's nets are built once, by the first thread that searches, under a lock."""
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    script = textwrap.dedent(
        """
        import io, sys, threading
        import numpy as np
        from PIL import Image
        from crawlers.images.faces import FaceConfig, FaceDetector
        det = FaceDetector(FaceConfig(detector=sys.argv[1], face_regions=False))
        assert "cv2" in sys.modules and hasattr(sys.modules["cv2"], "data"), "cv2 not loaded"
        assert sys.modules["cv2"].getNumThreads() == 1, "OpenCV's own thread pool is on"
        rng = np.random.default_rng(0)
        errors = []
        def search(seed):
            try:
                arr = (np.random.default_rng(seed).random((160, 240, 3)) * 255).astype("uint8")
                det.detect(Image.fromarray(arr))
            except BaseException as exc:
                errors.append(repr(exc))
        threads = [threading.Thread(target=search, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("ERRORS", errors)
        sys.exit(1 if errors else 0)
        """
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", script, detector],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]


@pytest.mark.parametrize("size", [(1, 1), (2, 1), (12, 12), (2000, 13), (13, 2000)], ids=str)
def test_tiny_and_thin_images_of_every_mode_are_searched_without_error(size):
    # a fetch's min_side may be 1: a 1x1 skin-toned pixel once made the face map's comparison
    # fail (OpenCV took the 1x1 array for a scalar)
    w, h = size
    rng = np.random.default_rng(w * 7919 + h)
    noise = rng.integers(150, 230, (h, w, 3), dtype=np.uint8)
    noise[..., 2] = noise[..., 0] * 3 // 5  # skin-toned: the map has an area to test
    for mode in ("RGB", "L", "RGBA", "P"):
        img = Image.fromarray(noise).convert(mode)
        for det in (DET, FaceDetector(FaceConfig(face_regions=False))):
            assert det.detect(img) == []


@pytest.fixture(scope="module")
def graphics():
    return face_free_graphics(119)


@pytest.fixture(scope="module")
def tinted_pages(graphics):
    """Two pages of text on tinted grounds (face_render.face_free_graphics 28: parchment, 58:
    lavender) in which MTCNN takes glyphs ("0123") for faces."""
    return [graphics[28][1], graphics[58][1]]


def test_a_page_decoded_reduced_is_read_in_its_own_pixels(graphics):
    """The fetch searches a JPEG's reduced (draft) decode and gives boxes in the full image's
    pixels; the veto reads the reduced decode at those boxes scaled back (page 118: three
    false faces at half size, none with the veto)."""
    page = graphics[118][1]
    data = _encode(page, "JPEG", quality=90)
    with Image.open(io.BytesIO(data)) as im:
        im.draft("RGB", (page.width // 2, page.height // 2))
        im.load()
        assert im.size[0] < page.width
        assert FaceDetector(FaceConfig(text_veto=False)).detect(im, page.size)
        assert DET.detect(im, page.size) == []


def test_a_page_of_text_on_a_tinted_ground_is_stored_byte_for_byte(tinted_pages):
    without_veto = FaceDetector(FaceConfig(text_veto=False))
    for page in tinted_pages:
        assert without_veto.detect(page), "the page no longer fools MTCNN: pick another"
        data = _encode(page, "PNG")
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            red = redact(data, im, "PNG", DET)
        assert red.boxes == [] and red.data is data


def test_without_tesseract_every_box_is_blurred(tinted_pages, monkeypatch):
    """No Tesseract: no veto, the glyphs' boxes are blurred like faces (the safe side)."""
    import crawlers.images.faces as faces

    monkeypatch.setattr(faces, "_OCR", [None])
    assert FaceDetector().detect(tinted_pages[0])


def test_a_face_under_a_caption_is_still_blurred(monkeypatch):
    """A one-line caption across a flat cartoon face on a flat ground: the box is read (most of
    it is one flat level) and its words cover a fifth of it, the rest of the box nearly the
    ground's colour; a caption is one line, a page two or more, so the face is kept."""
    from PIL import ImageDraw, ImageFont

    from crawlers.images import ocr

    reads = []
    real_read = ocr.OcrEngine.read
    monkeypatch.setattr(
        ocr.OcrEngine, "read", lambda self, im: reads.append(im.size) or real_read(self, im)
    )
    img, true = scene(cartoon_face(100, TONES[0], seed=0), (360, 360), bg="flat", seed=0)
    x0, y0, x1, y1 = true
    ImageDraw.Draw(img).text(
        (x0 - 20, y0 + (y1 - y0) * 0.75),
        "WHEN THE CODE RUNS",
        fill=(255, 255, 255),
        font=ImageFont.load_default(size=30),
        stroke_width=2,
        stroke_fill=(0, 0, 0),
    )
    assert _found(FaceDetector().detect(img), true)
    assert reads, "the box was not read: the test no longer reaches the veto"


@pytest.mark.parametrize("kind", ["drawn", "cartoon"])
def test_words_read_over_a_face_do_not_make_it_text(kind, monkeypatch):
    """Tesseract stubbed to read two lines of confident words across a face's box (widened to
    half again its size, as MTCNN's boxes are, so most of it is the flat ground): the face is
    kept, since a third of its box is neither words nor ground; the same box on a blank page
    of that ground is text."""
    import crawlers.images.faces as faces
    from crawlers.images.ocr import Word

    face = drawn_face(120, SKINS[1], seed=1) if kind == "drawn" else cartoon_face(120, seed=1)
    img, (x0, y0, x1, y1) = scene(face, (400, 400), bg="flat", seed=1)
    cx, cy, w, h = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) * 1.5, (y1 - y0) * 1.5
    box = Box(int(cx - w / 2), int(cy - h / 2), int(w), int(h))
    left, top = max(0, box.x - 2 * box.w), max(0, box.y - box.h // 2)  # the band read

    class TwoLines:
        def read(self, image):
            rows = (box.y + box.h * 0.35, box.y + box.h * 0.6)
            words = [
                Word(
                    "TEXT",
                    0.9,
                    (box.x - left, int(y - top), box.x + box.w - left, int(y - top + box.h * 0.15)),
                )
                for y in rows
            ]
            return type("Read", (), {"words": words})()

    monkeypatch.setattr(faces, "_OCR", [TwoLines()])
    page = Image.new("RGB", img.size, img.getpixel((2, 2)))
    assert faces.not_text(page, [box], page.size, FaceConfig()) == []
    assert faces.not_text(img, [box], img.size, FaceConfig()) == [box]


def test_threads_reading_pages_at_once_in_a_fresh_process_all_succeed(tmp_path):
    """Six threads searching tinted pages at once in a fresh process: the first reads race to
    make the one OCR engine (built once, under a lock) and read through it together; every page
    comes out with no face and no thread fails."""
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    script = textwrap.dedent(
        """
        import sys, threading
        from crawlers.images.faces import FaceDetector
        from tests.images.face_render import face_free_graphics
        graphics = face_free_graphics(59)
        pages = [graphics[28][1], graphics[58][1]] * 3
        det = FaceDetector()
        found, errors = [], []
        def search(page):
            try:
                found.append(len(det.detect(page)))
            except BaseException as exc:
                errors.append(repr(exc))
        threads = [threading.Thread(target=search, args=(p,)) for p in pages]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        import crawlers.images.faces as faces
        print("FOUND", found, "ERRORS", errors, "ENGINES", len(faces._OCR))
        sys.exit(1 if errors or any(found) or len(found) != 6 or len(faces._OCR) != 1 else 0)
        """
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
