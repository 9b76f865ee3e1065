"""Gopher's repetition rules and FineWeb's line rules in `filters.heuristics.check` (each its own
reason), and the bot-check and cookie-centre lines of the boilerplate lexicons."""

import pytest

from filters.config import (
    HEURISTIC_REASONS,
    REPETITION_REASONS,
    ConfigError,
    HeuristicsConfig,
    config_from_dict,
)
from filters.heuristics import check, dup_ngram_chars, gopher_baseline, top_ngram_chars

CFG = HeuristicsConfig()

# A doorway page: one template over cities and services (the reviewer's, 82 % of its characters
# in repeated 5-grams), which the relaxed rules and the quality model kept.
DOORWAY = " ".join(
    f"Looking for the best {s} in {c}? Our {c} {s} team offers affordable {s} services in {c} "
    f"and nearby areas. Call the number one {s} company in {c} today for a free quote."
    for s in ["plumber", "emergency plumber", "drain cleaning"]
    for c in ["Austin TX", "Round Rock TX", "Cedar Park TX", "Pflugerville TX"]
)
PROSE = [
    "The old stone bridge crosses the river at its narrowest point, where the current is strong.",
    "Engineers rebuilt the central arch after the flood of 1890, using granite from a quarry.",
    "Today the bridge carries pedestrians and cyclists, while cars use a newer crossing downstream.",
    "Local historians keep records of every repair, which show how methods changed over a century.",
]


def test_a_city_by_service_doorway_page_is_dropped_as_duplicate_5_grams():
    assert check(DOORWAY, "en", CFG)[1] == "dup_5_gram"
    assert gopher_baseline(DOORWAY, "en") == "gopher_dup_5_gram"


def test_real_prose_passes_every_new_rule():
    assert check("\n".join(PROSE), "en", CFG)[1] is None
    assert gopher_baseline("\n".join(PROSE), "en") is None


def test_duplicate_n_grams_count_each_repeated_token_once():
    toks = "a b c d e x a b c d e".split()
    # The second "a b c d e" repeats the first: its 5 characters, once.
    assert dup_ngram_chars(toks, 5) == 5
    assert dup_ngram_chars(toks, 6) == 0
    # The top 2-gram "a b" twice, with the space between its words.
    assert top_ngram_chars(toks, 2) == 2 * 3


def test_duplicate_paragraphs_are_their_own_reason():
    # Blank lines separate paragraphs: one of three repeats (Gopher's limit is 30 %), few of
    # the characters, so no line or character rule fires.
    text = "\n\n".join(["See the map below.", "\n".join(PROSE), "See the map below."])
    assert check(text, "en", CFG)[1] == "dup_para_frac"
    off = CFG.model_copy(update={"max_dup_para_frac": None})
    assert check(text, "en", off)[1] is None
    # Without blank lines the text is one paragraph.
    assert check(text.replace("\n\n", "\n"), "en", CFG)[1] is None


def test_a_top_n_gram_page_is_dropped_with_the_n():
    words = "the price of the widget is low and the price of the gadget is high".split()
    filler = " ".join(f"item{i} costs {i} dollars." for i in range(20))
    text = " ".join(["price of the"] * 25) + " " + " ".join(words) + " " + filler + "."
    reason = check(text, "en", CFG.model_copy(update={"max_dup_ngram_frac": 1.0}))[1]
    assert reason in {"top_2_gram", "top_3_gram"}


def test_cjk_n_grams_count_characters_twice_as_long():
    # A Chinese doorway: one sentence template over cities.
    zh = "".join(
        f"{c}最好的水管工服务，专业团队，价格实惠，欢迎来电咨询免费报价。"
        for c in ["北京", "上海", "广州", "深圳", "杭州"]
    )
    assert check(zh, "zh", CFG)[1] in REPETITION_REASONS
    prose = (
        "这座古老的石桥横跨河流最窄的地方，水流湍急。工程师在洪水之后重建了中央拱门，使用了附近采石场的花岗岩。"
        "如今这座桥只供行人和骑自行车的人通行，汽车则走下游一座较新的桥。当地的历史学家保存着每一次维修的记录。"
    )
    assert check(prose, "zh", CFG)[1] is None


# A Wikipedia-style page whose extraction kept the navigation: 120 lines of menu items and
# four lines of prose.
MENU = [
    "Main page",
    "Contents",
    "Current events",
    "Random article",
    "About Wikipedia",
    "Contact us",
    "Help",
    "Learn to edit",
    "Community portal",
    "Recent changes",
    "Upload file",
    "What links here",
    "Related changes",
    "Special pages",
    "Permanent link",
    "Page information",
    "Cite this page",
    "Download as PDF",
    "Printable version",
    "Wikimedia Commons",
]
NAV = "\n".join([f"{m} ({i})" if i else m for i in range(6) for m in MENU][:116] + PROSE)


def test_a_navigation_page_is_dropped_by_the_line_rules():
    assert check(NAV, "en", CFG)[1] == "line_punct_ratio"
    off = CFG.model_copy(update={"min_line_punct_frac": None})
    assert check(NAV, "en", off)[1] == "short_line_ratio"


def test_the_line_rules_spare_a_paragraph_that_ends_in_a_parenthesis_and_table_rows():
    para = " ".join(PROSE) + " (see chapter 9.2.8)"
    assert check(para, "en", CFG)[1] is None
    rows = "\n".join(f"| {y} | {y * 3} visitors |" for y in range(1990, 2020))
    assert check(" ".join(PROSE) + "\n" + rows, "en", CFG)[1] is None


def test_thai_is_not_judged_on_line_ends():
    th = "\n".join(
        ["สะพานหินเก่าข้ามแม่น้ำตรงจุดที่แคบที่สุดซึ่งกระแสน้ำไหลแรง วิศวกรสร้างซุ้มกลางขึ้นใหม่หลังน้ำท่วม"]
        + ["ปัจจุบันสะพานนี้ใช้สำหรับคนเดินเท้าและจักรยาน ส่วนรถยนต์ใช้สะพานใหม่ทางท้ายน้ำ นักประวัติศาสตร์เก็บบันทึก"]
    )
    assert check(th, "th", CFG)[1] is None


def test_a_list_of_no_sentences_is_left_to_no_sentences():
    spam = "\n".join(
        " ".join(f"cheap{i} deal{j} offer{i + j} bonus{i * j}" for j in range(4)) for i in range(6)
    )
    assert check(spam, "en", CFG)[1] is None


def test_the_rules_names_are_known_to_the_rescue_config_and_limits_are_checked():
    for reason in ("dup_5_gram", "top_2_gram", "dup_para_frac", "line_punct_ratio"):
        assert reason in HEURISTIC_REASONS
    config_from_dict({"quality": {"rescue_reasons": ["short_line_ratio"]}})
    with pytest.raises(ConfigError, match="max_dup_ngram_frac_by_n"):
        config_from_dict({"heuristics": {"max_dup_ngram_frac_by_n": {50: 0.1}}})


CLOUDFLARE = """Just a moment...
Checking if the site connection is secure
www.example-shop.com needs to review the security of your connection before proceeding.
Verify you are human by completing the action below.
Ray ID: 7d2f1a9b8c3e4f56
Performance & security by Cloudflare
Enable JavaScript and cookies to continue
Why am I seeing this page?
Requests from malicious bots can pose as legitimate traffic. Occasionally, you may see this page while the site ensures that the connection is secure.
Please allow up to 5 seconds...
DDoS protection by Cloudflare"""

_OT = (
    "When you visit any website, it may store or retrieve information on your browser, mostly in "
    "the form of cookies. This information might be about you, your preferences or your device "
    "and is mostly used to make the site work as you expect it to."
)
ONETRUST = "\n".join(
    [
        "Privacy Preference Center",
        _OT,
        "Strictly Necessary Cookies",
        "These cookies are necessary for the website to function and cannot be switched off in "
        "our systems. They are usually only set in response to actions made by you which amount "
        "to a request for services, such as setting your privacy preferences.",
        "Performance Cookies",
        "These cookies allow us to count visits and traffic sources so we can measure and improve "
        "the performance of our site. They help us to know which pages are the most and least "
        "popular and see how visitors move around the site.",
        "Targeting Cookies",
        "These cookies may be set through our site by our advertising partners. They may be used "
        "by those companies to build a profile of your interests and show you relevant adverts "
        "on other sites.",
        "Confirm My Choices",
        "Allow All",
        "Reject All",
    ]
)
ONETRUST_DE = "\n".join(
    [
        "Datenschutz-Präferenz-Center",
        "Wenn Sie eine Website besuchen, kann diese Informationen über Ihren Browser abrufen oder "
        "speichern. Dies geschieht meist in Form von Cookies. Hierbei kann es sich um "
        "Informationen über Sie, Ihre Einstellungen oder Ihr Gerät handeln.",
        "Unbedingt erforderliche Cookies",
        "Diese Cookies sind zur Funktion der Website erforderlich und können in Ihren Systemen "
        "nicht deaktiviert werden. Diese Cookies speichern keine personenbezogenen Daten.",
        "Leistungs-Cookies",
        "Alle zulassen",
        "Alle ablehnen",
    ]
)


@pytest.mark.parametrize(
    ("text", "lang"), [(CLOUDFLARE, "en"), (ONETRUST, "en"), (ONETRUST_DE, "de")]
)
def test_bot_checks_and_cookie_centres_are_boilerplate(text, lang):
    assert check(text, lang, CFG)[1] == "boilerplate"
