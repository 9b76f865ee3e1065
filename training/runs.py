"""Training runs in the lake: the run-directory lifecycle and the drivers the train stages call.

Lake runs are versioned: `runs/<stage>/<run-id>/` (run id = UTC start time, `-2`, `-3`, ... when
two start in the same second), and `runs/<stage>/latest.json` names the newest *finished* run,
which later stages start from. Nothing here deletes a run. A CLI `--out` is the user's own
directory and is used as given. Under torchrun, rank 0 alone writes the run's files.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import lake
from training.train_config import STAGES

# The stage each later stage starts from (its `--init`).
UPSTREAM = {"cpt": "pretrain", "multimodal": "cpt", "long-context": "multimodal"}


LATEST = "latest.json"


def new_run_dir(stage_root: str | Path) -> Path:
    """Create and return a fresh run directory `<stage_root>/<UTC time>[-n]` (never reused)."""
    stage_root = Path(stage_root)
    stage_root.mkdir(parents=True, exist_ok=True)
    base = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for n in range(1, 10_000):
        run = stage_root / (base if n == 1 else f"{base}-{n}")
        try:
            run.mkdir()
        except FileExistsError:
            continue
        return run
    raise RuntimeError(f"{stage_root}: no free run id for {base}")


def run_dirs(stage_root: str | Path) -> list[Path]:
    """The stage's versioned run directories, oldest first."""
    stage_root = Path(stage_root)
    if not stage_root.is_dir():
        return []
    runs = [p for p in stage_root.iterdir() if p.is_dir() and p.name[:8].isdigit()]
    return sorted(runs, key=lambda p: (p.name.split("-")[0], int((p.name.split("-") + ["1"])[1])))


def _non_finite_losses(run_dir: Path) -> list[str]:
    """The NaN or infinite losses of a run's summary.json (`final_loss`, `eval/<b>/<g>`)."""
    path = run_dir / "summary.json"
    if not path.exists():
        return []
    summary = json.loads(path.read_text())
    losses = {"final_loss": summary.get("final_loss")}
    losses |= {f"eval/{k}": v for k, v in (summary.get("eval") or {}).items()}
    return [k for k, v in losses.items() if isinstance(v, float) and not math.isfinite(v)]


def set_latest(stage_root: str | Path, run_dir: str | Path) -> Path:
    """Point `<stage_root>/latest.json` at a finished run (atomic replace); a run whose summary
    holds a NaN or infinite loss is refused (the next stage would start from its weights)."""
    stage_root, run_dir = Path(stage_root), Path(run_dir)
    bad = _non_finite_losses(run_dir)
    if bad:
        raise ValueError(
            f"{run_dir / 'summary.json'}: non-finite {', '.join(bad)}; not marking {run_dir} as "
            f"the latest {stage_root.name} run (later stages would start from it): train it again"
        )
    path = stage_root / LATEST
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"run_id": run_dir.name, "path": str(run_dir.resolve())}, indent=2))
    os.replace(tmp, path)
    return path


def latest_run(stage_root: str | Path) -> Path | None:
    """The run `latest.json` names; for a lake from before versioning, `stage_root` itself if it
    holds checkpoints; else None."""
    from training.checkpoint import latest_checkpoint

    stage_root = Path(stage_root)
    pointer = stage_root / LATEST
    if pointer.exists():
        try:
            run = stage_root / json.loads(pointer.read_text())["run_id"]
        except (ValueError, KeyError) as exc:
            raise ValueError(
                f"{pointer}: not a run pointer ({exc}); delete it or rewrite it as "
                '{"run_id": "<directory name under this stage>"}'
            ) from exc
        if not run.is_dir():
            raise FileNotFoundError(f"{pointer} names {run}, which does not exist")
        return run
    if latest_checkpoint(stage_root) is not None:
        return stage_root
    return None


def resumable_run(stage_root: str | Path) -> Path | None:
    """The newest run directory of the stage that has a checkpoint (finished or not)."""
    from training.checkpoint import latest_checkpoint

    for run in reversed(run_dirs(stage_root)):
        if latest_checkpoint(run) is not None:
            return run
    return None


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
    vision: str | Path | None = None,
) -> dict[str, Any]:
    """Train `stage` on the mixture `data_dir` into the run directory `out_dir`; return its summary.

    `vision` (multimodal only): the CLIP model whose image tower the stage starts from.
    Example: run_train("pretrain", "tiny", "lake/mixtures/tiny-pretrain", "lake/runs/pretrain", steps=300)
    """
    from training import distributed
    from training.trainer import run_stage

    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; choose one of {', '.join(STAGES)}")
    if stage == "multimodal":
        from training.multimodal import run_multimodal

        summary = run_multimodal(
            config_path,
            data_dir,
            out_dir,
            init=init,
            vision=vision,
            steps=steps,
            resume=resume,
            on_step=on_step,
        )
    else:
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
    summary["loss_plot"] = str(Path(out_dir) / "loss.png")
    if distributed.is_main():  # under torchrun, rank 0 writes the run's files
        plot_loss_curve(out_dir)
        lake.write_manifest(
            Path(out_dir),
            rows=summary["steps"],
            inputs=[str(data_dir)]
            + ([str(summary["init"])] if summary["init"] else [])
            + ([summary["vision"]] if "vision" in summary else []),
            config={"stage": stage, "config": str(config_path), "steps": steps},
            extra={
                "kind": "training-run",
                "checkpoint": summary["checkpoint"],
                "final_loss": summary["final_loss"],
                **({"vision": summary["vision"]} if "vision" in summary else {}),
            },
        )
    distributed.barrier()
    return summary


def run_retrieval_data(
    out: str | Path | None = None,
    *,
    n_docs: int = 2000,
    seed: int = 0,
    lake_root: Path | None = None,
    **doc_options: Any,
) -> dict[str, Any]:
    """Write synthetic long retrieval documents (`training.longctx`) as a docs Parquet.

    Default out: lake `synth/long/retrieval.parquet`, the source the long-context mixture specs
    read. `doc_options` go to `make_retrieval_doc` (n_facts, n_queries, filler_sentences, values).
    """
    from training.longctx import make_retrieval_docs, write_retrieval_parquet

    path = (
        Path(out)
        if out
        else (lake_root or lake.lake_root()) / "synth" / "long" / "retrieval.parquet"
    )
    docs = make_retrieval_docs(n_docs, seed, **doc_options)
    write_retrieval_parquet(docs, path)
    options = {k: list(v) if isinstance(v, tuple) else v for k, v in doc_options.items()}
    lake.write_manifest(
        path,
        rows=len(docs),
        inputs=[],
        config={"n_docs": n_docs, "seed": seed, **options},
        extra={
            "kind": "synthetic-retrieval",
            "generator": {"n_docs": n_docs, "seed": seed, **options},
        },
    )
    chars = [len(d.text) for d in docs]
    return {"path": str(path), "documents": len(docs), "mean_chars": sum(chars) / len(chars)}


def run_retrieval_eval(
    checkpoints: dict[str, str | Path],
    tokenizer: str | Path,
    *,
    n_docs: int = 64,
    seed: int = 10_000,
    **doc_options: Any,
) -> dict[str, dict[str, Any]]:
    """Late-query loss of each checkpoint (run dir or file) on held-out retrieval documents.

    Use a `seed` the training data was not generated with, and the same `doc_options`; each
    result also holds the no-facts control (`loss_without_facts`, `retrieval_gain`).
    """
    from training.longctx import compare_checkpoints, make_retrieval_docs

    docs = make_retrieval_docs(n_docs, seed, **doc_options)
    return compare_checkpoints(checkpoints, tokenizer, docs)
