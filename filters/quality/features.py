"""What the classifier reads: a document as one tokenised fastText line, plus layout tokens.

`fasttext_line` is the form both training (`filters.quality.fit`) and scoring
(`filters.quality.scorer`) use, so the two never disagree; POS and NEG are the label tokens of
a training line.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from filters.heuristics import is_char_lang, tokens

POS, NEG = "__label__hq", "__label__lq"
MAX_TOKENS = 1500


def fasttext_line(text: str, lang: str, shape: bool = False) -> str:
    """The one-line, tokenised form the classifier sees (characters for CJK-like languages).

    With `shape`, language-independent layout tokens are appended (see `shape_tokens`). Only the
    words are cut to MAX_TOKENS: the layout tokens read the whole text, else a long document's
    per-line figure would divide the cut count by every line (a Thai page, a token per
    character, would read as short lines).
    """
    if not unicodedata.is_normalized("NFC", text):  # a decomposed word is the composed one
        text = unicodedata.normalize("NFC", text)
    toks = tokens(text, lang)
    words = toks[:MAX_TOKENS]
    if shape and words:
        return " ".join(words + shape_tokens(text, lang, toks))
    return " ".join(words)


# Sentence-final punctuation (a line of prose ends with one): Latin and CJK, closing quotes, and
# the full stops and question marks of Devanagari and Bengali (danda), Arabic and Urdu, Armenian,
# Ethiopic, Burmese and Tibetan.
_SENTENCE_END = tuple(".!?。！？…:;」』）)\"'»”’\u0964\u0965\u061f\u06d4\u0589\u1362\u104b\u0f0d")


def _bucket(x: float, edges: Sequence[float]) -> int:
    return sum(x >= e for e in edges)


def shape_tokens(text: str, lang: str, toks: list[str] | None = None) -> list[str]:
    """Layout tokens that hold across languages and topics: tokens per line, share of lines
    ending a sentence, distinct-token ratio, length and repeated lines, each bucketed.

    Navigation dumps (short lines, no sentence ends), keyword spam (few distinct tokens),
    placeholder pages (short) and doorway pages (repeated templates) differ from prose in
    these whatever their words are; a model that has never seen a language's words (the
    multilingual fallback on Korean or Russian) still reads them. Each token is repeated in
    proportion to the document's length so its weight in fastText's average stays constant.

    `toks` are the whole text's tokens (default: tokenised here), never a cut list; the
    repetition counts at most the MAX_TOKENS words `fasttext_line` keeps.
    """
    toks = tokens(text, lang) if toks is None else toks
    lines = [s for s in (x.strip() for x in text.splitlines()) if s]
    if not toks or not lines:
        return []
    char = is_char_lang(lang)
    per_line = len(toks) / len(lines)
    ends = sum(s.endswith(_SENTENCE_END) for s in lines) / len(lines)
    window = toks[:400]
    distinct = len(set(window)) / len(window)
    dup = 1 - len(set(lines)) / len(lines)
    scale = 2 if char else 1  # CJK: about two characters per word
    feats = [
        f"__ll{_bucket(per_line, [x * scale for x in (3, 6, 12, 25)])}",
        f"__end{_bucket(ends, (0.2, 0.5, 0.8))}",
        f"__ttr{_bucket(distinct, (0.15, 0.3, 0.45, 0.6))}",
        f"__len{_bucket(len(toks), [x * scale for x in (30, 80, 200)])}",
        f"__dup{_bucket(dup, (0.05, 0.3))}",
    ]
    return feats * (1 + min(len(toks), MAX_TOKENS) // 40)
