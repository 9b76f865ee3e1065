"""A real face in a photograph toned in one colour (cyanotype, night-vision green, a purple
duotone, black and white under a strong colour cast) is found and blurred: its pixels are
neither skin-toned nor near grey, so the face map once found nothing to search and the file was
stored as fetched. Colour images and flat graphics are not taken for toned ones."""

from __future__ import annotations

import io
import os
import random

import cv2
import numpy as np
import pytest
from PIL import Image

from crawlers.images import faces
from crawlers.images.faces import FaceDetector, face_regions, redact
from sampleweb.images import random_scene, render_png

from .face_render import background, face_free_photos, photo_face, scene

DET = FaceDetector()


def _hopper_path() -> str:
    import matplotlib

    return os.path.join(matplotlib.get_data_path(), "sample_data", "grace_hopper.jpg")


pytestmark = pytest.mark.skipif(
    not os.path.exists(_hopper_path()), reason="matplotlib's sample grace_hopper.jpg is absent"
)


def _duotone(img: Image.Image, dark, light) -> Image.Image:
    grey = np.asarray(img.convert("L"), np.float32)[..., None] / 255
    dark, light = np.array(dark, np.float32), np.array(light, np.float32)
    return Image.fromarray((dark + (light - dark) * grey).clip(0, 255).astype(np.uint8))


def _cast(img: Image.Image, tint, strength: float) -> Image.Image:
    """Black and white under a colour cast, clipped where a channel saturates."""
    grey = np.asarray(img.convert("L"), np.float32)[..., None]
    gain = 1 + strength * (np.array(tint, np.float32) - 1)
    return Image.fromarray((grey * gain).clip(0, 255).astype(np.uint8))


TONES = {
    "cyanotype": lambda im: _duotone(im, (10, 30, 80), (220, 235, 255)),
    "night-vision green": lambda im: _duotone(im, (0, 20, 0), (160, 255, 160)),
    "purple duotone": lambda im: _duotone(im, (40, 0, 60), (255, 200, 255)),
    "strong blue cast": lambda im: _cast(im, (0.80, 0.92, 1.15), 2.0),
}


def _jpeg(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _store(data: bytes):
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return redact(data, im, "JPEG", DET)


def _found(boxes, true) -> bool:
    x0, y0, x1, y1 = true
    for b in boxes:
        ix = max(0, min(x1, b.x + b.w) - max(x0, b.x))
        iy = max(0, min(y1, b.y + b.h) - max(y0, b.y))
        if ix * iy >= 0.3 * b.w * b.h and ix * iy >= 0.3 * (x1 - x0) * (y1 - y0):
            return True
    return False


@pytest.mark.parametrize("tone", list(TONES))
def test_a_face_in_a_toned_photograph_is_blurred(tone):
    with Image.open(_hopper_path()) as im:
        portrait = im.convert("RGB").resize((256, 300), Image.Resampling.BOX)
    (truth,) = DET.detect(portrait)  # her face, found in the colour photograph
    true = (truth.x, truth.y, truth.x + truth.w, truth.y + truth.h)
    data = _jpeg(TONES[tone](portrait))
    red = _store(data)
    assert red.change == "faces blurred" and _found(red.boxes, true), (red.change, red.boxes)
    with Image.open(io.BytesIO(red.data)) as out:
        assert not _found(DET.detect(out.convert("RGB")), true), "the blurred face is still found"


@pytest.mark.parametrize("tone", list(TONES))
def test_a_face_on_a_photograph_toned_whole_is_searched_and_found(tone):
    img, true = scene(photo_face(110), (320, 280), bg="photo", seed=0)
    toned = Image.open(io.BytesIO(_jpeg(TONES[tone](img))))
    assert face_regions(toned, (toned.height, toned.width), 20) != []
    assert _found(DET.detect(toned), true)


def _ycc(img: Image.Image) -> np.ndarray:
    img = img.convert("RGB")
    k = min(1.0, 320 / max(img.size))
    img = img.resize((max(1, round(img.width * k)), max(1, round(img.height * k))))
    return cv2.cvtColor(np.asarray(img), cv2.COLOR_RGB2YCrCb)


def test_toned_face_free_photographs_are_still_stored_byte_for_byte():
    for photo in face_free_photos():
        for tone in TONES.values():
            data = _jpeg(tone(photo))
            assert faces._toned(_ycc(Image.open(io.BytesIO(data)))) is not None
            red = _store(data)
            assert red.boxes == [] and red.data is data


def test_colour_photographs_and_flat_scenes_are_not_toned():
    """Only a toned photograph is measured against its tone: colour photographs, the sample
    web's flat scenes (one hue on white, often) and flat grounds keep the plain map."""
    rng = random.Random(0)
    images = [Image.open(io.BytesIO(render_png(random_scene(rng)))) for _ in range(40)]
    images += list(face_free_photos())
    images += [background(k, (320, 240), seed=3) for k in ("flat", "noise", "photo")]
    with Image.open(_hopper_path()) as im:
        images.append(im.convert("RGB"))
        images.append(im.convert("L"))  # grey already: the grey map as it is
    assert [faces._toned(_ycc(im)) is not None for im in images] == [False] * len(images)
