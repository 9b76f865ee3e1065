"""Table pairs: each extracted table's Markdown, an image of it rendered by the real browser, and
question-answer pairs whose answers are cells or are computed from cells, verified.

Input: an extract output's `tables.parquet` (common.schemas.TABLES: `doc_id`,
`table_index`, `markdown`, `header`, `cells` (the grid with merged cells expanded; the header row,
if any, is `cells[0]`), `training_allowed`). The table's own HTML is not kept by the extract
stage, so the image is rendered from an HTML table rebuilt from the cells: header cells as `<th>`
(runs of one repeated header text merged back into a colspan), body cells as `<td>`, with a
neutral stylesheet. The page is set directly (`page.set_content`), JavaScript is off and every
request is aborted, so rendering fetches nothing. A table with characters no installed font can
draw (fontconfig's coverage) keeps its image but gets status `missing_glyphs: ...`.

QA (programmatic, `verified=True` only where the answer is recomputed from the cells):
- `lookup`: the cell at a row header (first column of unique labels) and a column header;
- `max`, `min`, `argmax`: over a numeric column (numbers with units, grouping, percent signs,
  currency and Unicode minus are parsed; a column counts as numeric when its cells share one
  unit and at least 80% of them parse). The decimal separator is decided per column from all its
  cells (`column_decimal`): "12,5", "1.234,5" and "3.645.000" say ',', "3.5" and "1,234,567" say
  '.'; a trailing currency ("1.299 €") says ','. A column whose only evidence is "1.299"
  (1.299 or 1299) is not numeric: no computed QA rather than a guess. "1,234" alone reads 1234;
- `sum`, `average` of a numeric column; `count` of data rows; `difference` between two cells;
- one `unanswerable` question per table (a row that is not in the table).
Tables with no header row get only `count` and `unanswerable`; without a row-header column there
is no `lookup`/`argmax`/`difference`.

Teacher (optional, `common.teacher.TeacherClient`): asked for QA with references (row label,
column, second row); each answer is recomputed from the cells; one that disagrees is dropped
with its reason, one that cannot be checked (kind `other`) is kept with `verified=False`. A
number agrees when its value does (read with the column's decimal separator) and it carries the
same magnitude word (thousand, million, bn, Mio., Mrd., 万, 亿, млн...) and no unit (%, currency,
words) that the cell or column does not: "4,259.9 trillion" for a cell "4,259.9" disagrees, "1.5"
for "1.5 %" agrees. Every dropped item is a row of `table_qa_rejects.parquet` (REJECTS: id,
row_id, doc_id, question, answer, kind, reason; a failed teacher call is one row, reason
`teacher_error: ...`). The
teacher's own question is kept (its varied wording is what it adds), so it must name what the
answer was recomputed from: the column, and the row (and row_b) for lookup and difference, the
absent row for unanswerable, compared as whole tokens (synth/textmatch.py: case, accents and
punctuation aside; a column's trailing unit in brackets may be left out); else the item is
dropped as `teacher_question_mismatch` ("How many moons does Jupiter have?" is no question about
the table, whatever `kind: count` recomputes). A `count` names nothing to check, and the table's
own count question asks it already: dropped as `teacher_count_duplicate`. A table
the one consent rule refuses (common.consent: `training_allowed` not the boolean true, or the
consent ledger opted out its document) is never sent (and `items=` makes the client refuse too).
"""

from __future__ import annotations

import bisect
import hashlib
import html
import logging
import math
import re
import shutil
import subprocess
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, Field

log = logging.getLogger("synth.tables")

OUTPUT_NAME = "table_pairs.parquet"
REJECTS_NAME = "table_qa_rejects.parquet"
INPUT_NAME = "tables.parquet"
IMAGES_DIR = "images"
UNANSWERABLE = "unanswerable"
TEACHER_KINDS = ("lookup", "max", "min", "argmax", "sum", "average", "count", "difference")

QA_STRUCT = pa.struct(
    [
        ("question", pa.string()),
        ("answer", pa.string()),
        ("kind", pa.string()),
        ("verified", pa.bool_()),
    ]
)
TABLE_PAIRS = pa.schema(
    [
        ("id", pa.string()),
        ("doc_id", pa.string()),
        ("table_index", pa.int32()),
        ("markdown", pa.string()),
        ("image_path", pa.string()),
        ("qa", pa.list_(QA_STRUCT)),
        ("training_allowed", pa.bool_()),
        ("status", pa.string()),
    ]
)
REJECTS = pa.schema(
    [
        ("id", pa.string()),  # "<row id>#r<k>": the k-th item dropped for that table
        ("row_id", pa.string()),  # the table_pairs row
        ("doc_id", pa.string()),
        ("question", pa.string()),
        ("answer", pa.string()),
        ("kind", pa.string()),
        ("reason", pa.string()),
    ]
)
_REQUIRED = {
    "doc_id": "string",
    "table_index": "int",
    "markdown": "string",
    "cells": "list",
    "training_allowed": "any",
}

STYLESHEET = """
html, body { margin: 0; padding: 0; background: #ffffff; }
body { padding: 8px; font-family: "DejaVu Sans", "Liberation Sans", sans-serif; font-size: 14px;
       color: #111111; }
table { border-collapse: collapse; }
th, td { border: 1px solid #888888; padding: 4px 8px; text-align: left; vertical-align: top;
         max-width: 360px; overflow-wrap: anywhere; }
th { background: #eeeeee; font-weight: bold; }
"""

# --------------------------------------------------------------------------------------------
# numbers in cells

_NUM = re.compile(
    r"^(?P<pre>[^\d\s+\-−.,]{0,4}?)\s*(?P<sign>[+\-−]?)\s*(?P<pre2>[$€£¥₹]?)\s*"
    r"(?P<num>\d[\d.,'’\u00a0\u202f\u2009 ]*\d|\d|[.,]\d+)"
    r"\s*(?P<unit>[^\d]{0,16})$"
)
# Currencies written after the number in the decimal-comma style ("1.299 €", "12,50 zł").
_COMMA_CURRENCY = {"€", "eur", "chf", "kr", "zł", "kč", "ft", "lei", "₽", "руб", "₺", "₴"}


@dataclass(frozen=True)
class Number:
    """A parsed numeric cell: its value and the unit around it (prefix, suffix), normalised;
    `decimals`: the decimal separators its spelling allows; `ambiguous`: the one separator of a
    spelling both allow with different values ("1.299": '.'), else ''."""

    value: float
    unit: str
    decimals: frozenset[str] = frozenset(".,")
    ambiguous: str = ""


def parse_number(text: str, decimal: str | None = None) -> Number | None:
    """The number in a cell such as '1,234', '$12.50', '−3', '45 %', '12 kg', '1.234,5 €';
    None if not one. `decimal` ('.' or ','): the column's decimal separator, used where the
    spelling allows it; None (or a spelling that allows only the other): the spelling's own
    reading, one separator before 3 digits grouping ("1.299" is 1299: synth.textmatch)."""
    from synth.textmatch import number_readings

    s = " ".join((text or "").split())
    if not s:
        return None
    m = _NUM.match(s)
    if not m:
        return None
    pre = (m.group("pre") + m.group("pre2")).strip()
    unit = m.group("unit").strip()
    if any(ch.isalpha() for ch in pre) and len(pre) > 3:
        return None
    # A trailing unit must be a unit, not more prose or another number's punctuation.
    if unit and (len(unit.split()) > 2 or unit[0] in ",.-/:" or "(" in unit):
        return None
    num = m.group("num")
    readings = number_readings("0" + num if num[0] in ".," else num)
    if not readings:
        return None
    values = {d: float(v) for d, v in readings.items()}
    if decimal in values:
        value = values[decimal]
    elif len(set(values.values())) == 1:
        value = next(iter(values.values()))
    else:  # "1.299": the separator in it groups
        value = next(v for d, v in values.items() if d not in num)
    ambiguous = ""
    if len(set(values.values())) > 1:
        ambiguous = next(c for c in num if c in ".,")
    if m.group("sign") in ("-", "−"):
        value = -value
    return Number(value, f"{pre}|{unit.lower()}", frozenset(values), ambiguous)


def column_decimal(cells: Sequence[str]) -> str | None:
    """The decimal separator ('.' or ',') of a column's numbers, from all its cells: what every
    number's spelling allows; if both, a trailing currency ("1.299 €") says ',' and a leading one
    '.'; "1,234" alone reads as grouping ('.'); None when undecidable (cells that allow only
    different separators, or only "1.299"-like evidence: 1.299 or 1299)."""
    allowed = {".", ","}
    ambiguous: set[str] = set()
    currency = set()
    for c in cells:
        n = parse_number(c)
        if n is None:
            continue
        allowed &= n.decimals
        if n.ambiguous:
            ambiguous.add(n.ambiguous)
        pre, _, suf = n.unit.partition("|")
        if suf.strip(" .") in _COMMA_CURRENCY:
            currency.add(",")
        elif any(unicodedata.category(ch) == "Sc" for ch in pre):
            currency.add(".")
    if len(allowed) < 2:
        return next(iter(allowed), None)
    if not ambiguous or ambiguous == {","}:
        return "."
    return next(iter(currency)) if len(currency) == 1 else None


def format_number(x: float) -> str:
    """A plain, compact rendering of a computed number (at most 4 decimals, no exponent)."""
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.4f}".rstrip("0").rstrip(".")


def numbers_agree(a: float, b: float) -> bool:
    """Equal up to rounding to 2 decimals or a relative 1e-6 (teacher answers are rounded)."""
    return abs(a - b) <= max(1e-6 * max(abs(a), abs(b)), 0.005 + 1e-9)


def _norm(text: str) -> str:
    return " ".join((text or "").split()).casefold()


# --------------------------------------------------------------------------------------------
# the table as a grid


@dataclass
class Grid:
    """A table's header (column names, or [] without a header row) and its data rows, padded."""

    header: list[str]
    rows: list[list[str]]
    padded: int = 0  # rows that were shorter than the widest and were padded with ''
    footer: list[list[str]] = field(default_factory=list)  # a trailing total row, kept apart

    @property
    def width(self) -> int:
        return max([len(self.header), *(len(r) for r in self.rows)], default=0)

    def column(self, j: int) -> list[str]:
        return [r[j] for r in self.rows]

    def usable_columns(self) -> list[int]:
        """Columns whose header is non-empty and unique (they can be named in a question)."""
        names = Counter(_norm(h) for h in self.header)
        return [j for j, h in enumerate(self.header) if _norm(h) and names[_norm(h)] == 1]

    def row_header(self) -> int | None:
        """The row-header column: the leftmost usable column whose cells are non-empty, unique
        and mostly not numbers (a first column merged by rowspan repeats, so the next is tried)."""
        if not self.header or not self.rows:
            return None
        for j in self.usable_columns():
            labels = [_norm(c) for c in self.column(j)]
            if any(not c for c in labels) or len(set(labels)) != len(labels):
                continue
            if sum(parse_number(c) is not None for c in self.column(j)) > len(labels) / 2:
                continue
            return j
        return None

    def numeric(self, j: int) -> list[Number | None] | None:
        """The column's numbers if it is numeric (>= 2 rows, >= 80% parse, one shared unit, a
        decidable decimal separator: `column_decimal`)."""
        decimal = column_decimal(self.column(j))
        if decimal is None:
            return None
        nums = [parse_number(c, decimal) for c in self.column(j)]
        got = [n for n in nums if n is not None]
        if len(got) < 2 or len(got) < 0.8 * len(nums) or len({n.unit for n in got}) != 1:
            return None
        return nums

    def find_row(self, label: str, rh: int) -> int | None:
        want = _norm(label)
        hits = [i for i, r in enumerate(self.rows) if _norm(r[rh]) == want]
        return hits[0] if len(hits) == 1 else None

    def find_column(self, name: str) -> int | None:
        want = _norm(name)
        hits = [j for j in self.usable_columns() if _norm(self.header[j]) == want]
        return hits[0] if len(hits) == 1 else None


class TableError(ValueError):
    """A table row that cannot be made into a pair; the message is the row's status reason."""


def grid_from_row(row: dict[str, Any]) -> Grid:
    """The Grid of one tables.parquet row; TableError (the status reason) if unusable."""
    cells = row.get("cells")
    if cells is None:
        raise TableError("no_cells: the row's cells are null")
    grid = [[("" if c is None else str(c)) for c in (r or [])] for r in cells]
    if not any(any(c.strip() for c in r) for r in grid):
        raise TableError("empty_table: every cell is empty")
    header = [("" if c is None else str(c)) for c in (row.get("header") or [])]
    body = grid[1:] if header else grid
    width = max([len(header), *(len(r) for r in body)])
    padded = sum(1 for r in body if len(r) < width)
    body = [r + [""] * (width - len(r)) for r in body]
    if header:
        header = header + [""] * (width - len(header))
    body = [r for r in body if any(c.strip() for c in r)]
    footer = [body.pop()] if len(body) > 2 and is_total_row(body[-1]) else []
    if not body:
        raise TableError("no_data_rows: the table has a header but no non-empty data row")
    return Grid(header, body, padded, footer)


_TOTAL_WORDS = {
    "total",
    "totals",
    "sum",
    "grand total",
    "overall",
    "all",
    "summe",
    "gesamt",
    "insgesamt",
    "totale",
    "somme",
    "suma",
    "totaal",
    "итого",
    "всего",
    "сумма",
    "合计",
    "总计",
    "合計",
}


def is_total_row(row: list[str]) -> bool:
    """A total row: its first cell is a total word (several languages), or a label spread by
    colspan over all cells but the last."""
    first = _norm(row[0]).rstrip(":")
    if first in _TOTAL_WORDS:
        return True
    return (
        len(row) >= 3
        and bool(first)
        and parse_number(row[0]) is None
        and all(_norm(c) == _norm(row[0]) for c in row[:-1])
        and _norm(row[-1]) != _norm(row[0])
    )


# --------------------------------------------------------------------------------------------
# QA: specs, computed answers, questions


@dataclass(frozen=True)
class QASpec:
    """What a question asks, by reference to the grid (labels and column names, not indices)."""

    kind: str
    column: str | None = None
    row: str | None = None
    row_b: str | None = None


def compute_answer(spec: QASpec, grid: Grid) -> str | None:
    """The answer recomputed from the cells, or None if the spec does not resolve in this grid."""
    kind = spec.kind
    if kind == "count":
        return str(len(grid.rows))
    if kind == UNANSWERABLE:
        rh = grid.row_header()
        if spec.row is None:
            return None
        if rh is not None and grid.find_row(spec.row, rh) is not None:
            return None  # the row exists: the question is answerable after all
        if rh is None and any(_norm(spec.row) == _norm(c) for r in grid.rows for c in r):
            return None
        return UNANSWERABLE
    j = grid.find_column(spec.column) if spec.column is not None else None
    if j is None:
        return None
    rh = grid.row_header()
    if kind == "lookup":
        if rh is None or spec.row is None or j == rh:
            return None
        i = grid.find_row(spec.row, rh)
        return None if i is None or not grid.rows[i][j].strip() else grid.rows[i][j]
    nums = grid.numeric(j)
    if nums is None or (rh is not None and j == rh):
        return None
    vals = [(i, n.value) for i, n in enumerate(nums) if n is not None]
    if kind in ("max", "min", "argmax"):
        pick = max if kind in ("max", "argmax") else min
        best = pick(v for _, v in vals)
        at = [i for i, v in vals if v == best]
        if kind == "argmax":
            return grid.rows[at[0]][rh] if rh is not None and len(at) == 1 else None
        return format_number(best)
    if kind == "sum":
        return format_number(math.fsum(v for _, v in vals))
    if kind == "average":
        return format_number(math.fsum(v for _, v in vals) / len(vals))
    if kind == "difference":
        if rh is None or spec.row is None or spec.row_b is None:
            return None
        a, b = grid.find_row(spec.row, rh), grid.find_row(spec.row_b, rh)
        if a is None or b is None or nums[a] is None or nums[b] is None:
            return None
        return format_number(nums[a].value - nums[b].value)
    return None


def _unit_parts(text: str) -> tuple[set[int], set[str]]:
    """A unit's magnitude words (as powers of ten) and its other parts (%, currency symbols,
    words such as points or kg)."""
    from synth.textmatch import MAGNITUDES, tokens

    words = tokens(text.replace(".", " "))
    symbols = {ch for ch in text if ch in "%‰" or unicodedata.category(ch) == "Sc"}
    return {MAGNITUDES[w] for w in words if w in MAGNITUDES}, symbols | {
        w for w in words if w not in MAGNITUDES and not w[:1].isdigit()
    }


def answers_agree(
    answer: str,
    truth: str,
    decimal: str | None = None,
    unit: str | None = None,
    column: str = "",
) -> bool:
    """A given answer against the recomputed one: text up to case and whitespace; numbers up to
    rounding, read with the column's decimal separator `decimal` (None: each spelling's own),
    with the truth's magnitude word (million, bn, Mio., 万, млн...; none if it has none) and no
    unit (%, currency, words) the truth does not carry (it may leave one out). `unit`: the unit
    ("pre|suf") of the column a computed truth (a plain number: max, sum...) comes from;
    `column`: its header, whose units an answer may also carry ("GDP (US$ bn)")."""
    if _norm(answer) == _norm(truth):
        return True
    a = parse_number(answer, decimal)
    t = parse_number(truth, "." if unit is not None else decimal)
    if a is None or t is None or not numbers_agree(a.value, t.value):
        return False
    a_mag, a_other = _unit_parts(a.unit.replace("|", " "))
    t_mag, t_other = _unit_parts((t.unit if unit is None else unit).replace("|", " "))
    c_mag, c_other = _unit_parts(column)
    if a_mag != t_mag and (t_mag or not a_mag <= c_mag):
        return False
    return a_other <= t_other | c_other


def question_for(spec: QASpec, grid: Grid) -> str:
    """The question's wording for a spec (English; the labels are the table's own)."""
    col, row, row_b = spec.column, spec.row, spec.row_b
    rh = grid.row_header()
    what = grid.header[rh] if rh is not None else "row"
    return {
        "lookup": f'What is the {col} of "{row}"?',
        "max": f"What is the highest {col} in the table?",
        "min": f"What is the lowest {col} in the table?",
        "argmax": f"Which {what} has the highest {col}?",
        "sum": f"What is the total {col} over all rows?",
        "average": f"What is the average {col} over the rows that give one?",
        "count": "How many data rows does the table have (not counting a header or total row)?",
        "difference": f'What is the {col} of "{row}" minus the {col} of "{row_b}"?',
        UNANSWERABLE: (
            f'What is the {col} of "{row}"?' if col else f'What does the table say about "{row}"?'
        ),
    }[spec.kind]


def _unanswerable_label(grid: Grid, seed: int) -> str:
    present = {_norm(c) for r in grid.rows for c in r} | {_norm(h) for h in grid.header}
    for k in range(100):
        label = f"Row {len(grid.rows) + 7 + seed % 13 + k}"
        if _norm(label) not in present:
            return label
    raise AssertionError("unreachable: 100 distinct labels cannot all be in the table")


def programmatic_specs(grid: Grid, seed: int) -> list[QASpec]:
    """The questions this table supports (see the module docstring), deterministic per seed."""
    specs: list[QASpec] = [QASpec("count")]
    cols = grid.usable_columns()
    rh = grid.row_header()
    value_cols = [j for j in cols if j != rh]
    numeric = [j for j in value_cols if grid.numeric(j) is not None]
    if rh is not None and value_cols:
        j = value_cols[seed % len(value_cols)]
        filled = [i for i, r in enumerate(grid.rows) if r[j].strip()]
        if filled:
            i = filled[seed % len(filled)]
            specs.append(QASpec("lookup", grid.header[j], grid.rows[i][rh]))
    if numeric:
        j = numeric[seed % len(numeric)]
        name = grid.header[j]
        specs += [QASpec("max", name), QASpec("min", name), QASpec("sum", name)]
        specs.append(QASpec("average", name))
        if rh is not None:
            specs.append(QASpec("argmax", name))
            nums = grid.numeric(j) or []
            have = [i for i, n in enumerate(nums) if n is not None]
            if len(have) >= 2:
                a = have[seed % len(have)]
                b = have[(seed // len(have) + 1 + have.index(a)) % len(have)]
                if a != b:
                    specs.append(QASpec("difference", name, grid.rows[a][rh], grid.rows[b][rh]))
    label = _unanswerable_label(grid, seed)
    col = grid.header[value_cols[0]] if value_cols else None
    specs.append(QASpec(UNANSWERABLE, col, label))
    return specs


def programmatic_qa(grid: Grid, seed: int) -> list[dict[str, Any]]:
    """QA dicts for the table, every answer computed from the cells (hence verified)."""
    out = []
    for spec in programmatic_specs(grid, seed):
        answer = compute_answer(spec, grid)
        if answer is None:
            continue  # a tie for argmax, say: no single answer, so no question
        out.append(
            {
                "question": question_for(spec, grid),
                "answer": answer,
                "kind": spec.kind,
                "verified": True,  # computed from the cells by compute_answer
            }
        )
    return out


# --------------------------------------------------------------------------------------------
# teacher


class TeacherQAItem(BaseModel):
    question: str
    answer: str
    kind: str = Field(description="one of " + ", ".join(TEACHER_KINDS) + ", unanswerable, other")
    row: str | None = Field(None, description="the row label (first column) the question is about")
    column: str | None = Field(None, description="the column header the question is about")
    row_b: str | None = Field(None, description="for difference: the row subtracted")


class TeacherQA(BaseModel):
    items: list[TeacherQAItem]


TEACHER_PROMPT = (
    "Here is a table in Markdown. Write up to {n} question-answer pairs about it whose answers "
    "come from its cells. For each give: question, answer (a cell's text or a number), kind "
    "(lookup: the cell at row and column; max, min, sum, average: over a column; argmax: the row "
    "label with the largest value of a column; count: number of data rows; difference: column "
    "value of row minus that of row_b; unanswerable: the table does not say; other), row (the "
    "row label in the first column), column (the column header) and row_b where they apply.\n\n"
    "{markdown}"
)


def _unnamed(question: str, spec: QASpec) -> list[str]:
    """The labels a checked item's answer was recomputed from that its question does not name."""
    from synth.textmatch import names

    need = {
        "lookup": (spec.column, spec.row),
        "difference": (spec.column, spec.row, spec.row_b),
        UNANSWERABLE: (spec.row,),
    }.get(spec.kind, (spec.column,))
    return [label for label in need if label and not names(question, label)]


def _agrees(answer: str, truth: str, spec: QASpec, grid: Grid) -> bool:
    """answers_agree with the column's decimal separator and, for a computed truth, its unit."""
    j = grid.find_column(spec.column) if spec.column is not None else None
    if j is None or spec.kind in ("count", "argmax", UNANSWERABLE):
        return answers_agree(answer, truth)
    decimal = column_decimal(grid.column(j))
    if spec.kind == "lookup":
        return answers_agree(answer, truth, decimal, column=grid.header[j])
    nums = [n for n in grid.numeric(j) or [] if n is not None]
    unit = nums[0].unit if nums else "|"
    return answers_agree(answer, truth, decimal, unit, grid.header[j])


def teacher_qa(
    teacher: Any,
    row: dict[str, Any],
    grid: Grid,
    n: int,
    rejects: Counter,
    dropped: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The teacher's QA for one table, each checked against the cells (the answer recomputed,
    the question naming what it was recomputed from); disagreeing, unresolvable or mismatched
    items are dropped and counted in `rejects` by reason (and, given `dropped`, appended to it
    as {question, answer, kind, reason})."""
    messages = [
        {"role": "user", "content": TEACHER_PROMPT.format(n=n, markdown=row["markdown"] or "")}
    ]
    item = {k: row.get(k) for k in ("id", "doc_id", "url", "training_allowed")}
    answer = teacher.chat_json(messages, TeacherQA, items=[item], temperature=0)
    kept = []
    for qa in answer.items[:n]:
        kind = (qa.kind or "").strip().lower()
        reason = ""
        if kind == "other":
            verified = False
        elif kind in TEACHER_KINDS or kind == UNANSWERABLE:
            spec = QASpec(kind, qa.column, qa.row, qa.row_b)
            truth = compute_answer(spec, grid)
            verified = True
            if truth is None:
                reason = "teacher_unresolvable_reference"
            elif not _agrees(qa.answer, truth, spec, grid):
                reason = "teacher_answer_disagrees"
            elif kind == "count":  # names nothing; programmatic_qa asks it already
                reason = "teacher_count_duplicate"
            elif _unnamed(qa.question, spec):
                reason = "teacher_question_mismatch"
        else:
            reason = "teacher_unknown_kind"
        if reason:
            rejects[reason] += 1
            if dropped is not None:
                dropped.append(
                    {"question": qa.question, "answer": qa.answer, "kind": kind, "reason": reason}
                )
            continue
        kept.append(
            {"question": qa.question, "answer": qa.answer, "kind": kind, "verified": verified}
        )
    return kept


# --------------------------------------------------------------------------------------------
# HTML and the browser


def _merged_row(cells: list[str], tag: str) -> str:
    """A row whose runs of one repeated non-empty text (an expanded colspan) are merged back."""
    out, j = [], 0
    while j < len(cells):
        span = 1
        while cells[j].strip() and j + span < len(cells) and cells[j + span] == cells[j]:
            span += 1
        attr = f' colspan="{span}"' if span > 1 else ""
        out.append(f"<{tag}{attr}>{html.escape(cells[j])}</{tag}>")
        j += span
    return "<tr>" + "".join(out) + "</tr>"


def table_html(grid: Grid) -> str:
    """A standalone page holding the table, rebuilt from the grid (see the module docstring)."""
    parts = ["<table>"]
    if grid.header:
        parts.append(f"<thead>{_merged_row(grid.header, 'th')}</thead>")
    parts.append("<tbody>")
    for r in grid.rows:
        parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>")
    parts += [_merged_row(r, "td") for r in grid.footer]
    parts.append("</tbody></table>")
    csp = "default-src 'none'; style-src 'unsafe-inline'"
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f"<style>{STYLESHEET}</style></head><body>{''.join(parts)}</body></html>"
    )


_coverage: list[tuple[int, int]] | None = None


def font_coverage() -> list[tuple[int, int]] | None:
    """Code point ranges that some installed font covers (fontconfig's `fc-list`), merged;
    None where fc-list is missing (then glyph coverage is not checked)."""
    global _coverage
    if _coverage is not None:
        return _coverage
    exe = shutil.which("fc-list")
    if exe is None:
        log.warning("fc-list (fontconfig) not found: table glyph coverage is not checked")
        return None
    text = subprocess.run(
        [exe, "--format", "%{charset}\\n"], capture_output=True, text=True, timeout=60
    ).stdout
    ranges = []
    for tok in text.split():
        lo, _, hi = tok.partition("-")
        try:
            ranges.append((int(lo, 16), int(hi or lo, 16)))
        except ValueError:
            continue
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    _coverage = merged
    return merged


def missing_glyphs(text: str) -> list[str]:
    """Characters of `text` that no installed font can draw (they would render as boxes)."""
    cov = font_coverage()
    if cov is None:
        return []
    starts = [lo for lo, _ in cov]
    out = []
    for ch in sorted(set(text)):
        if ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf"):
            continue
        k = bisect.bisect_right(starts, ord(ch)) - 1
        if k < 0 or ord(ch) > cov[k][1]:
            out.append(ch)
    return out


class TableRenderer:
    """One headless Chromium (the project's, launched as crawlers.render does, sandboxed where
    it can be) that screenshots table pages. Every request a page makes is aborted and counted."""

    def __init__(self, chromium: str | None = None, sandbox: str = "auto", timeout_s: float = 20):
        self.chromium = chromium
        self.sandbox = sandbox
        self.timeout_ms = int(timeout_s * 1000)
        self.blocked_requests: list[str] = []
        self.sandbox_note = ""
        self._pw = self._browser = self._context = None
        self._workdir: str | None = None
        self._pids: set[int] = set()

    def __enter__(self) -> TableRenderer:
        from playwright.sync_api import sync_playwright

        from common.browser import fallback_plan, find_chromium, launch_kwargs, sandbox_plan
        from common.procs import browser_descendants

        before = browser_descendants()
        try:
            chromium = find_chromium(self.chromium)
            self._workdir = tempfile.mkdtemp(prefix="refinery-tables-")
            self._pw = sync_playwright().start()
            plan = sandbox_plan(chromium, Path(self._workdir), self.sandbox)
            try:
                self._browser = self._pw.chromium.launch(**launch_kwargs(plan))
            except Exception as exc:
                plan = fallback_plan(chromium, self.sandbox, plan, exc)
                self._browser = self._pw.chromium.launch(**launch_kwargs(plan))
            self.sandbox_note = plan.why
            if not plan.sandbox:
                log.warning("table rendering: Chromium runs WITHOUT its sandbox: %s", plan.why)
            self._pids = browser_descendants() - before
            self._context = self._browser.new_context(
                java_script_enabled=False,
                viewport={"width": 1280, "height": 800},
                device_scale_factor=1,
                service_workers="block",
                offline=True,
            )
            self._context.route("**/*", self._abort)
        except BaseException:
            self.close()
            raise
        return self

    def _abort(self, route) -> None:
        self.blocked_requests.append(route.request.url)
        route.abort("blockedbyclient")

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        from common.procs import alive, kill_all

        try:
            if self._browser is not None:
                self._browser.close()
            if self._pw is not None:
                self._pw.stop()
        except Exception:  # noqa: BLE001 - cleanup goes on; the kill below is the backstop
            pass
        finally:
            self._browser = self._pw = self._context = None
            kill_all({p for p in self._pids if alive(p)})
            self._pids = set()
            if self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)
                self._workdir = None

    def screenshot(self, page_html: str, path: Path) -> None:
        """Set the page and screenshot its table element to `path` (PNG)."""
        assert self._context is not None, "use TableRenderer as a context manager"
        page = self._context.new_page()
        try:
            page.set_content(page_html, wait_until="load", timeout=self.timeout_ms)
            page.locator("table").first.screenshot(
                path=str(path), timeout=self.timeout_ms, animations="disabled"
            )
        finally:
            page.close()


# --------------------------------------------------------------------------------------------
# the stage


@dataclass
class Summary:
    """What make_table_pairs did: counts by status, QA by kind, teacher rejects by reason."""

    out_path: str
    tables: int = 0
    ok: int = 0
    rendered: int = 0
    status: dict[str, int] = field(default_factory=dict)
    qa: int = 0
    qa_verified: int = 0
    qa_by_kind: dict[str, int] = field(default_factory=dict)
    teacher_sent: int = 0
    teacher_skipped_opted_out: int = 0
    teacher_rejects: dict[str, int] = field(default_factory=dict)
    blocked_requests: int = 0
    seconds: float = 0.0
    render_sandbox: str = ""

    @property
    def verified_share(self) -> float:
        return self.qa_verified / self.qa if self.qa else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["verified_share"] = round(self.verified_share, 4)
        return d


def read_tables(tables_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of `<tables_dir>/tables.parquet` (or of a tables.parquet path given directly)."""
    p = Path(tables_dir)
    path = p if p.is_file() else p / INPUT_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist; pass the extract stage's output directory "
            f"(the one holding {INPUT_NAME})"
        )
    from common.inputs import check_columns, read_parquet, read_schema

    fix = "it must be an extract stage tables.parquet (common.schemas.TABLES)"
    schema = read_schema(path, fix)
    missing = [c for c in _REQUIRED if c not in schema.names]
    if missing:
        raise ValueError(
            f"{path} lacks column(s) {', '.join(missing)}; it must be an extract stage "
            "tables.parquet (common.schemas.TABLES)"
        )
    check_columns(path, schema, _REQUIRED, fix=fix)
    rows = read_parquet(path, fix=fix).to_pylist()
    # (doc_id, table_index) is the pair's id and the output's sort key: a row without one is
    # no table (one line naming the row), not a TypeError in the middle of the run
    for i, r in enumerate(rows):
        if r["doc_id"] is None or r["table_index"] is None:
            raise ValueError(f"{path}: row {i} has a null doc_id or table_index; {fix}")
    return rows


def pair_id(doc_id: str, table_index: int) -> str:
    """The pair's id: the document id and the table's index in it."""
    return f"{doc_id}#t{table_index}"


def _image_name(pid: str) -> str:
    return hashlib.sha256(pid.encode("utf-8")).hexdigest()[:24] + ".png"


def make_table_pairs(
    tables_dir: str | Path,
    out_dir: str | Path,
    *,
    teacher: Any = None,
    render: bool = True,
    teacher_questions: int = 6,
    seed: int = 0,
    chromium: str | None = None,
    sandbox: str = "auto",
    max_render_rows: int = 300,
    max_render_cols: int = 40,
    consent: Any = None,
) -> Summary:
    """Write `out_dir/table_pairs.parquet` (TABLE_PAIRS) from an extract output's tables, and
    `out_dir/table_qa_rejects.parquet` (REJECTS): every teacher item dropped, with its reason.

    An existing table_pairs.parquet is not overwritten (FileExistsError). A table that cannot be
    used keeps its row with the reason in `status`; a failed render keeps Markdown and QA with
    `image_path` null and status `render_failed: ...`; so does a table beyond max_render_rows x
    max_render_cols (`too_large_to_render: ...`), whose screenshot would be unreadable.

    `consent` (common.consent.Consent, with the lake's ledger; None: the rows' own flags only) is
    the one consent rule: a table it refuses (its training_allowed is not the boolean true, or
    the ledger opted out its document) is never sent to the teacher, and its pair says
    training_allowed false.
    """
    from common.consent import NO_LEDGER

    rule = consent or NO_LEDGER
    t0 = time.monotonic()
    rows = read_tables(tables_dir)
    out = Path(out_dir)
    out_path = out / OUTPUT_NAME
    if out_path.exists():
        raise FileExistsError(
            f"{out_path} already exists; choose a new --out directory or delete it"
        )
    out.mkdir(parents=True, exist_ok=True)
    summary = Summary(out_path=str(out_path))
    rejects: Counter = Counter()
    dropped_rows: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    prepared: list[tuple[dict[str, Any], Grid | None]] = []
    for row in rows:
        pid = pair_id(str(row["doc_id"]), int(row["table_index"]))
        rec = {
            "id": pid,
            "doc_id": row["doc_id"],
            "table_index": row["table_index"],
            "markdown": row["markdown"],
            "image_path": None,
            "qa": [],
            "training_allowed": rule.allows(row),
            "status": "ok",
        }
        try:
            grid = grid_from_row(row)
        except TableError as exc:
            rec["status"] = str(exc)
            grid = None
        records.append(rec)
        prepared.append((rec, grid))

    for k, (rec, grid) in enumerate(prepared):
        if grid is None:
            continue
        qa = programmatic_qa(grid, seed + k)
        if teacher is not None:
            if rule.allows(rec):
                summary.teacher_sent += 1
                dropped: list[dict[str, Any]] = []
                try:
                    qa += teacher_qa(teacher, rec, grid, teacher_questions, rejects, dropped)
                except Exception as exc:  # noqa: BLE001 - the reason is kept, the stage goes on
                    reason = f"{type(exc).__name__}: {str(exc)[:200]}"
                    rejects["teacher_error"] += 1
                    log.warning("teacher failed on table %s: %s", rec["id"], reason)
                    dropped.append(
                        {"question": None, "answer": None, "kind": None}
                        | {"reason": f"teacher_error: {reason}"}
                    )
                for r, d in enumerate(dropped):
                    ids = {"id": f"{rec['id']}#r{r}", "row_id": rec["id"], "doc_id": rec["doc_id"]}
                    dropped_rows.append(ids | d)
            else:
                summary.teacher_skipped_opted_out += 1
        rec["qa"] = qa
        if not any(q["verified"] and q["kind"] != UNANSWERABLE for q in qa):
            rec["status"] = "no_verified_qa: no header row or usable column to ask about"

    to_render = [(rec, grid) for rec, grid in prepared if grid is not None]
    if render and to_render:
        (out / IMAGES_DIR).mkdir(exist_ok=True)
        with TableRenderer(chromium, sandbox) as renderer:
            summary.render_sandbox = renderer.sandbox_note
            for rec, grid in to_render:
                n_rows = len(grid.rows) + len(grid.footer) + (1 if grid.header else 0)
                if n_rows > max_render_rows or grid.width > max_render_cols:
                    rec["status"] = (
                        f"too_large_to_render: {n_rows} rows x {grid.width} columns (limits "
                        f"{max_render_rows} x {max_render_cols}: max_render_rows/max_render_cols)"
                    )
                    continue
                rel = f"{IMAGES_DIR}/{_image_name(rec['id'])}"
                try:
                    renderer.screenshot(table_html(grid), out / rel)
                except Exception as exc:  # noqa: BLE001 - one table's failure is its status
                    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    rec["status"] = f"render_failed: {first[:200]}"
                    continue
                rec["image_path"] = rel
                summary.rendered += 1
                cells = [*grid.header, *(c for r in [*grid.rows, *grid.footer] for c in r)]
                missing = missing_glyphs("".join(cells))
                if missing:
                    rec["status"] = (
                        f"missing_glyphs: no installed font draws {len(missing)} character(s) "
                        f"({''.join(missing[:10])!r}); the image shows boxes for them: install "
                        "fonts for the script (e.g. Debian's fonts-noto-cjk) and rerun"
                    )
            summary.blocked_requests = len(renderer.blocked_requests)

    records.sort(key=lambda r: (r["doc_id"], r["table_index"]))
    dropped_rows.sort(key=lambda d: d["id"])
    tmp = out / f".{REJECTS_NAME}.tmp"
    pq.write_table(pa.Table.from_pylist(dropped_rows, schema=REJECTS), tmp)
    tmp.replace(out / REJECTS_NAME)
    tmp = out / f".{OUTPUT_NAME}.tmp"
    pq.write_table(pa.Table.from_pylist(records, schema=TABLE_PAIRS), tmp)
    tmp.replace(out_path)

    summary.tables = len(records)
    statuses = Counter(r["status"].split(":")[0] for r in records)
    summary.status = dict(statuses)
    summary.ok = statuses.get("ok", 0)
    kinds = Counter(q["kind"] for r in records for q in r["qa"])
    summary.qa_by_kind = dict(kinds)
    summary.qa = sum(kinds.values())
    summary.qa_verified = sum(q["verified"] for r in records for q in r["qa"])
    summary.teacher_rejects = dict(rejects)
    summary.seconds = round(time.monotonic() - t0, 3)
    return summary


__all__: Sequence[str] = (
    "TABLE_PAIRS",
    "QA_STRUCT",
    "REJECTS",
    "Grid",
    "QASpec",
    "Summary",
    "TableRenderer",
    "TableError",
    "answers_agree",
    "column_decimal",
    "compute_answer",
    "grid_from_row",
    "make_table_pairs",
    "parse_number",
    "programmatic_qa",
    "read_tables",
    "table_html",
)
