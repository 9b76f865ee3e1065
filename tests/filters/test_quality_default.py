"""Default quality models: built once, found without flags, multilingual fallback, NULL not NaN,
and the rescue of relaxed-heuristic drops by confident scores."""

import json
import math
import threading
import time

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from filters.annotate import DocumentAnnotator
from filters.config import ConfigError, config_from_dict
from filters.quality import default as qdefault
from tests.filters.heldout_quality import FALLBACK_GOOD, GOOD

FALLBACK_LANGS = ("it", "ko", "pt", "ru")


def _docs(tmp_path, rows):
    d = tmp_path / "docs"
    d.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), d / "documents.parquet")
    return d


def _row(i, text, allowed=True):
    return {
        "id": f"d{i:03d}",
        "url": f"http://h{i % 5}.test/{i}",
        "text": text,
        "training_allowed": allowed,
    }


def test_default_set_layout_and_metadata(models_dir, languages):
    info = json.loads((models_dir / qdefault.COMPLETE).read_text())
    assert info["languages"] == languages and info["recipe"] == "reference+shuffled"
    assert info["recipes"] == {lang: qdefault.recipe_for(lang) for lang in languages}
    assert models_dir.name == info["key"] == info["training_sha256"][:12]
    for name in [*languages, qdefault.FALLBACK_NAME]:
        meta = json.loads((models_dir / f"{name}.json").read_text())
        # `metrics` evaluates the deployed scorer (the fold ensemble) on a held-out split that
        # none of its models saw.
        assert meta["metrics"]["scorer"] == f"ensemble:{meta['oof']['folds']}"
        assert meta["metrics"]["n_test"] > 0 and meta["shape_features"] is True
        if name != qdefault.FALLBACK_NAME:
            assert meta["label_source"] == info["recipes"][name]
    assert not list(models_dir.parent.glob(".build-*"))  # no half-built set left behind


def test_second_call_reuses_the_set_and_changed_data_gets_a_new_key(models_dir, labelled_docs):
    before = (models_dir / qdefault.COMPLETE).stat().st_mtime_ns
    assert qdefault.ensure_default_models(models_dir.parent, rows=labelled_docs) == models_dir
    assert (models_dir / qdefault.COMPLETE).stat().st_mtime_ns == before
    changed = [dict(r) for r in labelled_docs]
    ref = next(r for r in changed if r["is_reference"])
    ref["text"] += "\nOne more sentence in a reference page changes the training data."
    assert qdefault.training_key(changed)[:12] != models_dir.name


def test_the_default_english_model_learns_from_grades(models_dir, labelled_docs):
    """English's default label source is the sample web's grades (`high` against `low`): the
    reference recipe took good crawl pages as negatives, and on real pages (readability's
    hand-extracted main content against the rest of the page, bench/ablate_quality.py) it
    separated them worse. The other languages keep `reference+shuffled`."""
    assert qdefault.recipe_for("en") == "graded+shuffled"
    assert qdefault.recipe_for("de") == "graded+layout"
    assert qdefault.recipe_for("xx") == "reference+shuffled"
    meta = json.loads((models_dir / "en.json").read_text())
    assert meta["label_source"] == "graded+shuffled"
    # The set's English model scores every good crawl page (graded high, not a reference page)
    # above every low page: the labels it trained on (in sample; the old recipe, which trained
    # on them as negatives, scored one low page 0.417 and three good ones 0.37).
    scorer = qdefault.QualityScorer(models_dir)
    en = [d for d in labelled_docs if d["lang"] == "en"]
    good = [d["text"] for d in en if d["quality"] == "high" and not d["is_reference"]]
    low = [d["text"] for d in en if d["quality"] == "low"]
    assert min(scorer.score(good, "en")[0]) > max(scorer.score(low, "en")[0])


def test_the_filter_config_names_the_default_label_sources(
    tmp_path, monkeypatch, labelled_docs, caplog
):
    from filters.run import quality_models_for

    table = qdefault.recipes({"de": "graded+shuffled"})
    assert table == {"*": "reference+shuffled", "en": "graded+shuffled", "de": "graded+shuffled"}
    assert qdefault.recipes({"*": "reference"}) == {"*": "reference"}
    assert qdefault.training_key(labelled_docs) != qdefault.training_key(
        labelled_docs, label_sources={"en": "reference+shuffled"}
    )
    # the grade is hashed: regrading a page builds a new set
    regraded = [dict(d) for d in labelled_docs]
    next(d for d in regraded if d["quality"] == "medium")["quality"] = "high"
    assert qdefault.training_key(regraded) != qdefault.training_key(labelled_docs)
    with pytest.raises(ConfigError, match="default_label_sources.en: 'llm' is not a label source"):
        config_from_dict({"quality": {"default_label_sources": {"en": "llm"}}})
    seen = {}

    def fake_ensure(root, rows, **kw):
        seen.update(kw)
        return tmp_path

    monkeypatch.setattr(qdefault, "ensure_default_models", fake_ensure)
    cfg = config_from_dict({"quality": {"default_label_sources": {"en": "reference+shuffled"}}})
    quality_models_for(None, cfg, tmp_path, lambda: labelled_docs)
    assert seen["label_sources"] == {"en": "reference+shuffled"}
    assert "default_label_sources" not in caplog.text
    # given models (the Dagster graph passes the quality_models asset's) keep their own sources
    quality_models_for(tmp_path, cfg, tmp_path, lambda: labelled_docs)
    assert f"the models of {tmp_path} keep the label sources" in caplog.text


def test_the_quality_models_stage_trains_with_the_configs_label_sources(tmp_path, monkeypatch):
    """The Dagster asset / `refinery quality defaults --config F` builds the set with F's table,
    so a filter given the asset's set keeps what the config asked for."""
    from pipelines.stage import Lake
    from pipelines.stages.quality import QualityModelsParams, quality_models

    seen = []

    def fake_ensure(root, rows, **kw):
        seen.append(kw.get("label_sources"))
        raise RuntimeError("stop here")

    monkeypatch.setattr(qdefault, "ensure_default_models", fake_ensure)
    cfg = tmp_path / "filter.yaml"
    cfg.write_text("quality:\n  default_label_sources: {de: graded+shuffled}\n")
    for params in (QualityModelsParams(config=cfg), QualityModelsParams()):
        with pytest.raises(RuntimeError, match="stop here"):
            quality_models(params, Lake(root=tmp_path / "lake"))
    assert seen == [{"de": "graded+shuffled"}, None]


def test_graded_recipes_need_graded_pages_for_a_model():
    rows = [
        {"id": f"{g}{i}", "lang": "en", "quality": g, "is_reference": False, "text": "x y"}
        for g in ("high", "low")
        for i in range(3)
    ]
    assert qdefault.model_languages(rows) == ["en"]  # no reference page: graded recipe
    assert qdefault.model_languages(rows, {"en": "reference+shuffled"}) == []
    assert qdefault.model_languages(rows[:5]) == []  # two low pages


def test_concurrent_builders_build_once_and_rename_atomically(tmp_path, monkeypatch):
    calls = []

    def fake_build(out, rows, seed=0, log=None, **kw):
        calls.append(out)
        time.sleep(0.3)  # long enough for the other builder to wait on the lock
        (out / "en.bin").write_text("model")
        return {"languages": ["en"]}

    monkeypatch.setattr(qdefault, "build_default_models", fake_build)
    rows = [{"id": "a", "lang": "en", "is_reference": True, "text": "x"}]
    results = []
    threads = [
        threading.Thread(
            target=lambda: results.append(qdefault.ensure_default_models(tmp_path, rows=rows))
        )
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(calls) == 1 and len(set(results)) == 1 and len(results) == 3
    target = results[0]
    assert (target / "en.bin").read_text() == "model" and (target / qdefault.COMPLETE).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([".lock", target.name])


def test_failed_build_leaves_nothing_half_built(tmp_path, monkeypatch):
    def broken(out, rows, seed=0, log=None, **kw):
        (out / "en.bin").write_text("half")
        raise RuntimeError("disk full")

    monkeypatch.setattr(qdefault, "build_default_models", broken)
    rows = [{"id": "a", "lang": "en", "is_reference": True, "text": "x"}]
    with pytest.raises(RuntimeError, match="disk full"):
        qdefault.ensure_default_models(tmp_path, rows=rows)
    assert [p.name for p in tmp_path.iterdir()] == [".lock"]


def test_refinery_filter_without_models_scores_every_row(tmp_path, models_dir):
    # Built already by the session fixture: found through $REFINERY_QUALITY_DEFAULTS, no flag.
    texts = [GOOD[lang][0] for lang in ("en", "de", "ja")]
    texts += [FALLBACK_GOOD[lang][0] for lang in FALLBACK_LANGS]
    rows = [_row(i, t) for i, t in enumerate(texts)]
    rows.append(_row(len(rows), GOOD["fr"][1], allowed=False))
    docs = _docs(tmp_path, rows)
    res = CliRunner().invoke(
        __import__("pipelines.cli", fromlist=["app"]).app,
        ["filter", "--docs", str(docs), "--out", str(tmp_path / "out")],
    )
    assert res.exit_code == 0, res.output
    ann = pq.read_table(tmp_path / "out" / "annotated.parquet").to_pylist()
    sha = json.loads((models_dir / "multilingual.json").read_text())["training_set_sha256"][:12]
    for r in ann:
        assert isinstance(r["quality_score"], float) and 0 <= r["quality_score"] <= 1, r
        if r["lang"] in FALLBACK_LANGS:
            assert r["quality_model"] == f"multilingual-fallback:{sha}", r
            assert r["drop_reason"] == "unsupported_language"
        else:
            own = json.loads((models_dir / f"{r['lang']}.json").read_text())
            assert r["quality_model"] == f"{r['lang']}:{own['training_set_sha256'][:12]}"
    assert {r["lang"] for r in ann} >= set(FALLBACK_LANGS)
    assert "unscored" not in res.output


def test_a_configured_language_without_a_model_is_cut_on_the_fallback(models_dir):
    cfg = config_from_dict({"languages": ["en", "it", "pt"]})
    ann = DocumentAnnotator(cfg, models_dir)
    fb = ann.scorer.fallback
    assert ann.thresholds["it"] == pytest.approx(fb.threshold)
    row = ann.annotate(_row(1, FALLBACK_GOOD["it"][0] + "\n" + FALLBACK_GOOD["it"][1]))
    assert row["lang"] == "it" and row["quality_model"].startswith("multilingual-fallback:")
    assert row["drop_reason"] in (None, "low_quality")
    assert (row["drop_reason"] == "low_quality") == (row["quality_score"] < fb.threshold)


def test_unscored_rows_are_null_and_fail_every_sql_cut(tmp_path):
    from filters.run import run_filter

    rows = [_row(i, GOOD["en"][i] + "\n" + GOOD["en"][i + 1]) for i in range(3)]
    cfg = {"quality": {"use_default_models": False}}
    summary = run_filter(_docs(tmp_path, rows), tmp_path / "out", config=cfg)
    path = tmp_path / "out" / "annotated.parquet"
    t = pq.read_table(path)
    assert t["quality_score"].null_count == t.num_rows
    assert not any(isinstance(x, float) and math.isnan(x) for x in t["quality_score"].to_pylist())
    assert sorted(summary["unscored_languages"]) == sorted(config_from_dict({}).languages)
    con = duckdb.connect()
    n = con.execute(f"SELECT count(*) FROM '{path}' WHERE quality_score >= 0.5").fetchone()[0]
    assert n == 0
    # The contrast that made NULL necessary: DuckDB orders NaN above every number.
    assert con.execute("SELECT 'NaN'::DOUBLE >= 0.5").fetchone()[0] is True


def _annotator(models_dir, **quality):
    return DocumentAnnotator(config_from_dict({"quality": quality}), models_dir)


SHORT = {
    "en": "Comets are loose piles of ice and dust that grow bright tails near the Sun.",
    "de": "Kometen sind lose Haufen aus Eis und Staub, die nahe der Sonne Schweife bilden.",
}


def test_rescue_keeps_a_confident_short_page_and_records_both(models_dir):
    row = _row(1, SHORT["en"])
    plain = _annotator(models_dir, rescue_score=None).annotate(row)
    assert plain["drop_reason"] == "too_short" and plain["heuristic_drop"] == "too_short"
    assert plain["rescued"] is False
    # A rescue score at the page's own score: the model's confidence overrides the rule.
    q = plain["quality_score"]
    kept = _annotator(models_dir, rescue_score=q).annotate(row)
    assert kept["heuristic_drop"] == "too_short" and kept["rescued"] is True
    assert kept["drop_reason"] is None
    above = _annotator(models_dir, rescue_score=min(1.0, q + 1e-6)).annotate(row)
    assert above["drop_reason"] == "too_short" and above["rescued"] is False
    # Per language: a null override turns the rescue off for that language only.
    de_off = _annotator(models_dir, rescue_score=0.0, rescue_by_lang={"de": None})
    assert de_off.annotate(_row(2, SHORT["de"]))["drop_reason"] == "too_short"
    assert de_off.annotate(row)["rescued"] is True


def test_rescue_never_overrides_unrescuable_rules(models_dir):
    ann = _annotator(models_dir, rescue_score=0.0)
    boiler = "\n".join(["We use cookies", "Accept all cookies", "Privacy policy", "Home"] * 3)
    out = ann.annotate(_row(1, boiler + "\n" + SHORT["en"]))
    assert out["drop_reason"] == "boilerplate" and out["rescued"] is False
    # Dropped before the heuristics (opt-out): not rescued, whatever the score.
    opted = ann.annotate(_row(2, SHORT["en"], allowed=False))
    assert opted["drop_reason"] == "training_not_allowed" and opted["rescued"] is False


def test_rescue_config_is_validated():
    with pytest.raises(ConfigError, match="rescue_reasons"):
        config_from_dict({"quality": {"rescue_reasons": ["too_short", "spam"]}})
    with pytest.raises(ConfigError, match="rescue_score"):
        config_from_dict({"quality": {"rescue_score": 1.5}})
    with pytest.raises(ConfigError, match="rescue_by_lang"):
        config_from_dict({"quality": {"rescue_by_lang": {"de": 2}}})


def test_a_fallback_dir_without_the_model_is_an_error(tmp_path, models_dir):
    with pytest.raises(FileNotFoundError, match="multilingual.bin"):
        qdefault.QualityScorer(None, fallback_dir=tmp_path)
    # A models directory that has its own multilingual.bin does not need the fallback dir.
    assert qdefault.QualityScorer(models_dir, fallback_dir=tmp_path).fallback is not None


@pytest.mark.slow  # over 10 s on a quiet 2-core machine
def test_models_built_side_by_side_are_the_files_one_process_builds(
    tmp_path, models_dir, languages, labelled_docs
):
    """The session's set was built by worker processes (one model each, `build_workers()` at a
    time); a model built again here, in this process, is the same bytes, fold models included."""
    assert json.loads((models_dir / qdefault.COMPLETE).read_text())["workers"] >= 1
    lang = languages[-1]
    qdefault._build_one(tmp_path, labelled_docs, lang, languages, 0)
    built = sorted(p.name for p in tmp_path.glob(f"{lang}.*"))
    assert built == sorted(p.name for p in models_dir.glob(f"{lang}.*")) and len(built) > 2
    for name in built:
        assert (tmp_path / name).read_bytes() == (models_dir / name).read_bytes(), name


def test_the_stage_places_the_shared_set_in_each_lake_with_its_own_manifest(tmp_path, models_dir):
    """With a shared cache ($REFINERY_QUALITY_DEFAULTS, as under pytest-xdist), each lake's
    `quality_models` dataset is its own directory: the cache's files hard-linked in, and the
    manifest written there, never into the cache (two lakes once overwrote each other's lineage
    there, and the demo's lineage check failed on the other lake's sample web)."""
    from pathlib import Path

    from common.manifest import read_manifest
    from pipelines.stage import Lake
    from pipelines.stages.quality import QualityModelsParams, quality_models

    targets = []
    for name in ("a", "b"):
        summary = quality_models(QualityModelsParams(), Lake(root=tmp_path / name))
        target = Path(summary.outputs["quality_models"])
        assert target.is_relative_to(tmp_path / name), target
        assert target.name == models_dir.name
        assert read_manifest(target)["inputs"] == []
        targets.append(target)
    assert not (models_dir / "manifest.json").exists()
    for target in targets:
        for f in models_dir.iterdir():
            assert (target / f.name).stat().st_ino == f.stat().st_ino, f.name
    # A finished set already in place is found, not placed again; an unfinished one is refused.
    assert qdefault.place_set(models_dir, targets[0].parent) == targets[0]
    half = tmp_path / "half" / models_dir.name
    half.mkdir(parents=True)
    (half / "en.bin").write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match="not a finished default set"):
        qdefault.place_set(half, tmp_path / "elsewhere")
    assert not (tmp_path / "elsewhere" / models_dir.name).exists()
