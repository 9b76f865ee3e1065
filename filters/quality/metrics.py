"""Evaluation metrics of a scorer: ROC AUC, precision and recall at a cut."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from common.metrics import roc_auc  # noqa: F401  (the one ROC AUC, used by the trainer)


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


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else float(x)
