"""Faces blurred before an image is stored for training: a person's face in a crawled image is not
consent (DataComp blurs every face it finds).

`FaceDetector.detect(image)` finds faces with MTCNN (crawlers/images/mtcnn.py: the trained
P-, R- and O-Nets whose weights ship in the `mtcnn` wheel, run in torch), or with OpenCV's Haar
cascades, which ship inside the opencv-python-headless wheel (frontal faces, and profiles facing
either way), when `FaceConfig.detector="haar"`; `blur_boxes` hides each found face under a
coarse mosaic smoothed by a strong Gaussian blur, over the box widened by `pad`;
`redact(data, image, fmt)` is what the image fetch stores: the original bytes unchanged when no
face is found in a single-frame image without orientation metadata whose bytes are just the
image; the bytes stripped of the rest (EXIF and its thumbnail, bytes after its end, chunks outside
`decode.strip_extras`' safe set) when they carry more; else the image (faces blurred, turned
upright by its orientation, its first frame) re-encoded in its own format without metadata
(EXIF, and its thumbnail of the unblurred image, dropped). The caller keeps only the sha256 of
the bytes as fetched. The search looks at each of `search_views`: a 16-bit grey image scaled to
8 bits, an image with transparency composited onto white (as readers of pairs see it) and its
colour with the alpha ignored.

Detection runs on a copy (RGB for MTCNN, grey for the cascades) scaled to `detect_side` pixels
on its longer side (a small image enlarged at most `max_upscale` times); a face is found from
about `min_face` pixels of that copy. In-plane turns past the detector's own tolerance (about 15
degrees for the cascades; MTCNN finds real faces turned by 45 but drawn ones less far) are found
by also searching copies turned by `angles`; by default MTCNN's also on their side and upside
down (a photograph served turned, a person lying down), those from `side_min_face` smallest
faces up. MTCNN's boxes need its five landmarks where a face has them (`mtcnn._face_like`).
Only regions that could hold a face are searched (`face_regions`): a colour map of the image at
320 pixels finds skin-toned and grey regions that fill much of their box and have detail
inside, some of it shading within one colour; flat shapes, outlines, backgrounds and a JPEG's
colour edges are not searched, and an image whose regions cover half of it is searched whole.
A photograph toned in one colour (cyanotype, night-vision green, a duotone, black and white
under a colour cast) is grey measured against its own tone (`_toned`): its faces are neither
skin-toned nor grey, and were stored unblurred.
"""

from __future__ import annotations

import io
import logging
import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import numpy as np
from PIL import ExifTags, Image, ImageFilter
from pydantic import BaseModel, ConfigDict, Field, model_validator

from common.pairs import eight_bit, has_alpha
from crawlers.images.decode import holds_image, strip_extras

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
    "AVIF": {"quality": 90},
}


class FaceConfig(BaseModel):
    """The face detector and the blur; there is no switch to store faces unblurred."""

    model_config = ConfigDict(extra="forbid")

    detector: Literal["mtcnn", "haar"] = Field(
        "mtcnn",
        description="mtcnn: the MTCNN networks whose weights the mtcnn wheel ships, run in torch "
        "(crawlers/images/mtcnn.py); haar: OpenCV's Haar cascades (opencv-python-headless). On "
        "bench/faces.py's full grid MTCNN finds more faces (0.946 against 0.858), fewer false "
        "ones (1 against 7), on dlib's PASCAL VOC photographs 42 of 43 against 39, at "
        "0.25-0.32x the cascades' CPU with turns -25 25 (its default's copies on their side "
        "and upside down cost about 1.4x that)",
    )
    mtcnn_thresholds: tuple[float, float, float] = Field(
        (0.5, 0.6, 0.8),
        description="mtcnn: the P-Net, R-Net and O-Net scores a face needs (lower: more faces "
        "found, more false faces; the mtcnn package's own are 0.6, 0.7, 0.8); O-Net's boxes also "
        "need its landmarks where a face has them, unless it scores them 0.95 or more "
        "(crawlers/images/mtcnn.py). Of Pillow's 287 face-free test images (bench/faces.py "
        "--real-free) the default blurs 2, three puppies' faces and a daisy (7 before the "
        "landmarks were checked, 14 boxes: heather, snow and rock, flowers); of dlib's 7 "
        "face-free photographs 2, a dog and a giraffe (3, 5 boxes). O-Net 0.9 loses drawn faces: "
        "recall 0.889 for 0.944",
    )
    detect_side: int = Field(
        480, ge=64, description="longer side of the copy searched (smaller: faster)"
    )
    large_face: int = Field(
        64,
        ge=12,
        description="in a large image, the smallest face searched, in the image's own pixels: "
        "where detect_side would make it smaller than min_face (images over detect_side x "
        "large_face / min_face, 1536 px), the copy searched is larger, up to max_detect_side. "
        "bench/faces.py --quick --large (faces 40-160 px in 2400 and 4000 px images): found "
        "0.438 at detect_side alone (64 px faces 0.33 and 0, 96 px in 4000 px 0.17), 0.792 "
        "with 64 (every face of 64 px or more), 0.604 with 96; CPU per large image 82, 299 and "
        "147 ms; on 12 face-free photographs enlarged to 3600 px, false faces 7, 17 and 8",
    )
    max_detect_side: int = Field(
        1280, ge=64, description="longest side of the copy searched in a large image"
    )
    max_upscale: float = Field(
        1.5, ge=1.0, le=4.0, description="a small image is searched enlarged up to this much"
    )
    min_face: int = Field(
        20, ge=12, description="smallest face searched, in pixels of the searched copy"
    )
    min_neighbors: int = Field(
        3, ge=1, description="haar: overlapping detections a face needs (higher: fewer false faces)"
    )
    scale_factor: float = Field(1.15, gt=1.0, le=1.5, description="haar: cascade pyramid step")
    profile: bool = Field(False, description="haar: also search for faces in profile (both ways)")
    angles: list[float] = Field(
        default_factory=lambda: list(DEFAULT_ANGLES["mtcnn"]),
        description="extra in-plane turns searched, in degrees (0 is always searched); not given: "
        "the detector's own, mtcnn -25 25 90 -90 180 (it finds real faces well past 25 degrees "
        "on its own; its upright proposals are refined turned by each turn up to 45 degrees, and "
        "a turned copy is searched for faces from turned_min_face smallest faces up, or "
        "side_min_face on its side or upside down), haar -15 15 -30 30 (the cascades tolerate "
        "about 15). On bench/faces.py --quick --sideways (faces turned 60-180 degrees either "
        "way) mtcnn -25 25 finds 0.42 of them (90 degrees 0.34, 180 0.44), the default 0.79 "
        "(90 0.97, 180 0.75; the former default, before O-Net's landmarks were checked, 0.54, "
        "90 0.50, 180 0.50) at about "
        "1.4x the CPU of each image searched (bench/faces.py's face-free images 16.6 -> 23.4 "
        "ms, dlib's group photographs 106 -> 152, 2400-4000 px photographs 209 -> 250), the same "
        "false faces on Pillow's face-free photographs and 100 generated graphics; "
        "-25 25 90 -90 (not upside down) 1.3x, 150 and 180 degrees 0.38 and 0.44",
    )
    turned_min_face: float = Field(
        1.5,
        ge=1.0,
        le=4.0,
        description="mtcnn: a turned copy is searched for faces from this many min_face up (its "
        "pyramid, most of the turned search's cost, starts this much smaller); smaller turned "
        "faces are found by refining the upright search's proposals turned. On bench/faces.py, "
        "1.5 against 1: recall 0.946 against 0.950, small faces in large images 0.906 against "
        "0.911, false faces 1 against 4, 75 against 91 ms of CPU an image with a face",
    )
    side_min_face: float = Field(
        2.0,
        ge=1.0,
        le=8.0,
        description="mtcnn: a copy turned more than 45 degrees from upright (90, -90, 180: a face "
        "on its side or upside down) is searched for faces from this many min_face up, and the "
        "upright search's proposals are not refined at that turn (P-Net hardly proposes a face "
        "on its side; refining every proposal again cost a quarter more CPU on dlib's group "
        "photographs). A face on its side is found from about 40 px of the searched copy up "
        "(a twelfth of its side). bench/faces.py --sideways (faces turned 60-180 degrees either "
        "way): 0.80 found with 2, 0.79 with 1.5, 0.73 with 3 (turned 90: 0.96, 0.94, 0.88), at "
        "62, 70 and 54 ms of CPU an image",
    )
    face_regions: bool = Field(
        True,
        description="search only around regions that could hold a face (skin-toned or grey, "
        "grey measured against the tone of a photograph toned in one colour, filling their box, "
        "with detail inside); off: every image is searched whole, in colour",
    )
    text_veto: bool = Field(
        True,
        description="a found box that is a page's text is not blurred: when at least "
        "text_ground of the box is one flat level, Tesseract (crawlers/images/ocr.py) reads the "
        "lines across it, and words on two lines or more (confidence 0.5, two letters or "
        "digits) covering text_cover of it, with at most a tenth of it neither words nor the "
        "page's ground, make it text (see not_text). MTCNN takes glyphs on tinted pages for "
        "faces: on bench/faces.py --graphics 300, 21 of 100 pages changed without it, 2 with "
        "it, at the same recall on every face of the grid, the tones and dlib's photographs. "
        "Without Tesseract every box is blurred (logged once)",
    )
    text_ground: float = Field(
        0.6,
        ge=0.3,
        le=1.0,
        description="text_veto: share of the box within 12 grey levels of its commonest one "
        "before it is read (a page's ground; photographed faces stay under 0.42 on "
        "bench/faces.py's grid, so they are never read)",
    )
    text_cover: float = Field(
        0.2, ge=0.05, le=1.0, description="text_veto: share of the box under confident words"
    )
    pad: float = Field(0.25, ge=0, le=1, description="box widened by this share on every side")
    blocks: int = Field(6, ge=2, le=32, description="mosaic cells across a blurred face")

    def search_side(self, width: int, height: int) -> int:
        """The longer side of the copy of a `width` x `height` image that is searched (before
        max_upscale enlarges a small image)."""
        side = math.ceil(max(width, height) * self.min_face / self.large_face)
        return max(self.detect_side, min(side, self.max_detect_side))

    @model_validator(mode="after")
    def _detector_angles(self) -> FaceConfig:
        if "angles" not in self.model_fields_set:
            self.angles = list(DEFAULT_ANGLES[self.detector])
        bad = [a for a in self.angles if not math.isfinite(a)]
        if bad:
            raise ValueError(f"angles: {bad[0]} is not a turn; give finite degrees, e.g. 90")
        return self


# The turned copies searched when `FaceConfig.angles` is not given, by detector.
DEFAULT_ANGLES = {"mtcnn": (-25.0, 25.0, 90.0, -90.0, 180.0), "haar": (-15.0, 15.0, -30.0, 30.0)}


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
    # why `data` is not the bytes as fetched (None: it is): 'faces blurred', 'turned upright
    # (orientation 6)', 'first frame of 3', 'stripped (EXIF thumbnail, 20078 bytes after EOI)',
    # 're-encoded without (EXIF)', comma-joined
    change: str | None = None
    # whether `data` decodes to the pixels of the decode searched (as fetched, or stripped
    # losslessly); False for a re-encode
    same_pixels: bool = True

    @property
    def face_count(self) -> int:
        return len(self.boxes)


_CV2_LOCK = threading.Lock()


_CV2_READY = False


def _cv2():
    """OpenCV, loaded once under a lock. Its loader is not thread-safe: a thread importing cv2
    while another is still loading it gets a module without `cv2.data` (AttributeError), which
    is what the demo's image fetch hit with four pool threads.

    OpenCV's own thread pool is turned off (one thread a call): detection runs in its callers'
    threads (the image fetch's pool keeps every core busy), and splitting each cascade search
    over OpenCV's threads on top only adds CPU: on the 133 of bench/images.py's 2,000 scenes
    that are searched, 24.4 ms of CPU a searched image with OpenCV's default (2 threads here)
    against 17.9 with one (wall 13.0 against 17.9 ms when nothing else runs)."""
    global _CV2_READY
    with _CV2_LOCK:
        import cv2
        import cv2.data  # noqa: F401  (the cascades' directory)

        if not _CV2_READY:
            cv2.setNumThreads(1)
            _CV2_READY = True
    return cv2


class FaceDetector:
    """Haar-cascade face detection; one set of classifiers per thread (they are not
    thread-safe)."""

    def __init__(self, cfg: FaceConfig | None = None) -> None:
        self.cfg = cfg or FaceConfig()
        self._local = threading.local()
        self._mtcnns: dict = {}  # smallest face -> Mtcnn (read only once built)
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

    def _mtcnn(self, turn: float = 0.0):
        """The MTCNN searching the upright copy (turn 0) or a copy turned by `turn` degrees,
        from its smallest face up (see FaceConfig.turned_min_face, side_min_face)."""
        if not turn:
            share = 1.0
        elif _sideways(turn):
            share = self.cfg.side_min_face
        else:
            share = self.cfg.turned_min_face
        smallest = round(self.cfg.min_face * share)
        got = self._mtcnns.get(smallest)
        if got is None:
            from crawlers.images.mtcnn import Mtcnn

            got = self._mtcnns.setdefault(smallest, Mtcnn(smallest, self.cfg.mtcnn_thresholds))
        return got

    def _search(
        self, grey: np.ndarray, turn: float = 0.0
    ) -> list[tuple[float, float, float, float]]:
        """Faces in `grey` (an RGB array for the mtcnn detector), the upright copy or one turned
        by `turn` degrees, as (x, y, w, h)."""
        cfg, found = self.cfg, []
        if cfg.detector == "mtcnn":
            # Upright: P-Net's proposals also refined turned by each angle up to 45 degrees
            # (Mtcnn.detect); a turned copy (_turned_search) is searched for faces from
            # cfg.turned_min_face smallest faces up (cfg.side_min_face on its side), the turned
            # faces P-Net does not propose upright.
            angles = () if turn else tuple(a for a in cfg.angles if not _sideways(a))
            # MTCNN's box is the inner face (brows to chin); widened about its centre to the
            # face box the cascades give (forehead to chin), which the blur then pads.
            for x1, y1, x2, y2, _score in self._mtcnn(turn).detect(grey, angles):
                w, h = (x2 - x1) * _MTCNN_WIDEN, (y2 - y1) * _MTCNN_WIDEN
                cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
                found.append((float(cx - w / 2), float(cy - h / 2), float(w), float(h)))
            return found
        size = (cfg.min_face, cfg.min_face)
        for name, c in self._cascades().items():
            if name == "profile" and turn:
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

    def _search_copy(self, g: np.ndarray, regions: list | None) -> list:
        """Faces in the searched copy `g` (in its pixels, as (x, y, w, h)), in each of `regions`
        (None: all of it), upright and turned by each of cfg.angles."""
        upright, turned = [], []
        for x0, y0, x1, y1 in regions or [(0, 0, g.shape[1], g.shape[0])]:
            part = np.ascontiguousarray(g[y0:y1, x0:x1])
            upright += [(x + x0, y + y0, bw, bh) for x, y, bw, bh in self._search(part)]
            for angle in self.cfg.angles:
                if angle % 360:
                    found = _turned_search(self, part, angle)
                    turned += [(x + x0, y + y0, bw, bh) for x, y, bw, bh in found]
        if self.cfg.detector == "mtcnn":
            # A face MTCNN finds upright keeps its upright box (regressed by O-Net to the face).
            # The turned copies find most upright faces too (it tolerates some turn), and give
            # the upright box around the turned one, wider still once joined: on dlib's PASCAL
            # VOC group photographs the joined boxes were ~1.7x as wide, blurring beside the
            # face and recording a box that misses it (5 of 43 faces matched; 42 now). Only
            # what no upright box holds half of is a turned face.
            merged = _merge(upright)
            merged += [t for t in _merge(turned) if all(_overlap(t, m) < 0.5 for m in merged)]
            return merged
        # The cascades' upright window on a face turned ~15 degrees is often a part of it:
        # joined with the turned copies' box it holds the face (bench/faces.py's grid: 0.858 of
        # the faces joined, 0.779 keeping the upright box; dlib's photographs 39 and 40 of 43).
        return _merge(upright + turned)

    def detect(self, image: Image.Image, size: tuple[int, int] | None = None) -> list[Box]:
        """Faces in `image` (boxes in its pixels, widened by nothing), largest first: in each of
        its `search_views` (a 16-bit grey image scaled to 8 bits; an image with transparency on
        white, and its colour with the alpha ignored).

        `size`: the image's full size when `image` is a reduced decode of it (a JPEG draft);
        the boxes are then in the full image's pixels."""
        views = search_views(image)
        found = self._detect(views[0], size)
        for view in views[1:]:
            more = self._detect(view, size)
            found += [b for b in more if all(_overlap(_xywh(b), _xywh(f)) < 0.5 for f in found)]
        return sorted(found, key=lambda b: -b.w * b.h)

    def _detect(self, image: Image.Image, size: tuple[int, int] | None = None) -> list[Box]:
        """Faces in one view (an RGB or L image, or any mode Pillow converts to them)."""
        w, h = size or image.size
        side = self.cfg.search_side(w, h)
        scale = min(self.cfg.max_upscale, side / max(w, h))
        target = (max(1, round(w * scale)), max(1, round(h * scale)))
        regions, toned = None, False
        if self.cfg.face_regions:
            # the map drawn at the searched copy's resolution (a large image's copy is larger)
            map_side = max(_MAP_SIDE, round(max(target) * _MAP_SHARE))
            regions, toned = _face_map(
                image, (target[1], target[0]), self.cfg.min_face, map_side=map_side
            )
            if regions == []:
                return []  # nothing that could be a face: no grey copy, no search
        mode = "RGB" if self.cfg.detector == "mtcnn" else "L"
        copies = [image.convert(mode)]
        if toned and mode == "RGB":
            # A toned photograph's colour is its tone, no skin's: MTCNN also searches its luma,
            # as a black-and-white photograph's (in night-vision green it missed Grace Hopper's
            # face, or boxed half of it, that it finds in the grey copy).
            copies.append(image.convert("L").convert("RGB"))
        merged: list = []
        for grey in copies:
            if grey.size != target:
                how = Image.Resampling.BOX if target[0] < grey.width else Image.Resampling.BILINEAR
                grey = grey.resize(target, how)
            merged = _add_boxes(merged, self._search_copy(np.asarray(grey), regions))
        out = []
        for x, y, bw, bh in merged:
            x0, y0 = max(0, math.floor(x / scale)), max(0, math.floor(y / scale))
            x1, y1 = min(w, math.ceil((x + bw) / scale)), min(h, math.ceil((y + bh) / scale))
            if x1 > x0 and y1 > y0:
                out.append(Box(x0, y0, x1 - x0, y1 - y0))
        if out and self.cfg.text_veto:
            out = not_text(image, out, (w, h), self.cfg)
        return sorted(out, key=lambda b: -b.w * b.h)


_log = logging.getLogger(__name__)
_OCR_LOCK = threading.Lock()
_OCR: list = []  # [engine or None], made on first use
_GROUND_BAND = 12  # grey levels either side of a box's commonest one that are its ground
# Share of a text box that may be neither under a word nor the page's ground (glyphs cut at the
# box's edge, a word Tesseract did not read): at most 0.084 on the text pages' false faces of
# bench/faces.py --graphics, where a face fills a third or more of its box.
_STRAY = 0.1
_WORD_CONF = 0.5  # a word's Tesseract confidence for it to count as text over a face box


def _ocr_engine():
    """The one Tesseract engine the text veto reads with (thread-safe), or None without
    Tesseract (then every box is blurred, and that is logged once)."""
    with _OCR_LOCK:
        if not _OCR:
            from crawlers.images.ocr import OcrEngine, OcrUnavailable

            try:
                _OCR.append(OcrEngine())
            except OcrUnavailable as exc:
                _log.warning("face blur: no text veto, every face box is blurred: %s", exc)
                _OCR.append(None)
        return _OCR[0]


def _ground(grey: np.ndarray) -> tuple[int, float]:
    """(the commonest grey level, the share of pixels within _GROUND_BAND of it)."""
    level = int(np.bincount(grey.ravel(), minlength=256).argmax())
    near = (grey >= level - _GROUND_BAND) & (grey <= level + _GROUND_BAND)
    return level, float(near.mean())


def not_text(
    image: Image.Image, boxes: list[Box], size: tuple[int, int], cfg: FaceConfig
) -> list[Box]:
    """`boxes` (in the pixels of `size`, the full image's; `image` may be a reduced decode of
    it) less those that are a page's text. A box is read only when cfg.text_ground of it is
    within _GROUND_BAND grey levels of one level (photographed faces never are); Tesseract
    reads the lines across it (two box widths either side, half a box height above and below,
    so that its words are whole), and the box is text when confident words on two lines or
    more cover cfg.text_cover of it and at most _STRAY of it is neither under a word nor the
    page's ground (the commonest colour of those lines, each channel within _GROUND_BAND). A
    face under a caption is kept: a caption is one line, and a face under words is a third or
    more of its box that is neither."""
    kx, ky = image.width / size[0], image.height / size[1]
    grey, rgb = image.convert("L"), None
    keep = []
    for box in boxes:
        x0, y0 = math.floor(box.x * kx), math.floor(box.y * ky)
        x1 = min(image.width, max(x0 + 1, math.ceil((box.x + box.w) * kx)))
        y1 = min(image.height, max(y0 + 1, math.ceil((box.y + box.h) * ky)))
        _level, share = _ground(np.asarray(grey.crop((x0, y0, x1, y1))))
        engine = _ocr_engine() if share >= cfg.text_ground else None
        if engine is None:
            keep.append(box)
            continue
        bw, bh = x1 - x0, y1 - y0
        band = (
            max(0, x0 - 2 * bw),
            max(0, y0 - bh // 2),
            min(image.width, x1 + 2 * bw),
            min(image.height, y1 + bh // 2),
        )
        band_grey = grey.crop(band)
        covered, lines = np.zeros((bh, bw), bool), []
        for word in engine.read(band_grey).words:
            if word.conf < _WORD_CONF or sum(c.isalnum() for c in word.text) < 2:
                continue
            wx0, wy0, wx1, wy1 = word.box
            ax0, ay0 = max(0, wx0 + band[0] - x0), max(0, wy0 + band[1] - y0)
            ax1, ay1 = min(bw, wx1 + band[0] - x0), min(bh, wy1 + band[1] - y0)
            if ax1 > ax0 and ay1 > ay0:
                covered[ay0:ay1, ax0:ax1] = True
                if all(min(ay1, b) - max(ay0, a) < (ay1 - ay0) / 2 for a, b in lines):
                    lines.append((ay0, ay1))
        if len(lines) < 2 or covered.mean() < cfg.text_cover:
            keep.append(box)
            continue
        if rgb is None:
            rgb = image.convert("RGB")
        levels = np.asarray(band_grey).ravel()
        level, _share = _ground(levels)
        colours = np.asarray(rgb.crop(band), dtype=np.int16).reshape(-1, 3)
        page = np.median(colours[np.abs(levels.astype(np.int16) - level) <= _GROUND_BAND], axis=0)
        pixels = np.asarray(rgb.crop((x0, y0, x1, y1)), dtype=np.int16)
        stray = ~covered & ~(np.abs(pixels - page) <= _GROUND_BAND).all(axis=2)
        if stray.mean() > _STRAY:
            keep.append(box)  # more than words on the page's ground: a face under words
    return keep


# Skin tones in YCrCb (Chai & Ngan 1999), widened a little for shaded and dark skin.
_CR, _CB = (130, 175), (75, 130)
_MAP_SIDE = 320  # longer side of the colour copy the candidate map is drawn on (at least)
_MAP_SHARE = 2 / 3  # the map's side per side of the copy searched (320 for the default 480)
_CHROMA = 10  # a pixel this close to grey (|Cr-128|, |Cb-128|) may be a face in a grey photo
_EDGE = 8  # luma range over 3x3 pixels that counts as detail (eyes, brows, mouth, shading)
_DARK = 30  # luma below this (and, for grey, above 255 minus it) is outline or shadow, not face
_DETAIL = 0.05  # share of a region's box that is inner detail a face has at least
_COLOUR_EDGE = 12  # |Cr| or |Cb| range over 3x3 pixels: an edge between two colours, not shading
_WHOLE_SHARE = 0.5  # regions covering this share of the image: search it whole
_INSIDE = 21  # of the 25 pixels around a pixel in a skin-toned or grey area (see face_regions)
# A toned photograph (see _toned): this share of its mid-luma pixels within _CHROMA of the colour
# its tone gives their luma (cyanotype, night-vision green, purple duotone: 0.99-1.0; colour
# photographs 0.1-0.5, one underexposed to a quarter 0.9) ...
_TONED = 0.9
# ... in continuous tone: its 8 commonest luma levels hold under this share of those pixels (a
# flat graphic in one hue, a page on a tinted ground: most of it is a few levels)
_FLAT_LEVELS = 0.5
_TONED_MID = 0.25  # share of a toned photograph's pixels in mid luma (a page's glyph edges: less)
_TONE_OFF = 0.5  # share of a toned photograph's mid-luma pixels that its tone puts off grey
_MTCNN_WIDEN = 1.4  # MTCNN's inner-face box to a cascade-like face box (see FaceDetector._search)


def face_regions(
    image: Image.Image, shape: tuple[int, int], min_face: int, map_side: int = _MAP_SIDE
) -> list[tuple[int, int, int, int]] | None:
    """Where to search `image` for faces (`_face_map`'s regions)."""
    return _face_map(image, shape, min_face, map_side)[0]


def _face_map(
    image: Image.Image, shape: tuple[int, int], min_face: int, map_side: int = _MAP_SIDE
) -> tuple[list[tuple[int, int, int, int]] | None, bool]:
    """(where to search `image` for faces, whether it is a toned photograph: see `_toned`).
    Where: (x0, y0, x1, y1) boxes in the pixels of its grey copy of `shape` (rows, columns);
    None: search it whole (the regions cover most of it).

    A face is looked for in each region, skin-toned or grey (a black-and-white photograph), at
    least half a smallest face across, that fills much of its box (an outline, a ring or a
    stroke does not) and has detail well inside it (eyes, brows, mouth and shading are not
    flat: a flat shape, whatever its colour, is not searched), some of it where the colour is
    flat (a face's features are shading within one skin tone; detail only on an edge between
    two colours is a JPEG's chroma bleeding a skin tone across a shape's edge). Each region is
    widened by half its size and half a smallest face (hair, forehead and chin, and room for the
    turned searches). [] : no such region, nothing to search. In a toned photograph "grey" and
    "where the colour is flat" are measured with its tone taken out."""
    cv2 = _cv2()
    gh, gw = shape
    w, h = image.size
    k = min(1.0, map_side / max(w, h))
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    small = np.asarray(rgb)
    if k < 1.0:
        size = (max(1, round(w * k)), max(1, round(h * k)))
        if k >= 0.5:
            # Down to half size, bilinear weighs every pixel (no aliasing) at a seventh of the
            # cost of Pillow's box filter (0.85 ms of 1.3 for a 640 px image's whole map).
            small = cv2.resize(small, size, interpolation=cv2.INTER_LINEAR)
        else:
            small = np.asarray(rgb.resize(size, Image.Resampling.BOX))
    ycc = cv2.cvtColor(small, cv2.COLOR_RGB2YCrCb)
    skin = cv2.inRange(ycc, (_DARK, _CR[0], _CB[0]), (255, _CR[1], _CB[1]))
    lo, hi = 128 - _CHROMA, 128 + _CHROMA
    # A photograph toned in one colour (cyanotype, night-vision green, a duotone, black and white
    # under a colour cast) is grey measured against its own tone: its face is neither skin-toned
    # nor near grey, and was stored unblurred.
    # Added to the plain map, so that no region of it is lost.
    neutral = _toned(ycc)
    toned = neutral is not None
    grey = cv2.inRange(ycc, (_DARK, lo, lo), (255 - _DARK, hi, hi))
    if toned:
        grey = cv2.bitwise_or(grey, cv2.inRange(neutral, (_DARK, lo, lo), (255 - _DARK, hi, hi)))
    # well inside a skin-toned or mid-grey area (a flat shape's own antialiased border, or a
    # black outline on white, is not): 21 of the 5x5 pixels around in it. Not all 25: a
    # photographed face's skin is speckled at the map's scale (shading, pores, a JPEG's chroma
    # noise push single pixels out of the range), and an erosion (all 25) left nothing of faces
    # under ~40 px of the searched copy: 0.45 of the photographed ones were found, 0.99 now.
    core = (5, 5)
    need = 255 * _INSIDE // 25
    areas = cv2.bitwise_or(
        _at_least(cv2.blur(skin, core), need),
        _at_least(cv2.blur(grey, core), need),
    )
    if not cv2.countNonZero(areas):
        return [], toned  # no such area (most backgrounds and flat scenes): no detail map to draw
    kernel = np.ones((3, 3), np.uint8)
    detail = cv2.morphologyEx(ycc[..., 0], cv2.MORPH_GRADIENT, kernel)
    # detail inside those areas, gathered into regions
    inner = cv2.bitwise_and(areas, _at_least(detail, _EDGE))
    if not cv2.countNonZero(inner):
        return [], toned  # no detail inside any such area: no region (labelling would cost most)
    inner = inner > 0
    fx, fy = gw / small.shape[1], gh / small.shape[0]  # map -> grey copy
    reach = max(1, round(min_face / 4 / fx))  # detail this close together is one region
    near = cv2.dilate(inner.astype(np.uint8), np.ones((2 * reach + 1, 2 * reach + 1), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(near, connectivity=8)
    dots = np.bincount(labels[inner], minlength=n)
    # A face's detail is shading within one skin tone: a region needs some where the colour is
    # flat. Detail only on an edge between two colours is a JPEG's: its chroma, stored at half
    # resolution, bleeds a skin tone across the edge of a shape (a brown trunk under a yellow
    # crown), so that edge's luma step lies inside a "skin" area.
    chroma = _chroma_edges(ycc, kernel)
    if toned:  # shading within the tone is flat colour too
        chroma = cv2.min(chroma, _chroma_edges(neutral, kernel))
    shaded = np.bincount(labels[inner & (chroma < _COLOUR_EDGE)], minlength=n)
    out = []
    for i in range(1, n):
        x, y, bw, bh, _area = (int(v) for v in stats[i])
        if bw * fx < min_face / 2 or bh * fy < min_face / 2 or dots[i] < _DETAIL * bw * bh:
            continue
        if not shaded[i]:
            continue  # all its detail is on colour edges
        x0, y0, x1, y1 = x * fx, y * fy, (x + bw) * fx, (y + bh) * fy
        m = (max(x1 - x0, y1 - y0) + min_face) / 2
        out.append((x0 - m, y0 - m, x1 + m, y1 + m))
    boxes = _union_overlapping(out)
    boxes = [
        (max(0, math.floor(a)), max(0, math.floor(b)), min(gw, math.ceil(c)), min(gh, math.ceil(d)))
        for a, b, c, d in boxes
    ]
    if sum((c - a) * (d - b) for a, b, c, d in boxes) >= _WHOLE_SHARE * gw * gh:
        return None, toned
    return boxes, toned


def _chroma_edges(ycc: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """The larger of the Cr and Cb ranges over `kernel` around each pixel of `ycc`."""
    cv2 = _cv2()
    return cv2.max(
        cv2.morphologyEx(ycc[..., 1], cv2.MORPH_GRADIENT, kernel),
        cv2.morphologyEx(ycc[..., 2], cv2.MORPH_GRADIENT, kernel),
    )


def _toned(ycc: np.ndarray) -> np.ndarray | None:
    """`ycc` (the face map's YCrCb copy) with its tone taken out, when it is a photograph toned in
    one colour: else None (a colour or grey image, a flat graphic).

    A toned photograph's chroma is a function of its luma (a duotone's two colours, a grey
    image tinted, clipped where a channel saturates): its tone curve is the mean Cr and Cb of
    each band of 8 luma levels, over its mid-luma pixels (between _DARK and 255 - _DARK, what the
    grey map looks at). It is toned when _TONED of those pixels, and of those with detail (a
    luma step of _EDGE to the next sampled pixel, 64 at least), lie within _CHROMA of the curve,
    in continuous tone (they are _TONED_MID of the image, and its 8 commonest luma levels hold
    under _FLAT_LEVELS of them), and its tone puts _TONE_OFF of them off grey (further than
    _CHROMA from it: else the grey map finds its faces as it is).
    Its tone is then subtracted (each pixel's chroma less the curve's at its luma, plus 128), so
    that the grey map finds its faces as in a black-and-white photograph. Decided on every other pixel each way, a quarter of the
    map: about 0.1 ms a sample-web scene (bench/faces.py's face step is 3-80 ms an image)."""
    sample = ycc[::2, ::2].reshape(-1, 3)
    y = sample[:, 0]
    mid = (y >= _DARK) & (y <= 255 - _DARK)
    n = int(np.count_nonzero(mid))
    if n < max(64, _TONED_MID * len(y)):
        return None  # mostly white or black: a page, a drawing, not a photograph
    y = y[mid]
    if np.sort(np.bincount(y, minlength=256))[-8:].sum() >= _FLAT_LEVELS * n:
        return None  # a few flat levels: a graphic, not a photograph
    band = y >> 3
    counts = np.bincount(band, minlength=32)
    have = np.flatnonzero(counts)
    curves, near = [], np.ones(n, bool)
    for c in (1, 2):
        ch = sample[mid, c]
        means = np.bincount(band, weights=ch, minlength=32)[have] / counts[have]
        curve = np.interp(np.arange(256), have * 8 + 3.5, means).astype(np.float32)
        curves.append(curve)
        near &= np.abs(ch - curve[y]) <= _CHROMA
    # its detail too (a colour face on a smooth gradient is off the gradient's curve, and small)
    luma = ycc[::2, ::2, 0].astype(np.int16)
    edge = np.zeros(luma.shape, np.int16)
    edge[:, :-1] = np.abs(np.diff(luma, axis=1))
    edge[:-1] = np.maximum(edge[:-1], np.abs(np.diff(luma, axis=0)))
    detailed = (edge.reshape(-1) >= _EDGE)[mid]
    needed = _TONED * max(64, int(np.count_nonzero(detailed)))
    if np.count_nonzero(near) < _TONED * n or np.count_nonzero(near[detailed]) < needed:
        return None  # chroma not set by luma, in the image or in its detail: a colour image
    off = np.abs(sample[mid, 1:].astype(np.int16) - 128).max(axis=1) > _CHROMA
    if np.count_nonzero(off) < _TONE_OFF * n:
        return None  # near grey already (a faint tone, a washed-out image): the grey map finds it
    luma = ycc[..., 0]
    out = ycc.copy()
    for c, curve in zip((1, 2), curves, strict=True):
        out[..., c] = np.clip(ycc[..., c] - (curve - 128)[luma], 0, 255).astype(np.uint8)
    return out


def _at_least(a: np.ndarray, value: int) -> np.ndarray:
    """255 where the uint8 array `a` is at least `value`, else 0 (cv2.compare with a number
    fails on a 1x1 array, which it takes for a scalar's vector)."""
    return _cv2().threshold(a, value - 1, 255, _cv2().THRESH_BINARY)[1]


def _union_overlapping(boxes: list) -> list:
    """Boxes that overlap at all become their union, until none overlap."""
    boxes = list(boxes)
    changed = True
    while changed:
        changed = False
        out: list = []
        for b in boxes:
            for i, m in enumerate(out):
                if b[0] < m[2] and m[0] < b[2] and b[1] < m[3] and m[1] < b[3]:
                    out[i] = (min(b[0], m[0]), min(b[1], m[1]), max(b[2], m[2]), max(b[3], m[3]))
                    changed = True
                    break
            else:
                out.append(b)
        boxes = out
    return boxes


def _turned_search(det: FaceDetector, g: np.ndarray, angle: float):
    """Search a copy of `g` turned by `angle` degrees; boxes mapped back to `g` (the upright box
    around the turned one)."""
    cv2 = _cv2()

    h, w = g.shape[:2]
    centre = (w / 2, h / 2)
    m = cv2.getRotationMatrix2D(centre, angle, 1.0)
    cos, sin = abs(m[0, 0]), abs(m[0, 1])
    nw, nh = int(h * sin + w * cos + 0.5), int(h * cos + w * sin + 0.5)
    m[0, 2] += nw / 2 - centre[0]
    m[1, 2] += nh / 2 - centre[1]
    turned = cv2.warpAffine(g, m, (nw, nh), flags=cv2.INTER_LINEAR, borderValue=(128, 128, 128))
    back = cv2.invertAffineTransform(m)
    out = []
    for x, y, bw, bh in det._search(turned, angle):
        corners = np.array([[x, y, 1], [x + bw, y, 1], [x, y + bh, 1], [x + bw, y + bh, 1]])
        pts = corners @ back.T
        x0, y0 = pts.min(axis=0)
        x1, y1 = pts.max(axis=0)
        out.append((x0, y0, x1 - x0, y1 - y0))
    return out


def _sideways(angle: float) -> bool:
    """Whether a turn of `angle` degrees is more than 45 from upright (a face on its side, or
    upside down)."""
    return abs((angle + 180) % 360 - 180) > 45


def _xywh(box: Box) -> tuple[int, int, int, int]:
    return (box.x, box.y, box.w, box.h)


def _overlap(a, b) -> float:
    """Intersection over the smaller box."""
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    return ix * iy / max(1e-9, min(a[2] * a[3], b[2] * b[3]))


def _add_boxes(merged: list, more: list) -> list:
    """`merged` (a copy's faces, (x, y, w, h)) and the faces another copy of the image found:
    one of `more` that half of overlaps a face of `merged` is that face; it replaces it when it
    is larger and their union is not mostly both (IoU under 0.6: the earlier box was a part of
    the face, as MTCNN's on a night-vision green one), else it is dropped (the same face: the
    colour copy's box stays, as without the second copy)."""
    merged = list(merged)
    for b in more:
        hits = [i for i, m in enumerate(merged) if _overlap(b, m) >= 0.5]
        if not hits:
            merged.append(b)
            continue
        i = hits[0]
        m = merged[i]
        inter = _overlap(b, m) * min(b[2] * b[3], m[2] * m[3])
        iou = inter / max(1e-9, b[2] * b[3] + m[2] * m[3] - inter)
        if b[2] * b[3] > m[2] * m[3] and iou < 0.6:
            merged[i] = b
    return merged


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
    """The image in a mode the blur handles (L, LA, RGB, RGBA): a 16-bit grey one scaled to 8
    bits (`common.pairs.eight_bit`), one with a palette or tRNS transparency with its alpha."""
    image = eight_bit(image)
    if image.mode in ("L", "LA", "RGB", "RGBA"):
        return image
    return image.convert("RGBA" if has_alpha(image) else "RGB")


# What of a decoded image's info a re-encode may write (Pillow's savers take some from
# `image.info`: a JPEG's comment, a PNG's and an AVIF's ICC profile): the transparent colour and
# the ICC profile; nothing else of the fetched file (comments, XMP, EXIF) is written.
_KEPT_INFO = ("transparency", "icc_profile")


def _encode(image: Image.Image, fmt: str) -> bytes:
    """`image` (a copy of the caller's own, its info pared) saved as `fmt`."""
    buf = io.BytesIO()
    if fmt == "JPEG" and image.mode not in ("L", "RGB"):
        image = image.convert("RGB")
    info = {k: v for k, v in image.info.items() if k in _KEPT_INFO}
    if isinstance(info.get("icc_profile"), bytes) and holds_image(info["icc_profile"]):
        del info["icc_profile"]
    image.info = info
    image.save(buf, format=fmt, **_SAVE.get(fmt, {}))
    return buf.getvalue()


# The turn each EXIF orientation asks for (Pillow's ImageOps.exif_transpose's table).
_TURNS = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}


def orientation(image: Image.Image) -> int | None:
    """The orientation Pillow's exif_transpose would apply to `image` (EXIF, a PNG's "Raw
    profile type exif" text or XMP tiff:Orientation): 2-8, or 1 for none; None when it cannot
    be read (metadata Pillow cannot parse, a value not 1-8): then it is dropped from the stored
    file, and every viewer sees the pixels as they are, the ones searched."""
    try:
        value = image.getexif().get(ExifTags.Base.Orientation, 1)
    except MemoryError:
        raise
    except Exception:
        return None
    if isinstance(value, tuple) and len(value) == 1:
        value = value[0]
    if type(value) is not int or not 1 <= value <= 8:
        return None
    return value


def search_views(image: Image.Image) -> list[Image.Image]:
    """The views of a decoded image the face search looks at: the image as every reader of pairs
    sees it (`common.pairs.on_white`: a 16-bit grey image scaled to 8 bits, anything transparent
    composited onto white), and for an image with transparent pixels, also its colour with the
    alpha ignored (what convert("RGB") gives: a face under transparent pixels)."""
    image = eight_bit(image)
    if not has_alpha(image):
        return [image]
    rgba = image.convert("RGBA")
    bare = rgba.convert("RGB")
    if rgba.getextrema()[3][0] == 255:
        return [bare]
    white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    white.alpha_composite(rgba)
    return [white.convert("RGB"), bare]


class ImageFault(Exception):
    """The image's own bytes or metadata could not be turned, decoded in full, blurred or
    re-encoded: its row is a reject (`undecodable`, the step and the error in `error`), not a
    fault of the run."""


@contextmanager
def image_step(what: str):
    """A step on the image's own bytes or pixels: any error in it (but MemoryError) is the
    image's, an ImageFault naming the step."""
    try:
        yield
    except MemoryError:
        raise
    except Exception as exc:
        raise ImageFault(f"{what}: {type(exc).__name__}: {exc}") from exc


def redact(
    data: bytes,
    image: Image.Image,
    fmt: str,
    detector: FaceDetector,
    *,
    frames: int = 1,
    size: tuple[int, int] | None = None,
) -> Redacted:
    """What to store for a decoded image (`image`: its first frame, `data`: the bytes as
    fetched, `frames`: its frame count, `size`: its full size when `image` is a reduced decode).

    The bytes themselves when no face is found in a single-frame image without orientation
    metadata whose bytes carry nothing beyond the image; such a file that carries more (EXIF
    and its thumbnail, bytes after its end, chunks or segments outside decode.strip_extras' safe
    set) is stored stripped of it, losslessly (the same pixels; an AVIF, or a file whose
    structure could not be followed, re-encoded). Otherwise the image is re-encoded as `fmt`
    without metadata, at full size (a reduced decode is decoded again in full, only then):
    faces blurred, the first frame only (the one searched), and turned upright by any
    orientation metadata (EXIF, a PNG's text, XMP) other than 1, so that every view of the
    stored file (Pillow, which turns by it, browsers, which ignore some of it, and readers of
    pairs, which ignore all of it) is the one searched. Metadata whose orientation cannot be
    read is dropped and the pixels searched and stored as they are.

    Raises ImageFault when a step on the image's own bytes fails (not the face search)."""
    width, height = size or image.size
    image = eight_bit(image)
    turn = orientation(image)
    upright = image
    if turn is not None and turn != 1:
        with image_step(f"turning by orientation {turn}"):
            upright = image.transpose(_TURNS[turn])
    sideways = turn in (5, 6, 7, 8)
    boxes = detector.detect(upright, (height, width) if sideways else (width, height))
    changes = []
    if boxes:
        changes.append("faces blurred")
    if turn is not None and turn != 1:
        changes.append(f"turned upright (orientation {turn})")
    if frames > 1:
        changes.append(f"first frame of {frames}")
    if not changes:
        extras = strip_extras(data, fmt, drop_exif=turn is None)
        if not extras.dropped:
            return Redacted(data, width, height, [])
        if extras.data is not None:
            return Redacted(extras.data, width, height, [], f"stripped ({extras.why})")
        changes.append(f"re-encoded without ({extras.why})")
    elif turn is None:
        changes.append("orientation unreadable, not applied")
    if (width, height) != image.size:
        with image_step("decoding in full"), Image.open(io.BytesIO(data), formats=[fmt]) as full:
            full.seek(0)
            full.load()
            upright = eight_bit(full)
            if turn is not None and turn != 1:
                upright = upright.transpose(_TURNS[turn])
    with image_step(f"re-encoding as {fmt}"):
        blurred = blur_boxes(_workable(upright), boxes, detector.cfg)
        encoded = _encode(blurred, fmt)
    if not boxes:
        # Nothing found, yet the file is re-encoded (turned, a first frame, an AVIF's metadata):
        # its own pixels are searched too. The search is not exact under re-encoding: a face
        # turned on its side by orientation 8 was found in the stored JPEG only.
        with image_step(f"decoding the re-encoded {fmt}"), Image.open(io.BytesIO(encoded)) as im:
            im.load()
            boxes = detector.detect(im)
        if boxes:
            changes.insert(0, "faces blurred")
            with image_step(f"re-encoding as {fmt}"):
                blurred = blur_boxes(_workable(upright), boxes, detector.cfg)
                encoded = _encode(blurred, fmt)
    change = ", ".join(changes)
    return Redacted(encoded, blurred.width, blurred.height, boxes, change, same_pixels=False)
