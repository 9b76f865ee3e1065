"""Unsafe-content and profanity filtering with replaceable per-language word lists.

The transparent fallback of the safety step: by default (`safety.wordlists: fallback`) a list
judges only the languages that `filters.toxicity`'s classifiers do not cover for every kind.

A list is `<dir>/<lang>.txt` (one term per line, `#` comments). Spaced languages match whole
words/phrases; character languages (zh, ja, ...) match substrings. A line `!<text>` is an
exclusion: ordinary text holding a term (`!死ねない`, "cannot die", for the term `死ね`, "die!")
that is read as one piece, so the term inside it is no hit. A document is dropped
(`unsafe_content`) when it has at least `min_flagged` hits and they make up more than
`max_flagged_ratio` of its tokens, so one stray swear word in a long article is kept.

Lists and classifiers (`filters.toxicity.windows`) read one matching view of the text
(`matching_view`), never the stored text: invisible characters gone (`linededup.INVISIBLE`: a
zero-width space or soft hyphen inside a word leaves one word), compatibility letters plain
(NFKC: full-width, mathematical, circled letters, ligatures), composed (NFC), and inside a word
that mixes scripts the look-alike letters read in the script of the text's language (Latin
"pаypаl" with a Cyrillic "а" is "paypal"; in Russian, "сукa" with a Latin "a" is "сука"); words
of one script are left as they are. The lists also fold case (`casefold`) and whitespace runs
inside a phrase, and read a term written without marks on the text with the marks of Latin
letters dropped (`strip_latin_marks`: "fúcking" is "fucking"), a term written with marks as
written ("coño" is not "cono").
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from common.words import WORD_CLASS
from filters.config import SafetyConfig
from filters.heuristics import is_char_lang, tokens
from filters.linededup import INVISIBLE, INVISIBLE_CHARS

DEFAULT_WORDLIST_DIR = Path(__file__).with_name("wordlists")

# Cyrillic and Greek letters that look like Latin ones, in the spirit of Unicode's confusables
# (UTS #39), as an explicit table: capitals by their capital look, small letters by theirs.
CONFUSABLES = {
    **dict(zip("АВЕЅІЈКМНОРСТХУԚԜӀ", "ABESIJKMHOPCTXYQWI", strict=True)),
    **dict(zip("аеѕіјорсхуһԁԛԝӏвкмнт", "aesijopcxyhdqwlbkmht", strict=True)),
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),
    **dict(zip("αικνορυχγ", "aikvopuxy", strict=True)),
}
# The other way, for text in a Cyrillic or a Greek language: Latin look-alikes of its letters.
LATIN_LOOKALIKES = {
    "Cyrl": dict(zip("ABEKMHOPCTXYaeopcxyijs", "АВЕКМНОРСТХУаеорсхуіјѕ", strict=True)),
    "Grek": dict(zip("ABEZHIKMNOPTYXaoikvpuxy", "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧαοικνρυχγ", strict=True)),
}
CYRILLIC_LANGS = frozenset({"ru", "uk", "be", "bg", "sr", "mk", "kk", "ky", "tg", "mn", "ba", "tt"})
_LATIN = "A-Za-z\u00c0-\u024f\u1e00-\u1eff"
_LETTERS = {"Latn": _LATIN, "Cyrl": "\u0400-\u052f", "Grek": "\u0370-\u03ff\u1f00-\u1fff"}


class _Lookalikes(NamedTuple):
    present: re.Pattern[str]  # any look-alike of another script
    mixed: re.Pattern[str]  # a word with a letter of the script and a look-alike
    table: dict[int, str]


def _lookalikes(script: str) -> _Lookalikes:
    table = CONFUSABLES if script == "Latn" else LATIN_LOOKALIKES[script]
    chars, w = "".join(table), WORD_CLASS
    mixed = f"(?<![{w}])(?=[{w}]*?[{_LETTERS[script]}])(?=[{w}]*?[{chars}])[{w}]+"
    return _Lookalikes(re.compile(f"[{chars}]"), re.compile(mixed), str.maketrans(table))


_BY_SCRIPT = {script: _lookalikes(script) for script in _LETTERS}


def script_of(lang: str | None) -> str:
    """The script a language's look-alikes are read in: Cyrillic, Greek, else Latin."""
    return "Cyrl" if lang in CYRILLIC_LANGS else "Grek" if lang == "el" else "Latn"


# Marks left on a Latin letter once composed (NFC): those with no precomposed form ("q́"), from
# the blocks of combining marks Latin uses (diacritical marks, their extensions and supplement,
# marks for symbols, half marks).
_LATIN_COMBINING = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_LEFTOVER_MARKS = re.compile(f"(?<=[{_LATIN}])[{_LATIN_COMBINING}]+")
_COMBINING = re.compile(f"[{_LATIN_COMBINING}]")
_WS = re.compile(r"\s+")


# Compatibility letters and digits that NFKC makes plain ones: full-width Latin letters and
# digits, half-width katakana, ligatures (ﬁ), super- and subscripts and modifier letters,
# letterlike symbols (ℌ), Roman numerals, enclosed, squared and mathematical letters (ⓕ, 🄵, 𝐟),
# digraphs (ǆ) and the long s. Full-width punctuation is left alone (CJK text is full of it).
_COMPAT_CHARS = (
    "\u00aa\u00b2\u00b3\u00b9\u00ba\u017f\u01c4-\u01cc\u01f1-\u01f3\u02b0-\u02b8"
    "\u1d2c-\u1d6a\u2070-\u209c\u2100-\u214f\u2160-\u2188\u2460-\u24ff\ufb00-\ufb06"
    "\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff66-\uff9f"
)
_COMPAT = re.compile(f"[{_COMPAT_CHARS}\U0001d400-\U0001d7ff\U0001f100-\U0001f1ff]+")
# Whatever the first steps of the view change: one scan finds whether there is any.
_TO_CLEAN = re.compile(f"[{INVISIBLE_CHARS}{_COMPAT_CHARS}\U00010000-\U0010ffff]")


def _nfkc(m: re.Match[str]) -> str:
    return unicodedata.normalize("NFKC", m[0])


def matching_view(text: str, lang: str | None = None) -> str:
    """The text as the word lists and classifiers read it: invisible characters removed,
    compatibility letters as plain ones (NFKC of `_COMPAT`), composed (NFC), and inside a word
    that mixes scripts the look-alike letters in the script of `lang` (`script_of`: Latin
    unless the language is written in Cyrillic or Greek). Never stored."""
    return text if text.isascii() else _view(text, script_of(lang))


@lru_cache(maxsize=4)  # the classifiers and the word lists read the same text in turn
def _view(text: str, script: str) -> str:
    if _TO_CLEAN.search(text):
        text = _COMPAT.sub(_nfkc, INVISIBLE.sub("", text))
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    look = _BY_SCRIPT[script]
    if look.present.search(text):
        text = look.mixed.sub(lambda m: m[0].translate(look.table), text)
    return text


@lru_cache(maxsize=16)
def _plain_letters(keep: str) -> tuple[re.Pattern[str], dict[str, str]]:
    """The precomposed Latin letters with marks but those in `keep`, and their base letters."""
    table = {}
    for cp in itertools.chain(range(0xC0, 0x250), range(0x1E00, 0x1F00)):
        decomposed = unicodedata.normalize("NFD", chr(cp))
        if len(decomposed) > 1 and chr(cp) not in keep:
            table[chr(cp)] = decomposed[0]
    return re.compile(f"[{''.join(table)}]"), table


def strip_latin_marks(text: str, keep: str = "") -> str:
    """The text without the combining marks on Latin letters (accents, umlauts, cedillas), but
    on the letters in `keep` (a language's own: German's umlauts); the marks of other scripts
    (Cyrillic й, Devanagari vowel signs, Arabic harakat) stay."""
    if text.isascii():
        return text
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    marked, base = _plain_letters(keep)
    text = marked.sub(lambda m: base[m[0]], text)
    return _LEFTOVER_MARKS.sub("", text) if _COMBINING.search(text) else text


def _read_list(path: Path) -> tuple[list[str], list[str]]:
    """Terms and exclusions (`!` lines) of one word list, each case-folded in its language's
    matching view, whitespace runs as one space, comments and blank lines skipped."""
    terms, exclusions = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = line.split("#", 1)[0].strip()
        excluded = entry.startswith("!")
        entry = matching_view(entry.removeprefix("!"), path.stem).casefold()
        entry = _WS.sub(" ", entry).strip()
        if entry:
            (exclusions if excluded else terms).append(entry)
    return terms, exclusions


def load_wordlist(path: Path) -> list[str]:
    """Read one word list `<lang>.txt`: its terms (see `_read_list`), exclusions left out."""
    return _read_list(path)[0]


def load_exclusions(path: Path, terms: list[str]) -> list[str]:
    """The exclusions (`!` lines) of one word list; each must hold one of its `terms`, else it
    excludes nothing and is most likely a typo: an error naming the list and the line."""
    exclusions = _read_list(path)[1]
    for e in exclusions:
        if not any(t in e for t in terms):
            raise ValueError(
                f"{path}: exclusion !{e} holds none of the list's terms, so it excludes nothing; "
                "write it as ordinary text around a listed term, or remove it"
            )
    return exclusions


class _Terms(NamedTuple):
    """One list as it is matched: every term without Latin marks in one pattern, read on the
    text without them; the terms written with marks by that form, a hit only as written. The
    exclusions are in the pattern too (longest first, so one that starts with or before its
    term takes the span) and are no hits."""

    pattern: re.Pattern[str]
    marked: dict[str, frozenset[str]]
    excluded: frozenset[str]


class SafetyFilter:
    """Counts word-list hits per document for the languages that have a list."""

    def __init__(self, cfg: SafetyConfig):
        self.cfg = cfg
        self.dir = Path(cfg.wordlist_dir) if cfg.wordlist_dir else DEFAULT_WORDLIST_DIR
        if not self.dir.is_dir():
            raise FileNotFoundError(
                f"safety.wordlist_dir {self.dir} does not exist; set it to a directory of <lang>.txt"
            )
        self._terms: dict[str, _Terms | None] = {}

    def languages(self) -> list[str]:
        """Languages that have a word list."""
        return sorted(p.stem for p in self.dir.glob("*.txt"))

    def has_list(self, lang: str) -> bool:
        """Whether `lang` has a non-empty word list."""
        return self._list(lang) is not None

    def _list(self, lang: str) -> _Terms | None:
        if lang not in self._terms:
            path = self.dir / f"{lang}.txt"
            terms = load_wordlist(path) if path.exists() else []
            exclusions = load_exclusions(path, terms) if terms else []
            plain = {t for t in terms if strip_latin_marks(t) == t}
            marked: dict[str, set[str]] = {}
            for t in terms:
                if (bare := strip_latin_marks(t)) not in plain:
                    marked.setdefault(bare, set()).add(t)
            every = plain | set(marked)
            excluded = {strip_latin_marks(e) for e in exclusions} | set(exclusions)
            self._terms[lang] = (
                _Terms(
                    _compile(every | excluded, lang),
                    {k: frozenset(v) for k, v in marked.items()},
                    frozenset(excluded),
                )
                if every
                else None
            )
        return self._terms[lang]

    def hits(self, text: str, lang: str) -> int:
        """Number of word-list hits in a text (0 when the language has no list)."""
        return self._hits(matching_view(text, lang).casefold(), lang)

    def _hits(self, folded: str, lang: str) -> int:
        terms = self._list(lang)
        if terms is None:
            return 0
        bare = strip_latin_marks(folded)
        aligned = len(bare) == len(folded)  # marks dropped letter for letter: spans agree
        n = 0
        for m in terms.pattern.finditer(bare):
            key = _WS.sub(" ", m[0])
            if key in terms.excluded:
                continue
            spellings = terms.marked.get(key)
            if spellings is None:
                n += 1
            elif aligned:
                n += _WS.sub(" ", folded[m.start() : m.end()]) in spellings
        if not aligned and terms.marked:  # a mark without a composed form: read them as written
            written = {t for spellings in terms.marked.values() for t in spellings}
            found = _compile(written | terms.excluded, lang).findall(folded)
            n += sum(_WS.sub(" ", f) not in terms.excluded for f in found)
        return n

    def check(self, text: str, lang: str) -> str | None:
        """Drop reason `unsafe_content`, or None."""
        folded = matching_view(text, lang).casefold()
        n = self._hits(folded, lang)
        if n < self.cfg.min_flagged:
            return None
        total = max(1, len(tokens(folded, lang)))
        return "unsafe_content" if n / total > self.cfg.max_flagged_ratio else None


def _compile(terms: set[str], lang: str) -> re.Pattern[str]:
    # A phrase's space matches any whitespace run (a no-break space, a line break).
    ordered = sorted(terms, key=lambda t: (-len(t), t))
    alts = "|".join(re.escape(t).replace("\\ ", r"\s+") for t in ordered)
    if is_char_lang(lang):
        return re.compile(f"(?:{alts})")
    return re.compile(rf"(?<!\w)(?:{alts})(?!\w)")
