"""A chart's text in any script an installed font covers is drawn (synth/sandbox.py: the system's
font directories bound, `font.family` = DejaVu Sans then the installed fonts that draw what it
cannot), and a chart whose text cannot be drawn keeps its image but gets status
`missing_glyphs: ...`, no QA, and counts as a reject by reason (synth/charts.py)."""

from __future__ import annotations

import io
import random
import shutil
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
from PIL import Image

from synth import charts, sandbox
from synth.charts import make_charts
from synth.tables import missing_glyphs

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap",
)
pytestmark = pytest.mark.timeout(120)

CJK = "東京"
OL_CHIKI = "ᱚᱞ ᱪᱤᱠᱤ"  # a script few machines have a font for


def _data(categories: list[str], title: str = "Revenue by city") -> dict:
    return {
        "topic": "café revenue by city",
        "title": title,
        "x_field": "City",
        "y_field": "Revenue",
        "unit": "€ k",
        "categories": categories,
        "series": [{"name": "Revenue", "values": list(range(3, 3 + len(categories)))}],
    }


class ScriptedTeacher:
    """Answers the chart prompts: `data`, the bar template's code, no QA."""

    model = "scripted-teacher"

    def __init__(self, data: dict):
        self.data = data

    def chat_json(self, messages, schema, **params):
        prompt = messages[-1]["content"]
        if "Invent a realistic" in prompt:
            return schema.model_validate(self.data)
        if "Write a Python program" in prompt:
            return schema(code=charts.template_code("bar", random.Random(0)))
        return schema(qa=[])


def _recording_run(seen: list):
    def run(code, inputs=None, timeout_s=30.0):
        r = sandbox.run_python(code, inputs, timeout_s)
        seen.append(r)
        return r

    return run


@needs_bwrap
def test_cjk_categories_are_drawn_with_an_installed_font(tmp_path):
    if missing_glyphs(CJK):
        pytest.skip("no installed font draws Han (Debian: fonts-wqy-microhei, fonts-noto-cjk)")
    seen: list = []
    data = _data(["São Paulo", CJK, "القاهرة", "Zürich"])
    s = make_charts(
        tmp_path,
        n=1,
        seed=0,
        types=["bar"],
        teacher=ScriptedTeacher(data),
        run=_recording_run(seen),
    )
    (row,) = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    (r,) = seen
    # before: the sandbox saw matplotlib's own fonts only, and drew 東京 as boxes
    assert "missing from font" not in r.stderr, r.stderr
    assert row["status"] == "ok" and s["rejects"] == {}, row["status"]
    families = sandbox.font_fallback()
    assert families and "font.family: sans-serif, " + ", ".join(families) in (
        sandbox._matplotlibrc(families)
    )


@needs_bwrap
def test_a_script_no_installed_font_draws_is_missing_glyphs(tmp_path):
    if not missing_glyphs(OL_CHIKI):
        pytest.skip("this machine has a font for Ol Chiki")
    data = _data(["Oslo", OL_CHIKI, "Lima"])
    s = make_charts(tmp_path, n=1, seed=0, types=["bar"], teacher=ScriptedTeacher(data))
    (row,) = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    assert row["status"].startswith("missing_glyphs: no installed font draws"), row["status"]
    assert "ᱚ" in row["status"] and row["qa"] == []
    with Image.open(tmp_path / row["image_path"]) as im:  # kept, to be looked at
        assert im.size[0] > 100
    assert s["rejects"] == {"missing_glyphs": 1} and s["qa"] == 0


def test_a_glyph_matplotlib_drew_as_a_box_is_missing_glyphs(tmp_path):
    """matplotlib's own warning counts, whatever fontconfig says about the installed fonts."""
    png = _png()
    warning = (
        "/sandbox/run/main.py:10: UserWarning: Glyph 26481 (\\N{CJK UNIFIED IDEOGRAPH-6771}) "
        "missing from font(s) DejaVu Sans.\n  fig.savefig('chart.png')\n"
    )

    def run(code, inputs=None, timeout_s=30.0):
        return SimpleNamespace(ok=True, outputs={"chart.png": png}, error=None, stderr=warning)

    s = make_charts(tmp_path, n=2, seed=0, types=["bar"], run=run)
    rows = pq.read_table(tmp_path / "charts.parquet").to_pylist()
    assert all(r["status"].startswith("missing_glyphs: ") and "東" in r["status"] for r in rows)
    assert all(r["image_path"] and r["qa"] == [] for r in rows)
    assert s["rejects"] == {"missing_glyphs": 2} and s["rendered"] == 2


def test_chart_text_is_every_string_of_the_data():
    text = charts.chart_text(_data(["Oslo", CJK]))
    for s in ("Revenue by city", "City", "€ k", "Oslo", CJK, "Revenue"):
        assert s in text.splitlines()


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


def test_only_directories_named_for_fonts_are_bound(tmp_path_factory, monkeypatch):
    from matplotlib import font_manager

    tmp_path = tmp_path_factory.mktemp("data")  # a name of its own, not the test's
    fonts = tmp_path / "share" / "fonts" / "truetype"
    fonts.mkdir(parents=True)
    (fonts / "a.ttf").write_bytes(b"")
    loose = [str(tmp_path / "b.ttf"), "/c.ttf", str(fonts / "a.ttf")]
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda *a, **k: loose)
    sandbox._font_dirs.cache_clear()
    try:
        assert sandbox._font_dirs() == (str(fonts),)  # never / nor a directory not of fonts
    finally:
        sandbox._font_dirs.cache_clear()
