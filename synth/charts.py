"""Synthetic charts with verified QA (issue 15, "Charts").

    from synth.charts import make_charts
    summary = make_charts(out_dir, n=20, seed=0)

Flow per chart: topic -> data (JSON) -> plotting code -> `run_python(code, {"data.json": ...})`
in the bubblewrap sandbox -> `chart.png` -> QA.

- `teacher=None` (recorded as `teacher="programmatic"`): seeded topic and data generators and one
  plotting-code template per chart type (`CHART_TYPES`); the code reads `data.json` from its
  working directory and writes `chart.png`. Every QA answer is computed from the data
  (`verified=True`).
- `teacher=TeacherClient(...)`: the teacher invents the topic and data (in the categorical shape,
  `TEACHER_TYPES`), writes the plotting code and writes QA, each through `chat_json`. Each teacher
  answer names what it refers to (series, categories, op); it is recomputed from the data and kept
  with `verified=True` where it agrees, dropped with its reason where it does not (the reasons are in
  the summary's `dropped_qa`); a kind that cannot be recomputed is kept with `verified=False`.
  The teacher's own question is kept (its wording is what it adds), so it must name what the
  answer was recomputed from, as whole tokens (synth/textmatch.py): the categories of lookup,
  comparison, difference and unanswerable; the series when the chart has several; and the
  measure (the series' name or the y field) for lookup, difference, sum, average and trend, the
  measure or the x field ("Which cafe sold the most?") for extremum. Else it is dropped as
  `question does not name its references` ("Who founded the company?" answered by an
  extremum). A `count` names nothing to check: its question is replaced
  by the template one ("How many <x field>s are shown in the chart?").
- Code that is blocked or fails in the sandbox gives the chart `status` = the reason, no image and
  no QA. The sandbox draws with DejaVu Sans and then the installed fonts that draw what it cannot
  (synth/sandbox.py `font_fallback`: CJK, Arabic, ...); a chart whose text (title, field names,
  unit, categories, series, labels) has characters no installed font draws (synth/tables.py
  `missing_glyphs`: fontconfig's coverage) or that matplotlib reported drawing as boxes (its
  "Glyph ... missing from font(s)" warning) keeps its image but gets status `missing_glyphs: ...`
  and no QA: its labels cannot be read off the image. The image is decoded here (Pillow, on the
  host) before it is kept: a chart.png that is not a PNG, does not decode, or is over
  `MAX_CHART_PIXELS` is the chart's status; a good one is stored re-encoded. Teacher values must be finite and within +-`MAX_TEACHER_VALUE` (else the
  teacher answer fails validation and the chart's status says why). Any failure of one chart
  is that chart's `status` (or a dropped QA item's reason), never the end of the run.

Output: `out_dir/charts.parquet` (columns `COLUMNS`) and the PNGs under `out_dir/images/`.
Deterministic for a seed: the same rows, data and code (PNG bytes may differ).
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import re
import statistics
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image
from pydantic import BaseModel, Field

from synth.sandbox import run_python

CHART_TYPES = (
    "bar",
    "grouped_bar",
    "stacked_bar",
    "line",
    "area",
    "pie",
    "scatter",
    "histogram",
    "heatmap",
    "box",
)
# Chart types whose data has the categorical shape (categories x series): the teacher path.
TEACHER_TYPES = ("bar", "grouped_bar", "stacked_bar", "line", "area", "pie")
QA_KINDS = (
    "lookup",
    "extremum",
    "comparison",
    "difference",
    "sum",
    "average",
    "trend",
    "count",
    "unanswerable",
)
UNANSWERABLE = "unanswerable"
PROGRAMMATIC = "programmatic"
RENDER_TIMEOUT_S = 30.0
FILE_NAME = "charts.parquet"
IMAGES = "images"
# The image stage's pixel cap (crawlers.images.config.ImageFetchConfig.max_pixels, default; not
# imported: crawlers.images loads its fetcher). A chart at dpi 300 is ~4 Mpx.
MAX_CHART_PIXELS = 40_000_000
# The largest |value| a teacher data set may hold: sums and differences stay exact to 2 places
# and finite (1e308 + 1e308 is inf, and fmt(inf) raises).
MAX_TEACHER_VALUE = 1e12

# matplotlib's warning for a character no font of the fallback list draws (a box is drawn).
GLYPH_WARNING = re.compile(r"Glyph (\d+) \(.*?\) missing from font")

QA_TYPE = pa.list_(
    pa.struct(
        [
            ("question", pa.string()),
            ("answer", pa.string()),
            ("kind", pa.string()),
            ("verified", pa.bool_()),
        ]
    )
)
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("chart_type", pa.string()),
        ("topic", pa.string()),
        ("data", pa.string()),
        ("code", pa.string()),
        ("image_path", pa.string()),
        ("qa", QA_TYPE),
        ("status", pa.string()),
        ("teacher", pa.string()),
    ]
)
COLUMNS = tuple(SCHEMA.names)

# --------------------------------------------------------------------------- topics

# (subject, x_field, y_field, unit, category pool, series pool, value range)
CATEGORICAL_TOPICS = (
    (
        "Fruit sales",
        "Fruit",
        "Sales",
        "tonnes",
        ("Apples", "Bananas", "Cherries", "Dates", "Grapes", "Kiwis", "Lemons", "Mangoes"),
        ("North", "South", "East", "West"),
        (10, 200),
    ),
    (
        "Library loans",
        "Genre",
        "Loans",
        "books",
        ("Fiction", "History", "Science", "Poetry", "Travel", "Cooking", "Art", "Biography"),
        ("Main branch", "Riverside", "Hillcrest"),
        (50, 900),
    ),
    (
        "Electricity generation",
        "Source",
        "Output",
        "TWh",
        ("Solar", "Wind", "Hydro", "Nuclear", "Gas", "Coal", "Biomass", "Geothermal"),
        ("Region A", "Region B", "Region C"),
        (5, 120),
    ),
    (
        "Museum visitors",
        "Museum",
        "Visitors",
        "thousands",
        ("Natural History", "Modern Art", "Science", "Maritime", "Railway", "Design", "Toys"),
        ("Adults", "Children", "Seniors"),
        (20, 400),
    ),
    (
        "Bicycle trips",
        "Station",
        "Trips",
        "trips",
        ("Harbour", "Market", "Station Rd", "Park Gate", "Old Town", "Campus", "Stadium"),
        ("Weekdays", "Weekends"),
        (100, 2000),
    ),
    (
        "Rainfall",
        "City",
        "Rainfall",
        "mm",
        ("Oslo", "Lima", "Perth", "Dakar", "Quito", "Hanoi", "Cork", "Tunis"),
        ("Spring", "Summer", "Autumn", "Winter"),
        (5, 300),
    ),
)
YEARS = tuple(str(y) for y in range(2012, 2025))

# (subject, label field, x_field, y_field, labels)
SCATTER_TOPICS = (
    (
        "Car weight and fuel use",
        "Model",
        "Weight (kg)",
        "Fuel use (L/100 km)",
        ("Alto", "Brio", "Corsa", "Dart", "Echo", "Fiesta", "Golf", "Hilux", "Ibiza", "Jazz"),
    ),
    (
        "Study hours and exam scores",
        "Student",
        "Study hours",
        "Score",
        ("Ana", "Ben", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivan", "Jo", "Kai"),
    ),
    (
        "Altitude and temperature",
        "Town",
        "Altitude (m)",
        "Mean temperature (C)",
        ("Aosta", "Bern", "Chur", "Davos", "Evolene", "Fiesch", "Gstaad", "Hasli", "Interlaken"),
    ),
)
# (subject, measure, unit, value range)
HISTOGRAM_TOPICS = (
    ("Delivery times", "Delivery time", "minutes", (10, 70)),
    ("Adult heights", "Height", "cm", (150, 200)),
    ("Daily step counts", "Steps", "thousand steps", (0, 20)),
    ("Commute distances", "Distance", "km", (0, 40)),
)
# (subject, row field, column field, value name, rows, columns, value range)
HEATMAP_TOPICS = (
    (
        "Website visits by weekday and hour",
        "Day",
        "Hour",
        "Visits",
        ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"),
        ("06", "09", "12", "15", "18", "21"),
        (0, 99),
    ),
    (
        "Product defects by line and shift",
        "Line",
        "Shift",
        "Defects",
        ("Line 1", "Line 2", "Line 3", "Line 4", "Line 5"),
        ("Early", "Day", "Late", "Night"),
        (0, 60),
    ),
)

# (subject, group field, measure, unit, groups, value range)
BOX_TOPICS = (
    (
        "Reaction times by age group",
        "Age group",
        "Reaction time",
        "ms",
        ("18-29", "30-39", "40-49", "50-59", "60-69", "70+"),
        (180, 420),
    ),
    (
        "Apartment rents by district",
        "District",
        "Monthly rent",
        "EUR",
        ("Centre", "Harbour", "North", "Old Town", "University", "West End"),
        (500, 2400),
    ),
    (
        "Battery life by phone brand",
        "Brand",
        "Battery life",
        "hours",
        ("Arvo", "Bolt", "Corvo", "Dyna", "Elm"),
        (6, 30),
    ),
)

# --------------------------------------------------------------------------- templates

_HEAD = """import json
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

STYLE = {style}
with open("data.json") as f:
    d = json.load(f)
fig, ax = plt.subplots(figsize=STYLE["figsize"], dpi=100)
"""
_TAIL = """ax.set_title(d["title"])
fig.tight_layout()
fig.savefig("chart.png")
"""
_AXES = """ax.set_xlabel(d["x_field"])
ax.set_ylabel(d["y_field"] + " (" + d["unit"] + ")")
if STYLE["grid"]:
    ax.grid(axis="y", alpha=0.3)
"""

TEMPLATES: dict[str, str] = {
    "bar": """s = d["series"][0]
bars = ax.bar(d["categories"], s["values"], color=STYLE["colors"][0])
ax.bar_label(bars, fontsize=8)
ax.tick_params(axis="x", labelrotation=30)
"""
    + _AXES,
    "grouped_bar": """n = len(d["series"])
width = 0.8 / n
xs = list(range(len(d["categories"])))
for i, s in enumerate(d["series"]):
    pos = [x - 0.4 + width * (i + 0.5) for x in xs]
    bars = ax.bar(pos, s["values"], width, label=s["name"], color=STYLE["colors"][i])
    ax.bar_label(bars, fontsize=7)
ax.set_xticks(xs)
ax.set_xticklabels(d["categories"], rotation=30)
ax.legend()
"""
    + _AXES,
    "stacked_bar": """bottom = [0] * len(d["categories"])
for i, s in enumerate(d["series"]):
    bars = ax.bar(d["categories"], s["values"], bottom=bottom, label=s["name"],
                  color=STYLE["colors"][i])
    ax.bar_label(bars, label_type="center", fontsize=7)
    bottom = [b + v for b, v in zip(bottom, s["values"])]
ax.tick_params(axis="x", labelrotation=30)
ax.legend()
"""
    + _AXES,
    "line": """for i, s in enumerate(d["series"]):
    ax.plot(d["categories"], s["values"], marker=STYLE["marker"], label=s["name"],
            color=STYLE["colors"][i])
    for x, y in zip(d["categories"], s["values"]):
        ax.annotate(str(y), (x, y), textcoords="offset points", xytext=(0, 5),
                    ha="center", fontsize=7)
if len(d["series"]) > 1:
    ax.legend()
"""
    + _AXES,
    "area": """ys = [s["values"] for s in d["series"]]
ax.stackplot(d["categories"], ys, labels=[s["name"] for s in d["series"]],
             colors=STYLE["colors"][: len(ys)], alpha=0.8)
bottom = [0] * len(d["categories"])
for s in d["series"]:
    for i, (x, y) in enumerate(zip(d["categories"], s["values"])):
        ax.text(i, bottom[i] + y / 2, str(y), ha="center", va="center", fontsize=7)
    bottom = [b + v for b, v in zip(bottom, s["values"])]
ax.legend(loc="upper left")
"""
    + _AXES,
    "pie": """s = d["series"][0]
labels = [c + " (" + str(v) + ")" for c, v in zip(d["categories"], s["values"])]
ax.pie(s["values"], labels=labels, colors=STYLE["colors"][: len(labels)],
       autopct="%1.1f%%", startangle=STYLE["startangle"], textprops={"fontsize": 8})
ax.axis("equal")
""",
    "scatter": """xs = [p["x"] for p in d["points"]]
ys = [p["y"] for p in d["points"]]
ax.scatter(xs, ys, color=STYLE["colors"][0], marker=STYLE["marker"])
for p in d["points"]:
    ax.annotate(p["label"] + " (" + str(p["x"]) + ", " + str(p["y"]) + ")", (p["x"], p["y"]),
                textcoords="offset points", xytext=(4, 4), fontsize=7)
ax.set_xlabel(d["x_field"])
ax.set_ylabel(d["y_field"])
if STYLE["grid"]:
    ax.grid(alpha=0.3)
""",
    "histogram": """counts, edges, patches = ax.hist(d["values"], bins=d["bins"],
                                color=STYLE["colors"][0], edgecolor="black")
ax.bar_label(patches, labels=[str(int(c)) for c in counts], fontsize=8)
ax.set_xticks(d["bins"])
ax.set_xlabel(d["x_field"] + " (" + d["unit"] + ")")
ax.set_ylabel("Count")
""",
    "heatmap": """im = ax.imshow(d["matrix"], cmap=STYLE["cmap"], aspect="auto")
ax.set_xticks(range(len(d["columns"])))
ax.set_xticklabels(d["columns"])
ax.set_yticks(range(len(d["rows"])))
ax.set_yticklabels(d["rows"])
for i, row in enumerate(d["matrix"]):
    for j, v in enumerate(row):
        ax.text(j, i, str(v), ha="center", va="center", fontsize=8, color="black")
ax.set_xlabel(d["column_field"])
ax.set_ylabel(d["row_field"])
fig.colorbar(im, ax=ax, label=d["value_field"])
""",
    "box": """names = [g["name"] for g in d["groups"]]
bp = ax.boxplot([g["values"] for g in d["groups"]], patch_artist=True)
for patch, color in zip(bp["boxes"], STYLE["colors"]):
    patch.set_facecolor(color)
for i, line in enumerate(bp["medians"]):
    y = line.get_ydata()[0]
    ax.text(i + 1.3, y, str(d["medians"][i]), va="center", fontsize=8)
ax.set_xticks(range(1, len(names) + 1))
ax.set_xticklabels(names)
ax.set_xlabel(d["x_field"])
ax.set_ylabel(d["y_field"] + " (" + d["unit"] + ")")
if STYLE["grid"]:
    ax.grid(axis="y", alpha=0.3)
""",
}
PALETTES = (
    ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C"],
    ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"],
    ["#377eb8", "#ff7f00", "#4daf4a", "#f781bf", "#a65628", "#984ea3", "#999999", "#e41a1c"],
)


def _style(rng: random.Random) -> dict[str, Any]:
    return {
        "figsize": rng.choice([[6.4, 4.8], [7.0, 4.5], [6.0, 5.0]]),
        "colors": rng.choice(PALETTES),
        "grid": rng.random() < 0.5,
        "marker": rng.choice(["o", "s", "^", "D"]),
        "startangle": rng.choice([0, 90, 140]),
        "cmap": rng.choice(["viridis", "YlOrRd", "Blues"]),
    }


def template_code(chart_type: str, rng: random.Random) -> str:
    """The plotting program for `chart_type`, with a seeded style block."""
    style = repr(dict(sorted(_style(rng).items())))
    return _HEAD.format(style=style) + TEMPLATES[chart_type] + _TAIL


# --------------------------------------------------------------------------- data


def fmt(x: float) -> str:
    """A number as an answer string: integers without a decimal point, others to 2 places."""
    x = round(float(x), 2)
    if x == int(x):
        return str(int(x))
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _categorical(chart_type: str, rng: random.Random) -> tuple[str, dict]:
    subject, x_field, y_field, unit, cats, series_pool, (lo, hi) = rng.choice(CATEGORICAL_TOPICS)
    if chart_type in ("line", "area"):
        k = rng.randint(5, 8)
        start = rng.randint(0, len(YEARS) - k)
        categories = list(YEARS[start : start + k])
        x_field = "Year"
    else:
        k = rng.randint(4, 6) if chart_type != "pie" else rng.randint(3, 6)
        categories = rng.sample(cats, k)
    if chart_type in ("bar", "pie"):
        names = ["All"]
    elif chart_type == "line":
        names = rng.sample(series_pool, rng.randint(1, min(3, len(series_pool))))
    else:
        names = rng.sample(series_pool, rng.randint(2, min(3, len(series_pool))))
    series = []
    for name in names:
        if chart_type in ("line", "area") and rng.random() < 0.5:
            vals = sorted(rng.sample(range(lo, hi), k), reverse=rng.random() < 0.4)
        else:
            vals = rng.sample(range(lo, hi), k)  # distinct: unique extremes
        series.append({"name": name, "values": vals})
    topic = f"{subject} by {x_field.lower()}"
    if len(names) > 1:
        topic += f" and {'season' if subject == 'Rainfall' else 'group'}"
    data = {
        "title": topic.capitalize(),
        "x_field": x_field,
        "y_field": y_field,
        "unit": unit,
        "categories": categories,
        "series": series,
    }
    return topic, data


def _scatter(rng: random.Random) -> tuple[str, dict]:
    subject, label_field, x_field, y_field, labels = rng.choice(SCATTER_TOPICS)
    k = rng.randint(6, min(9, len(labels)))
    chosen = rng.sample(labels, k)
    slope = rng.choice([-1, 1]) * rng.uniform(0.5, 2.0)
    xs = rng.sample(range(10, 100), k)
    points = []
    for label, x in zip(chosen, xs, strict=True):
        y = round(50 + slope * (x - 55) * 0.5 + rng.uniform(-6, 6), 1)
        points.append({"label": label, "x": x, "y": y})
    data = {
        "title": subject,
        "label_field": label_field,
        "x_field": x_field,
        "y_field": y_field,
        "points": points,
    }
    return subject.lower(), data


def _histogram(rng: random.Random) -> tuple[str, dict]:
    subject, measure, unit, (lo, hi) = rng.choice(HISTOGRAM_TOPICS)
    nbins = rng.randint(5, 7)
    step = max(1, (hi - lo) // nbins)
    bins = [lo + i * step for i in range(nbins + 1)]
    mid, spread = (bins[0] + bins[-1]) / 2, (bins[-1] - bins[0]) / 4
    values = []
    for _ in range(rng.randint(40, 80)):
        v = round(min(bins[-1], max(bins[0], rng.gauss(mid, spread))), 1)
        values.append(v)
    data = {"title": subject, "x_field": measure, "unit": unit, "bins": bins, "values": values}
    return subject.lower(), data


def _heatmap(rng: random.Random) -> tuple[str, dict]:
    subject, row_field, col_field, value_field, rows, cols, (lo, hi) = rng.choice(HEATMAP_TOPICS)
    r, c = rng.randint(3, len(rows)), rng.randint(3, len(cols))
    flat = rng.sample(range(lo, hi + 1), r * c)  # distinct: unique extremes
    data = {
        "title": subject,
        "row_field": row_field,
        "column_field": col_field,
        "value_field": value_field,
        "rows": list(rows[:r]),
        "columns": list(cols[:c]),
        "matrix": [flat[i * c : (i + 1) * c] for i in range(r)],
    }
    return subject.lower(), data


def _box(rng: random.Random) -> tuple[str, dict]:
    subject, group_field, measure, unit, groups, (lo, hi) = rng.choice(BOX_TOPICS)
    chosen = rng.sample(groups, rng.randint(3, min(5, len(groups))))
    span = hi - lo
    centres = rng.sample(range(lo + span // 4, hi - span // 4), len(chosen))  # distinct
    out = []
    for name, c in zip(chosen, centres, strict=True):
        k = rng.randrange(9, 22, 2)  # odd: the median is one of the values
        vals = [round(min(hi, max(lo, rng.gauss(c, span / 10))), 1) for _ in range(k)]
        out.append({"name": name, "values": vals})
    data = {
        "title": subject,
        "x_field": group_field,
        "y_field": measure,
        "unit": unit,
        "groups": out,
        "medians": [statistics.median(g["values"]) for g in out],
    }
    return subject.lower(), data


def make_data(chart_type: str, rng: random.Random) -> tuple[str, dict]:
    """(topic, data) for a chart type, from the seeded generator."""
    if chart_type in TEACHER_TYPES:
        return _categorical(chart_type, rng)
    makers = {"scatter": _scatter, "histogram": _histogram, "heatmap": _heatmap, "box": _box}
    return makers[chart_type](rng)


# --------------------------------------------------------------------------- QA


class Unrecomputable(ValueError):
    """A QA item whose answer cannot be recomputed from the data (names what is missing)."""


def _series(data: dict, name: str | None) -> dict:
    series = data["series"]
    if name is None:
        if len(series) == 1:
            return series[0]
        raise Unrecomputable(f"no series named; the chart has {[s['name'] for s in series]}")
    for s in series:
        if s["name"].strip().lower() == name.strip().lower():
            return s
    raise Unrecomputable(f"series {name!r} is not in the data ({[s['name'] for s in series]})")


def _value(data: dict, s: dict, category: str) -> float:
    for c, v in zip(data["categories"], s["values"], strict=True):
        if c.strip().lower() == category.strip().lower():
            return v
    raise Unrecomputable(f"category {category!r} is not in the data")


def recompute(
    data: dict, kind: str, series: str | None = None, categories: Iterable[str] = (), op: str = ""
) -> str:
    """The answer to a QA item on categorical data (categories x series), computed from the data.

    kind: lookup (one category), extremum (op max|min), comparison (two categories: the larger),
    difference (two categories: |a - b|), sum, average, trend (increasing|decreasing|fluctuating
    from the first category to the last), count (categories), unanswerable (a category that is
    not in the data). Raises Unrecomputable when the item does not fit the data.
    """
    cats = list(categories)
    if kind == "count":
        return str(len(data["categories"]))
    if kind == UNANSWERABLE:
        known = {c.strip().lower() for c in data["categories"]}
        if cats and any(c.strip().lower() not in known for c in cats):
            return UNANSWERABLE
        raise Unrecomputable("an unanswerable item must name a category that is not in the data")
    s = _series(data, series)
    vals = s["values"]
    if kind == "lookup":
        if len(cats) != 1:
            raise Unrecomputable("lookup needs exactly one category")
        return fmt(_value(data, s, cats[0]))
    if kind == "extremum":
        if op not in ("max", "min"):
            raise Unrecomputable(f"extremum op {op!r} must be max or min")
        best = max(vals) if op == "max" else min(vals)
        if vals.count(best) != 1:
            raise Unrecomputable(f"the {op} is tied")
        return data["categories"][vals.index(best)]
    if kind in ("comparison", "difference"):
        if len(cats) != 2:
            raise Unrecomputable(f"{kind} needs exactly two categories")
        a, b = (_value(data, s, c) for c in cats)
        if kind == "difference":
            return fmt(abs(a - b))
        if a == b:
            raise Unrecomputable("comparison of equal values")
        return cats[0] if a > b else cats[1]
    if kind == "sum":
        return fmt(sum(vals))
    if kind == "average":
        return fmt(sum(vals) / len(vals))
    if kind == "trend":
        pairs = list(zip(vals, vals[1:], strict=False))
        if all(b > a for a, b in pairs):
            return "increasing"
        if all(b < a for a, b in pairs):
            return "decreasing"
        return "fluctuating"
    raise Unrecomputable(f"kind {kind!r} cannot be recomputed (known: {', '.join(QA_KINDS)})")


def answers_agree(given: str, expected: str) -> bool:
    """Numbers within 0.01 (or 0.1%); other answers equal ignoring case and spaces. The given
    number is read as synth.textmatch reads numbers ("7,5" is 7.5, "1,000" is 1000: never a
    decimal comma taken for grouping); one without a comma may also be Python's ("1e+308")."""
    from synth.textmatch import number_value

    text = str(given).strip().rstrip(".")
    g = number_value(text)
    try:
        g = float(text) if g is None and "," not in text else g
    except ValueError:
        g = None
    try:
        e = float(expected)
    except ValueError:
        e = None
    if g is None or e is None:
        return str(given).strip().lower().rstrip(".") == expected.strip().lower()
    return math.isclose(g, e, rel_tol=1e-3, abs_tol=0.01)


def _qa(question: str, answer: str, kind: str, verified: bool = True) -> dict:
    return {"question": question, "answer": answer, "kind": kind, "verified": verified}


def _categorical_qa(chart_type: str, data: dict, rng: random.Random) -> list[dict]:
    cats, x_field, y = data["categories"], data["x_field"], data["y_field"]
    unit = data["unit"]
    multi = len(data["series"]) > 1
    s = rng.choice(data["series"])
    name = s["name"] if multi else None
    of = f" for {s['name']}" if multi else ""
    a, b = rng.sample(cats, 2)
    c = rng.choice(cats)
    op = rng.choice(["max", "min"])
    qa = [
        _qa(
            f"What is the {y.lower()}{of} in {c} ({unit})?",
            recompute(data, "lookup", name, [c]),
            "lookup",
        ),
        _qa(
            f"Which {x_field.lower()} has the {'highest' if op == 'max' else 'lowest'} "
            f"{y.lower()}{of}?",
            recompute(data, "extremum", name, op=op),
            "extremum",
        ),
        _qa(
            f"Which is larger{of}: {a} or {b}?",
            recompute(data, "comparison", name, [a, b]),
            "comparison",
        ),
        _qa(
            f"What is the difference in {y.lower()}{of} between {a} and {b} ({unit})?",
            recompute(data, "difference", name, [a, b]),
            "difference",
        ),
    ]
    agg = rng.choice(["sum", "average"])
    word = "total" if agg == "sum" else "average"
    qa.append(
        _qa(
            f"What is the {word} {y.lower()}{of} across all {x_field.lower()}s shown ({unit})?",
            recompute(data, agg, name),
            agg,
        )
    )
    if x_field == "Year":
        qa.append(
            _qa(
                f"From {cats[0]} to {cats[-1]}, is the {y.lower()}{of} increasing, decreasing "
                "or fluctuating?",
                recompute(data, "trend", name),
                "trend",
            )
        )
    qa.append(
        _qa(
            f"How many {x_field.lower()}s are shown in the chart?",
            recompute(data, "count"),
            "count",
        )
    )
    missing = next(
        m
        for m in (
            [str(int(cats[-1]) + 1 + i) for i in range(5)]
            if x_field == "Year"
            else ["Quinces", "Jazz", "Tidal", "Aquarium", "Airport", "Zurich", "Other", "Pears"]
        )
        if m not in cats
    )
    qa.append(
        _qa(
            f"What is the {y.lower()}{of} in {missing}?",
            recompute(data, UNANSWERABLE, name, [missing]),
            UNANSWERABLE,
        )
    )
    return qa


def _scatter_qa(data: dict, rng: random.Random) -> list[dict]:
    pts, lf, xf, yf = data["points"], data["label_field"], data["x_field"], data["y_field"]
    p, q = rng.sample(pts, 2)
    top = max(pts, key=lambda t: t["y"])
    n = len(pts)
    mx = sum(t["x"] for t in pts) / n
    my = sum(t["y"] for t in pts) / n
    cov = sum((t["x"] - mx) * (t["y"] - my) for t in pts)
    qa = [
        _qa(f"What is the {yf} of {p['label']}?", fmt(p["y"]), "lookup"),
        _qa(f"Which {lf.lower()} has the highest {yf}?", top["label"], "extremum"),
        _qa(
            f"Which has the larger {xf}: {p['label']} or {q['label']}?",
            p["label"] if p["x"] > q["x"] else q["label"],
            "comparison",
        ),
        _qa(
            f"What is the difference in {yf} between {p['label']} and {q['label']}?",
            fmt(abs(p["y"] - q["y"])),
            "difference",
        ),
        _qa(f"What is the average {xf} of the points shown?", fmt(mx), "average"),
        _qa(
            f"As {xf} increases, does {yf} tend to increase or decrease?",
            "increase" if cov > 0 else "decrease",
            "trend",
        ),
        _qa(f"How many {lf.lower()}s are plotted?", str(n), "count"),
        _qa(f"What is the price of {p['label']}?", UNANSWERABLE, UNANSWERABLE),
    ]
    if [t["y"] for t in pts].count(top["y"]) != 1:
        qa.pop(1)  # a tied maximum has no single answer
    return qa


def histogram_counts(values: list[float], bins: list[float]) -> list[int]:
    """Counts per bin as numpy/matplotlib count them: [a, b) and the last bin [a, b]."""
    counts = [0] * (len(bins) - 1)
    for v in values:
        for i in range(len(counts)):
            last = i == len(counts) - 1
            if bins[i] <= v < bins[i + 1] or (last and v == bins[i + 1]):
                counts[i] += 1
                break
    return counts


def _histogram_qa(data: dict, rng: random.Random) -> list[dict]:
    bins, counts, m, unit = data["bins"], histogram_counts(data["values"], data["bins"]), "", ""
    m, unit = data["x_field"].lower(), data["unit"]
    label = [f"{fmt(bins[i])}-{fmt(bins[i + 1])}" for i in range(len(counts))]
    i, j = rng.sample(range(len(counts)), 2)
    qa = [
        _qa(f"How many observations fall in the {label[i]} {unit} bin?", str(counts[i]), "lookup"),
        _qa(
            f"Which {m} bin ({unit}) has the most observations?",
            label[counts.index(max(counts))],
            "extremum",
        ),
        _qa(
            f"What is the difference in count between the {label[i]} and {label[j]} bins?",
            str(abs(counts[i] - counts[j])),
            "difference",
        ),
        _qa("How many observations does the histogram show in total?", str(sum(counts)), "sum"),
        _qa("How many bins does the histogram have?", str(len(counts)), "count"),
        _qa(f"What was the {m} of the first observation recorded?", UNANSWERABLE, UNANSWERABLE),
    ]
    if counts[i] != counts[j]:
        qa.insert(
            2,
            _qa(
                f"Which bin has more observations: {label[i]} or {label[j]}?",
                label[i] if counts[i] > counts[j] else label[j],
                "comparison",
            ),
        )
    if counts.count(max(counts)) != 1:
        qa.pop(1)
    return qa


def _named(field: str, label: str) -> str:
    """ "Line 2" rather than "Line Line 2"; "Day Mon" otherwise."""
    return label if label.lower().startswith(field.lower()) else f"{field} {label}"


def _heatmap_qa(data: dict, rng: random.Random) -> list[dict]:
    rows, cols, mat = data["rows"], data["columns"], data["matrix"]
    rf, cf, vf = data["row_field"], data["column_field"], data["value_field"].lower()
    i, j = rng.randrange(len(rows)), rng.randrange(len(cols))
    i2, j2 = rng.randrange(len(rows)), rng.randrange(len(cols))
    while (i2, j2) == (i, j):
        i2, j2 = rng.randrange(len(rows)), rng.randrange(len(cols))
    flat = [(v, r, c) for r, row in enumerate(mat) for c, v in enumerate(row)]
    _, br, bc = max(flat)
    r = rng.randrange(len(rows))
    a, b = mat[i][j], mat[i2][j2]
    at = f"{_named(rf, rows[i])}, {_named(cf, cols[j])}"
    at2 = f"{_named(rf, rows[i2])}, {_named(cf, cols[j2])}"
    qa = [
        _qa(f"What is the number of {vf} at {at}?", str(a), "lookup"),
        _qa(
            f"Which cell has the most {vf}? Answer as {rf}, {cf}.",
            f"{rows[br]}, {cols[bc]}",
            "extremum",
        ),
        _qa(
            f"Which is larger: {at} or {at2}?",
            f"{rows[i]}, {cols[j]}" if a > b else f"{rows[i2]}, {cols[j2]}",
            "comparison",
        ),
        _qa(
            f"What is the difference in {vf} between {at} and {at2}?", str(abs(a - b)), "difference"
        ),
        _qa(
            f"What is the total number of {vf} for {_named(rf, rows[r])}?", str(sum(mat[r])), "sum"
        ),
        _qa(f"How many {rf.lower()}s does the heatmap show?", str(len(rows)), "count"),
        _qa(f"What is the number of {vf} at {rf} Holiday?", UNANSWERABLE, UNANSWERABLE),
    ]
    return qa


def _box_qa(data: dict, rng: random.Random) -> list[dict]:
    groups, gf, m, unit = data["groups"], data["x_field"], data["y_field"].lower(), data["unit"]
    med = {g["name"]: statistics.median(g["values"]) for g in groups}
    a, b = rng.sample(list(med), 2)
    op = rng.choice(["max", "min"])
    best = (max if op == "max" else min)(med, key=med.get)
    pool = next(t[4] for t in BOX_TOPICS if t[0] == data["title"])
    missing = next((g for g in pool if g not in med), "Other")
    qa = [
        _qa(f"What is the median {m} for {a} ({unit})?", fmt(med[a]), "lookup"),
        _qa(
            f"Which {gf.lower()} has the {'highest' if op == 'max' else 'lowest'} median {m}?",
            best,
            "extremum",
        ),
        _qa(
            f"What is the difference between the median {m} of {a} and {b} ({unit})?",
            fmt(abs(med[a] - med[b])),
            "difference",
        ),
        _qa(
            f"What is the average of the {len(med)} medians shown ({unit})?",
            fmt(sum(med.values()) / len(med)),
            "average",
        ),
        _qa(f"How many {gf.lower()}s are compared?", str(len(groups)), "count"),
        _qa(f"What is the median {m} for {missing} ({unit})?", UNANSWERABLE, UNANSWERABLE),
    ]
    if med[a] != med[b]:
        qa.insert(
            2,
            _qa(
                f"Which has the higher median {m}: {a} or {b}?",
                a if med[a] > med[b] else b,
                "comparison",
            ),
        )
    if list(med.values()).count(med[best]) != 1:
        qa.pop(1)
    return qa


def make_qa(chart_type: str, data: dict, rng: random.Random) -> list[dict]:
    """QA computed from the data (every item verified=True), one unanswerable question included."""
    if chart_type in TEACHER_TYPES:
        return _categorical_qa(chart_type, data, rng)
    makers = {
        "scatter": _scatter_qa,
        "histogram": _histogram_qa,
        "heatmap": _heatmap_qa,
        "box": _box_qa,
    }
    return makers[chart_type](data, rng)


# --------------------------------------------------------------------------- teacher


class TeacherSeries(BaseModel):
    name: str
    values: list[
        Annotated[float, Field(allow_inf_nan=False, ge=-MAX_TEACHER_VALUE, le=MAX_TEACHER_VALUE)]
    ]


class TeacherData(BaseModel):
    topic: str
    title: str
    x_field: str
    y_field: str
    unit: str
    categories: list[str] = Field(min_length=2)
    series: list[TeacherSeries] = Field(min_length=1)


class TeacherCode(BaseModel):
    code: str


class TeacherQAItem(BaseModel):
    question: str
    answer: str
    kind: str
    series: str | None = None
    categories: list[str] = []
    op: str = ""


class TeacherQA(BaseModel):
    qa: list[TeacherQAItem]


def _teacher_data(teacher, chart_type: str, rng: random.Random) -> tuple[str, dict]:
    subject = rng.choice(CATEGORICAL_TOPICS)[0]
    prompt = (
        f"Invent a realistic small data set for a {chart_type.replace('_', ' ')} chart on a topic "
        f"related to '{subject}' (seed {rng.randrange(10**6)}). Give 3-8 categories and "
        f"{'one series' if chart_type in ('bar', 'pie') else '1-3 series'}; each series has one "
        "numeric value per category. Fields: topic, title, x_field, y_field, unit, categories, "
        "series (name, values)."
    )
    d = teacher.chat_json([{"role": "user", "content": prompt}], TeacherData, temperature=0)
    data = d.model_dump()
    for s in data["series"]:
        if len(s["values"]) != len(data["categories"]):
            raise ValueError(
                f"teacher data: series {s['name']!r} has {len(s['values'])} values for "
                f"{len(data['categories'])} categories"
            )
        s["values"] = [int(v) if float(v).is_integer() else v for v in s["values"]]
    return data.pop("topic"), data


def _teacher_code(teacher, chart_type: str, data: dict) -> str:
    prompt = (
        f"Write a Python program that draws a {chart_type.replace('_', ' ')} chart with "
        "matplotlib (Agg backend). It must read the data from 'data.json' in the working "
        "directory, label every value on the chart, and save the figure as 'chart.png'. Use only "
        "json and matplotlib. The data.json content is:\n" + json.dumps(data)
    )
    return teacher.chat_json([{"role": "user", "content": prompt}], TeacherCode, temperature=0).code


def _teacher_qa(teacher, data: dict) -> list[TeacherQAItem]:
    prompt = (
        "Write question-answer pairs about a chart of this data, one for each kind: "
        f"{', '.join(QA_KINDS)} (the unanswerable one asks about a category not in the data and "
        "answers 'unanswerable'). For each, give the series name, the categories the question "
        "refers to, and op (max or min) for extremum. Data:\n" + json.dumps(data)
    )
    return teacher.chat_json([{"role": "user", "content": prompt}], TeacherQA, temperature=0).qa


# Kinds whose answer is a value of a series: the question names the measure it is about.
_MEASURED = ("lookup", "difference", "sum", "average", "trend")


def _unnamed(data: dict, it: TeacherQAItem) -> list[str]:
    """The references of a recomputed item that its question does not name (see the module
    docstring): categories, the series of a chart with several, the measure."""
    from synth.textmatch import names

    q = it.question
    missing = [c for c in it.categories if c.strip() and not names(q, c)]
    if it.kind in ("count", UNANSWERABLE):
        return missing
    s = _series(data, it.series)
    if len(data["series"]) > 1:  # the series is the measure, and must be named
        return missing + ([] if names(q, s["name"]) else [s["name"]])
    measure = [x for x in (s["name"], data.get("y_field")) if x]
    if it.kind == "extremum":  # its answer is a category: the x field says what is compared
        measure += [x for x in (data.get("x_field"),) if x]
    elif it.kind not in _MEASURED:
        return missing
    if not any(names(q, label) for label in measure):
        missing.append(" / ".join(measure))
    return missing


def _check_teacher_qa(
    data: dict, items: list[TeacherQAItem], chart_id: str, dropped: list[dict]
) -> list[dict]:
    kept = []
    for it in items:
        try:
            expected = recompute(data, it.kind, it.series, it.categories, it.op)
        except (ArithmeticError, TypeError) as exc:  # e.g. inf: dropped, not the end of the run
            dropped.append(
                {
                    "id": chart_id,
                    "question": it.question,
                    "answer": it.answer,
                    "reject": "not computable",
                    "reason": f"not computable: {type(exc).__name__}: {str(exc)[:200]}",
                }
            )
            continue
        except Unrecomputable as exc:
            if it.kind in QA_KINDS and it.kind != UNANSWERABLE:
                reason = f"does not fit the data: {exc}"
            elif it.kind == UNANSWERABLE:
                reason = f"unanswerable question is answerable: {exc}"
            else:
                kept.append(_qa(it.question, it.answer, it.kind, verified=False))
                continue
            dropped.append(
                {
                    "id": chart_id,
                    "question": it.question,
                    "answer": it.answer,
                    "reject": reason.split(":")[0],
                    "reason": reason,
                }
            )
            continue
        if not answers_agree(it.answer, expected):
            dropped.append(
                {
                    "id": chart_id,
                    "question": it.question,
                    "answer": it.answer,
                    "reject": "wrong answer",
                    "reason": f"teacher answer {it.answer!r} != recomputed {expected!r}",
                }
            )
            continue
        if it.kind == "count":  # names nothing to check: the template question
            x = data.get("x_field")
            what = f"{x.lower()}s" if x else "categories"
            question = f"How many {what} are shown in the chart?"
            kept.append(_qa(question, expected, it.kind))
            continue
        missing = _unnamed(data, it)
        if missing:
            dropped.append(
                {
                    "id": chart_id,
                    "question": it.question,
                    "answer": it.answer,
                    "reject": "question does not name its references",
                    "reason": "question does not name its references: "
                    + ", ".join(repr(m) for m in missing),
                }
            )
            continue
        kept.append(_qa(it.question, expected, it.kind))
    return kept


# --------------------------------------------------------------------------- driver


def _printable(text: str) -> str:
    """`text` without control characters (Unicode Cc, tab kept): sandbox stderr goes into the
    status column and onto the terminal, where ESC, OSC and \r sequences would act."""
    return "".join(c for c in text if c == "\t" or unicodedata.category(c) != "Cc")


def _render_status(r) -> str:
    if not r.ok:
        why = _printable(r.error or "failed")
        last = (getattr(r, "stderr", "") or "").strip().splitlines()
        if why.startswith("exit code") and last:
            why += f": {_printable(last[-1])[:200]}"
        return why
    if "chart.png" not in r.outputs:
        return "no chart.png written"
    if not r.outputs["chart.png"].startswith(b"\x89PNG"):
        return "chart.png is not a PNG"
    return "ok"


def chart_text(data: Any) -> str:
    """Every string of a chart's data (title, field names, unit, categories, series names,
    labels), one a line: the text the chart draws."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        data = list(data.values())
    if isinstance(data, list):
        return "\n".join(t for t in (chart_text(v) for v in data) if t)
    return ""


def undrawn_glyphs(data: dict, stderr: str) -> list[str]:
    """The characters of a chart's text that no installed font draws (synth.tables'
    `missing_glyphs`), and those matplotlib warned it drew as boxes."""
    from synth.tables import missing_glyphs

    warned = {chr(int(n)) for n in GLYPH_WARNING.findall(stderr or "") if int(n) < 0x110000}
    warned = {c for c in warned if not c.isspace() and unicodedata.category(c) not in ("Cc", "Cf")}
    return sorted(set(missing_glyphs(chart_text(data))) | warned)


def _decoded_png(data: bytes) -> tuple[bytes | None, str]:
    """(the PNG re-encoded, "ok") or (None, why): the sandbox's output decoded on the host with a
    pixel cap read from the header before any pixel is, then written anew from its pixels alone:
    a new image (RGB, RGBA, L or LA; anything else, or a colour-key transparency, becomes RGBA)
    with no info, so no ICC profile, text, EXIF, gamma or dpi chunk the code chose survives."""
    try:
        with Image.open(io.BytesIO(data), formats=["PNG"]) as im:
            width, height = im.size
            if width * height > MAX_CHART_PIXELS:
                return None, (
                    f"chart.png is {width}x{height} = {width * height} pixels, over "
                    f"MAX_CHART_PIXELS={MAX_CHART_PIXELS}"
                )
            im.load()
            keep = im.mode in ("RGB", "RGBA", "L", "LA") and "transparency" not in im.info
            pixels = im if keep else im.convert("RGBA")
            clean = Image.new(pixels.mode, pixels.size)
            clean.paste(pixels)
            del pixels
            buf = io.BytesIO()
            clean.save(buf, format="PNG")
    except Exception as exc:  # noqa: BLE001 - Pillow raises many kinds on a bad file
        return None, f"chart.png does not decode: {type(exc).__name__}: {str(exc)[:200]}"
    return buf.getvalue(), "ok"


def _one_chart(
    i: int,
    chart_type: str,
    seed: int,
    out: Path,
    teacher,
    teacher_name: str,
    run: Callable,
) -> tuple[dict, list[dict]]:
    """One chart: topic -> data -> code -> sandboxed render -> PNG -> QA; (row, dropped QA)."""
    rng = random.Random(f"charts:{seed}:{i}:{chart_type}")
    chart_id = f"chart-{seed}-{i:05d}"
    row = {"id": chart_id, "chart_type": chart_type, "topic": "", "data": "", "code": ""}
    row.update(image_path=None, qa=[], status="ok", teacher=teacher_name)
    dropped: list[dict] = []
    try:
        if teacher is None:
            topic, data = make_data(chart_type, rng)
            code = template_code(chart_type, rng)
        else:
            topic, data = _teacher_data(teacher, chart_type, rng)
            code = _teacher_code(teacher, chart_type, data)
    except Exception as exc:  # teacher errors and bad teacher data: the row keeps the reason
        row["status"] = f"teacher: {type(exc).__name__}: {str(exc)[:300]}"
        return row, dropped
    try:
        _render_and_ask(row, data, code, topic, chart_type, rng, out, teacher, run, dropped)
    except Exception as exc:  # noqa: BLE001 - one chart's failure is that chart's status
        row.update(image_path=None, qa=[])
        row["status"] = _printable(f"error: {type(exc).__name__}: {str(exc)[:300]}")
    return row, dropped


def _render_and_ask(
    row: dict,
    data: dict,
    code: str,
    topic: str,
    chart_type: str,
    rng: random.Random,
    out: Path,
    teacher,
    run: Callable,
    dropped: list[dict],
) -> None:
    """_one_chart after the data and code: sandboxed render -> decoded PNG -> QA, into `row`."""
    chart_id = row["id"]
    data_json = json.dumps(data, sort_keys=True)
    row.update(topic=topic, data=data_json, code=code)
    r = run(code, {"data.json": data_json.encode()}, timeout_s=RENDER_TIMEOUT_S)
    row["status"] = _render_status(r)
    if row["status"] != "ok":
        return
    png, row["status"] = _decoded_png(r.outputs["chart.png"])
    if png is None:
        return
    rel = f"{IMAGES}/{chart_id}.png"
    (out / rel).write_bytes(png)
    row["image_path"] = rel
    missing = undrawn_glyphs(data, getattr(r, "stderr", ""))
    if missing:  # the image is kept to be looked at; its labels cannot be read off it
        row["status"] = (
            f"missing_glyphs: no installed font draws {len(missing)} character(s) "
            f"({''.join(missing[:10])!r}); the image shows boxes for them: install fonts for "
            "the script (e.g. Debian's fonts-noto-core, fonts-noto-cjk) and rerun"
        )
        return
    if teacher is None:
        row["qa"] = make_qa(chart_type, data, rng)
    else:
        try:
            items = _teacher_qa(teacher, data)
        except Exception as exc:
            row["status"] = f"teacher: {type(exc).__name__}: {str(exc)[:300]}"
            return
        row["qa"] = _check_teacher_qa(data, items, chart_id, dropped)


def make_charts(
    out_dir: str | Path,
    *,
    n: int,
    seed: int,
    types: Iterable[str] | None = None,
    teacher=None,
    run: Callable = run_python,
    workers: int | None = None,
) -> dict:
    """Generate `n` charts into `out_dir` (charts.parquet + images/); return the summary.

    Chart types go round-robin over `types` (default: all of CHART_TYPES; with a teacher, all of
    TEACHER_TYPES). Summary: charts, rendered, status (counts per status), rejects (charts not ok,
    counted by reason: the status before its first colon), qa, verified_qa_share,
    dropped_qa (teacher answers dropped, each with its reason), dropped_qa_reasons, seconds,
    charts_per_s, teacher. `workers` charts are made at once (default: min(4, CPUs)); each
    chart has its own seeded generator, so the rows do not depend on it.
    """
    if workers is None:
        workers = min(4, os.cpu_count() or 1)
    if n < 0:
        raise ValueError(f"make_charts n={n} must be >= 0")
    allowed = TEACHER_TYPES if teacher is not None else CHART_TYPES
    types = list(types) if types is not None else list(allowed)
    if not types:
        raise ValueError(f"make_charts types is empty; choose from {', '.join(allowed)}")
    bad = [t for t in types if t not in allowed]
    if bad:
        how = "with a teacher (categorical data)" if teacher is not None else ""
        raise ValueError(
            f"chart types {bad} are not supported {how}; choose from {', '.join(allowed)}"
        )
    out = Path(out_dir)
    target = out / FILE_NAME
    if target.exists():
        raise FileExistsError(f"{target} already exists; choose a new --out directory")
    (out / IMAGES).mkdir(parents=True, exist_ok=True)
    teacher_name = PROGRAMMATIC if teacher is None else str(teacher.model)

    def one(i: int) -> tuple[dict, list[dict]]:
        return _one_chart(i, types[i % len(types)], seed, out, teacher, teacher_name, run)

    t0 = time.monotonic()
    if workers <= 1:
        results = [one(i) for i in range(n)]
    else:
        with ThreadPoolExecutor(workers) as pool:  # sandbox runs are processes; map keeps order
            results = list(pool.map(one, range(n)))
    rows = [row for row, _ in results]
    dropped = [d for _, ds in results for d in ds]
    seconds = time.monotonic() - t0

    tmp = target.with_suffix(".parquet.tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp)
    tmp.replace(target)
    qa = [q for r in rows for q in r["qa"]]
    verified = sum(q["verified"] for q in qa)
    return {
        "charts": len(rows),
        "rendered": sum(r["image_path"] is not None for r in rows),
        "status": dict(Counter(r["status"] for r in rows)),
        "rejects": dict(Counter(r["status"].split(":")[0] for r in rows if r["status"] != "ok")),
        "qa": len(qa),
        "verified_qa": verified,
        "verified_qa_share": verified / len(qa) if qa else None,
        "dropped_qa": dropped,
        "dropped_qa_reasons": dict(Counter(d["reject"] for d in dropped)),
        "seconds": round(seconds, 3),
        "charts_per_s": round(len(rows) / seconds, 3) if seconds > 0 else None,
        "teacher": teacher_name,
        "types": types,
        "workers": workers,
    }
