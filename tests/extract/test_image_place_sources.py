"""An image's source is the one a browser shows: a lazy loader's attribute of any name where `src`
is a placeholder (`data-pagespeed-lazy-src` gave the ref `pixel.gif`), no placeholder as the
image (cybercook's pixel.gif, lidl's placeholder.gif, yahoo-4's clear.gif were refs), and an
<img> src is an image whatever its extension (an SVG, a CDN's `/photo-123?w=800`, msn's
`AAkk5fh.img?h=820`, Wikipedia's math `/render/svg/<hash>` gave no ref: trafilatura keeps only
sources with a raster extension)."""

from __future__ import annotations

import re

import pytest
from lxml import html as lxml_html

from crawlers.extract import extract_page
from crawlers.extract.img_sources import (
    IMAGE_MARK,
    is_stand_in,
    lazy_source,
    resolve_lazy_images,
)

pytestmark = pytest.mark.timeout(60)

URL = "http://example.test/reports/2024/survey.html"
PARAS = [
    f"Paragraph {i} of the field report describes the river survey, water samples and the "
    "wildlife observed along the banks in detail."
    for i in range(1, 9)
]


def _refs(img: str) -> tuple[list[str], list[str], list[str], str]:
    """(refs, interleaved image blocks, Markdown image URLs, Markdown) of a report page with
    `img` after its third paragraph."""
    body = "".join(f"<p>{p}</p>" + (img if i == 3 else "") for i, p in enumerate(PARAS))
    html = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Survey</title></head><body>"
        f"<nav><a href='/'>Home</a></nav><article><h1>Survey</h1>{body}</article></body></html>"
    )
    res = extract_page({"url": URL, "status": 200, "body": html.encode()})
    md = res.document["markdown"]
    blocks = [b["src"] for b in res.interleaved["blocks"] if b["kind"] == "image"]
    return [r["src"] for r in res.image_refs], blocks, re.findall(r"!\[[^\]]*\]\(([^)]*)\)", md), md


SHOWN = {
    "pagespeed-lazy": (
        '<img src="/img/pixel.gif" data-pagespeed-lazy-src="/img/e.jpg" alt="E">',
        "http://example.test/img/e.jpg",
    ),
    "img-url": (
        '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" '
        'data-img-url="https://cdn.example.test/p/river.webp" alt="River">',
        "https://cdn.example.test/p/river.webp",
    ),
    "svg": ('<img src="/img/g.svg" alt="G chart">', "http://example.test/img/g.svg"),
    "cdn-no-extension": (
        '<img src="https://images.example-cdn.test/photo-123?w=800&amp;q=80" alt="H">',
        "https://images.example-cdn.test/photo-123?w=800&q=80",
    ),
    "math-svg": (
        '<img src="https://wikimedia.test/api/rest_v1/media/math/render/svg/28a0aa" alt="A">',
        "https://wikimedia.test/api/rest_v1/media/math/render/svg/28a0aa",
    ),
    "lazy-no-extension": (
        '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" '
        'data-src="https://cdn.example.test/img/123?w=800" alt="Lazy">',
        "https://cdn.example.test/img/123?w=800",
    ),
    "picture-no-extension": (
        '<picture><source srcset="https://cdn.example.test/img/9?w=400 400w, '
        'https://cdn.example.test/img/9?w=1600 1600w"><img alt="P"></picture>',
        "https://cdn.example.test/img/9?w=1600",
    ),
}


@pytest.mark.parametrize("kind", sorted(SHOWN))
def test_the_image_is_the_one_the_browser_shows_in_refs_blocks_and_markdown(kind):
    markup, shown = SHOWN[kind]
    refs, blocks, md_images, md = _refs(markup)
    assert refs == [shown], refs
    assert blocks == [shown] and md_images == [shown], (blocks, md_images)
    assert IMAGE_MARK not in md
    assert md.index("Paragraph 4") < md.index("![") < md.index("Paragraph 5")


STAND_INS = {
    "pixel-gif": '<img src="/img/pixel.gif" alt="">',
    "placeholder-gif": '<img src="https://www.lidl.test/static/img/placeholder.gif" alt="x">',
    "clear-gif": '<img src="http://i.yimg.test/images/clear.gif" alt="Top of the page">',
    "trans-gif": '<img src="/wp-content/plugins/lazy/1x1.trans.gif" data-lazy="true">',
    "placeholder-png": '<img src="/themes/site/placeholder.png" alt="">',
    # a tracking pixel: an image URL whatever its name, but 1 pixel wide
    "tracking-pixel": '<img src="/track?u=1" width="1">',
    "pixel-jpg": '<img src="/stats/hit.jpg" width="1" height="1px" alt="">',
}


@pytest.mark.parametrize("kind", sorted(STAND_INS))
def test_a_placeholder_left_as_the_source_is_no_image(kind):
    refs, blocks, md_images, md = _refs(STAND_INS[kind])
    assert refs == [] and blocks == [] and md_images == [], (refs, blocks, md_images)
    assert "Paragraph 4" in md


def test_a_photo_named_with_a_placeholder_word_is_kept():
    refs, *_ = _refs('<img src="/photos/grey-heron.jpg" alt="A grey heron">')
    assert refs == ["http://example.test/photos/grey-heron.jpg"]


def test_stand_in_names():
    for src in ("pixel.gif", "/a/1x1.trans.gif", "clear.gif", "placeholder.png", "lazy-load.svg"):
        assert is_stand_in(src), src
    for src in ("/clearpixel.gif", "/img/spacer_2.gif", "//:0", "https://:0"):
        assert is_stand_in(src), src
    for src in ("grey-heron.jpg", "/a/b/photo.gif", "clear-water-lake.png", "/img/123?w=8"):
        assert not is_stand_in(src), src
    for src in ("/nuclear.gif", "/pixel-art-tutorial.png", "//cdn.test/a.jpg"):
        assert not is_stand_in(src), src


def test_lazy_source_reads_any_data_attribute_holding_an_image_but_no_flag_or_json():
    def img(attrs: str):
        return lxml_html.fromstring(f"<img {attrs}>")

    assert lazy_source(img('src="/pixel.gif" data-gt-lazy-src="/a/b.jpg"')) == "/a/b.jpg"
    assert lazy_source(img('src="/blank.gif" data-m-lazyloader-src="/a/c.svg"')) == "/a/c.svg"
    # a flag or a JSON object is no URL; a non-image data-* URL (a link) is no image
    assert lazy_source(img('src="/spacer.gif" data-lazy="true" data-href="/page"')) is None
    assert lazy_source(img('src="/spacer.gif" data-src=\'{"src": "/x.jpg"}\'')) is None
    # a src only named like a placeholder is its image, whatever its extension
    assert lazy_source(img('src="/photos/grey-heron?w=800"')) == "/photos/grey-heron?w=800"
    # a real src with an image extension is left as it is
    assert lazy_source(img('src="/a/photo.jpg" data-img-url="/a/other.jpg"')) is None


def test_resolve_marks_sources_trafilatura_would_not_keep_and_drops_stand_ins():
    tree = lxml_html.fromstring(
        "<div><img src='/g.svg'><img src='/pixel.gif'><img src='/a.jpg'></div>"
    )
    assert resolve_lazy_images(tree) == 1
    svg, pixel, jpg = tree.iter("img")
    assert svg.get("data-src") == "/g.svg" + IMAGE_MARK
    assert pixel.get("src") is None and jpg.get("data-src") is None
