"""Unsafe-content and profanity filtering with replaceable per-language word lists.

The transparent fallback of the safety step: by default (`safety.wordlists: fallback`) a list
judges only the languages that `filters.toxicity`'s classifiers do not cover for every kind.

A list is `<dir>/<lang>.txt` (one term per line, `#` comments). Spaced languages match whole
words/phrases; character languages (zh, ja, ...) match substrings. A document is dropped
(`unsafe_content`) when it has at least `min_flagged` hits and they make up more than
`max_flagged_ratio` of its tokens, so one stray swear word in a long article is kept.
"""

from __future__ import annotations

import re
from pathlib import Path

from filters.config import SafetyConfig
from filters.heuristics import is_char_lang, tokens

DEFAULT_WORDLIST_DIR = Path(__file__).with_name("wordlists")


def load_wordlist(path: Path) -> list[str]:
    """Read one word list: lower-cased terms, comments and blank lines skipped."""
    terms = []
    for line in path.read_text(encoding="utf-8").splitlines():
        term = line.split("#", 1)[0].strip().lower()
        if term:
            terms.append(term)
    return terms


class SafetyFilter:
    """Counts word-list hits per document for the languages that have a list."""

    def __init__(self, cfg: SafetyConfig):
        self.cfg = cfg
        self.dir = Path(cfg.wordlist_dir) if cfg.wordlist_dir else DEFAULT_WORDLIST_DIR
        if not self.dir.is_dir():
            raise FileNotFoundError(
                f"safety.wordlist_dir {self.dir} does not exist; set it to a directory of <lang>.txt"
            )
        self._patterns: dict[str, re.Pattern[str] | None] = {}

    def languages(self) -> list[str]:
        """Languages that have a word list."""
        return sorted(p.stem for p in self.dir.glob("*.txt"))

    def has_list(self, lang: str) -> bool:
        """Whether `lang` has a non-empty word list."""
        return self._pattern(lang) is not None

    def _pattern(self, lang: str) -> re.Pattern[str] | None:
        if lang not in self._patterns:
            path = self.dir / f"{lang}.txt"
            terms = load_wordlist(path) if path.exists() else []
            if not terms:
                self._patterns[lang] = None
            else:
                alts = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
                body = f"(?:{alts})" if is_char_lang(lang) else rf"(?<!\w)(?:{alts})(?!\w)"
                self._patterns[lang] = re.compile(body)
        return self._patterns[lang]

    def hits(self, text: str, lang: str) -> int:
        """Number of word-list hits in a text (0 when the language has no list)."""
        pat = self._pattern(lang)
        return len(pat.findall(text.lower())) if pat else 0

    def check(self, text: str, lang: str) -> str | None:
        """Drop reason `unsafe_content`, or None."""
        n = self.hits(text, lang)
        if n < self.cfg.min_flagged:
            return None
        total = max(1, len(tokens(text, lang)))
        return "unsafe_content" if n / total > self.cfg.max_flagged_ratio else None
