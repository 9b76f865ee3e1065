"""Evaluation texts are never trained on: n-gram overlap between an eval set and an arm's data.

The arm's training data is what its mixture's shards hold: the packed token stream, cut into
documents at `<|endoftext|>` and decoded with the arm's tokenizer (each distinct document once).
Both sides are normalised to lower-case word n-grams (characters for text written without spaces);
an eval set whose share of n-grams found in the training documents exceeds `max_overlap` is
refused, naming the set and the arm. An eval text shorter than n words counts as one gram, its
whole word sequence, found when it occurs anywhere in a training document: the training side's
k-grams for each such length k are streamed from the documents again on demand (only those
starting with a word a short eval text starts with are hashed). (filters/ cannot be imported from
training/; this is the small check the ablation needs, not the curation stage's decontamination.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from common.words import WORD
from training.ablate.spec import AblationError
from training.ablate.texts import spaced


def units(text: str) -> list[str]:
    """Lower-case words, or characters for text written without spaces."""
    text = text.lower()
    return WORD.findall(text) if spaced(text) else [c for c in text if c.isalnum()]


def _gram(u: list[str]) -> int:
    return hash(" ".join(u))


class TrainingGrams(set):
    """Hashes of every n-gram of the training texts (a text shorter than n: the whole text), and,
    asked by `found_short`, which short eval grams occur in the texts (a second pass over them)."""

    def __init__(self, texts: Iterable[str], n: int) -> None:
        super().__init__()
        # a one-shot iterator is kept as a list so the short grams can be looked for later
        self.texts = list(texts) if iter(texts) is texts else texts
        self.n = n
        self._asked: dict[int, set[int]] = {}  # length -> short gram hashes looked for
        self._found: dict[int, set[int]] = {}  # length -> those of them the texts hold
        for text in self.texts:
            u = units(text)
            if 0 < len(u) < n:
                self.add(_gram(u))
            for i in range(len(u) - n + 1):
                self.add(_gram(u[i : i + n]))

    def found_short(self, wanted: dict[int, dict[int, str]]) -> dict[int, set[int]]:
        """Of the short grams `wanted` (length k -> {hash: first unit}), those occurring as k
        consecutive units of some training text; each gram is looked for once per instance."""
        todo = {
            k: {h: first for h, first in grams.items() if h not in self._asked.get(k, set())}
            for k, grams in wanted.items()
        }
        todo = {k: grams for k, grams in todo.items() if grams}
        if todo:
            starts: dict[str, set[int]] = {}  # first unit -> the lengths it starts
            for k, grams in todo.items():
                for first in grams.values():
                    starts.setdefault(first, set()).add(k)
            found: dict[int, set[int]] = {k: set() for k in todo}
            for text in self.texts:
                u = units(text)
                for i, word in enumerate(u):
                    for k in starts.get(word, ()):
                        if i + k <= len(u) and (h := _gram(u[i : i + k])) in todo[k]:
                            found[k].add(h)
            for k, grams in todo.items():
                self._asked.setdefault(k, set()).update(grams)
                self._found.setdefault(k, set()).update(found[k])
        return {k: self._found.get(k, set()) & set(grams) for k, grams in wanted.items()}


def ngram_hashes(texts: Iterable[str], n: int) -> TrainingGrams:
    """Hashes of every n-gram of units of the texts (a text shorter than n: the whole text); the
    set also finds shorter eval texts in the texts (`TrainingGrams.found_short`)."""
    return TrainingGrams(texts, n)


def _eval_grams(texts: Iterable[str], n: int) -> tuple[set[int], dict[int, dict[int, str]]]:
    """(the texts' n-gram hashes, {k: {hash: first unit}} of the texts shorter than n units)."""
    grams: set[int] = set()
    short: dict[int, dict[int, str]] = {}
    for text in texts:
        u = units(text)
        if 0 < len(u) < n:
            short.setdefault(len(u), {})[_gram(u)] = u[0]
        for i in range(len(u) - n + 1):
            grams.add(_gram(u[i : i + n]))
    return grams, short


class _Documents:
    """The distinct documents of a mixture's shards, decoded, each time it is iterated."""

    def __init__(self, mix_dir: Path, tok, special: dict[str, int]) -> None:
        self.mix_dir, self.tok, self.special = mix_dir, tok, special

    def __iter__(self) -> Iterator[str]:
        from training.loader import read_manifest

        special = self.special
        manifest = read_manifest(self.mix_dir)
        parts = [
            np.asarray(np.load(self.mix_dir / s["path"], mmap_mode="r")).ravel()
            for s in manifest["shards"]
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
            yield self.tok.decode(doc.tolist(), skip_special_tokens=True)


def training_documents(mix_dir: Path, tok, special: dict[str, int]) -> Iterable[str]:
    """Each distinct document of a mixture's shards, decoded (again on every iteration)."""
    return _Documents(Path(mix_dir), tok, special)


def overlap_share(eval_texts: Iterable[str], train: set[int], n: int) -> tuple[float, int]:
    """(share of the eval texts' grams found in `train`, number of eval grams): their n-grams,
    and each text shorter than n as one gram, found when `train` (a `TrainingGrams`) holds it
    anywhere, or, for a plain set of hashes, when it holds it whole."""
    grams, short = _eval_grams(eval_texts, n)
    total = len(grams) + sum(len(h) for h in short.values())
    if not total:
        return 0.0, 0
    hits = len(grams & train)
    if isinstance(train, TrainingGrams):
        hits += sum(len(h) for h in train.found_short(short).values())
    else:
        hits += sum(len(set(h) & train) for h in short.values())
    return hits / total, total


def check_overlap(
    arm: str, train: set[int], sets: dict[str, list[str]], n: int, max_overlap: float
) -> dict[str, float]:
    """Share per eval set; AblationError naming the set and the arm above `max_overlap`."""
    if isinstance(train, TrainingGrams):  # every set's short texts looked for in one pass
        wanted: dict[int, dict[int, str]] = {}
        for texts in sets.values():
            for k, grams in _eval_grams(texts, n)[1].items():
                wanted.setdefault(k, {}).update(grams)
        train.found_short(wanted)
    shares = {}
    for name, texts in sets.items():
        share, total = overlap_share(texts, train, n)
        shares[name] = round(share, 6)
        if share > max_overlap:
            raise AblationError(
                f"eval_sets[{name}]: {share:.1%} of its {total} grams ({n}-grams, and each text "
                f"shorter than that whole) occur in arm {arm!r}'s training data (max_overlap "
                f"{max_overlap:.1%}); evaluate on texts the arm never saw (or remove them from its "
                "sources), or raise max_overlap"
            )
    return shares
