"""Two CPU processes on gloo under torchrun (loopback only): FSDP2 data parallelism, DCP checkpoints.

The 2-process run (per-rank batch 2, 2 micro-batches) must reproduce the single-process run with
the same global batch (4) step for step, on sequences with padded tails of different lengths (so
each rank's loss is weighted by its share of the global tokens): measured on this model, the
losses agree to ~1e-7 relative (fp32; only the order of the gradient sums differs), so the
tolerance is 1e-5. A resumed 2-process run must
continue bit for bit like the uninterrupted one. The model is dense: an MoE model's
load-balancing loss is computed per rank (see training/distributed.py), which moves the curve by
~1e-4 relative.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from training import distributed
from training.checkpoint import list_checkpoints, load_checkpoint, sharded_dir
from training.trainer import TrainError, run_stage

from .conftest import SPECIAL, write_config, write_mixture

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
STEPS = 6
REL_TOL = 1e-5


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def dense_config(path: Path, batch_size: int) -> Path:
    """The trainer tests' tiny config without MoE, 2 layers, 2 micro-batches per step, one thread
    per process, checkpoints every 3 steps."""
    write_config(
        path, batch_size=batch_size, grad_accum=2, threads=1, checkpoint_every=3, eval_every=3
    )
    cfg = yaml.safe_load(path.read_text())
    for key in ("moe_experts", "moe_top_k", "moe_hidden"):
        cfg["model"].pop(key)
    cfg["model"]["n_layer"] = 2
    path.write_text(yaml.safe_dump(cfg))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def crashing_run(step: int, call: str) -> str:
    """A torchrun script: on the first attempt rank 1 dies abruptly (`os._exit`) at the end of
    `step`, after writing `rank1-killed`; torchrun stops rank 0, which waits for it in the next
    collective, and restarts both, so the same `call` (its arguments from sys.argv) resumes
    from the last checkpoint."""
    return f"""
import os, sys
from pathlib import Path

def crash(step, total, row):
    first_attempt = os.environ["TORCHELASTIC_RESTART_COUNT"] == "0"
    if step == {step} and os.environ["RANK"] == "1" and first_attempt:
        Path("rank1-killed").write_text(str(step))
        os._exit(17)

{call}
"""


# Rank 1 dies in step 5, after the step-3 checkpoint and rank 0's step-5 log line.
CRASHING_RUN = crashing_run(
    5,
    "from training.trainer import run_stage\n"
    "config, data, out, steps = sys.argv[1:]\n"
    'run_stage("pretrain", config, data, out, steps=int(steps), on_step=crash)',
)


def torchrun(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`torchrun --nproc-per-node 2 ARGS` (a script, or `-m pipelines.cli ...`) on loopback: a
    static rendezvous unless ARGS choose one."""
    env = dict(
        os.environ,
        OMP_NUM_THREADS="1",
        OMP_WAIT_POLICY="PASSIVE",
        GLOO_SOCKET_IFNAME="lo",  # gloo's connections stay on loopback too
        PYTHONPATH=str(ROOT),
    )
    env.pop("REFINERY_HOME", None)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "1",
        "--nproc-per-node",
        "2",
        "--local-addr",
        "127.0.0.1",
        *([] if "--rdzv-backend" in args else ["--master-addr", "127.0.0.1"]),
        *([] if "--rdzv-backend" in args else ["--master-port", str(free_port())]),
        *args,
    ]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, f"torchrun failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return proc


def padded_mixture(mix_dir: Path) -> Path:
    """A mixture whose sequences carry padded tails of different lengths, so that the two ranks
    predict different numbers of tokens (the loss must still be the global token mean)."""
    write_mixture(mix_dir, seq_len=64, seed=1)
    rng = np.random.default_rng(7)
    for shard in sorted((mix_dir / "shards").glob("*.npy")):
        arr = np.load(shard)
        for row in np.nonzero(rng.random(len(arr)) < 0.5)[0]:
            arr[row, rng.integers(8, 64) :] = SPECIAL["pad"]
        np.save(shard, arr)
    return mix_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A single-process run (batch 4), a 2-process run (batch 2 per rank), and the same 2-process
    run killed in step 5 and resumed by torchrun's restart from its step-3 checkpoint."""
    root = tmp_path_factory.mktemp("dist")
    mix = padded_mixture(root / "mix")
    one, two = dense_config(root / "one.yaml", 4), dense_config(root / "two.yaml", 2)
    torch.set_num_threads(1)
    run_stage("pretrain", one, mix, root / "single", steps=STEPS)
    cli = ["-m", "pipelines.cli", "train", "pretrain", "--config", str(two)]
    common = ["--data", str(mix), "--steps", str(STEPS)]
    torchrun(*cli, "--out", "ddp", *common, cwd=root)

    # kill a rank in step 5; torchrun restarts the workers, which resume from step 3
    (root / "crash.py").write_text(CRASHING_RUN)
    elastic = ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{free_port()}"]
    elastic += ["--rdzv-id", "test-distributed-resume", "--max-restarts", "1"]
    torchrun(*elastic, "crash.py", str(two), str(mix), "resumed", str(STEPS), cwd=root)
    assert (root / "rank1-killed").read_text() == "5"
    return {
        "single": root / "single",
        "ddp": root / "ddp",
        "resumed": root / "resumed",
        "mix": mix,
    }


def test_two_processes_reproduce_the_single_process_loss_curve(runs):
    single = read_jsonl(runs["single"] / "metrics.jsonl")
    ddp = read_jsonl(runs["ddp"] / "metrics.jsonl")
    assert [r["step"] for r in ddp] == list(range(1, STEPS + 1))  # rank 0 alone writes
    for a, b in zip(single, ddp, strict=True):
        assert a["lr"] == b["lr"]
        assert b["loss"] == pytest.approx(a["loss"], rel=REL_TOL), (a["step"], a["loss"], b["loss"])
    assert ddp[-1]["loss"] < ddp[0]["loss"]
    evals = {(e["step"], e["group"]): e["loss"] for e in read_jsonl(runs["single"] / "eval.jsonl")}
    ddp_evals = read_jsonl(runs["ddp"] / "eval.jsonl")
    assert {(e["step"], e["group"]) for e in ddp_evals} == set(evals)
    for e in ddp_evals:
        assert e["loss"] == pytest.approx(evals[(e["step"], e["group"])], rel=REL_TOL)
    record = json.loads((runs["ddp"] / "run.json").read_text())
    assert record["world_size"] == 2 and record["config"]["train"]["batch_size"] == 2


def test_a_resumed_two_process_run_continues_exactly(runs):
    def curve(run: str, name: str, keys: tuple[str, ...]) -> list[tuple]:
        return [tuple(r[k] for k in keys) for r in read_jsonl(runs[run] / name)]

    keys = ("step", "loss", "lr")
    assert curve("resumed", "metrics.jsonl", keys) == curve("ddp", "metrics.jsonl", keys)
    ekeys = ("step", "group", "loss")
    assert curve("resumed", "eval.jsonl", ekeys) == curve("ddp", "eval.jsonl", ekeys)
    a = load_checkpoint(list_checkpoints(runs["ddp"])[-1])["model"]
    b = load_checkpoint(list_checkpoints(runs["resumed"])[-1])["model"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_sharded_checkpoints_exist_load_whole_and_feed_a_single_process_stage(
    runs, mixtures, tmp_path
):
    ckpts = list_checkpoints(runs["ddp"])
    assert [p.name for p in ckpts] == ["step_0000003.pt", "step_0000006.pt"]
    dcp_dir = sharded_dir(ckpts[-1])
    assert {p.name for p in dcp_dir.iterdir()} == {".metadata", "__0_0.distcp", "__1_0.distcp"}
    saved = load_checkpoint(ckpts[-1])
    assert saved["world_size"] == 2 and saved["step"] == STEPS and saved["sharded"] == dcp_dir.name
    assert [s["rank"] for s in saved["loader"]] == [0, 1] and len(saved["rng"]) == 2
    # the DCP shards gather into the full weights, close to the single-process run's
    single = load_checkpoint(list_checkpoints(runs["single"])[-1])["model"]
    assert saved["model"].keys() == single.keys()
    for k, v in single.items():
        assert saved["model"][k].shape == v.shape
        torch.testing.assert_close(saved["model"][k], v, rtol=1e-3, atol=1e-5)
    # a single process starts a later stage from it, and refuses to resume it with 1 rank
    cfg = dense_config(tmp_path / "c.yaml", 4)
    cpt = run_stage("cpt", cfg, mixtures["cpt"], tmp_path / "cpt", init=runs["ddp"], steps=1)
    assert cpt["init"].endswith("step_0000006.pt")
    shutil.copytree(runs["ddp"], tmp_path / "again")
    with pytest.raises(TrainError, match="written by 2 process.*--nproc-per-node 2"):
        run_stage("pretrain", cfg, runs["mix"], tmp_path / "again", steps=8, resume=True)


def test_a_parallel_track_model_trains_the_same_under_two_processes(tmp_path, mixtures):
    """PT's batched forward reads the blocks' weights directly, so it is sharded at the root only
    (sharding each block failed: 'aten.mul.Tensor got mixed torch.Tensor and DTensor')."""
    configs = {}
    for name, batch in (("one", 4), ("two", 2)):
        path = dense_config(tmp_path / f"{name}.yaml", batch)
        cfg = yaml.safe_load(path.read_text())
        cfg["model"].update(tracks=2, track_block_depth=2)
        path.write_text(yaml.safe_dump(cfg))
        configs[name] = path
    torch.set_num_threads(1)
    run_stage("pretrain", configs["one"], mixtures["pretrain"], tmp_path / "single", steps=3)
    args = ["--config", str(configs["two"]), "--data", str(mixtures["pretrain"]), "--steps", "3"]
    torchrun("-m", "pipelines.cli", "train", "pretrain", *args, "--out", "ddp", cwd=tmp_path)
    single = read_jsonl(tmp_path / "single" / "metrics.jsonl")
    ddp = read_jsonl(tmp_path / "ddp" / "metrics.jsonl")
    assert len(ddp) == len(single) == 3
    for a, b in zip(single, ddp, strict=True):
        assert b["loss"] == pytest.approx(a["loss"], rel=REL_TOL), (a["step"], a["loss"], b["loss"])


def test_a_bad_launch_environment_is_a_clear_error(monkeypatch):
    for var in ("MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    assert distributed.init() == distributed.DistContext(0, 1, 0)  # one process: nothing to join
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(distributed.DistributedError, match="RANK=2 is not in.*torchrun"):
        distributed.init()
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(distributed.DistributedError, match="MASTER_ADDR is not set.*torchrun"):
        distributed.init()
    monkeypatch.setenv("RANK", "one")
    with pytest.raises(distributed.DistributedError, match="RANK='one' is not an integer"):
        distributed.init()
