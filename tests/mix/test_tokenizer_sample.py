"""The tokenizer a spec trains learns from what the shards are made of: each source's own text
column (image kinds, whose text is built from captions or QA, are not sampled), and the rows the
shards' relation admits (a NaN score reads as NULL under `where`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from training.mixture import builder
from training.mixture.builder import build_mixture, mixture_sample_texts, tokenizer_files
from training.mixture.spec import load_spec

from .conftest import base_spec

pytestmark = pytest.mark.timeout(120)

WORDS = "the data model train token river light house garden music quiet".split()


def _docs(path, n=80, **columns) -> str:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        row = {"id": f"d{i}", "training_allowed": True, "lang": "en"}
        row["text"] = " ".join(rng.choice(WORDS, rng.integers(20, 80)))
        row.update({k: v(i, row) for k, v in columns.items()})
        rows.append(row)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


@pytest.fixture
def sampled(monkeypatch):
    """The texts each tokenizer the builder trains is given."""
    got: list[list[str]] = []
    train = builder.train_tokenizer

    def spy(texts, vocab_size, out, **kw):
        got.append(list(texts))
        return train(got[-1], vocab_size, out, **kw)

    monkeypatch.setattr(builder, "train_tokenizer", spy)
    return got


def test_sample_files_reads_each_sources_own_text_column(lake, write_spec, tmp_path, sampled):
    body = _docs(
        tmp_path / "body.parquet",
        body=lambda i, r: r["text"],
        text=lambda i, r: "<div class=x>RAWHTMLONLY</div>",
    )
    spec = base_spec(
        lake, total_tokens=2_000, tokenizer={"train": {"vocab_size": 300, "sample_tokens": 5000}}
    )
    spec["buckets"] = {"a": {"weight": 1.0, "sources": [{"path": body, "text_column": "body"}]}}
    build_mixture(write_spec(spec), tmp_path / "mix")
    (texts,) = sampled
    assert texts and not any("RAWHTMLONLY" in t for t in texts)
    assert any("garden" in t for t in texts)


def test_sample_files_skips_image_kinds_of_a_multimodal_spec(lake, write_spec, tmp_path, sampled):
    docs = _docs(tmp_path / "docs.parquet")
    charts = tmp_path / "charts"
    charts.mkdir()
    Image.new("RGB", (16, 16), (200, 10, 10)).save(charts / "c0.png")
    qa = [{"question": "What colour?", "answer": "red", "kind": "read", "verified": True}]
    rows = [{"id": f"c{i}", "image_path": "c0.png", "qa": qa} for i in range(10)]
    pq.write_table(pa.Table.from_pylist(rows), charts / "charts.parquet")
    spec = base_spec(
        lake,
        total_tokens=2_000,
        image_tokens=4,
        allow_shortfall=True,
        tokenizer={"train": {"vocab_size": 300, "sample_tokens": 5000}},
    )
    image = {"path": str(charts / "charts.parquet"), "kind": "charts"}
    spec["buckets"] = {
        "web": {"weight": 0.8, "sources": [{"path": docs}]},
        "charts": {"weight": 0.2, "modality": "image_caption", "sources": [image]},
    }
    path = write_spec(spec)
    assert tokenizer_files(load_spec(path), path.parent) == [(docs, "text")]
    m = build_mixture(path, tmp_path / "mix")
    assert sampled and m["buckets"]["charts"]["images"] > 0


def test_sample_mixture_reads_a_nan_score_as_null_under_where(lake, write_spec, tmp_path):
    def nan_half(i, row):
        return float("nan") if i % 2 else 0.9

    def marked(i, row):
        return ("NANMARKERWORD " if i % 2 else "") + row["text"]

    docs = _docs(tmp_path / "nan.parquet", quality_score=nan_half, text=marked)
    spec = base_spec(
        lake,
        total_tokens=2_000,
        tokenizer={"train": {"vocab_size": 300, "sample_tokens": 20_000, "sample": "mixture"}},
    )
    spec["buckets"] = {
        "a": {"weight": 1.0, "sources": [{"path": docs, "where": "quality_score >= 0.5"}]}
    }
    path = write_spec(spec)
    texts = mixture_sample_texts(load_spec(path), path.parent)
    assert len(texts) > 40 and not any("NANMARKERWORD" in t for t in texts)


def test_the_sample_is_the_same_wherever_the_lake_lies(tmp_path):
    """The rows sampled depend on the seed, the files' order and the rows, never on the path the
    lake has: a lake moved, or built on another machine, trains the same tokenizer."""
    from training.tokenizer import sample_texts

    picked = []
    for where in ("a", "somewhere/else/entirely"):
        (tmp_path / where).mkdir(parents=True)
        files = [_docs(tmp_path / where / "x.parquet"), _docs(tmp_path / where / "y.parquet", 60)]
        picked.append(sample_texts(files, sample_tokens=400, seed=3))
    assert picked[0] and picked[0] == picked[1]
