"""Train the model on a mixture: one function per run, `run_stage`, used by every entry point.

A run directory (`out_dir`) holds `run.json` (resolved config and inputs), `metrics.jsonl` (one line
per logged step: step, loss, tokens_per_s, seq_len, lr, mfu), `eval.jsonl` (held-out loss per
bucket and group; step 0 is the starting weights), `checkpoints/step_*.pt` and `summary.json`.

Stages: `pretrain` starts from scratch (or `init`); `cpt` and `long-context` load the weights of
`init` and start a fresh optimiser and warm-up. Resuming (`resume=True`) restores model, optimiser,
scheduler, RNGs and loader position, so the losses match an uninterrupted run exactly on CPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from training.checkpoint import (
    latest_checkpoint,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
    set_rng_state,
)
from training.loader import EvalSets, ShardLoader, read_manifest
from training.model import ModelConfig, Transformer
from training.schedule import lr_multiplier
from training.train_config import RunConfig, load_run_config

# Dense bf16 tensor-core peaks (FLOP/s) by device-name fragment, for MFU; unknown devices get none.
PEAK_FLOPS = {
    "H200": 989e12,
    "H100": 989e12,
    "A100": 312e12,
    "L40S": 362e12,
    "L4": 121e12,
    "A10G": 125e12,
}
# Fields that may differ between a checkpoint and the run that loads it (long context raises them).
# Document masking has no weights: a run may switch it, and the boundary id comes from the mixture.
ADJUSTABLE_FIELDS = {"rope_base", "max_seq_len", "doc_mask", "boundary_token_id"}
IGNORE = -100


class TrainError(RuntimeError):
    """A run cannot start or continue; the message says what to fix."""


StepCallback = Callable[[int, int, dict[str, Any] | None], None]


def peak_flops(device: torch.device) -> float | None:
    """The device's dense bf16 peak, or None when unknown (CPU)."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_FLOPS.items() if k in name), None)


def resolve_model_config(
    cfg: RunConfig, stage: str, manifest: dict[str, Any], mix_dir: Path
) -> ModelConfig:
    """The stage's model config: vocabulary from the mixture, stage overrides, length checked."""
    sc = cfg.stage(stage)
    vocab = int(manifest["vocab_size"])
    if cfg.model.vocab_size and cfg.model.vocab_size != vocab:
        raise TrainError(
            f"vocab mismatch: config model.vocab_size={cfg.model.vocab_size} but mixture {mix_dir} "
            f"has vocab_size={vocab}; drop model.vocab_size from the config or use a matching mixture"
        )
    changes: dict[str, Any] = {"vocab_size": vocab}
    if sc.rope_base is not None:
        changes["rope_base"] = sc.rope_base
    if sc.max_seq_len is not None:
        changes["max_seq_len"] = sc.max_seq_len
    if cfg.model.image_embed_dim and cfg.model.image_token_id < 0:
        changes["image_token_id"] = int(manifest["special_tokens"]["image"])
    if cfg.model.doc_mask and cfg.model.boundary_token_id < 0:
        boundary = (manifest.get("special_tokens") or {}).get("boundary")
        if boundary is None:
            raise TrainError(
                f"mixture {mix_dir}: manifest.json special_tokens has no 'boundary' id, needed for "
                "document masking; rebuild the mixture or set model.doc_mask: false"
            )
        changes["boundary_token_id"] = int(boundary)
    model_cfg = dataclasses.replace(cfg.model, **changes)
    seq_len = int(manifest["seq_len"])
    if seq_len - 1 > model_cfg.max_seq_len:
        raise TrainError(
            f"mixture {mix_dir} has seq_len={seq_len} but the model supports max_seq_len="
            f"{model_cfg.max_seq_len}; raise stages.{stage}.max_seq_len (or model.max_seq_len)"
        )
    return model_cfg


def check_compatible(saved: dict[str, Any], model_cfg: ModelConfig, source: Path) -> None:
    """Refuse to load weights whose architecture or vocabulary differs from this run's model."""
    if saved["vocab_size"] != model_cfg.vocab_size:
        raise TrainError(
            f"vocab mismatch: checkpoint {source} has vocab_size={saved['vocab_size']} but the mixture's "
            f"tokenizer has {model_cfg.vocab_size}; build the mixture with the checkpoint's tokenizer"
        )
    ours = dataclasses.asdict(model_cfg)
    diff = [k for k in ours if k not in ADJUSTABLE_FIELDS and saved.get(k) != ours[k]]
    if diff:
        pairs = ", ".join(f"{k}: checkpoint {saved.get(k)!r} vs config {ours[k]!r}" for k in diff)
        raise TrainError(f"checkpoint {source} does not match the config's model ({pairs})")


def _setup_torch(cfg: RunConfig) -> torch.device:
    t = cfg.train
    if t.threads:
        torch.set_num_threads(t.threads)
    if t.device == "cuda" and not torch.cuda.is_available():
        raise TrainError(
            "train.device is 'cuda' but no CUDA device is available; use 'auto' or 'cpu'"
        )
    device = torch.device(
        "cuda"
        if t.device == "auto" and torch.cuda.is_available()
        else t.device.replace("auto", "cpu")
    )
    if t.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
    elif device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    return device


def _split(
    batch: np.ndarray, pad_id: int, vocab: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-token targets of a packed batch; padding is not predicted."""
    tokens = torch.from_numpy(np.asarray(batch, dtype=np.int64))
    top = int(tokens.max())
    if top >= vocab:
        raise TrainError(
            f"token id {top} >= vocab_size {vocab}: the shards do not match the tokenizer"
        )
    x, y = tokens[:, :-1], tokens[:, 1:].clone()
    y[y == pad_id] = IGNORE
    return x.to(device, non_blocking=True), y.to(device, non_blocking=True)


@torch.no_grad()
def evaluate(
    model: Transformer,
    evals: EvalSets,
    batch_size: int,
    max_sequences: int,
    device: torch.device,
    autocast,
    attention_backend: str = "auto",
) -> list[dict[str, Any]]:
    """Mean next-token loss on each bucket/group's held-out sequences (first `max_sequences`)."""
    was_training = model.training
    model.eval()
    rows = []
    for (bucket, group), arr in evals.items():
        total, count = 0.0, 0
        arr = arr[:max_sequences]
        for i in range(0, len(arr), batch_size):
            x, y = _split(arr[i : i + batch_size], evals.pad_id, model.config.vocab_size, device)
            n = int((y != IGNORE).sum())
            if n == 0:
                continue
            with autocast():
                _, loss, _ = model(x, y, attention_backend=attention_backend)
            total += float(loss) * n
            count += n
        rows.append(
            {
                "bucket": bucket,
                "group": group,
                "loss": total / count if count else None,
                "tokens": count,
            }
        )
    model.train(was_training)
    return rows


def _append_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def _truncate_jsonl(path: Path, last_step: int) -> None:
    """Drop lines logged after the checkpoint we resume from (they will be logged again)."""
    if path.exists():
        keep = [
            ln for ln in path.read_text().splitlines() if ln and json.loads(ln)["step"] <= last_step
        ]
        path.write_text("".join(ln + "\n" for ln in keep))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln] if path.exists() else []


def _eval_summary(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    return {f"{r['bucket']}/{r['group']}": r["loss"] for r in rows}


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def run_stage(
    stage: str,
    config_path: str | Path,
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    init: str | Path | None = None,
    steps: int | None = None,
    resume: bool = False,
    on_step: StepCallback | None = None,
) -> dict[str, Any]:
    """Train one stage into `out_dir` up to `steps` total steps; return the run summary."""
    cfg, raw_cfg = load_run_config(config_path)
    sc = cfg.stage(stage)
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    try:
        manifest = read_manifest(data_dir)
    except FileNotFoundError as e:
        raise TrainError(f"mixture not found: {e}") from e
    model_cfg = resolve_model_config(cfg, stage, manifest, data_dir)
    seq_len, pad_id = int(manifest["seq_len"]), int(manifest["special_tokens"]["pad"])
    total = steps if steps is not None else sc.steps
    if total < 1:
        raise TrainError(f"steps must be >= 1, got {total}")

    existing = latest_checkpoint(out_dir)
    resume_state = None
    if resume:
        if existing is None:
            raise TrainError(
                f"--resume: {out_dir} has no checkpoint to resume from; drop --resume to start it"
            )
        resume_state = load_checkpoint(existing)
        if resume_state["stage"] != stage:
            raise TrainError(
                f"--resume: {out_dir} is a {resume_state['stage']!r} run, not {stage!r}"
            )
    elif existing is not None:
        raise TrainError(
            f"{out_dir} already holds a run ({existing.name}); pass --resume or choose another --out"
        )
    if stage != "pretrain" and init is None and not resume:
        raise TrainError(
            f"stage {stage!r} starts from earlier weights: pass --init RUNDIR_OR_CHECKPOINT"
        )

    device = _setup_torch(cfg)
    torch.manual_seed(cfg.train.seed)
    np.random.seed(cfg.train.seed)
    model = Transformer(model_cfg).to(device)
    init_path = None
    if resume_state is not None:
        check_compatible(resume_state["model_config"], model_cfg, existing)
        model.load_state_dict(resume_state["model"])
    elif init is not None:
        init_path = resolve_checkpoint(init)
        saved = load_checkpoint(init_path)
        check_compatible(saved["model_config"], model_cfg, init_path)
        if stage == "long-context" and seq_len <= saved.get("seq_len", 0):
            raise TrainError(
                f"long-context: mixture {data_dir} has seq_len={seq_len}, not longer than the "
                f"{saved['seq_len']} that {init_path} was trained at; use the context-lengthening mixture"
            )
        model.load_state_dict(saved["model"])

    t = cfg.train
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": t.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=sc.lr,
        betas=t.betas,
        fused=device.type == "cuda",
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: lr_multiplier(
            s,
            total_steps=total,
            warmup_steps=sc.warmup_steps,
            schedule=sc.schedule,
            min_ratio=sc.min_lr_ratio,
            decay_fraction=sc.decay_fraction,
        ),
    )
    batch_size = sc.batch_size or t.batch_size
    loader = ShardLoader(data_dir, batch_size, seed=t.seed)
    evals = EvalSets(data_dir)
    metrics_path, eval_path = out_dir / "metrics.jsonl", out_dir / "eval.jsonl"
    out_dir.mkdir(parents=True, exist_ok=True)
    start = 0
    if resume_state is not None:
        optimizer.load_state_dict(resume_state["optimizer"])
        scheduler.load_state_dict(resume_state["scheduler"])
        loader.load_state_dict(resume_state["loader"])
        set_rng_state(resume_state["rng"])
        start = int(resume_state["step"])
        _truncate_jsonl(metrics_path, start)
        _truncate_jsonl(eval_path, start)
    else:
        metrics_path.write_text("")
        eval_path.write_text("")
    if resume_state is not None and (out_dir / "run.json").exists():
        # The resumed run keeps the weights it was started from on record.
        previous_init = json.loads((out_dir / "run.json").read_text()).get("init")
        init_path = Path(previous_init) if previous_init else None
    run_record = {
        "stage": stage,
        "config_path": str(config_path),
        "config": raw_cfg,
        "model_config": dataclasses.asdict(model_cfg),
        "mixture": str(data_dir.resolve()),
        "init": str(init_path) if init_path else None,
        "total_steps": total,
        "device": str(device),
    }
    (out_dir / "run.json").write_text(json.dumps(run_record, indent=2, default=str))

    bf16 = t.precision == "bfloat16" and device.type == "cuda"

    def autocast():
        return torch.autocast("cuda", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()

    def eval_now(step: int) -> list[dict[str, Any]]:
        rows = evaluate(
            model, evals, batch_size, t.eval_max_sequences, device, autocast, t.attention_backend
        )
        rows = [{"step": step, "seq_len": seq_len, **r} for r in rows]
        _append_jsonl(eval_path, rows)
        return rows

    if start == 0:
        eval_now(0)
    step_model = torch.compile(model) if t.compile else model
    peak = peak_flops(device)
    flops_per_token = model.flops_per_token(seq_len - 1)
    tokens_per_step = batch_size * t.grad_accum * (seq_len - 1)
    batches = iter(loader)

    def checkpoint(step: int) -> Path:
        payload = {
            "stage": stage,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "loader": loader.state_dict(),
            "model_config": dataclasses.asdict(model_cfg),
            "mixture": run_record["mixture"],
            "seq_len": seq_len,
        }
        return save_checkpoint(out_dir, step, payload, t.keep_checkpoints)

    model.train()
    interval_start, interval_tokens = time.perf_counter(), 0
    for step in range(start + 1, total + 1):
        lr = scheduler.get_last_lr()[0]
        step_loss = torch.zeros((), device=device)
        for _ in range(t.grad_accum):
            x, y = _split(next(batches), pad_id, model_cfg.vocab_size, device)
            with autocast():
                _, loss, aux = step_model(x, y, attention_backend=t.attention_backend)
                objective = (loss + model_cfg.moe_aux_weight * aux) / t.grad_accum
            objective.backward()
            step_loss += loss.detach().float() / t.grad_accum
        if t.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        interval_tokens += tokens_per_step
        row = None
        if step % t.log_every == 0 or step == total:
            if device.type == "cuda":
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - interval_start
            tps = interval_tokens / elapsed if elapsed > 0 else None
            mfu = flops_per_token * tps / peak if peak and tps else None
            row = {
                "step": step,
                "loss": float(step_loss),
                "tokens_per_s": tps,
                "seq_len": seq_len,
                "lr": lr,
                "mfu": mfu,
            }
            _append_jsonl(metrics_path, [row])
            interval_start, interval_tokens = time.perf_counter(), 0
        paused = time.perf_counter()
        if step % t.eval_every == 0 or step == total:
            eval_now(step)
        if step % t.checkpoint_every == 0 or step == total:
            checkpoint(step)
        interval_start += time.perf_counter() - paused  # tokens/s counts training time only
        if on_step is not None:
            on_step(step, total, row)

    return summarize(out_dir)


def summarize(out_dir: str | Path) -> dict[str, Any]:
    """The summary of a run directory (also written to `summary.json`)."""
    out_dir = Path(out_dir)
    record = json.loads((out_dir / "run.json").read_text())
    metrics, evals = _read_jsonl(out_dir / "metrics.jsonl"), _read_jsonl(out_dir / "eval.jsonl")
    last_step = max((r["step"] for r in evals), default=0)
    before = _eval_summary([r for r in evals if r["step"] == 0])
    after = _eval_summary([r for r in evals if r["step"] == last_step])
    tps = [m["tokens_per_s"] for m in metrics if m["tokens_per_s"]]
    summary = {
        "stage": record["stage"],
        "run_dir": str(out_dir),
        "checkpoint": str(latest_checkpoint(out_dir)),
        "steps": metrics[-1]["step"] if metrics else 0,
        "seq_len": metrics[-1]["seq_len"] if metrics else None,
        "final_loss": metrics[-1]["loss"] if metrics else None,
        "tokens_per_s": sum(tps) / len(tps) if tps else None,
        "eval_before": before,
        "eval": after,
        "eval_mean_before": _mean(list(before.values())),
        "eval_mean": _mean(list(after.values())),
        "init": record["init"],
        "mixture": record["mixture"],
        "device": record["device"],
        "rope_base": record["model_config"]["rope_base"],
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
