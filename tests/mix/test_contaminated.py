"""Documents the filter marked `contaminated` (they share n-grams with an evaluation set) stay out
of a mixture's shards, its eval sets and its tokenizer unless the source says `contaminated:
include`; the manifest counts what was left out, per source."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

from training.mixture.builder import build_mixture
from training.mixture.spec import SpecError

from .conftest import base_spec, make_documents

pytestmark = pytest.mark.timeout(120)

LEAK = "QXLEAKEDBENCHMARKPASSAGE"


@pytest.fixture(scope="module")
def marked(tmp_path_factory, lake) -> Path:
    """The fixture lake's documents with a `contaminated` column: every 5th allowed row is marked
    and carries the leak marker; one opted-out row is marked too (it is out either way)."""
    table = make_documents({"en": 400, "de": 150, "fr": 50})
    rows = table.to_pylist()
    for i, r in enumerate(rows):
        r["contaminated"] = i % 5 == 2
        if r["contaminated"]:
            r["text"] += f" {LEAK}"
    d = tmp_path_factory.mktemp("contam")
    pq.write_table(pa.Table.from_pylist(rows), d / "documents.parquet")
    return d / "documents.parquet"


def _spec(lake: Path, docs: Path, **src) -> dict:
    spec = base_spec(lake)
    for bucket in spec["buckets"].values():
        for s in bucket["sources"]:
            s["path"] = str(docs)
            s.update(src)
    return spec


def _decoded(out: Path, manifest: dict) -> str:
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    arrays = [np.load(out / s["path"]) for s in manifest["shards"] + manifest["eval"]]
    return "".join(tok.decode(a.reshape(-1).tolist(), skip_special_tokens=True) for a in arrays)


def _expected_excluded(docs: Path, where) -> int:
    t = pq.read_table(docs).to_pylist()
    return sum(1 for r in t if r["contaminated"] and r["training_allowed"] is True and where(r))


def test_marked_documents_never_reach_shards_or_eval_and_are_counted(
    lake, marked, write_spec, tmp_path
):
    manifest = build_mixture(write_spec(_spec(lake, marked)), tmp_path / "out")
    assert LEAK not in _decoded(tmp_path / "out", manifest)
    by_bucket = {s["bucket"]: s for s in manifest["sources"]}
    assert by_bucket["web"]["contaminated_excluded"] == _expected_excluded(
        marked, lambda r: r["lang"] == "en"
    )
    assert by_bucket["multilingual"]["contaminated_excluded"] == _expected_excluded(
        marked, lambda r: r["lang"] != "en"
    )
    assert by_bucket["web"]["contaminated_excluded"] > 0
    from training.mixture.report import summary_lines

    line = next(x for x in summary_lines(manifest) if "contaminated" in x)
    assert f"web[0] {by_bucket['web']['contaminated_excluded']:,}" in line


def test_include_keeps_them_and_a_file_without_the_column_is_unchanged(
    lake, marked, write_spec, tmp_path
):
    included = build_mixture(
        write_spec(_spec(lake, marked, contaminated="include"), "inc.yaml"), tmp_path / "inc"
    )
    assert LEAK in _decoded(tmp_path / "inc", included)
    assert all("contaminated_excluded" not in s for s in included["sources"])
    plain = build_mixture(
        write_spec(base_spec(lake), "plain.yaml"),
        tmp_path / "plain",
    )
    assert all("contaminated_excluded" not in s for s in plain["sources"])


def test_a_tokenizer_trained_by_the_spec_never_sees_marked_text(lake, marked, write_spec, tmp_path):
    spec = _spec(lake, marked)
    spec["tokenizer"] = {"train": {"vocab_size": 400, "sample_tokens": 200_000}}
    build_mixture(write_spec(spec, "tok.yaml"), tmp_path / "tok")
    vocab = Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json")).get_vocab()
    assert not any("LEAK" in v or "QXLE" in v for v in vocab)


def test_a_contaminated_column_that_is_not_boolean_is_one_line_naming_the_file(
    lake, write_spec, tmp_path
):
    rows = make_documents({"en": 40}).to_pylist()
    for r in rows:
        r["contaminated"] = "false"
    docs = tmp_path / "docs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), docs)
    spec = _spec(lake, docs)
    spec["buckets"] = {"web": spec["buckets"]["web"] | {"weight": 1.0}}
    with pytest.raises(
        SpecError, match=r"docs\.parquet has a `contaminated` column of type string"
    ):
        build_mixture(write_spec(spec, "bad.yaml"), tmp_path / "bad")
