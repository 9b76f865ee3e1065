"""The mixture's consent rule over several lakes and odd source files: a source taken from another
lake brings that lake's consent ledger (shards, tokenizer sample, manifest, check); "latest row
wins" per lake, an opt-out in any lake wins across lakes; the flag column is exactly one boolean
`training_allowed`; a ledger is never skipped because a source has no key column."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from tokenizers import Tokenizer

from common.consent import LEDGER_SCHEMA, append_ledger, ledger_dir, ledger_files, ledger_version
from training.mixture import builder as builder_mod
from training.mixture.builder import build_mixture
from training.mixture.checks import mixture_no_opted_out_rows
from training.mixture.sources import ReadUnit, allowed_rows_sql, plan_units
from training.mixture.spec import SpecError, load_spec
from training.tokenizer import sample_texts

OUT = "ZQXOPTEDOUTMARK"
OUT_URL = "http://127.0.0.9/out"


def _text(marker: str, n: int = 60) -> str:
    return " ".join(f"{marker} word{i % 7}" for i in range(n))


def _docs(path: Path, *, out_marker: str = OUT) -> Path:
    """Two allowed-flag documents: `b1` stays in, `b2` (OUT_URL) is the one a ledger opts out."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = {
        "id": ["b1", "b2"],
        "url": ["http://127.0.0.9/ok", OUT_URL],
        "text": [_text("zqxallowed"), _text(out_marker)],
        "training_allowed": [True, True],
        "lang": ["en", "en"],
    }
    pq.write_table(pa.table(rows), path)
    return path


def _opt_out(lake: Path) -> None:
    append_ledger(lake, [{"url": OUT_URL, "doc_ids": ["b2"], "training_allowed": False}])


def _spec(tmp_path: Path, source: Path, tokenizer, **extra) -> Path:
    spec = {
        "name": "otherlake",
        "seq_len": 32,
        "total_tokens": 3000,
        "seed": 1,
        "shard_sequences": 40,
        "allow_shortfall": True,
        "tokenizer": tokenizer,
        "buckets": {"web": {"weight": 1.0, "sources": [{"path": str(source)}]}},
        **extra,
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _shard_text(mix: Path, manifest: dict) -> str:
    tok = Tokenizer.from_file(str(mix / "tokenizer.json"))
    return "\n".join(
        tok.decode(row.tolist())
        for e in manifest["shards"] + manifest["eval"]
        for row in np.load(mix / e["path"])
    )


# A: a source taken from another lake


def test_source_from_another_lake_honours_that_lakes_ledger(lake, tmp_path):
    """The run's lake (A) has no ledger; the source lies in lake B, whose ledger opts b2 out:
    b2 reaches no shard, and the manifest names B's ledger (`consent_ledger` as one lake's
    version, `consent_ledgers` per lake), which the check then honours."""
    run, other = tmp_path / "lakeA", tmp_path / "lakeB"
    run.mkdir()
    docs = _docs(other / "filter" / "documents.parquet")
    _opt_out(other)
    spec = _spec(tmp_path, docs, str(lake / "tokenizer" / "tokenizer.json"))
    units = plan_units(load_spec(spec), spec.parent, run)
    assert [u.consent for u in units] == [tuple(map(str, ledger_files(other)))]

    mix = tmp_path / "mix"
    manifest = build_mixture(spec, mix, lake_root=run)
    text = _shard_text(mix, manifest)
    assert "zqxallowed" in text and OUT.lower() not in text.lower()
    version = ledger_version(ledger_files(other))
    assert manifest["consent_ledger"] == version
    assert manifest["consent_ledgers"] == [{"lake": str(other.resolve()), **version}]
    assert mixture_no_opted_out_rows(mix, run).passed


def test_check_judges_a_mixture_by_every_lakes_ledger(lake, tmp_path):
    """A mixture built before lake B opted b2 out holds b2. Its manifest, claiming B's ledger,
    fails the check (it finds b2); an older manifest with no per-lake record is judged by B's
    ledger as it is now (its build never read it); a record of no ledger passes (what the build
    honoured); an edited record is refused."""
    run, other = tmp_path / "lakeA", tmp_path / "lakeB"
    run.mkdir()
    docs = _docs(other / "filter" / "documents.parquet")
    spec = _spec(tmp_path, docs, str(lake / "tokenizer" / "tokenizer.json"))
    mix = tmp_path / "mix"
    manifest = build_mixture(spec, mix, lake_root=run)
    assert manifest["consent_ledgers"] == [] and "consent_ledger" not in manifest
    assert OUT.lower() in _shard_text(mix, manifest).lower()
    _opt_out(other)
    assert mixture_no_opted_out_rows(mix, run).passed  # honoured: no ledger then

    def judged(**record) -> object:
        leaky = tmp_path / f"leaky{len(list(tmp_path.glob('leaky*')))}"
        shutil.copytree(mix, leaky)
        m = {k: v for k, v in manifest.items() if k not in ("consent_ledger", "consent_ledgers")}
        (leaky / "manifest.json").write_text(json.dumps({**m, **record}))
        return mixture_no_opted_out_rows(leaky, run)

    version = ledger_version(ledger_files(other))
    claimed = judged(
        consent_ledger=version, consent_ledgers=[{"lake": str(other.resolve()), **version}]
    )
    assert not claimed.passed and claimed.metadata["opted_out_found"] == 1
    assert claimed.metadata["first_found"].startswith(str(docs))
    legacy = judged()  # a manifest from before `consent_ledgers`
    assert not legacy.passed and legacy.metadata["opted_out_found"] == 1
    with pytest.raises(ValueError, match="consent_ledger"):
        judged(
            consent_ledger={**version, "sha256": "0" * 64},
            consent_ledgers=[{"lake": str(other.resolve()), **version}],
        )


def test_tokenizer_sample_honours_every_lake_a_source_lies_in(tmp_path, monkeypatch):
    """The mix's own tokenizer sample reads with the same ledgers as the shards: B's (a bucket
    source's lake) and C's (a tokenizer-only source's lake); opted-out text never shapes it."""
    run, b, c = tmp_path / "lakeA", tmp_path / "lakeB", tmp_path / "lakeC"
    run.mkdir()
    docs_b = _docs(b / "filter" / "documents.parquet")
    docs_c = _docs(c / "filter" / "documents.parquet", out_marker="zqxlakecout")
    _opt_out(b)
    _opt_out(c)
    train = {"train": {"vocab_size": 300, "sample_tokens": 20000, "sources": [str(docs_c)]}}
    spec = _spec(tmp_path, docs_b, train)
    seen: list[tuple[list[str], list[str]]] = []

    def spy(files, sample_tokens, **kw):
        texts = sample_texts(files, sample_tokens, **kw)
        seen.append((sorted(map(str, kw["consent"])), texts))
        return texts

    monkeypatch.setattr(builder_mod, "sample_texts", spy)
    builder_mod.prepare_tokenizer(load_spec(spec), spec.parent, tmp_path / "tok", run)
    [(consent, texts)] = seen
    assert consent == sorted(map(str, ledger_files(b) + ledger_files(c)))
    assert any("zqxallowed" in t for t in texts)
    assert not any("zqxlakecout" in t for t in texts)
    assert [u.consent for u in plan_units(load_spec(spec), spec.parent, run)] == [
        tuple(map(str, ledger_files(b) + ledger_files(c)))
    ]


# B: latest row per lake, an opt-out in any lake wins


def _ledger_file(lake: Path, seq: int, rows: list[tuple]) -> None:
    """ledger-<seq> of `lake` with rows (url, training_allowed[, doc_ids])."""
    d = ledger_dir(lake)
    d.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(
        [
            {"url": r[0], "doc_ids": list(r[2]) if len(r) > 2 else [], "training_allowed": r[1]}
            for r in rows
        ],
        schema=LEDGER_SCHEMA,
    )
    pq.write_table(table, d / f"ledger-{seq:06d}.parquet")


def _allowed(tmp_path: Path, files: list[Path], urls: list[str]) -> list[str]:
    f = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"url": urls, "text": urls, "training_allowed": [True] * len(urls)}), f)
    unit = ReadUnit("b", 0, str(f), None, "text", None, (), tuple(map(str, files)))
    sql = f"SELECT url FROM ({allowed_rows_sql(unit)})"
    return [r[0] for r in duckdb.connect().execute(sql, [str(f)]).fetchall()]


def test_ledger_latest_row_per_lake_and_an_opt_out_in_any_lake_wins(tmp_path):
    a, b = tmp_path / "alake", tmp_path / "blake"  # b's paths sort after a's
    _ledger_file(a, 1, [("u/a-out-b-reallow", False), ("u/a-reallow-b-out", False)])
    _ledger_file(
        a,
        2,
        [
            ("u/a-reallow-b-out", True),
            ("u/row-order", False),
            ("u/row-order", True),
            ("u/row-order-out", True),
            ("u/row-order-out", False),
        ],
    )
    _ledger_file(b, 1, [("u/a-out-b-reallow", False), ("u/a-reallow-b-out", False)])
    _ledger_file(b, 2, [("u/a-out-b-reallow", True), ("u/b-only", False)])
    _ledger_file(b, 3, [("u/b-only", True), ("u/b-out-again", True)])
    _ledger_file(b, 4, [("u/b-out-again", False)])
    # seq, not name order: ledger-1000000 comes after ledger-999999
    _ledger_file(b, 999_999, [("u/seq", False)])
    _ledger_file(b, 1_000_000, [("u/seq", True)])
    urls = [
        "u/a-out-b-reallow",  # b's later re-allow does not lift a's opt-out
        "u/a-reallow-b-out",  # nor does a's lift b's
        "u/row-order",  # within a file, the later row wins: re-allowed
        "u/row-order-out",  # ... and here opted out
        "u/b-only",  # re-allowed within b
        "u/b-out-again",  # opted out again within b
        "u/seq",  # re-allowed by the file with the higher seq
        "u/never",
    ]
    for files in (ledger_files(a) + ledger_files(b), ledger_files(b) + ledger_files(a)):
        assert _allowed(tmp_path, files, urls) == ["u/row-order", "u/b-only", "u/seq", "u/never"]


def test_ledger_ids_match_the_python_rule_across_lakes(tmp_path):
    """A URL opted out in lake a and re-allowed in lake b: the ids b's latest row gives it are
    out too (common.consent.opted_out), in the mixture's SQL as in Python."""
    from common.consent import Consent, opted_out

    a, b = tmp_path / "alake", tmp_path / "blake"
    _ledger_file(a, 1, [("u/x", False, ["a-doc"])])
    _ledger_file(b, 1, [("u/x", True, ["b-doc"])])
    files = ledger_files(a) + ledger_files(b)
    assert opted_out(files) == ({"u/x"}, {"a-doc", "b-doc"})
    f = tmp_path / "ids.parquet"
    ids = ["a-doc", "b-doc", "c-doc"]
    pq.write_table(pa.table({"doc_id": ids, "text": ids, "training_allowed": [True] * 3}), f)
    unit = ReadUnit("b", 0, str(f), None, "text", None, (), tuple(map(str, files)))
    sql = f"SELECT doc_id FROM ({allowed_rows_sql(unit)})"
    kept = [r[0] for r in duckdb.connect().execute(sql, [str(f)]).fetchall()]
    consent = Consent.load(None, files)
    assert kept == ["c-doc"]
    assert [i for i in ids if consent.allows({"doc_id": i, "training_allowed": True})] == kept


# C: the flag column


def _flag_file(tmp_path: Path, name: str, names: list[str], arrays: list) -> Path:
    f = tmp_path / f"{name}.parquet"
    ids = pa.array(["a", "b"])
    text = pa.array([_text("zqxfirst"), _text("zqxsecond")])
    pq.write_table(pa.Table.from_arrays([ids, text, *arrays], names=["id", "text", *names]), f)
    return f


FLAG_FILES = {
    "upper_string": (["Training_Allowed"], [pa.array(["true", "false"])]),
    "upper_int": (["TRAINING_ALLOWED"], [pa.array([1, 1], pa.int64())]),
    "duplicate": (
        ["training_allowed", "training_allowed"],
        [pa.array(["t", "t"]), pa.array([True, False])],
    ),
    "twin_first": (
        ["TRAINING_ALLOWED", "training_allowed"],
        [pa.array(["true", "true"]), pa.array([False, False])],
    ),
    "twin_after": (
        ["training_allowed", "Training_allowed"],
        [pa.array([True, False]), pa.array(["true", "true"])],
    ),
}


@pytest.mark.parametrize("case", sorted(FLAG_FILES))
def test_flag_column_must_be_exactly_one_boolean_training_allowed(tmp_path, lake, case):
    """DuckDB binds `training_allowed` case-insensitively, quoted or not (a twin column it
    renames `<name>_1`): any other spelling or a second such column is one line naming the file,
    the column and the fix, for the read path, a build, the tokenizer sample and an image kind
    that may come without the column (but not with a misspelt one)."""
    f = _flag_file(tmp_path, case, *FLAG_FILES[case])
    flag = rf"{f}: the consent flag must be exactly one boolean column named `training_allowed`"
    unit = ReadUnit("b", 0, str(f), None, "text", None, ())
    with pytest.raises(SpecError, match=rf"{flag}, found .*; rename the column"):
        duckdb.connect().execute(f"SELECT id FROM ({allowed_rows_sql(unit)})", [str(f)])
    with pytest.raises(SpecError, match=flag):
        build_mixture(
            _spec(tmp_path, f, str(lake / "tokenizer" / "tokenizer.json")), tmp_path / "mix"
        )
    if case != "duplicate":  # common.inputs.check_file raises KeyError on a duplicate name first
        with pytest.raises(ValueError, match=flag):
            sample_texts([f], 1000)
    from training.mixture.images import read_image_unit_batches

    charts = ReadUnit("b", 0, str(f), None, "text", None, (), kind="charts", image_tokens=4)
    with pytest.raises(SpecError, match=flag):
        next(read_image_unit_batches(charts, None, 2))


# D: a source without any key column the ledger matches


@pytest.mark.parametrize("column", ["URL", "source_url", "document_id"])
def test_ledger_is_never_skipped_for_a_source_without_a_key_column(tmp_path, lake, column):
    append_ledger(tmp_path, [{"url": OUT_URL, "doc_ids": ["d9"], "training_allowed": False}])
    f = tmp_path / "src" / "docs.parquet"
    f.parent.mkdir()
    key = "d9" if column == "document_id" else OUT_URL
    pq.write_table(pa.table({column: [key], "text": [_text(OUT)], "training_allowed": [True]}), f)
    unit = ReadUnit("b", 0, str(f), None, "text", None, (), tuple(map(str, ledger_files(tmp_path))))
    fix = r"no column the consent ledger can match.*add \(or rename one to\) a `url` or `doc_id`"
    with pytest.raises(SpecError, match=rf"{f}: {fix}"):
        allowed_rows_sql(unit)
    # the build refuses the source (its read path and its tokenizer sample alike)
    spec = _spec(tmp_path, f, str(lake / "tokenizer" / "tokenizer.json"))
    with pytest.raises(SpecError, match=rf"{f}: {fix}"):
        build_mixture(spec, tmp_path / "mix", lake_root=tmp_path)
    train = {"train": {"vocab_size": 300, "sample_tokens": 2000}}
    with pytest.raises(ValueError, match=rf"{f}: {fix}"):
        build_mixture(_spec(tmp_path, f, train), tmp_path / "mix2", lake_root=tmp_path)
    # without a ledger there is nothing to match: the rows are read on their own flag
    assert ReadUnit("b", 0, str(f), None, "text", None, ()).consent == ()
    plain = ReadUnit("b", 0, str(f), None, "text", None, ())
    assert (
        duckdb.connect()
        .execute(f"SELECT count(*) FROM ({allowed_rows_sql(plain)})", [str(f)])
        .fetchone()[0]
        == 1
    )


def test_ledger_key_column_with_a_case_twin_is_refused(tmp_path):
    """`URL` before `url`: DuckDB would bind "url" to `URL` and match the wrong column."""
    append_ledger(tmp_path, [{"url": OUT_URL, "doc_ids": ["d9"], "training_allowed": False}])
    f = tmp_path / "twins.parquet"
    table = pa.Table.from_arrays(
        [pa.array(["http://x/elsewhere"]), pa.array([OUT_URL]), pa.array(["t"]), pa.array([True])],
        names=["URL", "url", "text", "training_allowed"],
    )
    pq.write_table(table, f)
    unit = ReadUnit("b", 0, str(f), None, "text", None, (), tuple(map(str, ledger_files(tmp_path))))
    with pytest.raises(SpecError, match=rf"{f}: columns 'URL', 'url' differ only in case"):
        allowed_rows_sql(unit)
