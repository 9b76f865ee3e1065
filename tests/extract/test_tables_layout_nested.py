"""A grid of links (site navigation set out as a table) is no data table, a data table with a
column of links is; a small table nested in a data table's cell is that cell's text, flattened
("math 90; art 80"), in the tables dataset as in the document's Markdown, not an empty cell and
a lost outer table."""

from __future__ import annotations

import pytest
from lxml import etree
from lxml import html as lxml_html

from crawlers.extract.md_tables import body_markdown
from crawlers.extract.tables import extract_tables

pytestmark = pytest.mark.timeout(60)

NAV_GRID = (
    "<table class='nav'><tr><td><a href='/w'>Weekly edition</a></td><td><a href='/k'>Kernel</a>"
    "</td><td><a href='/s'>Security</a></td></tr><tr><td><a href='/a'>Archives</a></td>"
    "<td><a href='/c'>Calendar</a></td><td><a href='/sub'>Subscribe</a></td></tr></table>"
)
SCORES = (
    "<table><tr><th>Name</th><th>Score</th></tr><tr><td>Ann</td><td><table><tr><td>math</td>"
    "<td>90</td></tr><tr><td>art</td><td>80</td></tr></table></td></tr>"
    "<tr><td>Bob</td><td>70</td></tr></table>"
)


def _tables(body: str):
    return extract_tables(lxml_html.fromstring(f"<html><body>{body}</body></html>"))


def _xml_markdown(xml: str) -> str:
    return body_markdown(etree.fromstring(f"<body>{xml}</body>")).strip()


# --- a grid of links ---------------------------------------------------------------------------


def test_a_grid_of_links_is_navigation_not_a_data_table():
    assert _tables(NAV_GRID) == []


def test_a_grid_of_links_with_a_stray_label_is_navigation_too():
    grid = NAV_GRID.replace("<td><a href='/a'>Archives</a></td>", "<td>More:</td>")
    assert _tables(grid) == []


def test_data_tables_with_a_column_of_links_stay_data_tables():
    products = (
        "<table><tr><th>Product</th><th>Price</th></tr>"
        "<tr><td><a href='/p/1'>Kettle</a></td><td>19.90</td></tr>"
        "<tr><td><a href='/p/2'>Toaster</a></td><td>24.50</td></tr>"
        "<tr><td><a href='/p/3'>Blender</a></td><td>39.00</td></tr></table>"
    )
    people = (  # no header row: the second column is text all the same
        "<table><tr><td><a href='/u/ada'>Ada</a></td><td>Mathematician, London</td></tr>"
        "<tr><td><a href='/u/bo'>Bo</a></td><td>Engineer, Oslo</td></tr></table>"
    )
    tables = _tables(products + people)
    assert [t.cells for t in tables] == [
        [["Product", "Price"], ["Kettle", "19.90"], ["Toaster", "24.50"], ["Blender", "39.00"]],
        [["Ada", "Mathematician, London"], ["Bo", "Engineer, Oslo"]],
    ]


def test_a_grid_of_links_in_trafilaturas_xml_is_unwrapped_not_a_markdown_table():
    md = _xml_markdown(
        "<table><row><cell><ref target='/w'>Weekly edition</ref></cell><cell><ref target='/k'>"
        "Kernel</ref></cell></row><row><cell><ref target='/a'>Archives</ref></cell><cell>"
        "<ref target='/c'>Calendar</ref></cell></row></table>"
    )
    assert not any(line.startswith("|") for line in md.splitlines()), md
    for words in ("Weekly edition", "Kernel", "Archives", "Calendar"):
        assert words in md


# --- a table nested in a cell ------------------------------------------------------------------


def test_a_small_table_nested_in_a_data_tables_cell_is_that_cells_text():
    (t,) = _tables(SCORES)
    assert t.header == ["Name", "Score"]
    assert t.cells == [["Name", "Score"], ["Ann", "math 90; art 80"], ["Bob", "70"]]
    assert "| Ann | math 90; art 80 |" in t.markdown


def test_a_table_nested_in_a_layout_row_of_its_own_is_still_read_on_its_own():
    # the nested table stands alone in its row: the outer table lays out a box, the inner one
    # is the data
    inner = "<table><tr><th>Year</th><th>Rain</th></tr><tr><td>2022</td><td>700</td></tr></table>"
    outer = (
        "<table><tr><td>Rainfall</td><td>(from the survey)</td><td>more</td></tr>"
        f"<tr><td colspan='3'>{inner}</td></tr></table>"
    )
    assert [t.cells for t in _tables(outer)] == [[["Year", "Rain"], ["2022", "700"]]]


def test_a_big_or_sectioned_nested_table_keeps_the_outer_table_a_layout_table():
    big = "<table>" + "".join(f"<tr><td>r{i}</td><td>{i}</td></tr>" for i in range(80)) + "</table>"
    listed = "<table><tr><td><ul><li>a</li><li>b</li></ul></td><td>c</td></tr></table>"
    for inner in (big, listed):
        outer = (
            f"<table><tr><td>Label</td><td>{inner}</td></tr><tr><td>x</td><td>y</td></tr></table>"
        )
        assert all(t.cells[0] != ["Label", ""] and t.cells[0][0] != "Label" for t in _tables(outer))


def test_flatten_nested_tables_puts_the_inner_tables_text_in_its_cell():
    # run on the page before trafilatura, which moves a nested table out and empties its cell
    from crawlers.extract.tables import flatten_nested_tables

    tree = lxml_html.fromstring(f"<html><body>{SCORES}</body></html>")
    assert flatten_nested_tables(tree) == 1
    assert len(tree.findall(".//table")) == 1
    (t,) = extract_tables(tree)
    assert t.cells[1] == ["Ann", "math 90; art 80"]


def test_flatten_nested_tables_leaves_a_layout_tables_nested_tables_alone():
    from crawlers.extract.tables import flatten_nested_tables

    inner = "<table><tr><th>Year</th><th>Rain</th></tr><tr><td>2022</td><td>700</td></tr></table>"
    tree = lxml_html.fromstring(
        f"<html><body><table><tr><td>Menu</td><td><h1>Report</h1>{inner}</td></tr></table>"
        "</body></html>"
    )
    assert flatten_nested_tables(tree) == 0
    assert len(tree.findall(".//table")) == 2


def test_a_table_left_in_a_cell_of_trafilaturas_xml_is_flattened_into_the_cell():
    md = _xml_markdown(
        "<table><row><cell role='head'>Name</cell><cell role='head'>Score</cell></row>"
        "<row><cell>Ann</cell><cell>total <table><row><cell>math</cell><cell>90</cell></row>"
        "<row><cell>art</cell><cell>80</cell></row></table> ok</cell></row>"
        "<row><cell>Bob</cell><cell>70</cell></row></table><p>after</p>"
    )
    assert md.splitlines() == [
        "| Name | Score |",
        "|---|---|",
        "| Ann | total<br>math 90; art 80<br>ok |",
        "| Bob | 70 |",
        "",
        "after",
    ]
