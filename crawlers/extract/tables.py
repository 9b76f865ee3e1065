"""HTML tables as grids: merged cells expanded, a header row when the page marks one, Markdown."""

from __future__ import annotations

from dataclasses import dataclass
from heapq import heappop, heappush

from lxml import html as lxml_html
from lxml.etree import XPath

# Tables inside navigation chrome are layout, not data.
_CHROME = {"nav", "header", "footer", "aside"}
_MAX_SPAN = 1000  # a rowspan/colspan beyond this is a broken page, not a real table
# Past these, a table's spans are not expanded (`expand_grid`): a few KB of rowspan/colspan
# would otherwise make a grid of millions of cells.
MAX_GRID_CELLS = 250_000
MAX_GRID_COLS = 1_000
_SPANNED = XPath("//td[@rowspan or @colspan] | //th[@rowspan or @colspan]")


@dataclass
class Table:
    """One data table of a page."""

    index: int
    header: list[str]
    cells: list[list[str]]
    markdown: str

    @property
    def n_rows(self) -> int:
        """Data rows: the grid's rows less the header row, if there is one."""
        return len(self.cells) - (1 if self.header else 0)

    @property
    def n_cols(self) -> int:
        """Widest row after expansion (rows are padded to it)."""
        return max((len(r) for r in self.cells), default=0)


def _span(cell, name: str) -> int:
    try:
        return max(1, min(_MAX_SPAN, int(cell.get(name, "1").strip() or 1)))
    except ValueError:
        return 1


# Elements whose text a browser never shows as the cell's: source code and inert markup.
_UNSHOWN = {"script", "style", "noscript", "template"}


def _cell_text(cell) -> str:
    """The cell's shown text, whitespace collapsed: without the source of its <script> and
    <style> (a wiki's inline styles, an ad slot's script), <noscript>, <template> or comments."""
    parts: list[str] = []
    stack: list = [cell]  # elements to read, and tails (str) to keep, in reverse order
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        if item.text:
            parts.append(item.text)
        for child in reversed(item):
            if child.tail:
                stack.append(child.tail)
            if isinstance(child.tag, str) and child.tag not in _UNSHOWN:
                stack.append(child)
    return " ".join("".join(parts).split())


def _own_rows(table) -> list:
    # Rows of this table only, not of tables nested inside its cells.
    return [tr for tr in table.iter("tr") if _nearest_table(tr) is table]


def _nearest_table(el):
    parent = el.getparent()
    while parent is not None and parent.tag != "table":
        parent = parent.getparent()
    return parent


def _layout(rows: list) -> list[list[tuple]]:
    """Per row, its cells as (cell, rowspan, colspan), a rowspan clamped to the rows left in the
    cell's row group (HTML: a rowspan never reaches past its <thead>, <tbody>, <tfoot> or
    table's last row)."""
    group_end: list[int] = [0] * len(rows)
    end = len(rows)
    for r in range(len(rows) - 1, -1, -1):
        if r + 1 < len(rows) and rows[r].getparent() is not rows[r + 1].getparent():
            end = r + 1
        group_end[r] = end
    return [
        [
            (c, min(_span(c, "rowspan"), group_end[r] - r), _span(c, "colspan"))
            for c in tr
            if c.tag in ("td", "th")
        ]
        for r, tr in enumerate(rows)
    ]


def _width_bound(layout: list[list[tuple]]) -> int:
    """An upper bound on the expanded grid's width, without expanding it: a row's cells can only
    be pushed right by the columns that cells of rows above still span into it."""
    spanning: list[tuple[int, int]] = []  # heap of (first row no longer spanned, colspan)
    above, widest = 0, 0
    for r, cells in enumerate(layout):
        while spanning and spanning[0][0] <= r:
            above -= heappop(spanning)[1]
        widest = max(widest, above + sum(cs for _, _, cs in cells))
        for _, rs, cs in cells:
            if rs > 1:
                heappush(spanning, (r + rs, cs))
                above += cs
    return widest


def _oversized(layout: list[list[tuple]]) -> bool:
    """Whether expanding the spans of a table laid out as `layout` could make a grid past
    MAX_GRID_CELLS cells or MAX_GRID_COLS columns."""
    width = _width_bound(layout)
    return width > MAX_GRID_COLS or len(layout) * width > MAX_GRID_CELLS


def ignore_oversized_spans(tree) -> int:
    """Remove rowspan and colspan from the cells of each table of `tree` (in place) whose spans
    could expand it past MAX_GRID_CELLS cells or MAX_GRID_COLS columns (a few KB of them make
    millions of cells, in trafilatura's table handling as in `expand_grid`); how many tables.
    A rowspan is counted to the table's last row here (trafilatura reads it across row groups)."""
    spanned = _SPANNED(tree)
    if not spanned:
        return 0
    tables = {t for t in map(_nearest_table, spanned) if t is not None}
    n = 0
    for table in tables:
        rows = _own_rows(table)
        cells = [[c for c in tr if c.tag in ("td", "th")] for tr in rows]
        layout = [
            [(c, min(_span(c, "rowspan"), len(rows) - r), _span(c, "colspan")) for c in row]
            for r, row in enumerate(cells)
        ]
        if _oversized(layout):
            for row in cells:
                for c in row:
                    c.attrib.pop("rowspan", None)
                    c.attrib.pop("colspan", None)
            n += 1
    return n


def expand_grid(table) -> tuple[list[list[str]], bool]:
    """Expand rowspan/colspan into a rectangular grid; also say whether the first row is a header.

    A table whose expanded grid could exceed MAX_GRID_CELLS cells or MAX_GRID_COLS columns
    (spans written to blow it up, or broken markup) is laid out without its spans: each cell
    once, in its row, rows padded to the widest. One still past MAX_GRID_CELLS that way is no
    grid (empty): its text stays in the document's."""
    rows = _own_rows(table)
    layout = _layout(rows)
    first_is_header = False
    if rows:
        cells = [c for c, _, _ in layout[0]]
        in_thead = rows[0].getparent() is not None and rows[0].getparent().tag == "thead"
        first_is_header = in_thead or (bool(cells) and all(c.tag == "th" for c in cells))
    if _oversized(layout):
        layout = [[(c, 1, 1) for c, _, _ in cells] for cells in layout]
        filled = [r for r, cells in enumerate(layout) if cells]
        width = max((len(cells) for cells in layout), default=0)
        if filled and (filled[-1] + 1) * width > MAX_GRID_CELLS:
            return [], False
    grid: dict[tuple[int, int], str] = {}
    for r, cells in enumerate(layout):
        c = 0
        for cell, rowspan, colspan in cells:
            while (r, c) in grid:
                c += 1
            text = _cell_text(cell)
            for dr in range(rowspan):
                for dc in range(colspan):
                    grid[(r + dr, c + dc)] = text
            c += colspan
    if not grid:
        return [], False
    n_rows = max(r for r, _ in grid) + 1
    n_cols = max(c for _, c in grid) + 1
    out = [[grid.get((r, c), "") for c in range(n_cols)] for r in range(n_rows)]
    return out, first_is_header


def to_markdown(cells: list[list[str]], has_header: bool) -> str:
    """Render a grid as a GitHub-flavoured Markdown table (an empty header if the page has none)."""
    if not cells:
        return ""
    width = max(len(r) for r in cells)

    def line(row: list[str]) -> str:
        padded = row + [""] * (width - len(row))
        return "| " + " | ".join(c.replace("|", "\\|") for c in padded) + " |"

    header = cells[0] if has_header else [""] * width
    body = cells[1:] if has_header else cells
    return "\n".join([line(header), "|" + "---|" * width, *(line(r) for r in body)])


def extract_tables(tree: lxml_html.HtmlElement) -> list[Table]:
    """Every top-level data table of a parsed page, in document order."""
    tables: list[Table] = []
    for el in tree.iter("table"):
        if _nearest_table(el) is not None:
            continue
        if any(a.tag in _CHROME for a in el.iterancestors()):
            continue
        if el.get("role") == "presentation":
            continue
        cells, has_header = expand_grid(el)
        if not cells or all(not any(row) for row in cells):
            continue
        header = cells[0] if has_header else []
        tables.append(Table(len(tables), header, cells, to_markdown(cells, has_header)))
    return tables
