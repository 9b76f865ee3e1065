"""`refinery train upcycle`: a dense checkpoint -> a mixture-of-experts checkpoint with the same
outputs (sparse upcycling, training/upcycle.py). CLI only: the output is a checkpoint directory
that `refinery train <stage> --init DIR` starts from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from common import lake
from pipelines.stage import Lake, Params, Stage, Summary, param


class UpcycleParams(Params):
    init: Path = param(help="Dense checkpoint file, or a run directory (its latest checkpoint).")
    experts: int = param(min=2, help="Experts per MoE layer (each a copy of the dense FFN).")
    out: Path = param(output=True, help="Directory to write (checkpoints/step_N.pt, upcycle.json).")
    top_k: int = param(2, min=1, help="Experts each token is routed to.")
    every: int = param(2, min=1, help="MoE in every N-th layer (2: layers 1, 3, 5, ...).")
    seed: int = param(0, help="Seed of the router's random initialisation.")


class UpcycleSummary(Summary):
    checkpoint: str
    source: str
    experts: int
    top_k: int
    moe_layers: list[int]
    max_logit_diff: float
    params_dense: int
    params_moe: int
    active_params_moe: int
    model_section: dict[str, Any]

    def text(self) -> str:
        section = "\n".join(f"  {k}: {v}" for k, v in self.model_section.items())
        return (
            f"upcycled {self.source}\n"
            f"  -> {self.checkpoint}\n"
            f"  MoE layers {self.moe_layers}: {self.experts} experts, top-{self.top_k}; "
            f"{self.params_dense:,} -> {self.params_moe:,} non-embedding parameters "
            f"({self.active_params_moe:,} active per token)\n"
            f"  initial outputs equal the dense model's: max |logit difference| "
            f"{self.max_logit_diff:.2e} on random tokens\n"
            f"train from it with --init {Path(self.checkpoint).parent.parent} and these fields "
            f"in the config's model: section:\n{section}"
        )


def upcycle(p: UpcycleParams, lake_: Lake) -> UpcycleSummary:
    """Sparse upcycling: a dense checkpoint -> an MoE (every other layer) with the same outputs."""
    from training.upcycle import upcycle_checkpoint

    s = upcycle_checkpoint(p.init, p.out, p.experts, top_k=p.top_k, every=p.every, seed=p.seed)
    lake.write_manifest(
        Path(p.out),
        rows=1,
        inputs=[s["source"]],
        config={"experts": p.experts, "top_k": p.top_k, "every": p.every, "seed": p.seed},
        extra={"kind": "upcycled-checkpoint", "checkpoint": s["checkpoint"]},
    )
    lake_.log(json.dumps({"max_logit_diff": s["max_logit_diff"]}))
    return UpcycleSummary(
        checkpoint=s["checkpoint"],
        source=s["source"],
        experts=s["experts"],
        top_k=s["top_k"],
        moe_layers=s["moe_layers"],
        max_logit_diff=s["max_logit_diff"],
        params_dense=s["params_dense"],
        params_moe=s["params_moe"],
        active_params_moe=s["active_params_moe"],
        model_section=s["model_section"],
    )


UPCYCLE = Stage(
    name="train upcycle",
    params=UpcycleParams,
    run=upcycle,
    description=upcycle.__doc__,
    group="train",
)
