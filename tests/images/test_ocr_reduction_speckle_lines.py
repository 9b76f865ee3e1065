"""OCR (crawlers/images/ocr.py, ocr_page.py) of pages the engine once read worse than plain
Tesseract: long strips and tall receipts of small text, reduced to 2400 px a side before reading;
clean small serif text despeckled as if its anti-aliased strokes were noise; a line of the page's
own script that Tesseract's layout dropped, re-read in every language but the page's."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from crawlers.images.ocr import OcrConfig, OcrEngine
from crawlers.images.ocr_page import despeckle
from tests.images.ocr_render import FONTS, char_error_rate, missing_fonts, render

pytestmark = pytest.mark.timeout(120)

SERIF = "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf"  # Chromium's fonts
_LINES = [
    "The committee approved the budget on Monday",
    "after a long debate about school funding",
    "and the new library opens next spring.",
]
_UNIT = "Breaking news: the river bridge will stay closed until further notice."


@pytest.fixture(scope="module")
def engine():
    assert not missing_fonts(), f"fonts missing: {missing_fonts()}; run `make bootstrap`"
    return OcrEngine()


def _strip(width: int, size: int) -> tuple[Image.Image, str]:
    """One line of `size` px DejaVu Sans across a strip `width` px wide, 120 px tall."""
    font = ImageFont.truetype(FONTS["latin"], size)
    text = _UNIT
    while font.getlength(text + "  " + _UNIT) < width - 40:
        text += "  " + _UNIT
    im = Image.new("L", (width, 120), 255)
    ImageDraw.Draw(im).text((20, 50), text, font=font, fill=0)
    return im, text


def _receipt(height: int, lines: int, size: int) -> tuple[Image.Image, str]:
    """`lines` lines of `size` px text spread down a page 320 px wide and `height` tall."""
    font = ImageFont.truetype(FONTS["latin"], size)
    rows = [f"Item {i:03d} fresh milk carton x {1.25 * (i % 9 + 1):.2f}" for i in range(lines)]
    im = Image.new("L", (320, height), 255)
    draw = ImageDraw.Draw(im)
    step = (height - 80) // lines
    for i, row in enumerate(rows):
        draw.text((12, 40 + i * step), row, font=font, fill=0)
    return im, "\n".join(rows)


@pytest.mark.parametrize(
    "page",
    [
        # before: reduced to 2400 px wide (x0.48, 7 px text): CER 0.99; plain Tesseract 0
        lambda: _strip(5000, 14),
        # before: reduced to 2400 px tall (x0.4, 6 px text): most lines lost
        lambda: _receipt(6000, 12, 14),
    ],
    ids=["strip_5000x120", "receipt_320x6000"],
)
def test_long_and_tall_pages_of_small_text_are_read_unreduced(engine, page):
    image, truth = page()
    got = engine.read(image)
    assert char_error_rate(truth, got.text) <= 0.03, got.text[:200]
    w, h = image.size
    assert all(
        0 <= x0 <= x1 <= w and 0 <= y0 <= y1 <= h
        for x0, y0, x1, y1 in (word.box for word in got.words)
    )


def test_a_large_page_is_reduced_by_its_pixels_but_its_text_kept_readable():
    """Reduced to `max_pixels`, unless that makes its text lines shorter than line_px / 2; never
    kept over `_TEXT_PIXELS` times `max_pixels`."""
    engine = OcrEngine(OcrConfig(max_pixels=200 * 200))

    def page(w: int, h: int, size: int) -> Image.Image:
        """Lines of `size` px text down a `w` x `h` page, 1.6 sizes apart."""
        im = Image.new("L", (w, h), 255)
        draw = ImageDraw.Draw(im)
        font = ImageFont.truetype(FONTS["latin"], size)
        for y in range(10, h - 2 * size, int(1.6 * size)):
            draw.text((10, y), "Quarterly report", font=font, fill=0)
        return im

    assert engine._reduction(page(180, 200, 20)) == 1.0  # under max_pixels: as it is
    text = page(600, 400, 20)  # x0.41 by pixels would make its ~20 px lines 8 px
    assert engine._reduction(text) == pytest.approx(np.sqrt(4 * 200 * 200 / (600 * 400)))
    small = page(300, 300, 14)  # kept whole: its lines need it and it is under the cap
    assert engine._reduction(small) == 1.0
    large = page(600, 400, 80)  # large text: reduced by its pixels alone
    assert engine._reduction(large) == pytest.approx(np.sqrt(200 * 200 / (600 * 400)))
    rng = np.random.default_rng(0)
    photo = Image.fromarray(rng.integers(0, 255, (400, 600), dtype=np.uint8))
    assert engine._reduction(photo) == pytest.approx(np.sqrt(200 * 200 / (600 * 400)))


def _serif_page(size: int) -> Image.Image:
    font = ImageFont.truetype(SERIF, size)
    w = max(int(font.getlength(line)) for line in _LINES) + 40
    im = Image.new("L", (w, int(len(_LINES) * size * 1.5) + 40), 255)
    draw = ImageDraw.Draw(im)
    for i, line in enumerate(_LINES):
        draw.text((20, 20 + i * size * 1.5), line, font=font, fill=0)
    return im


@pytest.mark.parametrize("size", [9, 10])
def test_clean_small_serif_text_is_not_despeckled(engine, size):
    """Anti-aliased 9-10 px serif strokes have 0.3% of their pixels lone (darker than each
    neighbour): the noise gate took them for speckles and erased them (CER 0.146 -> 0.816 at
    9 px, 0.019 -> 0.602 at 10 px). Only lone pixels on bare ground count now."""
    page = _serif_page(size)
    assert despeckle(page) is page
    got = engine.read(page)
    assert char_error_rate("\n".join(_LINES), got.text) <= 0.05, got.text


def test_speckles_on_the_ground_are_still_removed():
    page = render(_LINES[:2], "latin", size=18, speckle=0.005).convert("L")
    assert despeckle(page) is not page


def test_a_line_of_the_pages_own_script_its_layout_lost_is_read(engine):
    """Two lines of 32 px Amiri Arabic: Tesseract's layout kept the first, and the second was
    re-read as a line in every language but Arabic (CER 0.458; plain Tesseract 0.017)."""
    lines = ["وافقت اللجنة على الميزانية يوم الاثنين", "بعد نقاش طويل حول تمويل المدارس"]
    font = ImageFont.truetype(FONTS["arabic"], 32)
    widths = [int(font.getlength(line, direction="rtl")) for line in lines]
    im = Image.new("L", (max(widths) + 40, int(2 * 32 * 1.5) + 40), 255)
    draw = ImageDraw.Draw(im)
    for i, (line, lw) in enumerate(zip(lines, widths, strict=True)):
        draw.text((im.width - 20 - lw, 20 + i * 48), line, font=font, fill=0, direction="rtl")
    got = engine.read(im)
    assert char_error_rate("\n".join(lines), got.text) <= 0.05, got.text
    assert len(got.text.splitlines()) == 2 and got.language == "ar", got.text
