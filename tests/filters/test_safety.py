"""Unsafe-content and profanity filtering with replaceable per-language word lists."""

import pytest

from filters.config import SafetyConfig
from filters.safety import SafetyFilter

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
