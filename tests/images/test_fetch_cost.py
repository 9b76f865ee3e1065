"""What the image fetch computes per image, and what it skips: work whose result is known before
it runs is not done, and the outputs stay those of the full computation."""

from __future__ import annotations

import io
import random

import cv2
import pytest
from PIL import Image

from crawlers.images.faces import FaceDetector, face_regions
from sampleweb.images import Scene, random_scene, render_png

from .face_render import drawn_face, face_free_photos, photo_face, scene
from .test_faces import _found


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
    assert len(labelled) == len(images) - results.count([])


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
