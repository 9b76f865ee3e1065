"""Words in every script: the one definition of a word character that filters/ and training/
share.

Python's `re` `\\w` is str.isalnum plus "_", and a combining mark is not alphanumeric: the vowel
signs and viramas of Devanagari, Bengali, Tamil and the other Indic scripts, Arabic's and Hebrew's
vowel points, Thai's and Burmese's vowels and tones. Without them "हिन्दी" is five words of one
letter each and a page of Hindi prose is half symbols. WORD_CLASS adds the marks to `\\w`.
"""

from __future__ import annotations

import re
import unicodedata


def _marks() -> str:
    """The combining marks (Unicode categories Mn, Mc, Me) of the Basic Multilingual Plane as the
    body of a regex class. The marks beyond U+FFFF (historic Brahmic scripts, Adlam, the
    variation selectors supplement) are left out: with them `re` cannot make the class a bitmap
    and every word search costs three times as much. The scan costs ~10 ms once per process."""
    out, start = [], None
    for cp in range(0x10001):
        mark = cp < 0x10000 and unicodedata.category(chr(cp))[0] == "M"
        if mark and start is None:
            start = cp
        elif not mark and start is not None:
            out.append(f"\\u{start:04x}-\\u{cp - 1:04x}")
            start = None
    return "".join(out)


MARKS = _marks()
# A word character: a letter, digit or number (str.isalnum), "_", or a combining mark (of the
# Basic Multilingual Plane).
WORD_CLASS = "\\w" + MARKS
# A word: a run of word characters.
WORD = re.compile(f"[{WORD_CLASS}]+")
# Scripts written without spaces between words, as a regex class body: kana, the CJK ideographs
# (the unified block and extension A) and hangul syllables.
CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
