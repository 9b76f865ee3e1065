"""Verified QA and numbers: decimal separators per column, magnitude words and units, signs, and
the table teacher's rejects kept with their reasons."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.schemas import TABLES
from synth import charts
from synth.tables import (
    REJECTS,
    Grid,
    TeacherQA,
    answers_agree,
    column_decimal,
    make_table_pairs,
    parse_number,
    programmatic_qa,
    teacher_qa,
)
from synth.textmatch import number_value, occurs, tokens


def _computed(grid: Grid) -> dict[str, str]:
    return {
        q["kind"]: q["answer"]
        for q in programmatic_qa(grid, 0)
        if q["kind"] in ("max", "min", "sum", "argmax")
    }


def test_dot_grouped_euro_prices_are_thousands():
    grid = Grid(
        ["Stadt", "Preis"], [["Berlin", "1.299 €"], ["Hamburg", "2.499 €"], ["München", "999 €"]]
    )
    assert _computed(grid) == {"max": "2499", "min": "999", "sum": "4797", "argmax": "Hamburg"}


def test_dot_groups_on_some_cells_decide_the_column():
    grid = Grid(
        ["Stadt", "Einwohner"],
        [["Berlin", "3.645.000"], ["Köln", "1.086"], ["Bonn", "330.579"], ["Aa", "12"]],
    )
    assert _computed(grid)["sum"] == str(3645000 + 1086 + 330579 + 12)


@pytest.mark.parametrize(
    "text, value",
    [
        ("1.234,5", 1234.5),
        ("12,5", 12.5),
        ("45,3 %", 45.3),
        ("1 234,5", 1234.5),
        ("1\u202f234,5", 1234.5),
        ("1\u00a0234,5 €", 1234.5),
        ("1,234,567", 1234567.0),
        ("3.5", 3.5),
    ],
)
def test_european_and_english_spellings_parse(text, value):
    n = parse_number(text)
    assert n is not None and n.value == value


def test_comma_decimals_column():
    grid = Grid(["Land", "Anteil"], [["A", "12,5 %"], ["B", "7,25 %"], ["C", "80,25 %"]])
    assert _computed(grid) == {"max": "80.25", "min": "7.25", "sum": "100", "argmax": "C"}


def test_a_column_of_only_ambiguous_dot_numbers_gets_no_computed_qa():
    # 1.234 is 1.234 in English and 1234 in German: no guess
    grid = Grid(["City", "Pop."], [["A", "1.234"], ["B", "2.345"], ["C", "3.456"]])
    assert column_decimal(grid.column(1)) is None
    assert _computed(grid) == {}
    # "1,234" alone is English grouping, as before
    grid = Grid(["City", "Pop."], [["A", "1,234"], ["B", "2,345"], ["C", "3,456"]])
    assert _computed(grid)["max"] == "3456"


def test_magnitude_words_and_units_must_match():
    assert not answers_agree("4,259.9 trillion", "4,259.9")
    assert not answers_agree("1.5 billion", "1.5 million")
    assert not answers_agree("6.7 points", "6.7%")
    assert answers_agree("6.7", "6.7%")  # the cell's unit may be left out
    assert answers_agree("1.5 Mio.", "1.5 million")
    assert answers_agree("4,259.9 bn", "4,259.9", column="GDP (US$ bn)")
    assert answers_agree("1.234,5", "1234.5") and answers_agree("1234,5", "1234.5")


def test_teacher_answer_with_a_magnitude_the_cell_lacks_is_dropped():
    grid = Grid(["Country", "GDP (US$ bn)"], [["A", "4,259.9"], ["B", "1,000.5"]])
    row = {"id": "d#t0", "doc_id": "d", "url": None, "training_allowed": True, "markdown": "x"}

    class Scripted:
        model = "scripted"

        def chat_json(self, messages, schema, *, items, **params):
            ask = [
                ("What is the GDP of A?", "4,259.9 trillion"),
                ("What is the GDP (US$ bn) of A?", "4,259.9 billion"),
            ]
            return TeacherQA(
                items=[
                    {
                        "question": q,
                        "answer": a,
                        "kind": "lookup",
                        "row": "A",
                        "column": "GDP (US$ bn)",
                    }
                    for q, a in ask
                ]
            )

    rejects: Counter = Counter()
    dropped: list[dict] = []
    kept = teacher_qa(Scripted(), row, grid, 5, rejects, dropped)
    assert [q["answer"] for q in kept] == ["4,259.9 billion"]
    assert rejects == {"teacher_answer_disagrees": 1}
    assert dropped == [
        {
            "question": "What is the GDP of A?",
            "answer": "4,259.9 trillion",
            "kind": "lookup",
            "reason": "teacher_answer_disagrees",
        }
    ]


def test_teacher_rejects_are_written_with_their_reason(tmp_path):
    src = tmp_path / "extract"
    src.mkdir()
    rows = [
        {
            "doc_id": f"d{i}",
            "url": None,
            "table_index": 0,
            "markdown": "| a | b |",
            "header": ["Name", "Score"],
            "cells": [["Name", "Score"], ["x", "1"], ["y", "2"]],
            "n_rows": 3,
            "n_cols": 2,
            "training_allowed": True,
        }
        for i in range(2)
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=TABLES), src / "tables.parquet")

    class NotJSON:
        model = "broken"

        def chat_json(self, *a, **k):
            raise ValueError("the teacher's answer is not JSON")

    s = make_table_pairs(src, tmp_path / "out", teacher=NotJSON(), render=False)
    assert s.teacher_rejects == {"teacher_error": 2}
    t = pq.read_table(tmp_path / "out" / "table_qa_rejects.parquet")
    assert t.schema.equals(REJECTS)
    got = t.to_pylist()
    assert [(r["id"], r["row_id"], r["doc_id"]) for r in got] == [
        ("d0#t0#r0", "d0#t0", "d0"),
        ("d1#t0#r0", "d1#t0", "d1"),
    ]
    assert all(r["reason"].startswith("teacher_error: ValueError") for r in got)


def test_stage_summary_has_teacher_rejects():
    from pipelines.stages.synth import TablesSummary

    assert "teacher_rejects" in TablesSummary.model_fields


@pytest.mark.parametrize(
    "given, expected, agree",
    [("7,5", "75", False), ("1,0", "10", False), ("7,5", "7.5", True), ("1,000", "1000", True)],
)
def test_chart_answers_never_take_a_decimal_comma_for_grouping(given, expected, agree):
    assert charts.answers_agree(given, expected) is agree


def test_ocr_match_keeps_magnitudes_and_signs_exact():
    assert not occurs("5 million", "population 5 billion", 0.15)
    assert occurs("populaton 5 million", "the population 5 million", 0.15)  # a letter misread
    assert not occurs("-5", "temperature 5 C", 0.15)
    assert occurs("-5", "temperature -5 C", 0.15)
    assert tokens("2020-2021 COVID-19") == ["2020", "2021", "covid", "19"]
    assert number_value("−3") == -3.0 and number_value("12 %") is None
