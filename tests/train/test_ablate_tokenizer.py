"""`tokenizer.train.sample: mixture`: the vocabulary is learnt from the mixture's language shares.

bench/ablate.py's real pages are 65% German after the filter while the default mixture trains on
82% English: a tokenizer sampled from the files as they come spent its merges on German (English
2.91 bytes a token instead of 3.31) and the English proxy lost 0.21 bits per byte (docs/ablate.md).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from training.mixture.builder import mixture_sample_texts, tokenizer_sample_plan
from training.mixture.spec import MixtureSpec
from training.tokenizer import sample_texts

ROOT = Path(__file__).resolve().parents[2]


def _docs(path: Path) -> Path:
    rows = [("en", f"the english page number {i} " * 8, True) for i in range(20)]  # ~4k chars
    rows += [("de", f"die deutsche seite nummer {i} " * 16, True) for i in range(80)]  # ~35k
    rows += [("fr", f"la page francaise numero {i} " * 8, True) for i in range(10)]
    rows += [("en", "optedout secretword " * 20, False)]  # never in a sample
    pq.write_table(
        pa.table(
            {
                "id": [str(i) for i in range(len(rows))],
                "lang": [r[0] for r in rows],
                "text": [r[1] for r in rows],
                "training_allowed": [r[2] for r in rows],
            }
        ),
        path,
    )
    return path


def _spec(docs: Path, sample: str = "mixture") -> MixtureSpec:
    return MixtureSpec.model_validate(
        {
            "name": "t",
            "seq_len": 64,
            "total_tokens": 20_000,
            "tokenizer": {"train": {"vocab_size": 300, "sample_tokens": 5_000, "sample": sample}},
            "buckets": {
                "web": {"weight": 0.8, "sources": [{"path": str(docs), "where": "lang = 'en'"}]},
                "multilingual": {
                    "weight": 0.2,
                    "split_by": "lang",
                    "temperature": 1.0,
                    "sources": [{"path": str(docs), "where": "lang <> 'en'"}],
                },
            },
        }
    )


def _share(texts: list[str], word: str) -> float:
    return sum(len(t) for t in texts if word in t) / sum(map(len, texts))


def test_the_sample_takes_each_bucket_and_language_at_its_mixture_share(tmp_path):
    docs = _docs(tmp_path / "docs.parquet")
    spec = _spec(docs)
    plan = {pred: share for _, pred, share in tokenizer_sample_plan(spec, tmp_path)}
    de, fr = (f"CAST(\"lang\" AS VARCHAR) = '{g}'" for g in ("de", "fr"))
    assert plan[None] == pytest.approx(0.8)
    assert plan[de] + plan[fr] == pytest.approx(0.2)
    assert plan[de] > 5 * plan[fr]  # natural shares within the bucket at temperature 1
    texts = mixture_sample_texts(spec, tmp_path)
    # the English bucket is repeated up to its share; the files as they come give ~10% English
    assert _share(texts, "english") == pytest.approx(0.8, abs=0.05)
    assert _share(sample_texts([docs], 5_000), "english") < 0.2
    assert not any("secretword" in t for t in texts)  # consent holds in every part


def test_sample_mixture_excludes_sources_and_the_default_pretraining_mixture_uses_it(tmp_path):
    with pytest.raises(ValueError, match="sample: mixture samples the buckets"):
        MixtureSpec.model_validate(
            {
                **_spec(_docs(tmp_path / "d.parquet")).model_dump(),
                "tokenizer": {"train": {"sources": ["x.parquet"], "sample": "mixture"}},
            }
        )
    default = yaml.safe_load((ROOT / "training" / "mixtures" / "pretrain.yaml").read_text())
    assert default["tokenizer"]["train"]["sample"] == "mixture"


def test_a_spec_that_samples_files_keeps_the_hash_it_had_before_sample_existed(tmp_path):
    """Built mixtures and the lake's config hashes stay valid: only `sample: mixture` changes it."""
    import hashlib
    import json

    spec = _spec(_docs(tmp_path / "d.parquet"), sample="files")
    before = spec.model_dump(mode="json")
    del before["tokenizer"]["train"]["sample"]
    old = hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()
    assert spec.sha256() == old
    assert _spec(tmp_path / "d.parquet").sha256() != old
