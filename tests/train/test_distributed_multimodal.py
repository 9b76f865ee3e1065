"""The multimodal stage under torchrun: 2 CPU processes on gloo (loopback only), FSDP2 + DCP.

Like the text stages (tests/train/test_distributed.py): the 2-process run (per-rank batch 2, 2
micro-batches) must reproduce the single-process run with the same global batch (4), step for
step, images included: the training losses and the held-out matched and mismatched caption
losses agree within REL_TOL (measured ~1e-7: fp32, only the order of the gradient sums
differs). The run has an adapter-only phase (steps 1-3): under torchrun the decoder's gradients
are dropped before the update instead of freezing it, and its weights must come out of that
phase unchanged. A rank killed in step 3 makes torchrun restart both workers, which resume from
the step-2 checkpoint -- written inside the adapter-only phase, when the decoder has no optimiser
state yet -- and must continue bit for bit like the uninterrupted 2-process run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml

from training.checkpoint import list_checkpoints, load_checkpoint, sharded_dir
from training.multimodal import run_multimodal
from training.trainer import TrainError, run_stage

from .test_distributed import crashing_run, dense_config, free_port, read_jsonl, torchrun
from .test_multimodal import write_clip_dir, write_multimodal_mixture

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]

STEPS = 6
ADAPTER_ONLY = 3
REL_TOL = 1e-5

# Rank 1 dies at the end of step 3, after the step-2 checkpoint (in the adapter-only phase).
CRASHING_RUN = crashing_run(
    3,
    "from training.multimodal import run_multimodal\n"
    "config, data, init, vision, out, steps = sys.argv[1:]\n"
    "run_multimodal(config, data, out, init=init, vision=vision, steps=int(steps), on_step=crash)",
)


def multimodal_config(path: Path, batch_size: int) -> Path:
    """The dense 2-layer config of the text test with a multimodal stage: adapter only for the
    first 3 steps, checkpoints every 2 steps (one inside that phase), eval every 3."""
    dense_config(path, batch_size)
    cfg = yaml.safe_load(path.read_text())
    cfg["train"] |= {"checkpoint_every": 2, "eval_every": 3, "keep_checkpoints": 3}
    cfg["stages"]["multimodal"] = {
        "mixture": "tiny-multimodal",
        "steps": STEPS,
        "lr": 3e-3,
        "warmup_steps": 2,
        "adapter_only_steps": ADAPTER_ONLY,
        "adapter_heads": 4,
        "adapter_ffn_mult": 0.25,
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, mixtures) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dist-mm")
    mix = write_multimodal_mixture(root / "mix")
    clip = write_clip_dir(root / "clip")
    torch.set_num_threads(1)
    init = root / "init"
    run_stage("pretrain", dense_config(root / "pre.yaml", 4), mixtures["pretrain"], init, steps=2)
    one, two = multimodal_config(root / "one.yaml", 4), multimodal_config(root / "two.yaml", 2)
    run_multimodal(one, mix, root / "single", init=init, vision=clip, steps=STEPS)

    cli = ["-m", "pipelines.cli", "train", "multimodal", "--config", str(two), "--data", str(mix)]
    weights = ["--init", str(init), "--vision", str(clip), "--steps", str(STEPS)]
    torchrun(*cli, *weights, "--out", "ddp", cwd=root)

    (root / "crash.py").write_text(CRASHING_RUN)
    elastic = ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{free_port()}"]
    elastic += ["--rdzv-id", "test-distributed-multimodal", "--max-restarts", "1"]
    args = [str(two), str(mix), str(init), str(clip), "resumed", str(STEPS)]
    torchrun(*elastic, "crash.py", *args, cwd=root)
    assert (root / "rank1-killed").read_text() == "3"
    return {
        "root": root,
        "mix": mix,
        "clip": clip,
        "init": init,
        "one": one,
        "single": root / "single",
        "ddp": root / "ddp",
        "resumed": root / "resumed",
    }


def test_two_processes_reproduce_the_single_process_run_with_images(runs):
    single = read_jsonl(runs["single"] / "metrics.jsonl")
    ddp = read_jsonl(runs["ddp"] / "metrics.jsonl")
    assert [r["step"] for r in ddp] == list(range(1, STEPS + 1))  # rank 0 alone writes
    for a, b in zip(single, ddp, strict=True):
        assert a["lr"] == b["lr"]
        assert b["loss"] == pytest.approx(a["loss"], rel=REL_TOL), (a["step"], a["loss"], b["loss"])
    key = ("step", "bucket", "group")
    evals = {tuple(e[k] for k in key): e for e in read_jsonl(runs["single"] / "eval.jsonl")}
    ddp_evals = read_jsonl(runs["ddp"] / "eval.jsonl")
    assert {tuple(e[k] for k in key) for e in ddp_evals} == set(evals)
    images = [e for e in ddp_evals if e["images"]]
    assert images and all(e["loss_mismatched"] is not None for e in images)
    for e in ddp_evals:
        ref = evals[tuple(e[k] for k in key)]
        assert e["images"] == ref["images"]
        for k in ("loss", "loss_mismatched"):
            if ref.get(k) is not None:
                assert e[k] == pytest.approx(ref[k], rel=REL_TOL), (k, e, ref)
    record = json.loads((runs["ddp"] / "run.json").read_text())
    assert record["world_size"] == 2 and record["config"]["train"]["batch_size"] == 2
    summary = json.loads((runs["ddp"] / "summary.json").read_text())
    assert summary["steps"] == STEPS and summary["gap_last"] is not None


def test_a_resumed_two_process_multimodal_run_continues_exactly(runs):
    def curve(run: str, name: str, keys: tuple[str, ...]) -> list[tuple]:
        return [tuple(r.get(k) for k in keys) for r in read_jsonl(runs[run] / name)]

    keys = ("step", "loss", "lr")
    assert curve("resumed", "metrics.jsonl", keys) == curve("ddp", "metrics.jsonl", keys)
    ekeys = ("step", "bucket", "group", "loss", "loss_mismatched")
    assert curve("resumed", "eval.jsonl", ekeys) == curve("ddp", "eval.jsonl", ekeys)
    a = load_checkpoint(list_checkpoints(runs["ddp"])[-1])
    b = load_checkpoint(list_checkpoints(runs["resumed"])[-1])
    for part in (("model",), ("vision_language", "adapter"), ("vision_language", "image_proj")):
        sa, sb = a, b
        for k in part:
            sa, sb = sa[k], sb[k]
        assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa), part


def test_sharded_multimodal_checkpoints_load_like_single_process_ones(runs, tmp_path):
    ckpts = list_checkpoints(runs["ddp"])
    assert [p.name for p in ckpts] == ["step_0000002.pt", "step_0000004.pt", "step_0000006.pt"]
    assert {p.name for p in sharded_dir(ckpts[-1]).iterdir()} == {
        ".metadata",
        "__0_0.distcp",
        "__1_0.distcp",
    }
    saved = load_checkpoint(ckpts[-1])
    ref = load_checkpoint(list_checkpoints(runs["single"])[-1])
    assert saved["world_size"] == 2 and saved["stage"] == "multimodal"
    assert (
        saved["model_config"] == ref["model_config"] and ref["model_config"]["image_embed_dim"] == 0
    )
    vl, ref_vl = saved["vision_language"], ref["vision_language"]
    assert vl["vision"] is None and vl["vision_fingerprint"] == ref_vl["vision_fingerprint"]
    for got, want in (
        (saved["model"], ref["model"]),
        (vl["adapter"], ref_vl["adapter"]),
        (vl["image_proj"], ref_vl["image_proj"]),
    ):
        assert got.keys() == want.keys()
        for k, v in want.items():
            torch.testing.assert_close(got[k], v, rtol=1e-3, atol=1e-5)

    # the adapter-only phase (steps 1-3) left the decoder exactly as --init gave it
    at_two = load_checkpoint(ckpts[0])["model"]
    init = load_checkpoint(list_checkpoints(runs["init"])[-1])["model"]
    assert at_two.keys() == init.keys()
    assert all(torch.equal(at_two[k], init[k]) for k in init)
    # ... and training went on: the decoder after the phase, the adapter within it
    assert not torch.equal(saved["model"]["embed.weight"], init["embed.weight"])
    adapter_at_two = load_checkpoint(ckpts[0])["vision_language"]["adapter"]
    assert not torch.equal(vl["adapter"]["proj.weight"], adapter_at_two["proj.weight"])

    # one process refuses to resume a 2-process run
    shutil.copytree(runs["ddp"], tmp_path / "again")
    with pytest.raises(TrainError, match="written by 2 process.*--nproc-per-node 2"):
        run_multimodal(runs["one"], runs["mix"], tmp_path / "again", steps=8, resume=True)
