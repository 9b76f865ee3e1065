"""Evaluation texts are never trained on: n-gram overlap between an eval set and an arm's data.

The arm's training data is what its mixture's shards hold: the packed token stream, cut into
documents at `<|endoftext|>` and decoded with the arm's tokenizer (each distinct document once).
Both sides are normalised to lower-case word n-grams (characters for text written without spaces);
an eval set whose share of n-grams found in the training documents exceeds `max_overlap` is
refused, naming the set and the arm. (filters/ cannot be imported from training/; this is the
small check the ablation needs, not the curation stage's decontamination.)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from common.words import WORD
from training.ablate.spec import AblationError
from training.ablate.texts import spaced


def units(text: str) -> list[str]:
    """Lower-case words, or characters for text written without spaces."""
    text = text.lower()
    return WORD.findall(text) if spaced(text) else [c for c in text if c.isalnum()]


def ngram_hashes(texts: Iterable[str], n: int) -> set[int]:
    """Hashes of every n-gram of units of the texts (a text shorter than n: the whole text)."""
    out: set[int] = set()
    for text in texts:
        u = units(text)
        if 0 < len(u) < n:
            out.add(hash(" ".join(u)))
        for i in range(len(u) - n + 1):
            out.add(hash(" ".join(u[i : i + n])))
    return out


def training_documents(mix_dir: Path, tok, special: dict[str, int]) -> Iterable[str]:
    """Each distinct document of a mixture's shards, decoded."""
    from training.loader import read_manifest

    manifest = read_manifest(mix_dir)
    parts = [
        np.asarray(np.load(mix_dir / s["path"], mmap_mode="r")).ravel() for s in manifest["shards"]
    ]
    stream = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
    stream = stream[stream != special["pad"]]
    cuts = np.flatnonzero(stream == special["boundary"])
    seen: set[int] = set()
    for doc in np.split(stream, cuts):
        doc = doc[doc != special["boundary"]]
        if len(doc) == 0:
            continue
        key = hash(doc.tobytes())
        if key in seen:
            continue
        seen.add(key)
        yield tok.decode(doc.tolist(), skip_special_tokens=True)


def overlap_share(eval_texts: Iterable[str], train: set[int], n: int) -> tuple[float, int]:
    """(share of the eval texts' n-grams found in `train`, number of eval n-grams)."""
    mine = ngram_hashes(eval_texts, n)
    if not mine:
        return 0.0, 0
    return len(mine & train) / len(mine), len(mine)


def check_overlap(
    arm: str, train: set[int], sets: dict[str, list[str]], n: int, max_overlap: float
) -> dict[str, float]:
    """Share per eval set; AblationError naming the set and the arm above `max_overlap`."""
    shares = {}
    for name, texts in sets.items():
        share, total = overlap_share(texts, train, n)
        shares[name] = round(share, 6)
        if share > max_overlap:
            raise AblationError(
                f"eval_sets[{name}]: {share:.1%} of its {total} {n}-grams occur in arm {arm!r}'s "
                f"training data (max_overlap {max_overlap:.1%}); evaluate on texts the arm never "
                f"saw (or remove them from its sources), or raise max_overlap"
            )
    return shares
