"""HTML tables as grids: merged cells expanded, a header row when the page marks one, Markdown.

Only data tables: a layout table (the page's columns, a code sample beside its line numbers,
a menu, a navigation box, a grid of links) is told apart by its structure (`layout_table`); the
data tables nested in one are read on their own. A small flat table nested in a data table's
cell is that cell's text, flattened (`flat_table_text`)."""

from __future__ import annotations

from dataclasses import dataclass
from heapq import heappop, heappush
from itertools import islice

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
# Elements a browser lays out on lines of their own: their edges (and a <br>) separate words.
_LINE_BREAKING = {
    *("address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "div"),
    *("dl", "dt", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6"),
    *("header", "hr", "li", "main", "nav", "ol", "optgroup", "option", "p", "pre", "section"),
    *("summary", "table"),
    *("tbody", "td", "tfoot", "th", "thead", "tr", "ul"),
}
# What a cell of a layout table holds (`layout_table`): in the page's HTML and in trafilatura's
# XML, where headings are <head>, lists <list>, quotes <quote>, links <ref>.
HTML_SECTIONS = {"table", "h1", "h2", "h3", "h4", "h5", "h6"}
HTML_BLOCKS = {"ul", "ol", "dl", "pre", "blockquote"}
HTML_PARAGRAPHS = {"p"}


def _cell_text(cell) -> str:
    """The cell's shown text, whitespace collapsed: without the source of its <script> and
    <style> (a wiki's inline styles, an ad slot's script), <noscript>, <template> or comments;
    a <br> and the edges of a paragraph, list item or other block are a space."""
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
                if child.tag == "table":  # its rows, not its cells' words run together
                    stack.append(f" {flat_table_text(child)} ")
                elif child.tag in _LINE_BREAKING:
                    stack.extend((" ", child, " "))
                else:
                    stack.append(child)
    return " ".join("".join(parts).split())


def flat_table_text(table) -> str:
    """A nested table's text on one line, as the cell of the table around it: its caption, then
    its rows, a row's cells parted by a space and rows by "; " ("math 90; art 80")."""
    rows = [[c for c in tr if c.tag in ("td", "th")] for tr in _own_rows(table)]
    lines = [" ".join(t for c in row if (t := _cell_text(c))) for row in rows]
    caption = " ".join(_cell_text(c) for c in table if c.tag == "caption").strip()
    flat = "; ".join(line for line in lines if line)
    return f"{caption}: {flat}" if caption and flat else caption or flat


def _own_rows(table) -> list:
    # Rows of this table only, not of tables nested inside its cells.
    return [tr for tr in table.iter("tr") if _nearest_table(tr) is table]


def _nearest_table(el):
    parent = el.getparent()
    while parent is not None and parent.tag != "table":
        parent = parent.getparent()
    return parent


def layout_table(
    rows: list[list], text, *, sections: set[str], blocks: set[str], paragraphs: set[str], link: str
) -> bool:
    """Whether a table whose rows hold the cells `rows` (elements; `text(cell)` their text) lays
    out a page rather than data: one column; a cell holding a heading (a tag of `sections`) or
    a nested table that is no small flat one (`_small_nested`), nested tables in half of its
    cells or more or alone in their row; a single row holding block content (`blocks`, `paragraphs`) or links only
    (the page's two columns, a code sample beside its line numbers, a menu); half of its cells
    or more holding block content (`blocks`: lists, quotes, code; a navigation box's labels
    beside their link lists); every column (nearly) all links (site navigation set out as a
    grid; a data table's column of names linking to their pages sits beside a column of
    text). A paragraph is no block content in a table of several rows (office suites write one
    in every cell; trafilatura makes one of a cell's <br>). A small flat table nested in a cell
    (a score broken down by subject) is that cell's content."""
    # first, as it reads no text: a page nested in layout tables is not read once per level
    nested = set()  # the cells holding a small flat table
    for row in rows:
        for c in row:
            for inner in c.iter(*sections):
                if inner.tag != "table" or not _small_nested(inner, sections | blocks):
                    return True
                nested.add(c)
    # (column, cell, text) of each cell with text
    filled = [[(i, c, t) for i, c in enumerate(row) if (t := text(c))] for row in rows]
    filled = [row for row in filled if row]
    if len(filled) > 1 and len(filled[0]) == 1:
        filled = filled[1:]  # a title row above the table's columns
    if max((len(row) for row in filled), default=0) < 2:
        return True
    cells = [c for row in filled for _, c, _ in row]
    if 2 * len(nested) >= len(cells) or any(
        len(row) == 1 and row[0][1] in nested for row in filled
    ):
        return True  # a nested table standing alone in its row is a part of the page
    if len(filled) == 1:
        return any(next(c.iter(*blocks, *paragraphs), None) is not None for c in cells) or all(
            _links_only(c, t, text, link) for _, c, t in filled[0]
        )
    if 2 * sum(next(c.iter(*blocks), None) is not None for c in cells) >= len(cells):
        return True
    return _link_grid(filled, text, link)


# A nested table past this many elements is a page's own layout, not a cell's content.
_MAX_NESTED_ELEMENTS = 200


def _small_nested(table, tags: set[str]) -> bool:
    """Whether a table nested in a cell is small and flat (none of `tags` in it: no table,
    heading, list, quote or code): a cell's content, not a part of the page laid out in the
    table around it."""
    # counted no further than the limit: a page-sized nested table is not walked in full
    if next(islice(table.iter(), _MAX_NESTED_ELEMENTS, None), None) is not None:
        return False
    return next((el for el in table.iter(*tags) if el is not table), None) is None


# A navigation grid's filled cells hold a link and nothing else, this share or more of them (a
# stray label such as "More:" aside), and so do half of each column's or more.
_LINK_GRID_SHARE = 0.8


def _link_grid(filled: list[list[tuple]], text, link: str) -> bool:
    """Whether a table of several rows, its cells with text as (column, cell, text), is (nearly)
    all cells that hold a link and no other text, in every column: site navigation set out as
    a grid ("Weekly edition | Kernel | Security" above "Archives | Calendar | Subscribe"). A
    data table has a column of its own text (a product's price beside its linked name), and
    its header cells are no links."""
    links: dict[int, int] = {}
    counts: dict[int, int] = {}
    for row in filled:
        for i, c, t in row:
            counts[i] = counts.get(i, 0) + 1
            links[i] = links.get(i, 0) + _links_only(c, t, text, link)
    return sum(links.values()) >= _LINK_GRID_SHARE * sum(counts.values()) and all(
        2 * links.get(i, 0) >= n for i, n in counts.items()
    )


def _links_only(cell, cell_text: str, text, link: str) -> bool:
    return " ".join(" ".join(text(a) for a in cell.iter(link)).split()) == cell_text


def _calendar(cells: list[list[str]]) -> bool:
    """Whether a grid is a month's calendar (navigation: a blog's archive, a booking plan):
    seven columns, two thirds of its filled cells or more day numbers."""
    filled = [c for row in cells for c in row if c]
    days = sum(len(c) <= 2 and c.isascii() and c.isdigit() and 1 <= int(c) <= 31 for c in filled)
    return max(len(row) for row in cells) == 7 and 3 * days >= 2 * len(filled) > 0


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
    grid (empty): its text stays in the document's. A first row of one cell spanning every
    column above other rows is the table's title, not its header: it is left out (`read_grid`
    gives it), and the header is looked for in the row below."""
    _, cells, has_header = read_grid(table)
    return cells, has_header


def _header_row(tr, cells: list) -> bool:
    in_thead = tr.getparent() is not None and tr.getparent().tag == "thead"
    return in_thead or (bool(cells) and all(c.tag == "th" for c in cells))


def read_grid(table) -> tuple[str, list[list[str]], bool]:
    """`expand_grid`'s grid and header flag, with the table's title: its <caption>, or the
    text of a first row of one cell spanning every column (then not in the grid); "" if none."""
    rows = _own_rows(table)
    layout = _layout(rows)
    caption = " ".join(_cell_text(c) for c in table if c.tag == "caption").strip()
    if _oversized(layout):
        layout = [[(c, 1, 1) for c, _, _ in cells] for cells in layout]
        filled = [r for r, cells in enumerate(layout) if cells]
        width = max((len(cells) for cells in layout), default=0)
        if filled and (filled[-1] + 1) * width > MAX_GRID_CELLS:
            return caption, [], False
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
        return caption, [], False
    n_rows = max(r for r, _ in grid) + 1
    n_cols = max(c for _, c in grid) + 1
    out = [[grid.get((r, c), "") for c in range(n_cols)] for r in range(n_rows)]
    first = 0
    if (
        len(layout[0]) == 1
        and layout[0][0][1] == 1
        and n_cols > 1
        and n_rows > 1
        and len(set(out[0])) == 1
    ):
        # a title row (a Wikipedia navbox's, an infobox's): colspan over the whole width
        title = out[0][0]
        caption = f"{caption} {title}".strip() if title not in caption else caption
        out, first = out[1:], 1
    if first >= len(rows):
        return caption, out, False
    header_cells = [c for c, _, _ in layout[first]]
    return caption, out, _header_row(rows[first], header_cells)


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


def _layout_rows(table) -> bool:
    """`layout_table` of an HTML table."""
    rows = [[c for c in tr if c.tag in ("td", "th")] for tr in _own_rows(table)]
    return layout_table(
        rows,
        _cell_text,
        sections=HTML_SECTIONS,
        blocks=HTML_BLOCKS,
        paragraphs=HTML_PARAGRAPHS,
        link="a",
    )


def flatten_nested_tables(tree) -> int:
    """Replace (in place) each table nested in a data table's cell by its text on one line
    (`flat_table_text`, in a <span>); how many. trafilatura moves a nested table out, after
    the table around it, and leaves its cell empty: flattened, the cell keeps its content in
    the document's text and Markdown as in the tables dataset. A table nested in a layout table
    is left to be read on its own."""
    outer_data: dict = {}  # outer table -> whether a data table (lxml elements hash by identity)
    n = 0
    for el in list(tree.iter("table")):
        outer = _nearest_table(el)
        if outer is None or el.getparent() is None:
            continue
        if outer not in outer_data:
            outer_data[outer] = not (
                any(a.tag in _CHROME for a in outer.iterancestors())
                or outer.get("role") == "presentation"
                or _layout_rows(outer)
            )
        if outer_data[outer]:
            span = lxml_html.Element("span")
            span.text = f" {flat_table_text(el)} "
            span.tail = el.tail
            el.getparent().replace(el, span)
            n += 1
    return n


def extract_tables(tree: lxml_html.HtmlElement) -> list[Table]:
    """Every data table of a parsed page, in document order: a layout table (`layout_table`)
    is left out, the data tables nested in it are read on their own; a table nested in a data
    table's cell is that cell's text (`flat_table_text`), no table of its own."""
    tables: list[Table] = []
    kept: set = set()  # the data tables' elements (lxml elements hash by identity)
    for el in tree.iter("table"):
        if any(a.tag in _CHROME or a in kept for a in el.iterancestors()):
            continue
        if el.get("role") == "presentation":
            continue
        if _layout_rows(el):
            continue
        caption, cells, has_header = read_grid(el)
        if not cells or all(not any(row) for row in cells) or _calendar(cells):
            continue
        header = cells[0] if has_header else []
        markdown = to_markdown(cells, has_header)
        if caption:
            markdown = f"{caption}\n\n{markdown}"
        tables.append(Table(len(tables), header, cells, markdown))
        kept.add(el)
    return tables
