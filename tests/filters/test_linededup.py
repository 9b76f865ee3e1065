"""Line de-duplication across documents (filters/linededup.py): keys, the sharded count, the
rewrite, the drop reason, and the same bytes from both executors. Inputs unlike the sample web:
generated pages of many hosts in two scripts, CRLF and Unicode-whitespace variants, a huge
document, tables and image placeholders."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from filters import linededup
from filters.config import ConfigError, LineDedupConfig, config_from_dict
from filters.run import run_filter

EN_BANNER = "We value your privacy: our 1284 partners store and access information on your device."
JA_BANNER = "当サイトでは１２８４社のパートナーが、お使いの端末に情報を保存し、アクセスします。"
EN_WORDS = (
    "river mountain village teacher winter market harvest bridge story music garden station "
    "letter window summer travel kitchen forest library morning evening festival coast island"
).split()
JA_WORDS = "川 山 村 先生 冬 市場 収穫 橋 物語 音楽 庭 駅 手紙 窓 夏 旅 台所 森 図書館 朝".split()


def _variant(line: str, i: int) -> str:
    """The same line as different pages write it: case, digits (ASCII, fullwidth), whitespace
    kinds, invisible marks."""
    digits = str(1000 + i)
    if i % 4 == 1:
        digits = digits.translate(str.maketrans("0123456789", "０１２３４５６７８９"))
    line = line.replace("1284", digits).replace("１２８４", digits)
    return [
        line,
        line.upper(),
        line.replace(" ", "\u00a0"),
        line.replace(" ", "  \t"),
        "\u3000" + line + " \u200b",
        line + "\u2003\u00a0 ",
    ][i % 6]


def _host(h: int) -> str:
    """A host name without digits (digits are normalised: host 3 and host 7 would be one)."""
    return "".join("abcdefghij"[int(d)] for d in f"{h:02d}")


def _pages(n: int = 1000, hosts: int = 50, seed: int = 0) -> list[dict]:
    """n pages of `hosts` hosts, half English, half Japanese: unique prose, the script's
    cookie banner (in per-page variants), a footer per host, CRLF line ends on some."""
    rng = random.Random(seed)
    pages = []
    for i in range(n):
        h = i % hosts
        ja = h % 2 == 1
        words, sep = (JA_WORDS, "") if ja else (EN_WORDS, " ")
        paras = [
            sep.join(rng.choice(words) for _ in range(30)) + f" {i}-{k}{'。' if ja else '.'}"
            for k in range(3)
        ]
        banner = _variant(JA_BANNER if ja else EN_BANNER, i)
        footer = f"Media group of {_host(h)}: editorial office."
        nl = "\r\n" if i % 3 == 0 else "\n"
        pages.append(
            {
                "id": f"p{i:04d}",
                "host": h,
                "paras": paras,
                "banner": banner,
                "text": nl.join([banner, paras[0], paras[1], footer, paras[2]]),
            }
        )
    return pages


def _repeated(texts: list[str], threshold: int, shards: int, chunk_rows: int = 137) -> set[int]:
    batches = [
        (c, linededup.line_pairs(texts[a : a + chunk_rows]))
        for c, a in enumerate(range(0, len(texts), chunk_rows))
    ]
    found = linededup.run_in_memory(batches, shards, threshold)
    return {k for keys in found.values() for k in keys.tolist()}


def test_normalised_keys_ignore_case_whitespace_kinds_long_lines_digits_and_invisible_marks():
    n = linededup.normalise
    banner = "We value YOUR privacy: our 1284 partners store and access information on your device."
    assert (
        n(banner)
        == n(banner.lower().replace("1284", "9731"))
        == ("we value your privacy: our 0000 partners store and access information on your device.")
    )
    assert n("\u00a0We\u2003value\u3000your\u202fprivacy 7\u200b") == "we value your privacy 7"
    # A long CJK line (a character counts as a word) folds fullwidth and Arabic-Indic digits too.
    ja = "当サイトでは{}社のパートナーが、お使いの端末に情報を保存します。"
    assert n(ja.format("１２３")) == n(ja.format("987")) == n(ja.format("٣٤٥"))
    assert n("soft\u00adhyphen") == "softhyphen"
    assert n("a\u200eb\u2066c\u2069d\u202ae") == "abcde"  # direction marks and isolates
    assert n("a b") != n("ab")  # whitespace collapses, it does not vanish


def test_short_lines_keep_their_digits():
    """In a short line a number is the content: 2 eggs are not 3 eggs."""
    n = linededup.normalise
    assert n("2 eggs") != n("3 eggs") and n("Page 3 of 12") == "page 3 of 12"
    assert n("We  value\tYOUR privacy 2024") == "we value your privacy 2024"


def test_cookie_banner_across_1000_pages_of_50_hosts_in_two_scripts_is_removed_everywhere():
    pages = _pages()
    texts = [p["text"] for p in pages]
    repeated = _repeated(texts, threshold=10, shards=4)
    # The reference: distinct documents per normalised line, counted the slow way.
    docs_per_line = Counter(
        k for t in texts for k in {linededup.normalise(x) for x in t.splitlines()} - {""}
    )
    expected = {linededup._key(k) for k, c in docs_per_line.items() if c >= 10}
    assert repeated == expected
    # Two banners (one per script) and 50 footers (20 pages each), nothing else.
    assert len(repeated) == 2 + 50
    for p in pages:
        text, removed = linededup.strip_repeated(p["text"], repeated)
        assert p["banner"].strip() not in text and "Media group" not in text
        assert all(para in text for para in p["paras"])
        footer = f"Media group of {_host(p['host'])}: editorial office."
        assert removed == len(p["banner"]) + len(footer)
    # The shuffle's shape does not change the answer.
    assert _repeated(texts, 10, shards=1) == _repeated(texts, 10, shards=16, chunk_rows=50)
    assert repeated == _repeated(texts, 10, shards=7, chunk_rows=1000)


def test_a_line_repeated_inside_one_document_counts_once():
    chorus = "Row, row, row your boat, gently down the stream."
    song = "\n".join([chorus] * 40 + ["The last verse is different."])
    others = [f"Page {_host(i)} quotes the song.\n{chorus}" for i in range(8)]
    # 1 + 8 documents hold the line: below 10, however often the song repeats it.
    assert _repeated([song, *others], threshold=10, shards=3) == set()
    ninth = f"Another page.\n{chorus}"
    got = _repeated([song, *others, ninth], threshold=10, shards=3)
    assert got == {linededup._key(linededup.normalise(chorus))}
    text, removed = linededup.strip_repeated(song, got)
    assert text == "The last verse is different." and removed == 40 * len(chorus)


def test_byte_identical_pages_count_once():
    page = "Opening hours of the town museum.\nMonday to Friday, nine to five."
    # One page under 30 URLs is the exact de-duplication's business: it must not vanish here.
    assert _repeated([page] * 30, threshold=10, shards=2) == set()
    near = [page + f"\nVisitor note {_host(i)}." for i in range(10)]
    assert len(_repeated(near, threshold=10, shards=2)) == 2


def test_table_rows_and_image_placeholders_are_never_removed():
    rows = [
        "| Year | Revenue |",
        "|---|---|",
        "| 2020 | 5 |",
        "![logo](/img/logo.png)",
        "![a](x.png) ![b](y.png)",
        "<|image|>",
    ]
    texts = [f"Report {_host(i)} of the season.\n" + "\n".join(rows) for i in range(50)]
    assert _repeated(texts, threshold=10, shards=2) == set()
    # The same words outside a table row are an ordinary line.
    assert len(_repeated([f"Report {_host(i)}.\nYear | Revenue" for i in range(12)], 10, 2)) == 1


C_PROGRAM = [
    "#include <stdio.h>",
    "int main(void) {",
    '    printf("hello\\n");',
    "    return 0;",
    "}",
]
PY_FENCED = ["```python", "import os", "", "for name in os.listdir('.'):", "print(name)", "```"]
PY_INDENTED = ["    total = 0", "    for x in values:", "        total += x"]
ONE_LINERS = ["from pathlib import Path", "def main(argv):", "main()", "x = load('data')"]


def test_code_is_never_removed_however_many_pages_share_it():
    """A program that twelve tutorials share is content: fenced and indented code blocks and
    lines that read as code (`linededup.is_kept_always`) stay; the shared prose around them is
    still boilerplate to the count."""
    code = [*C_PROGRAM, *PY_FENCED, *PY_INDENTED, *ONE_LINERS]
    texts = [
        "\n".join([f"Tutorial {_host(i)} on reading files.", "Here is the program:", *code])
        for i in range(12)
    ]
    repeated = _repeated(texts, threshold=10, shards=3)
    assert repeated == {linededup._key(linededup.normalise("Here is the program:"))}
    text, removed = linededup.strip_repeated(texts[0], repeated)
    assert text.splitlines() == [f"Tutorial {_host(0)} on reading files.", *code]
    assert removed == len("Here is the program:")
    # The same lines outside a code block, without code's look, are ordinary lines.
    plain = [f"Tutorial {_host(i)}.\nprint name\nfor name in files" for i in range(12)]
    assert len(_repeated(plain, threshold=10, shards=2)) == 2


def test_recipe_quantities_are_content_not_boilerplate():
    """Twelve recipes whose short ingredient lines differ only in their numbers: each quantity
    is in at most 6 of them, under the threshold, so every ingredient line stays (folding
    digits made "2 eggs" and "3 eggs" one line in all 12)."""
    texts = [
        "\n".join(
            [
                f"Grandmother {_host(i)}'s sponge cake, as the family bakes it.",
                f"{i % 3 + 1} eggs",
                f"{i % 2 + 1} cups flour",
                f"{200 + i} g butter",
                f"Bake for {20 + i} minutes.",
            ]
        )
        for i in range(12)
    ]
    assert _repeated(texts, threshold=10, shards=3) == set()


def test_pages_differing_only_in_numbers_count_once():
    """A calendar's month pages (the same lines, other numbers) are one document to the count,
    as byte-identical copies are: their lines are left to the other steps."""
    months = [
        "\n".join([f"Events in week {w} of {y}", "No events are planned."])
        for w, y in [(k, 2000 + k) for k in range(30)]
    ]
    assert _repeated(months, threshold=10, shards=2) == set()


def test_crlf_and_other_line_breaks_survive_the_rewrite():
    text = "keep one\r\nbanner line\r\nkeep two\u2028banner line\rkeep three"
    key = linededup._key(linededup.normalise("banner line"))
    out, removed = linededup.strip_repeated(text, {key})
    assert out == "keep one\r\nkeep two\u2028keep three" and removed == 22


def test_a_huge_document_is_counted_and_rewritten_in_one_pass():
    rng = random.Random(1)
    body = [" ".join(rng.choice(EN_WORDS) for _ in range(12)) + f" {i}." for i in range(40_000)]
    huge = "\n".join(["Subscribe to the weekly digest of the harbour.", *body])
    small = [
        f"Small page {_host(i)} of the harbour.\nSubscribe to the weekly digest of the harbour."
        for i in range(9)
    ]
    got = _repeated([huge, *small], threshold=10, shards=4)
    # Digits are normalised, so body lines differing only in their number are one key: the
    # huge page counts once for it, below the threshold; the digest line is in 10 documents.
    assert got == {linededup._key(linededup.normalise(small[0].splitlines()[1]))}
    text, removed = linededup.strip_repeated(huge, got)
    assert text == "\n".join(body) and removed == len(small[0].splitlines()[1])


def test_threshold_is_a_share_of_the_corpus_between_floor_and_cap():
    cfg = LineDedupConfig()
    assert linededup.threshold(cfg, 400) == cfg.min_docs  # a demo-sized corpus: the floor
    assert linededup.threshold(cfg, 10_000) == 50
    assert linededup.threshold(cfg, 10_000_000) == cfg.max_docs
    assert linededup.threshold(LineDedupConfig(max_docs=None), 10_000_000) == 50_000
    with pytest.raises(ConfigError, match="line_dedup.min_docs"):
        config_from_dict({"line_dedup": {"min_docs": 1}})


# --- the stage: both executors, the drop reason, the column --------------------------------

PROSE = (
    "The old stone bridge over the river was rebuilt after the flood of the spring, and the "
    "village council paid for the work with money raised at the summer market by the families "
    "who live on both banks and cross it every morning on their way to the fields."
)
BANNERS = [
    "Our partners process device identifiers for audience measurement and content delivery.",
    "Read the latest regional stories from our team of local reporters every weekday.",
    "Continue reading with a subscription to the printed weekend edition of the paper.",
]


def _corpus(tmp_path):
    rows = []
    for i in range(40):
        text = "\n".join(
            [BANNERS[0], f"Story {_host(i)}. " + PROSE, BANNERS[1], PROSE[::-1][: 60 + i]]
        )
        rows.append({"id": f"s{i:03d}", "url": f"http://10.0.0.{i % 5}/a/{i}", "text": text})
    # Mostly banners: left with a dozen words, which the original (46 words) was not.
    rows.append(
        {
            "id": "mostly-banners",
            "url": "http://10.0.0.9/b",
            "text": "\n".join([*BANNERS, "A short note on the bridge repairs this week."]),
        }
    )
    # Too short even with its banner: it reads as it would without line de-duplication.
    rows.append({"id": "short-anyway", "url": "http://10.0.0.9/c", "text": BANNERS[0] + "\nHi."})
    rows += _two_sites()
    for r in rows:
        r["training_allowed"] = True
    src = tmp_path / "in"
    src.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), src / "documents.parquet")
    return src


ARTICLE = (
    "The regional rail operator will add a late evening train between the two valley towns from "
    "next month, after commuters and students asked for a way home after evening classes and "
    "shifts; the council expects the service to run at least until the end of the year."
)
CHROME = {
    "a": [
        "The Lakeside Courier is written and printed by a small cooperative of neighbours.",
        "Every edition of the Lakeside Courier reaches readers across the whole northern shore.",
        "Letters from readers of the Lakeside Courier appear in print on the first weekend.",
    ],
    "b": [
        "Hillcrest Evening Record has covered the market towns of the western hills for decades.",
        "Reporters of the Hillcrest Evening Record visit the weekly council meetings in person.",
        "Hillcrest Evening Record stories may be quoted with a link back to the original page.",
    ],
}
NOUNS = "orchard ferry library bakery harbour chapel meadow quarry school garden".split()


def _two_sites() -> list[dict]:
    """Two sites of ten pages, each page with its site's three chrome lines; page 0 of each
    carries the same article (one word changed). The chrome outweighs the article: only
    without it are the two copies near duplicates."""
    rng = random.Random(3)
    rows = []
    for site, ip in (("a", 1), ("b", 2)):
        for i in range(10):
            if i == 0:
                body = ARTICLE if site == "a" else ARTICLE.replace("students", "pupils")
            else:
                body = " ".join(
                    f"The {rng.choice(NOUNS)} by the {rng.choice(NOUNS)} opened again on "
                    f"{rng.choice(['Monday', 'Friday', 'Sunday'])}, and the {rng.choice(NOUNS)} "
                    f"next to it will follow soon, the owners said."
                    for _ in range(3)
                )
            text = "\n".join([CHROME[site][0], body, *CHROME[site][1:]])
            rows.append({"id": f"{site}-{i:02d}", "url": f"http://10.0.1.{ip}/n/{i}", "text": text})
    return rows


CFG = {"quality": {"use_default_models": False}, "pii": False}


def _no_paths(summary: dict, out) -> dict:
    return {k: v for k, v in summary.items() if not (isinstance(v, str) and str(out) in v)}


@pytest.mark.timeout(240)
def test_both_executors_write_the_same_bytes_with_lines_removed(tmp_path):
    from pipelines.beam.filter import BeamExecutor

    src = _corpus(tmp_path)
    local = run_filter(src, tmp_path / "local", config=CFG)
    beam = run_filter(
        src, tmp_path / "beam", config=CFG, executor=BeamExecutor(["--runner=DirectRunner"])
    )
    for name in ("annotated.parquet", "documents.parquet", "dup_clusters.parquet"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "beam" / name).read_bytes()
    assert _no_paths(local, tmp_path / "local") == _no_paths(beam, tmp_path / "beam")
    ann = {r["id"]: r for r in pq.read_table(tmp_path / "local" / "annotated.parquet").to_pylist()}
    story = ann["s007"]
    assert story["repeated_chars_removed"] == len(BANNERS[0]) + len(BANNERS[1])
    assert BANNERS[0] not in story["text"] and "Story ah." in story["text"]
    # The stories differ only in their last line: without the banners they are near copies.
    assert ann["s000"]["drop_reason"] is None and story["duplicate_of"] == "s000"
    m = ann["mostly-banners"]
    assert m["drop_reason"] == linededup.REASON
    assert m["repeated_chars_removed"] == len(BANNERS[0]) + len(BANNERS[1])  # BANNERS[2]: 2 docs
    s = ann["short-anyway"]
    assert (s["drop_reason"], s["repeated_chars_removed"]) == ("too_short", 0)
    assert local["dropped"].get(linededup.REASON) == 1
    # Without its site's chrome, the article's copy on the other site is a near duplicate. The
    # copies tie (no quality model here) and b-00's text is the shorter ("pupils", "students").
    assert (ann["a-00"]["drop_reason"], ann["a-00"]["duplicate_of"]) == ("near_duplicate", "b-00")
    assert all(ann[f"{s}-{i:02d}"]["drop_reason"] is None for s in "ab" for i in range(1, 10))
    assert local["line_dedup_threshold"] == 10  # 42 rows: the floor
    assert "repeated_boilerplate" in (tmp_path / "local" / "funnel.md").read_text()


def test_turned_off_it_removes_nothing(tmp_path):
    src = _corpus(tmp_path)
    run_filter(src, tmp_path / "off", config={**CFG, "line_dedup": {"enabled": False}})
    ann = pq.read_table(tmp_path / "off" / "annotated.parquet")
    assert set(ann["repeated_chars_removed"].to_pylist()) == {0}
    assert BANNERS[0] in ann["text"][0].as_py()
    rows = {r["id"]: r for r in ann.to_pylist()}
    assert rows["b-00"]["drop_reason"] is None  # the sites' chrome keeps the copies apart


def test_input_column_of_the_same_name_is_replaced(tmp_path):
    from filters.pipeline import output_schema

    schema = output_schema(
        pa.schema(
            [("id", pa.string()), ("text", pa.string()), ("repeated_chars_removed", pa.string())]
        )
    )
    assert schema.field("repeated_chars_removed").type == pa.int64()
    assert schema.names.count("repeated_chars_removed") == 1


def test_pairs_are_distinct_per_document_and_line():
    pairs = linededup.line_pairs(["a\na\nb", "a\nb", None, ""])
    assert len(pairs) == 4 and np.all(np.diff(pairs["line"].astype(np.float64)) >= 0)
