"""Rendered faces with their true boxes, for the face blur's tests and bench/faces.py.

`drawn_face` renders a face from shaded Gaussian blobs (eye sockets, brows, nose, mouth darker
than the cheeks, the sides of the head in shadow): the light-and-dark layout a face detector
looks for, with no photograph behind it. `photo_face` crops the face of the Grace Hopper portrait
that ships in matplotlib's sample data (a real photograph, as a check that the rendered faces are
not the only kind found). `cartoon_face` draws flat-coloured faces another way (ImageDraw) and
`toned_photo_face` recolours the photograph to a skin tone: the skin-tone probe's faces
(bench/faces.py --tones). `scene` pastes a face, scaled and turned, on a background (flat, a
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


# Skin tones from light to dark (the Fitzpatrick range as flat colours) for the skin-tone probe.
TONES = [
    (255, 219, 172),
    (241, 194, 125),
    (224, 172, 105),
    (198, 134, 66),
    (141, 85, 36),
    (92, 56, 32),
]


def cartoon_face(width: int, skin=TONES[0], seed: int = 0) -> Image.Image:
    """A face drawn another way, as a test writer with PIL's ImageDraw would: flat colours, an
    outline, ears, white eyes with iris and pupil, brows, a nose stroke, a mouth arc and a cap of
    hair (dark on dark skin), drawn at 4x and reduced (RGBA, transparent outside the head)."""
    from PIL import ImageDraw

    s, h = 4, round(width * 1.35)
    W, H = width * s, h * s
    img = Image.new("RGBA", (W, H), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    line = tuple(int(c * 0.6) for c in skin)
    # dark hair and brows on dark skin, as people have; brown or black on light skin
    hairs = (
        [(20, 15, 10), (35, 25, 20), (10, 10, 10)]
        if sum(skin) < 400
        else [(30, 20, 10), (90, 60, 30)]
    )
    hair = hairs[seed % len(hairs)]
    d.ellipse([0, H * 0.38, W * 0.14, H * 0.6], fill=skin, outline=line, width=2 * s)
    d.ellipse([W * 0.86, H * 0.38, W, H * 0.6], fill=skin, outline=line, width=2 * s)
    d.ellipse([W * 0.08, H * 0.08, W * 0.92, H * 0.98], fill=skin, outline=line, width=2 * s)
    d.chord([W * 0.06, H * 0.02, W * 0.94, H * 0.62], 180, 360, fill=hair)
    iris = [(60, 40, 20), (40, 90, 160), (50, 120, 60)][seed % 3]
    for ex in (0.33, 0.67):
        cx, cy, rx, ry = W * ex, H * 0.5, W * 0.09, H * 0.04
        d.ellipse(
            [cx - rx, cy - ry, cx + rx, cy + ry],
            fill=(250, 250, 250),
            outline=(40, 40, 40),
            width=s,
        )
        d.ellipse([cx - W * 0.04, cy - W * 0.04, cx + W * 0.04, cy + W * 0.04], fill=iris)
        d.ellipse([cx - W * 0.018, cy - W * 0.018, cx + W * 0.018, cy + W * 0.018], fill=(0, 0, 0))
        d.line(
            [cx - rx, cy - H * 0.07, cx + rx, cy - H * 0.075],
            fill=hair,
            width=int(s * max(2, width / 40)),
        )
    d.line(
        [W * 0.5, H * 0.54, W * 0.46, H * 0.66, W * 0.52, H * 0.67],
        fill=line,
        width=int(s * max(1.5, width / 60)),
    )
    d.arc(
        [W * 0.36, H * 0.66, W * 0.64, H * 0.82],
        20,
        160,
        fill=(150, 40, 40),
        width=int(s * max(2, width / 35)),
    )
    return img.resize((width, h), Image.Resampling.LANCZOS)


def toned_photo_face(width: int, skin=TONES[0]) -> Image.Image:
    """The photographed face (`photo_face`) with its colours scaled so its median skin takes the
    tone `skin`: a darker or lighter face with a photograph's shading."""
    face = np.asarray(photo_face(width)).astype(float)
    h, w = face.shape[:2]
    middle = face[h // 4 : h // 2, w // 3 : 2 * w // 3, :3].reshape(-1, 3)
    face[..., :3] *= np.asarray(skin, dtype=float) / np.maximum(np.median(middle, axis=0), 1)
    return Image.fromarray(np.clip(face, 0, 255).astype(np.uint8), "RGBA")


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


# Background colours of generated text: white, pale tints (parchment, lavender, mint) and skin
# tones (a page printed on a skin-toned or beige ground is searched for faces like skin).
_PAPERS = [(255, 255, 255), (245, 235, 215), (225, 215, 235), (220, 240, 225), (255, 225, 215)]


def face_free_graphics(n: int, seed: int = 0) -> list[tuple[str, Image.Image]]:
    """`n` face-free graphics as (kind, RGB image), kinds in turn: 'chart' (matplotlib: a line,
    bars in skin tones, a pie, a scatter, a heatmap in a skin-like colour map), 'text' (lines of
    text, 14-40 px, dark ink on white, pale tints and skin tones) and 'shapes' (flat discs and
    squares, some skin-toned, some with dark dots inside): what a crawl's text-rich and chart
    images look like to the face search, which should change none of them."""
    import io
    import random

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import ImageDraw, ImageFont

    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    out: list[tuple[str, Image.Image]] = []
    for i in range(n):
        kind = ("chart", "text", "shapes")[i % 3]
        if kind == "chart":
            fig, ax = plt.subplots(figsize=(rng.uniform(4, 8), rng.uniform(3, 6)), dpi=80)
            style, x = (i // 3) % 5, np.arange(20)
            if style == 0:
                ax.plot(x, nrng.normal(size=20).cumsum())
            elif style == 1:
                ax.bar(
                    x[:8], nrng.uniform(1, 10, 8), color=tuple(v / 255 for v in SKINS[(i // 3) % 4])
                )
            elif style == 2:
                ax.pie(nrng.uniform(1, 5, 5), labels=list("ABCDE"))
            elif style == 3:
                ax.scatter(nrng.normal(size=200), nrng.normal(size=200), c=nrng.uniform(size=200))
            else:
                cmap = ("viridis", "copper", "pink", "bone")[(i // 15) % 4]
                ax.imshow(nrng.normal(size=(30, 30)), cmap=cmap)
            ax.set_title(f"Figure {i}")
            buf = io.BytesIO()
            fig.savefig(buf, format="png")
            plt.close(fig)
            with Image.open(buf) as im:
                img = im.convert("RGB")
        elif kind == "text":
            w, h = rng.randint(300, 900), rng.randint(200, 600)
            img = Image.new("RGB", (w, h), _PAPERS[(i // 3) % len(_PAPERS)])
            draw = ImageDraw.Draw(img)
            font = ImageFont.load_default(size=rng.randint(14, 40))
            ink = (rng.randint(0, 80),) * 3
            words = rng.choice(["The quick brown fox 0123 ", "Invoice No. 4471, total due "])
            for y in range(10, h - 20, 40):
                draw.text((10, y), words * 3, fill=ink, font=font)
        else:
            w, h = rng.randint(300, 700), rng.randint(300, 700)
            img = Image.new("RGB", (w, h), tuple(rng.randint(0, 255) for _ in range(3)))
            draw = ImageDraw.Draw(img)
            for _ in range(rng.randint(3, 12)):
                x, y, r = rng.randint(0, w), rng.randint(0, h), rng.randint(10, 120)
                fill = rng.choice([*SKINS, tuple(rng.randint(0, 255) for _ in range(3))])
                shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
                shape((x - r, y - r, x + r, y + r), fill=fill)
                for _ in range(rng.randint(1, 6)) if rng.random() < 0.3 else ():
                    dx, dy = rng.randint(-r // 2, r // 2), rng.randint(-r // 2, r // 2)
                    draw.ellipse((x + dx - 3, y + dy - 3, x + dx + 3, y + dy + 3), fill=(0, 0, 0))
        out.append((kind, img))
    return out
