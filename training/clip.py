"""CLIP here: a small open_clip model trained on (image, caption) pairs, loaded back, and scored.

Everything goes through open_clip itself: the model comes from open_clip's factory, the loss is
`open_clip.ClipLoss`, and a trained model is saved in open_clip's own local-directory layout:

    MODELDIR/open_clip_config.json      {"model_cfg": ..., "preprocess_cfg": ...}
    MODELDIR/open_clip_model.safetensors the state dict
    MODELDIR/train_summary.json          what `train_clip` did (steps, losses, timing, seed)

so `open_clip.create_model_and_transforms("local-dir:" + MODELDIR)` (open_clip >= 3.0) loads it
without this module. A *model spec* is one of:

- a directory written by `train_clip` (or `local-dir:DIR`);
- an open_clip architecture with a pretrained tag, `ViT-B-32:laion2b_s34b_b79k`;
- a Hugging Face hub id, `hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K`;
- for training only, an architecture without weights: `refinery-tiny` (defined below) or any
  `open_clip.list_models()` name.

Tags and hub ids download weights, which needs a reachable network; checkpoint directories never do.
Plain Python: never imports Dagster or Beam.
"""

from __future__ import annotations

import copy
import json
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import open_clip
import torch
from PIL import Image
from safetensors.torch import load_file, save_file

from common.pairs import open_image
from training.components import (
    build_optimizer,
    lr_scheduler,
    no_decay_open_clip,
    train_pairs,
)

CONFIG_FILE = "open_clip_config.json"
WEIGHTS_FILE = "open_clip_model.safetensors"
SUMMARY_FILE = "train_summary.json"
DEFAULT_MODEL = "refinery-tiny"

# open_clip model configs (the same dict shape as open_clip/model_configs/*.json) for models this
# module can train from scratch on a CPU in minutes. refinery-tiny: open_clip's ModifiedResNet
# (CLIP's RN50 design: bottleneck blocks, attention pooling) one block per stage at width 16 over
# 64x64 images, and a 2-layer, 64-wide text transformer over 24 tokens; about 4.6M parameters,
# 3.2M of them the 49,408-token embedding that open_clip's BPE tokenizer needs. On the sample web's
# scenes the ResNet tower learned colour and count in far fewer steps than a ViT of equal cost.
MODEL_CONFIGS: dict[str, dict[str, Any]] = {
    "refinery-tiny": {
        "embed_dim": 64,
        "vision_cfg": {"image_size": 64, "layers": [1, 1, 1, 1], "width": 16, "patch_size": None},
        "text_cfg": {
            "context_length": 24,
            "vocab_size": 49408,
            "width": 64,
            "heads": 2,
            "layers": 2,
        },
    },
}
# Preprocessing for those models: squash keeps the whole image (a centre crop would cut off what
# sits on the left or right, which captions mention).
PREPROCESS_CONFIGS: dict[str, dict[str, Any]] = {
    "refinery-tiny": {"resize_mode": "squash", "interpolation": "bilinear"},
}

ImageInput = str | Path | bytes | Image.Image
StepCallback = Callable[[int, int, dict[str, Any] | None], None]


class ClipError(ValueError):
    """A model spec, checkpoint or training input is unusable; the message says what to fix."""


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model spec: `kind` is config, dir, pretrained, hub or architecture."""

    text: str
    kind: str
    name: str
    pretrained: str | None = None

    @property
    def has_weights(self) -> bool:
        """Whether loading this spec gives trained weights (not a random initialisation)."""
        return self.kind in ("dir", "pretrained", "hub")


_SPEC_FORMS = (
    "a directory written by `refinery clip train` / training.clip.train_clip, "
    "'ARCH:TAG' with a pretrained tag (e.g. 'ViT-B-32:laion2b_s34b_b79k'), or 'hf-hub:ORG/REPO'"
)


def resolve_spec(spec: str | os.PathLike[str], *, for_training: bool = False) -> ModelSpec:
    """Parse a model spec; errors name the spec and the accepted forms.

    `for_training` also accepts architectures without weights (`refinery-tiny`, `ViT-B-32`),
    which training starts from a seeded random initialisation.
    """
    text = os.fspath(spec).strip()
    if not text:
        raise ClipError(f"empty CLIP model spec; pass {_SPEC_FORMS}")
    if text.startswith("local-dir:"):
        return _dir_spec(text, Path(text[len("local-dir:") :]))
    if text.startswith("hf-hub:"):
        if not text[len("hf-hub:") :].strip("/"):
            raise ClipError(f"CLIP model spec {text!r} has no hub id; write 'hf-hub:ORG/REPO'")
        return ModelSpec(text, "hub", text)
    path = Path(text)
    if path.is_dir():
        return _dir_spec(text, path)
    if text in MODEL_CONFIGS or text in open_clip.list_models():
        kind = "config" if text in MODEL_CONFIGS else "architecture"
        if for_training:
            return ModelSpec(text, kind, text)
        tags = open_clip.list_pretrained_tags_by_model(text)
        hint = f"'{text}:{tags[0]}' (tags: {', '.join(tags)})" if tags else "a trained directory"
        raise ClipError(
            f"CLIP model spec {text!r} is an architecture without weights, so its scores would be "
            f"random; train it with `refinery clip train --model {text}` and pass the output "
            f"directory, or pass {hint}"
        )
    name, sep, tag = text.rpartition(":")
    if sep and name and tag and "/" not in tag and os.sep not in tag:
        if name not in open_clip.list_models():
            raise ClipError(
                f"CLIP model spec {text!r}: {name!r} is not an open_clip architecture; "
                f"pass one of open_clip.list_models() (e.g. ViT-B-32, RN50) with a tag, or {_SPEC_FORMS}"
            )
        tags = open_clip.list_pretrained_tags_by_model(name)
        if tag not in tags:
            raise ClipError(
                f"CLIP model spec {text!r}: {tag!r} is not a pretrained tag of {name}; "
                f"known tags: {', '.join(tags) or 'none'}"
            )
        return ModelSpec(text, "pretrained", name, tag)
    if "/" in text or os.sep in text or text.startswith("."):
        hub = f" (for a Hugging Face hub id write 'hf-hub:{text}')" if text.count("/") == 1 else ""
        raise ClipError(f"CLIP model spec {text!r}: no such directory{hub}; pass {_SPEC_FORMS}")
    trainable = ", ".join(MODEL_CONFIGS)
    raise ClipError(
        f"CLIP model spec {text!r} is not a directory, an open_clip architecture or a hub id; "
        f"pass {_SPEC_FORMS}" + (f" (to train from scratch: {trainable})" if for_training else "")
    )


def _dir_spec(text: str, path: Path) -> ModelSpec:
    if not path.is_dir():
        raise ClipError(f"CLIP model spec {text!r}: no such directory {path}; pass {_SPEC_FORMS}")
    config = path / CONFIG_FILE
    if not config.is_file():
        raise ClipError(
            f"CLIP model directory {path} has no {CONFIG_FILE}; pass a directory written by "
            "`refinery clip train` (open_clip's local-dir layout)"
        )
    try:
        cfg = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ClipError(
            f"{config}: not readable JSON ({exc}); re-run `refinery clip train`"
        ) from exc
    if not isinstance(cfg, dict) or "model_cfg" not in cfg:
        raise ClipError(f"{config}: field 'model_cfg' missing; re-run `refinery clip train`")
    if (
        not any(path.glob("*.safetensors"))
        and not any(path.glob("*.bin"))
        and not any(path.glob("*.pth"))
    ):
        raise ClipError(
            f"CLIP model directory {path} has {CONFIG_FILE} but no weights ({WEIGHTS_FILE}); "
            "re-run `refinery clip train` into it"
        )
    return ModelSpec(text, "dir", f"local-dir:{path}")


@dataclass
class LoadedClip:
    """An open_clip model with its inference transform and tokenizer."""

    spec: ModelSpec
    model: torch.nn.Module
    preprocess: Callable[[Image.Image], torch.Tensor]
    tokenizer: Callable[..., torch.Tensor]
    device: torch.device
    model_cfg: dict[str, Any]


def default_device() -> torch.device:
    """CUDA when there is one, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_clip(
    spec: str | os.PathLike[str] | ModelSpec,
    device: str | torch.device | None = None,
    *,
    precision: str = "fp32",
    for_training: bool = False,
) -> LoadedClip:
    """Build the model a spec names through open_clip's factory, in eval mode."""
    resolved = (
        spec if isinstance(spec, ModelSpec) else resolve_spec(spec, for_training=for_training)
    )
    dev = torch.device(device) if device is not None else default_device()
    try:
        if resolved.kind == "config":
            with tempfile.TemporaryDirectory(prefix="refinery-clip-") as tmp:
                _write_config(
                    Path(tmp), MODEL_CONFIGS[resolved.name], PREPROCESS_CONFIGS[resolved.name]
                )
                return _build(resolved, f"local-dir:{tmp}", None, dev, precision)
        if resolved.kind == "pretrained":
            return _build(resolved, resolved.name, resolved.pretrained, dev, precision)
        return _build(resolved, resolved.name, None, dev, precision)
    except ClipError:
        raise
    except Exception as exc:  # open_clip raises RuntimeError, ValueError, OSError, hub errors
        where = (
            "the weights need a reachable network (or a warm open_clip/Hugging Face cache)"
            if resolved.kind in ("pretrained", "hub")
            else "re-run `refinery clip train` to rewrite the directory"
        )
        raise ClipError(
            f"CLIP model spec {resolved.text!r} could not be loaded: {exc}; {where}"
        ) from exc


def _build(
    spec: ModelSpec, name: str, pretrained: str | None, device: torch.device, precision: str
) -> LoadedClip:
    model, _, preprocess = open_clip.create_model_and_transforms(
        name, pretrained=pretrained, device=device, precision=precision
    )
    model_cfg = open_clip.get_model_config(name)
    if model_cfg is None:
        raise ClipError(f"CLIP model spec {spec.text!r}: open_clip found no config for {name!r}")
    model.eval()
    return LoadedClip(spec, model, preprocess, open_clip.get_tokenizer(name), device, model_cfg)


def _write_config(directory: Path, model_cfg: dict[str, Any], preprocess_cfg: dict[str, Any]):
    body = {"model_cfg": model_cfg, "preprocess_cfg": preprocess_cfg}
    (directory / CONFIG_FILE).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------- training


def train_clip(
    pairs: Sequence[tuple[ImageInput, str]],
    out_dir: str | os.PathLike[str],
    *,
    model: str = DEFAULT_MODEL,
    steps: int = 300,
    batch_size: int = 128,
    seed: int = 0,
    lr: float = 2e-3,
    weight_decay: float = 0.1,
    warmup: int | None = None,
    device: str | torch.device | None = None,
    on_step: StepCallback | None = None,
) -> dict[str, Any]:
    """Train a CLIP model with open_clip's `ClipLoss` on (image, caption) pairs; save it to `out_dir`.

    `model` is any spec `resolve_spec(..., for_training=True)` accepts: `refinery-tiny` trains
    from scratch; a directory, tag or hub id fine-tunes those weights. Batches are drawn from a
    seeded permutation per epoch, images go through the model's own (deterministic) inference
    transform, and the learning rate warms up linearly then follows a cosine, so a seed gives the
    same weights on the same device. Undecodable images are skipped and counted. `on_step(step,
    steps, row)` is called after every step; `row` holds step, loss, lr and pairs_per_s.
    Returns the summary also written to `out_dir/train_summary.json`.
    """
    if steps < 1:
        raise ClipError(f"steps={steps}: train for at least 1 step (--steps)")
    if batch_size < 2:
        raise ClipError(f"batch_size={batch_size}: a contrastive batch needs >= 2 (--batch-size)")
    if not lr > 0:
        raise ClipError(f"lr={lr}: the learning rate must be positive")
    spec = resolve_spec(model, for_training=True)
    out = Path(out_dir)
    _seed_everything(seed)
    started = time.perf_counter()
    loaded = load_clip(spec, device)
    images, captions, skipped = _decode_pairs(pairs, loaded.preprocess)
    if len(images) < 2:
        raise ClipError(
            f"only {len(images)} of {len(pairs)} training pairs have a decodable image "
            f"(unreadable: {skipped[:3]}); pass at least 2 (image, caption) pairs"
        )
    texts = loaded.tokenizer(captions)
    net = loaded.model
    net.train()
    batch = min(batch_size, len(images))
    warm = max(1, steps // 10) if warmup is None else max(0, warmup)
    optimizer, scheduler = open_clip_optimizer(net, lr, weight_decay, steps, warm)
    loss_fn = open_clip.ClipLoss()
    dev = loaded.device

    def loss_of(idx: torch.Tensor) -> torch.Tensor:
        image_features, text_features, logit_scale = net(images[idx].to(dev), texts[idx].to(dev))[
            :3
        ]
        return loss_fn(image_features, text_features, logit_scale)

    losses = train_pairs(
        net,
        optimizer,
        scheduler,
        loss_of,
        examples=len(images),
        batch=batch,
        steps=steps,
        seed=seed,
        on_step=on_step,
        error=ClipError,
    )
    net.eval()
    seconds = time.perf_counter() - started
    tail = losses[-max(1, min(20, steps // 10)) :]
    summary = {
        "model": spec.text,
        "out_dir": str(out),
        "pairs": len(images),
        "skipped_images": len(skipped),
        "skipped_examples": [str(s) for s in skipped[:5]],
        "steps": steps,
        "batch_size": batch,
        "seed": seed,
        "lr": lr,
        "weight_decay": weight_decay,
        "warmup": warm,
        "first_loss": losses[0],
        "final_loss": float(np.mean(tail)),
        "logit_scale": float(net.logit_scale.detach().exp()),
        "seconds": round(seconds, 3),
        "pairs_per_s": round(steps * batch / seconds, 1),
        "device": str(dev),
        "parameters": sum(p.numel() for p in net.parameters()),
        "open_clip_version": open_clip.__version__,
    }
    save_clip(net, loaded.model_cfg, out, summary)
    return summary


def save_clip(
    model: torch.nn.Module,
    model_cfg: dict[str, Any],
    out_dir: str | os.PathLike[str],
    summary: dict[str, Any] | None = None,
) -> Path:
    """Write `model` in open_clip's local-dir layout (config + safetensors), atomically per file."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    preprocess_cfg = dict(getattr(model.visual, "preprocess_cfg", {}) or {})
    state = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    tmp_weights = out / (WEIGHTS_FILE + ".tmp")
    save_file(state, str(tmp_weights))
    os.replace(tmp_weights, out / WEIGHTS_FILE)
    cfg = copy.deepcopy(model_cfg)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        _write_config(Path(tmp), cfg, preprocess_cfg)
        os.replace(Path(tmp) / CONFIG_FILE, out / CONFIG_FILE)
    if summary is not None:
        (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return out


def load_state(out_dir: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """The saved state dict of a checkpoint directory (CPU tensors)."""
    return load_file(str(Path(out_dir) / WEIGHTS_FILE))


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def open_clip_optimizer(
    model: torch.nn.Module, lr: float, weight_decay: float, steps: int, warmup: int
) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """open_clip's recipe: AdamW (betas 0.9/0.98, eps 1e-6, its no-decay split), warm-up + cosine to 0."""
    optimizer = build_optimizer(
        model,
        lr=lr,
        weight_decay=weight_decay,
        no_decay=no_decay_open_clip,
        betas=(0.9, 0.98),
        eps=1e-6,
    )
    scheduler = lr_scheduler(optimizer, total_steps=steps, warmup_steps=warmup, min_ratio=0.0)
    return optimizer, scheduler


def _decode_pairs(
    pairs: Sequence[tuple[ImageInput, str]], preprocess: Callable[[Image.Image], torch.Tensor]
) -> tuple[torch.Tensor, list[str], list[ImageInput]]:
    tensors, captions, skipped = [], [], []
    for i, pair in enumerate(pairs):
        if len(pair) != 2 or not isinstance(pair[1], str) or not pair[1].strip():
            raise ClipError(
                f"training pair {i} is {pair!r}; each pair must be (image path or bytes, non-empty "
                "caption)"
            )
        image = open_image(pair[0])
        if image is None:
            skipped.append(pair[0] if not isinstance(pair[0], bytes) else f"<bytes #{i}>")
            continue
        tensors.append(preprocess(image))
        captions.append(pair[1])
    stacked = torch.stack(tensors) if tensors else torch.empty(0)
    return stacked, captions, skipped


# ----------------------------------------------------------------------------- scoring


class ClipScorer:
    """Loads a CLIP model once and scores images against texts in batches (cosine similarity).

    Runs on CUDA when available unless `device` says otherwise. Images are decoded by `workers`
    threads; an image that cannot be decoded scores NaN instead of raising.
    """

    def __init__(
        self,
        model_spec: str | os.PathLike[str],
        device: str | torch.device | None = None,
        batch_size: int = 256,
        *,
        precision: str = "fp32",
        workers: int = 4,
        keep_bytes: int = 1 << 30,
    ) -> None:
        if batch_size < 1:
            raise ClipError(f"batch_size={batch_size}: score at least 1 image per batch")
        self.loaded = load_clip(model_spec, device, precision=precision)
        self.spec = self.loaded.spec
        self.device = self.loaded.device
        self.batch_size = batch_size
        self.workers = max(1, workers)
        self.input_dtype = open_clip.get_input_dtype(precision)
        self.keep_bytes = keep_bytes
        if self.device.type == "cpu":
            # Convolutions in channels-last layout run ~1.4x faster on the CPU (oneDNN's native
            # layout, no reorder per layer): refinery-tiny's forward 1.3 -> 0.9 ms of CPU an
            # image. Scores move by at most 2.4e-7 (summation order), same decisions on
            # bench/images.py's 2,000 images.
            self.loaded.model.to(memory_format=torch.channels_last)
        self._pixel_stage, self._tensor_stage = _split_preprocess(self.loaded.preprocess)
        self._batch_tensors = _batched_tensor_stage(self._tensor_stage)
        # `keep`: images handed over while they are fetched are encoded in batches by one
        # background thread as they come, and only their embeddings are kept.
        self._embedded: dict[str, np.ndarray] = {}  # absolute file path -> image embedding
        # kept, not yet in a batch: (path, the pixel stage's output as an HxWx3 uint8 array when
        # the tensor stage runs batched in the encoder thread, else its tensor)
        self._pending: list[tuple[str, np.ndarray | torch.Tensor]] = []
        self._encoding: list[Future] = []
        self._encoder: ThreadPoolExecutor | None = None
        self._keep_lock = threading.Lock()
        self._kept_count = 0
        self._kept_bytes = 0

    @property
    def kept(self) -> int:
        """Images taken by `keep` (their files are not decoded when scored)."""
        return self._kept_count

    @property
    def embed_dim(self) -> int:
        """Width of the shared image-text embedding."""
        return int(self.loaded.model_cfg["embed_dim"])

    def _prepare(self, image: ImageInput) -> torch.Tensor | None:
        if isinstance(image, Image.Image):
            decoded = image if image.mode == "RGB" else image.convert("RGB")
        else:
            decoded = open_image(image)
        return None if decoded is None else self.loaded.preprocess(decoded)

    def keep(self, path: str | os.PathLike[str], image: Image.Image) -> None:
        """Take the decoded image of the file at `path` now (from any thread; the image fetch's
        `on_image`): the model's pixel steps (resize, crop) run here, and the image is made a
        tensor (`_batched_tensor_stage`, a whole batch at once) and encoded with the next full
        batch by one background thread while the fetch goes on; only its embedding is
        kept, so scoring `path` later neither reads nor decodes the file. `image` must be what
        decoding the file gives; the scores are then the same (each batch is a full
        `batch_size`: an image's embedding does not depend on what it is batched with). Past
        `keep_bytes` of kept embeddings, later images are not kept (their files are decoded).
        The background thread runs the model with one intra-op thread on the CPU: it runs next
        to the fetch's own threads, which keep the other cores busy, and one thread a batch
        costs a little less CPU (refinery-tiny, 64-image batches: 0.69-0.91 ms an image against
        0.82-0.99 with two, under the OMP_WAIT_POLICY=PASSIVE the training package sets)."""
        if self._pixel_stage is None or self._kept_bytes >= self.keep_bytes:
            return
        small = self._pixel_stage(image if image.mode == "RGB" else image.convert("RGB"))
        if self._batch_tensors is not None and small.mode == "RGB":
            tensor = np.asarray(small)  # made a tensor with its batch, in the encoder thread
        else:
            tensor = self._tensor_stage(small)
        with self._keep_lock:
            self._pending.append((os.path.abspath(path), tensor))
            self._kept_count += 1
            self._kept_bytes += 4 * self.embed_dim
            if len(self._pending) >= self.batch_size:
                batch, self._pending = self._pending, []
                self._encoding.append(self._background().submit(self._encode_kept, batch))

    def _background(self) -> ThreadPoolExecutor:
        if self._encoder is None:
            threads = 1 if self.device.type == "cpu" else None

            def init() -> None:  # OpenMP's thread count is per calling thread
                if threads:
                    torch.set_num_threads(threads)

            self._encoder = ThreadPoolExecutor(1, "clip-encode", initializer=init)
        return self._encoder

    @torch.inference_mode()
    def _encode_kept(self, batch: list[tuple[str, np.ndarray | torch.Tensor]]) -> None:
        items = [t for _, t in batch]
        items += [items[-1]] * (self.batch_size - len(items))  # a full batch, always
        arrays = all(isinstance(t, np.ndarray) for t in items)
        if self._batch_tensors is not None and arrays and len({t.shape for t in items}) == 1:
            stacked = self._batch_tensors(np.stack(items))
        else:
            stacked = torch.stack(
                [self._tensor_stage(t) if isinstance(t, np.ndarray) else t for t in items]
            )
        stacked = stacked.to(self.device, dtype=self.input_dtype)
        feats = self.loaded.model.encode_image(stacked, normalize=True).float().cpu().numpy()
        with self._keep_lock:
            for (path, _), row in zip(batch, feats, strict=False):
                self._embedded[path] = row

    def _drain(self) -> None:
        """Encode what `keep` holds and wait for the background batches (their errors raise)."""
        with self._keep_lock:
            batch, self._pending = self._pending, []
            if batch:
                self._encoding.append(self._background().submit(self._encode_kept, batch))
            waiting, self._encoding = self._encoding, []
        for future in waiting:
            future.result()

    def close(self) -> None:
        """Stop the background encoder (kept embeddings stay usable)."""
        self._drain()
        if self._encoder is not None:
            self._encoder.shutdown(wait=True)
            self._encoder = None

    @torch.inference_mode()
    def encode_images(self, images: Sequence[ImageInput]) -> tuple[np.ndarray, np.ndarray]:
        """L2-normalised image embeddings (float32, NaN rows for undecodable) and an ok mask."""
        out = np.full((len(images), self.embed_dim), np.nan, dtype=np.float32)
        ok = np.zeros(len(images), dtype=bool)
        todo = list(range(len(images)))
        if self._kept_count:
            self._drain()
            todo = []
            for i, image in enumerate(images):
                got = None
                if isinstance(image, str | Path):
                    got = self._embedded.get(os.path.abspath(image))
                if got is None:
                    todo.append(i)
                else:
                    out[i], ok[i] = got, True
        rest = [images[i] for i in todo]
        with ThreadPoolExecutor(self.workers) as pool:
            for start in range(0, len(rest), self.batch_size):
                chunk = list(pool.map(self._prepare, rest[start : start + self.batch_size]))
                keep = [i for i, t in enumerate(chunk) if t is not None]
                if not keep:
                    continue
                batch = torch.stack([chunk[i] for i in keep]).to(
                    self.device, dtype=self.input_dtype, non_blocking=True
                )
                feats = self.loaded.model.encode_image(batch, normalize=True)
                rows = np.asarray(todo)[np.asarray(keep) + start]
                out[rows] = feats.float().cpu().numpy()
                ok[rows] = True
        return out, ok

    @torch.inference_mode()
    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised text embeddings (float32), one row per text."""
        out = np.empty((len(texts), self.embed_dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            tokens = self.loaded.tokenizer(list(texts[start : start + self.batch_size]))
            feats = self.loaded.model.encode_text(tokens.to(self.device), normalize=True)
            out[start : start + len(tokens)] = feats.float().cpu().numpy()
        return out

    def score(self, images: Sequence[ImageInput], captions: Sequence[str | None]) -> np.ndarray:
        """Cosine similarity of each image with its own caption; NaN when either is missing."""
        if len(images) != len(captions):
            raise ClipError(
                f"score: {len(images)} images but {len(captions)} captions; pass one caption per image"
            )
        unique = sorted({c for c in captions if c})
        index = {c: i for i, c in enumerate(unique)}
        text_feats = self.encode_texts(unique) if unique else np.empty((0, self.embed_dim))
        image_feats, _ = self.encode_images(images)
        scores = np.full(len(images), np.nan, dtype=np.float32)
        for row, caption in enumerate(captions):
            if caption:
                scores[row] = image_feats[row] @ text_feats[index[caption]]
        return scores

    def similarity(self, images: Sequence[ImageInput], prompts: Sequence[str]) -> np.ndarray:
        """Cosine similarity of every image with every prompt: shape (images, prompts).

        Rows of undecodable images are NaN.
        """
        if not prompts:
            raise ClipError("similarity: no prompts; pass at least one text prompt")
        image_feats, _ = self.encode_images(images)
        return image_feats @ self.encode_texts(prompts).T


def _split_preprocess(preprocess) -> tuple[Callable | None, Callable]:
    """The model's preprocessing split where the image becomes a tensor: (the pixel steps on a
    PIL image, the rest); (None, preprocess) when it is not a torchvision Compose of that shape."""
    from torchvision import transforms as T

    steps = getattr(preprocess, "transforms", None)
    if not isinstance(preprocess, T.Compose) or not steps:
        return None, preprocess
    tensor_steps = (T.ToTensor, T.PILToTensor, getattr(open_clip.transform, "MaybeToTensor", ()))
    at = next((i for i, t in enumerate(steps) if isinstance(t, tensor_steps)), None)
    if not at:
        return None, preprocess
    return T.Compose(steps[:at]), T.Compose(steps[at:])


def _batched_tensor_stage(stage) -> Callable[[np.ndarray], torch.Tensor] | None:
    """The tensor stage of the model's preprocessing (`_split_preprocess`) run on a whole batch
    at once: images as one (N, H, W, 3) uint8 array -> the (N, 3, H, W) float tensor that stacking
    the stage's output for each image gives, bit for bit (the same elementwise operations: to
    float, /255, then each Normalize's subtract and divide), in one call instead of N (0.19 ->
    0.02 ms of CPU an image for refinery-tiny's 64x64 inputs). None unless the stage is a
    ToTensor (or open_clip's MaybeToTensor) followed only by Normalize steps."""
    from torchvision import transforms as T

    steps = list(getattr(stage, "transforms", None) or [])
    if not steps or type(steps[0]) not in (T.ToTensor, open_clip.transform.MaybeToTensor):
        return None
    if not all(type(t) is T.Normalize for t in steps[1:]):
        return None
    norms = steps[1:]

    def run(images: np.ndarray) -> torch.Tensor:
        out = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()
        out = out.to(dtype=torch.get_default_dtype()).div(255)
        for norm in norms:
            out = T.functional.normalize(out, norm.mean, norm.std, norm.inplace)
        return out

    return run


def roc_auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """ROC-AUC of separating positive from negative scores (ties count half); NaNs are dropped."""
    pos = np.asarray(positive, dtype=np.float64)
    neg = np.asarray(negative, dtype=np.float64)
    pos, neg = pos[~np.isnan(pos)], neg[~np.isnan(neg)]
    if not len(pos) or not len(neg):
        raise ClipError(
            f"roc_auc needs scores on both sides; got {len(pos)} positive, {len(neg)} negative"
        )
    from common.metrics import roc_auc as auc

    return auc([1] * len(pos) + [0] * len(neg), np.concatenate([pos, neg]))
