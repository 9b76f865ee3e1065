"""Rendered text with its ground truth, for the OCR's tests and bench/ocr.py.

`render` draws lines of text in a font of the machine (DejaVu for Latin, Cyrillic and Greek,
WenQuanYi Micro Hei for Chinese, Japanese and Korean, Amiri for Arabic: Debian's
fonts-dejavu-core, fonts-wqy-microhei and fonts-hosny-amiri, installed by scripts/bootstrap.sh),
with Pillow's complex-text layout
(libraqm: Arabic letters joined, right to left). Variants turn it (a page on its side, upside
down, a small skew), fade it (grey on grey), set it on a photograph-like noisy background, blur
it, speckle it (salt and pepper) or darken its ground unevenly (a gradient).
`char_error_rate` is the edit distance between the truth and the reading, white space ignored
(Chinese is written without it), over the truth's length.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONTS = {
    "latin": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "cjk": "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "arabic": "/usr/share/fonts/opentype/fonts-hosny-amiri/Amiri-Regular.ttf",
    "japanese": "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "korean": "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "cyrillic": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "greek": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "traditional": "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
}
TEXTS = {
    "latin": [
        "Quarterly report: revenue grew 14% in March",
        "Open daily from 9am to 5pm, closed Sundays",
        "Platform 3 for trains to Lyon and Geneva",
    ],
    "cjk": [
        "北京市今天天气晴朗气温二十度",
        "请在入口处出示您的门票",
        "数据处理流程包括抓取和过滤",
    ],
    "arabic": [
        "مرحبا بكم في المكتبة العامة",
        "يفتح المتحف أبوابه كل يوم",
        "تقرير المبيعات للربع الأول",
    ],
    "japanese": [
        "東京の天気は明日から雨になるでしょう",
        "駅の近くに新しい図書館ができました",
        "会議は午後三時から始まります",
    ],
    "korean": [
        "서울의 날씨는 내일부터 비가 옵니다",
        "역 근처에 새로운 도서관이 생겼습니다",
        "오늘 회의는 오후 세 시에 시작합니다",
    ],
    "cyrillic": [
        "Поезд отправляется с третьей платформы",
        "Библиотека открыта до шести вечера",
        "Отчёт о продажах за первый квартал",
    ],
    "greek": [
        "Το τρένο φεύγει από την τρίτη αποβάθρα",
        "Η βιβλιοθήκη είναι ανοιχτή ως τις έξι",
        "Έκθεση πωλήσεων του πρώτου τριμήνου",
    ],
    "traditional": [  # Traditional Chinese (Taiwan, Hong Kong)
        "臺北市今天天氣晴朗氣溫二十度",
        "請在入口處出示您的門票",
        "數據處理流程包括抓取和過濾",
    ],
}
# Tesseract's language for each script: plain Tesseract is told it (an oracle the engine is not).
TESSERACT_LANG = {
    "latin": "eng",
    "cjk": "chi_sim",
    "arabic": "ara",
    "japanese": "jpn",
    "korean": "kor",
    "cyrillic": "Cyrillic",
    "greek": "Greek",
    "traditional": "chi_tra",
}
ISO = {"latin": "en", "cjk": "zh", "arabic": "ar", "japanese": "ja", "korean": "ko"}
ISO |= {"cyrillic": "ru", "greek": "el", "traditional": "zh"}
VARIANTS = {
    "upright": {},
    "skew7": {"angle": 7},
    "rot90": {"angle": 90},
    "rot180": {"angle": 180},
    "low_contrast": {"fg": (140, 140, 140), "bg": (178, 178, 178)},
    "noisy": {"noise": 40},
    "skew30": {"angle": 30},
    "rot120": {"angle": 120},
    "light_on_dark": {"fg": (235, 235, 235), "bg": (25, 25, 35)},
    "blurred": {"blur": 1.5},
    "speckled": {"speckle": 0.04},
    "gradient": {"shade": 0.55},
}


def missing_fonts() -> list[str]:
    """Font files of FONTS that are not on this machine."""
    return [f for f in FONTS.values() if not Path(f).is_file()]


def render(
    lines: list[str],
    script: str,
    *,
    size: int = 28,
    angle: float = 0,
    fg=(20, 20, 20),
    bg=(250, 250, 250),
    noise: int = 0,
    seed: int = 0,
    font: str | None = None,
    blur: float = 0,
    speckle: float = 0,
    shade: float = 0,
    leading: float = 1.8,
) -> Image.Image:
    """The lines drawn left-aligned (Arabic right-aligned) with margins, then turned by `angle`
    degrees counter-clockwise; `noise`: a blotchy background of that amplitude; `font`: a font
    file other than the script's (FONTS); `blur`: a Gaussian blur of that radius (an image
    scaled up from a small one); `speckle`: that share of the pixels set black or white, half
    each (salt and pepper: a fax, a dusty scan); `shade`: the ground darkened from the right
    edge to the left by that share (a banner's gradient; the ink is left as it is); `leading`:
    the distance between lines, in font sizes."""
    font = ImageFont.truetype(font or FONTS[script], size)
    widths = [int(font.getlength(line)) for line in lines]
    step = int(size * leading)
    w, h = max(widths) + 2 * size, len(lines) * step + size
    im = Image.new("RGB", (w, h), bg)
    if noise:
        rng = np.random.default_rng(seed)
        blotch = rng.normal(0, noise, (max(1, h // 16), max(1, w // 16), 3))
        layer = Image.fromarray(np.clip(128 + blotch, 0, 255).astype(np.uint8)).resize((w, h))
        im = Image.blend(im, layer, 0.5)
    draw = ImageDraw.Draw(im)
    for i, (line, lw) in enumerate(zip(lines, widths, strict=True)):
        x = w - size - lw if script == "arabic" else size
        draw.text((x, size // 2 + i * step), line, font=font, fill=fg)
    if shade:
        a = np.asarray(im).astype(np.float32)
        ground = np.abs(a - np.asarray(bg, np.float32)).max(axis=2, keepdims=True) < 40
        ramp = np.linspace(1 - shade, 1.0, a.shape[1], dtype=np.float32)[None, :, None]
        im = Image.fromarray(np.where(ground, a * ramp, a).clip(0, 255).astype(np.uint8))
    if angle:
        im = im.rotate(angle, expand=True, fillcolor=bg, resample=Image.BICUBIC)
    if blur:
        im = im.filter(ImageFilter.GaussianBlur(blur))
    if speckle:
        a = np.array(im)
        r = np.random.default_rng(seed).random(a.shape[:2])
        a[r < speckle / 2] = 0
        a[r > 1 - speckle / 2] = 255
        im = Image.fromarray(a)
    return im


def render_mixed(lines: list[tuple[str, str]], size: int = 28) -> Image.Image:
    """Lines each in its own script (`(text, script)`, each in its script's font; Arabic
    right-aligned): a bilingual sign, a Chinese poster's English line."""
    fonts = [ImageFont.truetype(FONTS[script], size) for _, script in lines]
    widths = [int(font.getlength(text)) for (text, _), font in zip(lines, fonts, strict=True)]
    step = int(size * 1.8)
    w, h = max(widths) + 2 * size, len(lines) * step + size
    im = Image.new("RGB", (w, h), (250, 250, 250))
    draw = ImageDraw.Draw(im)
    for i, ((text, script), font, lw) in enumerate(zip(lines, fonts, widths, strict=True)):
        x = w - size - lw if script == "arabic" else size
        draw.text((x, size // 2 + i * step), text, font=font, fill=(20, 20, 20))
    return im


def render_vertical(lines: list[str], script: str = "cjk", size: int = 28) -> Image.Image:
    """The lines written in columns, top to bottom, the first column on the right (Japanese and
    Chinese posters, signs and covers), a glyph every 1.1 sizes."""
    font = ImageFont.truetype(FONTS[script], size)
    step, column = int(size * 1.1), int(size * 1.8)
    w = len(lines) * column + 2 * size
    h = max(len(line) for line in lines) * step + 2 * size
    im = Image.new("RGB", (w, h), (250, 250, 250))
    draw = ImageDraw.Draw(im)
    for i, line in enumerate(lines):
        x = w - size - (i + 1) * column + (column - size) // 2
        for j, glyph in enumerate(line):
            draw.text((x, size + j * step), glyph, font=font, fill=(20, 20, 20))
    return im


def sample(script: str, variant: str, seed: int = 0) -> tuple[Image.Image, str]:
    """(image, its true text with lines joined by newlines) of one script and variant; seeds
    other than 0 draw two of the script's lines in a random order."""
    lines = list(TEXTS[script])
    if seed:
        lines = random.Random(seed).sample(lines, 2)
    return render(lines, script, seed=seed, **VARIANTS[variant]), "\n".join(lines)


def _distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def char_error_rate(truth: str, reading: str) -> float:
    """Edit distance over the truth's length, white space and bidi marks left out of both."""
    marks = dict.fromkeys(map(ord, "\u200e\u200f\u202a\u202b\u202c\u202d\u202e"))
    t, r = ("".join(s.translate(marks).split()) for s in (truth, reading))
    return _distance(t, r) / max(1, len(t))
