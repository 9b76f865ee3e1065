"""Whether one text says another: on whole tokens, not inside other words or numbers.

Used to verify synthetic QA against its source: an OCR-QA answer against the image's text
(synth/text_rich.py), a teacher's table or chart question against the labels its answer was
recomputed from (synth/tables.py, synth/charts.py).

Tokens (`tokens`): the text NFKC-normalised and case-folded, accents of Latin, Greek and Cyrillic
letters and the vowel points of Hebrew and Arabic dropped (é = e; other scripts' marks, such as
Devanagari's vowel signs, are part of their words), then split at
everything that is not a letter, mark or digit. A number is one token with its grouping and
decimal separators ("12,000" and "12.000" are 12000, "3.5" and "3,5" are 3.5, "1.234,5" is
1234.5: `number_readings`) and its sign (a minus directly before a digit, at the start or after
a space: "-5" is not "5"): a number is never found inside another ("200" is not in "12,000").
Numbers, other tokens led by a digit ("5bn") and magnitude words (`MAGNITUDES`: million, bn,
Mrd., 万, млн...) are never fuzzy: a fuzzy match aligns them exactly ("5 million" is not in
"5 billion"). Scripts written without spaces (Han, Hiragana,
Katakana, Thai, Lao, Khmer, Myanmar) are one token a character, so a run of them is a character
sequence match.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

# Between two digits, these group thousands or mark decimals ("12,000", "3.5", "1'000", "1 000"
# with a narrow no-break space): part of the number, not a token boundary.
NUMBER_SEPARATORS = frozenset(".,'\u2019\u00a0\u202f\u2009")
_SEP = re.compile("[" + re.escape("".join(sorted(NUMBER_SEPARATORS))) + " ]")
_MINUS = "-\u2212"
_ONE_NUMBER = re.compile(
    "[" + _MINUS + "]?[0-9]([0-9" + re.escape("".join(NUMBER_SEPARATORS)) + "]*[0-9])?"
)
# Words that scale a number (folded, "." dropped): the power of ten they stand for.
MAGNITUDES = {
    **dict.fromkeys(("k", "thousand", "thousands", "tausend", "mille", "mil", "тыс"), 3),
    **dict.fromkeys(("lakh", "lakhs"), 5),
    **dict.fromkeys(("m", "mn", "mio", "million", "millions", "millionen", "millon"), 6),
    **dict.fromkeys(("millones", "млн", "миллион", "миллиона", "миллионов"), 6),
    **dict.fromkeys(("crore", "crores"), 7),
    **dict.fromkeys(("b", "bn", "billion", "billions", "mrd", "milliarde", "milliarden"), 9),
    **dict.fromkeys(("milliard", "milliards", "млрд", "миллиард", "миллиарда"), 9),
    **dict.fromkeys(("t", "tn", "trillion", "trillions", "billionen", "трлн"), 12),
    **dict.fromkeys(("万", "萬"), 4),
    **dict.fromkeys(("亿", "億"), 8),
}
# Scripts written without spaces between words: each character is a token.
_UNSPACED = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3134F),  # CJK extensions B-G
)
# Bases whose combining marks are dropped: the accents of Latin, Greek and Cyrillic, the vowel
# points of Hebrew and Arabic (text is mostly written, and read by OCR, without them).
_ACCENTED = ((0x0041, 0x052F), (0x0590, 0x06FF), (0x1E00, 0x1FFF))
_TRAILING_UNIT = re.compile(r"\s*[(\[][^()\[\]]*[)\]]\s*$")


def _in(ch: str, ranges: Sequence[tuple[int, int]]) -> bool:
    o = ord(ch)
    return any(lo <= o <= hi for lo, hi in ranges)


def fold(text: str) -> str:
    """NFKC, case folded, accents of Latin/Greek/Cyrillic letters dropped."""
    text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    out: list[str] = []
    base = ""
    for ch in text:
        if unicodedata.category(ch) == "Mn" and base and _in(base, _ACCENTED):
            continue
        out.append(ch)
        if unicodedata.category(ch) != "Mn":
            base = ch
    return unicodedata.normalize("NFC", "".join(out))


def number_readings(word: str) -> dict[str, str]:
    """A digit run with separators ("1.234,5", "12,000", "1 234") read with each decimal
    separator it allows ('.' or ','): the number's one spelling (no grouping, '.' decimal) by
    that separator; {} if it is no number ("1.2.3"). Groups after the first have 3 digits and
    one separator kind; spaces and apostrophes only group. "1.299" allows both (1.299, 1299)."""
    groups = _SEP.split(word)
    seps = [c for c in word if not c.isdigit()]
    if any(not g.isdigit() for g in groups):
        return {}
    out: dict[str, str] = {}
    for dec in ".,":
        if seps.count(dec) > 1 or (dec in seps and seps[-1] != dec):
            continue
        whole, frac = (groups[:-1], groups[-1]) if seps and seps[-1] == dec else (groups, None)
        if len(whole) > 1 and (
            len(whole[0]) > 3
            or whole[0].startswith("0")
            or any(len(g) != 3 for g in whole[1:])
            or len(set(seps[: len(whole) - 1])) > 1
        ):
            continue
        out[dec] = "".join(whole) + ("" if frac is None else "." + frac)
    return out


def _number(word: str) -> str:
    """A number's one spelling: grouping separators dropped, the decimal separator '.'. One
    separator before exactly 3 digits groups ("1.299" and "1,299" are 1299)."""
    sign = "-" if word[0] in _MINUS else ""
    digits = word[len(sign) :]
    readings = number_readings(digits)
    if not readings:
        return word
    if len(set(readings.values())) > 1:  # "1.299": the separator that is in it groups
        return sign + next(v for d, v in readings.items() if d not in digits)
    return sign + next(iter(readings.values()))


def number_value(text: str) -> float | None:
    """The value of a text that is one number and nothing else, read as `tokens` reads it
    ("7,5" is 7.5, "1,000" is 1000, "-3" is -3); None otherwise ("12 %", "$5", "1.2.3")."""
    text = fold(text).strip()
    if not _ONE_NUMBER.fullmatch(text):
        return None
    toks = tokens(text)
    return float(toks[0]) if len(toks) == 1 and is_number(toks[0]) else None


def is_number(token: str) -> bool:
    """Whether a token (of `tokens`) is a number."""
    digits = token[1:] if token[:1] == "-" else token
    return bool(digits) and digits[0].isdigit() and all(c.isdigit() or c == "." for c in digits)


def _exact(token: str) -> bool:
    """Whether a token is never fuzzy: a number, a token led by a digit ("5bn"), a magnitude
    word. A digit inside a word ("rep0rt") is an OCR misreading like any other."""
    return token in MAGNITUDES or is_number(token) or token[:1].isdigit()


def tokens(text: str) -> list[str]:
    """The text's tokens (see the module docstring)."""
    text = fold(text)
    out: list[str] = []
    word: list[str] = []

    def flush() -> None:
        if word:
            w = "".join(word)
            d = w.lstrip(_MINUS)
            digits = d[:1].isdigit() and all(c.isdigit() or c in NUMBER_SEPARATORS for c in d)
            out.append(_number(w) if digits else d)
            word.clear()

    n = len(text)
    for i, ch in enumerate(text):
        if _in(ch, _UNSPACED):
            flush()
            out.append(ch)
        elif unicodedata.category(ch)[0] in "LMN":
            word.append(ch)
        elif (
            ch in _MINUS
            and not word
            and (i == 0 or text[i - 1].isspace() or text[i - 1] in "([")
            and i + 1 < n
            and text[i + 1].isdigit()
        ):
            word.append(ch)  # a sign: part of the number
        elif (
            ch in NUMBER_SEPARATORS
            and word
            and word[-1].isdigit()
            and i + 1 < n
            and text[i + 1].isdigit()
        ):
            word.append(ch)
        else:
            flush()
    flush()
    return out


def run_in(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """Whether `needle` is a contiguous run of `haystack` (token lists)."""
    k = len(needle)
    if k == 0:
        return False
    first = needle[0]
    return any(
        haystack[i] == first and list(haystack[i : i + k]) == list(needle)
        for i in range(len(haystack) - k + 1)
    )


def too_short(text: str) -> bool:
    """Whether a text is too short to be found meaningfully: no token, or no number and fewer
    than 2 letters or characters in all (a single letter is inside every text)."""
    toks = tokens(text)
    if not toks:
        return True
    return not any(is_number(t) for t in toks) and len("".join(toks)) < 2


def occurs(needle: str, haystack: str, tolerance: float = 0.0) -> bool:
    """Whether `needle` is a run of whole tokens of `haystack`, allowing misread characters: an
    edit distance of at most `tolerance` of its characters against a run of whole tokens. Its
    numbers, tokens led by a digit and magnitude words must stand as they are at their place in
    that run (they are never fuzzy: "5 million" is not in "5 billion")."""
    n_toks, h_toks = tokens(needle), tokens(haystack)
    if too_short(needle):
        return False
    if run_in(h_toks, n_toks):
        return True
    budget = int(len("".join(n_toks)) * tolerance)
    if budget == 0:
        return False
    exact = {t for t in h_toks if _exact(t)}
    if any(_exact(t) and t not in exact for t in n_toks):
        return False
    # each exact token becomes one private-use character that no edit may touch
    code = {t: chr(0xF0000 + k) for k, t in enumerate(sorted(exact))}
    n_str = " ".join(code.get(t, t) for t in n_toks)
    return _fuzzy_run(n_str, " ".join(code.get(t, t) for t in h_toks), budget)


def _fuzzy_run(n: str, h: str, budget: int) -> bool:
    """Sellers' approximate match of `n` in `h`, starting and ending at token boundaries (a
    space or either end of `h`): the best edit distance is at most `budget`. A private-use
    character (an exact token, see `occurs`) is never inserted, deleted or substituted."""
    far = len(n) + budget + 1

    def cost(c: str) -> int:
        return far if ord(c) >= 0xF0000 else 1

    prev = [0 if j == 0 or h[j - 1] == " " else far for j in range(len(h) + 1)]
    for cn in n:
        cur = [min(prev[0] + cost(cn), far)]
        for j, ch in enumerate(h, 1):
            sub = 0 if cn == ch else max(cost(cn), cost(ch))
            cur.append(min(prev[j] + cost(cn), cur[j - 1] + cost(ch), prev[j - 1] + sub, far))
        prev = cur
    return any(d <= budget for j, d in enumerate(prev) if j == len(h) or h[j] == " ")


def _plural_of(word: str, label_word: str) -> bool:
    """Whether `word` is the English plural of `label_word` (cafes, boxes, cities)."""
    if len(label_word) < 3 or not label_word.isalpha():
        return False
    if word in (label_word + "s", label_word + "es"):
        return True
    return label_word.endswith("y") and word == label_word[:-1] + "ies"


def _names_run(have: Sequence[str], want: Sequence[str]) -> bool:
    k = len(want)
    return k > 0 and any(
        all(
            h == w or _plural_of(h, w) or _plural_of(w, h)
            for h, w in zip(have[i : i + k], want, strict=True)
        )
        for i in range(len(have) - k + 1)
    )


def names(text: str, label: str) -> bool:
    """Whether `text` (a question) names `label` (a row, column, series or category): the
    label's tokens are a run of the text's (a word may stand in its English plural or singular); a trailing
    unit in brackets ("Population (millions)") may be left out."""
    have = tokens(text)
    if _names_run(have, tokens(label)):
        return True
    short = _TRAILING_UNIT.sub("", label)
    return short != label and _names_run(have, tokens(short))
