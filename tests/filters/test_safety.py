"""Unsafe-content and profanity filtering with replaceable per-language word lists."""

import pytest

from filters.config import SafetyConfig
from filters.safety import SafetyFilter, matching_view, strip_latin_marks

PROSE = " ".join(
    ["The committee discussed the budget for the new library and its opening hours."] * 4
)


def test_default_lists_cover_the_configured_languages():
    langs = SafetyFilter(SafetyConfig()).languages()
    assert {"en", "de", "fr", "es", "zh", "ja"} <= set(langs)


def test_dense_profanity_is_dropped_and_one_stray_word_is_kept():
    f = SafetyFilter(SafetyConfig())
    assert f.check(PROSE + " fuck shit porn xxx", "en") == "unsafe_content"
    assert f.check(PROSE + " what the shit", "en") is None


def test_whole_words_only_for_spaced_languages():
    f = SafetyFilter(SafetyConfig())
    assert f.hits("Scunthorpe and Essex and shitake", "en") == 0


def test_cjk_lists_match_substrings():
    f = SafetyFilter(SafetyConfig())
    assert f.hits("这个网站有色情内容和色情图片还有裸照", "zh") == 3


def test_word_lists_are_replaceable(tmp_path):
    (tmp_path / "en.txt").write_text("# custom list\nbudget\nlibrary\n")
    f = SafetyFilter(
        SafetyConfig(wordlist_dir=str(tmp_path), min_flagged=3, max_flagged_ratio=0.05)
    )
    assert f.check(PROSE, "en") == "unsafe_content"
    assert f.hits("fuck", "en") == 0


def test_missing_wordlist_dir_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="wordlist_dir"):
        SafetyFilter(SafetyConfig(wordlist_dir=str(tmp_path / "nope")))


SPAM = "Buy cheap viagra now and get a casino bonus. You are a fucking bitch, kill yourself. "
HIDDEN = {
    "zero-width space": SPAM.replace("viagra", "vi\u200bagra")
    .replace("fucking", "fu\u200bcking")
    .replace("bitch", "bi\u200btch")
    .replace("casino", "ca\u200bsino"),
    "soft hyphen": SPAM.replace("viagra", "via\u00adgra").replace("bitch", "bit\u00adch"),
    "joiner": SPAM.replace("a", "a\u200d"),
    "full-width": SPAM.replace("viagra", "ｖｉａｇｒａ")
    .replace("fucking", "ｆｕｃｋｉｎｇ")
    .replace("bitch", "ｂｉｔｃｈ")
    .replace("casino", "ｃａｓｉｎｏ"),
    "Cyrillic look-alikes": SPAM.replace("a", "\u0430")
    .replace("o", "\u043e")
    .replace("i", "\u0456")
    .replace("c", "\u0441"),
    "Greek look-alikes": SPAM.replace("o", "\u03bf").replace("i", "\u03b9"),
    "combining accents": SPAM.replace("i", "i\u0301"),
    "no-break space in a phrase": SPAM.replace("casino bonus", "casino\u00a0\u00a0bonus"),
    "upper case": SPAM.upper(),
}


@pytest.mark.parametrize("how", sorted(HIDDEN))
def test_hidden_and_look_alike_letters_do_not_hide_listed_words(how):
    """Zero-width characters, full-width or look-alike letters and stray accents read as the
    plain word (each variant had 0 to 9 of the plain text's 15 hits)."""
    f = SafetyFilter(SafetyConfig())
    plain = f.hits(SPAM * 3, "en")
    assert plain == 15
    assert f.hits(HIDDEN[how] * 3, "en") == plain
    assert f.check(HIDDEN[how] * 3, "en") == "unsafe_content"


def test_the_matching_view_leaves_real_words_of_other_scripts_alone():
    """Look-alikes are mapped only inside words that mix scripts, into the script of the
    text's language; marks are dropped only from Latin letters; a term written with marks is
    matched as written."""
    ru = "Она купила сорок роз."  # Cyrillic words made partly of look-alike letters
    assert matching_view(ru) == matching_view(ru, "ru") == ru
    assert matching_view("pаypаl") == "paypal"  # Cyrillic а inside a Latin word
    assert matching_view("вiд сукa", "uk") == "від сука"  # Latin i and a inside Cyrillic words
    assert strip_latin_marks("हिन्दी всё й Größe") == "हिन्दी всё й Große"
    f = SafetyFilter(SafetyConfig())
    assert f.hits("сука", "ru") == 1 and f.hits("хуй", "ru") == 1
    assert f.hits("Ты сукa.", "ru") == 1  # a Latin a typed into the Russian word
    assert f.hits("El cono de helado y el coño.", "es") == 1  # "cono" (cone) is no hit
    assert f.hits("Scheiße und SCHEISSE", "de") == 2
    # A mark with no composed form ("q́") shifts no span: the written forms still count.
    assert f.hits("q\u0301 cabrón y cabron", "es") == 1
