"""The sample web's labelled documents, and how callers hand them to filters/ (which reads only
files and rows it is given)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from filters.labels import load_label_rows
from filters.quality.default import ensure_default_models
from sampleweb.labels import labelled_documents, parse_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return labelled_documents(0)


def test_rows_are_the_content_pages_with_their_ground_truth(web, rows):
    content = [p for p in web.pages.values() if p.labels["is_content"] and p.labels["main_text"]]
    assert len(rows) == len(content) > 300
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    by_id = {r["id"]: r for r in rows}
    for page in content:
        row = by_id[f"{page.site}{page.path}"]
        assert row["text"] == page.labels["main_text"] and row["lang"] == page.labels["lang"]
        assert row["training_allowed"] == page.labels["expect_training_allowed"]
    assert {r["lang"] for r in rows} == {"en", "de", "fr", "es", "ja", "zh"}
    assert sum(r["is_reference"] for r in rows) >= 18


def test_rows_are_deterministic_per_seed(rows):
    assert labelled_documents(0) == rows
    assert labelled_documents(1) != rows


def test_spec_names_a_seed_or_nothing():
    assert parse_spec("sampleweb") == 0 and parse_spec("sampleweb:7") == 7
    assert parse_spec("labels.parquet") is None and parse_spec("sampleweb.jsonl") is None
    with pytest.raises(ValueError, match="must be an integer"):
        parse_spec("sampleweb:x")


def test_filters_load_only_files_and_say_who_resolves_the_sample_web(tmp_path):
    with pytest.raises(FileNotFoundError, match="sampleweb.labels.labelled_documents"):
        load_label_rows("sampleweb")
    path = tmp_path / "rows.jsonl"
    path.write_text('{"text": "hello", "lang": "en"}\n')
    assert load_label_rows(path) == [{"text": "hello", "lang": "en"}]


def test_default_models_need_the_rows_from_the_caller(tmp_path):
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'rows'"):
        ensure_default_models(tmp_path)
    with pytest.raises(TypeError, match="list of dicts"):
        ensure_default_models(tmp_path, labelled_documents)
    assert not list(tmp_path.iterdir())


def _imported_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_filters_never_import_the_sample_web():
    offenders = [
        f"{p.relative_to(ROOT)} imports {name}"
        for p in (ROOT / "filters").rglob("*.py")
        for name in _imported_names(p)
        if name.split(".")[0] == "sampleweb" or name.startswith("crawlers.sampleweb")
    ]
    assert not offenders, "filters/ takes labelled rows as arguments:\n" + "\n".join(offenders)
