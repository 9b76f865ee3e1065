"""Summaries of a filter run from its workers' counts: the funnel (kept and dropped per reason per
language) as Markdown and a plot, the per-host language shares the crawler reads, dedup rate and
tokens kept."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa

# Funnel colours: Kelly's colours of maximum contrast (white left out; near pairs such as purple
# and violet kept apart among the fixed ones), then matplotlib's tab20b and tab20c, so a plot with
# up to 61 outcomes never repeats one. The filter's own outcomes keep
# a fixed colour (same reason, same colour in every run); any other reason (a new step's) hashes
# to one of the colours left, the next free one when two reasons of a plot land on the same.
PALETTE = (
    "#008856", "#222222", "#F38400", "#BE0032", "#0067A5", "#875692", "#F3C300", "#A1CAF1",
    "#C2B280", "#848482", "#E68FAC", "#F99379", "#8DB600", "#2B3D26", "#B3446C", "#654522",
    "#882D17", "#604E97", "#F6A600", "#DCD300", "#E25822",
    "#393B79", "#5254A3", "#6B6ECF", "#9C9EDE", "#637939", "#8CA252", "#B5CF6B", "#CEDB9C",
    "#8C6D31", "#BD9E39", "#E7BA52", "#E7CB94", "#843C39", "#AD494A", "#D6616B", "#E7969C",
    "#7B4173", "#A55194", "#CE6DBD", "#DE9ED6",
    "#3182BD", "#6BAED6", "#9ECAE1", "#C6DBEF", "#E6550D", "#FD8D3C", "#FDAE6B", "#FDD0A2",
    "#31A354", "#74C476", "#A1D99B", "#C7E9C0", "#756BB1", "#9E9AC8", "#BCBDDC", "#DADAEB",
    "#636363", "#969696", "#BDBDBD", "#D9D9D9",
)  # fmt: skip
FIXED_COLOURS = {
    reason: PALETTE[i]
    for i, reason in enumerate(
        (
            "kept", "training_not_allowed", "boilerplate", "unsafe_content", "low_quality",
            "near_duplicate", "exact_duplicate", "url_duplicate", "too_short", "empty_text",
            "unsupported_language", "low_lang_score", "encoding_errors", "too_long",
            "symbol_ratio", "repeated_lines", "repeated_ngrams",
        )
    )
}  # fmt: skip


def reason_colours(outcomes: list[str]) -> dict[str, str]:
    """A distinct colour per outcome: the fixed one of a known reason, else a stable hash slot."""
    import colorsys

    free = [c for c in PALETTE if c not in set(FIXED_COLOURS.values())]
    out = {o: FIXED_COLOURS[o] for o in outcomes if o in FIXED_COLOURS}
    used = set(out.values())
    extra = 0
    for o in sorted(set(outcomes) - set(out)):
        start = int(hashlib.sha256(o.encode()).hexdigest()[:8], 16)
        slots = (free[(start + k) % len(free)] for k in range(len(free)))
        colour = next((c for c in slots if c not in used), None)
        while colour is None or colour in used:  # more outcomes than colours: golden-ratio
            extra += 1  # steps round the hue circle
            r, g, b = colorsys.hsv_to_rgb((extra * 0.618033988749895) % 1.0, 0.7, 0.75)
            colour = f"#{round(255 * r):02X}{round(255 * g):02X}{round(255 * b):02X}"
        out[o] = colour
        used.add(colour)
    return out


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


def funnel_plot(rows: list[dict], path: Path, stats: dict | None = None) -> Path:
    """Stacked bars per language: kept and each drop reason; with `stats` (stats.json), beside
    them the share of the input's documents, characters and tokens left after each step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    langs = sorted({r["lang"] for r in rows})
    outcomes = ["kept"] + sorted({r["outcome"] for r in rows} - {"kept"})
    grid = {(r["lang"], r["outcome"]): r["docs"] for r in rows}
    colours = reason_colours(outcomes)
    width = max(5, len(langs) * 0.7 + 3)
    if stats:
        fig, (ax, steps_ax) = plt.subplots(1, 2, figsize=(width + 6, 4))
        _steps_panel(steps_ax, stats)
    else:
        fig, ax = plt.subplots(figsize=(width, 4))
    bottom = [0] * len(langs)
    for o in outcomes:
        vals = [grid.get((lang, o), 0) for lang in langs]
        ax.bar(langs, vals, bottom=bottom, label=o, color=colours[o])
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_ylabel("documents")
    ax.set_title("Filter funnel per language")
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _steps_panel(ax, stats: dict) -> None:
    """Documents, characters and tokens left after each step, as a share of the input."""
    rows = [r for r in stats["rows"] if r["lang"] == "all"]
    names = ["input"] + [r["step"] for r in rows]
    for key, style in (("docs", "o-"), ("chars", "s--"), ("tokens", "^:")):
        total = rows[0][f"{key}_in"] if rows else 0
        left = [total] + [r[f"{key}_out"] for r in rows]
        ax.plot(names, [100 * v / total if total else 0 for v in left], style, label=key)
    ax.set_ylabel("% of the input left")
    ax.set_ylim(0, 105)
    ax.set_title("After each step (all languages)")
    ax.tick_params(axis="x", labelrotation=60, labelsize=7)
    ax.legend(fontsize=7)


def count_tokens(texts: list[str], langs: list[str]) -> int:
    """Tokens of these texts by the rule funnel.md and stats.json state (`filters.stats.TOKENIZER`:
    whitespace words; in filters.config.CHAR_LANGS every letter or digit), so `tokens_kept` is the
    last step's "tokens out"."""
    import pyarrow.compute as pc

    from filters.config import CHAR_LANGS
    from filters.stats import tokens_per_row  # the step table's own counter

    if not texts:
        return 0
    char_lang = pc.is_in(pa.array(langs, pa.string()), value_set=pa.array(sorted(CHAR_LANGS)))
    return int(pc.sum(tokens_per_row(pa.array(texts, pa.string()), char_lang)).as_py() or 0)


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
