"""Training one fastText model: the fixed parameters, the NaN retry and quantisation.

Both the fold models (`filters.quality.folds`) and the final model (`filters.quality.train`)
are trained by `_fit`, so they share one recipe.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from filters.quality.dataset import TrainingSet
from filters.quality.features import NEG, POS, fasttext_line
from filters.quality.scorer import QualityModel, metadata_path

# One thread and a fixed seed for determinism; 16-dim vectors. The hash table keeps fastText's
# default 2M buckets: with fasttext-numpy2 0.10.4 small tables (<= 200k) make training
# non-deterministic and raise "Encountered NaN" at random. Models are quantized after training
# (QUANTIZE_CUTOFF rows kept, then retrained), so the saved file is about 200 KB.
FASTTEXT_PARAMS = {
    "dim": 16,
    "epoch": 25,
    "lr": 0.2,
    "wordNgrams": 2,
    "minCount": 2,
    "bucket": 2_000_000,
    "thread": 1,
    "loss": "softmax",
}
QUANTIZE_CUTOFF = 10_000


def _train_fasttext(train_file: Path, seed: int):
    """Train with the default params; on fastText's "Encountered NaN" (diverging SGD on small,
    nearly separable sets) retry with a halved learning rate, up to three times."""
    import fasttext

    fasttext.FastText.eprint = lambda *a, **k: None
    params = dict(FASTTEXT_PARAMS)
    for _ in range(4):
        try:
            return fasttext.train_supervised(
                input=str(train_file), seed=seed, verbose=0, **params
            ), params
        except RuntimeError as exc:
            if "NaN" not in str(exc):
                raise
            params["lr"] = params["lr"] / 2
    raise RuntimeError(
        f"fastText diverged (NaN) even at lr={params['lr']}; add more varied training data"
    )


def _fit(ts: TrainingSet, idx: Sequence[int], seed: int, tmp: Path, out: Path) -> dict:
    """Train (and quantize) a model on the examples `idx`, save it to `out`; return fastText params."""
    train_file = tmp / f"{out.stem}.train.txt"
    rng = random.Random(seed)
    order = list(idx)
    rng.shuffle(order)  # fastText reads in file order; interleave the classes
    train_file.write_text(
        "".join(
            f"{POS if ts.labels[i] else NEG} "
            f"{fasttext_line(ts.texts[i], ts.lang_of(i), ts.shape_features)}\n"
            for i in order
        ),
        encoding="utf-8",
    )
    model, params = _train_fasttext(train_file, seed)
    # Prune to the QUANTIZE_CUTOFF strongest rows, then retrain them (without the retrain,
    # pruning alone loses most of the signal on small sets); one thread keeps it deterministic.
    model.quantize(
        input=str(train_file),
        qnorm=True,
        retrain=True,
        cutoff=QUANTIZE_CUTOFF,
        epoch=params["epoch"],
        lr=params["lr"],
        thread=1,
        verbose=0,
    )
    model.save_model(str(out))
    return params


def _load_raw(path: Path, lang: str, shape: bool = False) -> QualityModel:
    """A QualityModel around a fold model's .bin, for raw scores only (its threshold is never used)."""
    metadata_path(path).write_text(
        json.dumps(
            {
                "lang": lang,
                "calibration_quantiles": [0.0, 1.0],
                "threshold": 0.5,
                "shape_features": shape,
            }
        )
    )
    return QualityModel(path)
