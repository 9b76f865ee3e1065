"""Relaxed heuristics: each rule has its own reason; CJK lengths count characters."""

from filters.config import HeuristicsConfig
from filters.heuristics import check, gopher_baseline, strip_boilerplate

CFG = HeuristicsConfig()
PROSE = (
    "The old stone bridge crosses the river at its narrowest point, where the current is strong.\n"
    "Engineers rebuilt the central arch after the flood of 1890, using granite from a nearby quarry.\n"
    "Today the bridge carries pedestrians and cyclists, while cars use a newer crossing downstream.\n"
    "Local historians keep records of every repair, which show how methods changed over a century.\n"
)


def test_clean_prose_is_kept():
    assert check(PROSE, "en", CFG)[1] is None


def test_short_text_is_dropped_as_too_short():
    assert check("Just a few words here.", "en", CFG)[1] == "too_short"


def test_cjk_length_counts_characters():
    zh = (
        "这座古老的石桥横跨河流最窄的地方，水流湍急。工程师在洪水之后重建了中央拱门，使用了附近采石场的花岗岩。"
        * 2
    )
    assert check(zh, "zh", CFG)[1] is None
    assert check(zh[:30], "zh", CFG)[1] == "too_short"
    # The same text read as a spaced language has almost no "words".
    assert check(zh, "en", CFG)[1] == "too_short"


def test_symbol_soup_is_dropped():
    junk = PROSE + "\n" + " ".join(["$$$ ### @@@ ^^^ ~~~ |||"] * 40)
    assert check(junk, "en", CFG)[1] == "symbol_ratio"


def test_repeated_lines_are_dropped():
    text = PROSE + "\n".join(["Click here to buy the best cheap watches online now today"] * 12)
    assert check(text, "en", CFG)[1] == "repeated_lines"


def test_repeated_ngrams_are_dropped():
    text = " ".join(["cheap watches online"] * 60) + "\n" + PROSE
    assert check(text, "en", CFG)[1] == "repeated_ngrams"


def test_boilerplate_lines_are_stripped_and_mostly_boilerplate_drops():
    text = (
        "We use cookies. Accept all\n" + PROSE + "© 2025 Example Ltd. All rights reserved.\nHome\n"
    )
    clean, kept, removed = strip_boilerplate(text, CFG)
    assert removed == 3 and "cookies" not in clean and "Engineers rebuilt" in clean
    assert check(text, "en", CFG)[0] == clean
    nav = (
        "\n".join(["Home", "Menu", "Login", "Share", "Privacy policy", "Next"])
        + "\nA short line of text."
    )
    assert check(nav, "en", CFG)[1] == "boilerplate"


def test_gopher_baseline_is_stricter_than_relaxed_rules():
    short_but_fine = " ".join(PROSE.split()[:45])
    assert check(short_but_fine, "en", CFG)[1] is None
    assert gopher_baseline(short_but_fine, "en") == "gopher_length"
