"""The ink of a page image, as the OCR engine (crawlers/images/ocr.py) looks at it around
Tesseract: its lines of ink (`ink_lines`) and those a reading left unread (`unread_lines`,
`half_read_lines`, `misses_a_line`, `misses_words`), its skew (`skew_angle`), whether its ink
stands in lines or columns (`_lined`, `_written_in_columns`, `_lines_run_across`), the pages made
from it for another reading (`despeckle`, `flatten_ground`, `bright_text`), and boxes mapped back
to the original image's pixels (`_map_box`, `text_share`). Plain functions over Pillow images and
NumPy arrays; no Tesseract here."""

from __future__ import annotations

import math

import numpy as np
from PIL import Image


def _rotate_back(x: float, y: float, angle: float, size: tuple, turned: tuple) -> tuple:
    """A point of `image.rotate(angle, expand=True)` (size `turned`) back in the image (`size`)."""
    a = math.radians(angle)
    dx, dy = x - turned[0] / 2, y - turned[1] / 2
    return (
        math.cos(a) * dx - math.sin(a) * dy + size[0] / 2,
        math.sin(a) * dx + math.cos(a) * dy + size[1] / 2,
    )


def _map_box(box, steps, scale: float, size) -> tuple[int, int, int, int]:
    """A box of the turned copy back in the original image: undo the turns, then the scale."""
    pts = [(box[0], box[1]), (box[2], box[1]), (box[0], box[3]), (box[2], box[3])]
    for angle, before, after in reversed(steps):
        pts = [_rotate_back(x, y, angle, before, after) for x, y in pts]
    xs = [p[0] / scale for p in pts]
    ys = [p[1] / scale for p in pts]
    x0, x1 = max(0, int(min(xs))), min(size[0], math.ceil(max(xs)))
    y0, y1 = max(0, int(min(ys))), min(size[1], math.ceil(max(ys)))
    return x0, y0, x1, y1


def text_share(boxes: list[tuple[int, int, int, int]], size: tuple[int, int]) -> float:
    """The share of the image's area under the union of the boxes."""
    w, h = size
    if not boxes or w <= 0 or h <= 0:
        return 0.0
    k = max(1.0, max(w, h) / 512)  # a mask of at most 512 px a side
    mask = np.zeros((max(1, round(h / k)), max(1, round(w / k))), dtype=bool)
    for x0, y0, x1, y1 in boxes:
        mask[int(y0 / k) : int(math.ceil(y1 / k)), int(x0 / k) : int(math.ceil(x1 / k))] = True
    return float(mask.mean())


def skew_angle(gray: Image.Image, max_skew: float) -> float:
    """The skew (degrees, counter-clockwise positive as PIL turns, up to `max_skew` either way)
    that makes the ink's rows most peaked, or its columns where the lines then run down the page
    (OSD turns those the last quarter); 0 when no turn is clearly better than none."""
    if max_skew <= 0:
        return 0.0
    small = gray.copy()
    small.thumbnail((400, 400))
    a = np.asarray(small, dtype=np.float32)
    ink_dark = a.mean() > 127  # text is the minority: dark on light, or light on dark
    t = _otsu(a)
    ink = Image.fromarray(((a < t) if ink_dark else (a > t)).astype(np.uint8) * 255)
    if np.asarray(ink).mean() < 0.5:  # no ink at all
        return 0.0

    def profiles(img: Image.Image, angle: float) -> tuple[float, float]:
        """How peaked the ink's row sums and its column sums are, turned by `angle`."""
        a = np.asarray(img.rotate(angle, expand=True), dtype=np.float32)
        return float(np.square(np.diff(a.sum(axis=1))).sum()), float(
            np.square(np.diff(a.sum(axis=0))).sum()
        )

    # Lines of text make the row sums far more peaked than a letter's strokes make the column
    # sums (x6-10 on three lines of Latin, Chinese or Arabic, italic too); so the lines run across
    # (rows) or down the page (columns, text turned 45-135 degrees, which OSD turns the last
    # quarter) as the more peaked of the two says, and the turn is the one that peaks that one.
    # Rows alone found the turn of text lying down only roughly, or found its letters' slant
    # (at 60 degrees: 34-41 for 30; at 90, italic: 12-13 for 0). Every whole degree is tried on
    # a copy half as large (a quarter of the cost), then the turn refined on the full copy.
    coarse_ink = ink.resize((max(1, ink.width // 2), max(1, ink.height // 2)), Image.BOX)
    coarse = np.arange(-math.floor(max_skew), math.floor(max_skew) + 1e-6, 1.0)
    scores = np.array([profiles(coarse_ink, float(a)) for a in coarse])
    axis = int(scores[:, 1].max() > scores[:, 0].max())
    best = float(coarse[int(np.argmax(scores[:, axis]))])
    at_zero = peak = profiles(ink, 0.0)[axis]
    if best:
        peak = profiles(ink, best)[axis]
    for step, span in ((1.0, 2.0), (0.2, 0.8)):
        centre = best
        for angle in np.arange(centre - span, centre + span + 1e-6, step):
            angle = round(float(angle), 2)
            if abs(angle) > max_skew or angle == centre:
                continue
            got = profiles(ink, angle)[axis]
            if got > peak:
                best, peak = angle, got
    return best if peak > at_zero * 1.05 and abs(best) >= 0.4 else 0.0


def _ink(gray: Image.Image) -> np.ndarray:
    """The page's ink: the pixels on the far side of Otsu's threshold from its ground."""
    a = np.asarray(gray, dtype=np.float32)
    t = _otsu(a)
    return (a < t) if a.mean() > 127 else (a > t)


def ink_lines(gray: Image.Image) -> list[tuple[int, int]]:
    """The runs of inked rows, 3 pixels high or more, as (first row, row after the last)."""
    rows = _ink(gray).mean(axis=1) > 0.002
    edges = np.flatnonzero(np.diff(np.concatenate([[0], rows.astype(np.int8), [0]])))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True) if b - a >= 3]


def glyph_line(gray: Image.Image, runs: list[tuple[int, int]]) -> bool:
    """Whether a line of ink (`runs` between half and twice the median's height) holds
    `_GLYPHS` shapes or more that could be glyphs, of different sizes: connected ink a third of
    the line's height or taller, at most twice as wide as it is high, filling a twentieth of its
    box or more, their ink areas `_DISTINCT` apart. Text does (a short phrase in Chinese, Korean,
    Japanese or Arabic: 77% of the single lines Tesseract's layout read nothing in); a flat
    scene's lines of ink are a shape or two, or one shape repeated (a row of trees or windows:
    3 of the sample web's 630 such lines)."""
    import cv2

    ink = _ink(gray).astype(np.uint8)
    for a, b in _text_lines(runs):
        h = b - a
        _n, _labels, stats, _ = cv2.connectedComponentsWithStats(ink[a:b], connectivity=8)
        w, bh, area = stats[1:, 2], stats[1:, 3], stats[1:, 4]
        glyphs = (bh >= h / 3) & (w <= 2 * h) & (area >= 0.05 * w * bh)
        distinct: list[int] = []  # their ink areas, each over _DISTINCT times the one before
        for x in sorted(area[glyphs].tolist()):
            if not distinct or x > _DISTINCT * distinct[-1]:
                distinct.append(x)
        if len(distinct) >= _GLYPHS:
            return True
    return False


_GLYPHS = 3
_DISTINCT = 1.08


def half_read_lines(
    gray: Image.Image, runs: list[tuple[int, int]], words: list, grow: float
) -> bool:
    """Whether a fifth or more of the lines of ink (`runs` of `gray`, those between half and
    twice the median's height: text, not rules or figures; two or more) have less than half
    their ink under words' boxes (found in `gray` enlarged by `grow`): lines read in part, a few
    glyphs each (20 px Korean: a third of each line read, every line touched)."""
    lines = _text_lines(runs)
    return len(lines) >= 2 and len(unread_lines(gray, runs, words, grow)) >= 0.2 * len(lines)


def _text_lines(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The runs between half and twice the median's height: text, not rules or figures."""
    if not runs:
        return []
    median = float(np.median([b - a for a, b in runs]))
    return [(a, b) for a, b in runs if 0.5 * median <= b - a <= 2 * median]


def unread_lines(
    gray: Image.Image, runs: list[tuple[int, int]], words: list, grow: float, sure: float = 0.0
) -> list[tuple[int, int]]:
    """The lines of ink (`runs` of `gray` between half and twice the median's height, on a
    page of two or more) that have less than half their ink under the boxes of words read with
    confidence `sure` or more (found in `gray` enlarged by `grow`)."""
    lines = _text_lines(runs)
    if len(lines) < 2:
        return []  # one run: a line, or a page whose rows all have ink (a scan's edge)
    ink = _ink(gray)
    covered = np.zeros(ink.shape, bool)
    for w in words:
        if w.conf < sure:
            continue
        x0, y0, x1, y1 = (round(v / grow) for v in w.box)
        covered[max(0, y0) : max(0, y1), max(0, x0) : max(0, x1)] = True
    out = []
    for a, b in lines:
        total = int(ink[a:b].sum())
        if total > 0 and int((ink[a:b] & covered[a:b]).sum()) < 0.5 * total:
            out.append((a, b))
    return out


def misses_a_line(runs: list[tuple[int, int]], words: list, grow: float) -> bool:
    """Whether a fifth or more of the lines of ink (`runs`, from `ink_lines`; those at least half
    the median's height) have no word read across half of them (`words`' boxes in the page the
    runs were found in, enlarged by `grow`): a line lost, not a rule or a figure on a page of
    many lines."""
    if not runs or not words:
        return False
    tall = 0.5 * float(np.median([b - a for a, b in runs]))
    spans = [(w.box[1] / grow, w.box[3] / grow) for w in words]
    lines = [(a, b) for a, b in runs if b - a >= tall]
    unread = sum(
        not any(min(b, y1) - max(a, y0) >= 0.5 * (b - a) for y0, y1 in spans) for a, b in lines
    )
    return unread >= 0.2 * len(lines)


def misses_words(gray: Image.Image, runs: list[tuple[int, int]], words: list, grow: float) -> bool:
    """Whether a line of ink (`runs` of `gray`, those between half and twice the median's
    height) has ink left unread along it, as wide as `_MISSED_WIDTH` line heights or wider, no
    word's box over it (boxes found in `gray` enlarged by `grow`): words at a line's start or
    end that the page layout lost (20 px Korean enlarged x1.8: each line's first two words)."""
    lines = _text_lines(runs)
    if not lines or not words:
        return False
    ink = _ink(gray)
    for a, b in lines:
        height = b - a
        covered = np.zeros(ink.shape[1], bool)
        for w in words:
            x0, y0, x1, y1 = (v / grow for v in w.box)
            if min(b, y1) - max(a, y0) >= 0.5 * min(height, y1 - y0):
                covered[max(0, round(x0)) : max(0, round(x1))] = True
        inked = ink[a:b].any(axis=0)
        # each stretch of columns under no box: its ink from the first inked column to the last
        edges = np.flatnonzero(np.diff(np.concatenate([[1], covered.astype(np.int8), [1]])))
        for start, end in zip(edges[::2], edges[1::2], strict=True):
            cols = np.flatnonzero(inked[start:end])
            if cols.size and cols[-1] - cols[0] + 1 >= _MISSED_WIDTH * height:
                return True
    return False


def _otsu(a: np.ndarray) -> float:
    hist, edges = np.histogram(a, bins=64, range=(0, 256))
    p = hist / max(1, hist.sum())
    omega = np.cumsum(p)
    mu = np.cumsum(p * (edges[:-1] + 2))
    between = (mu[-1] * omega - mu) ** 2 / np.maximum(omega * (1 - omega), 1e-9)
    return float(edges[int(np.argmax(between)) + 1])


# Ink along a line this many line heights wide, under no word, is words the reading missed.
_MISSED_WIDTH = 2.0


def _lined(gray: Image.Image) -> bool:
    """Whether the page's ink stands in lines (`ink_lines`, across the page or down it) that
    leave a fifth of its rows (columns) blank, as text does; a photograph's ink fills them."""
    for page in (gray, gray.transpose(Image.Transpose.ROTATE_90)):  # lines across, or down
        runs = ink_lines(page)
        if runs and sum(b - a for a, b in runs) <= 0.8 * page.height:
            return True
    return False


def bright_text(image: Image.Image, size: tuple[int, int]) -> Image.Image | None:
    """Lettering in white outlined in dark (a meme's, a video caption's), as dark ink on white
    at `size`: the image's near-white pixels (every channel `_BRIGHT` or more) in connected
    shapes each no larger than `_GLYPH_AREA` of the image and mostly bordered by dark pixels
    (`_OUTLINE_SHARE` of the pixels just around each darker than `_OUTLINE_DARK`; a white
    sky or page is bordered by its own greys), `_BRIGHT_SHARE` of the image in all, standing
    in lines of ink (`_lined`); None where there are none, or where half the image is white
    (a page: its letters' counters are white shapes bordered by dark). Read only when the
    page's own reading is unsure."""
    import cv2

    image = image.convert("RGB")
    if max(image.size) > _BRIGHT_SIDE:  # looked at reduced (lettering survives it)
        image = image.copy()
        image.thumbnail((_BRIGHT_SIDE, _BRIGHT_SIDE), Image.BILINEAR)
    rgb = np.asarray(image)
    light = (rgb.min(axis=2) >= _BRIGHT).astype(np.uint8)
    if not _BRIGHT_SHARE[0] <= float(light.mean()) <= 0.5:
        return None  # none, or a white page (its letters' counters are white shapes in dark)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(light, connectivity=8)
    grey = np.asarray(image.convert("L"))
    near = cv2.dilate(labels.astype(np.float32), np.ones((5, 5), np.uint8)).astype(np.int32)
    ring = (light == 0) & (near > 0)  # just outside a shape, by the highest label around
    dark = np.bincount(near[ring], weights=(grey[ring] < _OUTLINE_DARK), minlength=count)
    around = np.bincount(near[ring], minlength=count)
    small = stats[:, cv2.CC_STAT_AREA] <= _GLYPH_AREA * light.size
    keep = (around > 0) & (dark >= _OUTLINE_SHARE * np.maximum(around, 1)) & small
    keep[0] = False
    glyphs = keep[labels]
    if not _BRIGHT_SHARE[0] <= float(glyphs.mean()) <= _BRIGHT_SHARE[1]:
        return None
    mask = Image.fromarray(np.where(glyphs, 0, 255).astype(np.uint8))
    if mask.size != size:
        mask = mask.resize(size, Image.BILINEAR)
    return mask if _lined(mask) else None


def flatten_ground(gray: Image.Image) -> Image.Image | None:
    """A grey page (dark text on light) with an uneven ground divided by it, the ground
    estimated as the page's light level around each point (grey dilation at an eighth of the
    size, a window of about 40 px, smoothed); None when the ground is even (its 5th to 95th
    percentiles within `_UNEVEN_SPREAD` levels), or when dividing it out does not leave sparse
    ink where Otsu's threshold found much (under `_FLAT_INK` of the pixels, a `_INK_DROP`th of
    what it was): a photograph's ink stays dense, text on a gradient's does not."""
    import cv2

    a = np.asarray(gray)
    h, w = a.shape
    if min(h, w) < 16:
        return None
    small = cv2.resize(a, (max(2, w // 8), max(2, h // 8)), interpolation=cv2.INTER_AREA)
    ground = cv2.blur(
        cv2.dilate(small, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))), (3, 3)
    )
    low, high = np.percentile(ground, (5, 95))
    if high - low < _UNEVEN_SPREAD:
        return None
    ground = cv2.resize(ground, (w, h), interpolation=cv2.INTER_LINEAR).astype(np.float32)
    flat = np.clip(a.astype(np.float32) * 255 / np.maximum(ground, 1), 0, 255).astype(np.uint8)
    before, after = _otsu_ink(a), _otsu_ink(flat)
    if after >= _FLAT_INK or before < _INK_DROP * after:
        return None
    return Image.fromarray(flat)


def _otsu_ink(a: np.ndarray) -> float:
    """The share of pixels darker than Otsu's threshold."""
    import cv2

    t, _ = cv2.threshold(a, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    return float((a <= t).mean())


def despeckle(gray: Image.Image) -> Image.Image:
    """A grey page with impulse noise (salt and pepper: `_IMPULSE_SHARE` or more of its pixels
    lone, `_IMPULSE_STEP` levels darker or lighter than every one of their 8 neighbours, on the
    bare ground: nothing else in the 5x5 around them off the ground, `_isolated`) with its
    speckles, and only those, replaced by the median of the 3x3 around them (a switching median:
    strokes a pixel wide are kept, which a plain median filter erodes); any other page as it is.
    Lone pixels on the ground, not all lone pixels: clean anti-aliased 9-11 px serif text has
    0.2-0.34% of its pixels lone, in its strokes, and despeckled lost them (CER 0.146 -> 0.816
    at 9 px, 0.019 -> 0.602 at 10 px); on the ground it has none.
    A speckle is a pixel that at least 7 of its 8 neighbours are that much lighter, or darker,
    than (two speckles side by side are each one), found twice (after the first are gone): a
    stroke a pixel wide keeps all but its two last pixels at each end.
    Tesseract reads speckled text as ink: 4% of a 28 px Latin page's pixels speckled, CER 0.95
    through the engine's contrast stretch."""
    import cv2

    a = np.asarray(gray)
    if min(a.shape) < 3:
        return gray
    ring = np.ones((3, 3), np.uint8)
    ring[1, 1] = 0
    wide = a.astype(np.int16)
    lone = (wide > cv2.dilate(a, ring).astype(np.int16) + _IMPULSE_STEP) | (
        wide < cv2.erode(a, ring).astype(np.int16) - _IMPULSE_STEP
    )
    if _isolated(a, lone) < _IMPULSE_SHARE:
        return gray
    for _ in range(2):
        a = np.where(_speckles(a), cv2.medianBlur(a, 3), a)
    return Image.fromarray(np.ascontiguousarray(a, dtype=np.uint8))


def _isolated(a: np.ndarray, lone: np.ndarray) -> float:
    """The share of the page's pixels that are `lone` with nothing else off the ground in the
    5x5 around them (the ground: the page's median; off it: `_IMPULSE_STEP` / 2 levels away):
    a speckle on bare ground, not a stroke's pixel."""
    import cv2

    ys, xs = np.nonzero(lone)
    if not len(ys):
        return 0.0
    off = np.abs(a.astype(np.int16) - int(np.median(a))) > _IMPULSE_STEP // 2
    total = cv2.integral(off.astype(np.uint8))  # (h + 1, w + 1) sums from the top left
    h, w = a.shape
    y0, y1 = np.clip(ys - 2, 0, h), np.clip(ys + 3, 0, h)
    x0, x1 = np.clip(xs - 2, 0, w), np.clip(xs + 3, 0, w)
    near = total[y1, x1] - total[y0, x1] - total[y1, x0] + total[y0, x0] - off[ys, xs]
    return float((near == 0).sum()) / a.size


def _speckles(a: np.ndarray) -> np.ndarray:
    """Pixels that 7 or more of their 8 neighbours are `_IMPULSE_STEP` levels lighter than, or
    darker than (the border's, against the page mirrored: speckles left on the edge read as
    glyphs and cost the lines' first characters)."""
    import cv2

    wide = cv2.copyMakeBorder(a, 1, 1, 1, 1, cv2.BORDER_REFLECT_101).astype(np.int16)
    core = wide[1:-1, 1:-1]
    h, w = core.shape
    lighter = np.zeros(core.shape, np.int8)
    darker = np.zeros(core.shape, np.int8)
    for dy in (0, 1, 2):
        for dx in (0, 1, 2):
            if dy == dx == 1:
                continue
            near = wide[dy : dy + h, dx : dx + w]
            lighter += near > core + _IMPULSE_STEP
            darker += near < core - _IMPULSE_STEP
    return (lighter >= 7) | (darker >= 7)


def _written_in_columns(gray: Image.Image) -> bool:
    """Whether the ink stands in narrow columns of glyphs: runs of inked columns a third as wide
    as the runs of inked rows are tall, or three or more runs of rows (a glyph's height each)
    for each run of columns, the columns no wider than two glyphs (vertical CJK; a paragraph's
    rows make one wide run of columns, a line's glyphs many narrow ones as tall as the line)."""
    rows, cols = ink_lines(gray), ink_lines(gray.transpose(Image.Transpose.ROTATE_90))
    if not rows or not cols:
        return False
    height = float(np.median([b - a for a, b in rows]))
    width = float(np.median([b - a for a, b in cols]))
    if 3 * width <= height:
        return True  # glyphs set close: each column's rows run together, far taller than wide
    return len(rows) >= 3 * len(cols) and width <= 2 * height


def _lines_run_across(gray: Image.Image) -> bool:
    """Whether the ink's columns are far more peaked than its rows: lines of text on their side."""
    small = gray.copy()
    small.thumbnail((400, 400))
    ink = _ink(small)
    rows = np.square(np.diff(ink.sum(axis=1).astype(np.float32))).sum()
    cols = np.square(np.diff(ink.sum(axis=0).astype(np.float32))).sum()
    return bool(cols > 1.5 * rows)


def _shattered(lines: list[str], runs: list[tuple[int, int]]) -> bool:
    """Whether a reading's `lines` (white space left out) are shattered glyphs: more than 1.5
    a line of ink (`runs`), the median `_SHATTERED_CHARS` characters or fewer."""
    if not runs or len(lines) <= 1.5 * len(runs):
        return False
    return float(np.median([len(line) for line in lines])) <= _SHATTERED_CHARS


# Impulse noise (despeckle): lone pixels this many grey levels past all their neighbours, on bare
# ground, on this share of the page or more (clean rendered pages, 9-12 px serif, sans and mono
# included, 0-0.0002; speckled 0.5% of its pixels, 0.0014; 2-8%, 0.005-0.010).
_IMPULSE_STEP = 64
_IMPULSE_SHARE = 0.001
# An uneven ground (flatten_ground): its light level spread over this many grey levels, and the
# page's ink, once the ground is divided out, under this share of its pixels and this many
# times less than before (text on a 55% gradient: 0.39-0.45 -> 0.05-0.10, 3.9x or more; of 122
# photographs and scenes, two, iptc.jpg's photograph and its copy, 0.27 -> 0.07).
_UNEVEN_SPREAD = 48
_FLAT_INK = 0.15
_INK_DROP = 3.5
# Lettering in white (bright_text): every channel this light, in shapes no larger than
# _GLYPH_AREA of the image, each with _OUTLINE_SHARE of the pixels just around it darker than
# _OUTLINE_DARK (its outline), on _BRIGHT_SHARE of the image in all.
_BRIGHT = 235
_BRIGHT_SHARE = (0.003, 0.2)
_GLYPH_AREA = 0.01
_BRIGHT_SIDE = 1000  # a larger image is looked at reduced to this
_OUTLINE_DARK = 80
_OUTLINE_SHARE = 0.5


# A shattered reading's median line has at most this many characters (`_shattered`).
_SHATTERED_CHARS = 6


def _background(gray: Image.Image) -> int:
    a = np.asarray(gray)
    return int(np.median(np.concatenate([a[0], a[-1], a[:, 0], a[:, -1]])))
