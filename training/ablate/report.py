"""Aggregate an ablation's runs and write results.json's content, report.md, plots, a Rich table."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from training.ablate.spec import AblationSpec
from training.ablate.stats import CONFIDENCE, paired_difference, t_interval

INTERVAL = (
    f"{CONFIDENCE:.0%} Student t interval over seeds (n-1 degrees of freedom); differences are "
    "paired by seed (same initial weights), each with its own t interval; none below 3 seeds"
)


def lower_is_better(metric: str) -> bool:
    return metric.startswith("bpb/")


def headline(metrics: list[str]) -> list[str]:
    """The metrics of the table: bits per byte (per set and language), acc_norm and acc per task."""
    bpb = [m for m in metrics if m.startswith("bpb/")]
    tasks = [m for m in metrics if not m.startswith("bpb/") and m.count("/") == 2]
    return bpb + tasks


def aggregate(
    spec: AblationSpec, arms: dict[str, Any], sets: dict[str, tuple[int, int]]
) -> dict[str, Any]:
    """Per arm and metric: mean and interval over seeds; per pair of arms: paired differences."""
    seeds = [str(s) for s in spec.seeds]
    out_arms: dict[str, Any] = {}
    for name, arm in arms.items():
        per_seed = {s: arm["runs"][s]["metrics"] for s in seeds}
        metrics = sorted(set.intersection(*(set(m) for m in per_seed.values())))
        out_arms[name] = {
            k: arm[k]
            for k in ("mixture", "steps", "tokens", "tokens_per_step", "mixture_tokens", "overlap")
        } | {
            "summary": {m: t_interval([per_seed[s][m] for s in seeds]) for m in metrics},
            "per_seed": per_seed,
            "loss_curves": {s: arm["runs"][s]["loss_curve"] for s in seeds},
            "run_dirs": {s: arm["runs"][s]["run_dir"] for s in seeds},
        }
    names = list(out_arms)
    shared = sorted(set.intersection(*(set(a["summary"]) for a in out_arms.values())))
    differences = {}
    for b, a in itertools.combinations(names, 2):  # later arm minus earlier arm
        pa, pb = out_arms[a]["per_seed"], out_arms[b]["per_seed"]
        differences[f"{a} - {b}"] = {
            m: paired_difference([pa[s][m] for s in seeds], [pb[s][m] for s in seeds])
            for m in shared
        }
    return {
        "name": spec.name,
        "config": spec.config,
        "stage": spec.stage,
        "tokens": spec.tokens,
        "seeds": spec.seeds,
        "interval": INTERVAL,
        "eval_sets": {k: {"texts": t, "items": i} for k, (t, i) in sets.items()},
        "metrics": headline(shared),
        "arms": out_arms,
        "differences": differences,
    }


def cell(d: dict[str, Any], digits: int = 3) -> str:
    if d["half"] is None:
        return f"{d['mean']:.{digits}f}"
    return f"{d['mean']:.{digits}f} ± {d['half']:.{digits}f}"


def diff_cell(metric: str, d: dict[str, Any]) -> str:
    text = cell(d)
    if d.get("excludes_zero"):
        better = (d["mean"] < 0) == lower_is_better(metric)
        text += " (better)" if better else " (worse)"
    return text


def markdown(results: dict[str, Any]) -> str:
    """report.md: the setup, the table per arm, the paired differences, the plots."""
    arms = results["arms"]
    names = list(arms)
    lines = [
        f"# Ablation `{results['name']}`",
        "",
        f"Proxy config `{results['config']}` ({results['stage']} recipe), "
        f"{results['tokens']:,} training tokens per run, seeds {results['seeds']}. "
        f"Intervals: {results['interval']}.",
        "",
        "| arm | mixture | steps | tokens | mixture tokens | eval n-gram overlap |",
        "|---|---|---|---|---|---|",
    ]
    for n, a in arms.items():
        ov = ", ".join(f"{k} {v:.2%}" for k, v in a["overlap"].items())
        lines.append(
            f"| {n} | `{a['mixture']}` | {a['steps']} | {a['tokens']:,} | {a['mixture_tokens']:,} | {ov} |"
        )
    lines += ["", "Bits per byte: lower is better; acc / acc_norm: higher is better.", ""]
    lines += ["| metric | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for m in results["metrics"]:
        lines.append(f"| {m} | " + " | ".join(cell(arms[n]["summary"][m]) for n in names) + " |")
    if results["differences"]:
        pairs = list(results["differences"])
        lines += ["", "Paired differences (interval excluding 0 marked better/worse):", ""]
        lines += ["| metric | " + " | ".join(pairs) + " |", "|---|" + "---|" * len(pairs)]
        for m in results["metrics"]:
            cells = [diff_cell(m, results["differences"][p][m]) for p in pairs]
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines += ["", "![loss curves](loss_curves.png)", "", "![bits per byte](bpb.png)", ""]
    return "\n".join(lines)


def plot_loss_curves(results: dict[str, Any], out: Path) -> Path:
    """Training loss against tokens per arm: the mean over seeds, each seed faint."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    for i, (name, arm) in enumerate(results["arms"].items()):
        colour = f"C{i}"
        curves = list(arm["loss_curves"].values())
        for c in curves:
            ax.plot(
                [r["tokens"] for r in c], [r["loss"] for r in c], color=colour, alpha=0.25, lw=0.8
            )
        n = min(len(c) for c in curves)
        mean = [sum(c[k]["loss"] for c in curves) / len(curves) for k in range(n)]
        ax.plot([r["tokens"] for r in curves[0][:n]], mean, color=colour, label=name)
    ax.set_xlabel("training tokens")
    ax.set_ylabel("training loss (nats/token)")
    ax.set_title("loss per arm (mean over seeds)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def plot_bpb(results: dict[str, Any], out: Path) -> Path:
    """Bits per byte per eval set and language, one bar per arm, with interval whiskers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [m for m in results["metrics"] if m.startswith("bpb/") and m.count("/") == 2]
    names = list(results["arms"])
    fig, ax = plt.subplots(figsize=(max(5, 0.9 * len(keys) * len(names) / 2 + 2), 3.5), dpi=100)
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        summary = results["arms"][name]["summary"]
        xs = [k + (i - (len(names) - 1) / 2) * width for k in range(len(keys))]
        ys = [summary[m]["mean"] for m in keys]
        err = [summary[m]["half"] or 0.0 for m in keys]
        ax.bar(xs, ys, width, yerr=err, capsize=3, label=name, color=f"C{i}")
    ax.set_xticks(range(len(keys)), [m.removeprefix("bpb/") for m in keys], rotation=30, fontsize=7)
    ax.set_ylabel("bits per byte (lower is better)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def write_report(results: dict[str, Any], out_dir: Path) -> None:
    """report.md and the two plots into `out_dir`; their paths go into `results`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results["plots"] = {
        "loss_curves": str(plot_loss_curves(results, out_dir / "loss_curves.png")),
        "bpb": str(plot_bpb(results, out_dir / "bpb.png")),
    }
    results["report"] = str(out_dir / "report.md")
    (out_dir / "report.md").write_text(markdown(results), encoding="utf-8")


def rich_table(results: dict[str, Any]):
    """The terminal table: one row per metric, one column per arm (mean ± half-width)."""
    from rich.table import Table

    names = list(results["arms"])
    table = Table(
        title=f"ablation {results['name']}: {results['tokens']:,} tokens/run, seeds {results['seeds']}"
    )
    table.add_column("metric")
    for n in names:
        table.add_column(n, justify="right")
    pairs = list(results["differences"])
    for p in pairs:
        table.add_column(p, justify="right")
    for m in results["metrics"]:
        cells = [cell(results["arms"][n]["summary"][m]) for n in names]
        cells += [diff_cell(m, results["differences"][p][m]) for p in pairs]
        table.add_row(m, *cells)
    return table
