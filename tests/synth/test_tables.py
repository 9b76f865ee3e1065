"""Table pairs (synth.tables): Markdown carried, an image from the real Chromium that fetches
nothing, QA checked against an independent recomputation from the source data, the teacher
(a fake OpenAI-compatible server on loopback) never sent an opted-out table and its wrong
answers dropped, and broken tables given a status reason instead of a crash."""

from __future__ import annotations

import json
import re
import shutil
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lxml import html as lxml_html

from common.schemas import TABLES
from common.teacher import TeacherClient
from crawlers.extract.tables import extract_tables
from sampleweb.markup import table_html as sampleweb_table_html
from synth.tables import (
    TABLE_PAIRS,
    Grid,
    TableRenderer,
    grid_from_row,
    make_table_pairs,
    missing_glyphs,
    parse_number,
    programmatic_qa,
    table_html,
)
from tests.synth.test_teacher import server  # noqa: F401 - the fake endpoint

pytestmark = pytest.mark.timeout(120)

# The source data of each page's table, as the page author wrote it (the independent truth).
PRODUCTS = (
    ["Model", "Weight (g)", "Battery (h)", "Price (EUR)"],
    [
        ["Nova A1", "1,120", "10", "19.99"],
        ["Nova B2", "450", "40", "299.00"],
        ["Nova C3", "900", "4", "49.90"],
    ],
)
LEAGUE = (
    ["Group", "Team", "Played", "Points"],
    [["A", "Lions", "5", "12"], ["A", "Tigers", "6", "3"], ["B", "Bears", "7", "30"]],
)
CITIES = (
    ["Город", "Население", "Доля"],
    [["Москва", "13 010 112", "51%"], ["Казань", "1 308 660", "−4 %"], ["Омск", "1 125 695", ""]],
)
PAGES = {
    "products": sampleweb_table_html(*PRODUCTS, total=("Total", "368.89")),
    "league": sampleweb_table_html(*LEAGUE, rowspan_first=2),
    "cities": "<table><tr>"
    + "".join(f"<th>{h}</th>" for h in CITIES[0])
    + "</tr>"
    + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in CITIES[1])
    + "</table>",
    # No header row, a ragged second row.
    "plain": "<table><tr><td>alpha</td><td>beta</td><td>gamma</td></tr><tr><td>delta</td></tr></table>",
}
SOURCES = {"products": PRODUCTS, "league": LEAGUE, "cities": CITIES}


def _rows(opted_out: tuple[str, ...] = ()) -> list[dict]:
    rows = []
    for doc_id, page in PAGES.items():
        tree = lxml_html.fromstring(f"<html><body><p>x</p>{page}</body></html>")
        for t in extract_tables(tree):
            rows.append(
                {
                    "doc_id": doc_id,
                    "url": f"http://127.0.0.1/{doc_id}",
                    "table_index": t.index,
                    "markdown": t.markdown,
                    "header": t.header,
                    "cells": t.cells,
                    "n_rows": t.n_rows,
                    "n_cols": t.n_cols,
                    "training_allowed": doc_id not in opted_out,
                }
            )
    return rows


def _write(tmp_path, rows) -> str:
    d = tmp_path / "extract"
    d.mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=TABLES), d / "tables.parquet")
    return str(d)


def _num(text: str) -> float:
    """The test's own number reading (independent of synth.tables.parse_number)."""
    t = text.replace("−", "-").replace(",", "").replace(" ", "").rstrip("%")
    return float(t)


def _expected(doc_id: str, q: dict) -> str:
    """Recompute a QA answer from the page author's data by reading the question's wording."""
    header, body = SOURCES[doc_id]
    label_col = 1 if doc_id == "league" else 0
    by_label = {r[label_col]: r for r in body}
    kind, question = q["kind"], q["question"]
    if kind == "count":
        return str(len(body))
    if kind == "unanswerable":
        (label,) = re.findall(r'"([^"]+)"', question)
        assert label not in by_label
        return "unanswerable"
    col = next(h for h in sorted(header, key=len, reverse=True) if h in question)
    j = header.index(col)
    vals = [(r[label_col], _num(r[j])) for r in body if r[j]]
    if kind == "lookup":
        (label,) = re.findall(r'"([^"]+)"', question)
        return by_label[label][j]
    if kind == "difference":
        a, b = re.findall(r'"([^"]+)"', question)
        x = _num(by_label[a][j]) - _num(by_label[b][j])
    elif kind == "max":
        x = max(v for _, v in vals)
    elif kind == "min":
        x = min(v for _, v in vals)
    elif kind == "sum":
        x = sum(v for _, v in vals)
    elif kind == "average":
        x = sum(v for _, v in vals) / len(vals)
    elif kind == "argmax":
        return max(vals, key=lambda lv: lv[1])[0]
    else:
        raise AssertionError(f"unexpected kind {kind}")
    return repr(round(x, 4))


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def test_pairs_markdown_image_and_verified_qa(tmp_path):
    rows = _rows()
    nofont = {
        **rows[0],
        "doc_id": "nofont",
        "header": ["Name", "Mark"],
        "cells": [["Name", "Mark"], ["x", "\U0010fffd"], ["y", "z"]],
    }
    summary = make_table_pairs(_write(tmp_path, [*rows, nofont]), tmp_path / "out")
    out = pq.read_table(tmp_path / "out" / "table_pairs.parquet")
    assert out.schema.equals(TABLE_PAIRS)
    got = {r["doc_id"]: r for r in out.to_pylist()}
    assert set(got) == {*PAGES, "nofont"}
    # A character no installed font draws: the image is kept, the status says why it is not ok.
    if shutil.which("fc-list"):
        assert got["nofont"]["status"].startswith("missing_glyphs: no installed font draws 1 ")
        assert got["nofont"]["image_path"] is not None
    for row in rows:
        pair = got[row["doc_id"]]
        assert pair["markdown"] == row["markdown"]  # carried as is
        assert pair["training_allowed"] is True and pair["status"] == "ok"
        assert pair["id"] == f"{row['doc_id']}#t0"
        w, h = _png_size(tmp_path / "out" / pair["image_path"])
        assert 60 < w < 1280 and 20 < h < 800, (row["doc_id"], w, h)
    assert summary.rendered == 5 and summary.blocked_requests == 0
    # Products: the colspan total row is kept apart (not summed); every kind is asked.
    kinds = {q["kind"] for q in got["products"]["qa"]}
    assert kinds == {
        "count",
        "lookup",
        "max",
        "min",
        "sum",
        "average",
        "argmax",
        "difference",
        "unanswerable",
    }
    # No header row: fewer kinds, still one unanswerable question.
    assert {q["kind"] for q in got["plain"]["qa"]} == {"count", "unanswerable"}
    checked = 0
    for doc_id in SOURCES:
        for q in got[doc_id]["qa"]:
            assert q["verified"] is True
            want = _expected(doc_id, q)
            if q["kind"] in ("lookup", "argmax", "count", "unanswerable"):
                assert q["answer"] == want, (doc_id, q)
            else:
                assert float(q["answer"]) == pytest.approx(float(want), abs=1e-4), (doc_id, q)
            checked += 1
    assert checked >= 20
    assert summary.verified_share == 1.0 and summary.qa == sum(summary.qa_by_kind.values())
    with pytest.raises(FileExistsError, match="already exists"):
        make_table_pairs(str(tmp_path / "extract"), tmp_path / "out", render=False)


def test_render_fetches_nothing(tmp_path):
    """A page that tries to load an image, a stylesheet and a frame from a loopback server:
    every request is aborted, the server sees none, the table is still screenshotted."""
    hits = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

    httpd = ThreadingHTTPServer(("127.0.0.64", 0), Handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    base = f"http://127.0.0.64:{httpd.server_address[1]}"
    page = table_html(Grid(["a", "b"], [["1", "2"]])).replace(
        "<body>",
        f'<body><img src="{base}/pixel.png"><link rel="stylesheet" href="{base}/s.css">'
        f'<iframe src="{base}/frame"></iframe>',
    )
    # The same page without the stage's Content-Security-Policy: the route still aborts it all.
    no_csp = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    assert no_csp != page
    try:
        with TableRenderer() as renderer:
            renderer.screenshot(page, tmp_path / "t.png")
            renderer.screenshot(no_csp, tmp_path / "t2.png")
            blocked = list(renderer.blocked_requests)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert hits == []
    assert any(u.endswith("/pixel.png") for u in blocked), blocked
    assert _png_size(tmp_path / "t.png")[0] > 10 and _png_size(tmp_path / "t2.png")[0] > 10


def test_teacher_wrong_answers_dropped_and_opted_out_never_sent(tmp_path, server):  # noqa: F811
    items = [
        # right: a lookup and a sum that agree with the cells (the sum rounded)
        {
            "question": "Weight of Nova B2?",
            "answer": "450",
            "kind": "lookup",
            "row": "Nova B2",
            "column": "Weight (g)",
        },
        {"question": "Total price?", "answer": "368.89", "kind": "sum", "column": "Price (EUR)"},
        # wrong: disagree with the cells
        {"question": "Heaviest?", "answer": "Nova B2", "kind": "argmax", "column": "Weight (g)"},
        {"question": "Rows?", "answer": "7", "kind": "count"},
        # a reference to nothing in the table
        {
            "question": "Weight of Nova Z?",
            "answer": "1",
            "kind": "lookup",
            "row": "Nova Z",
            "column": "Weight (g)",
        },
        # cannot be checked: kept, unverified
        {"question": "Which model looks newest?", "answer": "Nova C3", "kind": "other"},
    ]
    server["default"] = ("ok", json.dumps({"items": items}))
    cache = tmp_path / "cache"
    teacher = TeacherClient(server["base_url"], "tiny", timeout=5, backoff_s=0.01, cache_dir=cache)
    rows = _rows(opted_out=("cities", "league"))
    summary = make_table_pairs(
        _write(tmp_path, rows), tmp_path / "out", teacher=teacher, render=False
    )
    sent = json.dumps([r["body"] for r in server["requests"]], ensure_ascii=False)
    assert len(server["requests"]) == 2  # products and plain: the allowed tables only
    for word in ("Москва", "Население", "Lions", "Tigers"):
        assert word not in sent
    assert summary.teacher_sent == 2 and summary.teacher_skipped_opted_out == 2
    got = {r["doc_id"]: r for r in pq.read_table(summary.out_path).to_pylist()}
    asked = {i["question"] for i in items}
    teacher_qa = [q for q in got["products"]["qa"] if q["question"] in asked]
    assert [(q["answer"], q["verified"]) for q in teacher_qa] == [
        ("450", True),
        ("368.89", True),
        ("Nova C3", False),
    ]
    assert summary.teacher_rejects["teacher_answer_disagrees"] >= 2
    assert summary.teacher_rejects["teacher_unresolvable_reference"] >= 1
    assert all(q["verified"] for q in got["cities"]["qa"])  # programmatic only
    assert got["cities"]["training_allowed"] is False and got["league"]["training_allowed"] is False
    # A rerun with the same cache sends nothing and gives the same pairs.
    again = TeacherClient(server["base_url"], "tiny", timeout=5, backoff_s=0.01, cache_dir=cache)
    s2 = make_table_pairs(str(tmp_path / "extract"), tmp_path / "out2", teacher=again, render=False)
    assert len(server["requests"]) == 2 and again.usage()["cache_hits"] == 2
    assert pq.read_table(s2.out_path).equals(pq.read_table(summary.out_path))


def test_teacher_failure_is_counted_and_programmatic_qa_kept(tmp_path, server):  # noqa: F811
    server["default"] = ("ok", "not json at all")
    teacher = TeacherClient(server["base_url"], "tiny", timeout=5, backoff_s=0.01)
    rows = _rows(opted_out=("cities", "league", "plain"))
    summary = make_table_pairs(
        _write(tmp_path, rows), tmp_path / "out", teacher=teacher, render=False
    )
    assert len(server["requests"]) == 2  # the answer and its one repair retry, for products
    assert summary.teacher_rejects == {"teacher_error": 1}
    got = {r["doc_id"]: r for r in pq.read_table(summary.out_path).to_pylist()}
    assert got["products"]["status"] == "ok" and len(got["products"]["qa"]) == 9


def test_broken_tables_get_a_reason_not_a_crash(tmp_path):
    base = {"url": "u", "markdown": "", "n_rows": 0, "n_cols": 0, "training_allowed": True}
    rows = [
        {**base, "doc_id": "empty", "table_index": 0, "header": [], "cells": [["", " "], [""]]},
        {**base, "doc_id": "nocells", "table_index": 0, "header": [], "cells": None},
        {
            **base,
            "doc_id": "headonly",
            "table_index": 0,
            "header": ["a", "b"],
            "cells": [["a", "b"]],
        },
        # ragged rows with empty and non-numeric cells: padded, still usable
        {
            **base,
            "doc_id": "ragged",
            "table_index": 0,
            "header": ["Item", "Qty"],
            "cells": [["Item", "Qty"], ["Bolts", "1,200"], ["Nuts"], ["Pins", "n/a", "extra"]],
        },
        {
            **base,
            "doc_id": "nulls",
            "table_index": 0,
            "header": None,
            "cells": [[None, "x"], ["y", None]],
        },
    ]
    summary = make_table_pairs(_write(tmp_path, rows), tmp_path / "out", render=False)
    got = {r["doc_id"]: r for r in pq.read_table(summary.out_path).to_pylist()}
    assert got["empty"]["status"].startswith("empty_table")
    assert got["nocells"]["status"].startswith("no_cells")
    assert got["headonly"]["status"].startswith("no_data_rows")
    assert got["ragged"]["status"] == "ok" and got["nulls"]["status"] == "ok"
    assert all(r["image_path"] is None for r in got.values())
    ragged = {q["kind"]: q["answer"] for q in got["ragged"]["qa"]}
    assert ragged["lookup"] in ("1,200", "n/a")  # a cell, as written
    assert "sum" not in ragged  # Qty is 1 number in 3 rows: not a numeric column
    assert summary.status == {"empty_table": 1, "no_cells": 1, "no_data_rows": 1, "ok": 2}


@pytest.mark.parametrize(
    "text,value",
    [
        ("1,234", 1234.0),
        ("$12.50", 12.5),
        ("−3", -3.0),
        ("45 %", 45.0),
        ("12 kg", 12.0),
        ("13 010 112", 13010112.0),
        ("€ 7", 7.0),
        (".5", 0.5),
        ("n/a", None),
        ("2 to 3", None),
        ("1.2.3", None),
        ("", None),
        ("Москва", None),
    ],
)
def test_parse_number(text, value):
    n = parse_number(text)
    assert (n.value if n else None) == value


def test_qa_ties_and_units():
    # A tie for the maximum gives no argmax question; mixed units make a column non-numeric.
    grid = grid_from_row(
        {
            "header": ["Name", "Score", "Length"],
            "cells": [
                ["Name", "Score", "Length"],
                ["a", "5", "3 m"],
                ["b", "5", "4 kg"],
                ["c", "1", "2 m"],
            ],
        }
    )
    kinds = {q["kind"]: q["answer"] for q in programmatic_qa(grid, seed=0)}
    assert "argmax" not in kinds and kinds["max"] == "5"
    assert grid.numeric(2) is None and grid.numeric(1) is not None


@pytest.mark.skipif(shutil.which("fc-list") is None, reason="fontconfig's fc-list is not installed")
def test_missing_glyphs():
    assert missing_glyphs("Abc Москва 1,2 %") == []
    assert missing_glyphs("a\U0010fffd b\U0010fffd") == ["\U0010fffd"]


def test_too_large_table_keeps_markdown_and_qa_without_image(tmp_path):
    cells = [["Item", "Qty"], *([f"i{k}", str(k)] for k in range(12))]
    row = {
        "doc_id": "big",
        "url": "u",
        "table_index": 0,
        "markdown": "| big |",
        "header": ["Item", "Qty"],
        "cells": cells,
        "n_rows": 12,
        "n_cols": 2,
        "training_allowed": True,
    }
    summary = make_table_pairs(_write(tmp_path, [row]), tmp_path / "out", max_render_rows=10)
    (got,) = pq.read_table(summary.out_path).to_pylist()
    assert got["status"].startswith("too_large_to_render: 13 rows x 2 columns")
    assert got["image_path"] is None and got["markdown"] == "| big |"
    assert {q["kind"]: q["answer"] for q in got["qa"]}["sum"] == str(sum(range(12)))
    assert summary.rendered == 0


def test_a_teacher_question_must_name_what_its_answer_was_recomputed_from():
    """The answer was recomputed from kind/row/column but the teacher's question kept as it was:
    'How many moons does Jupiter have?' -> '3' was stored as verified."""
    from collections import Counter

    from synth.tables import TeacherQA, grid_from_row, teacher_qa

    cells = [
        ["City", "Population (thousands)"],
        ["Oslo", "700"],
        ["Bergen", "290"],
        ["Tromsø", "77"],
    ]
    row = {
        "id": "d1#t0",
        "doc_id": "d1",
        "markdown": "|...|",
        "header": cells[0],
        "cells": cells,
        "training_allowed": True,
    }
    asked = [
        ("How many moons does Jupiter have?", "3", "count", None, None),
        ("What is the population of Paris?", "700", "lookup", "Oslo", "Population (thousands)"),
        ("Which city is the capital of Norway?", "Oslo", "argmax", None, "Population (thousands)"),
        ("What is the population of Oslo?", "700", "lookup", "Oslo", "Population (thousands)"),
        (
            "Which city has the largest population?",
            "Oslo",
            "argmax",
            None,
            "Population (thousands)",
        ),
        ("What is the population of TROMSØ?", "77", "lookup", "Tromsø", "Population (thousands)"),
        (
            "What is the total population (thousands) of the cities?",
            "1067",
            "sum",
            None,
            "Population (thousands)",
        ),
    ]

    class Scripted:
        model = "scripted"

        def chat_json(self, messages, schema, *, items, **params):
            return TeacherQA(
                items=[
                    {"question": q, "answer": a, "kind": k, "row": r, "column": c}
                    for q, a, k, r, c in asked
                ]
            )

    rejects: Counter = Counter()
    kept = teacher_qa(Scripted(), row, grid_from_row(row), 10, rejects)
    assert [(q["question"], q["verified"]) for q in kept] == [
        ("What is the population of Oslo?", True),
        ("Which city has the largest population?", True),
        ("What is the population of TROMSØ?", True),  # case aside; the unit left out
        ("What is the total population (thousands) of the cities?", True),
    ]
    assert rejects == {"teacher_count_duplicate": 1, "teacher_question_mismatch": 2}
