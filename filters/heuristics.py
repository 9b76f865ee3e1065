"""Relaxed, per-language text heuristics; each rule has its own drop reason.

Line-level boilerplate (cookie banners, copyright lines, navigation words) is removed from the
text first; a document that is mostly boilerplate is dropped with reason `boilerplate`.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from common.words import CJK_CLASS, MARKS, WORD, WORD_CLASS
from filters.config import CHAR_LANGS, HeuristicsConfig

# Words are runs of common.words' word characters (letters, digits, "_", combining marks). A
# character token of a CJK-like language: a letter or digit with the marks that follow it
# (a Thai consonant and its vowel and tone marks).
_CHAR_TOKEN = re.compile(f"[^\\W_][{MARKS}]*")


def is_char_lang(lang: str) -> bool:
    """True for languages whose lengths and shingles count characters, not words."""
    return lang in CHAR_LANGS


def tokens(text: str, lang: str) -> list[str]:
    """Words for spaced languages (letters, digits and combining marks); for CJK-like ones, each
    letter or digit with its marks."""
    if is_char_lang(lang):
        return _CHAR_TOKEN.findall(text)
    return WORD.findall(text.lower())


DEFAULT_LEXICON_DIR = Path(__file__).with_name("boilerplate")
# Mojibake: UTF-8 bytes decoded as Latin-1 or cp1252 ("é" -> "Ã©", "’" -> "â€™"), plus U+FFFD.
_CP1252_HIGH = "€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ"
_MOJIBAKE = re.compile(f"[ÂÃ][\u0080-\u00bf{_CP1252_HIGH}]|â€[\u0080-\u00bf{_CP1252_HIGH}]?|\ufffd")


@lru_cache(maxsize=64)
def _patterns(patterns: tuple[str, ...]) -> list[re.Pattern[str]]:
    return [re.compile(p) for p in patterns]


@lru_cache(maxsize=64)
def load_lexicon(directory: str, lang: str) -> tuple[re.Pattern[str], ...]:
    """Compiled boilerplate patterns of one language (`<dir>/<lang>.txt`; none if absent)."""
    path = Path(directory or DEFAULT_LEXICON_DIR) / f"{lang}.txt"
    if directory and not Path(directory).is_dir():
        raise FileNotFoundError(
            f"heuristics.boilerplate_lexicon_dir {directory} does not exist; "
            "set it to a directory of <lang>.txt regex files or leave it empty"
        )
    if not path.exists():
        return ()
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            out.append(re.compile(line.strip(), re.IGNORECASE))
        except re.error as exc:
            raise ValueError(f"{path}:{n}: invalid regular expression: {exc}") from exc
    return tuple(out)


# The re module's \s is str.isspace and \w is str.isalnum plus "_", character for character
# (tests/filters/test_heuristics.py checks every code point): counting with them runs in C
# instead of a Python call per character.
_SPACE = re.compile(r"\s")
# Punctuation that prose is written with: ASCII's and CJK's, typographic quotes and dashes,
# Spanish's inverted marks, and the sentence and clause marks of Devanagari and Bengali (danda),
# Arabic and Urdu, Hebrew, Armenian, Ethiopic, Burmese (and its particle signs, such as the
# genitive) and Tibetan (whose tsheg ends every syllable). Anything else that is not a word
# character or space counts as a symbol.
_PUNCT_OK = (
    ".,;:!?'\"()-–—…、。，！？「」『』（）：；·%/"
    "‘’‚“”„«»‹›¿¡"
    "\u0964\u0965\u060c\u061b\u061f\u06d4\u05be\u05f3\u05f4\u0387"
    "\u0589\u055d\u1362\u1363\u1364\u104a\u104b\u104c\u104d\u104e\u104f\u0f0b\u0f0d\u30fb《》〈〉【】"
)
_ODD = re.compile(f"[^\\s{WORD_CLASS}{re.escape(_PUNCT_OK)}]|_")


def non_space_chars(text: str) -> int:
    """Characters of `text` that are not whitespace (str.isspace)."""
    return len(_SPACE.sub("", text))


def mojibake_ratio(text: str) -> float:
    """Share of non-space characters inside mojibake sequences or replacement characters."""
    chars = non_space_chars(text)
    if not chars:
        return 0.0
    return sum(len(m.group()) for m in _MOJIBAKE.finditer(text)) / chars


def strip_boilerplate(
    text: str, cfg: HeuristicsConfig, lang: str | None = None
) -> tuple[str, int, int]:
    """Drop boilerplate lines (config patterns, plus the lexicon of `lang` if given and enabled);
    return (clean text, lines kept, lines removed)."""
    pats = _patterns(tuple(cfg.boilerplate_patterns))
    if lang and cfg.boilerplate_lexicon:
        pats = [*pats, *load_lexicon(cfg.boilerplate_lexicon_dir, lang)]
    kept: list[str] = []
    removed = 0
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        # Only short lines count as boilerplate: a long paragraph mentioning cookies is content.
        if len(s) < 200 and any(p.search(s) for p in pats):
            removed += 1
            continue
        kept.append(s)
    return "\n".join(kept), len(kept), removed


def symbol_ratio(text: str) -> float:
    """Share of non-space characters that are neither letters, digits nor common punctuation."""
    chars = non_space_chars(text)
    if not chars:
        return 0.0
    return len(_ODD.findall(text)) / chars


def dup_line_frac(text: str) -> float:
    """Share of characters in lines that repeat an earlier line (Gopher's dup_line_char_frac)."""
    lines = [s for s in (x.strip() for x in text.splitlines()) if s]
    total = sum(len(s) for s in lines)
    if not total:
        return 0.0
    seen: set[str] = set()
    dup = 0
    for s in lines:
        if s in seen:
            dup += len(s)
        seen.add(s)
    return dup / total


def top_ngram_frac(toks: list[str], n: int) -> float:
    """Share of token characters covered by the most frequent n-gram (Gopher's top n-gram rule)."""
    if len(toks) < n + 1:
        return 0.0
    grams = Counter(zip(*(toks[i:] for i in range(n)), strict=False))  # n-grams, text order
    gram, count = grams.most_common(1)[0]
    if count < 2:
        return 0.0
    total = sum(len(t) for t in toks)
    return min(1.0, count * sum(len(t) for t in gram) / max(1, total))


def check(text: str, lang: str, cfg: HeuristicsConfig) -> tuple[str, str | None]:
    """Apply the rules to one document; return (boilerplate-stripped text, drop reason or None)."""
    clean, kept_lines, removed = strip_boilerplate(text, cfg, lang)
    if kept_lines + removed and removed / (kept_lines + removed) > cfg.max_boilerplate_line_frac:
        return clean, "boilerplate"
    if mojibake_ratio(clean) > cfg.max_mojibake_ratio:
        return clean, "encoding_errors"
    toks = tokens(clean, lang)
    if is_char_lang(lang):
        if len(toks) < cfg.min_chars_cjk:
            return clean, "too_short"
    elif len(toks) < cfg.min_words:
        return clean, "too_short"
    if len(toks) > cfg.max_words:
        return clean, "too_long"
    if symbol_ratio(clean) > cfg.max_symbol_ratio:
        return clean, "symbol_ratio"
    if dup_line_frac(clean) > cfg.max_dup_line_frac:
        return clean, "repeated_lines"
    n = cfg.dup_ngram_n if not is_char_lang(lang) else cfg.dup_ngram_n + 2
    if top_ngram_frac(toks, n) > cfg.max_dup_ngram_frac:
        return clean, "repeated_ngrams"
    return clean, None


# The end of a sentence: terminal punctuation of the common scripts (Latin and Cyrillic, CJK full
# width, Devanagari danda, Arabic and Urdu, Armenian, Ethiopic, Burmese, Tibetan, the ellipsis),
# or a colon or semicolon (a line leading into a list or code), optionally inside closing quotes
# or brackets.
_SENTENCE_END = re.compile(
    r"[.!?;:\u2026\u3002\uff01\uff1f\uff1b\uff1a\u0964\u0965\u061f\u06d4\u0589\u1362\u104b\u0f0d]"
    r"[\"'\u2019\u201d\u00bb\u300d\u300f\uff09)\]]*\s*$"
)


# A sentence ending inside a line: terminal punctuation (optionally in closing quotes or brackets)
# then a space and more text, or a full-width one of CJK then more text.
_INNER_END = re.compile(
    r"[.!?\u2026\u0964\u061f\u06d4\u0589][\"'\u2019\u201d\u00bb)\]]*\s+(?=\S)|[\u3002\uff01\uff1f](?=\S)"
)
_PROSE_LINE = 100  # width of a line whose inner sentence ends make it prose (CJK counts twice)
_WIDE = re.compile(f"[{CJK_CLASS}]")


def _has_sentences(line: str) -> bool:
    """A line ends a sentence, or is a paragraph with two sentence ends inside it (a film's
    synopsis that ends on its cast list is prose, not keywords)."""
    if _SENTENCE_END.search(line):
        return True
    if len(line) + len(_WIDE.findall(line)) < _PROSE_LINE:
        return False
    return len(_INNER_END.findall(line)) >= 2


def no_sentences(text: str, lang: str, cfg: HeuristicsConfig) -> bool:
    """True when the text has at least `cfg.min_lines_no_sentences` lines (table rows aside) and
    not one holds a sentence (`_has_sentences`): a keyword list or a page of links, whatever the
    language."""
    if cfg.min_lines_no_sentences <= 0 or lang in cfg.no_sentences_exempt:
        return False
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not (ln.startswith("|") and ln.endswith("|"))]
    if len(lines) < cfg.min_lines_no_sentences:
        return False
    return not any(_has_sentences(ln) for ln in lines)


def gopher_baseline(text: str, lang: str = "en") -> str | None:
    """Strict Gopher-style rules (Rae et al. 2021): the heuristics-only baseline in bench."""
    if is_char_lang(lang):
        # Gopher has no CJK rules; apply its length and repetition rules over characters.
        chars = tokens(text, lang)
        if len(chars) < 100:
            return "gopher_length"
        if dup_line_frac(text) > 0.2:
            return "gopher_dup_lines"
        return "gopher_top_ngram" if top_ngram_frac(chars, 4) > 0.2 else None
    words = WORD.findall(text)
    n = len(words)
    if n < 50 or n > 100_000:
        return "gopher_length"
    mean_len = sum(len(w) for w in words) / n
    if not 3 <= mean_len <= 10:
        return "gopher_mean_word_length"
    if text.count("#") + text.count("...") > 0.1 * n:
        return "gopher_symbol_ratio"
    lines = [s for s in text.splitlines() if s.strip()]
    if lines and sum(1 for s in lines if s.strip().startswith(("•", "-", "*"))) > 0.9 * len(lines):
        return "gopher_bullets"
    alpha = sum(1 for w in words if any(c.isalpha() for c in w))
    if alpha < 0.8 * n:
        return "gopher_alpha"
    stop = {"the", "be", "to", "of", "and", "that", "have", "with"}
    if lang == "en" and sum(1 for w in words if w.lower() in stop) < 2:
        return "gopher_stop_words"
    if dup_line_frac(text) > 0.2:
        return "gopher_dup_lines"
    toks = [w.lower() for w in words]
    if top_ngram_frac(toks, 2) > 0.2 or top_ngram_frac(toks, 3) > 0.18:
        return "gopher_top_ngram"
    return None
