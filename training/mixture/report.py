"""Token accounting of a built mixture: share checks, table rows, Markdown and a composition plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _check(level: str, name: str, target_share: float, share: float, tol: float) -> dict[str, Any]:
    return {
        "level": level,
        "name": name,
        "target_share": target_share,
        "share": share,
        "deviation": share - target_share,
        "ok": abs(share - target_share) <= tol,
    }


def accounting_checks(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Realised vs target token shares per bucket, group, weighted source and curriculum stage.

    Buckets compare their share of the placed tokens with their share of all targets; groups and
    sources compare token counts as shares of all targets, so a shortfall elsewhere does not skew them.
    With more than one stage, each stage's buckets (`<bucket>[<stage>]`) compare their tokens in
    the stage with their stage weight, both as shares of the stage's target tokens.
    """
    tol = float(manifest.get("tolerance", 0.01))
    buckets = manifest["buckets"]
    total = sum(b["target_tokens"] for b in buckets.values())
    placed = sum(b["tokens"] for b in buckets.values())
    if total <= 0 or placed <= 0:
        return []
    out = []
    for name, b in buckets.items():
        out.append(_check("bucket", name, b["target_tokens"] / total, b["tokens"] / placed, tol))
        for g, gs in b["groups"].items():
            if gs.get("target_tokens"):
                out.append(
                    _check(
                        "group",
                        f"{name}.{g}",
                        gs["target_tokens"] / total,
                        gs["tokens"] / total,
                        tol,
                    )
                )
    for s in manifest.get("sources", []):
        if s.get("target_tokens"):
            out.append(
                _check(
                    "source",
                    f"{s['bucket']}[{s['index']}]",
                    s["target_tokens"] / total,
                    s["tokens"] / total,
                    tol,
                )
            )
    return out + _stage_checks(manifest, tol)


def _stage_checks(manifest: dict[str, Any], tol: float) -> list[dict[str, Any]]:
    stages = manifest.get("stages") or []
    if len(stages) < 2:  # one stage is the whole run: the bucket checks cover it
        return []
    out = []
    for st in stages:
        total = st.get("target_tokens") or 0
        for b, bs in (st.get("buckets") or {}).items():
            if total > 0:
                out.append(
                    _check(
                        "stage",
                        f"{b}[{st['name']}]",
                        bs["target_tokens"] / total,
                        bs["tokens"] / total,
                        tol,
                    )
                )
    return out


def accounting_rows(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per bucket/group: weight, available, target, placed tokens, epochs, realised share."""
    placed = max(sum(b["tokens"] for b in manifest["buckets"].values()), 1)
    rows = []
    for name, b in manifest["buckets"].items():
        rows.append(
            {
                "bucket": name,
                "group": "",
                "weight": b["weight"],
                "available": sum(g.get("available_tokens", 0) for g in b["groups"].values()),
                "target": b["target_tokens"],
                "tokens": b["tokens"],
                "epochs": None,
                "share": b["tokens"] / placed,
            }
        )
        for g, gs in b["groups"].items():
            rows.append(
                {
                    "bucket": name,
                    "group": g,
                    "weight": None,
                    "available": gs.get("available_tokens", 0),
                    "target": gs.get("target_tokens", 0),
                    "tokens": gs.get("tokens", 0),
                    "epochs": gs.get("epochs"),
                    "share": gs.get("tokens", 0) / placed,
                }
            )
    return rows


def summary_lines(manifest: dict[str, Any]) -> list[str]:
    """Human lines under the table: sequences, waste, shortfalls, empty buckets, failed checks."""
    lines = [
        f"{manifest['name']}: {manifest['num_sequences']:,} sequences × {manifest['seq_len']} = "
        f"{manifest['tokens']:,} document tokens in {len(manifest['shards'])} shard(s); "
        f"padding {manifest['padding_tokens']:,} (waste {manifest['waste_fraction']:.4%}); "
        f"eval sets: {len(manifest['eval'])}",
    ]
    if manifest.get("image_tokens"):
        images, rejects = manifest.get("images") or {}, manifest.get("rejects") or {}
        shares = (manifest.get("modality_shares") or {}).get("buckets", {})
        parts = ", ".join(
            f"{k} {v['share']:.4f}/{v['target_share']:.4f} ({v['images']:,} images)"
            for k, v in shares.items()
        )
        lines.append(
            f"images: {manifest['image_tokens']} tokens each; {images.get('count', 0):,} stored, "
            f"{images.get('shard_occurrences', 0):,} blocks in shards, "
            f"{images.get('eval_occurrences', 0):,} in eval; shares realised/target: {parts}"
        )
        if rejects.get("count"):
            lines.append(f"REJECTED image-source rows/images: {rejects['by_reason']}")
    elif (manifest.get("rejects") or {}).get("count"):
        lines.append(f"REJECTED text rows (rejects.parquet): {manifest['rejects']['by_reason']}")
    for s in manifest.get("sources", []):
        for f in s.get("unconsented_files", []):
            lines.append(
                f"NOT CONSENTED {s['bucket']}[{s['index']}] (optional): {f['rows']:,} rows; "
                f"{f['problem']}"
            )
    for shared in manifest.get("shared_rows", []):
        lines.append(
            f"SHARED ROWS: {shared['rows']:,} rows of {shared['file']} are read by "
            f"{', '.join(shared['sources'])} (a row held out for eval stays out of all of them)"
        )
    excluded = {
        f"{s['bucket']}[{s['index']}]": s["contaminated_excluded"]
        for s in manifest.get("sources", [])
        if s.get("contaminated_excluded")
    }
    if excluded:
        parts = ", ".join(f"{k} {v:,}" for k, v in excluded.items())
        lines.append(f"left out as contaminated (eval-set overlap): {parts}")
    for s in manifest.get("shortfalls", []):
        lines.append(
            f"SHORTFALL {s['bucket']}: {s['reason']} ({s['fraction_missing']:.1%} of its target)"
        )
    stages = manifest.get("stages") or []
    unchecked = len(stages) > 1 and any("buckets" not in st for st in stages)
    if unchecked:
        lines.append(
            "STAGE SHARES UNCHECKED: manifest.json stages[] record no per-bucket tokens "
            "(built before they were recorded); rebuild the mixture to check them"
        )
    bad = [c for c in manifest.get("checks", []) if not c["ok"]]
    for c in bad:
        lines.append(
            f"OFF TARGET {c['level']} {c['name']}: share {c['share']:.4f} vs {c['target_share']:.4f}"
        )
    if not bad:
        lines.append(
            f"all {'checked ' if unchecked else ''}shares within tolerance "
            f"{manifest.get('tolerance', 0.01):g} of their targets"
        )
    return lines


def markdown_table(manifest: dict[str, Any]) -> str:
    """The accounting as a Markdown table plus summary lines (for Dagster metadata)."""
    head = "| bucket | group | weight | available | target | tokens | epochs | share |\n|---|---|---|---|---|---|---|---|"
    body = []
    for r in accounting_rows(manifest):
        weight = "" if r["weight"] is None else f"{r['weight']:.3f}"
        epochs = "" if r["epochs"] is None else f"{r['epochs']:.2f}"
        body.append(
            f"| {r['bucket']} | {r['group']} | {weight} | {r['available']:,} | {r['target']:,} | "
            f"{r['tokens']:,} | {epochs} | {r['share']:.4f} |"
        )
    return "\n".join([head, *body, "", *(f"- {line}" for line in summary_lines(manifest))])


def plot_composition(manifest: dict[str, Any], out: str | Path) -> Path:
    """Bar chart of target vs realised tokens per bucket and group; written as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [
        r
        for r in accounting_rows(manifest)
        if r["group"] or len(manifest["buckets"][r["bucket"]]["groups"]) <= 1
    ]
    labels = [f"{r['bucket']}.{r['group']}" if r["group"] else r["bucket"] for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(rows) + 2), 4))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["target"] for r in rows], width=0.4, label="target")
    ax.bar([i + 0.2 for i in x], [r["tokens"] for r in rows], width=0.4, label="placed")
    ax.set_xticks(list(x), labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("tokens")
    ax.set_title(f"mixture {manifest['name']}: composition")
    ax.legend()
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
