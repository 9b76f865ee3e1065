"""Images whose source is not where trafilatura reads it: an <img> that keeps no source a browser
loads (a file: spacer) is no reference, no interleaved block and no `![]()` in the Markdown,
never one at the page's own URL; an <img> whose src has no image extension (msn's
`AAkk5fh.img?h=820` beside a JSON data-src) is that image; an <img> whose real image
is only in the <noscript> beside it (Medium's blurred preview, a data: placeholder) is that
image, once, at its full URL. Markup modelled on readability's msn, hukumusume and
lazy-image-1 test pages."""

from __future__ import annotations

import re

import pytest
from lxml import html as lxml_html
from lxml.etree import Element, SubElement

from crawlers.extract import extract_page
from crawlers.extract.content import interleave
from crawlers.extract.img_sources import http_url, image_url, resolve_lazy_images

pytestmark = pytest.mark.timeout(60)

URL = "https://www.msn.test/en-us/news/technology/super-mario-run/ar-AAkkd0X"
PARA = (
    "Nintendo and Apple shocked the world earlier this year by announcing a new game for the "
    "iPhone, and the launch date has now been set for the middle of December. "
)
REAL = "https://cdn.msn.test/pics/mario-level-1.jpg"


def _extract(figure: str, url: str = URL):
    html = (
        "<html><head><title>Super Mario Run</title></head><body><article><h1>Super Mario Run</h1>"
        f"<p>{PARA}one</p>{figure}<p>{PARA}two</p><p><img src='{REAL}' alt='Level 1'></p>"
        f"<p>{PARA}three</p></article></body></html>"
    )
    return extract_page(
        {
            "url": url,
            "status": 200,
            "body": html.encode(),
            "content_type": "text/html; charset=utf-8",
            "training_allowed": True,
        }
    )


def _image_srcs(res) -> tuple[list, list, list]:
    md = re.findall(r"!\[[^\]]*\]\(([^)]*)\)", res.document["markdown"])
    blocks = [b["src"] for b in res.interleaved["blocks"] if b["kind"] == "image"]
    return [r["src"] for r in res.image_refs], blocks, md


_JSON = (
    "{&quot;default&quot;:{&quot;load&quot;:&quot;default&quot;,&quot;w&quot;:&quot;73&quot;,"
    "&quot;src&quot;:&quot;//img-s-msn-com.akamaized.net/tenant/amp/entityid/AAkk5fh.img?"
    "h=410&amp;w=728&amp;m=6&quot;}}"
)
# msn: a JSON data-src beside the image's URL in src, which has no image extension
MSN = (
    '<p><span class="storyimage"><span class="image"><img alt="Nintendo/Apple" '
    f'data-src="{_JSON}" src="http://img-s-msn-com.akamaized.net/tenant/amp/entityid/'
    'AAkk5fh.img?h=820&amp;w=1456"></span><span class="caption"><span>© Provided by '
    f"Business Insider Inc</span> <span>Nintendo/Apple</span></span></span> {PARA}</p>"
)
MSN_SRC = "http://img-s-msn-com.akamaized.net/tenant/amp/entityid/AAkk5fh.img?h=820&w=1456"


def test_an_image_src_without_an_image_extension_is_the_image_not_its_json_data_src():
    refs, blocks, md = _image_srcs(_extract(MSN))
    assert refs == blocks == md == [MSN_SRC, REAL], (refs, blocks, md)


SOURCELESS = {
    # hukumusume: a spacer GIF on the author's disk, inside bold text
    "file-spacer": (
        "<p><b>Today in history<img src='file:///C|/Documents%20and%20Settings/user/spacer.gif' "
        f"width='1' height='10'></b> {PARA}</p>"
    ),
}


@pytest.mark.parametrize("kind", sorted(SOURCELESS))
def test_an_image_without_a_source_is_no_reference_and_no_empty_markdown_image(kind):
    res = _extract(SOURCELESS[kind])
    refs, blocks, md = _image_srcs(res)
    assert refs == [REAL], refs
    assert blocks == [REAL], blocks
    assert md == [REAL], md
    assert "Nintendo and Apple" in res.document["markdown"]


def test_interleave_skips_a_graphic_with_a_missing_or_blank_source():
    body = Element("body")
    p = SubElement(body, "p")
    p.text = "Before the image "
    SubElement(p, "graphic").tail = " after it"
    SubElement(body, "graphic", src="  ")
    SubElement(body, "graphic", src="pics/a.jpg")
    blocks = interleave(body, URL)
    assert [b["src"] for b in blocks if b["kind"] == "image"] == [
        "https://www.msn.test/en-us/news/technology/super-mario-run/pics/a.jpg"
    ]


def test_a_blank_image_source_is_no_url_but_a_blank_link_is_the_page():
    assert image_url(URL, "") is None
    assert image_url(URL, " \t\n") is None
    assert image_url(URL, None) is None
    assert image_url(URL, "javascript:void(0)") is None
    assert image_url(URL, " /a.jpg ") == "https://www.msn.test/a.jpg"
    assert http_url(URL, "") == URL  # an empty href is the document itself


# --- the image in a <noscript> --------------------------------------------------------------

MAX = "https://miro.medium.com/max"
MEDIUM = (
    # lazy-image-1 (Medium): a 60px preview, an empty <img> the script fills, the full image
    # in <noscript>
    '<figure class="paragraph-image"><div class="hs"><div class="cp"><div class="ib r">'
    f'<div class="hw"><img class="s t u" src="{MAX}/60/1*5o3M5niyi911.png?q=20" width="1894" '
    'height="970" role="presentation"></div><img class="hw hx" width="1894" height="970" '
    f'role="presentation"><noscript><img class="s t u" src="{MAX}/3788/1*5o3M5niyi911.png" '
    'width="1894" height="970" role="presentation"></noscript></div></div></div></div>'
    "<figcaption>Memory leak in action</figcaption></figure>"
)
NOSCRIPT = {
    "medium-preview": (MEDIUM, f"{MAX}/3788/1*5o3M5niyi911.png"),
    "data-uri-placeholder": (
        '<figure><img class="lazyload" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" '
        'alt="chart"><noscript><img src="https://cdn.msn.test/img/chart-1200.png" alt="chart">'
        "</noscript></figure>",
        "https://cdn.msn.test/img/chart-1200.png",
    ),
    "no-src-srcset-in-noscript": (
        '<figure><span class="wrap"><img class="lazy" alt="Level 2"></span><noscript>'
        '<img srcset="/pics/level2-480.jpg 480w, /pics/level2-1600.jpg 1600w" alt="Level 2">'
        "</noscript></figure>",
        "https://www.msn.test/pics/level2-1600.jpg",
    ),
    "noscript-first": (
        '<figure><noscript><img src="https://cdn.msn.test/img/map.png"></noscript>'
        '<img src="/static/img/blank.gif" alt="map"></figure>',
        "https://cdn.msn.test/img/map.png",
    ),
}


@pytest.mark.parametrize("kind", sorted(NOSCRIPT))
def test_a_lazily_loaded_image_in_noscript_is_one_reference_at_its_full_url(kind):
    figure, full = NOSCRIPT[kind]
    refs, blocks, md = _image_srcs(_extract(figure))
    assert refs == [full, REAL], refs
    assert blocks == refs
    assert md == refs


def test_lazy_image_page_keeps_full_size_images_not_previews():
    """All ten figures of readability's lazy-image-1 came out as `max/60/...?q=20` previews."""
    names = [f"1*figure{i}.png" for i in range(10)]
    figures = "".join(
        MEDIUM.replace("1*5o3M5niyi911.png", name) + f"<p>{PARA}{i}</p>"
        for i, name in enumerate(names)
    )
    refs, _, md = _image_srcs(_extract(figures))
    assert refs == [f"{MAX}/3788/{n}" for n in names] + [REAL], refs
    assert not any("q=20" in src for src in md)


def test_a_real_image_beside_a_noscript_of_another_image_is_left_alone():
    tree = lxml_html.fromstring(
        "<div><p><img src='/pics/photo.jpg'><noscript><img src='/pics/other.jpg'></noscript></p>"
        "<p><img src='/pics/a.jpg'><img><noscript><img src='/pics/b.jpg'></noscript></p></div>"
    )
    resolve_lazy_images(tree)
    imgs = [(i.get("src"), i.get("data-src")) for i in tree.iter("img")]
    assert imgs == [
        ("/pics/photo.jpg", None),
        ("/pics/other.jpg", None),
        ("/pics/a.jpg", None),
        (None, "/pics/b.jpg"),
        ("/pics/b.jpg", None),
    ]


def test_a_noscript_kept_as_text_is_parsed():
    tree = lxml_html.fromstring("<div><img src='data:image/gif;base64,R0lGOD' alt='x'></div>")
    noscript = SubElement(tree, "noscript")
    noscript.text = '<img src="/pics/full.webp" alt="x">'
    img = tree.find("img")
    tree.remove(img)
    noscript.addprevious(img)
    assert resolve_lazy_images(tree) == 1
    assert img.get("data-src") == "/pics/full.webp"
