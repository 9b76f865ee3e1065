"""Tables in the document's Markdown and in the tables dataset: a layout table (the page set in
one table row, a menu, a navigation box) is no table, its blocks and its nested data tables are
read as the page's own; a data table is a valid GFM table (one delimiter row, below its header
or first row), its cells' line breaks and paragraphs kept apart on one line, a title row
spanning every column no header."""

from __future__ import annotations

import re

import pytest
from lxml import html as lxml_html

from crawlers.extract import extract_page
from crawlers.extract.tables import expand_grid, extract_tables

pytestmark = pytest.mark.timeout(60)

URL = "http://127.0.0.172:8472/report/water.html"
PROSE = (
    "The committee published its annual report on regional water use, covering rainfall, "
    "reservoir levels and consumption by sector in every district of the valley. "
)
DELIM = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$")


def _page(body: str) -> bytes:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Water report</title>'
        f"</head><body><nav><a href='/'>Home</a></nav>{body}<footer>Contact us</footer></body>"
        "</html>"
    ).encode()


def _extract(body: str):
    res = extract_page(
        {
            "url": URL,
            "status": 200,
            "body": _page(body),
            "content_type": "text/html; charset=utf-8",
            "training_allowed": True,
        }
    )
    assert res.document is not None, res.reject
    return res


def _table_blocks(markdown: str) -> list[list[str]]:
    blocks, run = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            run.append(line)
        elif run:
            blocks.append(run)
            run = []
    return blocks


def _assert_gfm(block: list[str]) -> None:
    """A GFM table: header, one delimiter row below it, no other; every row as wide."""
    assert len(block) >= 2 and DELIM.match(block[1]), block
    assert not any(DELIM.match(line) for line in block[2:]), block
    width = block[0].count(" | ")
    assert all(line.count(" | ") == width for line in block if not DELIM.match(line)), block


ARTICLE = (
    "<h1>Water report 2023</h1>"
    f"<p>{PROSE * 3}</p><h2>Rainfall by district</h2><p>{PROSE * 2}</p>"
    "<ul><li>First point about reservoirs</li><li>Second point about rivers</li></ul>"
    f"<h2>Consumption</h2><p>{PROSE * 2}</p>"
)


def test_a_page_set_in_one_layout_table_row_keeps_its_headings_and_paragraphs():
    res = _extract(
        "<table width='100%'><tr><td width='15%'><a href='/a'>Archive</a></td>"
        f"<td>{ARTICLE}</td></tr></table>"
    )
    md = res.document["markdown"]
    assert _table_blocks(md) == []
    lines = md.splitlines()
    assert "# Water report 2023" in lines and "## Consumption" in lines
    assert sum(line.startswith("The committee published") for line in lines) == 3
    assert max(len(line) for line in lines) < 1000  # paragraphs, not one row of the whole page
    assert res.tables == []


def test_a_data_table_without_th_gets_one_delimiter_row_below_its_first_row():
    table = (
        "<table><tr><td>District</td><td>Rain (mm)</td></tr><tr><td>North</td><td>700</td></tr>"
        "<tr><td>South</td><td>540</td></tr></table>"
    )
    md = _extract(f"<article>{ARTICLE}{table}<p>{PROSE * 2}</p></article>").document["markdown"]
    (block,) = _table_blocks(md)
    _assert_gfm(block)
    assert block[0] == "| District | Rain (mm) |" and block[2] == "| North | 700 |"


def test_a_table_with_a_caption_and_th_row_headers_has_one_delimiter_row():
    # trafilatura marks the <caption> row and the first <th> row as heads (and wrote a
    # delimiter after each), here the caption is a line above and the th row the header
    table = (
        "<table><caption>Rainfall by district</caption>"
        "<tr><th>District</th><th>Rain</th></tr>"
        "<tr><th>North</th><td>700</td></tr><tr><th>South</th><td>540</td></tr></table>"
    )
    md = _extract(f"<article>{ARTICLE}{table}<p>{PROSE * 2}</p></article>").document["markdown"]
    (block,) = _table_blocks(md)
    _assert_gfm(block)
    assert block[0] == "| District | Rain |" and "| South | 540 |" in block
    assert "Rainfall by district" in md.split(block[0])[0].splitlines()[-2:]


def test_a_cells_line_breaks_and_paragraphs_stay_on_its_row_as_br_and_pipes_are_escaped():
    table = (
        "<table><tr><th>Name</th><th>Notes</th></tr>"
        "<tr><td>Alpha<br>beta</td><td><p>para one</p><p>para two | three</p></td></tr>"
        "<tr><td>Gamma</td><td>plain</td></tr></table>"
    )
    res = _extract(f"<article>{ARTICLE}{table}<p>{PROSE * 2}</p></article>")
    (block,) = _table_blocks(res.document["markdown"])
    _assert_gfm(block)
    assert block[2] == "| Alpha<br>beta | para one<br>para two \\| three |"
    (t,) = res.tables
    assert t["cells"][1] == ["Alpha beta", "para one para two | three"]


def test_a_data_table_nested_in_a_layout_table_is_read_in_both_outputs():
    inner = (
        "<table border='1'><tr><th>Year</th><th>Rain</th></tr><tr><td>2022</td><td>700</td></tr>"
        "<tr><td>2023</td><td>640</td></tr></table>"
    )
    res = _extract(
        "<table width='100%'><tr><td width='20%'>Menu</td>"
        f"<td>{ARTICLE}{inner}<p>{PROSE}</p></td></tr></table>"
    )
    (block,) = _table_blocks(res.document["markdown"])
    _assert_gfm(block)
    assert block == ["| Year | Rain |", "|---|---|", "| 2022 | 700 |", "| 2023 | 640 |"]
    (t,) = res.tables
    assert t["header"] == ["Year", "Rain"] and t["cells"][1:] == [["2022", "700"], ["2023", "640"]]


# --- the tables dataset -----------------------------------------------------------------------


def _tables(body: str):
    return extract_tables(lxml_html.fromstring(f"<html><body>{body}</body></html>"))


def test_a_full_width_title_row_is_no_header_the_th_row_below_is():
    (t,) = _tables(
        "<table><tr><th colspan='3'>Rulers of the valley</th></tr>"
        "<tr><th>Name</th><th>From</th><th>To</th></tr>"
        "<tr><td>Ada</td><td>1801</td><td>1820</td></tr>"
        "<tr><td>Bo</td><td>1820</td><td>1841</td></tr></table>"
    )
    assert t.header == ["Name", "From", "To"]
    assert t.cells == [["Name", "From", "To"], ["Ada", "1801", "1820"], ["Bo", "1820", "1841"]]
    assert t.n_rows == 2
    assert t.markdown.splitlines()[0] == "Rulers of the valley"
    assert "| Name | From | To |\n|---|---|---|" in t.markdown


def test_list_items_and_block_edges_in_a_cell_are_separated():
    (t,) = _tables(
        "<table><tr><th>Year</th><th>Months</th></tr>"
        "<tr><td>2010</td><td><div>Dezember</div><div>November</div></td></tr>"
        "<tr><td>2011</td><td><span>Jan</span>uar<br/>Februar</td></tr></table>"
    )
    assert t.cells[1:] == [["2010", "Dezember November"], ["2011", "Januar Februar"]]


def test_menus_page_columns_and_link_boxes_are_no_data_tables():
    menu = (
        "<table><tr><td><a href='/en'>English</a></td><td><a href='/de'>Deutsch</a></td>"
        "<td><a href='/fr'>Français</a></td></tr></table>"
    )
    column = "<table><tr><td>One</td></tr><tr><td>Two</td></tr><tr><td>Three</td></tr></table>"
    navbox = (
        "<table><tr><th colspan='2'>Rivers</th></tr>"
        "<tr><th>North</th><td><ul><li><a href='/a'>Aar</a></li><li><a href='/b'>Bode</a>"
        "</li></ul></td></tr><tr><th>South</th><td><ul><li><a href='/c'>Cher</a></li></ul>"
        "</td></tr></table>"
    )
    data = "<table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>"
    tables = _tables(menu + column + navbox + data)
    assert [t.cells for t in tables] == [[["A", "B"], ["1", "2"]]]
    assert tables[0].index == 0


def test_expand_grid_leaves_the_title_row_out():
    table = lxml_html.fromstring(
        "<table><tr><td colspan='2'>Title</td></tr><tr><th>a</th><th>b</th></tr>"
        "<tr><td>1</td><td>2</td></tr></table>"
    )
    assert expand_grid(table) == ([["a", "b"], ["1", "2"]], True)


def test_a_month_calendar_is_no_data_table():
    weeks = "".join(
        "<tr>" + "".join(f"<td><a href='/d/{d}'>{d}</a></td>" for d in range(w, w + 7)) + "</tr>"
        for w in (1, 8, 15, 22)
    )
    days = "".join(f"<th>{d}</th>" for d in ("Mo", "Tu", "We", "Th", "Fr", "Sa", "Su"))
    calendar = f"<table><caption>February</caption><tr>{days}</tr>{weeks}</table>"
    assert _tables(calendar) == []


# --- trafilatura's XML as it sometimes is ------------------------------------------------------


def _xml_markdown(xml: str) -> str:
    from lxml import etree

    from crawlers.extract.md_tables import body_markdown

    return body_markdown(etree.fromstring(f"<body>{xml}</body>")).strip()


def test_a_title_cell_spanning_the_row_is_a_line_above_the_table():
    md = _xml_markdown(
        "<table><row><cell colspan='3'>February 2020</cell></row>"
        "<row><cell>Room</cell><cell>Price</cell><cell>Beds</cell></row>"
        "<row><cell>Blue</cell><cell>80</cell><cell>2</cell></row></table>"
    )
    assert md.splitlines() == [
        "February 2020",
        "",
        "| Room | Price | Beds |",
        "|---|---|---|",
        "| Blue | 80 | 2 |",
    ]


def test_html_rows_loose_rows_and_cells_and_text_in_a_table_keep_their_words():
    md = _xml_markdown(
        "<p>Works<table>Loose text<tr><td>No.</td><td>Title</td></tr>"
        "<tr><td>1</td><td>Harp</td></tr></table></p>"
        "<row><cell>lonely row</cell></row><cell>lonely cell</cell>after"
    )
    assert "| No. | Title |\n|---|---|\n| 1 | Harp |" in md
    assert "\n\n| No. |" in md  # a blank line parts it from the paragraph before
    for words in ("Works", "Loose text", "lonely row", "lonely cell", "after"):
        assert words in md
    assert not any(line.startswith("| lonely") for line in md.splitlines())
