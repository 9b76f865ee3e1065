"""Images inside lists and tables are placed: the image run's list or table often differs from the
main run's (an extra image-only row, an item with a nested image and caption the main run drops,
a caption glued to its paragraph), and every image in it was dropped because the whole block's
text was matched (readability's blogger page lost 3 of 3 images, firefox-nightly-blog 3 of its
3 main-content images; 39 of 205 images in main-content list items and table cells of the real
pages). Blocks are now matched by their parts (items, rows, cells, runs of text); an image goes
after the nearest main text before it, and one whose block holds no main text stays out."""

from __future__ import annotations

import re

import pytest
from lxml import etree

from crawlers.extract import extract_page
from crawlers.extract.content import place_images

pytestmark = pytest.mark.timeout(60)

SENTENCE = (
    "The device packs a mixed signal fabric with comparators, counters and a crossbar of "
    "lookup tables, all of it configured from one small bitstream. "
)


def _xml(markup: str):
    return etree.fromstring(f"<body>{markup}</body>")


def _markdown_images(body) -> list[str]:
    return [g.get("src") for g in body.iter("graphic")]


def _order(body) -> list[str]:
    """Texts (first word) and images of `body` in document order."""
    out = []
    for el in body.iter():
        if el.tag == "graphic":
            out.append("IMG:" + el.get("src"))
        for text in (el.text, el.tail if el is not body else None):
            if text and text.strip():
                out.append(text.split()[0])
    return out


def test_an_image_row_the_main_table_lacks_goes_after_the_text_before_it():
    """blogger: a caption table of an image row and a caption row; the main run keeps the
    caption row only."""
    main = _xml(
        "<p>Before the diagram.</p><table><row><cell>Block diagram</cell></row></table>"
        "<p>After the diagram.</p>"
    )
    imaged = _xml(
        "<p>Before the diagram.</p><table><row><cell><graphic src='http://b.test/d.png'/></cell>"
        "</row><row><cell>Block diagram</cell></row></table><p>After the diagram.</p>"
    )
    placed = place_images(main, imaged)
    assert _order(placed) == ["Before", "IMG:http://b.test/d.png", "Block", "After"]


def test_an_image_row_leading_a_table_waits_for_the_caption_row():
    main = _xml("<table><row><cell>Block diagram</cell></row></table>")
    imaged = _xml(
        "<table><row><cell><graphic src='http://b.test/d.png'/></cell></row>"
        "<row><cell>Block diagram</cell></row></table>"
    )
    placed = place_images(main, imaged)
    assert _order(placed) == ["IMG:http://b.test/d.png", "Block"]


def test_an_image_in_a_nested_list_goes_into_the_item_it_belongs_to():
    """firefox-nightly-blog: an item holding a nested list of an image and its caption; the
    main run keeps the item's own text only."""
    main = _xml(
        "<list><item>First news item.</item><item>We have just landed the fix.</item>"
        "<item>Also about to land.</item></list>"
    )
    imaged = _xml(
        "<list><item>First news item.</item><item>We have just landed the fix.<list><item>"
        "<graphic src='http://b.test/h.png'/><p>Users will see this less.</p></item></list>"
        "</item><item>Also about to land.</item></list>"
    )
    placed = place_images(main, imaged)
    items = placed.findall("list/item")
    assert [g.get("src") for g in items[1].iter("graphic")] == ["http://b.test/h.png"]
    assert "Users" not in etree.tostring(placed, encoding="unicode")  # the caption stays out
    assert len(items) == 3


def test_an_image_in_an_item_of_the_same_text_is_inline():
    main = _xml("<list><item>One.</item><item>Two has a photo.</item></list>")
    imaged = _xml(
        "<list><item>One.</item><item>Two has a <graphic src='http://b.test/2.jpg'/> photo."
        "</item><item>An item the main run drops.</item></list>"
    )
    placed = place_images(main, imaged)
    assert [g.getparent().tag for g in placed.iter("graphic")] == ["item"]
    assert _markdown_images(placed) == ["http://b.test/2.jpg"]


def test_an_image_before_a_caption_glued_to_its_paragraph_goes_before_the_paragraph():
    """msn: the image run keeps the caption in the paragraph after the image."""
    main = _xml(f"<head>Title</head><p>{SENTENCE}</p>")
    imaged = _xml(
        f"<head>Title</head><p><graphic src='http://b.test/lead.img?h=820'/>Provided by an "
        f"agency Nintendo/Apple {SENTENCE}</p>"
    )
    placed = place_images(main, imaged)
    assert _order(placed) == ["Title", "IMG:http://b.test/lead.img?h=820", "The"]


def test_images_of_a_list_that_is_no_main_content_stay_out():
    """Related posts: a list the main run does not keep, each item an image and a title."""
    main = _xml(f"<p>{SENTENCE}</p><p>The last paragraph of the post.</p>")
    imaged = _xml(
        f"<p>{SENTENCE}</p><list><item><graphic src='http://b.test/r1.jpg'/>Another post</item>"
        "<item>A third post <graphic src='http://b.test/r2.jpg'/></item></list>"
        "<p>The last paragraph of the post.</p>"
    )
    assert _markdown_images(place_images(main, imaged)) == []


def test_images_in_a_changed_table_keep_their_rows():
    """A table whose rows the image run splits otherwise: each row found on its own."""
    main = _xml(
        "<table><row><cell>Alpha</cell><cell>first</cell></row>"
        "<row><cell>Beta</cell><cell>second</cell></row></table>"
    )
    imaged = _xml(
        "<table><row><cell>Alpha</cell><cell>first</cell></row><row><cell/><cell/></row>"
        "<row><cell>Beta <graphic src='http://b.test/beta.png'/></cell><cell>second</cell></row>"
        "</table>"
    )
    placed = place_images(main, imaged)
    rows = placed.findall("table/row")
    assert len(rows) == 2
    assert [g.get("src") for g in rows[1].iter("graphic")] == ["http://b.test/beta.png"]


BLOGGER = """<html><head><title>Open Verilog flow</title></head><body>
<div class="post-body entry-content">{paragraphs}
<br/> Without further ado, here's a block diagram showing all the cool stuff you get:<br/><br/>
<table align="center" class="tr-caption-container"><tbody>
<tr><td style="text-align: center;"><a href="https://1.bp.test/s1600/block-diagram.png"
imageanchor="1"><img border="0" height="512" src="https://1.bp.test/s640/block-diagram.png"
width="640"/></a></td></tr>
<tr><td class="tr-caption" style="text-align: center;">Block diagram (from the datasheet)</td>
</tr></tbody></table>
They're also tiny and probably the cheapest programmable logic device on the market, less than
forty cents in larger quantities.<br/>{paragraphs}</div></body></html>"""


def test_blogger_caption_table_image_is_kept_in_place():
    paragraphs = "".join(f"<br/> {SENTENCE} Paragraph {i}.<br/>" for i in range(6))
    html = BLOGGER.format(paragraphs=paragraphs)
    res = extract_page(
        {"url": "https://blog.test/2016/05/flow.html", "status": 200, "body": html.encode()}
    )
    assert [r["src"] for r in res.image_refs] == ["https://1.bp.test/s640/block-diagram.png"]
    md = res.document["markdown"]
    image = md.index("![](https://1.bp.test/s640/block-diagram.png)")
    assert md.index("Without further ado") < image < md.index("Block diagram (from")
    assert re.findall(r"!\[", md) == ["!["]
