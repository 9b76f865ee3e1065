"""A CoCa captioner trained here: open_clip's own `CoCa` model class and `CoCaLoss`, made small.

The model comes from open_clip's factory (a config with `multimodal_cfg` builds `open_clip.CoCa`),
the loss is `open_clip.loss.CoCaLoss` (contrastive + captioning), the tokenizer is open_clip's
bundled BPE (`open_clip.get_tokenizer`, no download), and a trained model is saved in open_clip's
local-directory layout, like `training.clip`:

    MODELDIR/open_clip_config.json       {"model_cfg": ..., "preprocess_cfg": ...}
    MODELDIR/open_clip_model.safetensors the state dict
    MODELDIR/train_summary.json          what `train_coca` did (steps, losses, timing, seed,
                                         the pairs skipped and why)
    MODELDIR/model_card.json             what the model is: "CoCa trained here on N sample-web pairs"

so `open_clip.create_model_and_transforms("local-dir:" + MODELDIR)` loads it without this module.

The image tower starts from scratch, not from the project's CLIP: CoCa's decoder cross-attends to
the image tower's token outputs (`output_tokens`), which open_clip builds only for a
VisionTransformer, while `refinery-tiny` CLIP's image tower is a ModifiedResNet (no tokens).

Generation: open_clip's `CoCa.generate` needs `transformers.BeamSearchScorer`, which transformers 5
(pinned here) no longer has, so open_clip disables it (`coca_model._has_transformers` is False).
`generate` below is the loop of open_clip's `top_k` generation with k=1 (greedy, deterministic): the
image is encoded once and CoCa's own forward gives the next-token logits, with EOS held back until
`min_len` tokens. It calls open_clip's `CoCa.generate` instead where open_clip has it enabled.

Plain Python: never imports Dagster or Beam.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import open_clip
import torch
from open_clip import coca_model
from open_clip.loss import CoCaLoss
from PIL import Image

from common.pairs import kept_pairs, open_image, pairs_files
from training.clip import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    ImageInput,
    _seed_everything,
    _write_config,
    default_device,
    open_clip_optimizer,
    save_clip,
)
from training.components import train_pairs

CARD_FILE = "model_card.json"
DEFAULT_MODEL = "refinery-coca-tiny"
VOCAB_FILE = "vocab.json"
BPE_SOT, BPE_EOT, PAD_TOKEN = 49406, 49407, 0  # open_clip's BPE: <start_of_text>, <end_of_text>

# An open_clip CoCa config (the shape of open_clip/model_configs/coca_ViT-B-32.json) small enough
# to train on 2 CPU cores in well under a minute: a 2-layer, 64-wide ViT over 64x64 images in 8x8
# patches (64 patch tokens the decoder attends to, so "left" and "right" survive), a 2-layer text
# encoder and a 2-layer multimodal decoder, 64 wide, over 24 tokens. `vocab_size` is set at
# training time to the compact vocabulary (see `CompactTokenizer`): with open_clip's full 49,408
# BPE ids the embedding and the decoder's output layer were 6.4M of 6.8M parameters and a step
# took ~2.8 s on 2 shared cores (measured), against a vocabulary of ~60 words in the captions.
MODEL_CONFIGS: dict[str, dict[str, Any]] = {
    "refinery-coca-tiny": {
        "embed_dim": 64,
        "vision_cfg": {
            "image_size": 64,
            "layers": 2,
            "width": 64,
            "head_width": 32,
            "patch_size": 8,
            "output_tokens": True,
        },
        "text_cfg": {
            "context_length": 24,
            "vocab_size": None,
            "width": 64,
            "heads": 2,
            "layers": 2,
            "embed_cls": True,
            "output_tokens": True,
        },
        "multimodal_cfg": {
            "context_length": 24,
            "vocab_size": None,
            "width": 64,
            "heads": 2,
            "layers": 2,
        },
        "custom_text": True,
    },
}
PREPROCESS_CONFIGS: dict[str, dict[str, Any]] = {
    "refinery-coca-tiny": {"resize_mode": "squash", "interpolation": "bilinear"},
}

StepCallback = Callable[[int, int, dict[str, Any] | None], None]


class CaptionerError(ValueError):
    """A captioner directory, training input or argument is unusable; the message says the fix."""


# ----------------------------------------------------------------------------- pairs


# ----------------------------------------------------------------------------- tokenizer


class CompactTokenizer:
    """open_clip's bundled BPE tokenizer with its ids mapped onto a compact vocabulary.

    The vocabulary is the BPE ids that occur in the training captions, in BPE order, between
    pad (0) and unknown (1) at the front and <start_of_text>, <end_of_text> at the back (so pad
    stays 0, which open_clip's CoCa masks, and <end_of_text> stays the highest id, as in BPE).
    Text is tokenized by `open_clip.tokenize` and mapped; tokens are mapped back and decoded by
    `open_clip.decode`. A BPE id outside the vocabulary becomes unknown (decoded as nothing).
    """

    def __init__(self, bpe_ids: Sequence[int], context_length: int):
        ids = [int(i) for i in bpe_ids]
        if len(ids) < 4 or ids[0] != PAD_TOKEN or ids[-2:] != [BPE_SOT, BPE_EOT]:
            raise CaptionerError(
                f"vocabulary {ids[:3]}...{ids[-2:]} must start with pad 0 and unknown and end "
                f"with {BPE_SOT}, {BPE_EOT}; re-run `refinery captioner train`"
            )
        self.bpe_ids = ids
        self.context_length = context_length
        self.to_compact = torch.full((BPE_EOT + 1,), 1, dtype=torch.long)  # unknown
        self.to_compact[torch.tensor(ids[2:])] = torch.arange(2, len(ids))
        self.to_compact[PAD_TOKEN] = PAD_TOKEN
        self.to_bpe = torch.tensor(ids, dtype=torch.long)

    @classmethod
    def build(cls, captions: Iterable[str], context_length: int) -> CompactTokenizer:
        """The vocabulary of `captions` (their BPE ids under open_clip's tokenizer)."""
        bpe = open_clip.tokenize(list(captions), context_length=context_length)
        used = sorted(set(bpe.unique().tolist()) - {PAD_TOKEN, BPE_SOT, BPE_EOT})
        return cls([PAD_TOKEN, 1, *used, BPE_SOT, BPE_EOT], context_length)

    @property
    def vocab_size(self) -> int:
        return len(self.bpe_ids)

    @property
    def sot(self) -> int:
        return len(self.bpe_ids) - 2

    @property
    def eot(self) -> int:
        return len(self.bpe_ids) - 1

    def __call__(self, texts: str | Sequence[str]) -> torch.Tensor:
        texts = [texts] if isinstance(texts, str) else list(texts)
        return self.to_compact[open_clip.tokenize(texts, context_length=self.context_length)]

    def decode(self, tokens: Sequence[int] | torch.Tensor) -> str:
        """Text of one row of compact ids (stops at <end_of_text>; pad, unknown, start dropped)."""
        ids = [int(t) for t in tokens]
        if self.eot in ids:
            ids = ids[: ids.index(self.eot)]
        ids = [i for i in ids if i not in (PAD_TOKEN, 1, self.sot)]
        if not ids:
            return ""
        text = open_clip.decode(self.to_bpe[torch.tensor(ids)]).strip()
        return re.sub(r"(?<=\w) - (?=\w)", "-", text)  # BPE splits "x-ray" into x, -, ray

    def save(self, directory: Path) -> None:
        body = {
            "tokenizer": "open_clip SimpleTokenizer (bundled BPE), ids mapped to this list",
            "context_length": self.context_length,
            "bpe_ids": self.bpe_ids,
        }
        (directory / VOCAB_FILE).write_text(json.dumps(body) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> CompactTokenizer:
        body = json.loads((directory / VOCAB_FILE).read_text(encoding="utf-8"))
        return cls(body["bpe_ids"], int(body["context_length"]))


# ----------------------------------------------------------------------------- model


def model_config(name: str, vocab_size: int) -> dict[str, Any]:
    """The open_clip config of `name` with the compact vocabulary's size filled in."""
    cfg = copy.deepcopy(MODEL_CONFIGS[name])
    cfg["text_cfg"]["vocab_size"] = vocab_size
    cfg["multimodal_cfg"]["vocab_size"] = vocab_size
    return cfg


def _init_decoder(decoder: Any) -> None:
    """Initialise open_clip's MultimodalTransformer as its own `init_parameters` means to.

    open_clip never calls that method (and it could not run: it reads `self.transformer`, which
    the decoder does not have), so the output projection stays `torch.empty` (whatever memory
    held: first caption losses of 1e35 measured, and seed-identical runs that differ). Pretrained
    CoCas overwrite it; from scratch it is set here, with the method's standard deviations.
    """
    width, layers = decoder.width, decoder.layers
    proj_std = width**-0.5 * (2 * layers) ** -0.5
    attn_std, fc_std = width**-0.5, (2 * width) ** -0.5
    with torch.no_grad():
        for block in [*decoder.resblocks, *decoder.cross_attn]:
            torch.nn.init.normal_(block.attn.in_proj_weight, std=attn_std)
            torch.nn.init.normal_(block.attn.out_proj.weight, std=proj_std)
            torch.nn.init.normal_(block.mlp.c_fc.weight, std=fc_std)
            torch.nn.init.normal_(block.mlp.c_proj.weight, std=proj_std)
        torch.nn.init.normal_(decoder.text_projection, std=width**-0.5)


def _create(model_dir: Path, device: torch.device) -> tuple[Any, Callable]:
    """(CoCa, preprocess) from a directory in open_clip's local-dir layout."""
    with _quiet_open_clip():
        model, _, preprocess = open_clip.create_model_and_transforms(
            f"local-dir:{model_dir}", device=device
        )
    if not isinstance(model, open_clip.CoCa):
        raise CaptionerError(
            f"captioner {model_dir} builds a {type(model).__name__}, not open_clip.CoCa; pass a "
            "directory written by `refinery captioner train` (its config has multimodal_cfg)"
        )
    return model, preprocess


class _quiet_open_clip:
    """open_clip logs a warning when a config has no weights beside it (training from scratch)."""

    def __enter__(self):
        self.logger = logging.getLogger()
        self.level = self.logger.level
        self.logger.setLevel(max(self.level, logging.ERROR))

    def __exit__(self, *exc):
        self.logger.setLevel(self.level)


@dataclass
class Captioner:
    """A trained CoCa with its transform and tokenizer; `generate(images)` captions them."""

    directory: Path
    model: Any  # open_clip.CoCa
    preprocess: Callable[[Image.Image], torch.Tensor]
    tokenizer: CompactTokenizer
    device: torch.device
    card: dict[str, Any]

    @property
    def name(self) -> str:
        """What rows record as their source: the card's name."""
        return str(self.card.get("name") or f"coca:{self.directory.name}")

    @torch.inference_mode()
    def generate(
        self,
        images: Sequence[ImageInput | Image.Image],
        *,
        max_len: int | None = None,
        min_len: int = 3,
        batch_size: int = 64,
    ) -> list[str]:
        """One caption per image (greedy decoding, deterministic); "" for an undecodable image."""
        ctx = int(self.model.context_length)
        max_len = min(max_len or ctx, ctx)
        out = [""] * len(images)
        for start in range(0, len(images), batch_size):
            chunk = images[start : start + batch_size]
            decoded = [im if isinstance(im, Image.Image) else open_image(im) for im in chunk]
            keep = [i for i, im in enumerate(decoded) if im is not None]
            if not keep:
                continue
            batch = torch.stack([self.preprocess(decoded[i]) for i in keep]).to(self.device)
            tokens = generate_tokens(
                self.model,
                batch,
                sot=self.tokenizer.sot,
                eot=self.tokenizer.eot,
                max_len=max_len,
                min_len=min_len,
            )
            for i, row in zip(keep, tokens, strict=True):
                out[start + i] = self.tokenizer.decode(row.tolist())
        return out


def generate_tokens(
    model: Any, images: torch.Tensor, *, sot: int, eot: int, max_len: int, min_len: int = 3
) -> torch.Tensor:
    """Token ids (`sot` first) of greedy captions of a preprocessed image batch.

    Where open_clip's CoCa.generate is enabled (transformers with BeamSearchScorer), it is used
    with generation_type="top_k", top_k=1; otherwise the same loop runs here (see the module
    docstring).
    """
    if coca_model._has_transformers:
        return model.generate(
            images,
            seq_len=max_len,
            max_seq_len=max_len,
            generation_type="top_k",
            top_k=1,
            min_seq_len=min_len,
            pad_token_id=PAD_TOKEN,
            eos_token_id=eot,
            sot_token_id=sot,
        )
    was_training = model.training
    model.eval()
    image_latent, image_embs = model._encode_image(images)
    out = torch.full((images.shape[0], 1), sot, dtype=torch.long, device=images.device)
    done = torch.zeros(images.shape[0], dtype=torch.bool, device=images.device)
    while out.shape[1] < max_len and not bool(done.all()):
        logits = model(
            images, out, image_latent=image_latent, image_embs=image_embs, output_labels=False
        )["logits"][:, -1]
        if out.shape[1] < min_len:  # open_clip's MinLengthLogitsProcessor: no EOS before min_len
            logits[:, eot] = -math.inf
        if out.shape[1] == max_len - 1:  # the last slot is EOS, as in open_clip's loop
            step = torch.full_like(done, eot, dtype=torch.long)
        else:
            step = logits.argmax(dim=-1)
        step = torch.where(done, torch.full_like(step, PAD_TOKEN), step)
        out = torch.cat([out, step[:, None]], dim=1)
        done |= step == eot
    model.train(was_training)
    return out


def load_captioner(
    directory: str | os.PathLike[str], device: str | torch.device | None = None
) -> Captioner:
    """Load a directory written by `train_coca` (`refinery captioner train`), in eval mode."""
    path = Path(directory)
    fix = "train one with `refinery captioner train --out DIR` and pass that DIR (--captioner)"
    if not path.is_dir():
        raise CaptionerError(f"captioner {path}: no such directory; {fix}")
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        if not (path / name).is_file():
            raise CaptionerError(f"captioner {path}: {name} missing; {fix}")
    try:
        cfg = json.loads((path / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CaptionerError(f"{path / CONFIG_FILE}: not readable JSON ({exc}); {fix}") from exc
    if "multimodal_cfg" not in (cfg.get("model_cfg") or {}):
        raise CaptionerError(
            f"{path / CONFIG_FILE}: model_cfg has no multimodal_cfg, so it is not a CoCa "
            f"(a CLIP directory?); {fix}"
        )
    try:
        tokenizer = CompactTokenizer.load(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CaptionerError(
            f"captioner {path}: {VOCAB_FILE} missing or unreadable ({exc}); {fix}"
        ) from exc
    dev = torch.device(device) if device is not None else default_device()
    try:
        model, preprocess = _create(path, dev)
    except CaptionerError:
        raise
    except Exception as exc:  # open_clip raises RuntimeError, ValueError, OSError
        raise CaptionerError(f"captioner {path} could not be loaded: {exc}; {fix}") from exc
    model.eval()
    card_path = path / CARD_FILE
    card = json.loads(card_path.read_text(encoding="utf-8")) if card_path.is_file() else {}
    return Captioner(path, model, preprocess, tokenizer, dev, card)


# ----------------------------------------------------------------------------- training


def _is_text(caption: Any) -> bool:
    """Whether a caption can be trained on: a string with something besides white space."""
    return isinstance(caption, str) and bool(caption.strip())


def train_coca(
    pairs_dirs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    *,
    steps: int = 400,
    seed: int = 0,
    batch_size: int = 16,
    lr: float = 2e-3,
    weight_decay: float = 0.1,
    warmup: int | None = None,
    caption_loss_weight: float = 2.0,
    clip_loss_weight: float = 1.0,
    model: str = DEFAULT_MODEL,
    device: str | torch.device | None = None,
    on_step: StepCallback | None = None,
    pairs: Sequence[tuple[ImageInput, str]] | None = None,
    consent: Any = None,
) -> dict[str, Any]:
    """Train a CoCa with open_clip's `CoCaLoss` on the kept pairs of `pairs_dirs`; save to out_dir.

    `consent`: the one consent rule with the lake's ledger (common.consent.Consent) that picks
    the training-allowed pairs (`kept_pairs`).

    `pairs_dirs`: `images build` outputs (their kept, training-allowed pairs). `pairs` instead
    passes (image, caption) pairs directly (pairs_dirs is then only named in the card). A pair
    whose caption is not text (null, empty) or whose image does not decode is skipped and
    counted in the summary (`skipped_no_caption` naming file and pair id, `skipped_images`). Batches
    come from a seeded permutation per epoch and images through the model's deterministic
    inference transform, so a seed gives the same weights on the same device. The loss weights are
    open_clip's CoCa defaults (caption 2, contrastive 1). Returns the summary also written to
    out_dir/train_summary.json; model_card.json names the model and the pairs it saw.
    """
    if steps < 1:
        raise CaptionerError(f"steps={steps}: train for at least 1 step (--steps)")
    if batch_size < 2:
        raise CaptionerError(f"batch_size={batch_size}: a contrastive batch needs >= 2")
    if not lr > 0:
        raise CaptionerError(f"lr={lr}: the learning rate must be positive")
    if model not in MODEL_CONFIGS:
        raise CaptionerError(
            f"captioner model {model!r} is not one this module defines; use one of "
            f"{', '.join(MODEL_CONFIGS)}"
        )
    sources: list[str] = []
    if pairs is None:
        files = pairs_files(pairs_dirs)
        sources = [str(f) for f in files]
        # one reading of all the files: a duplicate whose kept copy is opted out takes its
        # place, and an image kept in two shards is trained on once (common.pairs.settle)
        named = [
            (p["image_file"], p["caption"], f"{p['pairs_file']} pair {p['pair_id']!r}")
            for p in kept_pairs(files, consent)
        ]
    else:
        named = [(image, caption, f"pair {i}") for i, (image, caption) in enumerate(pairs)]
    # a kept pair whose caption is not text (null, empty) has nothing to teach: skipped, counted
    no_caption = [
        f"{name} (caption {caption!r})" for _, caption, name in named if not _is_text(caption)
    ]
    pairs = [(image, caption) for image, caption, _ in named if _is_text(caption)]
    out = Path(out_dir)
    _seed_everything(seed)
    started = time.perf_counter()
    dev = torch.device(device) if device is not None else default_device()
    captions = [caption for _, caption in pairs]
    context = int(MODEL_CONFIGS[model]["text_cfg"]["context_length"])
    tokenizer = CompactTokenizer.build(captions, context)
    model_cfg = model_config(model, tokenizer.vocab_size)
    with tempfile.TemporaryDirectory(prefix="refinery-coca-") as tmp:
        _write_config(Path(tmp), model_cfg, PREPROCESS_CONFIGS[model])
        net, preprocess = _create(Path(tmp), dev)
    _init_decoder(net.text_decoder)
    images, kept_captions, skipped = [], [], []
    for i, (image, caption) in enumerate(pairs):
        decoded = open_image(image)
        if decoded is None:
            skipped.append(str(image) if not isinstance(image, bytes) else f"<bytes #{i}>")
            continue
        images.append(preprocess(decoded))
        kept_captions.append(caption)
    if len(images) < 2:
        raise CaptionerError(
            f"only {len(images)} of {len(named)} kept pairs have a caption and a decodable image "
            f"(no caption: {no_caption[:3]}; unreadable: {skipped[:3]}); pass at least 2 kept "
            "image-text pairs (--pairs)"
        )
    image_t = torch.stack(images)
    text_t = tokenizer(kept_captions)
    net.train()
    batch = min(batch_size, len(images))
    warm = max(1, steps // 10) if warmup is None else max(0, warmup)
    optimizer, scheduler = open_clip_optimizer(net, lr, weight_decay, steps, warm)
    loss_fn = CoCaLoss(
        caption_loss_weight=caption_loss_weight, clip_loss_weight=clip_loss_weight, pad_id=0
    )
    caption_losses: list[float] = []

    def loss_of(idx: torch.Tensor) -> torch.Tensor:
        o = net(image_t[idx].to(dev), text_t[idx].to(dev))
        clip_loss, caption_loss = loss_fn(
            o["image_features"], o["text_features"], o["logits"], o["labels"], o["logit_scale"]
        )
        caption_losses.append(float(caption_loss.detach()) / caption_loss_weight)
        return clip_loss + caption_loss

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
        error=CaptionerError,
    )
    net.eval()
    seconds = time.perf_counter() - started
    tail = max(1, min(20, steps // 10))
    summary = {
        "model": model,
        "out_dir": str(out),
        "pairs": len(images),
        "skipped_images": len(skipped),
        "skipped_examples": skipped[:5],
        "skipped_no_caption": len(no_caption),
        "skipped_no_caption_examples": no_caption[:5],
        "vocab_size": tokenizer.vocab_size,
        "steps": steps,
        "batch_size": batch,
        "seed": seed,
        "lr": lr,
        "weight_decay": weight_decay,
        "warmup": warm,
        "caption_loss_weight": caption_loss_weight,
        "clip_loss_weight": clip_loss_weight,
        "first_loss": losses[0],
        "final_loss": float(np.mean(losses[-tail:])),
        "first_caption_loss": caption_losses[0],
        "final_caption_loss": float(np.mean(caption_losses[-tail:])),
        "seconds": round(seconds, 3),
        "pairs_per_s": round(steps * batch / seconds, 1),
        "device": str(dev),
        "parameters": sum(p.numel() for p in net.parameters()),
        "open_clip_version": open_clip.__version__,
        "pairs_files": sources,
    }
    save_clip(net, model_cfg, out, summary)
    tokenizer.save(out)
    card = {
        "name": f"{model}@{out.name}",
        "description": f"CoCa trained here on {len(images)} sample-web pairs",
        "architecture": "open_clip.CoCa",
        "config": model,
        "loss": "open_clip.loss.CoCaLoss",
        "tokenizer": f"open_clip's bundled BPE mapped to {tokenizer.vocab_size} ids ({VOCAB_FILE})",
        "image_tower_init": "from scratch (the project's CLIP has a ResNet image tower, which "
        "gives CoCa's decoder no image tokens)",
        "decoding": "greedy",
        "pairs": len(images),
        "steps": steps,
        "seed": seed,
        "final_caption_loss": summary["final_caption_loss"],
        "trained_on": sources,
    }
    (out / CARD_FILE).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    return summary
