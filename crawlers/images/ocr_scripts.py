"""Tesseract's languages and the scripts they read, and how the OCR engine
(crawlers/images/ocr.py) judges a reading (lang, text, words, conf) by its letters: whether they
are of its model's script (`_in_own_script`, `_script_letters`, `_names_its_script`), its
confident characters (`_weight`) and rank among readings of a page (`_rank`), the rival scripts
OSD takes a script for (`_rivals`), kana enough to be Japanese (`_kana_enough`), and the
characters Simplified and Traditional Chinese write in different forms (`variant_forms`,
`traditional_margins`, by OpenCC's tables). No Tesseract here."""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Protocol


class _Read(Protocol):
    """A recognised word as these functions read it (`crawlers.images.ocr.Word`)."""

    text: str
    conf: float
    chars: tuple[float, ...]


# The script of each OSD script name, the script and the ISO 639-1 code (a short reading's
# language: lid.176 names a longer one) of each Tesseract language.
OSD_SCRIPT = {
    "Latin": "Latin",
    "Han": "Han",
    "HanS": "Han",
    "HanT": "Han",
    "Japanese": "Japanese",  # Han with kana
    "Korean": "Korean",
    "Hangul": "Korean",
    "Cyrillic": "Cyrillic",
    "Greek": "Greek",
    "Arabic": "Arabic",
    # read in a model of theirs only when the caller names one (hin, heb, tha)
    "Devanagari": "Devanagari",
    "Hebrew": "Hebrew",
    "Thai": "Thai",
}
# `Latin`, `Cyrillic` and `Greek` are Tesseract's models of a whole script (Debian's
# tesseract-ocr-script-latn, -cyrl, -grek): every language's letters in it. `eng` reads English
# alone well: on 15 languages of lingua-py's test sentences its CER was 0.083 against 0.021
# (Czech 0.13, Turkish 0.16, Icelandic 0.21 against 0.00-0.03; English 0 both), at 143 against
# 188 ms a page.
# Each Tesseract language: its script and the ISO 639-1 code of a reading in it.
_MODELS = {
    "Latin": ("Latin", "en"),
    "eng": ("Latin", "en"),
    "chi_sim": ("Han", "zh"),
    "jpn": ("Japanese", "ja"),
    "kor": ("Korean", "ko"),
    "Cyrillic": ("Cyrillic", "ru"),
    "rus": ("Cyrillic", "ru"),
    "Greek": ("Greek", "el"),
    "ara": ("Arabic", "ar"),
    "jpn_vert": ("Japanese", "ja"),
    "chi_sim_vert": ("Han", "zh"),
    "vie": ("Latin", "vi"),
    # models a caller may name (`OcrConfig.languages`, `refinery images ocr --languages`)
    "chi_tra": ("Han", "zh"),
    "chi_tra_vert": ("Han", "zh"),
    "deu": ("Latin", "de"),
    "fra": ("Latin", "fr"),
    "spa": ("Latin", "es"),
    "ita": ("Latin", "it"),
    "por": ("Latin", "pt"),
    "nld": ("Latin", "nl"),
    "pol": ("Latin", "pl"),
    "tur": ("Latin", "tr"),
    "ukr": ("Cyrillic", "uk"),
    "ell": ("Greek", "el"),
    "heb": ("Hebrew", "he"),
    "hin": ("Devanagari", "hi"),
    "tha": ("Thai", "th"),
}
LANG_SCRIPT = {lang: script for lang, (script, _iso) in _MODELS.items()}
ISO = {lang: iso for lang, (_script, iso) in _MODELS.items()}


def reading_labels(lang: str, text: str) -> tuple[str, str]:
    """(ISO 639-1 language, script) of `text` read in the Tesseract language `lang`: ('und', '')
    for a reading without a letter (Unicode category L*), whatever model read it: digits and
    signs are no language's ('540' read by ara is not Arabic), nor is an empty reading."""
    if not any(unicodedata.category(ch)[0] == "L" for ch in text):
        return "und", ""
    return ISO.get(lang, "und"), LANG_SCRIPT.get(lang, "")


# OSD's script for a page is often a wrong one of these (on rendered pages of lingua-py's test
# sentences: Chinese named Korean or Japanese, English Cyrillic, Greek Latin): a page named one
# is also read in its rivals, the most confident characters kept (OcrEngine._read).
_RIVALS = {
    "Japanese": ("Han", "Korean"),
    "Korean": ("Han", "Japanese"),
    "Cyrillic": ("Latin", "Greek"),
    "Greek": ("Latin", "Cyrillic"),
}
# Kana (hiragana and katakana, not the prolonged-sound mark alone): a jpn reading with fewer than
# _KANA_SHARE of its letters in kana is not taken over chi_sim's (Japanese prose runs 30-60%).
_KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa]")
_KANA_SHARE = 0.15
# Scripts whose look-alikes their model reads fairly sure on a blurred page (Greek read by the
# Latin-script model at 0.75, where clean Latin pages read at 0.88 or more): below _RIVAL_CONF
# such a reading is compared with the rivals' too. (chi_sim reads blurred Japanese at 0.76 too,
# but Traditional pages and wrong ways up also read under 0.85 in it: not Han's.)
_WEAK_RIVALS = {"Latin": ("Cyrillic", "Greek")}
_RIVAL_CONF = 0.85


def _kana_enough(got) -> bool:
    """Whether `_KANA_SHARE` of a reading's letters are kana."""
    letters = sum(c.isalpha() for c in got[1])
    return bool(letters) and len(_KANA.findall(got[1])) >= _KANA_SHARE * letters


def _rivals(got) -> tuple[str, ...]:
    """The rival scripts a reading `got` (lang, text, words, conf) is compared with."""
    script = LANG_SCRIPT.get(got[0], "")
    weak = _WEAK_RIVALS.get(script, ()) if got[3] < _RIVAL_CONF else ()
    return _RIVALS.get(script, ()) + weak


# A page where the first language finds no word is read by the second (chi_sim): kept as text
# only when that reading is this confident (a flat scene's shapes read as 早早 at 0.40).
_SECOND_LOOK_CONF = 0.6


def _rank(got) -> tuple[bool, float]:
    """A reading's rank among readings of one page: whether it names its script, then its
    confident characters (`_weight`)."""
    return _names_its_script(got), _weight(got)


def _names_its_script(got) -> bool:
    """Whether a reading of two words or more is letters of its model's script for a third or
    more of its characters (white space aside), two at least: a sure reading of digits and
    marks does not tell the page's script (the Arabic model read 80 px Korean's first line as
    "3-022 - 2 8 0|" at 0.78, with one letter, and Korean was never tried)."""
    return len(got[2]) >= 2 and _spells_its_script(got)


def _spells_its_script(got) -> bool:
    """Whether two or more of a reading's characters, and a third of them (white space aside),
    are letters of its model's script, however few its words (`_names_its_script` wants two:
    a short Chinese line, 你好，世界, is one word)."""
    letters = _SCRIPT_LETTERS.get(LANG_SCRIPT.get(got[0], ""))
    chars = "".join(got[1].split())
    own = sum(c.isalpha() for c in chars) if letters is None else len(letters.findall(chars))
    return own >= 2 and 3 * own >= len(chars)


def _script_letters(got) -> bool:
    """Whether a reading holds two letters or more of its model's script (any letters, for a
    language of no known script), read with confidence `_SECOND_LOOK_CONF` or more."""
    if got[3] < _SECOND_LOOK_CONF:
        return False
    letters = _SCRIPT_LETTERS.get(LANG_SCRIPT.get(got[0], ""))
    if letters is None:
        return sum(c.isalpha() for c in got[1]) >= 2
    return len(letters.findall(got[1])) >= 2


# The letters of each script a reading's model may be trusted in (see _in_own_script).
_SCRIPT_LETTERS = {
    "Latin": re.compile("[A-Za-z\u00c0-\u024f\u1e00-\u1eff]"),
    "Han": re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"),
    "Japanese": re.compile("[\u3041-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"),
    "Korean": re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3\u4e00-\u9fff]"),
    "Cyrillic": re.compile("[\u0400-\u052f]"),
    "Greek": re.compile("[\u0370-\u03ff\u1f00-\u1fff]"),
    "Arabic": re.compile("[\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff]"),
}


@functools.cache
def _opencc():
    """OpenCC's Simplified -> Traditional and Traditional -> Simplified converters, made once."""
    import opencc

    return opencc.OpenCC("s2t.json"), opencc.OpenCC("t2s.json")


def variant_forms(simplified: str, traditional: str) -> bool:
    """Whether two characters are one character's Simplified and Traditional forms (OpenCC's
    character tables either way: 发 -> 發, and 髮 -> 发)."""
    if simplified == traditional:
        return False
    s2t, t2s = _opencc()
    return t2s.convert(traditional) == simplified or s2t.convert(simplified) == traditional


def traditional_margins(simplified: list[_Read], traditional: list[_Read]) -> list[float]:
    """The two readings' characters aligned (difflib, over their words' characters that have
    confidences); for each place where one reads a Simplified character and the other its
    Traditional form, the Traditional model's confidence less the Simplified model's."""
    import difflib

    def flat(words: list[_Read]) -> tuple[str, list[float]]:
        kept = [w for w in words if w.chars]
        return "".join(w.text for w in kept), [c for w in kept for c in w.chars]

    (a, ca), (b, cb) = flat(simplified), flat(traditional)
    margins = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "replace" and i2 - i1 == j2 - j1:
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                if variant_forms(a[i], b[j]):
                    margins.append(cb[j] - ca[i])
    return margins


def _in_own_script(got) -> bool:
    """Whether half or more of a reading's letters are of its model's script (True for a
    language of no known script, or a reading without letters)."""
    letters = _SCRIPT_LETTERS.get(LANG_SCRIPT.get(got[0], ""))
    total = sum(c.isalpha() for c in got[1])
    return letters is None or not total or len(letters.findall(got[1])) >= 0.5 * total


def _weight(got) -> float:
    """Confident characters of a reading (lang, text, words, conf): see `_words_weight`."""
    return _words_weight(got[2])


def _words_weight(words) -> float:
    """Confident characters: the sum over words of confidence x length."""
    return sum(w.conf * len(w.text) for w in words)


def _char_conf(words) -> float:
    """The words' confidence, weighted by their characters (0 without any)."""
    n = sum(len(w.text) for w in words)
    return _words_weight(words) / n if n else 0.0
