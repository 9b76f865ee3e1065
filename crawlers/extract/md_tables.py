"""The `markdown` column's tables: trafilatura's XML body to Markdown, tables rendered here.

trafilatura's own Markdown writes every table row by row, as the page laid it out: a page set
in a one-row layout table becomes one line of Markdown (headings and paragraphs gone), a table
without <th> has no delimiter row (it reads as a paragraph) and one with <th> in several rows
gets a delimiter after each. Here a layout table (`tables.layout_table`) is unwrapped into the
ordinary blocks its cells hold, and a data table is a GitHub-flavoured Markdown table with one
delimiter row, below its first row (its header, or its first row when the page marks none);
a cell's paragraphs and line breaks are `<br>` and its pipes escaped, so a row stays one line;
a small table nested in a cell is the cell's text, its rows parted by "; ".
"""

from __future__ import annotations

import copy

from lxml.etree import Element, SubElement
from trafilatura.core import xmltotxt

from crawlers.extract.tables import layout_table

# trafilatura's XML: a heading is <head>, a list <list>, a quote <quote>, a link <ref>.
_SECTIONS = {"table", "head"}
_BLOCKS = {"list", "quote", "code"}
_PARAGRAPHS = {"p"}
# trafilatura now and then keeps a table's HTML rows (<tr>, <td>) as they were
_ROW_TAGS = {"row", "tr"}
_CELL_TAGS = {"cell", "td", "th"}
_BLOCK_TAGS = {"p", "head", "list", "quote", "code", "table"}  # what stays a block when unwrapped
# Plain-ASCII markers (trafilatura's sanitiser strips control and private-use characters).
_TABLE_MARK = "@@refinery-table-{}@@"
_CELL_MARK = "@@refinery-cell@@"


def _text(el) -> str:
    return " ".join("".join(el.itertext()).split())


def _rows(table) -> list[list]:
    return [list(row) for row in table if row.tag in _ROW_TAGS]


def _empty(cell) -> bool:
    return not _text(cell) and next(cell.iter("graphic"), None) is None


def _caption(rows: list[list]) -> tuple[list, list[list]]:
    """A first row whose only content is in its first cell, above other rows, is the table's
    title (trafilatura's row for a <caption> or a title cell spanning every column): that
    cell (in a list, or none) and the other rows."""
    if len(rows) > 1 and max(len(row) for row in rows[1:]) > 1:
        first = rows[0]
        if _text(first[0]) and all(_empty(c) for c in first[1:]):
            return first[:1], rows[1:]
    return [], rows


def _cell_blocks(cell) -> list:
    """The cell's content as blocks: its own blocks, and its loose text and inline elements
    gathered into paragraphs (the cell is emptied)."""
    blocks: list = []
    run = None

    def paragraph():
        nonlocal run
        if run is None:
            run = Element("p")
            blocks.append(run)
        return run

    if cell.tag not in _CELL_TAGS:  # a stray element in a row: its own block
        cell.tail = None
        return [cell]
    if cell.text and cell.text.strip():
        paragraph().text = cell.text
    cell.text = None
    for child in list(cell):
        if child.tag in _BLOCK_TAGS:
            tail, child.tail = child.tail, None
            blocks.append(child)
            run = None
            if tail and tail.strip():
                paragraph().text = tail
        else:
            paragraph().append(child)  # its tail goes with it
    return blocks


def _loose(table) -> list:
    """Text loose in a table (trafilatura keeps some tables of no rows), as a paragraph."""
    return [_paragraph(table.text)] if table.text and table.text.strip() else []


def _replace(el, blocks: list) -> None:
    """Put `blocks` where `el` is; the text after it stays after them."""
    parent, tail = el.getparent(), el.tail
    at = parent.index(el)
    parent.remove(el)
    for i, block in enumerate(blocks):
        parent.insert(at + i, block)
    if tail:
        if blocks or at:
            before = parent[at + len(blocks) - 1]
            before.tail = (before.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail


def _unwrap(table, caption: list, rows: list[list], rest: list) -> None:
    """Replace a layout table (or a row outside any table) by its loose text, its caption,
    the blocks of its cells in reading order and the elements `rest` it holds beside its rows."""
    blocks = _loose(table)
    for row in [caption, *rows]:
        for cell in row:
            blocks.extend(b for b in _cell_blocks(cell) if _text(b) or len(b))
    _replace(table, [*blocks, *rest])


def _paragraph(text: str):
    p = Element("p")
    p.text = text
    return p


def _inside(el, root) -> bool:
    while el is not None and el is not root:
        el = el.getparent()
    return el is root


def _cells_markdown(rows: list[list]) -> list[list[str]]:
    """Each cell's Markdown on one line (its blocks and line breaks joined by <br>, pipes
    escaped), from one trafilatura serialisation of the whole table; the cells are emptied."""
    holder = Element("body")
    for row in rows:
        for cell in row:
            SubElement(holder, "p").text = _CELL_MARK
            for block in _cell_blocks(cell):  # the table is replaced after
                holder.append(_flat_table(block) if block.tag == "table" else block)
    chunks = xmltotxt(holder, include_formatting=True).split(_CELL_MARK)[1:]
    texts = iter(
        "<br>".join(line.strip() for line in chunk.splitlines() if line.strip()).replace("|", "\\|")
        for chunk in chunks
    )
    return [[next(texts, "") for _ in row] for row in rows]


def _flat_table(table):
    """A small table nested in a data table's cell (`tables.layout_table` lets no other one
    through) as a paragraph of the cell: a row's cells parted by a space, rows by "; "."""
    lines = [" ".join(t for c in row if (t := _text(c))) for row in _rows(table)]
    return _paragraph("; ".join(line for line in lines if line))


def _table_markdown(rows: list[list]) -> str:
    grid = _cells_markdown(rows)
    width = max(len(row) for row in grid)

    def line(row: list[str]) -> str:
        return "| " + " | ".join(row + [""] * (width - len(row))) + " |"

    return "\n".join([line(grid[0]), "|" + "---|" * width, *(line(row) for row in grid[1:])])


def body_markdown(body) -> str:
    """trafilatura's Markdown of its XML `body` (left as it is), with layout tables unwrapped
    into blocks and data tables written as GitHub-flavoured Markdown tables."""
    if body is None:
        return ""
    if next(body.iter("table", "cell", *_ROW_TAGS), None) is None:
        return xmltotxt(body, include_formatting=True)
    body = copy.deepcopy(body)
    # trafilatura leaves a row outside a table, or a cell outside a row, now and then
    for el in list(body.iter(*_ROW_TAGS, "cell")):
        if el.tag == "cell" and el.getparent().tag not in _ROW_TAGS:
            row = Element("row")
            el.addprevious(row)
            row.append(el)
            row.tail, el.tail = el.tail, None
            el = row
        if el.tag in _ROW_TAGS and el.getparent().tag != "table":
            _unwrap(el, [], [list(el)], [])
    rendered: list[str] = []
    for table in list(body.iter("table")):
        if not _inside(table, body):  # in a data table written already
            continue
        caption, rows = _caption(_rows(table))
        # One row is no table here either: trafilatura moves a table nested in a cell out,
        # after the table, so the page's layout row may look like plain cells.
        one_row = sum(any(_text(c) for c in row) for row in rows) < 2
        if one_row or layout_table(
            rows, _text, sections=_SECTIONS, blocks=_BLOCKS, paragraphs=_PARAGRAPHS, link="ref"
        ):
            _unwrap(table, caption, rows, [c for c in table if c.tag not in _ROW_TAGS])
            continue
        mark = _paragraph(_TABLE_MARK.format(len(rendered)))
        rendered.append(_table_markdown(rows))
        title = [block for cell in caption for block in _cell_blocks(cell)]
        rest = [c for c in table if c.tag not in _ROW_TAGS]
        _replace(table, [*_loose(table), *title, mark, *rest])
    text = xmltotxt(body, include_formatting=True)
    for i, markdown in enumerate(rendered):
        # a blank line on each side: a table in a paragraph would otherwise continue it
        at = text.find(_TABLE_MARK.format(i))
        if at >= 0:
            end = at + len(_TABLE_MARK.format(i))
            text = f"{text[:at].rstrip(chr(10))}\n\n{markdown}\n\n{text[end:].lstrip(chr(10))}"
    return text
