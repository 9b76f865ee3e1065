"""A text source's rows that cannot be documents are recorded rejects, never the end of a build:
invalid UTF-8 and NULL or empty text; rows offered = documents + rejects. A file of a glob whose
training_allowed is not boolean is named, not dropped in silence."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

from training.mixture.builder import build_mixture
from training.mixture.checks import mixture_no_opted_out_rows
from training.mixture.read import check_spec_data
from training.mixture.report import summary_lines
from training.mixture.spec import SpecError, load_spec

from .conftest import base_spec

pytestmark = pytest.mark.timeout(120)

WORDS = "the data model train token river light house garden music quiet".split()


def _rows(n: int, prefix: str = "d") -> list[dict]:
    rng = np.random.default_rng(len(prefix))
    return [
        {
            "id": f"{prefix}{i}",
            "text": f"qq{prefix}{i}qq " + " ".join(rng.choice(WORDS, rng.integers(20, 80))),
            "training_allowed": i % 10 != 3,
        }
        for i in range(n)
    ]


def _with_raw_text(rows: list[dict], raw: dict[int, bytes], path) -> str:
    """Write rows with the text of some rows replaced by raw bytes (not UTF-8), as a Latin-1
    export leaves them: the string column holds them as they are."""
    texts = [raw.get(i, (r["text"] or "").encode()) for i, r in enumerate(rows)]
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in texts])]).astype(np.int32)
    arr = pa.Array.from_buffers(
        pa.string(),
        len(texts),
        [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(texts))],
    )
    table = pa.Table.from_pylist(rows).drop(["text"]).append_column("text", arr)
    pq.write_table(table, path)
    return str(path)


def _one_source(lake, path, **kw):
    spec = base_spec(
        lake, total_tokens=3_000, eval={"sequences_per_group": 2, "max_fraction": 0.3}, **kw
    )
    spec["buckets"] = {"a": {"weight": 1.0, "sources": [{"path": path}]}}
    return spec


def _tags(out, entries) -> list[str]:
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    found = []
    for e in entries:
        found += re.findall(
            r"qq(d\d+)qq", tok.decode(np.load(out / e["path"]).reshape(-1).tolist())
        )
    return found


def test_a_row_of_invalid_utf8_is_a_recorded_reject_and_the_build_goes_on(
    lake, write_spec, tmp_path
):
    rows = _rows(60)  # rows 3, 13, ... are opted out
    raw = {10: b"caf\xe9 qqd10qq latin-1", 11: b"\xff\xfe", 13: b"opted \xe9 out"}
    src = _with_raw_text(rows, raw, tmp_path / "bad.parquet")
    train = {"train": {"vocab_size": 300, "sample_tokens": 3000}}
    path = write_spec(_one_source(lake, src, tokenizer=train))
    assert check_spec_data(load_spec(path), path.parent)["buckets.a.sources[0]"] == 52  # validate
    out = tmp_path / "mix"
    m = build_mixture(path, out)
    rejects = pq.read_table(out / "rejects.parquet").to_pylist()
    assert [(r["row"], r["id"], r["reason"]) for r in rejects] == [
        (10, "d10", "invalid_utf8"),
        (11, "d11", "invalid_utf8"),
        (13, "d13", "invalid_utf8"),  # whatever its flag: an unreadable row is never read
    ]
    assert rejects[0]["detail"] == "bytes that are not UTF-8 in text" and rejects[0]["file"] == src
    source = m["sources"][0]
    assert source["rejected"] == {"invalid_utf8": 3} == m["rejects"]["by_reason"]
    assert source["documents"] == 54 - 2  # 54 rows consented (6 opted out), 2 of them unreadable
    assert "d10" not in _tags(out, m["shards"] + m["eval"])
    assert any(line.startswith("REJECTED text rows") for line in summary_lines(m))
    assert mixture_no_opted_out_rows(out, tmp_path).passed  # the check reads the file too


def test_null_and_empty_text_is_no_document_nor_eval_document(lake, write_spec, tmp_path):
    rows = _rows(60)
    for i in range(0, 60, 3):  # a third of the rows: NULL or ''
        rows[i]["text"] = None if i % 2 else ""
    src = tmp_path / "empty.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)
    out = tmp_path / "mix"
    m = build_mixture(write_spec(_one_source(lake, str(src))), out)
    offered = sum(r["training_allowed"] for r in rows)
    empty = sum(r["training_allowed"] and not r["text"] for r in rows)
    source = m["sources"][0]
    assert source["rejected"] == {"empty_text": empty} and empty == 18
    assert source["documents"] + sum(source["rejected"].values()) == offered
    details = {r["detail"] for r in pq.read_table(out / "rejects.parquet").to_pylist()}
    assert details == {"'text' is NULL", "'text' is empty"}
    # every eval document is one of the tagged (non-empty) ones
    for e in m["eval"]:
        assert len(set(_tags(out, [e]))) == e["documents"] > 0


def _flag_glob(tmp_path) -> str:
    (tmp_path / "parts").mkdir()
    pq.write_table(pa.Table.from_pylist(_rows(60)), tmp_path / "parts" / "part-0.parquet")
    strings = [dict(r, id="s" + r["id"], training_allowed="true") for r in _rows(60, "s")]
    pq.write_table(pa.Table.from_pylist(strings), tmp_path / "parts" / "part-1.parquet")
    return str(tmp_path / "parts" / "*.parquet")


def test_a_file_of_a_glob_with_a_string_flag_is_named_in_validate_and_build(
    lake, write_spec, tmp_path
):
    spec = _one_source(lake, _flag_glob(tmp_path))
    spec["allow_shortfall"] = True
    path = write_spec(spec)
    bad = re.escape(str(tmp_path / "parts" / "part-1.parquet"))
    fix = rf"buckets\.a\.sources\[0\]: {bad}: column training_allowed holds string, not boolean.*write training_allowed as a boolean"
    with pytest.raises(SpecError, match=fix):
        check_spec_data(load_spec(path), path.parent)
    with pytest.raises(SpecError, match=fix):
        build_mixture(path, tmp_path / "mix")


def test_an_optional_sources_unconsented_file_is_counted_in_the_manifest(
    lake, write_spec, tmp_path
):
    spec = _one_source(lake, _flag_glob(tmp_path))
    spec["buckets"]["a"]["sources"][0]["optional"] = True
    m = build_mixture(write_spec(spec), tmp_path / "mix")
    (entry,) = m["sources"][0]["unconsented_files"]
    assert entry["file"] == str(tmp_path / "parts" / "part-1.parquet") and entry["rows"] == 60
    assert "holds string, not boolean" in entry["problem"]
    assert any(
        line.startswith("NOT CONSENTED a[0] (optional): 60 rows") for line in summary_lines(m)
    )
