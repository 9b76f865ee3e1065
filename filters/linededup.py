"""Line de-duplication across documents: lines (our paragraphs) that many documents share are
boilerplate trafilatura left (cookie notices, sign-up boxes, "related articles" blocks) and are
removed from every document that has them (CCNet's and Dolma's paragraph de-duplication).

A line is one line of the `text` column: extraction writes one paragraph, list item or table
row per line. Its key is exact after normalisation (`normalise`): lowercase, every run of
Unicode whitespace one space, invisible format characters gone, every digit `0` (CCNet's
`normalize_for_dedup`, without its punctuation removal). A line is repeated when at least
`threshold` distinct documents contain it: a document counts once however often it repeats the
line, and byte-identical documents (the same normalised lines: one page under several URLs)
count once, so a page crawled twenty times is left to the exact de-duplication instead of
losing every line. Markdown table rows and image placeholders are never removed: a table row
or an image that recurs is content (and removing the `|---|` row would break the table).

Two sharded passes, like the MinHash de-duplication (`filters.dedup_shards`), no task holding
the corpus:

1. per chunk, `line_pairs`: the distinct (line key, document key) pairs of its rows; `route`
   sends each pair to the shard of its line key; per shard, `repeated_lines` counts documents
   per line and sends each chunk the repeated keys it has;
2. per chunk, `annotate_row` removes the repeated lines before the row is annotated, records
   `repeated_chars_removed`, and names a document left too short `repeated_boilerplate`.

It runs before the annotation, so language ID, the heuristics, the quality model and the MinHash
de-duplication all see the text without cross-site chrome (CCNet de-duplicates paragraphs before
language ID for that reason), and copies of an article that differ only in their sites'
boilerplate meet as near duplicates.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from hashlib import blake2b

import numpy as np
import pyarrow as pa

from filters import heuristics
from filters.config import LineDedupConfig

REASON = "repeated_boilerplate"
# The filter's output column: characters of the lines removed (line breaks not counted).
COLUMNS: dict[str, pa.DataType] = {"repeated_chars_removed": pa.int64()}
# Drop reasons of a remainder that is too short to judge; the original decides (`_settle`).
_LEFT_SHORT = frozenset({"empty_text", "unsupported_language", "low_lang_score", "too_short"})

_DIGIT = re.compile(r"\d")
# Format characters that render as nothing (soft hyphen, zero-width space/joiners, marks, BOM).
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")
_IMAGES = re.compile(r"(?:!\[[^\]]*\]\([^)]*\)\s*)+")


def normalise(line: str) -> str:
    """The line's key text: lowercase, whitespace runs as one space, digits as 0."""
    s = _DIGIT.sub("0", line.lower())
    if not s.isascii():
        s = _INVISIBLE.sub("", s)
    return " ".join(s.split())  # str.split() splits on every Unicode whitespace


def is_kept_always(stripped: str) -> bool:
    """Markdown table rows and image placeholders (`![alt](src)`, `<|image|>`) stay."""
    return stripped.startswith("|") or "<|image" in stripped or bool(_IMAGES.fullmatch(stripped))


def _key(norm: str) -> int:
    return int.from_bytes(blake2b(norm.encode(), digest_size=8).digest(), "little")


def line_keys(text: str) -> tuple[list[int], list[int]]:
    """(keys of the lines that may be removed, keys of every non-blank line in order)."""
    removable, every = [], []
    for line in text.splitlines():
        norm = normalise(line)
        if not norm:
            continue
        k = _key(norm)
        every.append(k)
        if not is_kept_always(line.strip()):
            removable.append(k)
    return removable, every


def doc_key(every: list[int]) -> int:
    """One key per distinct normalised document (its line keys in order)."""
    digest = blake2b(np.asarray(every, dtype=np.uint64).tobytes(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


_PAIR = np.dtype([("line", "<u8"), ("doc", "<u8")])


def line_pairs(texts: Iterable[str | None]) -> np.ndarray:
    """The distinct (line key, document key) pairs of some documents (structured uint64)."""
    lines: list[int] = []
    docs: list[int] = []
    for text in texts:
        removable, every = line_keys(text or "")
        if not removable:
            continue
        d = doc_key(every)
        distinct = set(removable)
        lines.extend(distinct)
        docs.extend([d] * len(distinct))
    pairs = np.empty(len(lines), dtype=_PAIR)
    pairs["line"], pairs["doc"] = lines, docs
    return np.unique(pairs)


def threshold(cfg: LineDedupConfig, n_docs: int) -> int:
    """Documents a line must be in to be removed: the corpus share, within the floor and cap."""
    t = max(cfg.min_docs, math.ceil(cfg.min_doc_share * n_docs))
    return t if cfg.max_docs is None else max(cfg.min_docs, min(cfg.max_docs, t))


def route(batch: tuple[int, np.ndarray], shards: int) -> list[tuple[int, tuple[int, np.ndarray]]]:
    """A chunk's pairs -> (shard of the line key, (chunk, pairs)) messages."""
    chunk, pairs = batch
    shard_of = pairs["line"] % np.uint64(shards)
    return [
        (s, (chunk, pairs[shard_of == s]))
        for s in range(shards)
        if np.any(shard_of == np.uint64(s))
    ]


def repeated_lines(
    shard: int, payloads: Iterable[tuple[int, np.ndarray]], threshold: int
) -> list[tuple[int, np.ndarray]]:
    """One shard's lines: those in >= threshold distinct documents, to the chunks that have them.

    Returns (chunk, sorted repeated keys) for each chunk with at least one.
    """
    payloads = list(payloads)
    if not payloads:
        return []
    pairs = np.unique(np.concatenate([p for _, p in payloads]))
    keys, counts = np.unique(pairs["line"], return_counts=True)
    repeated = keys[counts >= threshold]
    out = []
    by_chunk: dict[int, list[np.ndarray]] = defaultdict(list)
    for chunk, p in payloads:
        by_chunk[chunk].append(p["line"])
    for chunk in sorted(by_chunk):
        mine = np.intersect1d(np.concatenate(by_chunk[chunk]), repeated)
        if len(mine):
            out.append((chunk, mine))
    return out


def run_in_memory(
    batches: Iterable[tuple[int, np.ndarray]], shards: int, threshold: int
) -> dict[int, np.ndarray]:
    """Both steps in this process: chunk pairs -> the repeated keys of each chunk."""
    grouped: dict[int, list] = defaultdict(list)
    for batch in batches:
        for shard, payload in route(batch, shards):
            grouped[shard].append(payload)
    found: dict[int, list[np.ndarray]] = defaultdict(list)
    for shard in sorted(grouped):
        for chunk, keys in repeated_lines(shard, grouped[shard], threshold):
            found[chunk].append(keys)
    return {c: np.concatenate(v) for c, v in found.items()}


def strip_repeated(text: str, repeated: set[int]) -> tuple[str, int]:
    """The text without its repeated lines (other lines byte for byte, their line breaks
    kept) and the characters removed."""
    if not repeated or not text:
        return text, 0
    kept: list[str] = []
    removed = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        norm = normalise(body)
        if norm and not is_kept_always(body.strip()) and _key(norm) in repeated:
            removed += len(body)
            continue
        kept.append(line)
    return "".join(kept), removed


def _passes_basics(text: str, annotator) -> bool:
    """Would `text` pass the checks a short remainder fails: language and length."""
    cfg = annotator.cfg
    if not text.strip():
        return False
    lang, score = annotator.language(text)
    if lang not in cfg.languages or score < cfg.min_lang_score:
        return False
    hcfg = cfg.heuristics_for(lang)
    clean, _, _ = heuristics.strip_boilerplate(text, hcfg, lang)
    n = len(heuristics.tokens(clean, lang))
    return n >= (hcfg.min_chars_cjk if heuristics.is_char_lang(lang) else hcfg.min_words)


def annotate_row(row: dict, annotator, repeated: set[int]) -> dict:
    """Remove the row's repeated lines, annotate it, and settle why a short remainder drops.

    A remainder failing a length or language check the original passed is dropped as
    `repeated_boilerplate`; when the original would have failed it too, the original is
    annotated instead (nothing removed), so such a row reads as it did without this step.
    """
    original = row.get("text") or ""
    text, removed = strip_repeated(original, repeated) if isinstance(original, str) else ("", 0)
    if not removed:
        out = annotator.annotate(row)
        out["repeated_chars_removed"] = 0
        return out
    out = annotator.annotate({**row, "text": text})
    out["repeated_chars_removed"] = removed
    if out["drop_reason"] in _LEFT_SHORT:
        if _passes_basics(original, annotator):
            out["drop_reason"] = REASON
        else:
            out = annotator.annotate(row)
            out["repeated_chars_removed"] = 0
    return out


def chunk_repeated(values: Iterable[tuple[str, object]]) -> tuple[object, set[int]]:
    """A chunk's grouped values on Beam, ("chunk", chunk) and ("lines", keys) -> (chunk, keys)."""
    chunk, keys = None, set()
    for tag, v in values:
        if tag == "chunk":
            chunk = v
        else:
            keys.update(np.asarray(v).tolist())
    return chunk, keys
