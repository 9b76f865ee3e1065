"""Checks of a training run: every loss finite, and the loss fell (held-out first)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from common.checks import CheckOutcome, Figure


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file; run `refinery train` into this directory")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _within_warmup(run_dir: Path) -> str | None:
    """'N <= W steps' when the run's total steps do not pass its warm-up (run.json), else None."""
    try:
        run = json.loads((run_dir / "run.json").read_text())
        stage = run["config"]["stages"][run["stage"]]
        total, warmup = int(run["total_steps"]), int(stage.get("warmup_steps") or 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return f"{total} <= {warmup} steps" if total <= warmup else None


MIN_WINDOW = 3  # logged steps per window at the least: fewer and one batch's noise decides


def training_loss_finite_and_falling(run_dir: Path) -> CheckOutcome:
    """Every logged loss is finite, and the loss fell over the run.

    Finite: every training loss in metrics.jsonl, every eval loss in eval.jsonl (None is allowed
    there: a group without sequences) and summary.json's losses are finite numbers.
    Falling is judged on evidence that does not hinge on one batch:
    - the held-out loss, where the run has one: the same held-out sequences scored before the
      first step and after the last, weighted by each bucket/group's share of the mixture's
      training tokens (summary.json `eval_mixture_before` -> `eval_mixture`: the loss the run
      minimises; a small group repeated for epochs may overfit without counting for more than
      its share), or unweighted over groups (`eval_mean_before` -> `eval_mean`) where the
      summary has no shares; it must end lower;
    - else the training loss in windows: the mean of the first quarter of logged steps against
      the mean of the last quarter, each window at least MIN_WINDOW logged steps (a run that
      logs fewer than 2 * MIN_WINDOW steps and has no held-out loss fails: log more often).
    A run that ends within its warm-up (run.json: total steps <= warmup_steps) is not judged on
    falling, and says so.
    """
    run_dir = Path(run_dir)
    metrics = sorted(_jsonl(run_dir / "metrics.jsonl"), key=lambda r: r["step"])
    evals = _jsonl(run_dir / "eval.jsonl") if (run_dir / "eval.jsonl").exists() else []
    losses = [r.get("loss") for r in metrics]
    bad_train = sum(1 for v in losses if not _finite(v))
    bad_eval = sum(1 for r in evals if r.get("loss") is not None and not _finite(r["loss"]))
    bad_summary = 0
    summary: dict[str, Any] = {}
    if (run_dir / "summary.json").exists():
        summary = json.loads((run_dir / "summary.json").read_text())
        vals = [
            summary.get("final_loss"),
            summary.get("eval_mean"),
            summary.get("eval_mean_before"),
            summary.get("eval_mixture"),
            summary.get("eval_mixture_before"),
        ]
        vals += list((summary.get("eval") or {}).values())
        vals += list((summary.get("eval_before") or {}).values())
        bad_summary = sum(1 for v in vals if v is not None and not _finite(v))
    finite = not (bad_train or bad_eval or bad_summary)
    n = len(metrics)
    window = max(MIN_WINDOW, n // 4)
    first = last = float("nan")
    falling = False
    basis = "train"
    within_warmup = _within_warmup(run_dir)
    keys = ("eval_mixture_before", "eval_mixture")
    if not (_finite(summary.get(keys[0])) and _finite(summary.get(keys[1]))):
        keys = ("eval_mean_before", "eval_mean")
    held_out = _finite(summary.get(keys[0])) and _finite(summary.get(keys[1]))
    if within_warmup is not None:
        # Still warming up when it stopped: the learning rate never reached its peak, and the
        # loss of a continued run may rise first on its new mixture. Not judged; said so.
        basis = "within_warmup"
        falling = True
    elif held_out:
        basis = "held-out, mixture-weighted" if keys[1] == "eval_mixture" else "held-out"
        first, last = float(summary[keys[0]]), float(summary[keys[1]])
        falling = last < first
    elif n >= 2 * window and not bad_train:
        first = sum(losses[:window]) / window
        last = sum(losses[-window:]) / window
        falling = last < first
    meta: dict[str, Figure] = {
        "steps_logged": n,
        "first_step": int(metrics[0]["step"]) if metrics else 0,
        "last_step": int(metrics[-1]["step"]) if metrics else 0,
        "window": window,
        "loss_first_mean": first,
        "loss_last_mean": last,
        "loss_drop": first - last,
        "nonfinite_train_losses": bad_train,
        "nonfinite_eval_losses": bad_eval,
        "nonfinite_summary_losses": bad_summary,
        "finite": finite,
        "falling": falling,
        "judged_on": basis,
    }
    if not finite:
        verdict = (
            f"non-finite losses: {bad_train} train, {bad_eval} eval, {bad_summary} in summary.json"
        )
    elif basis == "within_warmup":
        verdict = f"not judged: the run ended within its warm-up ({within_warmup})"
    elif basis.startswith("held-out"):
        word = "falling" if falling else "not falling"
        verdict = f"{n} logged step(s); {basis} loss {word}: {first:.4f} -> {last:.4f}"
    elif n < 2 * window:
        verdict = (
            f"{n} logged step(s) and no held-out loss: too few for two windows of {window} "
            "steps; log more often (train.log_every) or evaluate (train.eval_every)"
        )
    elif not falling:
        verdict = f"not falling: last {window} step(s) mean {last:.4f} >= first {first:.4f}"
    else:
        verdict = f"falling: first {window} step(s) mean {first:.4f} -> last {last:.4f}"
    return CheckOutcome(
        finite and falling,
        f"training {run_dir}: {n} logged step(s), all losses finite: {finite}; {verdict}",
        meta,
    )
