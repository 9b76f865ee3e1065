"""Rendered faces with their true boxes, for the face blur's tests and bench/faces.py.

`drawn_face` renders a face from shaded Gaussian blobs (eye sockets, brows, nose, mouth darker
than the cheeks, the sides of the head in shadow): the light-and-dark layout a face detector
looks for, with no photograph behind it. `photo_face` crops the face of the Grace Hopper portrait
that ships in matplotlib's sample data (a real photograph, as a check that the rendered faces are
not the only kind found). `scene` pastes a face, scaled and turned, on a background (flat, a
gradient, noise, or a face-free photograph) and returns the image and the face's box.
"""

from __future__ import annotations

import os
from functools import cache

import numpy as np
from PIL import Image

SKINS = [(224, 180, 150), (198, 140, 105), (150, 100, 70), (95, 62, 45), (236, 200, 175)]


def _blob(x, y, cx, cy, sx, sy):
    return np.exp(-(((x - cx) / sx) ** 2 + ((y - cy) / sy) ** 2) / 2)


def drawn_face(width: int, skin=SKINS[0], seed: int = 0) -> Image.Image:
    """An RGBA face `width` pixels wide (1.3x as tall), transparent outside the head."""
    rng = np.random.default_rng(seed)
    h = int(width * 1.3)
    y, x = np.mgrid[0:h, 0:width] / width
    eye_dx = 0.18 + rng.uniform(-0.02, 0.02)
    inside = ((x - 0.5) / 0.45) ** 2 + ((y - 0.68) / 0.6) ** 2 <= 1
    light = 1 - 0.35 * ((x - 0.5) / 0.45) ** 2
    for ex in (0.5 - eye_dx, 0.5 + eye_dx):
        light -= 0.55 * _blob(x, y, ex, 0.55, 0.085, 0.045)  # eye sockets
        light -= 0.35 * _blob(x, y, ex, 0.47, 0.09, 0.018)  # brows
    light -= 0.15 * _blob(x, y, 0.5, 0.75, 0.05, 0.03)  # nostrils
    light += 0.10 * _blob(x, y, 0.5, 0.62, 0.03, 0.10)  # the bridge of the nose
    light -= 0.45 * _blob(x, y, 0.5, 0.92, 0.12, 0.025)  # mouth
    light = np.clip(light, 0, 1.2)
    hair = inside & (y < 0.40)
    rgba = np.zeros((h, width, 4))
    for c in range(3):
        rgba[..., c] = skin[c] * light
    rgba[hair, :3] = (45, 35, 25)
    rgba[..., 3] = np.where(inside, 255, 0)
    return Image.fromarray(np.clip(rgba, 0, 255).astype(np.uint8), "RGBA")


@cache
def _hopper() -> Image.Image:
    import matplotlib

    path = os.path.join(matplotlib.get_data_path(), "sample_data", "grace_hopper.jpg")
    with Image.open(path) as im:
        return im.convert("RGB")


def photo_face(width: int) -> Image.Image:
    """The Grace Hopper portrait's head and shoulders, `width` pixels wide (RGBA, opaque)."""
    crop = _hopper().crop((100, 40, 420, 420))  # the head, with a margin
    h = round(width * crop.height / crop.width)
    return crop.resize((width, h), Image.Resampling.LANCZOS).convert("RGBA")


def background(kind: str, size: tuple[int, int], seed: int = 0) -> Image.Image:
    """A face-free background: 'flat', 'gradient', 'noise' or 'photo' (scikit-learn's sample
    photographs of a temple and a flower)."""
    rng = np.random.default_rng(seed)
    w, h = size
    if kind == "flat":
        return Image.new("RGB", size, tuple(int(v) for v in rng.integers(40, 220, 3)))
    if kind == "gradient":
        t = np.linspace(0, 1, w)[None, :, None]
        a, b = rng.integers(0, 255, 3), rng.integers(0, 255, 3)
        arr = np.broadcast_to(a * (1 - t) + b * t, (h, w, 3))
        return Image.fromarray(arr.astype(np.uint8))
    if kind == "noise":
        small = rng.integers(0, 255, (max(2, h // 8), max(2, w // 8), 3)).astype(np.uint8)
        return Image.fromarray(small).resize(size, Image.Resampling.BILINEAR)
    if kind == "photo":
        return face_free_photos()[seed % 2].resize(size, Image.Resampling.BILINEAR)
    raise ValueError(f"background kind {kind!r}: flat, gradient, noise or photo")


@cache
def face_free_photos() -> tuple[Image.Image, ...]:
    """scikit-learn's two sample photographs (a temple, a flower): no face in either."""
    from importlib.util import find_spec

    spec = find_spec("sklearn")  # the package's files, without importing it (slow)
    root = os.path.join(spec.submodule_search_locations[0], "datasets", "images")
    out = []
    for name in ("china.jpg", "flower.jpg"):
        with Image.open(os.path.join(root, name)) as im:
            out.append(im.convert("RGB"))
    return tuple(out)


def scene(
    face: Image.Image,
    size: tuple[int, int],
    *,
    angle: float = 0.0,
    at: tuple[float, float] = (0.5, 0.5),
    bg: str = "flat",
    seed: int = 0,
) -> tuple[Image.Image, tuple[int, int, int, int]]:
    """`face` turned by `angle` degrees and pasted with its centre at `at` (shares of the image)
    on a background: (RGB image, the turned face's box (left, top, right, bottom))."""
    img = background(bg, size, seed)
    turned = face.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True)
    left = round(at[0] * size[0] - turned.width / 2)
    top = round(at[1] * size[1] - turned.height / 2)
    img.paste(turned, (left, top), turned)
    x0, y0, x1, y1 = turned.getchannel("A").getbbox()
    return img, (left + x0, top + y0, left + x1, top + y1)
