"""Layout tokens of a document longer than the classifier's word cut (MAX_TOKENS) read the whole
text: the per-line figure of a long Thai page (a token per character) is its own, not the cut
count divided by every line."""

from filters.heuristics import tokens
from filters.quality import MAX_TOKENS, fasttext_line, shape_tokens

# One Thai sentence per line, 60 characters (tokens) each, numbered so no line repeats.
_THAI = "ประเทศไทยมีประวัติศาสตร์ยาวนานและวัฒนธรรมที่หลากหลายมาก"


def _thai_doc(lines: int) -> str:
    digits = "๐๑๒๓๔๕๖๗๘๙"
    out = []
    for i in range(lines):
        number = "".join(digits[int(c)] for c in f"{i:03d}")
        out.append(f"{_THAI}{number}.")
    return "\n".join(out)


def _layout(line: str) -> set[str]:
    return {t for t in line.split() if t.startswith("__")}


def test_a_long_thai_page_keeps_its_per_line_figure_past_the_word_cut():
    short, long = _thai_doc(10), _thai_doc(80)
    assert len(tokens(short, "th")) < MAX_TOKENS < len(tokens(long, "th"))
    per_line = len(tokens(long, "th")) / 80
    assert per_line >= 50  # 25 tokens per line, two characters a word: the top bucket
    short_line = fasttext_line(short, "th", shape=True)
    long_line = fasttext_line(long, "th", shape=True)
    assert "__ll4" in _layout(short_line)
    # the long page's lines are as long as the short page's: same layout bucket
    assert "__ll4" in _layout(long_line) and not {"__ll3", "__ll2"} & _layout(long_line)
    assert _layout(long_line) == set(shape_tokens(long, "th"))


def test_only_the_words_are_cut_and_the_layout_weight_stays_bounded():
    long = _thai_doc(200)
    line = fasttext_line(long, "th", shape=True).split()
    words = [t for t in line if not t.startswith("__")]
    layout = [t for t in line if t.startswith("__")]
    assert words == tokens(long, "th")[:MAX_TOKENS]
    # each of the five layout tokens repeated as for MAX_TOKENS words, whatever the length
    assert len(layout) == 5 * (1 + MAX_TOKENS // 40)
