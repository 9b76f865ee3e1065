"""Sparse upcycling: turn a dense checkpoint into a mixture-of-experts model with the same outputs.

The report's server model starts its MoE from a dense model (Komatsuzaki et al., "Sparse
Upcycling"). Here every `every`-th layer (every other by default: layers 1, 3, 5, ...) gets
`experts` SwiGLU experts, and each expert is an exact copy of that layer's dense FFN. The router
is initialised randomly (normal, std `init_std`, seeded) so that tokens spread over the experts
once they start to differ; the initial outputs still equal the dense model's because of the
routing rule in `training.model.route`: the top-k weights are renormalised to sum to 1, so a
token's output is Σ_k w_k · FFN(x) = FFN(x) whatever the router chose. Everything else (attention,
norms, embeddings, Parallel-Track tracks) is copied unchanged; with tracks each track's FFN
becomes its own experts.

The result is written as `<out>/checkpoints/step_<N>.pt` (N: the dense checkpoint's step) with the
same payload keys as a trainer checkpoint's weights (`model`, `model_config`, `stage`, `seq_len`,
`mixture`), so `refinery train <stage> --init <out>` starts from it; the run's config must carry
the upcycled model section (`upcycled_model_section` gives it).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import torch

from training.checkpoint import latest_checkpoint, load_checkpoint, resolve_checkpoint
from training.checkpoint import save_checkpoint as _save_checkpoint
from training.model import ModelConfig, MoE, Transformer

_FFN_KEY = re.compile(r"^(?P<prefix>(?:tracks\.\d+\.)?layers\.(?P<layer>\d+)\.ffn\.)(?P<rest>.+)$")


class UpcycleError(ValueError):
    """The checkpoint cannot be upcycled as asked; the message says why and what to do."""


def upcycled_config(
    dense: ModelConfig, experts: int, top_k: int = 2, every: int = 2
) -> ModelConfig:
    """The MoE config: the dense one with `experts` experts (each as wide as the dense FFN) in
    every `every`-th layer."""
    if dense.moe_experts:
        raise UpcycleError(
            f"the checkpoint already has moe_experts={dense.moe_experts}; upcycling starts from a "
            "dense checkpoint (moe_experts: 0)"
        )
    if experts < 2:
        raise UpcycleError(f"--experts {experts}: upcycling needs at least 2 experts")
    if not 1 <= top_k <= experts:
        raise UpcycleError(f"--top-k {top_k}: must be in [1, --experts={experts}]")
    if not 1 <= every <= dense.n_layer:
        raise UpcycleError(f"--every {every}: must be in [1, n_layer={dense.n_layer}]")
    return dataclasses.replace(
        dense,
        moe_experts=experts,
        moe_top_k=top_k,
        moe_every=every,
        moe_hidden=dense.ffn_hidden,
    )


def upcycle_state(
    dense: ModelConfig,
    state: dict[str, torch.Tensor],
    experts: int,
    *,
    top_k: int = 2,
    every: int = 2,
    seed: int = 0,
) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """Map a dense model's state dict to the upcycled MoE's (see the module docstring)."""
    cfg = upcycled_config(dense, experts, top_k, every)
    gen = torch.Generator().manual_seed(seed)
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        m = _FFN_KEY.match(key)
        if m is None or not cfg.is_moe(int(m["layer"])):
            out[key] = value
            continue
        prefix, rest = m["prefix"], m["rest"]  # rest: gate.weight, up.weight or down.weight
        for e in range(experts):
            out[f"{prefix}experts.{e}.{rest}"] = value.clone()
        router = f"{prefix}router.weight"
        if router not in out:
            out[router] = (
                torch.randn(experts, dense.d_model, generator=gen, dtype=torch.float32)
                .mul_(dense.init_std)
                .to(value.dtype)
            )
    # Strict load: every parameter of the MoE model is accounted for, nothing left over.
    Transformer(cfg).load_state_dict(out, strict=True)
    return cfg, out


def max_logit_difference(
    dense: Transformer, moe: Transformer, *, batch: int = 2, seq_len: int = 64, seed: int = 0
) -> float:
    """Largest |logit difference| of the two models on random tokens (eval mode, no grad)."""
    gen = torch.Generator().manual_seed(seed)
    cfg = dense.config
    seq_len = min(seq_len, cfg.max_seq_len)
    idx = torch.randint(0, cfg.vocab_size, (batch, seq_len), generator=gen)
    with torch.no_grad():
        a = dense.eval()(idx, attention_backend="chunked")[0]
        b = moe.eval()(idx, attention_backend="chunked")[0]
    return float((a - b).abs().max())


def active_params(model: Transformer) -> int:
    """Non-embedding parameters a token uses: the routed-to top-k experts, not all of them."""
    inactive = sum(
        (len(m.experts) - m.top_k) * sum(p.numel() for p in m.experts[0].parameters())
        for m in model.modules()
        if isinstance(m, MoE)
    )
    return model.num_params() - inactive


def upcycled_model_section(cfg: ModelConfig) -> dict[str, Any]:
    """The MoE fields a training config's `model:` section needs to --init from the output."""
    return {
        "moe_experts": cfg.moe_experts,
        "moe_top_k": cfg.moe_top_k,
        "moe_every": cfg.moe_every,
        "moe_hidden": cfg.moe_hidden,
    }


def upcycle_checkpoint(
    init: str | Path,
    out_dir: str | Path,
    experts: int,
    *,
    top_k: int = 2,
    every: int = 2,
    seed: int = 0,
) -> dict[str, Any]:
    """Upcycle the dense checkpoint `init` (file or run directory) into `out_dir`; return a summary
    with the equality check (`max_logit_diff` on random tokens)."""
    source = resolve_checkpoint(init)
    out_dir = Path(out_dir)
    if latest_checkpoint(out_dir) is not None:
        raise FileExistsError(
            f"{out_dir} already holds a checkpoint ({latest_checkpoint(out_dir).name}); choose "
            "another --out"
        )
    saved = load_checkpoint(source)
    if "model" not in saved or "model_config" not in saved:
        raise UpcycleError(
            f"{source}: not a model checkpoint (needs `model` and `model_config`); pass a "
            "checkpoint written by `refinery train`"
        )
    fields = {f.name for f in dataclasses.fields(ModelConfig)}
    dense_cfg = ModelConfig(**{k: v for k, v in saved["model_config"].items() if k in fields})
    cfg, state = upcycle_state(
        dense_cfg, saved["model"], experts, top_k=top_k, every=every, seed=seed
    )
    dense = Transformer(dense_cfg)
    dense.load_state_dict(saved["model"])
    moe = Transformer(cfg)
    moe.load_state_dict(state)
    diff = max_logit_difference(dense, moe)
    step = int(saved.get("step", 0))
    record = {
        "source": str(source),
        "experts": experts,
        "top_k": top_k,
        "every": every,
        "router_seed": seed,
        "moe_layers": [i for i in range(cfg.n_layer) if cfg.is_moe(i)],
        "max_logit_diff": diff,
    }
    payload = {
        "stage": saved.get("stage", "pretrain"),
        "model": state,
        "model_config": dataclasses.asdict(cfg),
        "mixture": saved.get("mixture"),
        "seq_len": saved.get("seq_len", 0),
        "upcycled": record,
        # the dense run's tokenizer: a later --init compares it with its mixture's
        **{k: saved[k] for k in ("tokenizer", "tokenizer_sha256") if k in saved},
    }
    path = _save_checkpoint(out_dir, step, payload, keep=1)
    summary = {
        **record,
        "checkpoint": str(path),
        "params_dense": dense.num_params(),
        "params_moe": moe.num_params(),
        "active_params_moe": active_params(moe),
        "model_section": upcycled_model_section(cfg),
    }
    (out_dir / "upcycle.json").write_text(json.dumps(summary, indent=2))
    return summary
