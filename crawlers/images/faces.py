"""Faces blurred before an image is stored for training: a person's face in a crawled image is not
consent (DataComp blurs every face it finds).

`FaceDetector.detect(image)` finds faces with OpenCV's Haar cascades, which ship inside the
opencv-python-headless wheel (frontal faces, and profiles facing either way); `blur_boxes` hides
each found face under a coarse mosaic smoothed by a strong Gaussian blur, over the box widened by
`pad`; `redact(data, image, fmt)` is what the image fetch stores: the original bytes unchanged
when no face is found (a single-frame image), else the blurred image re-encoded in its own
format, with EXIF (and its thumbnail of the unblurred image) dropped. The caller keeps only the
sha256 of the bytes as fetched.

Detection runs on a grey copy scaled to `detect_side` pixels on its longer side (a small image
enlarged at most `max_upscale` times); a face is found from about `min_face` pixels of that copy. In-plane turns
past the cascades' own tolerance (about 15 degrees) are found by also searching copies turned by
`angles`.
"""

from __future__ import annotations

import io
import math
import threading
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFilter, ImageOps
from pydantic import BaseModel, ConfigDict, Field

CASCADES = {
    "frontal": "haarcascade_frontalface_alt2.xml",
    "profile": "haarcascade_profileface.xml",
}
# How a blurred image is written back, by format (the stored file keeps its format).
_SAVE = {
    "JPEG": {"quality": 92},
    "PNG": {},
    "WEBP": {"quality": 90},
    "GIF": {},
}


class FaceConfig(BaseModel):
    """The face detector and the blur; there is no switch to store faces unblurred."""

    model_config = ConfigDict(extra="forbid")

    detect_side: int = Field(
        480, ge=64, description="longer side of the grey copy searched (smaller: faster)"
    )
    max_upscale: float = Field(
        1.5, ge=1.0, le=4.0, description="a small image is searched enlarged up to this much"
    )
    min_face: int = Field(
        20, ge=12, description="smallest face searched, in pixels of the grey copy"
    )
    min_neighbors: int = Field(
        3, ge=1, description="overlapping detections a face needs (higher: fewer false faces)"
    )
    scale_factor: float = Field(1.15, gt=1.0, le=1.5, description="cascade pyramid step")
    profile: bool = Field(False, description="also search for faces in profile (both ways)")
    angles: list[float] = Field(
        default_factory=lambda: [-15.0, 15.0, -30.0, 30.0],
        description="extra in-plane turns searched, in degrees (0 is always searched)",
    )
    pad: float = Field(0.25, ge=0, le=1, description="box widened by this share on every side")
    blocks: int = Field(6, ge=2, le=32, description="mosaic cells across a blurred face")


@dataclass(frozen=True)
class Box:
    """A face's box in the stored image's pixels."""

    x: int
    y: int
    w: int
    h: int

    def as_dict(self) -> dict:
        return {"x": self.x, "y": self.y, "w": self.w, "h": self.h}


@dataclass
class Redacted:
    """What is stored for one image: bytes, its size, and the faces blurred in it."""

    data: bytes
    width: int
    height: int
    boxes: list[Box]

    @property
    def face_count(self) -> int:
        return len(self.boxes)


_CV2_LOCK = threading.Lock()


def _cv2():
    """OpenCV, loaded once under a lock. Its loader is not thread-safe: a thread importing cv2
    while another is still loading it gets a module without `cv2.data` (AttributeError), which
    is what the demo's image fetch hit with four pool threads."""
    with _CV2_LOCK:
        import cv2
        import cv2.data  # noqa: F401  (the cascades' directory)
    return cv2


class FaceDetector:
    """Haar-cascade face detection; one set of classifiers per thread (they are not
    thread-safe)."""

    def __init__(self, cfg: FaceConfig | None = None) -> None:
        self.cfg = cfg or FaceConfig()
        self._local = threading.local()
        _cv2()  # loaded here, in the constructing thread, before any worker thread searches

    def _cascades(self):
        got = getattr(self._local, "cascades", None)
        if got is None:
            cv2 = _cv2()
            names = ["frontal"] + (["profile"] if self.cfg.profile else [])
            got = {}
            for name in names:
                path = cv2.data.haarcascades + CASCADES[name]
                c = cv2.CascadeClassifier(path)
                if c.empty():
                    raise RuntimeError(
                        f"{path}: OpenCV could not load the face cascade; install "
                        "opencv-python-headless 4.x (`make bootstrap`), whose wheel ships it"
                    )
                got[name] = c
            self._local.cascades = got
        return got

    def _search(
        self, grey: np.ndarray, upright: bool = True
    ) -> list[tuple[float, float, float, float]]:
        cfg, found = self.cfg, []
        size = (cfg.min_face, cfg.min_face)
        for name, c in self._cascades().items():
            if name == "profile" and not upright:
                continue  # turned copies are searched for frontal faces only
            flips = (False, True) if name == "profile" else (False,)
            for flip in flips:
                g = grey[:, ::-1].copy() if flip else grey
                for x, y, w, h in c.detectMultiScale(
                    g, scaleFactor=cfg.scale_factor, minNeighbors=cfg.min_neighbors, minSize=size
                ):
                    x = g.shape[1] - x - w if flip else x
                    found.append((float(x), float(y), float(w), float(h)))
        return found

    def detect(self, image: Image.Image) -> list[Box]:
        """Faces in `image` (boxes in its pixels, widened by nothing), largest first."""
        w, h = image.size
        scale = min(self.cfg.max_upscale, self.cfg.detect_side / max(w, h))
        grey = image.convert("L")
        if scale != 1.0:
            how = Image.Resampling.BOX if scale < 1 else Image.Resampling.BILINEAR
            grey = grey.resize((max(1, round(w * scale)), max(1, round(h * scale))), how)
        g = np.asarray(grey)
        boxes = self._search(g)
        for angle in self.cfg.angles:
            if angle % 360:
                boxes += _turned_search(self, g, angle)
        merged = _merge(boxes)
        out = []
        for x, y, bw, bh in merged:
            x0, y0 = max(0, math.floor(x / scale)), max(0, math.floor(y / scale))
            x1, y1 = min(w, math.ceil((x + bw) / scale)), min(h, math.ceil((y + bh) / scale))
            if x1 > x0 and y1 > y0:
                out.append(Box(x0, y0, x1 - x0, y1 - y0))
        return sorted(out, key=lambda b: -b.w * b.h)


def _turned_search(det: FaceDetector, g: np.ndarray, angle: float):
    """Search a copy of `g` turned by `angle` degrees; boxes mapped back to `g` (the upright box
    around the turned one)."""
    cv2 = _cv2()

    h, w = g.shape
    centre = (w / 2, h / 2)
    m = cv2.getRotationMatrix2D(centre, angle, 1.0)
    cos, sin = abs(m[0, 0]), abs(m[0, 1])
    nw, nh = int(h * sin + w * cos + 0.5), int(h * cos + w * sin + 0.5)
    m[0, 2] += nw / 2 - centre[0]
    m[1, 2] += nh / 2 - centre[1]
    turned = cv2.warpAffine(g, m, (nw, nh), flags=cv2.INTER_LINEAR, borderValue=128)
    back = cv2.invertAffineTransform(m)
    out = []
    for x, y, bw, bh in det._search(turned, upright=False):
        corners = np.array([[x, y, 1], [x + bw, y, 1], [x, y + bh, 1], [x + bw, y + bh, 1]])
        pts = corners @ back.T
        x0, y0 = pts.min(axis=0)
        x1, y1 = pts.max(axis=0)
        out.append((x0, y0, x1 - x0, y1 - y0))
    return out


def _overlap(a, b) -> float:
    """Intersection over the smaller box."""
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    return ix * iy / max(1e-9, min(a[2] * a[3], b[2] * b[3]))


def _merge(boxes: list) -> list:
    """One box per face: boxes overlapping by half of the smaller one become their union."""
    boxes = sorted(boxes, key=lambda b: -b[2] * b[3])
    merged: list = []
    for b in boxes:
        for i, m in enumerate(merged):
            if _overlap(b, m) >= 0.5:
                x0, y0 = min(b[0], m[0]), min(b[1], m[1])
                x1, y1 = max(b[0] + b[2], m[0] + m[2]), max(b[1] + b[3], m[1] + m[3])
                merged[i] = (x0, y0, x1 - x0, y1 - y0)
                break
        else:
            merged.append(b)
    return merged


def padded(box: Box, size: tuple[int, int], pad: float) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of `box` widened by `pad` of its size on every side, clipped."""
    dx, dy = round(box.w * pad), round(box.h * pad)
    return (
        max(0, box.x - dx),
        max(0, box.y - dy),
        min(size[0], box.x + box.w + dx),
        min(size[1], box.y + box.h + dy),
    )


def blur_boxes(image: Image.Image, boxes: list[Box], cfg: FaceConfig | None = None) -> Image.Image:
    """A copy of `image` with each box (widened by `cfg.pad`) under a mosaic of `cfg.blocks`
    cells across, smoothed by a Gaussian blur of a sixth of the box: nothing of the face's
    features is left."""
    cfg = cfg or FaceConfig()
    out = image.copy()
    for box in boxes:
        left, top, right, bottom = padded(box, out.size, cfg.pad)
        w, h = right - left, bottom - top
        if w < 1 or h < 1:
            continue
        region = out.crop((left, top, right, bottom))
        cell = max(1, max(w, h) // cfg.blocks)
        cells = (max(1, w // cell), max(1, h // cell))
        region = region.resize(cells, Image.Resampling.BOX).resize(
            (w, h), Image.Resampling.BILINEAR
        )
        region = region.filter(ImageFilter.GaussianBlur(max(w, h) / 6))
        out.paste(region, (left, top))
    return out


def _workable(image: Image.Image) -> Image.Image:
    """The image in a mode the blur handles (L, LA, RGB, RGBA)."""
    if image.mode in ("L", "LA", "RGB", "RGBA"):
        return image
    alpha = image.mode in ("PA", "RGBa", "La") or "transparency" in image.info
    return image.convert("RGBA" if alpha else "RGB")


def _encode(image: Image.Image, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "JPEG" and image.mode not in ("L", "RGB"):
        image = image.convert("RGB")
    image.save(buf, format=fmt, **_SAVE.get(fmt, {}))
    return buf.getvalue()


def redact(
    data: bytes,
    image: Image.Image,
    fmt: str,
    detector: FaceDetector,
    *,
    frames: int = 1,
) -> Redacted:
    """What to store for a decoded image (`image`: its first frame, `data`: the bytes as
    fetched, `frames`: its frame count): the bytes themselves when no face is found in a
    single-frame image; otherwise the image (faces blurred; the first frame only, the one that
    was checked; turned upright by its EXIF orientation) re-encoded as `fmt` without EXIF."""
    upright = ImageOps.exif_transpose(image)
    boxes = detector.detect(upright)
    if not boxes and frames <= 1:
        return Redacted(data, image.width, image.height, [])
    blurred = blur_boxes(_workable(upright), boxes, detector.cfg)
    return Redacted(_encode(blurred, fmt), blurred.width, blurred.height, boxes)
