"""Text-rich images of the sample web: notices, posters, an infographic, a screenshot of a table
and a photographed sign, in English, French, Spanish, German, Chinese (Simplified, and a poster in
Traditional characters) and Japanese, placed in articles and a forum thread as sites place them
(after the lead paragraph, with alt text and a caption; in the first post of the thread, as its
poster attached it), each about its page's story.

They feed the OCR step (`refinery images ocr`): seven sit on pages a crawler may train on, two on
pages that opt out (magazin-de's robots.txt closes the site to the training token; a journal-fr
page says `<meta name="robots" content="noai">`), so their images never reach the OCR.

Each image is drawn with PIL from its text (`TextImage.lines`, the ground truth an OCR reading is
scored against) in WenQuanYi Micro Hei, the font scripts/bootstrap.sh installs
(fonts-wqy-microhei; it covers Latin, Han and kana). Nothing here draws from the web's seeded
RNG, so adding them leaves every other page and image as it was; the same font gives the same
bytes.
"""

from __future__ import annotations

import io
import random
import zlib
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from .builder import ref_expectation

if TYPE_CHECKING:
    from .builder import Builder
    from .model import Page

FONT_PATHS = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",  # Debian/Ubuntu fonts-wqy-microhei
    "/usr/share/fonts/wenquanyi/wqy-microhei/wqy-microhei.ttc",  # Fedora
)
FONT_FIX = "install fonts-wqy-microhei (`make bootstrap`, or apt-get install fonts-wqy-microhei)"


@dataclass(frozen=True)
class TextImage:
    """One text-rich image: where it sits, what it says, how it looks."""

    site: str
    host: str  # which page embeds it: "first" regular page of `page_type`, or a label ("noai")
    page_type: str  # article or forum
    src: str
    style: str  # notice, poster, infographic, screenshot, sign
    lang: str
    lines: tuple[str, ...]  # the text drawn, in reading order (title first)
    alt: str
    caption: str | None  # the <figcaption>, or None
    values: tuple[int, ...] = ()  # the infographic's bar values (drawn as its labels say)

    @property
    def text(self) -> str:
        """The rendered text, lines joined by newlines (what a perfect OCR reads)."""
        return "\n".join(self.lines)


TEXT_IMAGES: tuple[TextImage, ...] = (
    TextImage(
        "news-en",
        "first",
        "article",
        "/img/text/air-sensor-loans.png",
        "infographic",
        "en",
        (
            "Air sensor loans in 2024",
            "Kits lent per season",
            "Spring 120",
            "Summer 310",
            "Autumn 180",
        ),
        'Infographic "Air sensor loans in 2024": kits lent per season, most in summer',
        "Air-quality kits lent by the central library. Source: library records.",
        (120, 310, 180),
    ),
    TextImage(
        "journal-fr",
        "first",
        "article",
        "/img/text/affiche-fete-du-club.png",
        "notice",
        "fr",
        (
            "AVIS AUX SUPPORTERS",
            "Fête de la remontée",
            "Dimanche 6 avril à 15 h",
            "Stade municipal",
            "Buvette et musique",
        ),
        "Affiche du club annonçant la fête de la remontée au stade municipal",
        "L'affiche posée à l'entrée du stade.",
    ),
    TextImage(
        "journal-fr",
        "noai",
        "article",
        "/img/text/affiche-conference.png",
        "poster",
        "fr",
        ("CONFÉRENCE", "Écouter les dauphins", "Jeudi 10 avril à 18 h", "Musée de la mer"),
        "Affiche de la conférence sur les sifflements des dauphins au musée de la mer",
        "L'affiche de la conférence.",
    ),
    TextImage(
        "noticias-es",
        "first",
        "article",
        "/img/text/pabellon-rotulo.jpg",
        "sign",
        "es",
        ("PABELLÓN MUNICIPAL", "Club de Baloncesto", "Abierto de 9 a 22 h"),
        "Rótulo del pabellón municipal sobre la entrada",
        "La entrada del pabellón municipal, donde se jugó la final.",
    ),
    TextImage(
        "news-zh",
        "first",
        "article",
        "/img/text/bisai-tongzhi.png",
        "notice",
        "zh",
        ("比赛通知", "社区篮球联赛决赛", "本周六晚上七点", "地点 露天球场", "欢迎居民观看"),
        "社区篮球联赛决赛的比赛通知",
        "贴在球场入口的比赛通知。",
    ),
    TextImage(
        "news-zh",
        "first",
        "article",
        "/img/text/liuxingyu-guance.png",
        "poster",
        "zh",
        (
            "英仙座流星雨觀測活動",
            "市天文協會主辦",
            "八月十二日晚上十時集合",
            "地點 郊外山頂觀星臺",
            "請自備保暖衣物",
        ),
        "天文协会的流星雨观测活动海报",
        "天文协会张贴的观测活动海报，用的是繁体字。",
    ),
    TextImage(
        "forum-zh",
        "first",
        "forum",
        "/img/text/chongdian-jilu.png",
        "screenshot",
        "zh",
        (
            "充电测试记录",
            "充电器 时间 温度",
            "原装 2小时 35度",
            "旧线 4小时 41度",
            "快充 1小时 38度",
        ),
        "充电测试记录表的截图",
        None,
    ),
    TextImage(
        "blog-ja",
        "first",
        "article",
        "/img/text/drone-koshukai.png",
        "notice",
        "ja",
        (
            "ドローン講習会のお知らせ",
            "農協の会員の方へ",
            "四月十二日の午前十時から",
            "場所は公民館です",
            "機体の貸し出しもあります",
        ),
        "農協のドローン講習会のお知らせ",
        "公民館の掲示板に貼られたお知らせ。",
    ),
    TextImage(
        "magazin-de",
        "first",
        "article",
        "/img/text/honigmarkt-plakat.png",
        "poster",
        "de",
        (
            "HONIGMARKT 2025",
            "Imkerverein im Landkreis",
            "Samstag ab 9 Uhr am Rathaus",
            "Eintritt frei",
        ),
        "Plakat für den Honigmarkt 2025 des Imkervereins",
        "Der Imkerverein lädt zum Honigmarkt ein.",
    ),
)


@lru_cache(maxsize=1)
def font_path() -> str:
    """The font every text image is drawn in (FileNotFoundError, one line with the fix, else)."""
    for path in FONT_PATHS:
        if Path(path).is_file():
            return path
    raise FileNotFoundError(
        f"sample web text images: font WenQuanYi Micro Hei not found at {', '.join(FONT_PATHS)}: "
        f"{FONT_FIX}"
    )


@lru_cache(maxsize=16)
def _font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(font_path(), size, index=0)


def _centred(draw: ImageDraw.ImageDraw, y: int, text: str, size: int, fill, width: int) -> int:
    """Draw `text` centred at height y; return the y below it."""
    font = _font(size)
    x0, y0, x1, y1 = draw.textbbox((0, 0), text, font=font)
    draw.text(((width - (x1 - x0)) // 2 - x0, y - y0), text, font=font, fill=fill)
    return y + (y1 - y0)


def _notice(image: TextImage) -> Image.Image:
    """A printed notice: a red heading band, then the body lines on white paper, a thin frame."""
    w, h = 520, 40 + 64 + 46 * (len(image.lines) - 1) + 24
    im = Image.new("RGB", (w, h), (252, 251, 246))
    d = ImageDraw.Draw(im)
    d.rectangle((6, 6, w - 7, h - 7), outline=(60, 60, 60), width=2)
    d.rectangle((16, 16, w - 17, 16 + 64), fill=(176, 32, 36))
    _centred(d, 30, image.lines[0], 34, (255, 255, 255), w)
    y = 16 + 64 + 22
    for line in image.lines[1:]:
        _centred(d, y, line, 26, (25, 25, 25), w)
        y += 46
    return im


def _poster(image: TextImage) -> Image.Image:
    """An event poster: a dark blue field, a large yellow title, white lines, a band at the foot."""
    w, h = 480, 120 + 52 * (len(image.lines) - 1) + 70
    im = Image.new("RGB", (w, h), (24, 44, 96))
    d = ImageDraw.Draw(im)
    for i, (cx, r) in enumerate(((60, 70), (430, 90), (250, 40))):  # decoration, behind the text
        d.ellipse((cx - r, h - 40 - r, cx + r, h - 40 + r), fill=(34 + 8 * i, 60, 120))
    _centred(d, 36, image.lines[0], 40, (250, 210, 60), w)
    y = 120
    for line in image.lines[1:]:
        _centred(d, y, line, 28, (245, 245, 245), w)
        y += 52
    d.rectangle((0, h - 22, w, h), fill=(250, 210, 60))
    return im


def _infographic(image: TextImage) -> Image.Image:
    """A bar chart infographic: title, axis label, one labelled bar per value."""
    w, h = 560, 360
    im = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(im)
    _centred(d, 18, image.lines[0], 34, (20, 40, 80), w)
    d.text((24, 72), image.lines[1], font=_font(22), fill=(90, 90, 90))
    top, base, left = 110, 330, 40
    biggest = max(image.values)
    colours = ((84, 160, 90), (230, 150, 40), (190, 90, 50))
    for i, (label, value) in enumerate(zip(image.lines[2:], image.values, strict=True)):
        y = top + i * ((base - top) // len(image.values))
        length = int((w - left - 200) * value / biggest)
        d.rectangle((left, y, left + length, y + 40), fill=colours[i % len(colours)])
        d.text((left + length + 14, y + 4), label, font=_font(26), fill=(30, 30, 30))
    return im


def _screenshot(image: TextImage) -> Image.Image:
    """A screenshot of a table in a document window: grey title bar, a grid of cells."""
    rows = [line.split() for line in image.lines[1:]]
    cols = max(len(r) for r in rows)
    cell_w, cell_h = 150, 48
    w, h = 40 + cols * cell_w, 56 + 62 + cell_h * len(rows) + 24
    im = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(im)
    d.rectangle((0, 0, w, 34), fill=(222, 222, 226))
    for i, colour in enumerate(((236, 95, 87), (246, 190, 60), (98, 196, 84))):
        d.ellipse((12 + 22 * i, 11, 24 + 22 * i, 23), fill=colour)
    _centred(d, 56, image.lines[0], 32, (20, 20, 20), w)
    x0, y0 = 20, 56 + 62
    for r, cells in enumerate(rows):
        y = y0 + r * cell_h
        if r == 0:
            d.rectangle((x0, y, x0 + cols * cell_w, y + cell_h), fill=(226, 236, 250))
        for c, cell in enumerate(cells):
            x = x0 + c * cell_w
            d.rectangle((x, y, x + cell_w, y + cell_h), outline=(150, 150, 150))
            font = _font(26)
            bx0, by0, bx1, by1 = d.textbbox((0, 0), cell, font=font)
            d.text(
                (x + (cell_w - (bx1 - bx0)) // 2 - bx0, y + (cell_h - (by1 - by0)) // 2 - by0),
                cell,
                font=font,
                fill=(20, 20, 20),
            )
    return im


def _sign(image: TextImage) -> Image.Image:
    """A sign photographed from the street: a brick wall, a cream board painted with the name,
    the opening hours on a smaller plate, a little blur and sensor grain (seeded by the src)."""
    w, h = 600, 400
    rng = random.Random(image.src)
    im = Image.new("RGB", (w, h), (165, 92, 70))  # mortar
    d = ImageDraw.Draw(im)
    for row, y in enumerate(range(0, h, 22)):  # bricks in a running bond
        shift = 0 if row % 2 else 30
        for x in range(-shift, w, 60):
            tone = rng.randint(-18, 18)
            d.rectangle(
                (x + 2, y + 2, x + 58, y + 20), fill=(160 + tone, 86 + tone // 2, 62 + tone // 2)
            )
    d.rectangle((30, 60, w - 30, 200), fill=(240, 232, 205), outline=(200, 170, 90), width=5)
    _centred(d, 88, image.lines[0], 44, (28, 70, 50), w)
    _centred(d, 150, image.lines[1], 28, (28, 70, 50), w)
    d.rectangle((150, 250, w - 150, 310), fill=(240, 238, 228), outline=(90, 90, 90), width=2)
    _centred(d, 266, image.lines[2], 24, (30, 30, 30), w)
    im = im.filter(ImageFilter.GaussianBlur(0.6))
    grain = np.random.default_rng(zlib.crc32(image.src.encode())).normal(0, 4, (h, w, 1))
    pixels = np.asarray(im, dtype=np.float32) + grain  # one grain for the three channels
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


STYLES = {
    "notice": _notice,
    "poster": _poster,
    "infographic": _infographic,
    "screenshot": _screenshot,
    "sign": _sign,
}


def render(image: TextImage) -> tuple[bytes, int, int, str]:
    """(bytes, width, height, content type): a photo as JPEG, every other style as PNG."""
    im = STYLES[image.style](image)
    buf = io.BytesIO()
    if image.src.endswith(".jpg"):
        im.save(buf, format="JPEG", quality=88, optimize=False)
        ctype = "image/jpeg"
    else:
        im.save(buf, format="PNG", optimize=False, compress_level=6)
        ctype = "image/png"
    return buf.getvalue(), im.width, im.height, ctype


def _host(b: Builder, spec: TextImage) -> Page:
    """The page that embeds `spec`: the first content page of its site and type (by path) with no
    image and no robots flag, one nobody copied before one with near copies, or the site's page
    that says noai. (The texts are written for seed 0's hosts; another seed may pick others.)"""
    pages = sorted(
        (p for (site, _), p in b.pages.items() if site == spec.site and p.labels["is_content"]),
        key=lambda p: p.path,
    )
    if spec.host == "noai":
        found = [p for p in pages if p.labels["noai"] and not p.labels["images"]]
    else:
        found = sorted((p for p in pages if _eligible(p, spec.page_type)), key=_rank)
    if not found:
        raise LookupError(f"sample web: no {spec.host} {spec.page_type} page on {spec.site}")
    return found[0]


def _eligible(page: Page, page_type: str) -> bool:
    lab = page.labels
    return (
        lab["page_type"] == page_type
        and not lab["images"]
        and not (lab["dup_cluster"] or "").startswith("exact-")  # its copy shares its bytes
        and not (lab["noai"] or lab["noimageai"] or lab["noindex"])
        and "?" not in page.path
        and lab["expect_crawl_allowed"]
    )


def _rank(page: Page) -> tuple[bool, str]:
    """Pages no syndicator copied first (a near copy is re-rendered without the figure)."""
    return page.labels["dup_cluster"] is not None, page.path


def _figure(label: dict, caption: str | None) -> str:
    cap = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
    return (
        f'<figure><img src="{label["src"]}" alt="{escape(label["alt"])}" '
        f'width="{label["width"]}" height="{label["height"]}">{cap}</figure>'
    )


def _insert(body: bytes, figure: str, page_type: str) -> bytes:
    """The page with the figure after its lead paragraph (an article) or inside the first post
    (a forum thread, where the poster attached it)."""
    html = body.decode("utf-8")
    anchor = "</p></div></div>" if page_type == "forum" else "</p>"
    start = html.index("<main>")
    at = html.index(anchor, start)
    cut = at + len("</p>")
    return (html[:cut] + figure + html[cut:]).encode("utf-8")


def add_text_images(b: Builder) -> None:
    """Register the text-rich images and put each into its host page (call after the duplicates
    are made, so no copy of a host page exists; it draws nothing from the RNG)."""
    for spec in TEXT_IMAGES:
        page = _host(b, spec)
        body, width, height, ctype = render(spec)
        label = b.asset(
            spec.site,
            spec.src,
            body,
            alt=spec.alt,
            kind=spec.style,
            width=width,
            height=height,
            content_type=ctype,
        )
        ref = dict(label, expect_drop=ref_expectation(page.labels, label))
        page.labels["images"] = [*page.labels["images"], ref]
        page.body = _insert(page.body, _figure(label, spec.caption), spec.page_type)


def text_image(src: str) -> TextImage:
    """The text image registered at `src` (KeyError if none)."""
    for spec in TEXT_IMAGES:
        if spec.src == src:
            return spec
    raise KeyError(f"no sample web text image at {src}")
