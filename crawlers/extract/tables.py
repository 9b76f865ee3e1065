"""HTML tables as grids: merged cells expanded, a header row when the page marks one, Markdown."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import html as lxml_html

# Tables inside navigation chrome are layout, not data.
_CHROME = {"nav", "header", "footer", "aside"}
_MAX_SPAN = 1000  # a rowspan/colspan beyond this is a broken page, not a real table


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


def _cell_text(cell) -> str:
    return " ".join(cell.text_content().split())


def _own_rows(table) -> list:
    # Rows of this table only, not of tables nested inside its cells.
    return [tr for tr in table.iter("tr") if _nearest_table(tr) is table]


def _nearest_table(el):
    parent = el.getparent()
    while parent is not None and parent.tag != "table":
        parent = parent.getparent()
    return parent


def expand_grid(table) -> tuple[list[list[str]], bool]:
    """Expand rowspan/colspan into a rectangular grid; also say whether the first row is a header."""
    grid: dict[tuple[int, int], str] = {}
    rows = _own_rows(table)
    first_is_header = False
    for r, tr in enumerate(rows):
        cells = [c for c in tr if c.tag in ("td", "th")]
        if r == 0:
            in_thead = tr.getparent() is not None and tr.getparent().tag == "thead"
            first_is_header = in_thead or (bool(cells) and all(c.tag == "th" for c in cells))
        c = 0
        for cell in cells:
            while (r, c) in grid:
                c += 1
            text = _cell_text(cell)
            for dr in range(_span(cell, "rowspan")):
                if r + dr >= len(rows):
                    break
                for dc in range(_span(cell, "colspan")):
                    grid[(r + dr, c + dc)] = text
            c += _span(cell, "colspan")
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
