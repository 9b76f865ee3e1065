"""`refinery inspect`, the per-step statistics (stats.json) and the funnel's colours."""

import json
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from filters import inspect, report
from filters.stats import step_stats

HOSTILE_TEXT = (
    "Breaking news <script>alert('x')</script> and </pre><img src=x onerror=alert(1)> "
    "[bold red]not markup[/] \x1b[31mred\x1b[0m \u202eevil"
)
NO_MODELS = "quality:\n  use_default_models: false\n"


def _docs(labelled_docs) -> list[dict]:
    rows = [
        {
            "id": d["id"],
            "url": d["url"],
            "title": d["id"].rsplit("/", 1)[-1],
            "text": d["text"],
            "training_allowed": d["training_allowed"],
        }
        for d in labelled_docs[::5]
    ]
    rows.append(
        {
            "id": '"><script>alert(1)</script>',
            "url": "http://127.0.0.1/<script>",
            "title": "</title><script>alert(2)</script>",
            "text": (HOSTILE_TEXT + "\n") * 12,
            "training_allowed": True,
        }
    )
    return rows


@pytest.fixture(scope="module")
def filtered(tmp_path_factory, labelled_docs):
    """A small filter run through the stage (in process, no quality models)."""
    from pipelines.stage import Lake
    from pipelines.stages.filter import FilterParams, filter_stage

    root = tmp_path_factory.mktemp("inspect")
    (root / "docs").mkdir()
    pq.write_table(pa.Table.from_pylist(_docs(labelled_docs)), root / "docs/documents.parquet")
    (root / "filter.yaml").write_text(NO_MODELS)
    params = FilterParams(
        docs=root / "docs", out=root / "out", runner="InProcess", config=root / "filter.yaml"
    )
    summary = filter_stage(params, Lake(root=root / "lake"))
    return root, summary


# --- funnel colours ---

MORE_REASONS = [f"reason_{i:02d}" for i in range(8)]


def test_twenty_five_reasons_get_twenty_five_distinct_colours_in_the_plot(tmp_path, monkeypatch):
    outcomes = list(report.FIXED_COLOURS) + MORE_REASONS
    assert len(outcomes) == 25
    rows = [{"lang": "en", "outcome": o, "docs": 1 + i} for i, o in enumerate(outcomes)]
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig))
    report.funnel_plot(rows, tmp_path / "funnel.png")
    (ax,) = figures[0].axes
    handles, labels = ax.get_legend_handles_labels()
    colours = {
        label: h.patches[0].get_facecolor() for h, label in zip(handles, labels, strict=True)
    }
    assert sorted(colours) == sorted(outcomes)
    assert len(set(colours.values())) == 25  # tab10 repeated blue for kept/training_not_allowed
    plt.close(figures[0])


def test_a_reason_keeps_its_colour_whatever_else_the_run_has():
    everything = report.reason_colours(list(report.FIXED_COLOURS) + MORE_REASONS)
    assert len(set(everything.values())) == len(everything)
    few = report.reason_colours(["kept", "too_short", "reason_03"])
    assert few["kept"] == everything["kept"] and few["too_short"] == everything["too_short"]
    assert few["reason_03"] == report.reason_colours(["reason_03"])["reason_03"]
    assert report.reason_colours(["kept", "training_not_allowed"]) == report.reason_colours(
        ["training_not_allowed", "kept"]
    )


def test_more_reasons_than_the_palette_still_get_distinct_colours():
    many = report.reason_colours([f"r{i}" for i in range(150)])
    assert len(set(many.values())) == 150


# --- per-step statistics ---


def _write(path: Path, rows: list[dict]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_step_stats_follow_each_document_to_the_step_that_dropped_it(tmp_path):
    inp = _write(
        tmp_path / "in.parquet",
        [
            {"id": "a", "text": "one two three  four\ncookie banner"},
            {"id": "b", "text": "tiny"},
            {"id": "c", "text": "日本語の文章です。"},
            {"id": "d", "text": "blocked page text"},
            {"id": "e", "text": "one two three four"},
            {"id": "f", "text": "brand new step"},
        ],
    )
    ann = _write(
        tmp_path / "ann.parquet",
        [
            {"id": "a", "lang": "en", "drop_reason": None, "text": "one two three  four"},
            {"id": "b", "lang": "en", "drop_reason": "too_short", "text": "tiny"},
            {"id": "c", "lang": "ja", "drop_reason": None, "text": "日本語の文章です。"},
            {"id": "d", "lang": "en", "drop_reason": "url_blocked:adult", "text": "blocked"},
            {
                "id": "e",
                "lang": "en",
                "drop_reason": "exact_duplicate",
                "text": "one two three four",
            },
            {"id": "f", "lang": None, "drop_reason": "new_reason", "text": "brand new step"},
        ],
    )
    stats = step_stats(inp, ann)
    assert "whitespace words" in stats["tokenizer"]
    steps = stats["steps"]
    assert steps[0] == "clean" and steps[-1] == "dedup"
    assert steps.index("url") < steps.index("heuristics") < steps.index("new_reason")
    rows = {(r["lang"], r["step"]): r for r in stats["rows"]}
    clean = rows[("all", "clean")]
    assert (clean["docs_in"], clean["docs_out"]) == (6, 6)
    assert clean["chars_in"] == sum(len(r["text"]) for r in pq.read_table(inp).to_pylist())
    assert clean["chars_out"] == clean["chars_in"] - len("\ncookie banner") - len(" page text")
    # ja counts letters: 8 of the 9 characters (the full stop is not one)
    assert rows[("ja", "clean")]["tokens_in"] == 8
    assert rows[("all", "clean")]["tokens_in"] == 6 + 1 + 8 + 3 + 4 + 3
    url = rows[("all", "url")]
    assert (url["docs_in"], url["docs_out"], url["reasons"]) == (6, 5, ["url_blocked:adult"])
    assert url["chars_in"] - url["chars_out"] == len("blocked")
    heur = rows[("all", "heuristics")]
    assert (heur["docs_in"], heur["docs_out"], heur["tokens_in"] - heur["tokens_out"]) == (5, 4, 1)
    assert rows[("und", "new_reason")]["docs_out"] == 0
    dedup = rows[("all", "dedup")]
    assert (dedup["docs_in"], dedup["docs_out"]) == (3, 2)
    assert dedup["tokens_out"] == 4 + 8
    en = [r for r in stats["rows"] if r["lang"] == "en"]
    assert [r["docs_out"] for r in en][-1] == 1
    for r in stats["rows"]:  # each step's output is the next one's input
        nxt = (
            rows.get((r["lang"], steps[steps.index(r["step"]) + 1]))
            if r["step"] != "dedup"
            else None
        )
        if nxt:
            assert [nxt[f"{k}_in"] for k in ("docs", "chars", "tokens")] == [
                r[f"{k}_out"] for k in ("docs", "chars", "tokens")
            ]


def test_step_stats_refuse_rows_out_of_order(tmp_path):
    inp = _write(tmp_path / "in.parquet", [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}])
    ann = _write(
        tmp_path / "ann.parquet",
        [
            {"id": "b", "lang": "en", "drop_reason": None, "text": "y"},
            {"id": "a", "lang": "en", "drop_reason": None, "text": "x"},
        ],
    )
    with pytest.raises(RuntimeError, match="not in the input's order"):
        step_stats(inp, ann)


def test_the_filter_writes_stats_json_and_shows_it_in_the_funnel(filtered):
    root, summary = filtered
    out = root / "out"
    stats = json.loads((out / "stats.json").read_text())
    last = [r for r in stats["rows"] if r["lang"] == "all"][-1]
    assert last["docs_out"] == summary.rows_kept
    kept = pq.read_table(out / "documents.parquet")
    assert last["chars_out"] == sum(len(t) for t in kept["text"].to_pylist())
    first = [r for r in stats["rows"] if r["lang"] == "all"][0]
    assert first["docs_in"] == summary.rows_in
    assert "| dedup |" in (out / "funnel.md").read_text() and "| dedup |" in summary.funnel
    assert summary.metadata()["stats"] == str(out / "stats.json")


# --- samples ---


def test_samples_are_the_same_for_a_seed_and_differ_across_seeds(filtered):
    out = filtered[0] / "out"
    a = inspect.sample(out, n=3, seed=7)
    assert a == inspect.sample(out, n=3, seed=7)
    counts = inspect.outcome_counts(out)
    assert set(a) == set(counts)
    assert all(len(rows) == min(3, counts[o]) for o, rows in a.items())
    big = max(counts, key=counts.get)
    ids = {s: [r["id"] for r in inspect.sample(out, n=3, seed=s)[big]] for s in range(4)}
    assert len({tuple(v) for v in ids.values()}) > 1
    order = pq.read_table(out / "annotated.parquet", columns=["id"])["id"].to_pylist()
    assert ids[0] == sorted(ids[0], key=order.index)  # shown in input order


def test_reason_and_language_narrow_the_sample(filtered):
    out = filtered[0] / "out"
    only = inspect.sample(out, reason="kept", lang="en", n=50)
    assert list(only) == ["kept"]
    assert only["kept"] and all(
        r["lang"] == "en" and r["drop_reason"] is None for r in only["kept"]
    )
    with pytest.raises(ValueError, match="--reason 'no_such'.*kept"):
        inspect.sample(out, reason="no_such")


def test_the_terminal_shows_document_text_as_text_not_markup_or_escapes(filtered):
    out = filtered[0] / "out"
    hostile = pq.read_table(out / "annotated.parquet").to_pylist()[-1]
    counts = {"x": 1}
    shown = inspect.render_terminal({"x": [hostile]}, counts, width=400, excerpt=400)
    assert "[bold red]not markup[/]" in shown
    assert "\x1b" not in shown and "\\u001b[31mred" in shown and "\\u202eevil" in shown


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, list]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def test_the_html_page_escapes_a_hostile_document(filtered, tmp_path):
    out = filtered[0] / "out"
    page = inspect.write_html(out, tmp_path / "p.html", n=50, seed=1).read_text()
    parser = _Tags()
    parser.feed(page)
    tags = [t for t, _ in parser.tags]
    assert "script" not in tags and "iframe" not in tags and tags.count("img") == 1
    assert not [a for _, attrs in parser.tags for a, _ in attrs if a.startswith("on")]
    (img,) = [dict(attrs) for t, attrs in parser.tags if t == "img"]
    assert img["src"].startswith("data:image/png;base64,")
    csp = [dict(a) for t, a in parser.tags if t == "meta" and dict(a).get("http-equiv")]
    assert "default-src 'none'" in csp[0]["content"]
    text = "".join(parser.text)
    assert "<script>alert('x')</script>" in text and '"><script>alert(1)</script>' in text
    assert "Per-step statistics" in page and "| dedup |" not in page


def test_the_filter_asset_links_its_inspection_page(filtered):
    from pipelines.graph import typed_metadata

    root, summary = filtered
    meta = typed_metadata(summary.metadata(), summary.markdown_fields)
    kind, path = meta["inspect_html"]
    assert kind == "path" and Path(path) == root / "out" / "inspect.html"
    page = Path(path).read_text()
    assert "data:image/png;base64," in page and "<h2" in page


def test_refinery_inspect_prints_samples_and_writes_the_page(filtered, tmp_path):
    from pipelines.cli import app

    out = filtered[0] / "out"
    args = ["inspect", str(out), "--reason", "kept", "--n", "2", "--seed", "3"]
    res = CliRunner().invoke(app, [*args, "--html", str(tmp_path / "k.html")])
    assert res.exit_code == 0, res.output
    assert "kept:" in res.output and "2 shown" in res.output
    assert (tmp_path / "k.html").read_text().count("<pre>") == 2
    again = CliRunner().invoke(app, args)
    assert again.output.split("page:")[0] == res.output.split("page:")[0]
    bad = CliRunner().invoke(app, ["inspect", str(out), "--reason", "nope"])
    assert bad.exit_code == 2 and "--reason 'nope'" in bad.output


def test_the_funnel_plot_shows_what_each_step_leaves(filtered, tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    out = filtered[0] / "out"
    stats = json.loads((out / "stats.json").read_text())
    rows = [{"lang": "en", "outcome": "kept", "docs": 3}, {"lang": "en", "outcome": "x", "docs": 1}]
    figures = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig))
    report.funnel_plot(rows, tmp_path / "funnel.png", stats)
    _, steps_ax = figures[0].axes
    lines = {line.get_label(): line.get_ydata() for line in steps_ax.get_lines()}
    assert sorted(lines) == ["chars", "docs", "tokens"]
    last = [r for r in stats["rows"] if r["lang"] == "all"][-1]
    assert lines["docs"][0] == 100 and lines["docs"][-1] == pytest.approx(
        100 * last["docs_out"] / stats["rows"][0]["docs_in"]
    )
    plt.close(figures[0])


def test_step_stats_count_other_scripts_and_huge_documents(tmp_path):
    huge = "word " * 1_000_000  # 5 MB, one document
    thai = "ภาษาไทยไม่มีการเว้นวรรค ระหว่างคำ"
    arabic = "النص العربي يفصل الكلمات بمسافات"
    inp = _write(
        tmp_path / "in.parquet",
        [{"id": "h", "text": huge}, {"id": "t", "text": thai}, {"id": "a", "text": arabic}],
    )
    ann = _write(
        tmp_path / "ann.parquet",
        [
            {"id": "h", "lang": "en", "drop_reason": "too_long", "text": huge},
            {"id": "t", "lang": "th", "drop_reason": None, "text": thai},
            {"id": "a", "lang": "ar", "drop_reason": None, "text": arabic},
        ],
    )
    rows = {(r["lang"], r["step"]): r for r in step_stats(inp, ann)["rows"]}
    assert rows[("en", "heuristics")]["tokens_in"] == 1_000_000
    assert rows[("en", "heuristics")]["chars_in"] == len(huge)
    # Thai counts letters (its vowel and tone marks are not letters), Arabic counts words
    assert rows[("th", "clean")]["tokens_in"] == sum(c.isalpha() for c in thai)
    assert rows[("ar", "clean")]["tokens_in"] == 5
    assert rows[("all", "dedup")]["docs_out"] == 2


def test_the_safety_scores_are_shown_and_a_zero_is_not_hidden(tmp_path):
    rows = [
        {
            "id": "rude",
            "url": "http://127.0.0.1/rude",
            "text": "a rude page",
            "lang": "en",
            "lang_score": 0.0,
            "drop_reason": "nsfw",
            "pii_found": 0,
            "toxicity_score": 0.0,
            "nsfw_score": 0.93,
            "safety_model": "toxicity:en,nsfw:en",
            "duplicate_of": None,
        }
    ]
    _write(tmp_path / "annotated.parquet", rows)
    (tmp_path / "funnel.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # no plot needed here
    samples = inspect.sample(tmp_path, n=1)
    shown = inspect.render_terminal(samples, inspect.outcome_counts(tmp_path), width=200)
    for field in ("toxicity_score=0.000", "nsfw_score=0.930", "safety_model=toxicity:en,nsfw:en"):
        assert field in shown, shown
    assert "lang_score=0.000" in shown and "pii_found=0" in shown
    assert "duplicate_of" not in shown  # only a missing value is left out
    page = inspect.write_html(tmp_path, tmp_path / "p.html", n=1).read_text()
    assert "<dt>toxicity_score</dt><dd>0.000</dd>" in page
    assert "<dt>nsfw_score</dt><dd>0.930</dd>" in page and "<dt>safety_model</dt>" in page
