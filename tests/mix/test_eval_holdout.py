"""Held-out eval documents stay out of every training shard, however the sources overlap, and
every (bucket, group) gets an eval file of its own."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

from training.loader import EvalSets
from training.mixture.builder import build_mixture, eval_paths
from training.mixture.report import summary_lines

from .conftest import base_spec

pytestmark = pytest.mark.timeout(120)

WORDS = "the data model train token river light house garden music quiet".split()


def _tagged_docs(path, n=300, **columns):
    """Documents whose text starts with its own id (qq<id>qq), so a decoded shard names them."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS, rng.integers(20, 120)))
        row = {"id": f"d{i}", "text": f"qqd{i}qq {words}", "training_allowed": True}
        row.update({k: v(i) for k, v in columns.items()})
        rows.append(row)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def _ids(out, entries, tok):
    found = set()
    for e in entries:
        found |= set(
            re.findall(r"qq(d\d+)qq", tok.decode(np.load(out / e["path"]).reshape(-1).tolist()))
        )
    return found


@pytest.mark.parametrize("layout", ["two_buckets", "same_bucket_twice"])
def test_a_row_held_out_for_eval_never_reaches_a_shard_through_another_source(
    lake, write_spec, tmp_path, layout
):
    docs = _tagged_docs(tmp_path / "docs.parquet")
    # more tokens than the file holds: every row a source may train on is in its shards
    spec = base_spec(
        lake, total_tokens=80_000, eval={"sequences_per_group": 4, "max_fraction": 0.05}
    )
    if layout == "two_buckets":
        spec["buckets"] = {
            "a": {"weight": 0.5, "sources": [{"path": docs}]},
            "b": {"weight": 0.5, "sources": [{"path": docs}]},
        }
    else:
        two = [{"path": docs, "weight": 0.5}, {"path": docs, "weight": 0.5}]
        spec["buckets"] = {"a": {"weight": 1.0, "sources": two}}
    out = tmp_path / "mix"
    m = build_mixture(write_spec(spec), out)
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    held, trained = _ids(out, m["eval"], tok), _ids(out, m["shards"], tok)
    assert len(held) >= 3
    assert trained == {f"d{i}" for i in range(300)} - held  # every other row, no held one
    # the overlap is reported: which file, which sources, how many rows
    labels = ["a[0]", "b[0]"] if layout == "two_buckets" else ["a[0]", "a[1]"]
    assert m["shared_rows"] == [{"file": docs, "sources": labels, "rows": 300}]
    assert any(line.startswith("SHARED ROWS: 300 rows of") for line in summary_lines(m))
    # every copy held out of training counts as held out in its own group
    for b in m["buckets"].values():
        for g in b["groups"].values():
            assert g["heldout_tokens"] > 0


def test_sources_that_read_disjoint_rows_of_one_file_share_none(lake, write_spec, tmp_path):
    m = build_mixture(write_spec(base_spec(lake, total_tokens=6_000)), tmp_path / "mix")
    assert m["shared_rows"] == []  # web (en) and multilingual (not en) read one file


def test_groups_whose_names_sanitise_alike_get_an_eval_file_each(lake, write_spec, tmp_path):
    docs = _tagged_docs(
        tmp_path / "groups.parquet", 200, lang=lambda i: "zh.Hans" if i % 2 else "zh_Hans"
    )
    spec = base_spec(lake, total_tokens=6_000, eval={"sequences_per_group": 2, "max_fraction": 0.2})
    spec["buckets"] = {"a": {"weight": 1.0, "split_by": "lang", "sources": [{"path": docs}]}}
    out = tmp_path / "mix"
    m = build_mixture(write_spec(spec), out)
    paths = {e["group"]: e["path"] for e in m["eval"]}
    assert paths["zh_Hans"] == "eval/a.zh_Hans.npy"  # a plain name keeps its file name
    assert re.fullmatch(r"eval/a\.zh_Hans-[0-9a-f]{8}\.npy", paths["zh.Hans"])
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    evals = EvalSets(out)
    for group, parity in (("zh.Hans", 1), ("zh_Hans", 0)):
        ids = re.findall(
            r"qqd(\d+)qq", tok.decode(np.asarray(evals.get("a", group)).reshape(-1).tolist())
        )
        assert ids and all(int(i) % 2 == parity for i in ids), (group, ids)


def test_eval_paths_are_one_file_per_group():
    keys = [
        ("a", "en"),
        ("a", "EN"),
        ("a", "zh.Hans"),
        ("a", "zh_Hans"),
        ("a", ""),
        ("a", "日本"),
        ("a", "中文"),
    ]
    paths = eval_paths(keys)
    assert len({p.casefold() for p in paths}) == len(keys)
    assert paths[:1] == ["eval/a.en.npy"] and paths[3] == "eval/a.zh_Hans.npy"
    assert paths == eval_paths(keys)  # deterministic
