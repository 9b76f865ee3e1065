"""Data parallelism with FSDP2 under `torchrun`: one process per device, the same code path.

Launch any training stage with torchrun (one node or many, standard rendezvous):

    torchrun --nproc-per-node 2 -m pipelines.cli train pretrain --config tiny --data MIX --out RUN
    torchrun --nnodes 2 --node-rank R --rdzv-endpoint HOST:PORT --nproc-per-node 8 -m pipelines.cli ...

A process is distributed when torchrun's `WORLD_SIZE` > 1 (with `RANK`, `LOCAL_RANK` and the
rendezvous variables). Then:

- The process group is `gloo` on CPU and `cpu:gloo,cuda:nccl` where CUDA is available; a CUDA
  run puts rank r on `cuda:LOCAL_RANK`.
- The model is sharded with FSDP2 (`torch.distributed.fsdp.fully_shard`): each transformer block,
  then the root (embedding, tied head, final norm); a Parallel-Track model (`tracks` > 1, whose
  batched forward reads the blocks' weights directly) as one unit at the root. Gradients of parameters a rank did not use
  (an MoE expert no token chose) are reduced as zeros, so every rank reduces the same set.
- **Batch rule**: `train.batch_size` is the per-rank micro-batch. The global batch of a step is
  `world_size x batch_size x grad_accum` sequences, and rank r takes every world_size-th
  batch-sized slice of the epoch order (`training.loader.ShardLoader`). A run on W ranks with
  batch_size b therefore consumes exactly the batches of a single process with batch_size W*b.
- **Loss**: each rank's mean token loss is reweighted by its share of the global (non-padding)
  token count, so the averaged gradient and the logged loss are the mean over the global batch's
  tokens, as in one process. The MoE load-balancing loss is averaged over ranks (it is not linear
  in the batch, so an MoE model matches a single process only approximately).
- Only rank 0 writes run.json, metrics.jsonl, eval.jsonl and summaries; every rank evaluates the
  whole held-out set (FSDP's forward is collective), which keeps eval losses identical to one
  process's.
- Checkpoints are sharded with `torch.distributed.checkpoint` (`training.checkpoint`).
- When torchrun restarts failed workers (`--max-restarts`), a run of this launch (same
  rendezvous id in run.json's `launch`) resumes from its latest checkpoint by itself.

Differences from one process, by construction: floating-point summation order (gradient
reduction), and AdamW still steps (decays) a parameter that no rank used in a step, where one
process skips a parameter whose gradient is None.
"""

from __future__ import annotations

import atexit
import dataclasses
import datetime
import json
import os
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist


class DistributedError(ValueError):
    """A distributed run cannot start (bad launch environment); the message says what to fix."""


@dataclasses.dataclass(frozen=True)
class DistContext:
    """This process's place in the run: rank, world size, rank on its node."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        """More than one process: shard the model, split the data, reduce the loss."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Rank 0 writes the run's files."""
        return self.rank == 0


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise DistributedError(
            f"environment variable {name}={raw!r} is not an integer; launch with torchrun, "
            "which sets RANK, WORLD_SIZE and LOCAL_RANK"
        ) from None


def context() -> DistContext:
    """This process's rank and world size, from the process group or torchrun's environment."""
    if dist.is_available() and dist.is_initialized():
        return DistContext(dist.get_rank(), dist.get_world_size(), _env_int("LOCAL_RANK", 0))
    world = _env_int("WORLD_SIZE", 1)
    rank, local = _env_int("RANK", 0), _env_int("LOCAL_RANK", 0)
    if world < 1 or not 0 <= rank < world:
        raise DistributedError(
            f"RANK={rank} is not in [0, WORLD_SIZE={world}); launch with torchrun --nproc-per-node N"
        )
    return DistContext(rank, world, local)


def is_main() -> bool:
    """True on rank 0 and in a single process."""
    return context().is_main


def init(device_type: str = "cpu") -> DistContext:
    """Join the process group when launched by torchrun with more than one process (idempotent).

    `device_type` is the trainer's device ("cpu" or "cuda"); a CUDA rank binds `cuda:LOCAL_RANK`.
    In a single process this does nothing and returns rank 0 of 1.
    """
    ctx = context()
    if not ctx.enabled or dist.is_initialized():
        if ctx.enabled and device_type == "cuda":
            torch.cuda.set_device(ctx.local_rank)
        return ctx
    if not dist.is_available():
        raise DistributedError(
            f"WORLD_SIZE={ctx.world_size} but this torch build has no torch.distributed; "
            "run a single process or install a torch with distributed support"
        )
    for var in ("MASTER_ADDR", "MASTER_PORT"):
        if var not in os.environ:
            raise DistributedError(
                f"WORLD_SIZE={ctx.world_size} but {var} is not set; launch with torchrun "
                "(it sets the rendezvous variables) rather than setting WORLD_SIZE by hand"
            )
    if device_type == "cuda":
        if torch.cuda.device_count() <= ctx.local_rank:
            raise DistributedError(
                f"LOCAL_RANK={ctx.local_rank} but this node has {torch.cuda.device_count()} CUDA "
                "devices; lower --nproc-per-node to the number of GPUs (or set train.device: cpu)"
            )
        torch.cuda.set_device(ctx.local_rank)
    backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
    timeout = datetime.timedelta(minutes=30)
    # torchrun's store outlives restarted workers: keep each attempt's keys (e.g. gloo's peer
    # addresses) apart, or a restarted rank reads a dead rank's address.
    store, _, _ = next(dist.rendezvous("env://", ctx.rank, ctx.world_size, timeout=timeout))
    attempt = _env_int("TORCHELASTIC_RESTART_COUNT", 0)
    dist.init_process_group(
        backend=backend,
        store=dist.PrefixStore(f"refinery/attempt_{attempt}", store),
        rank=ctx.rank,
        world_size=ctx.world_size,
        timeout=timeout,
    )
    atexit.register(shutdown)
    return ctx


def launch_id() -> str | None:
    """The rendezvous id of this torchrun launch (`TORCHELASTIC_RUN_ID`) when it names one launch:
    `torchrun --standalone` draws a fresh uuid, a multi-node job passes `--rdzv-id` (e.g. the
    scheduler's job id). None outside torchrun and for the static rendezvous's default 'none'."""
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", "")
    return None if run_id in ("", "none") else run_id


def restarted() -> bool:
    """torchrun restarted this launch's workers after a failure (`--max-restarts`)."""
    return _env_int("TORCHELASTIC_RESTART_COUNT", 0) > 0


def continues_launch(run_dir: str | Path) -> bool:
    """Whether `run_dir` is this launch's own run, left by workers that torchrun restarted: then
    the run resumes from its latest checkpoint without `--resume` (run.json records `launch`)."""
    launch = launch_id()
    record = Path(run_dir) / "run.json"
    if not restarted() or launch is None or not record.is_file():
        return False
    try:
        return json.loads(record.read_text()).get("launch") == launch
    except ValueError:
        return False


def shutdown() -> None:
    """Leave the process group (registered at exit by `init`)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def device_for(ctx: DistContext, device: torch.device) -> torch.device:
    """The device of this rank: `cuda:LOCAL_RANK` for a distributed CUDA run, else `device`."""
    if ctx.enabled and device.type == "cuda":
        return torch.device("cuda", ctx.local_rank)
    return device


def shard_model(model: torch.nn.Module, ctx: DistContext, device: torch.device) -> torch.nn.Module:
    """FSDP2: shard every transformer block, then the root; a single process keeps `model` as is.

    Every rank must have built the same weights (same seed, same `--init`) before this call.
    """
    if not ctx.enabled:
        return model
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from training.model import Block

    mesh = init_device_mesh(device.type, (ctx.world_size,), mesh_dim_names=("dp",))
    # FSDP2 gathers a module's weights when its forward runs. A Parallel-Track model reads its
    # tracks' block weights directly (stacked per layer, Block.forward never runs), so there the
    # root alone is sharded: all weights are gathered once per forward.
    if getattr(getattr(model, "config", None), "tracks", 1) == 1:
        for block in [m for m in model.modules() if isinstance(m, Block)]:
            fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    # MoE experts and the image projection are used on some ranks only: reduce zeros for them
    # so that every rank reduce-scatters the same parameters.
    model.set_reduce_scatter_unused_params(True)
    # A block also returns its keys/values (views) for the layers that share them; nothing
    # modifies them in place, and the 2-process equality test checks the gradients.
    warnings.filterwarnings("ignore", message=r"FSDP2-wrapped module \(.*\) returned a view tensor")
    return model


def is_sharded(model: torch.nn.Module) -> bool:
    """Whether `model` was sharded by `shard_model`."""
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def loss_weight(tokens: int, ctx: DistContext, device: torch.device) -> torch.Tensor | float:
    """The factor that turns this rank's mean token loss into its share of the global mean.

    With n_r = `tokens` predicted tokens on rank r and N = sum n_r, the weight is n_r * W / N:
    averaging the weighted losses (and gradients) over the W ranks gives sum(loss_r * n_r) / N,
    the mean over every token of the global batch. A float32 scalar tensor on `device` (no
    host synchronisation on CUDA); 1.0 in a single process.
    """
    if not ctx.enabled:
        return 1.0
    total = torch.tensor(float(tokens), dtype=torch.float64, device=device)
    dist.all_reduce(total)
    return (tokens * ctx.world_size / total.clamp_min(1.0)).float()


def mean(value: torch.Tensor, ctx: DistContext) -> torch.Tensor:
    """The mean of a scalar over ranks (every rank gets it); `value` itself in a single process."""
    if not ctx.enabled:
        return value
    out = value.detach().clone()
    dist.all_reduce(out)
    return out / ctx.world_size


def barrier(ctx: DistContext | None = None) -> None:
    """Wait for every rank (no-op in a single process)."""
    ctx = ctx or context()
    if ctx.enabled and dist.is_initialized():
        dist.barrier()


def gather_to_main(obj: Any, ctx: DistContext) -> list[Any] | None:
    """Each rank's `obj`, as a list in rank order on rank 0 (None elsewhere); `[obj]` alone."""
    if not ctx.enabled:
        return [obj]
    out: list[Any] | None = [None] * ctx.world_size if ctx.is_main else None
    dist.gather_object(obj, out, dst=0)
    return out


def broadcast_from_main(obj: Any, ctx: DistContext | None = None) -> Any:
    """Rank 0's `obj` on every rank (`obj` itself in a single process)."""
    ctx = ctx or context()
    if not ctx.enabled or not dist.is_initialized():
        return obj
    box = [obj if ctx.is_main else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]
