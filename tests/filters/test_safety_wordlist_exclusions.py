"""The zh and ja word lists, matched as substrings, leave ordinary words that hold a listed
insult alone (妈妈的 "mother's", 死ねない "cannot die") and still count the insults; a list's
`!` exclusions are read as one piece."""

import pytest

from filters.config import SafetyConfig
from filters.safety import SafetyFilter

ORDINARY = [
    ("zh", "每年母亲节，我都会想起妈妈的笑容。妈妈的手总是很温暖。"),
    ("zh", "周末我们去姑妈家吃饭，姑妈的院子里种满了月季。姨妈的女儿也来了。"),
    ("zh", "我妈的饺子是全村最好吃的，老妈的红烧肉也很香。"),
    ("ja", "祖父は「まだ死ねない、孫の結婚式を見るまでは」と笑っていました。"),
    ("ja", "「死ねばそれまでだ」というのが祖父の口癖です。安心して死ねる社会を作りたい。"),
    ("ja", "死ねなかった兵士の手記を読んだ。彼は必死ね、と友人は笑った。"),
]
INSULTS = [
    ("zh", "他妈的，你这个傻逼。", 2),
    ("zh", "操你妈！", 1),
    ("ja", "お前みたいなブスは死ね。", 1),
    ("ja", "死ねよ、くそ野郎。", 2),
]


@pytest.mark.parametrize(
    ("lang", "text"), ORDINARY, ids=[f"{c[0]}-{i}" for i, c in enumerate(ORDINARY)]
)
def test_ordinary_words_holding_a_listed_term_are_no_hits(lang, text):
    f = SafetyFilter(SafetyConfig(min_flagged=1, max_flagged_ratio=0.0))
    assert f.hits(text, lang) == 0
    assert f.check(text, lang) is None


@pytest.mark.parametrize(
    ("lang", "text", "hits"), INSULTS, ids=[f"{c[0]}-{i}" for i, c in enumerate(INSULTS)]
)
def test_the_listed_insults_are_still_hits(lang, text, hits):
    f = SafetyFilter(SafetyConfig(min_flagged=1, max_flagged_ratio=0.0))
    assert f.hits(text, lang) == hits
    assert f.check(text, lang) == "unsafe_content"


def test_an_exclusion_in_a_users_list_spans_its_term(tmp_path):
    (tmp_path / "ja.txt").write_text("ばか\n!ばかり  # 'only': holds ばか\n", encoding="utf-8")
    f = SafetyFilter(SafetyConfig(wordlist_dir=str(tmp_path)))
    assert f.hits("そればかり食べている。ばか！", "ja") == 1


def test_an_exclusion_without_a_term_is_an_error_naming_the_list(tmp_path):
    (tmp_path / "ja.txt").write_text("ばか\n!あほう\n", encoding="utf-8")
    f = SafetyFilter(SafetyConfig(wordlist_dir=str(tmp_path)))
    with pytest.raises(ValueError, match=r"ja\.txt: exclusion !あほう holds none"):
        f.hits("ばか", "ja")
