"""The default face search: O-Net's boxes need landmarks where a face has them (petals, rock and
stone passed O-Net with "eyes" too close for the nose and mouth below them, and face-free
photographs were stored blurred), and a face on its side (a photograph served turned a quarter,
no orientation metadata) is found and blurred."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from crawlers.images.faces import FaceDetector, redact
from crawlers.images.mtcnn import _face_like

from .face_render import _hopper, face_free_photos, photo_face

DET = FaceDetector()


def _marks(points: list[tuple[float, float]]) -> list[float]:
    """O-Net's landmark row (x of each of the five, then y of each) from (x, y) points: the
    left eye, the right eye, the nose, the mouth's left and right corners."""
    return [p[0] for p in points] + [p[1] for p in points]


# O-Net's landmarks, in shares of the crop, as it gave them
_FRONTAL = _marks([(0.32, 0.42), (0.71, 0.40), (0.54, 0.61), (0.39, 0.77), (0.70, 0.75)])
# Pillow's flower2.jpg (heather): O-Net 0.915, the mouth 1.37 eye distances below the eyes
_HEATHER = _marks([(0.39, 0.38), (0.69, 0.29), (0.61, 0.60), (0.53, 0.79), (0.75, 0.73)])


@pytest.mark.parametrize(
    ("marks", "score", "kept"),
    [
        (_FRONTAL, 0.995, True),
        (_FRONTAL, 0.81, True),  # a frontal face's landmarks: kept at the O-Net threshold
        (_HEATHER, 0.915, False),  # eyes too close for the nose and mouth below them
        (_HEATHER, 0.97, True),  # a face in three-quarter view has them so, O-Net is sure
        # turned a quarter in the crop: the same face (the geometry follows the eye line)
        (_marks([(y, 1 - x) for x, y in zip(_FRONTAL[:5], _FRONTAL[5:], strict=True)]), 0.81, True),
        # the mouth above the nose, eyes below: no face
        (_marks([(0.3, 0.8), (0.7, 0.8), (0.5, 0.5), (0.35, 0.3), (0.65, 0.3)]), 0.9, False),
    ],
)
def test_o_nets_boxes_need_landmarks_where_a_face_has_them_unless_it_is_sure(marks, score, kept):
    got = _face_like(np.array([marks], np.float32), np.array([score], np.float32))
    assert got.tolist() == [kept]


@pytest.mark.parametrize("top", [0.0, 0.5])
def test_face_free_photograph_crops_are_stored_as_fetched(top):
    # scikit-learn's temple photograph, its top and bottom left quarters: the roof's finial and
    # an eave's corner passed O-Net with a nose and mouth too far below their "eyes", and each
    # quarter was stored blurred
    temple = face_free_photos()[0]
    w, h = temple.size
    crop = temple.crop((0, round(top * h), round(w / 2), round((top + 0.5) * h)))
    buf = io.BytesIO()
    crop.save(buf, format="PNG")
    data = buf.getvalue()
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        red = redact(data, im, "PNG", DET)
    assert red.boxes == [] and red.data == data, red.boxes


# Grace Hopper's head in matplotlib's grace_hopper.jpg (512x600): (left, top, right, bottom)
_HEAD = (150, 60, 370, 340)


@pytest.mark.parametrize(
    "turn", [Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_270], ids=["90", "-90"]
)
@pytest.mark.parametrize("picture", ["portrait", "bench crop"])
def test_a_photographed_face_turned_a_quarter_in_its_pixels_is_blurred(turn, picture):
    # the default search used to look 25 degrees either way only: turned a quarter (a
    # photograph served on its side, no orientation metadata), the portrait and the bench's crop
    # of it were stored with the face as it was
    if picture == "portrait":
        photo, head = _hopper(), _HEAD
    else:  # bench/faces.py's photographed face (face_render.photo_face), 200 px wide
        photo, k = photo_face(200).convert("RGB"), 200 / 320
        head = tuple(round((v - o) * k) for v, o in zip(_HEAD, (100, 40, 100, 40), strict=True))
    mask = Image.new("L", photo.size, 0)
    mask.paste(255, head)
    turned, head = photo.transpose(turn), mask.transpose(turn).getbbox()  # the head turned too
    buf = io.BytesIO()
    turned.save(buf, format="PNG")
    data = buf.getvalue()
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        red = redact(data, im, "PNG", DET)
    assert red.change == "faces blurred", red.change
    on_head = [
        b
        for b in red.boxes
        if head[0] <= b.x + b.w / 2 <= head[2] and head[1] <= b.y + b.h / 2 <= head[3]
    ]
    assert on_head, (red.boxes, head)
