"""bench/ablate.py's Refinery arm trains on Refinery's default pretraining mixture."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
import yaml

from bench.ablate import refinery_mixture_spec

ROOT = Path(__file__).resolve().parents[2]

ROWS = [
    ("en", 0.05),  # real pages the default quality models score low
    ("zh", 0.02),
    ("de", 0.95),
    ("fr", 0.31),
]


def _selected(spec: dict) -> dict[str, list[str]]:
    """Per bucket, the languages of ROWS its sources' predicates take."""
    values = ", ".join(f"('{lang}', {q})" for lang, q in ROWS)
    out = {}
    for name, bucket in spec["buckets"].items():
        where = " OR ".join(f"({s['where']})" for s in bucket["sources"])
        sql = f"SELECT lang FROM (VALUES {values}) t(lang, quality_score) WHERE {where}"
        out[name] = sorted(r[0] for r in duckdb.sql(sql).fetchall())
    return out


def test_the_refinery_arm_is_the_default_mixture_with_its_weights_split_and_repetition():
    spec = refinery_mixture_spec(Path("/data/documents.parquet"), 1000)
    web, multi = spec["buckets"]["web"], spec["buckets"]["multilingual"]
    assert set(spec["buckets"]) == {"web", "multilingual"}  # code and math: no arm has them
    assert web["weight"] + multi["weight"] == pytest.approx(1.0)
    default = yaml.safe_load((ROOT / "training" / "mixtures" / "pretrain.yaml").read_text())
    want = default["buckets"]["web"]["weight"] / default["buckets"]["multilingual"]["weight"]
    assert web["weight"] / multi["weight"] == pytest.approx(want)
    assert spec["tokenizer"]["train"]["sample"] == default["tokenizer"]["train"]["sample"]
    assert multi["split_by"] == "lang" and web["repeat"]
    assert all(s["path"] == "/data/documents.parquet" for b in (web, multi) for s in b["sources"])
    assert spec["total_tokens"] == 1000


def test_the_default_mixture_keeps_every_language_the_quality_models_score_low():
    """An absolute quality_score cut of 0.3 dropped every Chinese page of the bench's real pages."""
    assert _selected(refinery_mixture_spec(Path("/d.parquet"), 1000)) == {
        "web": ["en"],
        "multilingual": ["de", "fr", "zh"],
    }
    assert _selected(refinery_mixture_spec(Path("/d.parquet"), 1000, quality_cut=0.3)) == {
        "web": [],
        "multilingual": ["de", "fr"],
    }
