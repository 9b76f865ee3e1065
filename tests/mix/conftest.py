"""Fixtures for mixture tests: a small filtered-documents Parquet with opted-out rows, and a tokenizer."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from training.tokenizer import train_tokenizer

OPTED_OUT_MARKER = "ZQXJOPTOUTMARKER"
WORDS = {
    "en": "the data model train token river light house garden music quiet".split(),
    "de": "der die das haus garten musik ruhig fluss licht baum".split(),
    "fr": "le la les maison jardin musique calme fleuve lumiere arbre".split(),
}


def make_documents(n_per_lang: dict[str, int], seed: int = 0) -> pa.Table:
    """Deterministic documents in a few languages; every 7th row is opted out and carries the marker."""
    rng = random.Random(seed)
    rows = []
    for lang, n in n_per_lang.items():
        for i in range(n):
            words = [rng.choice(WORDS[lang]) for _ in range(rng.randint(20, 200))]
            allowed = i % 7 != 3
            text = " ".join(words) + ("" if allowed else f" {OPTED_OUT_MARKER}")
            rows.append(
                {
                    "id": f"{lang}-{i}",
                    "url": f"http://127.0.0.1/{lang}/{i}",
                    "text": text,
                    "training_allowed": allowed,
                    "lang": lang,
                    "lang_score": 0.9,
                    "quality_score": round(rng.random(), 3),
                    "drop_reason": None,
                    "duplicate_of": None,
                }
            )
    return pa.Table.from_pylist(rows)


@pytest.fixture(scope="session")
def lake(tmp_path_factory) -> Path:
    """A lake with filter/documents.parquet and tokenizer/tokenizer.json."""
    root = tmp_path_factory.mktemp("lake")
    (root / "filter").mkdir()
    table = make_documents({"en": 400, "de": 150, "fr": 50})
    pq.write_table(table, root / "filter" / "documents.parquet")
    texts = [
        t
        for t, ok in zip(
            table["text"].to_pylist(), table["training_allowed"].to_pylist(), strict=True
        )
        if ok
    ]
    train_tokenizer(texts, 600, root / "tokenizer" / "tokenizer.json")
    return root


@pytest.fixture
def write_spec(tmp_path, lake):
    """Write a spec dict as YAML next to nothing else; paths use absolute lake paths."""

    def _write(spec: dict, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        return path

    return _write


def base_spec(lake: Path, **overrides) -> dict:
    """A small valid spec over the fixture lake: web (en) and multilingual split by lang."""
    docs = str(lake / "filter" / "documents.parquet")
    spec = {
        "name": "tiny-test",
        "seq_len": 64,
        "total_tokens": 20_000,
        "seed": 7,
        "tokenizer": str(lake / "tokenizer" / "tokenizer.json"),
        "shard_sequences": 64,
        "buckets": {
            "web": {"weight": 0.6, "sources": [{"path": docs, "where": "lang = 'en'"}]},
            "multilingual": {
                "weight": 0.4,
                "split_by": "lang",
                "temperature": 3.0,
                "max_epochs": 4,
                "sources": [{"path": docs, "where": "lang <> 'en'"}],
            },
        },
        "eval": {"sequences_per_group": 2, "max_fraction": 0.05},
    }
    spec.update(overrides)
    return spec
