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
   confident characters kept; an unsure reading (below `sure_conf`; below 0.85 where OSD
   placed nothing: upside-down Latin reads as Latin look-alikes at 0.75-0.8), OSD sure or not,
   is also read as it is and each other way up (OSD is sometimes sure of a wrong turn on small
   text), one of those kept when clearly more confident;
4. enlarges small text (up to `max_upscale` times) to a line height of `line_px` pixels; text
   already that large is left as it is, and an unsure reading of enlarged text is compared with
   the page as it is (Tesseract's Arabic model reads enlarged text worse); an unsure reading of
   text lines over twice `line_px` tall is compared with the page shrunk (Tesseract's layout
   finds no word in large glyphs);
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

from crawlers.images.ocr_page import (
    _background,
    _lined,
    _lines_run_across,
    _map_box,
    _shattered,
    _text_lines,
    _written_in_columns,
    bright_text,
    despeckle,
    flatten_ground,
    glyph_line,
    half_read_lines,
    ink_lines,
    misses_a_line,
    misses_words,
    skew_angle,
    text_share,
    unread_lines,
)
from crawlers.images.ocr_scripts import (
    _RIVAL_CONF,
    _SCRIPT_LETTERS,
    _WEAK_RIVALS,
    LANG_SCRIPT,
    OSD_SCRIPT,
    _char_conf,
    _in_own_script,
    _kana_enough,
    _names_its_script,
    _opencc,
    _rank,
    _rivals,
    _script_letters,
    _spells_its_script,
    _weight,
    _words_weight,
    reading_labels,
    traditional_margins,
)

TESSDATA_DIRS = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
)


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
    line_px: float = Field(
        36.0,
        ge=10,
        description="small text is enlarged to this line height; large text read unsure is "
        "read shrunk to it too",
    )
    max_upscale: float = Field(3.0, ge=1.0, le=4.0, description="most small text is enlarged")
    max_pixels: int = Field(
        2400 * 2400,
        ge=200 * 200,
        description="a larger image is reduced to this many pixels (its shape kept), but not so "
        "far that its text lines' median height falls under line_px / 2 (a banner of 14 px "
        "text 8000 px wide, a receipt 7000 px tall, reduced to 2400 px a side: CER 0.999 and "
        "0.153, plain Tesseract 0); a page of small text is reduced to no more than "
        "`_TEXT_PIXELS` times this for that (cost)",
    )
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
        factor = self._reduction(gray)
        if factor < 1.0:  # worked on reduced; boxes scaled back
            reduced = (max(1, round(gray.width * factor)), max(1, round(gray.height * factor)))
            gray = gray.resize(reduced, Image.LANCZOS)
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

    def _reduction(self, gray: Image.Image) -> float:
        """The scale a large page is worked at: 1.0 up to `max_pixels`, else that many pixels,
        but not so far that the median height of its text lines (`ink_lines` across the page,
        or down it where those stand in lines and the rows do not) falls under `line_px` / 2:
        Tesseract reads no text 7 px tall, and a long strip or a tall receipt holds many pixels
        of small text. Kept large so, a page is still reduced to `_TEXT_PIXELS` times
        `max_pixels` (cost)."""
        cfg = self.config
        area = gray.width * gray.height
        if area <= cfg.max_pixels:
            return 1.0
        factor = math.sqrt(cfg.max_pixels / area)
        line = None
        for page in (gray, gray.transpose(Image.Transpose.ROTATE_90)):
            runs = _text_lines(ink_lines(page))
            if runs and sum(b - a for a, b in runs) <= _LINED_ROWS * page.height:
                line = float(np.median([b - a for a, b in runs]))
                break  # lines across the page, else down it
        if line is None:
            return factor  # no lines of text (a photograph): reduced to max_pixels
        floor = min(1.0, cfg.line_px / 2 / line, math.sqrt(_TEXT_PIXELS * cfg.max_pixels / area))
        return max(factor, floor)

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
        placed = sure or bool(script)  # OSD sure of the way up, or naming the script
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
        best, turned_steps, grow, again = max(
            reads, key=lambda r: (r[0][3] >= cfg.sure_conf and _names_its_script(r[0]), _rank(r[0]))
        )
        # upside down, Latin letters read as Latin look-alikes ("smoy Suruado" for "Opening
        # hours") at 0.75-0.8: where OSD placed nothing, a reading under _RIVAL_CONF is checked
        unsure = cfg.sure_conf if placed else max(cfg.sure_conf, _RIVAL_CONF)
        if best[2] and best[3] < unsure:
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

    def _shrunk(self, gray: Image.Image, runs: list[tuple[int, int]]):
        """(page, grow) of large text, shrunk until its shortest line is `line_px` (no line
        shrunk under it: a line's descenders make it a third taller than the next, and 56 px
        Amiri's lines shrunk by their median lost the shorter one); None unless its text lines'
        median (`_text_lines`: a line's diacritics on rows of their own left out) is over
        `_SHRINK_OVER` times `line_px`, and shrinking makes it 5% smaller or more."""
        heights = [b - a for a, b in _text_lines(runs)]
        if not heights or float(np.median(heights)) <= _SHRINK_OVER * self.config.line_px:
            return None
        grow = self.config.line_px / min(heights)
        if grow >= 0.95:
            return None
        size = (max(1, round(gray.width * grow)), max(1, round(gray.height * grow)))
        return gray.resize(size, Image.LANCZOS), grow

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
        elif best[3] < cfg.sure_conf:
            shrunk = self._shrunk(gray, runs)
            if shrunk is not None:
                # large text read unsure (Tesseract's page layout takes large glyphs for
                # something else: no word at all in 56-80 px Amiri Arabic or 80 px Korean, in
                # any language): the page shrunk too, the more confident characters kept. Not
                # before, nor for ink left unread: a sign's panels are tall runs of ink as well,
                # their edges ink under no word, and shrunk they read as "|" after its lines.
                small, factor = shrunk
                got = self._read(small, best[0] if lang else None, tries=tries)
                if _weight(got) > _weight(best):
                    best, page, grow = got, small, factor
        if not best[2] and runs and _lined(gray) and glyph_line(gray, runs):
            best, page, grow = self._wordless(gray, page, grow, runs, lang, tries, best)
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

    def _wordless(self, gray: Image.Image, page: Image.Image, grow: float, runs, lang, tries, best):
        """(reading, page, grow) of a page whose ink stands in a line of glyphs (`glyph_line`)
        but where no word at all was read: Tesseract's page layout found no text block in it.
        Seen on single lines: 28-72 px Chinese in WenQuanYi, 40-72 px Korean (widely spaced
        glyphs), and Arabic and Persian in DejaVu Sans at 28 and 56 px and in Amiri at 56 px,
        which Tesseract 5.5's ara model reads at no scale from 0.9x to 1.5x, in no page mode,
        but whole at 0.5x and 0.75x. The page is read as one block of lines (enlarged, and as
        it is), then shrunk (`_WORDLESS_SHRINK`, no line under `_WORDLESS_LINE` px), each in
        `lang` (else every language), until one reading is sure and spells its model's script
        (`_spelled`); else `best` as it was. Not the most confident of unsure readings: one of
        the page read upside down outweighed the right way up's (two lines of 22 px Korean)."""
        tries_of = [(page, grow, _BLOCK)] + ([(gray, 1.0, _BLOCK)] if grow != 1.0 else [])
        shortest = min(b - a for a, b in _text_lines(runs)) if runs else 0
        for factor in _WORDLESS_SHRINK:
            if shortest * factor >= _WORDLESS_LINE:
                size = (max(1, round(gray.width * factor)), max(1, round(gray.height * factor)))
                tries_of.append((gray.resize(size, Image.LANCZOS), factor, False))
        # every language when none is given (not _best_language's early end: the first finding
        # nothing and the second no letters of its script is what these pages do)
        langs = [lang] if lang else list(self.config.languages)
        for candidate, factor, column in tries_of:
            for each in langs:
                got = self._read(candidate, each, column=column, tries=tries if lang else "one")
                if got[2] and _in_own_script(got) and self._spelled(got):
                    return got, candidate, factor  # not a letter or two ("ざ 0|" at 0.82)
        return best, page, grow

    def _spelled(self, got) -> bool:
        """Whether a reading is sure and spells its model's script (`_spells_its_script`)."""
        return got[3] >= self.config.sure_conf and _spells_its_script(got)

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
        out and read as one line in each other language, first in the page's own where it
        read no sure word on that line (the first sure one ends the search; chi_sim, and the
        page's own, only when sure enough not to be a look-alike reading: `_RIVAL_CONF`), the
        most confident reading taking the line's place where it holds letters of its language's
        script and more confident characters than `got`'s words there. The page's own language
        too: Tesseract's layout drops a whole line of the page's own script (two lines of 32 px
        Amiri Arabic: the second lost, CER 0.458; read as a line, 0.017). `got`'s language
        stays the page's."""
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
            # the page's own model only on a line it left without a sure word (a line lost);
            # where it read words, the ink it left is no text of its script (a chart's bar
            # beside its label, read as a line: "Oooo Spring 120")
            lost = not any(w.conf >= _LINE_READ for w in there)
            for lang in [got[0], *others] if lost else others:
                cand = (lang, *self._recognise(crop, lang, line=True))
                if not _script_letters(cand) or not _in_own_script(cand):
                    continue
                if lang == "jpn" and not _kana_enough(cand):
                    continue
                if _weight(cand) > max(_weight(line) if line else 0.0, _words_weight(there)):
                    line = cand
                if cand[3] >= self.config.sure_conf and (
                    lang not in (_SIMPLIFIED, got[0]) or cand[3] >= _RIVAL_CONF
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
        language, script = reading_labels(lang, text)
        return OcrResult(
            text=text,
            language=language,
            script=script,
            tesseract_lang=lang if text else "",
            confidence=round(conf, 4),
            text_share=round(text_share([w.box for w in mapped], size), 4),
            words=mapped,
            rotation=turn_total % 360,
            skew=skew,
            seconds=time.perf_counter() - start,
        )


# `column` of _recognise and _read: the page read as one block of lines (Tesseract's PSM 6).
_BLOCK = "block"
# Text enlarged at most this much is read as one block where its reading is unsure (large
# glyphs); smaller text is not (turned 14-22 px pages: 40% more CPU for no better reading).
_BLOCK_GROW = 1.25
# A page where no word was read (`OcrEngine._wordless`): shrunk by these, lines kept this tall
_WORDLESS_SHRINK = (0.75, 0.5)
_WORDLESS_LINE = 12
_GLYPH_SCRIPTS = ("Han", "Japanese", "Korean")
# A word under min_word_conf is kept on a line of this many sure words or more (_kept_words).
_CONTEXT_WORDS = 2
# Text whose lines' median is taller than this many `line_px`, read unsure, is read shrunk too,
# its shortest line to `line_px` (`_shrunk`, `_read_turned`): Tesseract's page layout takes such
# glyphs for something else and returns no word at all (56-80 px Amiri Arabic and 80 px
# Korean, in every language), which it reads shrunk.
_SHRINK_OVER = 2.0


# A page over `max_pixels` whose text lines would be reduced under line_px / 2 is kept at up to
# this many times `max_pixels` (`OcrEngine._reduction`); lines of ink that fill no more than this
# share of its rows (or columns) are text lines (as `_lined` takes them).
_TEXT_PIXELS = 4.0
_LINED_ROWS = 0.8
# A page whose 1st to 99th grey percentiles lie this close is faint: it is read smoothed too,
# by a Gaussian blur of this radius (faint JPEG text, 14-28 px, ink 10-20 levels from the ground:
# CER Latin 0.092 -> 0.014, Chinese 0.306 -> 0.209, Arabic 0.437 -> 0.223; the same pages
# without JPEG 0.000, 0.010, 0.035 -> 0.000, 0.006, 0.019).
_FAINT_RANGE = 24
_FAINT_BLUR = 1.2
# A page read as one column is kept over Tesseract's layout when this confident: over a
# reading that lost lines, clearly more; over a shattered one (the same glyphs out of order),
# about as confident.
_COLUMN_GAIN = 1.2
_REFINE_LETTERS = 10  # letters a reading needs before lid.176 names its language (`refine`)
_SHATTERED_GAIN = 0.9
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
