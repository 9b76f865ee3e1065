"""Per-language fastText quality classifiers: training, evaluation, metadata and scoring.

A model is `<name>.bin` with `<name>.json` beside it (language, label source, training-set
hash, threshold, held-out metrics and score quantiles on the unlabelled crawl used to map a
target keep-rate to a score). `quality_score` is P(high quality) in [0, 1].
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from filters.heuristics import tokens

POS, NEG = "__label__hq", "__label__lq"
MAX_TOKENS = 1500
MIN_PER_CLASS = 3
# Default cut: keep 90 % of the crawl. On the sample web (bench/filter.py, cross-fitted) this
# keeps about as many good tokens as Gopher rules alone (-0.5 %) and ~45 % fewer bad ones.
DEFAULT_KEEP_RATE = 0.9

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


def fasttext_line(text: str, lang: str) -> str:
    """The one-line, tokenised form the classifier sees (characters for CJK-like languages)."""
    return " ".join(tokens(text, lang)[:MAX_TOKENS])


def metadata_path(model_path: str | Path) -> Path:
    """Where a model's JSON metadata lives: beside the .bin."""
    return Path(model_path).with_suffix(".json")


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve via the rank-sum statistic (ties get average ranks)."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=float)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def precision_recall(
    labels: Sequence[int], scores: Sequence[float], threshold: float
) -> tuple[float, float]:
    """Precision and recall of `score >= threshold` as the positive prediction."""
    y = np.asarray(labels, dtype=bool)
    pred = np.asarray(scores, dtype=float) >= threshold
    tp = int((pred & y).sum())
    precision = tp / int(pred.sum()) if pred.any() else float("nan")
    recall = tp / int(y.sum()) if y.any() else float("nan")
    return precision, recall


class QualityModel:
    """A trained classifier and its metadata; `score` gives P(high quality)."""

    def __init__(self, path: str | Path):
        import fasttext

        self.path = Path(path)
        meta = metadata_path(self.path)
        if not self.path.exists() or not meta.exists():
            raise FileNotFoundError(
                f"quality model {self.path} needs both the .bin and {meta.name}"
            )
        self.meta = json.loads(meta.read_text())
        fasttext.FastText.eprint = lambda *a, **k: None
        self._model = fasttext.load_model(str(self.path))
        self.lang = self.meta["lang"]

    @property
    def threshold(self) -> float:
        """The score cut stored with the model."""
        return float(self.meta["threshold"])

    def score_for_keep_rate(self, keep_rate: float) -> float:
        """Score cut that keeps `keep_rate` of the calibration crawl (from stored quantiles)."""
        q = self.meta["calibration_quantiles"]
        return float(np.interp(1.0 - keep_rate, np.linspace(0, 1, len(q)), q))

    def score(self, texts: Sequence[str]) -> list[float]:
        """P(high quality) for each text."""
        lines = [fasttext_line(t, self.lang) for t in texts]
        out = [float("nan")] * len(lines)
        idx = [i for i, line in enumerate(lines) if line]
        if idx:
            labels, probs = self._model.predict([lines[i] for i in idx], k=2)
            for i, labs, ps in zip(idx, labels, probs, strict=True):
                p = dict(zip(labs, ps, strict=True)).get(POS, 0.0)
                out[i] = float(min(1.0, max(0.0, p)))
        # An empty text has no evidence of quality: lowest score rather than NaN.
        return [0.0 if math.isnan(v) else v for v in out]


@dataclass
class TrainingSet:
    """Labelled texts of one language plus the unlabelled crawl sample used for calibration."""

    lang: str
    texts: list[str]
    labels: list[int]
    source: str
    calibration: list[str]

    def sha256(self) -> str:
        """Content hash of the labelled examples (order-independent)."""
        h = hashlib.sha256()
        for line in sorted(f"{y}\t{t}" for t, y in zip(self.texts, self.labels, strict=True)):
            h.update(line.encode())
            h.update(b"\n")
        return h.hexdigest()


def _split(n: int, labels: list[int], test_frac: float, seed: int) -> tuple[list[int], list[int]]:
    # Stratified: each class is split on its own so the held-out set keeps both labels.
    rng = random.Random(seed)
    train, test = [], []
    for cls in (0, 1):
        idx = [i for i in range(n) if labels[i] == cls]
        rng.shuffle(idx)
        k = max(1, round(len(idx) * test_frac)) if len(idx) > 1 else 0
        test += idx[:k]
        train += idx[k:]
    return sorted(train), sorted(test)


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


def train_model(
    ts: TrainingSet,
    out: str | Path,
    *,
    seed: int = 0,
    threshold: float | None = None,
    keep_rate: float | None = None,
    test_frac: float = 0.2,
) -> dict:
    """Train, evaluate on a held-out split, calibrate and save a model; return its metadata."""
    n_pos = sum(ts.labels)
    if n_pos < MIN_PER_CLASS or len(ts.labels) - n_pos < MIN_PER_CLASS:
        raise ValueError(
            f"quality training for {ts.lang!r} ({ts.source}) needs >= {MIN_PER_CLASS} positives and negatives, "
            f"got {n_pos} and {len(ts.labels) - n_pos}; supply more labelled documents"
        )
    if threshold is not None and keep_rate is not None:
        raise ValueError("give either threshold or keep_rate, not both")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    train_idx, test_idx = _split(len(ts.texts), ts.labels, test_frac, seed)
    with tempfile.TemporaryDirectory() as tmp:
        train_file = Path(tmp) / "train.txt"
        rng = random.Random(seed)
        order = list(train_idx)
        rng.shuffle(order)  # fastText reads in file order; interleave the classes
        train_file.write_text(
            "".join(
                f"{POS if ts.labels[i] else NEG} {fasttext_line(ts.texts[i], ts.lang)}\n"
                for i in order
            ),
            encoding="utf-8",
        )
        model, params = _train_fasttext(train_file, seed)
        # Prune to the QUANTIZE_CUTOFF strongest rows, then retrain them (without the retrain,
        # pruning alone loses most of the signal on small sets); one thread keeps it deterministic.
        model.quantize(
            input=str(train_file), qnorm=True, retrain=True, cutoff=QUANTIZE_CUTOFF,
            epoch=params["epoch"], lr=params["lr"], thread=1, verbose=0,
        )  # fmt: skip
        model.save_model(str(out))
    meta = {"lang": ts.lang, "calibration_quantiles": [0.0, 1.0], "threshold": 0.5}
    metadata_path(out).write_text(json.dumps(meta))
    qm = QualityModel(out)
    test_scores = qm.score([ts.texts[i] for i in test_idx])
    test_labels = [ts.labels[i] for i in test_idx]
    calib = qm.score(ts.calibration or ts.texts)
    quantiles = np.quantile(np.asarray(calib), np.linspace(0, 1, 101)).tolist()
    meta["calibration_quantiles"] = quantiles
    if threshold is None:
        qm.meta = meta
        keep_rate = DEFAULT_KEEP_RATE if keep_rate is None else keep_rate
        threshold = qm.score_for_keep_rate(keep_rate)
    precision, recall = precision_recall(test_labels, test_scores, threshold)
    meta.update(
        {
            "label_source": ts.source,
            "training_set_sha256": ts.sha256(),
            "n_train": len(train_idx),
            "n_test": len(test_idx),
            "n_positive": n_pos,
            "seed": seed,
            "threshold": float(threshold),
            "keep_rate": keep_rate,
            "fasttext": params,
            # Undefined metrics (no predicted positives) are null, not NaN: strict JSON.
            "metrics": {
                "auc": _finite(roc_auc(test_labels, test_scores)),
                "precision": _finite(precision),
                "recall": _finite(recall),
                "threshold": float(threshold),
            },
        }
    )
    metadata_path(out).write_text(json.dumps(meta, indent=2, sort_keys=True))
    return meta


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def load_models(
    models_dir: str | Path | None, languages: Sequence[str] | None = None
) -> dict[str, QualityModel]:
    """Load `<lang>.bin` models from a directory (missing languages are simply absent)."""
    if not models_dir:
        return {}
    d = Path(models_dir)
    if not d.is_dir():
        raise FileNotFoundError(f"--models {d} is not a directory of <lang>.bin quality models")
    out = {}
    for path in sorted(d.glob("*.bin")):
        if languages is None or path.stem in languages:
            out[path.stem] = QualityModel(path)
    return out
