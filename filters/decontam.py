"""Benchmark decontamination: mark documents that share n-grams with evaluation sets.

`refinery filter --decontaminate EVAL...` (or `decontamination.evals` in the filter config)
names JSONL or Parquet files of evaluation items. Each item's fields named in
`decontamination.fields` (question, answer, context, ...; a list of strings, such as choices,
counts as its items) are joined in that order and indexed as n-grams; a document whose text
shares at least `min_ngrams` of them with an eval set is `contaminated`, with the set's name in
`contamination_benchmarks` and the count in `contamination_ngrams`. Dropping is configuration
(`decontamination.drop`, reason `contaminated`); by default rows are only annotated, and every
mixture leaves them out (its manifest counts them per source as `contaminated_excluded`) unless
a source says `contaminated: include` (training/mixture/sources.py `contamination_sql`).

Tokens: the text is NFKC-normalised and case-folded; a token is a run of letters and digits (with
their combining marks), and each character of a script written without spaces (Han, kana, Thai,
Lao, Khmer, Myanmar) is a token of its own (Hangul is written with spaces: words). N-grams:
`ngram` tokens (13, as datatrove and the GPT-3 paper use) for a text mostly of words; a text
whose tokens are mostly such characters uses `ngram_chars` (default 13 characters too, about 6-9
words). Eval items are indexed at both sizes, so a document is matched at its own size whatever
the eval's script.

Index: 64-bit n-gram hashes (a stable hash per token, a polynomial over the window), sorted,
each with its eval set's number; a document's windows are looked up with one vectorised
`searchsorted`. Built once per process per set of eval files (cached by their size and mtime).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from common.words import MARKS
from filters.config import DecontamConfig, EvalSet, FilterConfig

# Scripts written without spaces between words: every character is a token.
_CHARS = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
# A word: a letter or digit, then letters, digits and the combining marks that Indic, Arabic and
# Hebrew write vowels with (common.words.MARKS); without them "हिन्दी" was five tokens and
# 13 tokens of Hindi about five words.
_TOKEN = re.compile(rf"[{_CHARS}]|[^\W_{_CHARS}](?:[^\W_{_CHARS}]|[{MARKS}])*")
_IS_CHAR = re.compile(rf"[{_CHARS}]")
_P = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier of the polynomial window hash
_TOKEN_CACHE: dict[str, int] = {}
_TOKEN_CACHE_MAX = 1 << 20
BITMAP_MASK = np.uint64((1 << 24) - 1)  # 16 MB of booleans: few false hits below ~1M n-grams


class EvalFileError(ValueError):
    """An eval file that cannot be used (one line: the file, the field and the fix)."""


def tokens(text: str) -> list[str]:
    """Normalised word tokens, one token per character of scripts written without spaces."""
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return _TOKEN.findall(text.casefold())


def _token_hash(t: str) -> int:
    h = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
    _TOKEN_CACHE[t] = h
    return h


def _token_hashes(toks: list[str]) -> np.ndarray:
    if len(_TOKEN_CACHE) > _TOKEN_CACHE_MAX:
        _TOKEN_CACHE.clear()
    hs = list(map(_TOKEN_CACHE.get, toks))
    if None in hs:
        hs = [_token_hash(t) if h is None else h for t, h in zip(toks, hs, strict=True)]
    return np.array(hs, dtype=np.uint64)


def window_hashes(h: np.ndarray, n: int) -> np.ndarray:
    """The distinct hashes of every n-token window of token hashes `h` (none if shorter)."""
    m = len(h) - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    acc = h[:m].copy()
    with np.errstate(over="ignore"):
        for j in range(1, n):
            acc = acc * _P + h[j : j + m]
    return np.unique(acc)


def _mostly_chars(toks: list[str]) -> bool:
    return len(toks) > 0 and 2 * sum(1 for t in toks if len(t) == 1 and _IS_CHAR.match(t)) >= len(
        toks
    )


def eval_name(path: str | Path) -> str:
    """An eval set's default name: the file name without its extensions (`gsm8k.jsonl.gz` -> gsm8k)."""
    name = Path(path).name
    for ext in (".gz", ".jsonl", ".json", ".ndjson", ".parquet"):
        name = name.removesuffix(ext)
    return name


def _rows(path: Path) -> tuple[list[dict], int]:
    """(rows, lines that are no JSON object) of a JSONL or Parquet eval file."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pylist(), 0
        except Exception as exc:  # noqa: BLE001 - any reader error is one line naming the file
            raise EvalFileError(
                f"{path}: not a readable Parquet eval file ({type(exc).__name__}: {exc}); "
                "write it with pyarrow or pass a JSONL file"
            ) from None
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    rows, bad = [], 0
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    bad += 1
                    continue
                if isinstance(obj, dict):
                    rows.append(obj)
                else:
                    bad += 1
    except OSError as exc:
        raise EvalFileError(
            f"{path}: cannot read the eval file ({exc.strerror or exc}); pass a readable JSONL "
            "or Parquet file to --decontaminate"
        ) from None
    return rows, bad


def _texts(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [str(value)]
    return []


@dataclass
class EvalStats:
    """What one eval set put into the index (the report's per-set figures)."""

    name: str
    path: str
    fields: list[str]
    items: int = 0
    items_indexed: int = 0
    items_too_short: int = 0  # fewer tokens than one n-gram: cannot be detected
    items_without_fields: int = 0
    bad_lines: int = 0
    ngrams: int = 0


@dataclass
class NgramIndex:
    """Sorted n-gram hashes with their eval set's number; `match(text)` looks a document up."""

    names: list[str]
    keys: np.ndarray  # sorted uint64
    sets: np.ndarray  # uint16, aligned with keys
    ngram: int
    ngram_chars: int
    stats: list[EvalStats] = field(default_factory=list)
    # A bit per low-24-bit value of the keys: a window whose bit is unset is in no eval set.
    bitmap: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.bitmap is None:
            self.bitmap = np.zeros(BITMAP_MASK + 1, dtype=bool)
            self.bitmap[self.keys & BITMAP_MASK] = True

    def match(self, text: str) -> tuple[int, dict[str, int]]:
        """(distinct n-grams of the text found in any eval set, {eval set: those in it})."""
        if not len(self.keys) or not text:
            return 0, {}
        toks = tokens(text)
        n = self.ngram
        if self.ngram_chars != self.ngram and _mostly_chars(toks):
            n = self.ngram_chars
        w = window_hashes(_token_hashes(toks), n)
        if len(w) and self.bitmap is not None:
            w = w[self.bitmap[w & BITMAP_MASK]]  # most windows end here, without a search
        if not len(w):
            return 0, {}
        lo = np.searchsorted(self.keys, w, side="left")
        found = self.keys[np.minimum(lo, len(self.keys) - 1)] == w
        if not found.any():
            return 0, {}
        hits, lo = w[found], lo[found]
        hi = np.searchsorted(self.keys, hits, side="right")
        # every (hit, eval set) pair: keys repeat only across sets, so a set counts once a hit
        span = hi - lo
        starts = np.repeat(lo - np.cumsum(span) + span, span)
        at = starts + np.arange(int(span.sum()))
        counts = np.bincount(self.sets[at], minlength=len(self.names))
        return len(hits), {self.names[i]: int(c) for i, c in enumerate(counts.tolist()) if c}


def build_index(cfg: DecontamConfig) -> NgramIndex:
    """Index the configured eval sets (errors: one line naming the file and the fix)."""
    names, keys, sets, stats = [], [], [], []
    seen: dict[str, str] = {}
    sizes = sorted({cfg.ngram, cfg.ngram_chars})
    for ev in cfg.evals:
        name = ev.name or eval_name(ev.path)
        if name in seen:
            raise EvalFileError(
                f"{ev.path}: eval set name {name!r} is also {seen[name]}'s; give one a `name` in "
                "decontamination.evals or rename the file"
            )
        seen[name] = ev.path
    for i, (ev, name) in enumerate(zip(cfg.evals, seen, strict=True)):
        path = Path(ev.path)
        if not path.is_file():
            raise EvalFileError(
                f"{path}: eval file not found (--decontaminate takes JSONL or Parquet files)"
            )
        st, h = _index_file(path, name, ev, cfg, sizes)
        if st.items and st.items_without_fields == st.items:
            raise EvalFileError(
                f"{path}: no item has any of the fields {', '.join(st.fields)}; name the eval's "
                "text fields in decontamination.fields (or this set's `fields`)"
            )
        names.append(name)
        stats.append(st)
        keys.append(h)
        sets.append(np.full(len(h), i, dtype=np.uint16))
    k = np.concatenate(keys) if keys else np.empty(0, dtype=np.uint64)
    s = np.concatenate(sets) if sets else np.empty(0, dtype=np.uint16)
    order = np.lexsort((s, k))
    return NgramIndex(names, k[order], s[order], cfg.ngram, cfg.ngram_chars, stats)


def _index_file(
    path: Path, name: str, ev: EvalSet, cfg: DecontamConfig, sizes: list[int]
) -> tuple[EvalStats, np.ndarray]:
    fields = list(ev.fields or cfg.fields)
    rows, bad = _rows(path)
    st = EvalStats(name, str(path), fields, items=len(rows), bad_lines=bad)
    parts: list[np.ndarray] = []
    for row in rows:
        texts = [t for f in fields if f in row for t in _texts(row[f])]
        if not texts:
            st.items_without_fields += 1
            continue
        h = _token_hashes(tokens("\n".join(texts)))
        if len(h) < min(sizes):
            st.items_too_short += 1
            continue
        st.items_indexed += 1
        parts.extend(window_hashes(h, n) for n in sizes)
    uniq = np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.uint64)
    st.ngrams = len(uniq)
    return st, uniq


_INDEX_CACHE: dict[str, tuple[tuple, NgramIndex]] = {}


def _signature(cfg: DecontamConfig) -> tuple:
    sig = []
    for ev in cfg.evals:
        p = Path(ev.path)
        try:
            st = p.stat()
            sig.append((str(p.resolve()), st.st_size, st.st_mtime_ns))
        except OSError:
            sig.append((str(p), None, None))
    return tuple(sig)


def load_index(cfg: DecontamConfig) -> NgramIndex:
    """The index of `cfg`'s eval sets, built once per process (rebuilt when a file changes)."""
    key = cfg.model_dump_json(exclude={"drop"})
    sig = _signature(cfg)
    hit = _INDEX_CACHE.get(key)
    if hit is not None and hit[0] == sig:
        return hit[1]
    index = build_index(cfg)
    _INDEX_CACHE[key] = (sig, index)
    return index


def with_evals(cfg: FilterConfig, paths: Sequence[str | Path]) -> FilterConfig:
    """`cfg` with eval files added to `decontamination.evals` (`refinery filter --decontaminate`)."""
    if not paths:
        return cfg
    cfg = cfg.model_copy(deep=True)
    known = {e.path for e in cfg.decontamination.evals}
    cfg.decontamination.evals += [EvalSet(path=str(p)) for p in paths if str(p) not in known]
    return cfg


class Decontaminator:
    """The step: a document's text -> (contaminated, benchmarks, matching n-grams)."""

    def __init__(self, cfg: DecontamConfig):
        self.cfg = cfg
        self.index = load_index(cfg)

    def check(self, text: str) -> tuple[bool, str | None, int]:
        """(contaminated, comma-joined eval sets with >= min_ngrams hits, distinct n-grams found)."""
        total, hits = self.index.match(text)
        names = sorted(k for k, v in hits.items() if v >= self.cfg.min_ngrams)
        return bool(names), ",".join(names) or None, total


def funnel_note(counts: dict) -> str:
    """The funnel's line on contamination: documents marked, per eval set and language."""
    by_set: dict[str, list[str]] = {}
    for name, lang, n in counts.get("contamination", []):
        by_set.setdefault(name, []).append(f"{lang} {n}")
    per = "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(by_set.items()))
    return (
        f"\nContaminated (shares n-grams with an eval set; dropped only with "
        f"decontamination.drop): {counts.get('contaminated_docs', 0)} documents"
        + (f" ({per})" if per else "")
        + "\n"
    )


def report(index: NgramIndex, cfg: DecontamConfig, counts: dict) -> dict:
    """decontamination.json: the settings and, per eval set, what it indexed and the documents it
    marked (`docs_hit`, per language in `docs_hit_by_lang`); `counts` are the run's counts."""
    by_set: dict[str, dict[str, int]] = {}
    for name, lang, n in counts.get("contamination", []):
        by_set.setdefault(name, {})[lang] = n
    evals = []
    for st in index.stats:
        langs = by_set.get(st.name, {})
        evals.append(
            {
                "name": st.name,
                "path": st.path,
                "fields": st.fields,
                "items": st.items,
                "items_indexed": st.items_indexed,
                "items_too_short": st.items_too_short,
                "items_without_fields": st.items_without_fields,
                "bad_lines": st.bad_lines,
                "ngrams_indexed": st.ngrams,
                "docs_hit": sum(langs.values()),
                "docs_hit_by_lang": dict(sorted(langs.items())),
            }
        )
    return {
        "ngram": cfg.ngram,
        "ngram_chars": cfg.ngram_chars,
        "min_ngrams": cfg.min_ngrams,
        "drop": cfg.drop,
        "docs_contaminated": counts.get("contaminated_docs", 0),
        "evals": evals,
    }
