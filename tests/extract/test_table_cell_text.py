"""A table's cells are the text a browser shows in them: the source of an inline <style> (a
wiki's template styles) or <script> (an ad slot), a <noscript>, a <template> or a comment is
no cell text, in the tables dataset as in the document's Markdown."""

from __future__ import annotations

import pytest
from lxml import html as lxml_html

from crawlers.extract import extract_page
from crawlers.extract.tables import extract_tables

pytestmark = pytest.mark.timeout(60)

PARA = (
    "<p>"
    + "The league table below compares the official standings with the corrected ones. " * 3
    + "</p>"
)
TABLE = (
    '<table class="wikitable"><tr><th><style data-mw-deduplicate="TemplateStyles:r1">'
    ".mw-parser-output .nobold{font-weight:normal}</style>Team</th><th>Points</th></tr>"
    '<tr><td>Leverkusen<script>var ad_slot="0764542773";</script></td><td>28</td></tr>'
    "<tr><td>Bay<b>ern</b><!-- sponsor --> München<noscript>Enable JavaScript</noscript></td>"
    "<td><template><span>0</span></template>26</td></tr></table>"
)


def test_cell_text_leaves_out_script_style_noscript_template_and_comments():
    (table,) = extract_tables(lxml_html.fromstring(f"<html><body>{TABLE}</body></html>"))
    assert table.header == ["Team", "Points"]
    assert table.cells == [["Team", "Points"], ["Leverkusen", "28"], ["Bayern München", "26"]]
    assert "font-weight" not in table.markdown and "ad_slot" not in table.markdown


def test_the_tables_dataset_matches_the_documents_markdown_table():
    html = f"<html><body><article><h1>Standings</h1>{PARA}{TABLE}{PARA}</article></body></html>"
    res = extract_page(
        {
            "url": "http://127.0.0.171:8471/a/t.html",
            "status": 200,
            "body": html.encode(),
            "content_type": "text/html; charset=utf-8",
            "training_allowed": True,
        }
    )
    (table,) = res.tables
    assert table["header"] == ["Team", "Points"]
    assert table["cells"][1] == ["Leverkusen", "28"]
    doc_rows = [line for line in res.document["markdown"].splitlines() if line.startswith("|")]
    assert "| Leverkusen | 28 |" in doc_rows[2]
    assert "| Leverkusen | 28 |" in table["markdown"].splitlines()[2]
