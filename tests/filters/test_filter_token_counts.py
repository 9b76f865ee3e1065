"""tokens_kept (funnel.json, the CLI summary) is counted by the rule funnel.md's step table
states: the last step's "tokens out" is tokens_kept."""

import pyarrow as pa
import pyarrow.parquet as pq

from filters.pipeline import merge_counts, partial_counts
from filters.report import count_tokens, summary
from filters.stats import TOKENIZER, stats_markdown, step_stats

# Texts whose words and whitespace runs differ ("don't", "e-mail", "3.5", "—", "<EMAIL>"), a
# CJK text (one token per letter or digit) and a dropped row, which counts in neither.
ROWS = [
    ("a", "en", None, "Don't e-mail me — it's 3.5 km away: <EMAIL> (really)."),
    ("b", "zh", None, "中文文本，共 12 字。Hello, world!"),
    ("c", "de", "exact_duplicate", "Ein Duplikat, das nicht zählt."),
    ("d", "ja", None, "日本語のテキスト、です。"),
    ("e", "und", None, "und — no language; still kept?"),
]


def _annotated() -> list[dict]:
    return [
        {
            "id": i,
            "url": f"https://example.org/{i}",
            "lang": lang,
            "drop_reason": reason,
            "text": text,
            "quality_score": None,
            "contaminated": False,
            "contamination_benchmarks": None,
        }
        for i, lang, reason, text in ROWS
    ]


def test_tokens_kept_equals_the_last_steps_tokens_out(tmp_path):
    rows = _annotated()
    pq.write_table(
        pa.Table.from_pylist([{"id": r["id"], "text": r["text"]} for r in rows]),
        tmp_path / "documents.parquet",
    )
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "annotated.parquet")
    stats = step_stats(tmp_path / "documents.parquet", tmp_path / "annotated.parquet")
    last = [r for r in stats["rows"] if r["lang"] == "all"][-1]
    # Two workers' parts, summed as the executors do.
    counts = merge_counts([partial_counts(rows[:2]), partial_counts(rows[2:])])
    counts["kept"] = sum(r["drop_reason"] is None for r in rows)
    assert last["step"] == "dedup"
    assert summary(counts)["tokens_kept"] == last["tokens_out"] > 0
    line = next(x for x in stats_markdown(stats).splitlines() if x.startswith("| dedup"))
    assert line.endswith(f"| {last['tokens_out']:,} |")
    assert TOKENIZER in stats_markdown(stats)  # the rule funnel.md states is the one counted


def test_count_tokens_follows_the_stated_rule():
    # Whitespace words in spaced languages; every letter or digit in CJK ones.
    assert count_tokens(["Don't e-mail — me."], ["en"]) == 4
    assert count_tokens(["中文，12 字"], ["zh"]) == 5
    assert count_tokens([], []) == 0
