"""Extraction quality against ground truth: token precision, recall and F1 (CJK by character)."""

from __future__ import annotations

import re
from collections import Counter

# Chinese and Japanese have no spaces: score them character by character, other scripts by word.
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|\w+", re.UNICODE)


def tokens(text: str | None) -> list[str]:
    """Lower-cased word tokens (single characters for CJK)."""
    return _TOKEN.findall((text or "").lower())


def token_prf(predicted: str | None, gold: str | None) -> tuple[float, float, float]:
    """(precision, recall, F1) of predicted tokens against gold tokens, as bags of words."""
    pred, ref = Counter(tokens(predicted)), Counter(tokens(gold))
    overlap = sum((pred & ref).values())
    if not overlap:
        return 0.0, 0.0, 0.0
    p, r = overlap / sum(pred.values()), overlap / sum(ref.values())
    return p, r, 2 * p * r / (p + r)


def contains_passage(text: str | None, passage: str) -> bool:
    """True if the passage occurs in the text, whitespace-insensitively."""
    return " ".join(passage.split()) in " ".join((text or "").split())
