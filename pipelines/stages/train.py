"""Training stage entry point (`run_train`), shared by the CLI, the Dagster assets and the demo."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipelines import lake

STAGES = ("pretrain", "cpt", "long-context")
# The stage each later stage starts from (its `--init`).
UPSTREAM = {"cpt": "pretrain", "long-context": "cpt"}


def stage_mixture_dir(stage: str, config_path: str | Path, lake_root: Path | None = None) -> Path:
    """The lake mixture a stage trains on: `mixtures/<stages.<stage>.mixture>` of the config."""
    from training.train_config import load_run_config

    cfg, _ = load_run_config(config_path)
    return lake.stage_dir("mixtures", lake_root) / cfg.stage(stage).mixture


def plot_loss_curve(run_dir: str | Path) -> Path:
    """Write `loss.png` (training loss per logged step, eval loss markers) into the run directory."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    rows = [json.loads(ln) for ln in (run_dir / "metrics.jsonl").read_text().splitlines() if ln]
    evals = [json.loads(ln) for ln in (run_dir / "eval.jsonl").read_text().splitlines() if ln]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot([r["step"] for r in rows], [r["loss"] for r in rows], ".-", markersize=3, label="train")
    for key in sorted({(e["bucket"], e["group"]) for e in evals}):
        pts = [
            (e["step"], e["loss"])
            for e in evals
            if (e["bucket"], e["group"]) == key and e["loss"] is not None
        ]
        if pts:
            ax.plot(*zip(*pts, strict=True), "o--", markersize=3, label=f"eval {key[0]}/{key[1]}")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    ax.set_title(run_dir.name)
    ax.legend(fontsize=7)
    fig.tight_layout()
    out = run_dir / "loss.png"
    fig.savefig(out)
    plt.close(fig)
    return out


def run_train(
    stage: str,
    config_path: str | Path,
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    init: str | Path | None = None,
    steps: int | None = None,
    resume: bool = False,
    on_step: Callable[[int, int, dict[str, Any] | None], None] | None = None,
) -> dict[str, Any]:
    """Train `stage` on the mixture `data_dir` into the run directory `out_dir`; return its summary.

    Example: run_train("pretrain", "tiny", "lake/mixtures/tiny-pretrain", "lake/runs/pretrain", steps=300)
    """
    from training.trainer import run_stage

    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; choose one of {', '.join(STAGES)}")
    summary = run_stage(
        stage,
        config_path,
        data_dir,
        out_dir,
        init=init,
        steps=steps,
        resume=resume,
        on_step=on_step,
    )
    summary["loss_plot"] = str(plot_loss_curve(out_dir))
    lake.write_manifest(
        Path(out_dir),
        rows=summary["steps"],
        inputs=[str(data_dir)] + ([str(summary["init"])] if summary["init"] else []),
        config={"stage": stage, "config": str(config_path), "steps": steps},
        extra={
            "kind": "training-run",
            "checkpoint": summary["checkpoint"],
            "final_loss": summary["final_loss"],
        },
    )
    return summary
