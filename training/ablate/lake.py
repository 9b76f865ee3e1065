"""The lake's own ablation: does the filter make better training data than no filter?

Two arms built from the same extracted documents of the lake, with the same tokenizer (the
lake's) and the same mixture shape (one `web` bucket split by language):

- `unfiltered`: every row of filter/annotated.parquet, whatever its drop_reason;
- `filtered`: filter/documents.parquet (the filter's kept, deduplicated rows).

Evaluation texts are carved out of the kept documents by a hash of their id before either arm is
built: a document and its duplicates (`duplicate_of`) share the hash key, so neither arm trains
on an evaluation text or a copy of it. Only rows the consent rule allows are evaluated on.
"""

from __future__ import annotations

from pathlib import Path

import yaml

# the eval split: 3 of 16 hash buckets of a document's cluster key (~19%)
EVAL_KEY = "substr(md5(CAST(COALESCE(duplicate_of, id) AS VARCHAR)), 1, 1)"
EVAL_BUCKETS = ("0", "1", "2")


def _in_eval(negate: bool, source: Path) -> str:
    """The eval-split predicate over a source's columns (a file without `duplicate_of`: by id)."""
    import pyarrow.parquet as pq

    key = EVAL_KEY
    if "duplicate_of" not in pq.read_schema(source).names:
        key = key.replace("duplicate_of", "NULL")
    buckets = ", ".join(f"'{b}'" for b in EVAL_BUCKETS)
    return f"{key} {'NOT IN' if negate else 'IN'} ({buckets})"


def write_eval_texts(documents: Path, out: Path, lake_root: Path) -> int:
    """The evaluation split of the kept documents (text, lang), consented rows only."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    from common.consent import Consent

    key = _in_eval(False, documents)
    rows = (
        duckdb.sql(
            f"SELECT * FROM read_parquet('{documents}', hive_partitioning=false) WHERE {key} ORDER BY id"
        )
        .to_arrow_table()
        .to_pylist()
    )
    kept, _ = Consent.load(lake_root).keep(rows)
    table = pa.table({"text": [r["text"] for r in kept], "lang": [r["lang"] for r in kept]})
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out)
    return len(kept)


def _mixture_spec(name: str, source: Path, tokenizer: Path, tokens: int, seq_len: int) -> dict:
    return {
        "name": name,
        "seq_len": seq_len,
        "total_tokens": tokens,
        "seed": 1234,
        "tokenizer": str(tokenizer),
        "shard_sequences": 512,
        "allow_shortfall": True,
        "buckets": {
            "web": {
                "weight": 1.0,
                "split_by": "lang",
                "temperature": 1.0,
                "sources": [{"path": str(source), "where": _in_eval(True, source)}],
            }
        },
        "eval": {"sequences_per_group": 0},
    }


def lake_ablation_spec(
    lake_root: Path,
    out_dir: Path,
    *,
    annotated: Path,
    documents: Path,
    tokenizer: Path,
    tokens: int,
    seeds: list[int],
    config: str = "proxy",
    seq_len: int | None = None,
) -> Path:
    """Write the eval texts, the two arms' mixture specs and the ablation spec; return its path.
    Sequences: `seq_len`, default the proxy model's context (at most 128)."""
    if seq_len is None:
        from training.train_config import load_run_config

        cfg, _ = load_run_config(config)
        seq_len = min(128, cfg.stage("pretrain").max_seq_len or cfg.model.max_seq_len)
    for path, what in (
        (annotated, "annotated"),
        (documents, "documents"),
        (tokenizer, "tokenizer"),
    ):
        if not path.exists():
            raise FileNotFoundError(
                f"{path}: the lake has no {what}; run `refinery filter` and `refinery tokenizer "
                f"train` first (or pass an ablation spec)"
            )
    inputs = out_dir / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    write_eval_texts(documents, inputs / "eval.parquet", lake_root)
    arms = {}
    for name, source in (("unfiltered", annotated), ("filtered", documents)):
        spec = _mixture_spec(f"ablate-{name}", source, tokenizer, tokens, seq_len)
        (inputs / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        arms[name] = {"mixture_spec": f"inputs/{name}.yaml"}
    spec = {
        "name": "lake-filter",
        "config": config,
        "tokens": tokens,
        "seeds": seeds,
        "arms": arms,
        "eval_sets": [{"name": "heldout", "path": "inputs/eval.parquet"}],
        "tasks": {"items_per_text": 3, "context_words": 32, "continuation_words": 8},
    }
    path = out_dir / "ablation.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path
