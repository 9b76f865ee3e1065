"""Summaries of an annotated table: the funnel (kept and dropped per reason per language),
the per-host language shares the crawler reads, dedup rate and tokens kept."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa

from common.inputs import url_host
from filters.heuristics import tokens


def funnel(table: pa.Table) -> list[dict]:
    """One row per (lang, outcome) with its document count; outcome is `kept` or a drop reason."""
    counts: Counter[tuple[str, str]] = Counter()
    for lang, reason in zip(
        table["lang"].to_pylist(), table["drop_reason"].to_pylist(), strict=True
    ):
        counts[(lang or "und", reason or "kept")] += 1
    return [
        {"lang": lang, "outcome": outcome, "docs": n}
        for (lang, outcome), n in sorted(counts.items())
    ]


def funnel_markdown(
    rows: list[dict], unscored: list[str], fallback: list[str] | None = None
) -> str:
    """The funnel as a Markdown table (languages as rows, outcomes as columns), then which
    configured languages were unscored and which the multilingual fallback scored."""
    langs = sorted({r["lang"] for r in rows})
    outcomes = ["kept"] + sorted({r["outcome"] for r in rows} - {"kept"})
    grid = {(r["lang"], r["outcome"]): r["docs"] for r in rows}
    lines = ["| lang | " + " | ".join(outcomes) + " | total |", "|---" * (len(outcomes) + 2) + "|"]
    for lang in langs:
        vals = [grid.get((lang, o), 0) for o in outcomes]
        lines.append(f"| {lang} | " + " | ".join(map(str, vals)) + f" | {sum(vals)} |")
    totals = [sum(grid.get((lang, o), 0) for lang in langs) for o in outcomes]
    lines.append("| **all** | " + " | ".join(map(str, totals)) + f" | {sum(totals)} |")
    if unscored:
        lines.append("")
        lines.append(
            "Quality unscored (no model; quality_score is NULL and never drops a document): "
            + ", ".join(sorted(unscored))
        )
    if fallback:
        lines.append("")
        lines.append(
            "Quality scored by the multilingual fallback (no model of their own): "
            + ", ".join(sorted(fallback))
        )
    return "\n".join(lines) + "\n"


def funnel_plot(rows: list[dict], path: Path) -> Path:
    """Stacked bars per language: kept and each drop reason."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    langs = sorted({r["lang"] for r in rows})
    outcomes = ["kept"] + sorted({r["outcome"] for r in rows} - {"kept"})
    grid = {(r["lang"], r["outcome"]): r["docs"] for r in rows}
    fig, ax = plt.subplots(figsize=(max(5, len(langs) * 0.7 + 3), 4))
    bottom = [0] * len(langs)
    for o in outcomes:
        vals = [grid.get((lang, o), 0) for lang in langs]
        ax.bar(langs, vals, bottom=bottom, label=o)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_ylabel("documents")
    ax.set_title("Filter funnel per language")
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def host_languages(table: pa.Table) -> pa.Table:
    """host, lang, docs, share: the language mix of each host (all documents, kept or not)."""
    per_host: dict[str, Counter[str]] = defaultdict(Counter)
    for url, lang in zip(table["url"].to_pylist(), table["lang"].to_pylist(), strict=True):
        per_host[url_host(url)][lang or "und"] += 1  # an unparseable URL counts under ''
    rows = []
    for host in sorted(per_host):
        total = sum(per_host[host].values())
        for lang, n in sorted(per_host[host].items()):
            rows.append({"host": host, "lang": lang, "docs": n, "share": n / total})
    schema = pa.schema(
        [
            ("host", pa.string()),
            ("lang", pa.string()),
            ("docs", pa.int64()),
            ("share", pa.float64()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def summary(table: pa.Table) -> dict:
    """Counts, dedup rate, tokens kept and which languages were left unscored."""
    reasons = table["drop_reason"].to_pylist()
    texts = table["text"].to_pylist()
    langs = table["lang"].to_pylist()
    kept = [i for i, r in enumerate(reasons) if r is None]
    dups = sum(1 for r in reasons if r and r.endswith("_duplicate"))
    dedup_inputs = len(kept) + dups
    scored = Counter()
    for lang, q in zip(langs, table["quality_score"].to_pylist(), strict=True):
        scored[(lang, q is not None and not math.isnan(q))] += 1  # NaN: tables written before NULL
    unscored = sorted({lang for (lang, ok) in scored if not ok and not scored[(lang, True)]})
    return {
        "rows_in": table.num_rows,
        "rows_kept": len(kept),
        "dropped": dict(Counter(r for r in reasons if r)),
        "dedup_rate": dups / dedup_inputs if dedup_inputs else 0.0,
        "tokens_kept": sum(len(tokens(texts[i], langs[i] or "")) for i in kept),
        "unscored_languages": unscored,
    }
