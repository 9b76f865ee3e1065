"""Per-step statistics of a filter run: documents, characters and tokens in and out of each step,
per language and for all languages (`stats.json` in the filter output directory).

The steps are the filter's drop reasons grouped in the order the filter applies them
(`STEPS`); a reason no step names is a step of its own, before the de-duplication. The first
step, `clean`, drops nothing: it is where the text is rewritten (repeated lines removed, PII
scrubbed, boilerplate lines stripped), so its characters go from the input's text to the text
the later steps judge. A document dropped at a step counts in that step's input, not in its
output, and in neither of the later steps.

Computed from the run's outputs (the input documents.parquet and annotated.parquet, whose rows
are in input order), streamed a batch at a time: both executors write identical annotated
files, so they write identical statistics.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from filters.config import CHAR_LANGS

TOKENIZER = (
    "whitespace words (runs of characters that are not Unicode white space); in "
    + ", ".join(sorted(CHAR_LANGS))
    + " (filters.config.CHAR_LANGS) every letter or digit is a token"
)
_WORD = r"[^\s\p{Z}\x0b]+"
_CHAR_TOKEN = r"[\p{L}\p{N}]"

# (step, its drop reasons; a name ending in ":" matches every reason it prefixes), in order.
STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("clean", ()),
    ("consent", ("training_not_allowed",)),
    ("url", ("url_blocked:",)),
    ("line_dedup", ("repeated_boilerplate",)),
    ("language", ("empty_text", "unsupported_language", "low_lang_score")),
    ("decontamination", ("contaminated",)),
    (
        "heuristics",
        (
            "boilerplate",
            "encoding_errors",
            "too_short",
            "too_long",
            "symbol_ratio",
            "repeated_lines",
            "repeated_ngrams",
        ),
    ),
    ("safety", ("toxic", "nsfw", "unsafe_content")),
    ("quality", ("no_sentences", "low_quality")),
)
DEDUP_STEP = ("dedup", ("exact_duplicate", "url_duplicate", "near_duplicate"))
FIGURES = ("docs", "chars", "tokens")
BATCH_ROWS = 4096


def step_of(reason: str) -> str:
    """The step that gives this drop reason (the reason itself when no step names it)."""
    for step, reasons in (*STEPS, DEDUP_STEP):
        for r in reasons:
            if reason == r or (r.endswith(":") and reason.startswith(r)):
                return step
    return reason


def _rebatch(batches: Iterator[pa.RecordBatch], size: int) -> Iterator[pa.Table]:
    """The same rows in tables of exactly `size` rows (the last may be shorter)."""
    buf: list[pa.RecordBatch] = []
    held = 0
    for b in batches:
        buf.append(b)
        held += b.num_rows
        while held >= size:
            t = pa.Table.from_batches(buf).combine_chunks()
            yield t.slice(0, size)
            rest = t.slice(size)
            buf, held = rest.to_batches(), rest.num_rows
    if held:
        yield pa.Table.from_batches(buf)


def tokens_per_row(text: pa.ChunkedArray | pa.Array, char_lang: pa.Array) -> pa.Array:
    """Tokens per row: one regex pass per row, the one its language needs."""
    text = text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text
    char_lang = char_lang.combine_chunks() if isinstance(char_lang, pa.ChunkedArray) else char_lang
    if not pc.any(char_lang).as_py():
        return pc.count_substring_regex(text, _WORD)
    if pc.all(char_lang).as_py():
        return pc.count_substring_regex(text, _CHAR_TOKEN)
    out = np.zeros(len(text), dtype=np.int64)
    mask = char_lang.to_numpy(zero_copy_only=False)
    for sel, pattern in ((mask, _CHAR_TOKEN), (~mask, _WORD)):
        rows = np.flatnonzero(sel)
        out[rows] = pc.count_substring_regex(text.take(pa.array(rows)), pattern).to_numpy()
    return pa.array(out)


def _per_row(inp: pa.Table, ann: pa.Table) -> pa.Table:
    """lang, reason and the input's and the output's chars and tokens of each row."""
    if not inp["id"].cast(pa.string()).equals(ann["id"].cast(pa.string())):
        raise RuntimeError(
            "annotated.parquet rows are not in the input's order (ids differ); "
            "re-run the filter into an empty directory"
        )
    lang = pc.fill_null(ann["lang"], "und")
    char_lang = pc.is_in(lang, value_set=pa.array(sorted(CHAR_LANGS)))
    text_in = pc.fill_null(inp["text"].cast(pa.string()), "")
    text_out = pc.fill_null(ann["text"], "")
    return pa.table(
        {
            "lang": lang,
            "reason": pc.fill_null(ann["drop_reason"], "kept"),
            "chars_in": pc.utf8_length(text_in).cast(pa.int64()),
            "tokens_in": tokens_per_row(text_in, char_lang).cast(pa.int64()),
            "chars_out": pc.utf8_length(text_out).cast(pa.int64()),
            "tokens_out": tokens_per_row(text_out, char_lang).cast(pa.int64()),
        }
    )


def reason_totals(input_path: str | Path, annotated_path: str | Path) -> list[dict]:
    """Per (lang, reason): documents, and chars and tokens of the input and the output text."""
    cols_in, cols_out = ["id", "text"], ["id", "lang", "drop_reason", "text"]
    parts = []
    with pq.ParquetFile(input_path) as fin, pq.ParquetFile(annotated_path) as fout:
        if fin.metadata.num_rows != fout.metadata.num_rows:
            raise RuntimeError(
                f"{annotated_path}: {fout.metadata.num_rows} rows for "
                f"{fin.metadata.num_rows} input rows; re-run the filter"
            )
        a = _rebatch(fin.iter_batches(BATCH_ROWS, columns=cols_in), BATCH_ROWS)
        b = _rebatch(fout.iter_batches(BATCH_ROWS, columns=cols_out), BATCH_ROWS)
        for inp, ann in zip(a, b, strict=True):
            rows = _per_row(inp, ann)
            sums = [(c, "sum") for c in ("chars_in", "tokens_in", "chars_out", "tokens_out")]
            parts.append(rows.group_by(["lang", "reason"]).aggregate([("lang", "count"), *sums]))
    if not parts:
        return []
    t = pa.concat_tables(parts)
    sums = [(c, "sum") for c in ("lang_count", "chars_in_sum", "tokens_in_sum")]
    sums += [(c, "sum") for c in ("chars_out_sum", "tokens_out_sum")]
    t = t.group_by(["lang", "reason"]).aggregate(sums)
    out = [
        {
            "lang": r["lang"],
            "reason": r["reason"],
            "docs": r["lang_count_sum"],
            "chars_in": r["chars_in_sum_sum"],
            "tokens_in": r["tokens_in_sum_sum"],
            "chars": r["chars_out_sum_sum"],
            "tokens": r["tokens_out_sum_sum"],
        }
        for r in t.to_pylist()
    ]
    return sorted(out, key=lambda r: (r["lang"], r["reason"]))


def step_order(reasons: set[str]) -> list[tuple[str, list[str]]]:
    """(step, the reasons of this run it gives), in the filter's order; every step of `STEPS`
    and the dedup, plus one step per reason no step names, before the dedup."""
    named = [(s, sorted(r for r in reasons if step_of(r) == s)) for s, _ in STEPS]
    others = sorted({r for r in reasons if step_of(r) == r})
    dedup = sorted(r for r in reasons if step_of(r) == DEDUP_STEP[0])
    return named + [(r, [r]) for r in others] + [(DEDUP_STEP[0], dedup)]


def _steps_for(totals: list[dict], order: list[tuple[str, list[str]]], lang: str) -> list[dict]:
    rows = [t for t in totals if lang == "all" or t["lang"] == lang]
    left = {
        "docs": sum(t["docs"] for t in rows),
        "chars": sum(t["chars_in"] for t in rows),
        "tokens": sum(t["tokens_in"] for t in rows),
    }
    out = []
    for step, reasons in order:
        if step == "clean":
            after = {
                "docs": left["docs"],
                "chars": sum(t["chars"] for t in rows),
                "tokens": sum(t["tokens"] for t in rows),
            }
        else:
            gone = [t for t in rows if t["reason"] in reasons]
            after = {k: left[k] - sum(t[k] for t in gone) for k in FIGURES}
        entry = {"lang": lang, "step": step, "reasons": reasons}
        for k in FIGURES:
            entry[f"{k}_in"], entry[f"{k}_out"] = left[k], after[k]
        out.append(entry)
        left = after
    return out


def step_stats(input_path: str | Path, annotated_path: str | Path) -> dict:
    """The `stats.json` document: the tokenizer, the step order and one row per (language or
    `all`, step) with docs/chars/tokens in and out."""
    totals = reason_totals(input_path, annotated_path)
    order = step_order({t["reason"] for t in totals} - {"kept"})
    langs = sorted({t["lang"] for t in totals})
    rows = [r for lang in ["all", *langs] for r in _steps_for(totals, order, lang)]
    return {
        "tokenizer": TOKENIZER,
        "characters": "Unicode code points of the text column",
        "steps": [s for s, _ in order],
        "rows": rows,
    }


def stats_markdown(stats: dict) -> str:
    """The all-languages rows as a Markdown table (kept share of each figure after each step)."""
    lines = [
        "| step | docs in | docs out | chars in | chars out | tokens in | tokens out |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in stats["rows"]:
        if r["lang"] != "all":
            continue
        vals = [r[f"{k}_{d}"] for k in FIGURES for d in ("in", "out")]
        lines.append(f"| {r['step']} | " + " | ".join(f"{v:,}" for v in vals) + " |")
    return "\n".join(lines) + f"\n\nTokens: {stats['tokenizer']}.\n"
