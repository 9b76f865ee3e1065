"""The opt-out is an outer filter no mixture predicate can reach around; validate plans like build."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

from training.mixture.builder import build_mixture
from training.mixture.read import check_spec_data
from training.mixture.run import run_mix_validate
from training.mixture.sources import plan_units, read_unit
from training.mixture.spec import SpecError, load_spec, normalize_predicate, parse_spec
from training.tokenizer import sample_texts

from .conftest import OPTED_OUT_MARKER, base_spec

# Each of these, pasted into SQL text, widened the selection (or worse); each must be refused.
ESCAPES = [
    "lang = 'en') OR (true",
    "lang = 'en' OR training_allowed IS NOT TRUE) OR (1=1",
    "lang = 'en'; SELECT 1",
    "lang = 'en' UNION SELECT text FROM read_parquet('x')",
    "lang = 'en') UNION ALL (SELECT 1",
    "text IN (SELECT text FROM read_parquet('/etc/passwd'))",
    "EXISTS (SELECT 1)",
    "lang = 'en', true",
    "true AS x",
    "lang = 'en' ORDER BY 1",
    "lang = 'en' LIMIT 1",
    "",
    "   ",
]


@pytest.mark.parametrize("where", ESCAPES)
def test_escaping_predicates_are_rejected_naming_the_field(lake, where):
    spec = base_spec(lake)
    spec["buckets"]["web"]["sources"][0]["where"] = where
    with pytest.raises(SpecError, match=r"buckets\.web\.sources\.0\.where"):
        parse_spec(spec, "s.yaml")


def test_escaping_repeat_predicate_is_rejected(lake):
    spec = base_spec(lake)
    spec["buckets"]["web"]["repeat"] = [{"where": "true) OR (true", "times": 2}]
    with pytest.raises(SpecError, match=r"buckets\.web\.repeat\.0\.where"):
        parse_spec(spec, "s.yaml")


def test_comment_cannot_swallow_the_rest_of_the_query():
    # The predicate goes into SQL re-printed from its parse tree, so the comment is gone.
    assert normalize_predicate("lang = 'en' -- and the rest") == "(lang = 'en')"
    assert "--" not in normalize_predicate("lang = 'en' /* x */ AND quality_score >= 0.5")


@pytest.mark.parametrize(
    "where",
    [
        "true",
        "NOT training_allowed",
        "training_allowed IS NULL OR true",
        "training_allowed = false OR lang = 'en'",
        "coalesce(training_allowed, true)",
        "lang = 'en' OR lang <> 'en' OR lang IS NULL",
    ],
)
def test_valid_but_greedy_predicates_still_see_only_allowed_rows(lake, write_spec, where):
    spec = base_spec(lake)
    spec["buckets"]["web"]["sources"][0]["where"] = where
    path = write_spec(spec)
    for unit in plan_units(load_spec(path), path.parent):
        texts, *_ = read_unit(unit)
        assert all(OPTED_OUT_MARKER not in t for t in texts.to_pylist())


def _shard_text(out, manifest) -> str:
    """Every training and eval sequence of a built mixture, decoded with its tokenizer."""
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    return "".join(
        tok.decode(row.tolist())
        for s in manifest["shards"] + manifest["eval"]
        for row in np.load(out / s["path"])
    )


def test_opted_out_rows_with_null_flag_and_hostile_where_never_reach_shards(
    lake, write_spec, tmp_path
):
    # A source where some rows have training_allowed NULL or false and the where tries to include them.
    docs = pq.read_table(lake / "filter" / "documents.parquet").to_pylist()
    for i, row in enumerate(docs):
        if i % 5 == 0:
            row["training_allowed"] = None
            row["text"] += f" {OPTED_OUT_MARKER}"
    src = tmp_path / "mixed.parquet"
    pq.write_table(pa.Table.from_pylist(docs), src)
    spec = base_spec(lake, total_tokens=8_000, allow_shortfall=True)
    spec["buckets"]["web"]["sources"] = [
        {"path": str(src), "where": "training_allowed IS NOT TRUE OR lang = 'en'"}
    ]
    out = tmp_path / "mix"
    manifest = build_mixture(write_spec(spec), out)
    text = _shard_text(out, manifest)
    assert len(text) > 1000 and OPTED_OUT_MARKER not in text


def test_hostile_identifiers_are_quoted(lake, write_spec):
    spec = base_spec(lake)
    spec["buckets"]["web"]["sources"][0]["text_column"] = 'text", training_allowed AS "x'
    path = write_spec(spec)
    with pytest.raises(SpecError, match=r"buckets\.web\.sources\[0\]"):
        check_spec_data(load_spec(path), path.parent)


def test_validate_catches_a_max_epochs_shortfall_that_build_would_find(lake, write_spec):
    path = write_spec(base_spec(lake, total_tokens=400_000))
    with pytest.raises(SpecError, match=r"buckets\.multilingual: .*max_epochs=4 allows only"):
        run_mix_validate(path)
    allowed = write_spec(base_spec(lake, total_tokens=400_000, allow_shortfall=True), "ok.yaml")
    out = run_mix_validate(allowed)
    assert [s["bucket"] for s in out.shortfalls] == ["multilingual"]
    fine = run_mix_validate(write_spec(base_spec(lake), "fine.yaml"))
    assert fine.shortfalls == [] and fine.rows_offered


def test_sample_texts_is_picked_in_the_database_and_respects_consent(tmp_path):
    rng = np.random.default_rng(1)
    texts = [" ".join(["word"] * int(rng.integers(1, 50))) + f" d{i}" for i in range(3000)]
    allowed = [i % 4 != 0 for i in range(3000)]
    texts = [t if ok else t + f" {OPTED_OUT_MARKER}" for t, ok in zip(texts, allowed, strict=True)]
    f = tmp_path / "d.parquet"
    pq.write_table(pa.table({"text": texts, "training_allowed": allowed}), f)
    a = sample_texts([f], 500, seed=3)
    assert a == sample_texts([f], 500, seed=3)  # deterministic
    assert a != sample_texts([f], 500, seed=4)
    assert sum(len(t) for t in a) == 500 * 4  # exactly the character budget (last one cut)
    assert all(OPTED_OUT_MARKER not in t for t in a)
    everything = sample_texts([f], 10**9, seed=3)
    assert len(everything) == sum(allowed)


def test_disk_backed_packing_equals_in_memory(tmp_path, monkeypatch):
    from training.mixture import packing
    from training.mixture.packing import DiskTokens, PackStats, TokenStore, pack_sequences

    monkeypatch.setattr(packing, "GATHER_CHUNK", 100)  # many chunk edges inside copies

    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 300, 400)  # empty documents included
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    tokens = rng.integers(0, 2**32 - 1, int(offsets[-1]), dtype=np.uint32)
    path = tmp_path / "tokens.u32"
    path.write_bytes(tokens.tobytes())
    docs = rng.integers(0, 400, 900)
    copy_len = np.minimum(lengths[docs], rng.integers(0, 300, 900))  # prefixes too
    disk = DiskTokens(path, len(tokens))
    blocks = {}
    for name, store in {
        "mem": TokenStore(tokens, offsets),
        "disk": TokenStore(disk, offsets),
    }.items():
        stats = PackStats()
        blocks[name] = np.concatenate(
            list(pack_sequences(store, docs, copy_len, 64, 7, 9, 13, stats))
        )
    disk.close()
    assert np.array_equal(blocks["mem"], blocks["disk"])
    assert (
        TokenStore(DiskTokens(path, len(tokens)), offsets).doc(5).tolist()
        == tokens[offsets[5] : offsets[6]].tolist()
    )


def _hive_source(tmp_path, lake):
    """The fixture's documents, every 5th opted out (false or NULL) and marked, in a directory
    named the Hive way: DuckDB would read `training_allowed=true` as a column over the file's."""
    docs = pq.read_table(lake / "filter" / "documents.parquet").to_pylist()
    for i, row in enumerate(docs):
        if i % 5 == 0:
            row["training_allowed"] = None if i % 10 == 0 else False
            row["text"] += f" {OPTED_OUT_MARKER}"
    where = tmp_path / "training_allowed=true" / "lang=en"
    where.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(docs), where / "documents.parquet")
    return where / "documents.parquet"


def test_a_hive_style_directory_name_never_stands_in_for_the_files_own_flag(
    lake, write_spec, tmp_path
):
    src = _hive_source(tmp_path, lake)
    spec = base_spec(lake, total_tokens=8_000, allow_shortfall=True)
    spec["buckets"]["web"]["sources"] = [{"path": str(src), "where": "lang = 'en'"}]
    out = tmp_path / "mix"
    manifest = build_mixture(write_spec(spec), out)
    text = _shard_text(out, manifest)
    assert len(text) > 1000 and OPTED_OUT_MARKER not in text
    sample = sample_texts([src], 10**9)
    assert sample and all(OPTED_OUT_MARKER not in t for t in sample)


def test_a_partitioned_file_without_the_flag_column_is_not_consented_by_its_directory(
    lake, write_spec, tmp_path
):
    # pyarrow's write_to_dataset(partition_cols=["training_allowed"]) leaves the column out of the
    # files: consent named only by a directory is no consent (the source is refused).
    table = pq.read_table(lake / "filter" / "documents.parquet").drop(["training_allowed"])
    where = tmp_path / "parted" / "training_allowed=true"
    where.mkdir(parents=True)
    pq.write_table(table, where / "part-0.parquet")
    spec = base_spec(lake, total_tokens=8_000, allow_shortfall=True)
    spec["buckets"]["web"]["sources"] = [{"path": str(where / "part-0.parquet")}]
    path = write_spec(spec)
    with pytest.raises(Exception, match="training_allowed"):
        build_mixture(path, tmp_path / "mix")
    with pytest.raises(ValueError, match=r"part-0\.parquet: no training_allowed column"):
        sample_texts([where / "part-0.parquet"], 10**9)
