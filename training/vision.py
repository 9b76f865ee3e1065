"""The vision side of the multimodal model: CLIP image tower -> adapter -> the decoder's image slots.

After Apple's 2025 foundation-model report:

- **Vision encoder** (`VisionEncoder`): the image tower (`model.visual`) of an open_clip model, from
  `refinery clip train`'s directory or any open_clip spec (`training.clip.load_clip`). It returns
  the tower's last feature grid (B, C, H, W) through open_clip's `forward_intermediates`: a ViT's
  patch tokens after its final LayerNorm, a ModifiedResNet's last stage (refinery-tiny: 512 x 2 x 2
  at 64 px). The tower always runs in inference mode (BatchNorm statistics frozen, no dropout);
  training it (`freeze_vision: false`) updates its weights only.
- **Vision-language adapter** (`VisionAdapter`), in the report's order: one transformer layer over
  the patch features; a linear projection to the decoder's width (after a LayerNorm); a 3x3
  convolution on the patch grid; average pooling to exactly `image_tokens` tokens (a square
  number: 144 = 12 x 12 in the report, 4 = 2 x 2 in the tiny config), read out row-major.
- **Into the decoder** (`VisionLanguageModel`): the mixture writes `image_tokens` consecutive
  `<|image|>` placeholders per image; their positions get the adapter's tokens through the
  decoder's existing image-embedding path (`Transformer.forward(idx, image_embeds=...)`, whose
  `image_proj` (d_model -> d_model) is trained with the adapter, from scratch).

Trainable parts (`set_trainable`): the adapter and `image_proj` always; the decoder except during
the adapter-only phase; the vision tower unless frozen.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from training.model import Transformer


class VisionError(ValueError):
    """A vision tower or adapter setting is unusable; the message says what to fix."""


def grid_side(image_tokens: int) -> int:
    """The side of the square token grid the adapter pools to; refuses non-square counts."""
    side = math.isqrt(image_tokens) if image_tokens > 0 else 0
    if side < 1 or side * side != image_tokens:
        raise VisionError(
            f"image_tokens={image_tokens}: the adapter pools the patch grid to a square, so "
            "image_tokens must be a square number (4, 9, 16, ..., 144); rebuild the mixture with one"
        )
    return side


@dataclass
class VisionInfo:
    """Where the tower came from and how its inputs are prepared (recorded in checkpoints)."""

    spec: str
    image_size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    model_cfg: dict[str, Any] = field(default_factory=dict)


class VisionEncoder(nn.Module):
    """An open_clip image tower returning its last feature grid (B, C, H, W)."""

    def __init__(self, visual: nn.Module, info: VisionInfo) -> None:
        super().__init__()
        if not hasattr(visual, "forward_intermediates"):
            raise VisionError(
                f"vision tower of {info.spec!r} ({type(visual).__name__}) has no "
                "forward_intermediates; use an open_clip ViT or ModifiedResNet checkpoint"
            )
        self.visual = visual
        self.info = info
        with torch.no_grad():
            probe = self(torch.zeros(1, 3, info.image_size, info.image_size))
        _, self.width, self.grid_h, self.grid_w = probe.shape

    def train(self, mode: bool = True) -> VisionEncoder:
        super().train(mode)
        self.visual.eval()  # BatchNorm statistics frozen, no dropout, in every phase
        return self

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        out = self.visual.forward_intermediates(
            pixels, indices=1, normalize_intermediates=True, intermediates_only=True
        )
        return out["image_intermediates"][-1]

    def fingerprint(self) -> str:
        """sha256 of the tower's weights: a resumed run with a frozen tower checks it is the same."""
        h = hashlib.sha256()
        for name, t in sorted(self.visual.state_dict().items()):
            h.update(name.encode())
            h.update(t.detach().to("cpu").contiguous().numpy().tobytes())
        return h.hexdigest()


def load_vision_encoder(
    spec: str | os.PathLike[str], device: torch.device | str = "cpu"
) -> VisionEncoder:
    """The image tower of a CLIP model spec (a `refinery clip train` directory or open_clip spec)."""
    from training.clip import load_clip

    clip = load_clip(spec, device)
    visual = clip.model.visual
    pre = dict(getattr(visual, "preprocess_cfg", {}) or {})
    size = pre.get("size") or getattr(visual, "image_size", None)
    if isinstance(size, list | tuple):
        if len(set(size)) != 1:
            raise VisionError(f"vision tower of {spec!r} takes non-square images {size}")
        size = size[0]
    if not size:
        raise VisionError(f"vision tower of {spec!r}: image size unknown (no preprocess_cfg.size)")
    import open_clip

    info = VisionInfo(
        spec=os.fspath(spec),
        image_size=int(size),
        mean=tuple(pre.get("mean") or open_clip.OPENAI_DATASET_MEAN),
        std=tuple(pre.get("std") or open_clip.OPENAI_DATASET_STD),
        model_cfg=clip.model_cfg,
    )
    return VisionEncoder(visual, info).to(device)


@dataclass
class AdapterConfig:
    """The adapter's shape: input features, decoder width, image tokens per image."""

    in_dim: int
    out_dim: int
    image_tokens: int
    heads: int = 4
    ffn_mult: float = 2.0

    def __post_init__(self) -> None:
        grid_side(self.image_tokens)
        if self.in_dim % self.heads:
            raise VisionError(
                f"adapter heads={self.heads} must divide the vision feature width {self.in_dim}; "
                "set stages.multimodal.adapter_heads to a divisor"
            )


class VisionAdapter(nn.Module):
    """Transformer layer -> LayerNorm + linear to decoder width -> 3x3 conv -> average pool."""

    def __init__(self, cfg: AdapterConfig) -> None:
        super().__init__()
        self.config = cfg
        self.layer = nn.TransformerEncoderLayer(
            cfg.in_dim,
            cfg.heads,
            dim_feedforward=max(1, round(cfg.ffn_mult * cfg.in_dim)),
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.norm = nn.LayerNorm(cfg.in_dim)
        self.proj = nn.Linear(cfg.in_dim, cfg.out_dim)
        self.conv = nn.Conv2d(cfg.out_dim, cfg.out_dim, kernel_size=3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(grid_side(cfg.image_tokens))

    def forward(self, grid: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) patch features -> (B, image_tokens, out_dim), row-major over the grid."""
        b, c, h, w = grid.shape
        if c != self.config.in_dim:
            raise VisionError(
                f"adapter expects {self.config.in_dim}-wide features, got {c}: the vision tower "
                "does not match the adapter's checkpoint"
            )
        x = self.layer(grid.flatten(2).transpose(1, 2))  # (B, HW, C)
        x = self.proj(self.norm(x))  # (B, HW, D)
        x = x.transpose(1, 2).reshape(b, -1, h, w)
        x = self.pool(self.conv(x))  # (B, D, s, s)
        return x.flatten(2).transpose(1, 2)


class VisionLanguageModel(nn.Module):
    """Vision tower + adapter + decoder; images enter at the decoder's `<|image|>` slots."""

    def __init__(self, encoder: VisionEncoder, adapter: VisionAdapter, decoder: Transformer):
        super().__init__()
        cfg = decoder.config
        if decoder.image_proj is None or cfg.image_embed_dim != adapter.config.out_dim:
            raise VisionError(
                f"decoder image_embed_dim={cfg.image_embed_dim} must equal the adapter's output "
                f"width {adapter.config.out_dim} (the decoder width)"
            )
        self.encoder, self.adapter, self.decoder = encoder, adapter, decoder

    @property
    def config(self):
        """The decoder's ModelConfig (the trainer reads vocab size and MoE weight from it)."""
        return self.decoder.config

    @property
    def image_tokens(self) -> int:
        return self.adapter.config.image_tokens

    def flops_per_token(self, seq_len: int) -> float:
        """The decoder's training FLOPs per token (the vision tower and adapter not counted)."""
        return self.decoder.flops_per_token(seq_len)

    def image_embeds(self, pixels: torch.Tensor) -> torch.Tensor:
        """(N, 3, S, S) pixels -> (N * image_tokens, d_model) slot embeddings, image by image."""
        if pixels.shape[0] == 0:
            return pixels.new_zeros((0, self.adapter.config.out_dim))
        tokens = self.adapter(self.encoder(pixels))
        return tokens.reshape(-1, tokens.shape[-1])

    def forward(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        pixels: torch.Tensor | None = None,
        *,
        slot_keep: torch.Tensor | None = None,
        attention_backend: str = "auto",
    ):
        """The decoder's (logits, loss, aux) with each image's tokens at its placeholder block.

        `pixels` holds one image per placeholder block of `idx`, row-major; `slot_keep` (bool, one
        per image token of those blocks) drops the tokens of a block cut off at the end of `idx`
        (inputs are tokens[:, :-1]). Without `pixels` the model reads text only.
        """
        embeds = None
        if pixels is not None:
            embeds = self.image_embeds(pixels)
            if slot_keep is not None:
                embeds = embeds[slot_keep]
        return self.decoder(idx, targets, embeds, attention_backend=attention_backend)

    def groups(self) -> dict[str, list[nn.Parameter]]:
        """Parameters by part: vision, adapter (with the decoder's image_proj), decoder."""
        adapter = list(self.adapter.parameters()) + list(self.decoder.image_proj.parameters())
        skip = {id(p) for p in adapter}
        return {
            "vision": list(self.encoder.parameters()),
            "adapter": adapter,
            "decoder": [p for p in self.decoder.parameters() if id(p) not in skip],
        }

    def set_trainable(self, *, vision: bool, decoder: bool) -> None:
        """requires_grad per part; the adapter always trains."""
        for name, params in self.groups().items():
            flag = {"vision": vision, "decoder": decoder, "adapter": True}[name]
            for p in params:
                p.requires_grad_(flag)
