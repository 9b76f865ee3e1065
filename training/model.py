"""A decoder-only transformer in one readable file, after Apple's 2025 foundation-model report.

Reads top to bottom: config → building blocks (RMSNorm, RoPE, attention, SwiGLU, MoE) → block →
model. The report's ideas are each a few named lines:

- Interleaved attention: layers repeat a pattern of `local_per_global` sliding-window layers with
  RoPE followed by one global layer with no positional embedding (NoPE). With the default 3, layer
  i is global when (i + 1) % 4 == 0, i.e. layers 3, 7, 11, ...
- Grouped-query attention: `n_head` query heads share `n_kv_head` key/value heads.
- KV-cache sharing (the on-device design): the last `kv_share_fraction` of the layers (0.375 in the
  report) form the second block; they have no key/value projections. Pairing rule: a layer in the
  second block reuses the keys and values of the *last* layer of the first block that has the same
  position in the local/global pattern (same `i % (local_per_global + 1)`), so a local layer always
  reads RoPE'd, window-masked keys of a local layer and a global layer reads NoPE keys of a global
  layer. With 8 layers: layers 5, 6, 7 reuse the KV of layers 1, 2, 3. `kv_source(i)` gives it.
- Mixture of experts: every `moe_every`-th layer (every other by default) replaces its SwiGLU with
  `moe_experts` SwiGLU experts and top-k routing. No token is dropped: tokens are sorted by expert
  and each expert runs once over all of its tokens. A Switch-style load-balancing loss is returned.
- Image tokens: positions holding `image_token_id` get projected image embeddings instead of token
  embeddings (`forward(idx, image_embeds=...)`), ready for the multimodal stage.
- Document masking (`doc_mask`, on by default): packed sequences hold several documents, each
  followed by the boundary token `<|endoftext|>` (`boundary_token_id`, set from the mixture). A token
  attends only to earlier tokens of its own document; the boundary token belongs to the document it
  ends. Segment ids come from the boundary positions (`document_segments`).
- Parallel-Track (the server model's PT transformer): with `tracks` K > 1 the decoder is K
  smaller transformers ("tracks") side by side. Each track is its own stack of `n_layer` layers
  with the full residual width `d_model` but 1/K of the query heads, of the KV heads and of the
  FFN (or of each MoE expert's) hidden units, so the K tracks together hold the parameters of the
  dense model with the same config (plus K copies of the norms and routers). Layers are grouped
  into track blocks of `track_block_depth` D layers. All tracks start a block from the same
  hidden state h, run their D layers without seeing each other, and meet only at the block's end:
  `combine_tracks` sets h <- h + sum_k (h_k - h), the sum of the tracks' residual updates (one
  all-reduce when tracks live on different devices). That is L/D synchronisation points per
  forward instead of the 2L (one after attention, one after the FFN, in every layer) of K-way
  tensor parallelism. MoE layers are local to a track: each track has its own router and its own
  experts, and a token of track k is only ever routed to track k's experts. KV sharing pairs
  layers within a track. On one device the tracks run batched: their weights are stacked and
  their heads folded into one attention call (`Transformer._parallel_layer`);
  `Transformer.reference_forward` runs them one after another with the plain `Block` code.

Attention memory. A local layer never builds a (T, T) score matrix: on CUDA the mask (causal,
sliding window, documents) is a FlexAttention block mask, so whole masked-out blocks are skipped
and memory is O(T·W); elsewhere queries are processed in chunks of `window` rows, each attending
with SDPA to its own key range [start - window + 1, end), also O(T·W). Global layers use the same
two paths (chunks of `GLOBAL_CHUNK` queries, keys from the earliest document start in the chunk).
A plain causal sequence no longer than the window goes straight to SDPA (flash attention on CUDA).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class ModelConfig:
    """Architecture hyper-parameters; validated on construction."""

    vocab_size: int = 512
    d_model: int = 128
    n_layer: int = 8
    n_head: int = 4
    n_kv_head: int = 2
    ffn_hidden: int = 0  # 0 means 8/3 · d_model rounded up to a multiple of 32 (SwiGLU sizing)
    max_seq_len: int = 1024
    window: int = 64  # sliding-window size of the local layers (4096 in the report)
    local_per_global: int = 3
    rope_base: float = 10000.0  # RoPE base of the local layers; raised for long context
    tie_embeddings: bool = True
    kv_share_fraction: float = 0.0  # 0.375 in the on-device design
    moe_experts: int = 0  # 0 disables mixture of experts
    moe_top_k: int = 2
    moe_every: int = 2
    moe_hidden: int = 0  # 0 means ffn_hidden
    moe_aux_weight: float = 0.01
    image_embed_dim: int = 0  # 0 disables the image-token input path
    image_token_id: int = -1
    doc_mask: bool = True  # attention stays inside documents of a packed sequence
    boundary_token_id: int = -1  # <|endoftext|>; -1 (unknown) leaves document masking off
    norm_eps: float = 1e-5
    init_std: float = 0.02
    tracks: int = 1  # Parallel-Track: K tracks (1 = the plain decoder)
    track_block_depth: int = 0  # D: layers per track block (a divisor of n_layer; tracks > 1)

    def __post_init__(self) -> None:
        if self.d_model % self.n_head:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head})"
            )
        if (self.d_model // self.n_head) % 2:
            raise ValueError("head size d_model / n_head must be even for RoPE")
        if self.n_head % self.n_kv_head:
            raise ValueError(
                f"n_head ({self.n_head}) must be a multiple of n_kv_head ({self.n_kv_head})"
            )
        if not 0.0 <= self.kv_share_fraction < 1.0:
            raise ValueError("kv_share_fraction must be in [0, 1)")
        if self.moe_experts and not 1 <= self.moe_top_k <= self.moe_experts:
            raise ValueError(f"moe_top_k must be in [1, moe_experts={self.moe_experts}]")
        if self.image_embed_dim and self.image_token_id < 0:
            raise ValueError("image_token_id must be set when image_embed_dim > 0")
        for i in range(self.n_layer):
            self.kv_source(i)  # raises if a shared layer has no partner in the first block
        if not self.ffn_hidden:
            self.ffn_hidden = 32 * math.ceil(8 * self.d_model / 3 / 32)
        if not self.moe_hidden:
            self.moe_hidden = self.ffn_hidden
        self._check_tracks()

    def _check_tracks(self) -> None:
        k = self.tracks
        if k < 1:
            raise ValueError(f"tracks must be >= 1 (1 = no Parallel-Track), got {k}")
        if k == 1:
            return
        depth = self.track_block_depth
        if depth < 1 or self.n_layer % depth:
            raise ValueError(
                f"track_block_depth={depth}: with tracks={k} it must divide n_layer="
                f"{self.n_layer} (layers per track block, e.g. 4)"
            )
        split = {"n_head": self.n_head, "n_kv_head": self.n_kv_head, "ffn_hidden": self.ffn_hidden}
        if self.moe_experts:
            split["moe_hidden"] = self.moe_hidden
        for name, value in split.items():
            if value % k:
                raise ValueError(
                    f"{name}={value} must be divisible by tracks={k}: each track holds 1/{k} of it"
                )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    def is_global(self, i: int) -> bool:
        """Layer i is a global NoPE layer (last of each local/global pattern)."""
        return (i + 1) % (self.local_per_global + 1) == 0

    def first_shared_layer(self) -> int:
        """Index of the first layer of the second (KV-sharing) block; n_layer when sharing is off."""
        return self.n_layer - round(self.n_layer * self.kv_share_fraction)

    def kv_source(self, i: int) -> int | None:
        """The first-block layer whose keys/values layer i reuses, or None if it computes its own."""
        first_shared = self.first_shared_layer()
        if i < first_shared:
            return None
        period = self.local_per_global + 1
        partners = [j for j in range(first_shared) if j % period == i % period]
        if not partners:
            raise ValueError(
                f"kv_share_fraction={self.kv_share_fraction}: layer {i} has no first-block layer at "
                f"pattern position {i % period} to share KV with; lower kv_share_fraction"
            )
        return partners[-1]

    def sync_points(self) -> int:
        """Cross-track synchronisation points per forward: L/D with tracks, else the 2L all-reduces
        (after attention and after the FFN of every layer) of tensor parallelism."""
        if self.tracks > 1:
            return self.n_layer // self.track_block_depth
        return 2 * self.n_layer

    def is_moe(self, i: int) -> bool:
        """Layer i uses the mixture-of-experts feed-forward."""
        return self.moe_experts > 0 and i % self.moe_every == self.moe_every - 1


class RMSNorm(nn.Module):
    """Root-mean-square layer norm (no mean subtraction, no bias)."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in float32: bf16 sums of squares lose precision on wide models.
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.type_as(x) * self.weight


def rope_cos_sin(
    seq_len: int, head_dim: int, base: float, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotary angles t·θ_j, θ_j = base^(-2j/head_dim); each (seq_len, head_dim/2)."""
    inv_freq = 1.0 / (
        base ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    )
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv_freq)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x_j, x_{j+d/2}) of x (B, H, T, d) by the angles in cos/sin (T, d/2)."""
    x1, x2 = x.float().chunk(2, dim=-1)
    out = torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return out.type_as(x)


def sliding_window_mask(seq_len: int, window: int, device: torch.device) -> torch.Tensor:
    """Boolean (T, T) mask: query i sees keys j with i - window < j <= i."""
    i = torch.arange(seq_len, device=device).unsqueeze(1)
    j = torch.arange(seq_len, device=device).unsqueeze(0)
    return (j <= i) & (j > i - window)


# Query rows per chunk of a global layer on the chunked path: bounds one chunk's scores to
# B·H·GLOBAL_CHUNK·T instead of B·H·T·T.
GLOBAL_CHUNK = 256
BACKENDS = ("auto", "flex", "chunked", "dense")


def document_segments(idx: torch.Tensor, boundary_token_id: int) -> torch.Tensor:
    """Document id of every position (B, T): the number of boundary tokens strictly before it.

    A boundary token ends its document, so it shares the id of the tokens before it; the first
    token after it starts the next document. Positions before the first boundary form document 0
    (often the tail of a document that began in the previous sequence).
    """
    is_boundary = (idx == boundary_token_id).to(torch.int32)
    return torch.cumsum(is_boundary, dim=1) - is_boundary


def attention_mask(
    seq_len: int, window: int | None, segments: torch.Tensor | None, device: torch.device
) -> torch.Tensor:
    """The full boolean mask the fast paths implement: (T, T), or (B, 1, T, T) with documents.

    Query i sees key j when j <= i, i - j < window (local layers) and both are in one document.
    Used by the `dense` reference backend and by tests; the training paths never build it whole.
    """
    mask = (
        sliding_window_mask(seq_len, window, device)
        if window is not None
        else torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
    )
    if segments is None:
        return mask
    same_doc = segments[:, None, :, None] == segments[:, None, None, :]
    return mask & same_doc


def flex_available() -> bool:
    """torch.nn.attention.flex_attention can be imported (PyTorch >= 2.5)."""
    try:
        from torch.nn.attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


def default_backend(device: torch.device) -> str:
    """flex on CUDA when available (compiled kernels, block-sparse), chunked SDPA elsewhere."""
    return "flex" if device.type == "cuda" and flex_available() else "chunked"


_COMPILED_FLEX = None


def _flex_kernel(device: torch.device):
    """flex_attention, compiled on CUDA (eager flex materialises the scores; fine for CPU tests)."""
    global _COMPILED_FLEX
    from torch.nn.attention.flex_attention import flex_attention

    if device.type != "cuda":
        return flex_attention
    if _COMPILED_FLEX is None:
        _COMPILED_FLEX = torch.compile(flex_attention, dynamic=False)
    return _COMPILED_FLEX


@torch.compiler.disable  # built eagerly (itself compiled on CUDA), also under torch.compile(model)
def flex_block_mask(
    batch: int, seq_len: int, window: int | None, segments: torch.Tensor | None, device
):
    """FlexAttention BlockMask for causal (+ sliding window) (+ same document) attention."""
    from torch.nn.attention.flex_attention import create_block_mask

    def mask_mod(b, h, q_idx, kv_idx):
        keep = kv_idx <= q_idx
        if window is not None:
            keep = keep & (q_idx - kv_idx < window)
        if segments is not None:
            keep = keep & (segments[b, q_idx] == segments[b, kv_idx])
        return keep

    return create_block_mask(
        mask_mod,
        batch if segments is not None else None,
        None,
        seq_len,
        seq_len,
        device=device,
        _compile=device.type == "cuda",  # compiled: never materialises the (T, T) mask
    )


def _chunked_attend(q, k, v, window: int | None, segments: torch.Tensor | None) -> torch.Tensor:
    """Causal (windowed) (document-masked) attention, one SDPA call per chunk of query rows.

    A chunk of queries [s, e) only needs keys [lo, e) with lo = s - window + 1 for local layers,
    and no key before the earliest document start among its queries: scores are at most
    B·H·C·(C + W) per chunk, so memory grows linearly with T for local layers.
    """
    B, H, T, D = q.shape
    chunk = window if window is not None else GLOBAL_CHUNK
    pos = torch.arange(T, device=q.device)
    doc_start = None
    if segments is not None:
        # First position of each position's document: a running max over document starts.
        new_doc = torch.ones(B, T, dtype=torch.bool, device=q.device)
        new_doc[:, 1:] = segments[:, 1:] != segments[:, :-1]
        starts = torch.where(new_doc, pos, torch.zeros_like(pos))
        doc_start = torch.cummax(starts, dim=1).values
    pieces = []
    for s in range(0, T, chunk):
        e = min(s + chunk, T)
        lo = 0 if window is None else max(0, s - window + 1)
        if doc_start is not None:
            lo = max(lo, int(doc_start[:, s].min()))
        qi, kj = pos[s:e, None], pos[None, lo:e]
        mask = kj <= qi
        if window is not None:
            mask = mask & (qi - kj < window)
        if segments is not None:
            mask = mask & (segments[:, None, s:e, None] == segments[:, None, None, lo:e])
        pieces.append(
            F.scaled_dot_product_attention(
                q[:, :, s:e], k[:, :, lo:e], v[:, :, lo:e], attn_mask=mask, enable_gqa=True
            )
        )
    return torch.cat(pieces, dim=2)


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int | None,
    segments: torch.Tensor | None = None,
    backend: str = "auto",
    block_mask=None,
) -> torch.Tensor:
    """Causal grouped-query attention; q (B,H,T,d), k/v (B,Hkv,T,d).

    `window`: local layers see the last `window` keys; `segments` (B, T): document ids, attention
    stays within a document. `backend`: `auto` (flex on CUDA, else chunked), `flex`, `chunked`, or
    `dense` (one explicit mask, O(T²) memory: the reference implementation). `block_mask`: a
    prebuilt flex BlockMask for this (window, segments) to reuse across layers.
    """
    if backend not in BACKENDS:
        raise ValueError(f"attention backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    seq_len = q.size(-2)
    if window is not None and seq_len <= window:
        window = None  # the window covers the whole sequence: plain causal
    if window is None and segments is None:
        # Plain causal: lets CUDA pick flash attention.
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    if backend == "auto":
        backend = default_backend(q.device)
    if backend == "dense":
        mask = attention_mask(seq_len, window, segments, q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    if backend == "flex":
        if block_mask is None:
            block_mask = flex_block_mask(q.size(0), seq_len, window, segments, q.device)
        return _flex_kernel(q.device)(q, k, v, block_mask=block_mask, enable_gqa=True)
    return _chunked_attend(q, k, v, window, segments)


class AttentionContext:
    """What every layer of one forward shares: document segments, backend, cached block masks."""

    def __init__(self, segments: torch.Tensor | None, backend: str = "auto") -> None:
        self.segments = segments
        self.backend = backend
        self._block_masks: dict[int | None, object] = {}

    def __call__(self, q, k, v, window: int | None) -> torch.Tensor:
        seq_len = q.size(-2)
        if window is not None and seq_len <= window:
            window = None
        backend = self.backend if self.backend != "auto" else default_backend(q.device)
        block_mask = None
        if backend == "flex" and (window is not None or self.segments is not None):
            if window not in self._block_masks:
                self._block_masks[window] = flex_block_mask(
                    q.size(0), seq_len, window, self.segments, q.device
                )
            block_mask = self._block_masks[window]
        return attend(q, k, v, window, self.segments, backend, block_mask)


class Attention(nn.Module):
    """GQA self-attention; local (RoPE, sliding window) or global (NoPE); optionally reuses KV.

    `parts` > 1: one track's share of the layer (1/parts of the query and KV heads).
    """

    def __init__(self, cfg: ModelConfig, layer: int, parts: int = 1) -> None:
        super().__init__()
        self.cfg = cfg
        self.is_global = cfg.is_global(layer)
        self.kv_source = cfg.kv_source(layer)
        self.n_head, self.n_kv_head = cfg.n_head // parts, cfg.n_kv_head // parts
        hd = cfg.head_dim
        self.q_proj = nn.Linear(cfg.d_model, self.n_head * hd, bias=False)
        if self.kv_source is None:
            self.k_proj = nn.Linear(cfg.d_model, self.n_kv_head * hd, bias=False)
            self.v_proj = nn.Linear(cfg.d_model, self.n_kv_head * hd, bias=False)
        self.o_proj = nn.Linear(self.n_head * hd, cfg.d_model, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        shared_kv: tuple[torch.Tensor, torch.Tensor] | None = None,
        ctx: AttentionContext | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Return the attention output and the (k, v) it attended to (for layers that share them)."""
        B, T, _ = x.shape
        hd = self.cfg.head_dim
        q = self.q_proj(x).view(B, T, self.n_head, hd).transpose(1, 2)
        if self.kv_source is None:
            k = self.k_proj(x).view(B, T, self.n_kv_head, hd).transpose(1, 2)
            v = self.v_proj(x).view(B, T, self.n_kv_head, hd).transpose(1, 2)
            if not self.is_global:
                k = apply_rope(k, *rope)
        else:
            if shared_kv is None:
                raise ValueError(
                    f"this layer reuses the KV of layer {self.kv_source}; pass shared_kv"
                )
            k, v = shared_kv
        if not self.is_global:  # global layers are NoPE: no rotary on q or k
            q = apply_rope(q, *rope)
        ctx = ctx or AttentionContext(None)
        y = ctx(q, k, v, window=None if self.is_global else self.cfg.window)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1)), (k, v)


class SwiGLU(nn.Module):
    """Gated feed-forward: down(silu(gate(x)) * up(x))."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


def route(logits: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Router probabilities (..., E) in float32, and the top-k experts with their weights
    renormalised to sum to 1 over the chosen k."""
    probs = F.softmax(logits.float(), dim=-1)
    weights, chosen = probs.topk(top_k, dim=-1)
    return probs, weights / weights.sum(-1, keepdim=True), chosen


def dispatch(
    flat: torch.Tensor, chosen: torch.Tensor, weights: torch.Tensor, experts: list[nn.Module]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the chosen experts: flat (N, d), chosen/weights (N, k) -> (mixed outputs, per-expert
    assignment counts). No token is dropped: the N·k (token, expert) assignments are sorted by
    expert, each expert runs once on its contiguous group, and the weighted outputs are
    scatter-added back to their tokens."""
    top_k = chosen.size(-1)
    assignment_expert = chosen.reshape(-1)
    order = assignment_expert.argsort(stable=True)
    counts = torch.bincount(assignment_expert, minlength=len(experts))
    weights = weights.to(flat.dtype).reshape(-1)
    out = torch.zeros_like(flat)
    start = 0
    for e, count in enumerate(counts.tolist()):
        if count == 0:
            continue
        assignments = order[start : start + count]
        tokens = assignments // top_k
        out.index_add_(0, tokens, experts[e](flat[tokens]) * weights[assignments].unsqueeze(-1))
        start += count
    return out, counts


def balance_loss(probs: torch.Tensor, counts: torch.Tensor, top_k: int) -> torch.Tensor:
    """Switch Transformer balance loss: E · Σ_e (fraction of assignments to e) · (mean prob of e);
    equals 1 when routing is uniform. probs (N, E), counts (E,)."""
    n_tokens, n_experts = probs.shape
    fraction = counts.float() / (n_tokens * top_k)
    return n_experts * (fraction * probs.mean(0)).sum()


class MoE(nn.Module):
    """Top-k routed SwiGLU experts with no dropped tokens and a load-balancing auxiliary loss.

    `parts` > 1: one track's MoE (all `moe_experts` experts, each 1/parts of `moe_hidden` wide).
    """

    def __init__(self, cfg: ModelConfig, parts: int = 1) -> None:
        super().__init__()
        self.top_k = cfg.moe_top_k
        self.router = nn.Linear(cfg.d_model, cfg.moe_experts, bias=False)
        self.experts = nn.ModuleList(
            SwiGLU(cfg.d_model, cfg.moe_hidden // parts) for _ in range(cfg.moe_experts)
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return the mixed expert outputs (same shape as x) and the load-balancing loss."""
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        probs, weights, chosen = route(self.router(flat), self.top_k)  # (N, E), (N, k), (N, k)
        out, counts = dispatch(flat, chosen, weights, list(self.experts))
        return out.view(shape), balance_loss(probs, counts, self.top_k)


class Block(nn.Module):
    """Pre-norm transformer layer: x + attn(norm(x)), then x + ffn(norm(x)).

    `parts` > 1: a layer of one track of a Parallel-Track model (1/parts of heads and hidden units).
    """

    def __init__(self, cfg: ModelConfig, layer: int, parts: int = 1) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg, layer, parts)
        self.ffn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.ffn = (
            MoE(cfg, parts) if cfg.is_moe(layer) else SwiGLU(cfg.d_model, cfg.ffn_hidden // parts)
        )

    def forward(self, x, rope, shared_kv=None, ctx=None):
        """Return (x, kv, aux_loss); aux_loss is zero for dense layers."""
        a, kv = self.attn(self.attn_norm(x), rope, shared_kv, ctx)
        x = x + a
        if isinstance(self.ffn, MoE):
            f, aux = self.ffn(self.ffn_norm(x))
        else:
            f, aux = self.ffn(self.ffn_norm(x)), x.new_zeros((), dtype=torch.float32)
        return x + f, kv, aux


def combine_tracks(start: torch.Tensor, ends: torch.Tensor | list[torch.Tensor]) -> torch.Tensor:
    """The synchronisation point at the end of a track block: every track began the block from
    `start` (B, T, d) and reached `ends[k]`; the next block starts from start + Σ_k (ends[k] −
    start), the sum of the tracks' residual updates (one all-reduce across track devices)."""
    ends = torch.stack(list(ends)) if isinstance(ends, list | tuple) else ends
    return start + (ends - start).sum(0)


class Track(nn.Module):
    """One track of a Parallel-Track model: its own stack of `n_layer` smaller layers."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block(cfg, i, cfg.tracks) for i in range(cfg.n_layer))


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm of each track's states x (K, B, T, d) with that track's weight (K, d)."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return xf.type_as(x) * weight[:, None, None, :]


def _per_track(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Each track's linear map: x (K, B, T, i) @ weight (K, o, i)^T -> (K, B, T, o)."""
    K, B, T, _ = x.shape
    return torch.bmm(x.reshape(K, B * T, -1), weight.transpose(1, 2)).view(K, B, T, -1)


class Transformer(nn.Module):
    """The decoder-only language model."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.config = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.image_proj = (
            nn.Linear(cfg.image_embed_dim, cfg.d_model) if cfg.image_embed_dim else None
        )
        if cfg.tracks == 1:
            self.layers = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layer))
        else:  # Parallel-Track: parameters under tracks.<k>.layers.<i>
            self.tracks = nn.ModuleList(Track(cfg) for _ in range(cfg.tracks))
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight
        self.apply(self._init_weights)
        # GPT-2 style: shrink the residual-branch outputs so the residual stream's variance
        # does not grow with depth.
        for name, p in self.named_parameters():
            if name.endswith(("o_proj.weight", "down.weight")):
                nn.init.normal_(p, mean=0.0, std=cfg.init_std / math.sqrt(2 * cfg.n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)

    def num_params(self, non_embedding: bool = True) -> int:
        """Parameter count; by default without the token embedding (counted once if tied)."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.embed.weight.numel()
        return n

    def flops_per_token(self, seq_len: int) -> float:
        """Training FLOPs per token (forward + backward), counting only active experts (PaLM-style)."""
        cfg = self.config
        dense = self.num_params(non_embedding=False)
        for moe in (m for m in self.modules() if isinstance(m, MoE)):
            inactive = len(moe.experts) - cfg.moe_top_k
            dense -= inactive * sum(p.numel() for p in moe.experts[0].parameters())
        if not cfg.tie_embeddings:
            dense -= self.embed.weight.numel()  # a lookup, not a matmul
        attn = sum(
            seq_len if cfg.is_global(i) else min(seq_len, cfg.window) for i in range(cfg.n_layer)
        )
        return 6 * dense + 6 * cfg.n_head * cfg.head_dim * attn

    def embed_tokens(self, idx: torch.Tensor, image_embeds: torch.Tensor | None) -> torch.Tensor:
        """Token embeddings, with image placeholder positions replaced by projected image embeddings."""
        x = self.embed(idx)
        if image_embeds is None:
            return x
        if self.image_proj is None:
            raise ValueError("image_embeds given but the model has image_embed_dim = 0")
        slots = idx == self.config.image_token_id
        n_slots = int(slots.sum())
        if image_embeds.shape != (n_slots, self.config.image_embed_dim):
            raise ValueError(
                f"image_embeds must be ({n_slots}, {self.config.image_embed_dim}): one row per image "
                f"token {self.config.image_token_id} in idx, in row-major order; got {tuple(image_embeds.shape)}"
            )
        projected = self.image_proj(image_embeds).to(x.dtype)
        return x.masked_scatter(slots.unsqueeze(-1), projected)

    def forward(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        image_embeds: torch.Tensor | None = None,
        *,
        attention_backend: str = "auto",
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Return (logits (B,T,V), mean cross-entropy or None, MoE load-balancing loss).

        Targets equal to -100 are ignored (padding, image tokens). With `doc_mask` and a known
        `boundary_token_id`, attention stays inside each packed document. `attention_backend`:
        see `attend` (`auto` picks flex on CUDA, chunked SDPA elsewhere).
        """
        x, rope, ctx = self._inputs(idx, image_embeds, attention_backend)
        if self.config.tracks == 1:
            x, aux = self._stack(self.layers, x, rope, ctx)
        else:
            x, aux = self._parallel_tracks(x, rope, ctx)
        return self._outputs(x, targets, aux)

    def _inputs(self, idx, image_embeds, attention_backend):
        """Embeddings, RoPE tables and the attention context (document segments) of a batch."""
        cfg = self.config
        T = idx.size(1)
        if T > cfg.max_seq_len:
            raise ValueError(f"sequence length {T} exceeds max_seq_len={cfg.max_seq_len}")
        rope = rope_cos_sin(T, cfg.head_dim, cfg.rope_base, idx.device)
        x = self.embed_tokens(idx, image_embeds)
        segments = None
        if cfg.doc_mask and cfg.boundary_token_id >= 0:
            segments = document_segments(idx, cfg.boundary_token_id)
        return x, rope, AttentionContext(segments, attention_backend)

    def _outputs(self, x, targets, aux):
        logits = self.lm_head(self.norm(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(
                logits.float().view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-100
            )
        return logits, loss, aux

    def _kv_sources(self) -> set[int | None]:
        """Layers whose keys/values a later layer reuses (kept during the forward)."""
        return {self.config.kv_source(i) for i in range(self.config.n_layer)}

    def _stack(self, layers, x, rope, ctx, kv_of=None, first: int = 0):
        """Run consecutive layers (numbered from `first`) of one stack; `kv_of` holds the KV of
        earlier layers that later ones reuse (filled in as it goes)."""
        kv_of = {} if kv_of is None else kv_of
        sources = self._kv_sources()
        aux = x.new_zeros((), dtype=torch.float32)
        for i, layer in enumerate(layers, start=first):
            source = layer.attn.kv_source
            x, kv, layer_aux = layer(x, rope, kv_of[source] if source is not None else None, ctx)
            if i in sources:
                kv_of[i] = kv
            aux = aux + layer_aux
        return x, aux

    def _parallel_tracks(self, x, rope, ctx):
        """The K tracks, batched: all of a block's layers per track, then `combine_tracks`."""
        cfg = self.config
        depth, K = cfg.track_block_depth, cfg.tracks
        kv_of: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        aux = x.new_zeros((), dtype=torch.float32)
        for first in range(0, cfg.n_layer, depth):
            xs = x.unsqueeze(0).expand(K, *x.shape)
            for i in range(first, first + depth):
                xs, layer_aux = self._parallel_layer(i, xs, rope, ctx, kv_of)
                aux = aux + layer_aux
            x = combine_tracks(x, xs)
        return x, aux

    def _parallel_layer(self, i, xs, rope, ctx, kv_of):
        """Layer i of every track at once. xs (K, B, T, d): each track's hidden states. Weights are
        stacked per track; the tracks' heads are folded into one attention call (track k owns
        query heads [k·H/K, (k+1)·H/K) and KV heads [k·Hkv/K, ...), which is exactly how grouped-
        query attention pairs them), so no track reads another's states. Stacking copies the
        layer's weights once per forward (each track keeps its own ordinary `Block`, so
        checkpoints, upcycling and `reference_forward` see plain modules); that copy is small
        next to the layer's matmuls."""
        cfg = self.config
        layers = [track.layers[i] for track in self.tracks]
        K, B, T, d = xs.shape
        hd = cfg.head_dim
        first = layers[0].attn

        def stacked(get) -> torch.Tensor:
            return torch.stack([get(layer) for layer in layers])

        def heads(y: torch.Tensor, n: int) -> torch.Tensor:  # (K,B,T,n·hd) -> (B,K·n,T,hd)
            return y.view(K, B, T, n, hd).permute(1, 0, 3, 2, 4).reshape(B, K * n, T, hd)

        h = _rms(xs, stacked(lambda b: b.attn_norm.weight), cfg.norm_eps)
        q = heads(_per_track(h, stacked(lambda b: b.attn.q_proj.weight)), first.n_head)
        if first.kv_source is None:
            k = heads(_per_track(h, stacked(lambda b: b.attn.k_proj.weight)), first.n_kv_head)
            v = heads(_per_track(h, stacked(lambda b: b.attn.v_proj.weight)), first.n_kv_head)
            if not first.is_global:
                k = apply_rope(k, *rope)
        else:
            k, v = kv_of[first.kv_source]
        if i in self._kv_sources():
            kv_of[i] = (k, v)
        if not first.is_global:
            q = apply_rope(q, *rope)
        y = ctx(q, k, v, window=None if first.is_global else cfg.window)
        y = y.view(B, K, first.n_head, T, hd).permute(1, 0, 3, 2, 4).reshape(K, B, T, -1)
        xs = xs + _per_track(y, stacked(lambda b: b.attn.o_proj.weight))
        h = _rms(xs, stacked(lambda b: b.ffn_norm.weight), cfg.norm_eps)
        if isinstance(layers[0].ffn, MoE):
            f, aux = self._parallel_moe(layers, h)
        else:
            gate = _per_track(h, stacked(lambda b: b.ffn.gate.weight))
            up = _per_track(h, stacked(lambda b: b.ffn.up.weight))
            f = _per_track(F.silu(gate) * up, stacked(lambda b: b.ffn.down.weight))
            aux = xs.new_zeros((), dtype=torch.float32)
        return xs + f, aux

    def _parallel_moe(self, layers, h):
        """Each track's MoE on its own tokens: track k's router picks among track k's experts only
        (expert e of track k is expert k·E + e of one dispatch over all K·E experts). The balance
        loss is the mean of the tracks' own balance losses."""
        K, B, T, d = h.shape
        moes = [layer.ffn for layer in layers]
        n_experts, top_k = len(moes[0].experts), moes[0].top_k
        flat = h.reshape(K, B * T, d)
        logits = torch.bmm(flat, torch.stack([m.router.weight for m in moes]).transpose(1, 2))
        probs, weights, chosen = route(logits, top_k)  # (K, N, E), (K, N, k), (K, N, k)
        chosen = chosen + n_experts * torch.arange(K, device=h.device).view(K, 1, 1)
        experts = [e for m in moes for e in m.experts]
        out, counts = dispatch(
            flat.reshape(K * B * T, d),
            chosen.reshape(K * B * T, top_k),
            weights.reshape(-1, top_k),
            experts,
        )
        counts = counts.view(K, n_experts)
        aux = torch.stack([balance_loss(probs[k], counts[k], top_k) for k in range(K)]).mean()
        return out.view(K, B, T, d), aux

    def reference_forward(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        image_embeds: torch.Tensor | None = None,
        *,
        attention_backend: str = "auto",
    ):
        """`forward` computed the plain way: each track's layers run as ordinary `Block`s, one
        track after another, combined with `combine_tracks` at each block boundary. Slow; for
        tests of the batched Parallel-Track path (for tracks = 1 it is `forward`)."""
        if self.config.tracks == 1:
            return self.forward(idx, targets, image_embeds, attention_backend=attention_backend)
        depth = self.config.track_block_depth
        x, rope, ctx = self._inputs(idx, image_embeds, attention_backend)
        kv_of: list[dict] = [{} for _ in self.tracks]
        aux = x.new_zeros((), dtype=torch.float32)
        for first in range(0, self.config.n_layer, depth):
            ends = []
            for k, track in enumerate(self.tracks):
                layers = track.layers[first : first + depth]
                end, track_aux = self._stack(layers, x, rope, ctx, kv_of[k], first)
                ends.append(end)
                aux = aux + track_aux / len(self.tracks)
            x = combine_tracks(x, ends)
        return self._outputs(x, targets, aux)
