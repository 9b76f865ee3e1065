"""The multimodal continued-pretraining stage: text CPT decoder + CLIP image tower + a new adapter.

`run_multimodal` = `setup_multimodal` (a `MultimodalState`, the trainer's `TrainState` with images)
followed by the trainer's own `train_loop`, so logging, cadence, checkpoints and exact resume are
the other stages'. What differs:

- Batches are `(tokens, image_shas)` from `ShardLoader(..., with_images=True)`; each step decodes
  the batch's images (`ImageStore.pixels`) at the CLIP model's size and normalisation, runs them
  through tower + adapter and puts the adapter's tokens at the `<|image|>` blocks. Image
  placeholders are never predicted (their targets are ignored).
- Start: decoder from `--init` (a text checkpoint: cpt), vision tower from `--vision` (a CLIP
  model spec), adapter and the decoder's `image_proj` from scratch (seeded).
- Phases: `adapter_only_steps` first steps train the adapter only (decoder frozen), then both;
  `freeze_vision` (default true) keeps the tower fixed throughout.
- Evaluation: text buckets as in every stage; each bucket with images is evaluated twice, with
  the matched images (`loss`) and with a seeded derangement of the same images over the evaluated
  sequences (`loss_mismatched`); `gap` = mismatched - matched. The summary holds `gap_first` and
  `gap_last` (the image_caption bucket, token-weighted over its groups) and the text loss at the
  start (= the init checkpoint: text sequences hold no image) and at the end, with the tolerance.
- Checkpoints load as text models: `model` / `model_config` are the decoder without its image
  path (so long-context can `--init` from a multimodal run: the vision tower, adapter and
  image_proj are *dropped* there), and `vision_language` carries the adapter, image_proj, the
  tower's weights when it trains (its spec and weight fingerprint when frozen) and their configs.
- Under torchrun (`torchrun --nproc-per-node N -m pipelines.cli train multimodal ...`) the stage
  runs data-parallel like the text stages (training/distributed.py): FSDP2 shards each decoder
  block, then the whole vision-language model at the root (tower, adapter, embeddings, head); the
  loader splits by rank; checkpoints are DCP-sharded, with `sharded_parts` so that
  `load_checkpoint` returns the same text model + `vision_language` as a single process's.
  One difference, by construction: in the adapter-only phase a distributed run keeps the decoder's
  `requires_grad` on and drops its gradients before the update (`before_update`), because a rank
  whose micro-batch holds no image would otherwise have nothing to backpropagate while the others
  wait for it in the gradient reduction. The update is the same (AdamW skips a parameter without
  a gradient); the cost is the decoder's weight gradients during those steps.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from training import distributed
from training.checkpoint import (
    is_sharded_checkpoint,
    latest_checkpoint,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
    save_sharded_checkpoint,
)
from training.model import ModelConfig, Transformer
from training.train_config import MultimodalSection, load_run_config
from training.trainer import (
    IGNORE,
    TrainError,
    TrainState,
    _append_jsonl,
    _checkpoint_to_resume,
    _optimizer,
    _read_jsonl,
    _split,
    check_compatible,
    join_launch,
    resolve_model_config,
    start_or_resume,
    summarize,
    train_loop,
    write_run_record,
)
from training.vision import (
    AdapterConfig,
    VisionAdapter,
    VisionEncoder,
    VisionInfo,
    VisionLanguageModel,
    load_vision_encoder,
)

STAGE = "multimodal"
CAPTION_BUCKET = "image_caption"  # the held-out pairs the matched/mismatched gap is measured on


def text_config(cfg: ModelConfig) -> ModelConfig:
    """The decoder's config without its image path: what checkpoints record (a text model)."""
    return dataclasses.replace(cfg, image_embed_dim=0, image_token_id=-1)


def derangement(n: int, seed: int) -> np.ndarray | None:
    """A seeded permutation of range(n) with no fixed point (Sattolo's cycle); None for n < 2."""
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    perm = np.arange(n)
    for i in range(n - 1, 0, -1):
        j = int(rng.integers(0, i))
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _flat_shas(images: Any) -> list[str]:
    """Image shas in row-major order, from a flat list or one list per sequence."""
    out: list[str] = []
    for item in images:
        out.extend(item if isinstance(item, list | tuple) else [item])
    return [str(s) for s in out]


@dataclasses.dataclass
class MultimodalState(TrainState):
    """A `TrainState` whose batches carry images and whose model is a `VisionLanguageModel`."""

    store: Any = None  # training.loader.ImageStore of the mixture
    section: MultimodalSection | None = None
    image_token_id: int = -1
    image_tokens: int = 0
    fingerprint: str | None = None  # the frozen tower's weights (checked on resume)

    @property
    def vlm(self) -> VisionLanguageModel:
        return self.model  # type: ignore[return-value]

    @property
    def info(self) -> VisionInfo:
        return self.vlm.encoder.info

    # --- training ---

    def adapter_only(self, step: int) -> bool:
        """Whether `step` is in the adapter-only phase (the decoder does not change)."""
        return step <= self.section.adapter_only_steps

    def begin_step(self, step: int) -> None:
        """Adapter-only for the first `adapter_only_steps` steps (decoder frozen), then both.

        Under torchrun the decoder keeps requires_grad (see `before_update`)."""
        if not self.dist.enabled:
            trains_decoder = not self.adapter_only(step)
            self.vlm.set_trainable(vision=not self.section.freeze_vision, decoder=trains_decoder)

    def before_update(self, step: int) -> None:
        """Distributed adapter-only phase: drop the decoder's gradients (AdamW skips it)."""
        if self.dist.enabled and self.adapter_only(step):
            for p in self.vlm.groups()["decoder"]:
                p.grad = None

    def _pixels(
        self, tokens: np.ndarray, shas: list[str], where: str
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Pixels of the blocks of `tokens` and which of their image tokens the inputs keep."""
        full = np.asarray(tokens) == self.image_token_id
        n_slots = int(full.sum())
        if n_slots != len(shas) * self.image_tokens:
            raise TrainError(
                f"mixture {self.mixture} ({where}): {n_slots} <|image|> tokens but {len(shas)} "
                f"images x image_tokens={self.image_tokens}; the image sidecar does not match the "
                "tokens: rebuild the mixture"
            )
        if not shas:
            return None, None
        pixels = self.store.pixels(shas, self.info.image_size, self.info.mean, self.info.std)
        keep = full.copy()
        keep[:, -1] = False  # inputs are tokens[:, :-1]: a block ending the row loses its last slot
        slot_keep = None if keep.sum() == n_slots else torch.from_numpy(keep[full])
        if slot_keep is not None:
            slot_keep = slot_keep.to(self.device)
        return pixels.to(self.device, non_blocking=True), slot_keep

    def _targets(self, tokens: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = _split(tokens, self.pad_id, self.model.config.vocab_size, self.device)
        y[y == self.image_token_id] = IGNORE
        return x, y

    def forward(self, model: torch.nn.Module, batch: Any) -> tuple[torch.Tensor, torch.Tensor]:
        tokens, shas = batch
        x, y = self._targets(tokens)
        pixels, keep = self._pixels(tokens, list(shas), "training batch")
        _, loss, aux = model(
            x, y, pixels, slot_keep=keep, attention_backend=self.cfg.train.attention_backend
        )
        return loss, aux

    # --- evaluation ---

    @torch.no_grad()
    def _loss(self, arr: np.ndarray, shas: list[str] | None, per_row: np.ndarray) -> tuple:
        """(mean loss, target count) over `arr`, images `shas` (None: text only) in row order."""
        total, count, first = 0.0, 0, 0
        bs = self.batch_size
        for i in range(0, len(arr), bs):
            rows = np.asarray(arr[i : i + bs], dtype=np.int64)
            n_img = int(per_row[i : i + bs].sum())
            x, y = self._targets(rows)
            n = int((y != IGNORE).sum())
            pixels = keep = None
            if shas is not None:
                pixels, keep = self._pixels(rows, shas[first : first + n_img], "eval set")
            first += n_img
            if n == 0:
                continue
            with self.autocast():
                _, loss, _ = self.model(
                    x, y, pixels, slot_keep=keep, attention_backend=self.cfg.train.attention_backend
                )
            total += float(loss) * n
            count += n
        return (total / count if count else None), count

    def evaluate(self, step: int) -> list[dict[str, Any]]:
        """Held-out loss per bucket/group; buckets with images also with mismatched images."""
        was_training = self.model.training
        self.model.eval()
        rows = []
        limit = self.cfg.train.eval_max_sequences
        for (bucket, group), arr in self.evals.items():
            arr = arr[:limit]
            per_row = (np.asarray(arr) == self.image_token_id).sum(axis=1) // self.image_tokens
            n_img = int(per_row.sum())
            row: dict[str, Any] = {"step": step, "seq_len": self.seq_len}
            row |= {"bucket": bucket, "group": group, "images": n_img}
            if n_img == 0:
                row["loss"], row["tokens"] = self._loss(arr, None, per_row)
            else:
                shas = _flat_shas(self.evals.get_images(bucket, group))[:n_img]
                row["loss"], row["tokens"] = self._loss(arr, shas, per_row)
                perm = derangement(n_img, self.section.mismatch_seed)
                if perm is not None:
                    wrong = [shas[j] for j in perm]
                    row["loss_mismatched"], _ = self._loss(arr, wrong, per_row)
                    row["same_image_after_derangement"] = sum(
                        a == b for a, b in zip(shas, wrong, strict=True)
                    )
                    if row["loss"] is not None and row["loss_mismatched"] is not None:
                        row["gap"] = row["loss_mismatched"] - row["loss"]
            rows.append(row)
        self.model.train(was_training)
        if self.dist.is_main:
            _append_jsonl(self.eval_path, rows)
        return rows

    # --- checkpoints ---

    def checkpoint(self, step: int) -> Path:
        """A text-model checkpoint (decoder without image path) plus `vision_language`."""
        dec = self.vlm.decoder
        trains_tower = not self.section.freeze_vision
        payload = {
            **self.identity,  # what the run was trained on, checked on --resume and --init
            "stage": self.stage,
            "model_config": dataclasses.asdict(text_config(dec.config)),
            "scheduler": self.scheduler.state_dict(),
            "mixture": self.mixture,
            "seq_len": self.seq_len,
            "vision_language": {
                "image_token_id": self.image_token_id,
                "adapter_config": dataclasses.asdict(self.vlm.adapter.config),
                "vision_info": dataclasses.asdict(self.info),
                "vision": None,
                "vision_fingerprint": None if trains_tower else self.fingerprint,
            },
        }
        keep = self.cfg.train.keep_checkpoints
        if self.dist.enabled:  # the whole model + optimiser in DCP; loading splits it back
            payload["sharded_parts"] = {
                "model": "decoder.",
                "vision_language.image_proj": "decoder.image_proj.",
                "vision_language.adapter": "adapter.",
                **({"vision_language.vision": "encoder.visual."} if trains_tower else {}),
            }
            rank_state = {"loader": self.loader.state_dict()}
            return save_sharded_checkpoint(
                self.out_dir, step, self.model, self.optimizer, payload, rank_state, keep
            )
        text_sd = {k: v for k, v in dec.state_dict().items() if not k.startswith("image_proj.")}
        payload["model"] = text_sd
        payload["optimizer"] = self.optimizer.state_dict()
        payload["loader"] = self.loader.state_dict()
        payload["vision_language"] |= {
            "image_proj": dec.image_proj.state_dict(),
            "adapter": self.vlm.adapter.state_dict(),
            "vision": self.vlm.encoder.visual.state_dict() if trains_tower else None,
        }
        return save_checkpoint(self.out_dir, step, payload, keep)

    def recorded_config(self) -> ModelConfig:
        """Checkpoints record the text decoder (no image path)."""
        return text_config(self.vlm.decoder.config)


def _load_decoder_init(decoder: Transformer, init: str | Path) -> Path:
    """Load a text checkpoint's weights into the decoder; image_proj stays new."""
    path = resolve_checkpoint(init)
    saved = load_checkpoint(path)
    check_compatible(saved["model_config"], text_config(decoder.config), path)
    result = decoder.load_state_dict(saved["model"], strict=False)
    missing = [k for k in result.missing_keys if not k.startswith("image_proj.")]
    if missing or result.unexpected_keys:
        raise TrainError(
            f"--init {path}: weights do not fit the decoder (missing {missing}, unexpected "
            f"{result.unexpected_keys}); pass a text checkpoint of the same model (a cpt run)"
        )
    return path


def _resume_point(out_dir: Path, resume: bool, init) -> tuple[Path | None, dict[str, Any] | None]:
    """The trainer's rule (resume, or refuse to overwrite; --init to start), and a multimodal run."""
    existing, saved = _checkpoint_to_resume(STAGE, out_dir, resume, init)
    if saved is not None and "vision_language" not in saved:
        raise TrainError(f"--resume: {existing} has no vision_language part: not a {STAGE!r} run")
    return existing, saved


def setup_multimodal(
    config_path: str | Path,
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    init: str | Path | None = None,
    vision: str | Path | None = None,
    steps: int | None = None,
    resume: bool = False,
) -> MultimodalState:
    """Check the inputs, build tower + adapter + decoder, optimiser and data, or restore a run."""
    from training.loader import EvalSets, ImageStore, ShardLoader, read_manifest

    cfg, raw_cfg = load_run_config(config_path)
    sec = cfg.stage(STAGE)
    if not isinstance(sec, MultimodalSection):
        raise TrainError(f"{config_path}: stages.multimodal is not a multimodal section")
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    try:
        manifest = read_manifest(data_dir)
    except FileNotFoundError as e:
        raise TrainError(f"mixture not found: {e}") from e
    image_tokens = int(manifest.get("image_tokens") or 0)
    image_id = (manifest.get("special_tokens") or {}).get("image")
    if image_tokens < 1 or image_id is None:
        raise TrainError(
            f"mixture {data_dir}: manifest.json has no image_tokens (or no special_tokens.image); "
            "the multimodal stage needs a mixture built from a spec with `image_tokens: N`"
        )
    base_cfg = resolve_model_config(cfg, STAGE, manifest, data_dir)
    model_cfg = dataclasses.replace(
        base_cfg, image_embed_dim=base_cfg.d_model, image_token_id=int(image_id)
    )
    seq_len, pad_id = int(manifest["seq_len"]), int(manifest["special_tokens"]["pad"])
    total = steps if steps is not None else sec.steps
    if total < 1:
        raise TrainError(f"steps must be >= 1, got {total}")
    if not resume and latest_checkpoint(out_dir) and distributed.continues_launch(out_dir):
        resume = True  # torchrun restarted this launch's workers: continue where they stopped
    existing, saved = _resume_point(out_dir, resume, init)
    saved_vl = saved["vision_language"] if saved else None
    if saved_vl is not None and vision is None:
        vision = saved_vl["vision_info"]["spec"]
    if vision is None:
        raise TrainError("stage 'multimodal' needs the CLIP model: pass --vision MODELDIR")

    t = cfg.train
    device, ctx = join_launch(cfg, saved, existing)
    torch.manual_seed(t.seed)
    np.random.seed(t.seed)
    encoder = load_vision_encoder(vision, device)
    encoder.info.spec = os.fspath(vision)
    adapter_cfg = AdapterConfig(
        in_dim=encoder.width,
        out_dim=model_cfg.d_model,
        image_tokens=image_tokens,
        heads=sec.adapter_heads,
        ffn_mult=sec.adapter_ffn_mult,
    )
    decoder = Transformer(model_cfg)
    vlm = VisionLanguageModel(encoder, VisionAdapter(adapter_cfg), decoder).to(device)
    fingerprint = encoder.fingerprint() if sec.freeze_vision else None
    init_path = None
    if saved is not None:
        check_compatible(saved["model_config"], text_config(model_cfg), existing)
        if saved_vl["adapter_config"] != dataclasses.asdict(adapter_cfg):
            raise TrainError(
                f"--resume: {existing} adapter {saved_vl['adapter_config']} differs from this "
                f"run's {dataclasses.asdict(adapter_cfg)}; resume with the same config and mixture"
            )
        if not is_sharded_checkpoint(saved):  # a sharded one loads in restore, after sharding
            saved = load_checkpoint(existing)
            saved_vl = saved["vision_language"]
            decoder.load_state_dict(saved["model"], strict=False)
            decoder.image_proj.load_state_dict(saved_vl["image_proj"])
            vlm.adapter.load_state_dict(saved_vl["adapter"])
            if saved_vl["vision"] is not None:
                encoder.visual.load_state_dict(saved_vl["vision"])
        saved_fp = saved_vl["vision_fingerprint"]  # the run's tower was frozen: must be this one
        if saved_fp is not None and saved_fp != (fingerprint or encoder.fingerprint()):
            raise TrainError(
                f"--resume: the frozen vision tower of {vision} is not the one {existing} was "
                "trained with (weights fingerprint differs); pass the run's --vision model"
            )
    else:
        init_path = _load_decoder_init(decoder, init)

    vlm.set_trainable(vision=not sec.freeze_vision, decoder=True)
    vlm = distributed.shard_model(vlm, ctx, device)  # FSDP2 when distributed: blocks, then root
    optimizer, scheduler = _optimizer(vlm, cfg, STAGE, total, device)
    batch_size = sec.batch_size or t.batch_size  # per rank: the global batch is world_size times
    state = MultimodalState(
        stage=STAGE,
        cfg=cfg,
        model=vlm,
        optimizer=optimizer,
        scheduler=scheduler,
        loader=ShardLoader(
            data_dir,
            batch_size,
            seed=t.seed,
            rank=ctx.rank,
            world_size=ctx.world_size,
            with_images=True,
        ),
        evals=EvalSets(data_dir),
        device=device,
        out_dir=out_dir,
        mixture=str(data_dir.resolve()),
        seq_len=seq_len,
        pad_id=pad_id,
        batch_size=batch_size,
        total=total,
        store=ImageStore(data_dir),
        section=sec,
        image_token_id=int(image_id),
        image_tokens=image_tokens,
        fingerprint=fingerprint,
        dist=ctx,
    )
    init_path = start_or_resume(state, saved, existing, init_path)
    record = {
        "stage": STAGE,
        "config_path": str(config_path),
        "config": raw_cfg,
        "model_config": dataclasses.asdict(model_cfg),
        "mixture": state.mixture,
        "init": str(init_path) if init_path else None,
        "vision": dataclasses.asdict(encoder.info) | {"model_cfg": None},
        "adapter": dataclasses.asdict(adapter_cfg),
        "total_steps": total,
        "device": str(device),
    }
    write_run_record(state, record)
    return state


def _weighted(rows: list[dict[str, Any]], key: str) -> float | None:
    pts = [(r[key], r["tokens"]) for r in rows if r.get(key) is not None and r.get("tokens")]
    total = sum(n for _, n in pts)
    return sum(v * n for v, n in pts) / total if total else None


def summarize_multimodal(out_dir: str | Path) -> dict[str, Any]:
    """The trainer's run summary plus the image evidence and the text-loss check."""
    out_dir = Path(out_dir)
    summary = summarize(out_dir)
    record = json.loads((out_dir / "run.json").read_text())
    tolerance = float(
        ((record["config"].get("stages") or {}).get(STAGE) or {}).get("text_loss_tolerance", 0.05)
    )
    evals = _read_jsonl(out_dir / "eval.jsonl")
    steps = sorted({r["step"] for r in evals})
    gaps: dict[int, dict[str, float | None]] = {}
    for step in steps:
        at = [r for r in evals if r["step"] == step]
        caption = [r for r in at if r["bucket"] == CAPTION_BUCKET] or [r for r in at if r["images"]]
        gaps[step] = {
            "matched": _weighted(caption, "loss"),
            "mismatched": _weighted(caption, "loss_mismatched"),
            "gap": _weighted(caption, "gap"),
            "text": _weighted([r for r in at if not r["images"]], "loss"),
        }
    first, last = (gaps[steps[0]], gaps[steps[-1]]) if steps else ({}, {})
    text_init, text_final = first.get("text"), last.get("text")
    text_ok = None
    if text_init is not None and text_final is not None:
        text_ok = text_final <= text_init * (1 + tolerance)
    summary |= {
        "vision": record["vision"]["spec"],
        "image_tokens": record["adapter"]["image_tokens"],
        "gap_first": first.get("gap"),
        "gap_last": last.get("gap"),
        "caption_loss_matched": last.get("matched"),
        "caption_loss_mismatched": last.get("mismatched"),
        "gap_by_step": {str(s): g["gap"] for s, g in gaps.items()},
        "text_loss_init": text_init,
        "text_loss_final": text_final,
        "text_loss_tolerance": tolerance,
        "text_loss_within_tolerance": text_ok,
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def run_multimodal(
    config_path: str | Path,
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    init: str | Path | None = None,
    vision: str | Path | None = None,
    steps: int | None = None,
    resume: bool = False,
    on_step: Callable[[int, int, dict[str, Any] | None], None] | None = None,
) -> dict[str, Any]:
    """Train the multimodal stage into `out_dir`; return its summary (with the image evidence)."""
    state = setup_multimodal(
        config_path, data_dir, out_dir, init=init, vision=vision, steps=steps, resume=resume
    )
    train_loop(state, on_step)
    distributed.barrier(state.dist)
    summary = summarize_multimodal(out_dir) if state.dist.is_main else None
    return distributed.broadcast_from_main(summary, state.dist)


__all__ = [
    "MultimodalState",
    "VisionEncoder",
    "derangement",
    "run_multimodal",
    "setup_multimodal",
    "summarize_multimodal",
    "text_config",
]
