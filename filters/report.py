"""Summaries of a filter run from its workers' counts: the funnel (kept and dropped per reason per
language) as Markdown and a plot, the per-host language shares the crawler reads, dedup rate and
tokens kept."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa


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


def host_languages(counts: dict) -> pa.Table:
    """host, lang, docs, share: the language mix of each host (all documents, kept or not), from
    the workers' counts (`filters.pipeline.merge_counts`)."""
    per_host: dict[str, list] = {}
    for host, lang, n in counts["hosts"]:
        per_host.setdefault(host, []).append((lang, n))
    rows = []
    for host in sorted(per_host):
        total = sum(n for _, n in per_host[host])
        rows += [
            {"host": host, "lang": lang, "docs": n, "share": n / total}
            for lang, n in sorted(per_host[host])
        ]
    schema = pa.schema(
        [
            ("host", pa.string()),
            ("lang", pa.string()),
            ("docs", pa.int64()),
            ("share", pa.float64()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def summary(counts: dict) -> dict:
    """Counts, dedup rate, tokens kept and which languages were left unscored, from the workers'
    counts."""
    dropped: dict[str, int] = {}
    for _, outcome, n in counts["funnel"]:
        if outcome != "kept":
            dropped[outcome] = dropped.get(outcome, 0) + n
    dups = sum(n for reason, n in dropped.items() if reason.endswith("_duplicate"))
    inputs = counts["kept"] + dups
    scored = {(lang, ok): n for lang, ok, n in counts["scored"]}
    return {
        "rows_in": counts["rows"],
        "rows_kept": counts["kept"],
        "dropped": dict(sorted(dropped.items())),
        "dedup_rate": dups / inputs if inputs else 0.0,
        "tokens_kept": counts["tokens_kept"],
        "unscored_languages": sorted(
            {lang for (lang, ok) in scored if not ok and not scored.get((lang, True))}
        ),
    }
