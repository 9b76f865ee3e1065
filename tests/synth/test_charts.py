"""synth.charts: every chart type renders in the sandbox, QA answers are right (recomputed here
independently), determinism, broken and blocked code keep their reason, and the teacher path
against a fake OpenAI-compatible server on loopback (wrong answers dropped with their reason,
malicious code blocked)."""

from __future__ import annotations

import io
import json
import re
import shutil
import struct
import zlib
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from common.teacher import TeacherClient
from synth import charts
from synth.charts import CHART_TYPES, make_charts, recompute
from tests.synth import fake_teacher

server = fake_teacher.server  # the shared fake OpenAI-compatible endpoint (a pytest fixture)

pytestmark = pytest.mark.timeout(120)

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap",
)


def _png(size=(8, 6), extra_chunk: bytes = b"") -> bytes:
    """A real small PNG (the host decodes every chart.png), optionally with a chunk before IEND."""
    buf = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(buf, format="PNG")
    data = buf.getvalue()
    return data[:-12] + extra_chunk + data[-12:] if extra_chunk else data


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _header_only_png(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims width x height with a tiny IDAT (a decompression bomb's header)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(b"\0" * 1000))
        + _chunk(b"IEND", b"")
    )


PNG = _png()


def fake_run(code, inputs=None, timeout_s=30.0):
    """Stands in for the sandbox where only the generators are under test (no bwrap needed)."""
    return SimpleNamespace(ok=True, outputs={"chart.png": PNG}, error=None, stderr="")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    out = tmp_path_factory.mktemp("charts")
    summary = make_charts(out, n=len(CHART_TYPES), seed=7)
    return out, summary, pq.read_table(out / "charts.parquet")


def test_every_chart_type_renders(rendered):
    out, summary, table = rendered
    assert table.column_names == list(charts.COLUMNS)
    assert table.schema.field("qa").type.value_type == charts.QA_TYPE.value_type
    rows = table.to_pylist()
    assert sorted(r["chart_type"] for r in rows) == sorted(CHART_TYPES)
    assert summary["status"] == {"ok": len(CHART_TYPES)}, summary["status"]
    assert summary["rendered"] == len(CHART_TYPES) and summary["verified_qa_share"] == 1.0
    assert summary["charts_per_s"] > 0
    for r in rows:
        assert r["teacher"] == "programmatic" and r["status"] == "ok"
        png = (out / r["image_path"]).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 5000, r["chart_type"]
        kinds = [q["kind"] for q in r["qa"]]
        assert kinds.count("unanswerable") == 1, (r["chart_type"], kinds)
        assert len(set(kinds)) >= 6, (r["chart_type"], kinds)
        assert all(q["verified"] for q in r["qa"])
        assert "data.json" in r["code"] and "chart.png" in r["code"]


def _series_for(question: str, data: dict) -> list:
    m = re.search(r" for (.+?)(?: in | between | across |\?$)", question)
    if len(data["series"]) == 1:
        return data["series"][0]["values"]
    (s,) = [s for s in data["series"] if s["name"] == m.group(1)]
    return s["values"]


def test_qa_answers_are_right(rendered):
    """Recompute a few kinds per chart here, with numpy, from the stored data."""
    _, _, table = rendered
    checked = 0
    for r in table.to_pylist():
        data = json.loads(r["data"])
        qa = {q["kind"]: q for q in r["qa"]}
        assert qa["unanswerable"]["answer"] == "unanswerable"
        if "categories" in data:
            cats = data["categories"]
            assert qa["count"]["answer"] == str(len(cats))
            q = qa["lookup"]
            vals = _series_for(q["question"], data)
            cat = re.search(r" in (.+) \(", q["question"]).group(1)
            assert float(q["answer"]) == vals[cats.index(cat)]
            q = qa["extremum"]
            pick = np.argmax if "highest" in q["question"] else np.argmin
            assert q["answer"] == cats[int(pick(_series_for(q["question"], data)))]
            q = qa.get("sum") or qa["average"]
            vals = np.array(_series_for(q["question"], data), dtype=float)
            want = vals.sum() if q["kind"] == "sum" else vals.mean()
            assert float(q["answer"]) == pytest.approx(want, abs=0.005)
            checked += 4
        elif "bins" in data:
            counts, _ = np.histogram(data["values"], bins=data["bins"])
            assert qa["sum"]["answer"] == str(len(data["values"])) == str(counts.sum())
            lo = re.search(r"the (\S+)-", qa["lookup"]["question"]).group(1)
            i = [f"{b:g}" for b in data["bins"]].index(lo)
            assert qa["lookup"]["answer"] == str(counts[i])
            assert qa["count"]["answer"] == str(len(data["bins"]) - 1)
            checked += 3
        elif "matrix" in data:
            m = np.array(data["matrix"])
            r_, c_ = np.unravel_index(m.argmax(), m.shape)
            assert qa["extremum"]["answer"] == f"{data['rows'][r_]}, {data['columns'][c_]}"
            assert qa["count"]["answer"] == str(len(data["rows"]))
            checked += 2
        elif "groups" in data:
            med = {g["name"]: float(np.median(g["values"])) for g in data["groups"]}
            name = re.search(r" for (.+) \(", qa["lookup"]["question"]).group(1)
            assert float(qa["lookup"]["answer"]) == med[name]
            assert qa["count"]["answer"] == str(len(med))
            checked += 2
        else:
            pts = data["points"]
            assert qa["count"]["answer"] == str(len(pts))
            assert qa["extremum"]["answer"] == max(pts, key=lambda p: p["y"])["label"]
            xs, ys = [p["x"] for p in pts], [p["y"] for p in pts]
            trend = "increase" if np.corrcoef(xs, ys)[0, 1] > 0 else "decrease"
            assert qa["trend"]["answer"] == trend
            checked += 3
    assert checked >= 25


def test_recompute_by_kind():
    data = {
        "categories": ["2020", "2021", "2022"],
        "series": [{"name": "A", "values": [3, 5, 9]}, {"name": "B", "values": [4, 2, 1]}],
    }
    assert recompute(data, "lookup", "a", ["2021"]) == "5"
    assert recompute(data, "extremum", "B", op="max") == "2020"
    assert recompute(data, "comparison", "A", ["2022", "2020"]) == "2022"
    assert recompute(data, "difference", "B", ["2020", "2022"]) == "3"
    assert recompute(data, "sum", "A") == "17" and recompute(data, "average", "A") == "5.67"
    assert recompute(data, "trend", "A") == "increasing"
    assert recompute(data, "trend", "B") == "decreasing"
    assert recompute(data, "count") == "3"
    assert recompute(data, "unanswerable", "A", ["2030"]) == "unanswerable"
    for bad in (
        dict(kind="lookup", series=None, categories=["2021"]),  # two series, none named
        dict(kind="lookup", series="C", categories=["2021"]),
        dict(kind="lookup", series="A", categories=["1999"]),
        dict(kind="unanswerable", series="A", categories=["2021"]),
        dict(kind="median", series="A"),
    ):
        with pytest.raises(charts.Unrecomputable):
            recompute(data, **bad)


def test_deterministic_for_a_seed(tmp_path):
    def rows(d, seed, workers=1):
        make_charts(d, n=12, seed=seed, run=fake_run, workers=workers)
        return pq.read_table(d / "charts.parquet").to_pylist()

    a, b = rows(tmp_path / "a", 3), rows(tmp_path / "b", 3, workers=3)
    assert a == b
    assert len({r["code"] for r in a}) > 1  # the style block varies
    c = rows(tmp_path / "c", 4)
    assert [r["data"] for r in c] != [r["data"] for r in a]
    assert [r["chart_type"] for r in a][: len(CHART_TYPES)] == list(CHART_TYPES)


def test_types_and_existing_output_errors(tmp_path):
    s = make_charts(tmp_path / "o", n=4, seed=0, types=["pie", "heatmap"], run=fake_run)
    rows = pq.read_table(tmp_path / "o" / "charts.parquet").to_pylist()
    assert [r["chart_type"] for r in rows] == ["pie", "heatmap", "pie", "heatmap"]
    assert s["charts"] == 4
    with pytest.raises(FileExistsError, match="charts.parquet"):
        make_charts(tmp_path / "o", n=1, seed=0, run=fake_run)
    with pytest.raises(ValueError, match="donut"):
        make_charts(tmp_path / "x", n=1, seed=0, types=["donut"], run=fake_run)


@needs_bwrap
def test_broken_and_blocked_code_keep_the_reason(tmp_path, monkeypatch):
    monkeypatch.setitem(charts.TEMPLATES, "bar", charts.TEMPLATES["bar"] + "raise ValueError(1)\n")
    monkeypatch.setitem(charts.TEMPLATES, "pie", "import os\nos.system('true')\n")
    s = make_charts(tmp_path, n=3, seed=0, types=["bar", "pie", "line"])
    rows = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    bar, pie, line = rows
    assert bar["status"].startswith("exit code 1") and "ValueError" in bar["status"]
    assert pie["status"].startswith("blocked") and "os" in pie["status"]
    for r in (bar, pie):
        assert r["image_path"] is None and r["qa"] == [] and r["code"]
    assert line["status"] == "ok" and line["image_path"]
    assert sorted((tmp_path / "images").iterdir()) == [tmp_path / line["image_path"]]
    assert s["rendered"] == 1 and sum(s["status"].values()) == 3


# --------------------------------------------------------------------------- teacher


TEACHER_DATA = {
    "topic": "coffee sold by cafe",
    "title": "Coffee sold",
    "x_field": "Cafe",
    "y_field": "Cups",
    "unit": "cups",
    "categories": ["Arc", "Bean", "Cup"],
    "series": [{"name": "Cups", "values": [120, 80, 95]}],
}


def _teacher_qa() -> dict:
    def item(question, answer, kind, cats=(), op=""):
        return {
            "question": question,
            "answer": answer,
            "kind": kind,
            "series": "Cups",
            "categories": list(cats),
            "op": op,
        }

    return {
        "qa": [
            item("How many cups did Bean sell?", "80", "lookup", ["Bean"]),
            item("Which cafe sold the most?", "Arc", "extremum", op="max"),
            item("How many cups in total?", "300", "sum"),  # wrong: 295
            item("Which sold more, Bean or Cup?", "Bean", "comparison", ["Bean", "Cup"]),  # wrong
            item("How many cups did Dune sell?", "unanswerable", "unanswerable", ["Dune"]),
            item("What colour is the logo of Arc?", "red", "style"),  # cannot be recomputed
        ]
    }


@needs_bwrap
def test_teacher_wrong_answers_dropped_and_malicious_code_blocked(server, tmp_path):
    code = charts.template_code("bar", __import__("random").Random(0))
    evil = "import socket\ns = socket.socket()\ns.connect(('127.0.0.1', 1))\n"
    server["script"] = [
        ("ok", json.dumps(TEACHER_DATA)),
        ("ok", json.dumps({"code": code})),
        ("ok", json.dumps(_teacher_qa())),
        ("ok", json.dumps(TEACHER_DATA)),
        ("ok", json.dumps({"code": evil})),
    ]
    teacher = TeacherClient(server["base_url"], "tiny-teacher", timeout=5, backoff_s=0.01)
    s = make_charts(tmp_path, n=2, seed=1, types=["bar"], teacher=teacher, workers=1)
    good, bad = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    assert len(server["requests"]) == 5  # no QA asked for the chart that did not render
    assert good["teacher"] == bad["teacher"] == "tiny-teacher"
    assert good["status"] == "ok" and good["topic"] == "coffee sold by cafe"
    assert json.loads(good["data"])["series"][0]["values"] == [120, 80, 95]
    kept = {q["question"]: q for q in good["qa"]}
    assert kept["How many cups did Bean sell?"] == {
        "question": "How many cups did Bean sell?",
        "answer": "80",
        "kind": "lookup",
        "verified": True,
    }
    assert kept["Which cafe sold the most?"]["verified"] is True
    assert kept["How many cups did Dune sell?"]["answer"] == "unanswerable"
    assert kept["What colour is the logo of Arc?"]["verified"] is False
    assert "How many cups in total?" not in kept and "Which sold more, Bean or Cup?" not in kept
    reasons = {d["question"]: d["reason"] for d in s["dropped_qa"]}
    assert reasons["How many cups in total?"] == "teacher answer '300' != recomputed '295'"
    assert reasons["Which sold more, Bean or Cup?"] == "teacher answer 'Bean' != recomputed 'Cup'"
    assert s["dropped_qa_reasons"] == {"wrong answer": 2}
    assert s["verified_qa_share"] == pytest.approx(3 / 4)
    assert bad["status"].startswith("blocked") and "socket" in bad["status"]
    assert bad["image_path"] is None and bad["qa"] == [] and bad["code"] == evil


def test_teacher_needs_categorical_types(server, tmp_path):
    teacher = TeacherClient(server["base_url"], "tiny-teacher", timeout=5)
    with pytest.raises(ValueError, match="heatmap"):
        make_charts(tmp_path, n=1, seed=0, types=["heatmap"], teacher=teacher, run=fake_run)
    assert server["requests"] == []


def test_teacher_data_that_does_not_fit_keeps_the_reason(server, tmp_path):
    short = dict(TEACHER_DATA, series=[{"name": "Cups", "values": [1, 2]}])
    server["script"] = [("ok", json.dumps(short))]
    teacher = TeacherClient(server["base_url"], "tiny-teacher", timeout=5, backoff_s=0.01)
    s = make_charts(tmp_path, n=1, seed=0, types=["pie"], teacher=teacher, run=fake_run)
    (row,) = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    assert row["status"].startswith("teacher: ValueError") and "2 values for 3" in row["status"]
    assert row["image_path"] is None and s["rendered"] == 0


# --------------------------------------------------------------------------- one chart, one status


def _run_giving(png: bytes):
    def run(code, inputs=None, timeout_s=30.0):
        return SimpleNamespace(ok=True, outputs={"chart.png": png}, error=None, stderr="")

    return run


@pytest.mark.parametrize(
    ("png", "status"),
    [
        (_header_only_png(30000, 30000), "chart.png does not decode: DecompressionBombError"),
        (_header_only_png(7000, 7000), "chart.png is 7000x7000 = 49000000 pixels, over"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 16, "chart.png does not decode"),
        (_png()[:-40], "chart.png does not decode"),
    ],
)
def test_a_chart_png_is_decoded_on_the_host_with_a_pixel_cap(tmp_path, png, status):
    s = make_charts(tmp_path, n=1, seed=0, types=["bar"], run=_run_giving(png))
    (row,) = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    assert row["status"].startswith(status), row["status"]
    assert row["image_path"] is None and row["qa"] == [] and s["rendered"] == 0
    assert list((tmp_path / "images").iterdir()) == []


def test_a_chart_png_is_stored_re_encoded(tmp_path):
    png = _png(extra_chunk=_chunk(b"tEXt", b"Comment\0secret-from-the-sandbox"))
    make_charts(tmp_path, n=1, seed=0, types=["bar"], run=_run_giving(png))
    (row,) = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    assert row["status"] == "ok"
    stored = (tmp_path / row["image_path"]).read_bytes()
    assert b"secret-from-the-sandbox" not in stored
    with Image.open(io.BytesIO(stored)) as im:
        assert (im.format, im.size) == ("PNG", (8, 6))


def test_the_chart_pixel_cap_is_the_image_stages():
    from crawlers.images.config import ImageFetchConfig

    assert charts.MAX_CHART_PIXELS == ImageFetchConfig.model_fields["max_pixels"].default


def test_control_characters_from_stderr_never_reach_the_status(tmp_path):
    stderr = "Traceback\n\x1b]0;TITLE\x07\x1b[2K\rcharts=3 rendered=3 status=ok:3\x1b[8m\x9b\n"

    def run(code, inputs=None, timeout_s=30.0):
        return SimpleNamespace(ok=False, outputs={}, error="exit code 1", stderr=stderr)

    s = make_charts(tmp_path, n=1, seed=0, types=["bar"], run=run)
    (row,) = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    assert row["status"] == "exit code 1: charts=3 rendered=3 status=ok:3[8m"
    assert list(s["status"]) == [row["status"]]


def test_an_exception_in_one_chart_is_that_charts_status(tmp_path):
    calls = []

    def run(code, inputs=None, timeout_s=30.0):
        calls.append(1)
        if len(calls) == 1:
            raise RecursionError("maximum recursion depth exceeded")
        return fake_run(code, inputs, timeout_s)

    s = make_charts(tmp_path, n=3, seed=0, types=["bar"], run=run, workers=2)
    rows = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    statuses = sorted(r["status"] for r in rows)
    assert statuses == ["error: RecursionError: maximum recursion depth exceeded", "ok", "ok"]
    assert s["rendered"] == 2


def test_teacher_values_that_are_not_finite_or_huge_are_the_charts_reject(server, tmp_path):
    huge = dict(TEACHER_DATA, series=[{"name": "Cups", "values": [1e308, 1e308, 1]}])
    infinite = json.dumps(TEACHER_DATA).replace("[120, 80, 95]", "[1e400, 1e400, 1]")
    sum_qa = {"qa": [dict(_teacher_qa()["qa"][2], answer="295")]}
    server["script"] = [
        ("ok", json.dumps(huge)),
        ("ok", json.dumps(huge)),  # the repair retry
        ("ok", infinite),
        ("ok", infinite),
        ("ok", json.dumps(TEACHER_DATA)),
        ("ok", json.dumps({"code": "x = 1"})),
        ("ok", json.dumps(sum_qa)),
    ]
    teacher = TeacherClient(server["base_url"], "tiny-teacher", timeout=5, backoff_s=0.01)
    s = make_charts(tmp_path, n=3, seed=0, types=["bar"], teacher=teacher, run=fake_run, workers=1)
    too_big, not_finite, good = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    assert too_big["status"].startswith("teacher: TeacherSchemaError")
    assert "less than or equal to 1000000000000" in too_big["status"]
    assert not_finite["status"].startswith("teacher: TeacherSchemaError")
    assert "finite number" in not_finite["status"]
    assert good["status"] == "ok" and [q["answer"] for q in good["qa"]] == ["295"]
    assert s["rendered"] == 1


def test_a_qa_item_that_cannot_be_computed_is_dropped_with_its_reason():
    data = {"categories": ["a", "b", "c"], "series": [{"name": "s", "values": [1e308, 1e308, 1]}]}
    items = [
        charts.TeacherQAItem(question="Sum?", answer="1", kind="sum", series="s"),
        charts.TeacherQAItem(question="s of a?", answer="1e+308", kind="lookup", categories=["a"]),
    ]
    dropped: list[dict] = []
    kept = charts._check_teacher_qa(data, items, "chart-0", dropped)
    assert [d["reject"] for d in dropped] == ["not computable"]
    assert dropped[0]["reason"].startswith("not computable: OverflowError")
    assert [q["question"] for q in kept] == ["s of a?"]


def test_a_teacher_question_must_name_what_its_answer_was_recomputed_from():
    """The answer was recomputed from kind/series/categories but the teacher's question kept as
    it was: 'What is the boiling point of water in kelvin?' -> '3' was stored as verified."""
    data = {
        "categories": ["2019", "2020", "2021"],
        "x_field": "Year",
        "y_field": "Sales",
        "unit": "EUR",
        "title": "t",
        "series": [{"name": "Revenue", "values": [10, 20, 30]}],
    }
    item = charts.TeacherQAItem
    items = [
        item(question="What is the boiling point of water in kelvin?", answer="3", kind="count"),
        item(question="Who founded the company?", answer="2021", kind="extremum", op="max"),
        item(
            question="What is the boiling point of water in 2019?",
            answer="10",
            kind="lookup",
            categories=["2019"],
        ),
        item(question="What were sales in 2020?", answer="20", kind="lookup", categories=["2020"]),
        item(
            question="In which year was revenue highest?", answer="2021", kind="extremum", op="max"
        ),
        item(
            question="Which is larger: 2019 or 2021?",
            answer="2021",
            kind="comparison",
            categories=["2019", "2021"],
        ),
        item(question="What is the total?", answer="60", kind="sum"),
        item(
            question="What were sales in 2025?",
            answer="unanswerable",
            kind="unanswerable",
            categories=["2025"],
        ),
    ]
    dropped: list[dict] = []
    kept = charts._check_teacher_qa(data, items, "c1", dropped)
    assert [(q["question"], q["verified"]) for q in kept] == [
        ("How many years are shown in the chart?", True),  # a count: the template question
        ("What were sales in 2020?", True),
        ("In which year was revenue highest?", True),
        ("Which is larger: 2019 or 2021?", True),
        ("What were sales in 2025?", True),
    ]
    assert [d["question"] for d in dropped] == [
        "Who founded the company?",
        "What is the boiling point of water in 2019?",
        "What is the total?",
    ]
    assert {d["reject"] for d in dropped} == {"question does not name its references"}

    two = dict(
        data,
        series=[{"name": "Online", "values": [1, 2, 3]}, {"name": "Stores", "values": [3, 2, 1]}],
    )
    dropped = []
    kept = charts._check_teacher_qa(
        two,
        [
            item(
                question="What were sales in 2019?",
                answer="3",
                kind="lookup",
                series="Stores",
                categories=["2019"],
            ),
            item(
                question="What were store sales in 2019?",
                answer="3",
                kind="lookup",
                series="Stores",
                categories=["2019"],
            ),
        ],
        "c2",
        dropped,
    )
    assert [q["question"] for q in kept] == ["What were store sales in 2019?"]
    assert [d["question"] for d in dropped] == ["What were sales in 2019?"]
