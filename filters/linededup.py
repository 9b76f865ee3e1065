"""Line de-duplication across documents: lines (our paragraphs) that many documents share are
boilerplate trafilatura left (cookie notices, sign-up boxes, "related articles" blocks) and are
removed from every document that has them (CCNet's and Dolma's paragraph de-duplication).

A line is one line of the `text` column: extraction writes one paragraph, list item or table
row per line. Its key is exact after normalisation (`normalise`): lowercase, every run of
Unicode whitespace one space, invisible format characters gone, and on a long line every digit
`0` (CCNet's `normalize_for_dedup`, without its punctuation removal; a short line keeps its
numbers: "2 eggs" is not "3 eggs"). A line is repeated when at least `threshold` distinct
documents contain it: a document counts once however often it repeats the line, and documents
with the same normalised lines, digits folded (one page under several URLs, a calendar's
months), count once, so a page crawled twenty times is left to the exact de-duplication instead
of losing every line. Markdown table rows, image placeholders and code (`kept_lines`: fenced
and indented blocks, lines that read as code) are never removed: a table row, an image or a
program that recurs is content (and removing the `|---|` row would break the table).

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

from common.words import CJK_CLASS
from filters import heuristics
from filters.config import LineDedupConfig

REASON = "repeated_boilerplate"
# The filter's output column: characters of the lines removed (line breaks not counted).
COLUMNS: dict[str, pa.DataType] = {"repeated_chars_removed": pa.int64()}
# Drop reasons of a remainder that is too short to judge; the original decides (`_settle`).
_LEFT_SHORT = frozenset({"empty_text", "unsupported_language", "low_lang_score", "too_short"})

_DIGIT = re.compile(r"\d")
# Format characters that render as nothing: soft hyphen, Arabic letter mark, Mongolian vowel
# separator, zero-width space/joiners, direction marks, embeddings and isolates, word joiner and
# invisible operators, BOM. The one set every key and matching view of `filters` strips
# (`filters.dedup.normalise`, `filters.safety.matching_view`).
INVISIBLE_CHARS = "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
INVISIBLE = re.compile(f"[{INVISIBLE_CHARS}]")
_IMAGES = re.compile(r"(?:!\[[^\]]*\]\([^)]*\)\s*)+")
# A line folds its digits only from this many words on (a CJK character counts as a word): in
# a long line a number is incidental (a banner's partner count, a date), in a short one it is
# often the content ("2 cups flour", "Page 3", a score, a price).
FOLD_DIGITS_WORDS = 10
_CJK = re.compile(f"[{CJK_CLASS}]")
# Lines that read as program code (kept, `is_kept_always`): a statement end or a brace last (an
# HTML entity's ";" aside), or at the start a C preprocessor directive or shebang, a Python
# def/class header, an import, or a call statement or assignment whose name starts lower case.
# Deliberately narrow: prose and site chrome rarely end in ; { } or start so.
_CODE_END = (";", "{", "}")
_ENTITY_END = re.compile(r"&#?\w+;$")
_CODE_START = re.compile(
    r"""(?x)
    \#\s*(?:include|define|undef|import|pragma|if|ifdef|ifndef|elif|else|endif)\b
    | \#!/
    | (?:async\s+)?(?:def|class)\s+\w+.*:$
    | import\s+[\w.]+(?:\s+as\s+\w+)?$
    | from\s+[\w.]+\s+import\s
    | [a-z_][\w.]*\(.*\)$
    | [a-z_][\w.]*(?:\[[^\]]*\])?\s*[-+*/%|&^]?=(?!=)\s*\S
    """
)
_FENCE = re.compile(r"(?:```|~~~)")


def _normalised(line: str) -> tuple[str, str]:
    """(the line's key text, the same with every digit 0)."""
    s = line.lower()
    if not s.isascii():
        s = INVISIBLE.sub("", s)
    words = s.split()  # str.split() splits on every Unicode whitespace
    s = " ".join(words)
    folded = _DIGIT.sub("0", s)
    if folded == s:
        return s, s
    n = len(words)
    if n < FOLD_DIGITS_WORDS and not s.isascii():
        n += len(_CJK.findall(s))
    return (folded if n >= FOLD_DIGITS_WORDS else s), folded


def normalise(line: str) -> str:
    """The line's key text: lowercase, whitespace runs as one space, invisible characters gone,
    digits as 0 on a line of at least `FOLD_DIGITS_WORDS` words."""
    return _normalised(line)[0]


def is_kept_always(stripped: str) -> bool:
    """Markdown table rows, image placeholders (`![alt](src)`, `<|image|>`) and lines that read
    as code stay."""
    return (
        stripped.startswith("|")
        or "<|image" in stripped
        or bool(_IMAGES.fullmatch(stripped))
        or _looks_like_code(stripped)
    )


def _looks_like_code(stripped: str) -> bool:
    if stripped.endswith(_CODE_END):
        return not _ENTITY_END.search(stripped)
    return bool(_CODE_START.match(stripped))


def kept_lines(lines: list[str]) -> list[bool]:
    """Which of a text's lines are never removed: `is_kept_always`, and every line of a code
    block (a fenced one, ``` or ~~~ to its closing fence or the end, and an indented one: a
    tab or four spaces first)."""
    out, fenced = [], False
    for line in lines:
        stripped = line.strip()
        if _FENCE.match(stripped):
            out.append(True)
            fenced = not fenced
            continue
        indented = line.startswith(("\t", "    ")) and bool(stripped)
        out.append(fenced or indented or is_kept_always(stripped))
    return out


def _key(norm: str) -> int:
    return int.from_bytes(blake2b(norm.encode(), digest_size=8).digest(), "little")


def line_keys(text: str) -> tuple[list[int], list[int]]:
    """(keys of the lines that may be removed, digit-folded keys of every non-blank line in
    order: the document's identity, so pages differing only in their numbers count once)."""
    removable, every = [], []
    lines = text.splitlines()
    for line, kept in zip(lines, kept_lines(lines), strict=True):
        norm, folded = _normalised(line)
        if not norm:
            continue
        k = _key(norm)
        every.append(k if folded == norm else _key(folded))
        if not kept:
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
    out: list[str] = []
    removed = 0
    lines = text.splitlines(keepends=True)
    bodies = [line.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029") for line in lines]
    for line, body, kept in zip(lines, bodies, kept_lines(bodies), strict=True):
        norm = "" if kept else normalise(body)
        if norm and _key(norm) in repeated:
            removed += len(body)
            continue
        out.append(line)
    return "".join(out), removed


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
