"""Evaluation metrics of a scorer: ROC AUC, precision and recall at a cut."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


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


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else float(x)
