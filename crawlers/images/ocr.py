"""OCR of crawled images: Tesseract in process (tesserocr), per image its text in reading order,
its language and script, word boxes with confidences, and the share of the image that is text.

Plain Tesseract reads upright, horizontal text well and little else. Around it, `OcrEngine.read`:
1. works on a grey copy, salt-and-pepper speckles removed (`despeckle`, only where a page has
   them), its contrast stretched (low-contrast text), dark text on light (a mostly dark image is
   inverted); a page on an uneven ground (a gradient) is also read with the ground divided out
   (`flatten_ground`), the more confident reading kept;
2. straightens a skew (up to `max_skew` degrees, 45: text at any angle) found by the
   projection-profile method (the angle whose row sums of ink are the most peaked, or its
   column sums where the lines run down the page), turned with bicubic resampling;
3. turns the page upright by Tesseract's orientation and script detection (OSD: 0/90/180/270);
   where OSD is unsure or finds nothing (Arabic, short text), the upright page, OSD's guess and,
   when the ink's columns are more peaked than its rows, the page on either side are read (in
   OSD's script first, every language only when none of those readings is sure; without a
   script, each language on every way up until one is sure; a page where the first finds no
   word has no text, unless its ink stands in lines and the second, chi_sim, reads its own
   letters there: blurred Chinese), and the reading with the most
   confident characters kept; an unsure reading (below `sure_conf`),
   OSD sure or not, is also read as it is and each other way up (OSD is sometimes sure of a
   wrong turn on small text), one of those kept when clearly more confident;
4. enlarges small text (up to `max_upscale` times) to a line height of `line_px` pixels; text
   already that large is left as it is, and an unsure reading of enlarged text is compared with
   the page as it is (Tesseract's Arabic model reads enlarged text worse);
5. recognises with the language of the script OSD found (Latin: Tesseract's Latin-script
   model, every Latin-script language's letters; Han: chi_sim; Japanese: jpn; Korean: kor;
   Cyrillic and Greek: Tesseract's models of those scripts; Arabic: ara), also in the rival
   scripts OSD takes it for (`_RIVALS`: Japanese, Korean and Han; Cyrillic, Greek and Latin),
   and where that reading is unsure, with the others too (OSD misnames the script of small
   text); without one, each language is tried; the most confident characters are kept;
6. where Tesseract's page layout shattered the lines of ink (or, OSD sure of the script, left
   some unread), the page is also read as one column of lines (PSM 4);
7. where no reading is sure and the ink stands in narrow columns of glyphs, the page is read as
   it stands by the vertical models
   (`vertical_languages`: Japanese and Chinese written top to bottom);
8. a reading lid.176 names a language with a model of its own (`refine`: Vietnamese, whose
   stacked diacritics the Latin-script model loses) is read again in it, the more confident
   kept; a sure Simplified Chinese reading is read again in the Traditional model
   (`traditional`), kept where the characters the two give in different forms (OpenCC's tables)
   are more confident in it: chi_sim reads a Traditional page as its Simplified characters.
Boxes are mapped back to the original image's pixels. Tesseract's language data comes from
Debian's tesseract-ocr packages (scripts/bootstrap.sh); without it, or without tesserocr, the
engine refuses with one line (`OcrUnavailable`), never an empty text.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter, ImageOps
from pydantic import BaseModel, ConfigDict, Field

TESSDATA_DIRS = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
)
# The script of each OSD script name, the script and the ISO 639-1 code (a short reading's
# language: lid.176 names a longer one) of each Tesseract language.
OSD_SCRIPT = {
    "Latin": "Latin",
    "Han": "Han",
    "HanS": "Han",
    "HanT": "Han",
    "Japanese": "Japanese",  # Han with kana
    "Korean": "Korean",
    "Hangul": "Korean",
    "Cyrillic": "Cyrillic",
    "Greek": "Greek",
    "Arabic": "Arabic",
    # read in a model of theirs only when the caller names one (hin, heb, tha)
    "Devanagari": "Devanagari",
    "Hebrew": "Hebrew",
    "Thai": "Thai",
}
# `Latin`, `Cyrillic` and `Greek` are Tesseract's models of a whole script (Debian's
# tesseract-ocr-script-latn, -cyrl, -grek): every language's letters in it. `eng` reads English
# alone well: on 15 languages of lingua-py's test sentences its CER was 0.083 against 0.021
# (Czech 0.13, Turkish 0.16, Icelandic 0.21 against 0.00-0.03; English 0 both), at 143 against
# 188 ms a page.
# Each Tesseract language: its script and the ISO 639-1 code of a reading in it.
_MODELS = {
    "Latin": ("Latin", "en"),
    "eng": ("Latin", "en"),
    "chi_sim": ("Han", "zh"),
    "jpn": ("Japanese", "ja"),
    "kor": ("Korean", "ko"),
    "Cyrillic": ("Cyrillic", "ru"),
    "rus": ("Cyrillic", "ru"),
    "Greek": ("Greek", "el"),
    "ara": ("Arabic", "ar"),
    "jpn_vert": ("Japanese", "ja"),
    "chi_sim_vert": ("Han", "zh"),
    "vie": ("Latin", "vi"),
    # models a caller may name (`OcrConfig.languages`, `refinery images ocr --languages`)
    "chi_tra": ("Han", "zh"),
    "chi_tra_vert": ("Han", "zh"),
    "deu": ("Latin", "de"),
    "fra": ("Latin", "fr"),
    "spa": ("Latin", "es"),
    "ita": ("Latin", "it"),
    "por": ("Latin", "pt"),
    "nld": ("Latin", "nl"),
    "pol": ("Latin", "pl"),
    "tur": ("Latin", "tr"),
    "ukr": ("Cyrillic", "uk"),
    "ell": ("Greek", "el"),
    "heb": ("Hebrew", "he"),
    "hin": ("Devanagari", "hi"),
    "tha": ("Thai", "th"),
}
LANG_SCRIPT = {lang: script for lang, (script, _iso) in _MODELS.items()}
ISO = {lang: iso for lang, (_script, iso) in _MODELS.items()}
# OSD's script for a page is often a wrong one of these (on rendered pages of lingua-py's test
# sentences: Chinese named Korean or Japanese, English Cyrillic, Greek Latin): a page named one
# is also read in its rivals, the most confident characters kept (OcrEngine._read).
_RIVALS = {
    "Japanese": ("Han", "Korean"),
    "Korean": ("Han", "Japanese"),
    "Cyrillic": ("Latin", "Greek"),
    "Greek": ("Latin", "Cyrillic"),
}
# Kana (hiragana and katakana, not the prolonged-sound mark alone): a jpn reading with fewer than
# _KANA_SHARE of its letters in kana is not taken over chi_sim's (Japanese prose runs 30-60%).
_KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa]")
_KANA_SHARE = 0.15
# Scripts whose look-alikes their model reads fairly sure on a blurred page (Greek read by the
# Latin-script model at 0.75, where clean Latin pages read at 0.88 or more): below _RIVAL_CONF
# such a reading is compared with the rivals' too. (chi_sim reads blurred Japanese at 0.76 too,
# but Traditional pages and wrong ways up also read under 0.85 in it: not Han's.)
_WEAK_RIVALS = {"Latin": ("Cyrillic", "Greek")}
_RIVAL_CONF = 0.85


def _kana_enough(got) -> bool:
    """Whether `_KANA_SHARE` of a reading's letters are kana."""
    letters = sum(c.isalpha() for c in got[1])
    return bool(letters) and len(_KANA.findall(got[1])) >= _KANA_SHARE * letters


def _rivals(got) -> tuple[str, ...]:
    """The rival scripts a reading `got` (lang, text, words, conf) is compared with."""
    script = LANG_SCRIPT.get(got[0], "")
    weak = _WEAK_RIVALS.get(script, ()) if got[3] < _RIVAL_CONF else ()
    return _RIVALS.get(script, ()) + weak


INSTALL_FIX = (
    "install Tesseract's data and binding: `make bootstrap` (apt-get install tesseract-ocr "
    "tesseract-ocr-script-latn tesseract-ocr-chi-sim tesseract-ocr-jpn tesseract-ocr-kor "
    "tesseract-ocr-script-cyrl tesseract-ocr-script-grek tesseract-ocr-ara "
    "tesseract-ocr-jpn-vert tesseract-ocr-chi-sim-vert tesseract-ocr-vie tesseract-ocr-chi-tra; "
    "pip install "
    "tesserocr), or set TESSDATA_PREFIX"
)
_BIDI_MARKS = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")
_CJK_GAP = re.compile(f"(?<=[{_CJK}]) +(?=[{_CJK}])")


class OcrUnavailable(FileNotFoundError):
    """Tesseract's binding or language data is missing: the message is one line with the fix
    (a FileNotFoundError: the CLI prints it as one line and exits 2)."""


class OcrConfig(BaseModel):
    """How the engine reads an image."""

    model_config = ConfigDict(extra="forbid")

    languages: tuple[str, ...] = Field(
        ("Latin", "chi_sim", "ara", "jpn", "kor", "Cyrillic", "Greek"),
        description="Tesseract languages (traineddata names); a page is read in the first of "
        "its script's (OSD's), else in each, in this order, until one is sure",
    )
    tessdata: str | None = Field(None, description="Tesseract data directory (default: found)")
    line_px: float = Field(36.0, ge=10, description="small text is enlarged to this line height")
    max_upscale: float = Field(3.0, ge=1.0, le=4.0, description="most small text is enlarged")
    max_side: int = Field(2400, ge=200, description="a larger image is reduced to this")
    max_skew: float = Field(
        45.0,
        ge=0.0,
        le=45.0,
        description="largest skew straightened (degrees); 45: text at any angle (a turn past "
        "45 leaves the lines running down the page, which OSD turns upright)",
    )
    osd_min_conf: float = Field(
        1.0, ge=0.0, description="OSD orientation confidence trusted (Tesseract's own scale)"
    )
    sure_conf: float = Field(
        0.75, ge=0.0, le=1.0, description="a reading this confident tries nothing more"
    )
    min_word_conf: float = Field(
        0.3, ge=0.0, le=1.0, description="words below this confidence are left out"
    )
    refine: dict[str, str] = Field(
        default_factory=lambda: {"vi": "vie"},
        description="a reading in a script model that lid.176 names one of these languages (ISO "
        "639-1, 10 letters or more) is read again in that language's own model, the more "
        "confident kept: Vietnamese stacks diacritics that Tesseract's Latin-script model "
        "loses (lingua-py's Vietnamese sentences, 24 rendered lines: CER 0.196 with Latin, "
        "0.002 with vie). {}: never",
    )
    traditional: str | None = Field(
        "chi_tra",
        description="Traditional Chinese: a sure chi_sim reading of 6 Han characters or more "
        "is read again in this model, and that reading kept where the characters the two give "
        "in different forms (a Simplified character against its Traditional one, by OpenCC's "
        "tables) are more confident in it: three such characters or more, by 0.005 on "
        "average, its gains outweighing its losses four times (chi_sim reads a Traditional page "
        "as the Simplified equivalents, and the two models' page confidences do not tell which "
        "the page is). On 120 rendered pages in five fonts: Traditional CER 0.401 -> 0.163, "
        "Simplified pages read as before, at 1.5x the CPU of a Chinese page. None: never",
    )
    vertical_languages: tuple[str, ...] = Field(
        ("jpn_vert", "chi_sim_vert"),
        description="models of text written in columns, top to bottom (Japanese and Chinese "
        "posters, signs, covers), read as the page stands when its ink stands in narrow columns "
        "of glyphs and no horizontal reading is sure; kept when sure, or more confident. (): "
        "never",
    )

    def models(self) -> dict:
        """The Tesseract models a reading may use, as the stage's figures and the OCR outputs'
        manifests record them: `languages`, `vertical_languages`, `traditional`."""
        return {
            "languages": list(self.languages),
            "vertical_languages": list(self.vertical_languages),
            "traditional": self.traditional,
        }


@dataclass
class Word:
    """A recognised word: its text, confidence (0..1) and box in the original image's pixels."""

    text: str
    conf: float
    box: tuple[int, int, int, int]  # x0, y0, x1, y1
    # a Han model's confidence of each character of `text` (0..1), for `OcrConfig.traditional`;
    # () for other models, and in an OcrResult
    chars: tuple[float, ...] = ()


@dataclass
class OcrResult:
    """What one image holds as text."""

    text: str  # in reading order, lines joined by newlines
    language: str  # ISO 639-1 ("und": no text)
    script: str  # Latin, Han, Arabic ("" when no text)
    tesseract_lang: str
    confidence: float  # character-weighted mean word confidence, 0..1
    text_share: float  # share of the image area covered by word boxes
    words: list[Word] = field(default_factory=list)
    rotation: int = 0  # degrees turned (counter-clockwise) to make the page upright
    skew: float = 0.0  # degrees straightened after that
    seconds: float = 0.0

    @property
    def chars(self) -> int:
        return sum(len(w.text) for w in self.words)


# Tesseract's script models by the ISO 15924 code Debian's package names carry
# (tesseract-ocr-script-latn holds Latin.traineddata).
_SCRIPT_CODES = {
    "Arabic": "arab",
    "Cyrillic": "cyrl",
    "Devanagari": "deva",
    "Greek": "grek",
    "HanS": "hans",
    "HanS_vert": "hans-vert",
    "HanT": "hant",
    "HanT_vert": "hant-vert",
    "Hangul": "hang",
    "Hangul_vert": "hang-vert",
    "Hebrew": "hebr",
    "Japanese": "jpan",
    "Japanese_vert": "jpan-vert",
    "Latin": "latn",
    "Thai": "thai",
}


def debian_package(lang: str) -> str:
    """The Debian package that ships Tesseract's `lang` model: tesseract-ocr-chi-tra for
    chi_tra, tesseract-ocr-script-latn for the Latin script's model."""
    if lang in _SCRIPT_CODES:
        return f"tesseract-ocr-script-{_SCRIPT_CODES[lang]}"
    if lang[:1].isupper():  # another script model: Debian names it by its ISO 15924 code
        return f"tesseract-ocr-script-{lang.lower()[:4]}"
    return "tesseract-ocr-" + lang.lower().replace("_", "-")


def find_tessdata(languages: tuple[str, ...] = ("eng",), tessdata: str | None = None) -> str:
    """The Tesseract data directory holding every language asked and `osd` (OcrUnavailable else):
    `tessdata`, else $TESSDATA_PREFIX alone when set (as Tesseract reads it), else Debian's.
    The error names the models missing from every directory and the Debian packages that ship
    them (a model nobody installs, such as one this project never asked for, among them)."""
    prefix = os.environ.get("TESSDATA_PREFIX")
    dirs = [d for d in ([tessdata] if tessdata else [prefix] if prefix else TESSDATA_DIRS) if d]
    need = [*languages, "osd"]
    for d in dirs:
        if all((Path(d) / f"{lang}.traineddata").is_file() for lang in need):
            return str(d)
    where = ", ".join(dirs)
    present = {lang for d in dirs for lang in need if (Path(d) / f"{lang}.traineddata").is_file()}
    missing = [lang for lang in need if lang not in present]
    if missing and missing != need and not tessdata and not prefix:
        # some models are there: only those missing are to install (not the whole set)
        packages = " ".join(debian_package(lang) for lang in missing)
        raise OcrUnavailable(
            f"Tesseract language data {', '.join(missing)} not found in {where}: "
            f"apt-get install {packages} (or set TESSDATA_PREFIX to a directory holding "
            f"{', '.join(f'{x}.traineddata' for x in missing)})"
        )
    raise OcrUnavailable(
        f"Tesseract language data {', '.join(missing or need)} not found in {where}: {INSTALL_FIX}"
    )


def _tesserocr():
    try:
        import tesserocr
    except ImportError as exc:  # the binding, or the libtesseract it links
        raise OcrUnavailable(f"tesserocr cannot be imported ({exc}): {INSTALL_FIX}") from None
    _quiet_leptonica(tesserocr)
    return tesserocr


_LEPTONICA_SEVERITY_NONE = 6  # leptonica's environ.h: L_SEVERITY_NONE


@functools.cache
def _leptonica(tesserocr):
    """The Leptonica library tesserocr runs on (the copy its wheel bundles in tesserocr.libs,
    else the system's), as a ctypes handle, or None."""
    import ctypes
    import ctypes.util
    import glob

    bundled = os.path.join(os.path.dirname(os.path.dirname(tesserocr.__file__)), "tesserocr.libs")
    paths = sorted(glob.glob(os.path.join(bundled, "libleptonica*.so*")))
    paths += [p for p in (ctypes.util.find_library(n) for n in ("leptonica", "lept")) if p]
    for path in paths:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def _quiet_leptonica(tesserocr) -> None:
    """Leptonica's messages off: it prints lines such as "Error in boxClipToRectangle: box
    outside rectangle" straight to the process's stderr while Tesseract lays out an ordinary
    page (a band of a text page of bench/faces.py --graphics), which Tesseract then reads
    anyway; they say nothing a caller could act on and break the CLI's one-line output."""
    lib = _leptonica(tesserocr)
    if lib is not None and hasattr(lib, "setMsgSeverity"):
        lib.setMsgSeverity(_LEPTONICA_SEVERITY_NONE)


def clean_text(text: str) -> str:
    """Tesseract's text tidied: bidi marks dropped, no spaces between CJK characters, lines
    stripped, empty lines dropped."""
    text = _BIDI_MARKS.sub("", text)
    lines = [" ".join(_CJK_GAP.sub("", line).split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


# ----------------------------------------------------------------------------- geometry


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


def _text_with_line(text: str, words: list, gone: list, line: str, y: float) -> str:
    """`text` (its lines made of `words` in order) without the words `gone`, and with `line`
    put before the first of its lines that lies below `y`."""
    rows: list[tuple[list, float]] = []  # (words of each text line, its top)
    i = 0
    for row in text.splitlines():
        want, got, mine = len("".join(row.split())), 0, []
        while i < len(words) and got < want:
            got += len("".join(words[i].text.split()))
            mine.append(words[i])
            i += 1
        rows.append((mine, min((w.box[1] for w in mine), default=0)))
    out, placed = [], False
    for mine, top in rows:
        if not placed and top > y:
            out.append(line)
            placed = True
        kept = [w.text for w in mine if w not in gone]
        if kept:
            out.append(" ".join(kept))
    if not placed:
        out.append(line)
    return clean_text("\n".join(out))


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


# ----------------------------------------------------------------------------- engine


class OcrEngine:
    """Tesseract with orientation, skew, contrast and script handled (see the module docstring).
    One engine serves many threads: a Tesseract instance is used by one thread at a time, and
    kept for the next reading (loading a language's model costs far more than a page)."""

    def __init__(self, config: OcrConfig | None = None):
        self.config = config or OcrConfig()
        self._tess = _tesserocr()
        cfg = self.config
        wanted = (*cfg.languages, *cfg.vertical_languages, *cfg.refine.values())
        wanted += (cfg.traditional,) if cfg.traditional else ()
        self.tessdata = find_tessdata(tuple(dict.fromkeys(wanted)), cfg.tessdata)
        if cfg.traditional:
            try:  # refused here, in one line, not image by image
                _opencc()
            except ImportError as exc:
                raise OcrUnavailable(
                    f"OpenCC cannot be imported ({exc}), which telling Traditional Chinese "
                    "pages from Simplified ones needs: `make bootstrap` (pip install opencc), or "
                    "OcrConfig(traditional=None) / `refinery images ocr --no-traditional`"
                ) from None
        self._lid = None  # lid.176, loaded when a reading first asks for it (`refine`)
        self._free: dict[str, list] = {}
        self._lock = threading.Lock()
        self._read_memo = threading.local()  # this thread's `read`: its recognitions so far
        self.version = self._tess.tesseract_version().split()[1]

    @contextlib.contextmanager
    def _api(self, lang: str):
        """A Tesseract instance of `lang` for this thread alone while the block runs."""
        with self._lock:
            free = self._free.setdefault(lang, [])
            api = free.pop() if free else None
        if api is None:
            t = self._tess
            psm = t.PSM.OSD_ONLY if lang == "osd" else t.PSM.AUTO
            api = t.PyTessBaseAPI(path=self.tessdata, lang=lang, psm=psm)
        try:
            yield api
        finally:
            api.Clear()
            with self._lock:
                self._free[lang].append(api)

    def _osd(self, gray: Image.Image) -> tuple[int, bool, str | None]:
        """(degrees to turn counter-clockwise to make it upright, whether OSD is sure of it,
        script or None)."""
        with self._api("osd") as api:
            api.SetImage(gray)
            try:
                r = api.DetectOrientationScript()
            except RuntimeError:
                return 0, False, None
        if not r:
            return 0, False, None
        turn = int(r["orient_deg"]) % 360
        return turn, r["orient_conf"] >= self.config.osd_min_conf, r.get("script_name")

    def _recognise(
        self, gray: Image.Image, lang: str, column: bool | str = False, line: bool = False
    ) -> tuple[str, list[Word], float]:
        """(text, words in the worked copy's pixels, character-weighted confidence); `column`:
        the page read as one column of lines (Tesseract's PSM 4), not laid out by Tesseract,
        or, `_BLOCK`, as one block of lines (PSM 6); `line`: read as one line of text (PSM 7:
        a line cut out of a page).

        Within one `read`, the same pixels in the same model and mode are recognised once: where
        OSD names a wrong script unsure, each way up is read in its script and rivals, then in
        every language, which read those again (a blurred Korean page: 10 of 34 recognitions,
        1.2 of 4.2 s)."""
        seen = getattr(self._read_memo, "seen", None)
        key = None
        if seen is not None:
            digest = hashlib.blake2b(gray.tobytes(), digest_size=16).digest()
            key = (digest, gray.size, gray.mode, lang, column, line)
            if key in seen:
                return seen[key]
        got = self._recognise_page(gray, lang, column, line)
        if key is not None:
            seen[key] = got
        return got

    def _recognise_page(
        self, gray: Image.Image, lang: str, column: bool | str = False, line: bool = False
    ) -> tuple[str, list[Word], float]:
        """`_recognise`'s recognition itself."""
        with self._api(lang) as api:
            chars = lang in (_SIMPLIFIED, self.config.traditional)
            if not column and not line:
                return self._recognise_with(api, gray, chars)
            psm = self._tess.PSM
            mode = psm.SINGLE_BLOCK if column == _BLOCK else psm.SINGLE_COLUMN
            api.SetPageSegMode(psm.SINGLE_LINE if line else mode)
            try:
                return self._recognise_with(api, gray, chars)
            finally:
                api.SetPageSegMode(self._tess.PSM.AUTO)

    def _recognise_with(
        self, api, gray: Image.Image, chars: bool = False
    ) -> tuple[str, list[Word], float]:
        """`chars`: each word also gets its characters' confidences (Word.chars)."""
        t = self._tess
        api.SetImage(gray)
        api.Recognize()
        level = t.RIL.WORD
        it = api.GetIterator()
        read: list[tuple[str, str, float, tuple, int]] = []  # (raw, text, conf, box, line)
        line_no = -1
        for w in t.iterate_level(it, level) if it is not None else ():
            try:
                raw = w.GetUTF8Text(level) or ""
            except RuntimeError:  # an empty block: no text there
                continue
            if w.IsAtBeginningOf(t.RIL.TEXTLINE) or line_no < 0:
                line_no += 1
            conf = max(0.0, w.Confidence(level)) / 100
            read.append((raw, clean_text(raw), conf, w.BoundingBox(level), line_no))
        kept = self._kept_words(read)
        words: list[Word] = []
        lines: list[list[str]] = []
        raws: list[tuple[str, int | None]] = []  # every word as read, and its index in `words`
        last_line = None
        for (raw, text, conf, box, line), keep in zip(read, kept, strict=True):
            if not keep:
                raws.append((raw, None))
                continue
            if line != last_line:
                lines.append([])
                last_line = line
            lines[-1].append(text)
            raws.append((raw, len(words)))
            words.append(Word(text, conf, box))
        if chars and words:
            words = self._with_chars(api, raws, words)
        if any(_RTL.search(w.text) for w in words):  # the iterator gives RTL words backwards
            page = clean_text(api.GetUTF8Text())
            flip = {w.text for w in words if _RTL.search(w.text) and w.text[::-1] in page}
            words = [Word(w.text[::-1] if w.text in flip else w.text, w.conf, w.box) for w in words]
            lines = [[x[::-1] if x in flip else x for x in line] for line in lines]
        # reading order: Tesseract's blocks, lines and words (right to left for Arabic)
        text = clean_text("\n".join(" ".join(line) for line in lines if line))
        # the page's confidence, which decides what else is tried, is its sure words' as before:
        # the unsure words kept by their lines (`_kept_words`) add characters, not doubt
        return text, words, _char_conf(self._counted(words))

    def _kept_words(self, read: list[tuple[str, str, float, tuple, int]]) -> list[bool]:
        """Which words of a recognition (raw, text, conf, box, line) are kept: those of
        `min_word_conf` or more, and, under it, a word with a letter or digit on a line of
        `_CONTEXT_WORDS` or more sure words (`sure_conf`), most of its words sure. Tesseract's
        word confidence is its least sure character's, and one word of a clean line can read
        right at 0.19 ("histoire." on a 22 px serif page enlarged x1.8455; 0.96 at x1.84 and
        x1.85); stray marks and false text in a photograph stand on unsure lines."""
        floor, sure = self.config.min_word_conf, self.config.sure_conf
        on_line: dict[int, list[float]] = {}
        for _raw, text, conf, _box, line in read:
            if text:
                on_line.setdefault(line, []).append(conf)
        kept = []
        for _raw, text, conf, _box, line in read:
            if not text:
                kept.append(False)
                continue
            confs = on_line[line]
            n_sure = sum(c >= sure for c in confs)
            context = n_sure >= _CONTEXT_WORDS and 2 * n_sure > len(confs)
            kept.append(conf >= floor or (context and any(c.isalnum() for c in text)))
        return kept

    def _with_chars(self, api, raws: list, words: list[Word]) -> list[Word]:
        """`words` with their characters' confidences: the page's symbols, in reading order,
        split among the words as read (`raws`: each word's text and index in `words`)."""
        t = self._tess
        level = t.RIL.SYMBOL
        symbols: list[tuple[str, float]] = []
        it = api.GetIterator()
        for sym in t.iterate_level(it, level) if it is not None else ():
            try:
                text = sym.GetUTF8Text(level) or ""
            except RuntimeError:
                continue
            symbols.append((text, max(0.0, sym.Confidence(level)) / 100))
        out, i = list(words), 0
        for raw, k in raws:
            read, confs = "", []
            while i < len(symbols) and len(read) < len(raw):
                read += symbols[i][0]
                confs.append(symbols[i][1])
                i += 1
            if read != raw:
                return words  # the symbols do not spell the words: no character confidences
            if k is not None and len(confs) == len(words[k].text):
                out[k] = Word(words[k].text, words[k].conf, words[k].box, tuple(confs))
        return out

    def read(self, image: Image.Image) -> OcrResult:
        """The text of one image (any mode, any size)."""
        start = time.perf_counter()
        cfg = self.config
        size = image.size
        gray = despeckle(image.convert("L"))
        low, high = np.percentile(np.asarray(gray), (1, 99))
        gray = ImageOps.autocontrast(gray, cutoff=1)
        if max(size) > cfg.max_side:  # worked on reduced; boxes scaled back
            gray.thumbnail((cfg.max_side, cfg.max_side), Image.LANCZOS)
        shrink = gray.size[0] / size[0]
        if np.asarray(gray).std() < 2:  # one flat colour: nothing to read
            return self._result("", [], 0.0, "", size, 0.0, [], 1.0, 1.0, start)
        if np.asarray(gray).mean() < _INVERT_BELOW:
            # light text on a dark ground (text is the minority): dark on light, as Tesseract's
            # models and OSD read best (36 rendered pages each on dark grounds, 20 and 28 px:
            # Chinese CER 0.056 -> 0.050, Arabic 0.103 -> 0.055, Latin 0 either way)
            gray = ImageOps.invert(gray)
        self._read_memo.seen = {}
        try:
            reading = self._read_page(gray)
            if high - low <= _FAINT_RANGE:
                # Faint text (its ink within a few grey levels of the ground), stretched: a
                # JPEG's noise around the strokes is stretched with it and breaks them. The page
                # smoothed is read too, the more confident characters kept (smoothing a clean
                # page loses detail instead, so it is not the only reading).
                reading = self._also(reading, gray.filter(ImageFilter.GaussianBlur(_FAINT_BLUR)))
            # text on an uneven ground (a banner's gradient, a shadowed photograph of a page):
            # one threshold takes the ground's dark side for ink and loses the text there; the
            # page with its ground divided out is read too
            reading = self._also(reading, flatten_ground(gray))
            if reading[0][3] < cfg.sure_conf:
                # white lettering outlined in black over a photograph (a meme, a video's
                # caption): grey, its fill is as light as the sky around it and its outline one
                # more dark shape; the near-white pixels alone, as ink, are read too
                reading = self._also(reading, bright_text(image, gray.size))
        finally:
            self._read_memo.seen = None
        (lang, text, words, conf), skew, steps, grow = reading
        return self._result(text, words, conf, lang, size, skew, steps, shrink, grow, start)

    def _also(self, reading, page: Image.Image | None):
        """`reading` (a `_read_page` result), or `page`'s where that has the more confident
        characters; `reading` when `page` is None."""
        if page is None:
            return reading
        other = self._read_page(page)
        return other if _weight(other[0]) > _weight(reading[0]) else reading

    def _read_page(self, gray: Image.Image):
        """Straighten, turn upright, enlarge and recognise a grey page, dark text on light:
        ((lang, text, words, conf), skew, steps, grow)."""
        cfg = self.config
        steps: list = []  # (degrees turned, size before, size after), before enlarging
        skew = skew_angle(gray, cfg.max_skew)  # first: OSD misjudges skewed lines
        if skew:
            turned = gray.rotate(skew, Image.BICUBIC, expand=True, fillcolor=_background(gray))
            steps.append((skew, gray.size, turned.size))
            gray = turned
        turn, sure, script = self._osd(gray)
        found = OSD_SCRIPT.get(script or "")
        lang = next((x for x in cfg.languages if found and LANG_SCRIPT.get(x) == found), None)
        turns = [turn] if sure else [0, turn] if turn else [0]
        if not sure and _lines_run_across(gray):  # text on its side that OSD could not place
            turns += [t for t in (90, 270) if t not in turns]
        # Several ways up, OSD naming the script: each read in its language (and rivals) first;
        # every language is tried on each only when none of those readings is sure (a script
        # OSD got wrong), not on each wrong way up whatever (turned Chinese: 1.8 s against 0.4)
        if len(turns) == 1:
            reads = [self._read_turned(gray, turns[0], lang)]
        elif lang is not None:
            reads = [self._read_turned(gray, t, lang, tries="rivals") for t in turns]
            if not any(self._sure_in_script(r[0]) for r in reads):
                reads = [self._read_turned(gray, t, lang) for t in turns]
        else:
            # no script from OSD: each language on every way up, in order, until one is sure
            # (not every language on each wrong way up: turned Arabic, 0.9 s against 0.3)
            reads = []
            for each in cfg.languages:
                got = [self._read_turned(gray, t, each, tries="one") for t in turns]
                if reads and not any(r[0][2] for r in reads):
                    if not _lined(gray) or not any(_script_letters(r[0]) for r in got):
                        break  # see _best_language: no line of text
                reads += got
                sure = [
                    (t, r)
                    for t, r in zip(turns, got, strict=True)
                    if r[0][3] >= cfg.sure_conf and _names_its_script(r[0])
                ]
                if sure:
                    reads += self._japanese_turned(gray, sure)
                    break
        # the most confident characters, a reading that names its script (`_names_its_script`)
        # first: a wrong way up read as digits outweighed 14 px Vietnamese read upright
        best, turned_steps, grow, again = max(reads, key=lambda r: _rank(r[0]))
        if best[2] and best[3] < cfg.sure_conf:
            # an unsure reading may be upside down, or OSD sure of a wrong turn (14 px serif
            # Latin: sure of 180, read upside down, every word wrong): the page as it is and
            # each other way up are read too, and one kept only when clearly more confident
            for other in dict.fromkeys((180, 0, (turn + 180) % 360)):
                if other in turns:
                    continue
                turns.append(other)
                got = self._read_turned(gray, other, lang)
                if _names_its_script(got[0]) >= _names_its_script(best) and _weight(
                    got[0]
                ) > 1.2 * _weight(best):
                    best, turned_steps, grow, again = got
        if again is not None:  # the way up kept: its lines read as one column, if need be
            best = again()
        columns = best[3] < cfg.sure_conf and cfg.vertical_languages
        if columns and _written_in_columns(gray):
            # text written in columns (Japanese, Chinese), which no horizontal reading was sure
            # of: read as it stands by the vertical models (horizontal models read a vertical
            # Japanese poster as Arabic: CER 1.4-2.0)
            vertical, vertical_grow = self._read_vertical(gray)
            sure = vertical[3] >= cfg.sure_conf > best[3]  # sure, where the rows' reading is not
            if sure or _weight(vertical) > _weight(best):
                best, turned_steps, grow = vertical, [], vertical_grow
        return best, skew, steps + turned_steps, grow

    def _japanese_turned(self, gray: Image.Image, sure: list) -> list:
        """For each (turn, reading) of `sure` that is chi_sim's under `_RIVAL_CONF`, the page
        read at that turn by jpn, where that reading is Japanese (`_kana_enough`, in its own
        script): chi_sim reads a 14 px Japanese page whose first line is mostly kanji at 0.76,
        its kana as Han look-alikes (see `_japanese`)."""
        if "jpn" not in self.config.languages:
            return []
        out = []
        for turn, got in sure:
            if got[0][0] == _SIMPLIFIED and got[0][3] < _RIVAL_CONF:
                other = self._read_turned(gray, turn, "jpn", tries="one")
                if _kana_enough(other[0]) and _in_own_script(other[0]):
                    out.append(other)
        return out

    def _enlarged(self, gray: Image.Image, runs: list[tuple[int, int]]):
        """(page, grow): small text (the median of `runs`, its lines or columns of ink) enlarged
        to the `line_px` Tesseract reads best, at most `max_upscale` times; text about that
        large or larger, or no runs: the page as it is, grow 1.0."""
        cfg = self.config
        size = float(np.median([b - a for a, b in runs])) if runs else None
        grow = min(cfg.max_upscale, cfg.line_px / size) if size else 1.0
        if grow <= 1.05:
            return gray, 1.0
        return gray.resize(
            (round(gray.width * grow), round(gray.height * grow)), Image.LANCZOS
        ), grow

    def _read_vertical(self, gray: Image.Image):
        """((lang, text, words, conf), grow): the page read by each vertical model, narrow
        columns enlarged to `line_px`, the most confident characters kept."""
        page, grow = self._enlarged(gray, ink_lines(gray.transpose(Image.Transpose.ROTATE_90)))
        best = None
        for lang in self.config.vertical_languages:
            got = (lang, *self._recognise(page, lang))
            if best is None or _weight(got) > _weight(best):
                best = got
        return best, grow

    def _read_turned(self, gray: Image.Image, turn: int, lang: str | None, tries: str = "all"):
        """Turn, enlarge small text, recognise (in `lang`, else the best language):
        ((lang, text, words, conf), steps, grow, again): `again`, when not None, reads the
        page as one column of lines and gives the better reading (called only for the way up
        kept: a wrong way up's lines are all lost); `tries`: see `_read`."""
        cfg = self.config
        steps: list = []
        if turn:
            turned = gray.rotate(turn, expand=True)
            steps.append((turn, gray.size, turned.size))
            gray = turned
        runs = ink_lines(gray)
        page, grow = self._enlarged(gray, runs)  # small text, to the line height read best
        best = self._read(page, lang, tries=tries)
        # lines of ink read are those under words of min_word_conf or more: an unsure word
        # kept by its line (`_kept_words`) may be a misreading over a lost line's ink
        sure_words = self._counted(best[2])
        missed = misses_a_line(runs, sure_words, grow) or misses_words(gray, runs, best[2], grow)
        if grow != 1.0 and (best[3] < cfg.sure_conf or missed):
            # an unsure reading of enlarged text, or one that left a line of ink unread: the
            # page as it is too (Tesseract's Arabic model reads enlarged text worse: 18 px Amiri
            # lost half its characters enlarged x1.5, 0.03 of them as it is; 28 px Chinese,
            # light on dark, enlarged x1.38, was read sure and without its third line), the more
            # confident characters kept
            plain = self._read(gray, best[0] if lang else None, tries=tries)
            if _weight(plain) > _weight(best):
                best, page, grow = plain, gray, 1.0
        unsure = LANG_SCRIPT.get(lang or "") in _GLYPH_SCRIPTS and best[3] < cfg.sure_conf
        large = grow <= _BLOCK_GROW and _lined(gray)
        if unsure and large and self._leaves_ink(gray, runs, best[2], grow):
            # Tesseract's page layout can take large CJK glyphs, a blob each, for something else
            # and leave lines unread (44 px Japanese: 0.64 as laid out, 0.89 as one block; 36-40
            # px Korean: CER 0.91 -> 0): a page OSD names in those scripts, of large text
            # (enlarged `_BLOCK_GROW` times at most), read unsure with ink left unread, is read
            # as one block of lines too, kept when sure and more confident
            block = self._read(page, best[0] if best[2] else lang, column=_BLOCK, tries="one")
            if block[3] >= cfg.sure_conf and _weight(block) > _weight(best):
                best = block
        lines = [x for x in ("".join(line.split()) for line in best[1].splitlines()) if x]
        sure_words = self._counted(best[2])
        lost = bool(lang) and (not best[2] or half_read_lines(gray, runs, sure_words, grow))
        shattered = _shattered(lines, runs)
        unread = bool(best[2]) and bool(unread_lines(gray, runs, best[2], grow, _LINE_READ))
        if not runs or not (shattered or lost or unread):
            return best, steps, grow, None

        def again():
            # Tesseract's page layout can shatter lines of ink into pieces on lines of their own
            # (clean 20-32 px Korean: a line and the others' glyphs one by one on 16 lines, the
            # same characters out of order) or lose them (nothing found on a page of three
            # lines, in every language), which reading the page as one column of lines does
            # not: read so, in OSD's language and its rivals (else the reading's, then each
            # while unsure); kept over a reading shattered into pieces when about as confident,
            # over one that lost lines (OSD sure of the script) when clearly more
            got = best
            if shattered or lost:
                column = self._read(page, lang or best[0], column=True)
                gain = _SHATTERED_GAIN if shattered else _COLUMN_GAIN
                got = column if _weight(column) > gain * _weight(best) else best
            return self._other_scripts(gray, page, runs, grow, got)

        return best, steps, grow, again

    def _counted(self, words: list[Word]) -> list[Word]:
        """The words of `min_word_conf` or more: those a page's confidence and its read lines
        count (an unsure word kept by its line, `_kept_words`, may be a misreading over a lost
        line's ink)."""
        return [w for w in words if w.conf >= self.config.min_word_conf]

    def _leaves_ink(self, gray: Image.Image, runs, words, grow: float) -> bool:
        """Whether words of min_word_conf or more leave a line of ink (`unread_lines`), or
        any ink, unread."""
        sure = self._counted(words)
        return not sure or bool(unread_lines(gray, runs, sure, grow))

    def _other_scripts(self, gray: Image.Image, page: Image.Image, runs, grow: float, got):
        """`got` with each line of ink it left unread (`unread_lines`, words under `_LINE_READ`
        not counted: a line in another script, which the page's model drops or reads as a few
        unsure look-alikes: an English sign's Chinese line, a Chinese page's English one) cut
        out and read as one line in each other language (the first sure one ends the search,
        chi_sim only when sure enough not to be Japanese, see `_japanese`), the most confident
        reading taking the line's place where it holds letters of its language's script and
        more confident characters than `got`'s words there. `got`'s language stays the
        page's."""
        if not got[2]:
            return got
        words, text = list(got[2]), got[1]
        others = [x for x in self.config.languages if x != got[0]]
        for a, b in unread_lines(gray, runs, got[2], grow, _LINE_READ)[:_OTHER_SCRIPT_LINES]:
            pad = max(2, round(_LINE_PAD * (b - a)))
            top = round(max(0, a - pad) * grow)
            crop = page.crop((0, top, page.width, round(min(gray.height, b + pad) * grow)))
            lo, hi = a * grow, b * grow
            there = [w for w in words if lo <= (w.box[1] + w.box[3]) / 2 <= hi]
            line = None
            for lang in others:
                cand = (lang, *self._recognise(crop, lang, line=True))
                if not _script_letters(cand) or not _in_own_script(cand):
                    continue
                if lang == "jpn" and not _kana_enough(cand):
                    continue
                if _weight(cand) > max(_weight(line) if line else 0.0, _words_weight(there)):
                    line = cand
                if cand[3] >= self.config.sure_conf and (
                    lang != _SIMPLIFIED or cand[3] >= _RIVAL_CONF
                ):
                    break
            if line is None:
                continue
            moved = [
                Word(w.text, w.conf, (w.box[0], w.box[1] + top, w.box[2], w.box[3] + top), w.chars)
                for w in line[2]
            ]
            text = _text_with_line(text, words, there, line[1], lo)
            words = [w for w in words if w not in there] + moved
        if text == got[1] and len(words) == len(got[2]):
            return got
        return got[0], text, words, _char_conf(words)

    def _read(
        self, gray: Image.Image, lang: str | None, column: bool | str = False, tries: str = "all"
    ):
        """(lang, text, words, conf) in `lang`, else (None, or an unsure reading in it: OSD's
        script may be wrong, as on 14 px Chinese it named Arabic with script confidence 0.0
        and every character came out an Arabic digit) the best language; `column`: read as
        one column of lines (`_recognise`). `tries`: "all" as said; "rivals": `lang` and its
        rival scripts' only; "one": `lang` only."""
        if lang is None:
            return self._refined(gray, self._best_language(gray, column=column), column)
        best = (lang, *self._recognise(gray, lang, column))
        for script in _rivals(best) if tries != "one" else ():
            # OSD names these scripts for one another's pages (Chinese pages Japanese or
            # Korean, English pages Cyrillic): the rival script's reading too, the more
            # confident characters kept
            rival = next((x for x in self.config.languages if LANG_SCRIPT.get(x) == script), None)
            if rival is not None:
                got = (rival, *self._recognise(gray, rival, column))
                if _weight(got) > _weight(best):
                    best = got
        if tries == "all" and not self._sure_in_script(best):
            # unsure, or sure of another script's letters (chi_sim reads Latin letters: 14 px
            # Turkish, which OSD named Han, at 0.80): each other language too
            other = self._best_language(gray, skip=lang, column=column)
            own = (_in_own_script(other), _weight(other)) if other is not None else None
            if own is not None and own > (_in_own_script(best), _weight(best)):
                best = other
        return self._refined(gray, best, column)

    def _sure_in_script(self, got) -> bool:
        """Whether a reading is sure (`sure_conf`) and its letters are of its model's script."""
        return got[3] >= self.config.sure_conf and _in_own_script(got)

    def _refined(self, gray: Image.Image, got, column: bool = False):
        """`got`, or the page read again in the model of the language lid.176 names its text
        (`OcrConfig.refine`), when that reading is more confident, or (a Simplified Chinese
        reading) in the Traditional model, when `_traditional` says the page is so written."""
        got = self._traditional(gray, got, column)
        refine = self.config.refine
        if got is None or not refine or got[0] in refine.values():
            return got
        if sum(c.isalpha() for c in got[1]) < _REFINE_LETTERS:
            return got
        if self._lid is None:
            from common.langid import LanguageIdentifier

            self._lid = LanguageIdentifier()
        model = refine.get(self._lid.predict(got[1])[0])
        if model is None:
            return got
        again = (model, *self._recognise(gray, model, column))
        return again if _weight(again) > _weight(got) else got

    def _traditional(self, gray: Image.Image, got, column: bool = False):
        """`got`, or, for a sure chi_sim reading of `_TRADITIONAL_CHARS` Han characters or more,
        the page's reading in `OcrConfig.traditional` when the characters the two readings give
        in different forms (`traditional_margins`) are more confident in that one."""
        model = self.config.traditional
        if not model or got is None or got[0] != _SIMPLIFIED or got[3] < self.config.sure_conf:
            return got
        if len(_SCRIPT_LETTERS["Han"].findall(got[1])) < _TRADITIONAL_CHARS:
            return got
        again = (model, *self._recognise(gray, model, column))
        # each margin clipped: one character a model was unsure of (chi_sim's 0.14 on a 筷 it
        # misread) would outweigh every other
        margins = [
            max(-_TRADITIONAL_CLIP, min(_TRADITIONAL_CLIP, m))
            for m in traditional_margins(got[2], again[2])
        ]
        more = sum(m for m in margins if m > 0)
        less = -sum(m for m in margins if m < 0)
        if len(margins) >= _TRADITIONAL_PAIRS and more > _TRADITIONAL_RATIO * less:
            if sum(margins) / len(margins) > _TRADITIONAL_MARGIN:
                return again
        if len(margins) >= _TRADITIONAL_PAIRS and again[3] >= got[3] + _TRADITIONAL_GAIN:
            return again  # far more confident on the whole page (speckled, shaded pages)
        return got

    def _best_language(self, gray: Image.Image, skip: str | None = None, column: bool = False):
        """(lang, text, words, conf): each language (but `skip`) in turn, the first sure one
        in its own script kept, else the most confident characters, a reading in its model's
        script before one that is not (a model sure of another script's text reads it as its
        own look-alikes: 16 px Russian, light on dark, read by jpn as "3a6oTbTeCb O CBOeM" at
        0.87); when the first finds no word at all and the second no letters of its own
        script, the page has no text line to read. None when no language is left to try."""
        best = None
        for i, lang in enumerate(x for x in self.config.languages if x != skip):
            # the first language found no word: the page has no line of text unless its ink
            # stands in lines and the second language reads letters of its script there (the
            # Latin-script model finds no word in blurred Chinese, which chi_sim reads whole)
            if i == 1 and not best[2] and not _lined(gray):
                break
            got = (lang, *self._recognise(gray, lang, column))
            if i == 1 and not best[2] and not _script_letters(got):
                break
            own = _in_own_script(got)
            if best is None or (own, *_rank(got)) > (_in_own_script(best), *_rank(best)):
                best = got
            if own and got[3] >= self.config.sure_conf and _names_its_script(got):
                if got[3] >= _RIVAL_CONF or not _WEAK_RIVALS.get(LANG_SCRIPT.get(lang, "")):
                    if lang == _SIMPLIFIED and got[3] < _RIVAL_CONF and best is got:
                        best = self._japanese(gray, got, column)
                    break
        return best

    def _japanese(self, gray: Image.Image, got, column: bool = False):
        """`got`, a chi_sim reading under `_RIVAL_CONF`, or the page's jpn reading where that
        has more confident characters: chi_sim reads blurred Japanese at 0.76 (the kana as Han
        look-alikes, CER 1.14), and jpn then reads it at 0.95 with twice the weight; on Chinese
        pages, Simplified or Traditional, jpn's weight stays under chi_sim's (0.57-0.83 of it
        on 40 rendered pages, five variants), but not on every one (a Traditional page of
        香港的電車), so a jpn reading must also be Japanese: a share of its letters kana."""
        if "jpn" not in self.config.languages:
            return got
        other = ("jpn", *self._recognise(gray, "jpn", column))
        if not _kana_enough(other) or not _in_own_script(other):
            return got  # no Japanese without kana: jpn reads a Traditional page's Han as its own
        return other if _weight(other) > _weight(got) else got

    def _result(self, text, words, conf, lang, size, skew, steps, shrink, grow, start):
        """Boxes of the enlarged, turned copy mapped back to the original image's pixels."""
        mapped = [
            Word(w.text, round(w.conf, 4), _map_box([v / grow for v in w.box], steps, shrink, size))
            for w in words
        ]
        turn_total = sum(a for a, _, _ in steps if a in (90, 180, 270))
        return OcrResult(
            text=text,
            language=ISO.get(lang, "und") if text else "und",
            script=LANG_SCRIPT.get(lang, "") if text else "",
            tesseract_lang=lang if text else "",
            confidence=round(conf, 4),
            text_share=round(text_share([w.box for w in mapped], size), 4),
            words=mapped,
            rotation=turn_total % 360,
            skew=skew,
            seconds=time.perf_counter() - start,
        )


# A page where the first language finds no word is read by the second (chi_sim): kept as text
# only when that reading is this confident (a flat scene's shapes read as 早早 at 0.40).
_SECOND_LOOK_CONF = 0.6
# `column` of _recognise and _read: the page read as one block of lines (Tesseract's PSM 6).
_BLOCK = "block"
# Text enlarged at most this much is read as one block where its reading is unsure (large
# glyphs); smaller text is not (turned 14-22 px pages: 40% more CPU for no better reading).
_BLOCK_GROW = 1.25
_GLYPH_SCRIPTS = ("Han", "Japanese", "Korean")
# Ink along a line this many line heights wide, under no word, is words the reading missed.
_MISSED_WIDTH = 2.0
# A word under min_word_conf is kept on a line of this many sure words or more (_kept_words).
_CONTEXT_WORDS = 2


def _lined(gray: Image.Image) -> bool:
    """Whether the page's ink stands in lines (`ink_lines`, across the page or down it) that
    leave a fifth of its rows (columns) blank, as text does; a photograph's ink fills them."""
    for page in (gray, gray.transpose(Image.Transpose.ROTATE_90)):  # lines across, or down
        runs = ink_lines(page)
        if runs and sum(b - a for a, b in runs) <= 0.8 * page.height:
            return True
    return False


def _rank(got) -> tuple[bool, float]:
    """A reading's rank among readings of one page: whether it names its script, then its
    confident characters (`_weight`)."""
    return _names_its_script(got), _weight(got)


def _names_its_script(got) -> bool:
    """Whether a reading of two words or more is letters of its model's script for a third or
    more of its characters (white space aside), two at least: a sure reading of digits and
    marks does not tell the page's script (the Arabic model read 80 px Korean's first line as
    "3-022 - 2 8 0|" at 0.78, with one letter, and Korean was never tried)."""
    if len(got[2]) < 2:
        return False
    letters = _SCRIPT_LETTERS.get(LANG_SCRIPT.get(got[0], ""))
    chars = "".join(got[1].split())
    if letters is None:
        own = sum(c.isalpha() for c in chars)
    else:
        own = len(letters.findall(chars))
    return own >= 2 and 3 * own >= len(chars)


def _script_letters(got) -> bool:
    """Whether a reading holds two letters or more of its model's script (any letters, for a
    language of no known script), read with confidence `_SECOND_LOOK_CONF` or more."""
    if got[3] < _SECOND_LOOK_CONF:
        return False
    letters = _SCRIPT_LETTERS.get(LANG_SCRIPT.get(got[0], ""))
    if letters is None:
        return sum(c.isalpha() for c in got[1]) >= 2
    return len(letters.findall(got[1])) >= 2


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
    lone, `_IMPULSE_STEP` levels darker or lighter than every one of their 8 neighbours) with its
    speckles, and only those, replaced by the median of the 3x3 around them (a switching median:
    strokes a pixel wide are kept, which a plain median filter erodes); any other page as it is.
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
    if lone.mean() < _IMPULSE_SHARE:
        return gray
    for _ in range(2):
        a = np.where(_speckles(a), cv2.medianBlur(a, 3), a)
    return Image.fromarray(np.ascontiguousarray(a, dtype=np.uint8))


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


# The letters of each script a reading's model may be trusted in (see _in_own_script).
_SCRIPT_LETTERS = {
    "Latin": re.compile("[A-Za-z\u00c0-\u024f\u1e00-\u1eff]"),
    "Han": re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"),
    "Japanese": re.compile("[\u3041-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"),
    "Korean": re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3\u4e00-\u9fff]"),
    "Cyrillic": re.compile("[\u0400-\u052f]"),
    "Greek": re.compile("[\u0370-\u03ff\u1f00-\u1fff]"),
    "Arabic": re.compile("[\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff]"),
}


@functools.cache
def _opencc():
    """OpenCC's Simplified -> Traditional and Traditional -> Simplified converters, made once."""
    import opencc

    return opencc.OpenCC("s2t.json"), opencc.OpenCC("t2s.json")


def variant_forms(simplified: str, traditional: str) -> bool:
    """Whether two characters are one character's Simplified and Traditional forms (OpenCC's
    character tables either way: 发 -> 發, and 髮 -> 发)."""
    if simplified == traditional:
        return False
    s2t, t2s = _opencc()
    return t2s.convert(traditional) == simplified or s2t.convert(simplified) == traditional


def traditional_margins(simplified: list[Word], traditional: list[Word]) -> list[float]:
    """The two readings' characters aligned (difflib, over their words' characters that have
    confidences); for each place where one reads a Simplified character and the other its
    Traditional form, the Traditional model's confidence less the Simplified model's."""
    import difflib

    def flat(words: list[Word]) -> tuple[str, list[float]]:
        kept = [w for w in words if w.chars]
        return "".join(w.text for w in kept), [c for w in kept for c in w.chars]

    (a, ca), (b, cb) = flat(simplified), flat(traditional)
    margins = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "replace" and i2 - i1 == j2 - j1:
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                if variant_forms(a[i], b[j]):
                    margins.append(cb[j] - ca[i])
    return margins


def _in_own_script(got) -> bool:
    """Whether half or more of a reading's letters are of its model's script (True for a
    language of no known script, or a reading without letters)."""
    letters = _SCRIPT_LETTERS.get(LANG_SCRIPT.get(got[0], ""))
    total = sum(c.isalpha() for c in got[1])
    return letters is None or not total or len(letters.findall(got[1])) >= 0.5 * total


def _weight(got) -> float:
    """Confident characters of a reading (lang, text, words, conf): see `_words_weight`."""
    return _words_weight(got[2])


def _words_weight(words) -> float:
    """Confident characters: the sum over words of confidence x length."""
    return sum(w.conf * len(w.text) for w in words)


def _char_conf(words) -> float:
    """The words' confidence, weighted by their characters (0 without any)."""
    n = sum(len(w.text) for w in words)
    return _words_weight(words) / n if n else 0.0


# A page whose 1st to 99th grey percentiles lie this close is faint: it is read smoothed too,
# by a Gaussian blur of this radius (faint JPEG text, 14-28 px, ink 10-20 levels from the ground:
# CER Latin 0.092 -> 0.014, Chinese 0.306 -> 0.209, Arabic 0.437 -> 0.223; the same pages
# without JPEG 0.000, 0.010, 0.035 -> 0.000, 0.006, 0.019).
_FAINT_RANGE = 24
# Impulse noise (despeckle): lone pixels this many grey levels past all their neighbours, on this
# share of the page or more (clean rendered pages 0-0.001; speckled 0.5% of pixels, 0.002).
_IMPULSE_STEP = 64
_IMPULSE_SHARE = 0.002
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
_FAINT_BLUR = 1.2
# A page read as one column is kept over Tesseract's layout when this confident: over a
# reading that lost lines, clearly more; over a shattered one (the same glyphs out of order),
# about as confident. A shattered reading's median line has at most _SHATTERED_CHARS characters.
_COLUMN_GAIN = 1.2
_REFINE_LETTERS = 10  # letters a reading needs before lid.176 names its language (`refine`)
_SHATTERED_GAIN = 0.9
_SHATTERED_CHARS = 6
# Lines of ink a reading left unread that are read on their own in every language, at most
# (`_other_scripts`: a line in another script).
_OTHER_SCRIPT_LINES = 6
_LINE_READ = 0.6  # a line covered only by words less confident than this is unread there
_LINE_PAD = 0.35  # a line read on its own is cut out with this many of its heights above and below
_INVERT_BELOW = 128  # mean grey level under which the page is light text on a dark ground
# Traditional Chinese (OcrConfig.traditional): a sure chi_sim reading of _TRADITIONAL_CHARS Han
# characters or more is read again in the Traditional model (both keep their characters'
# confidences); that reading is kept when the two give _TRADITIONAL_PAIRS characters or more in
# different forms, and there the Traditional model is more confident: by _TRADITIONAL_MARGIN on
# average, and its gains outweigh its losses _TRADITIONAL_RATIO times, each margin clipped to
# _TRADITIONAL_CLIP. On 800 rendered pages (lingua-py's Chinese sentences, three lines of 14-22
# characters, Simplified and, through OpenCC's tables, Traditional; WenQuanYi Micro Hei, Noto
# Sans and Serif CJK, AR PL UMing and UKai; 20-32 px; plain and JPEG q40; a /tmp probe), 369 of
# 400 Traditional pages went to chi_tra and none of the 400 Simplified ones.
_SIMPLIFIED = "chi_sim"  # the model whose sure readings are checked for Traditional pages
_TRADITIONAL_CHARS = 6
_TRADITIONAL_PAIRS = 3
# ... or when its reading is _TRADITIONAL_GAIN more confident on the whole (speckled, shaded or
# blurred pages, where the variant characters' margins are mixed): on 150 Simplified pages of
# lingua-py's sentences (24 px; upright, gradient, speckled, blurred, faint) no reading went to
# chi_tra for it; on their 150 Traditional conversions 4 more did (CER 0.191 -> 0.184).
_TRADITIONAL_GAIN = 0.06
_TRADITIONAL_MARGIN = 0.005
_TRADITIONAL_RATIO = 4.0
_TRADITIONAL_CLIP = 0.03


def _background(gray: Image.Image) -> int:
    a = np.asarray(gray)
    return int(np.median(np.concatenate([a[0], a[-1], a[:, 0], a[:, -1]])))
