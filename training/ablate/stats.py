"""Means, 95% intervals (Student's t over seeds) and paired differences between arms.

Seeds pair runs across arms: seed s of every arm starts from the same initial weights, so the
difference between two arms is taken per seed and its mean gets a t interval of its own (a paired
t interval), tighter than comparing two arms' separate intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CONFIDENCE = 0.95
MIN_SEEDS_FOR_INTERVAL = 3


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> dict[str, float | None]:
    """mean, sd, half-width and bounds of the t interval (None below three values)."""
    n = len(values)
    mean = sum(values) / n
    if n < MIN_SEEDS_FOR_INTERVAL:
        return {"mean": mean, "n": n, "sd": None, "half": None, "low": None, "high": None}
    from scipy.special import stdtrit  # Student t quantile (scipy.stats imports 3x slower)

    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stdtrit(n - 1, 0.5 + confidence / 2)) * sd / math.sqrt(n)
    return {"mean": mean, "n": n, "sd": sd, "half": half, "low": mean - half, "high": mean + half}


def paired_difference(a: Sequence[float], b: Sequence[float]) -> dict[str, float | bool | None]:
    """a - b per seed: its mean, t interval, and whether the interval excludes zero."""
    d = t_interval([x - y for x, y in zip(a, b, strict=True)])
    low, high = d["low"], d["high"]
    d["excludes_zero"] = None if low is None else bool(low > 0 or high < 0)
    return d
