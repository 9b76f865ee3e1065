"""Fixtures: tiny synthetic mixture directories in the layout `training.loader` reads, and configs."""

from __future__ import annotations

import os

# On a shared, oversubscribed CPU, OpenMP's default spin-waiting makes 2-thread steps ~10x slower;
# passive waiting must be chosen before torch loads its OpenMP runtime.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import json  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

VOCAB = 64
SPECIAL = {"boundary": 0, "pad": 1, "image": 2, "image_start": 3, "image_end": 4}


def _markov_tokens(rng: np.random.Generator, n_seq: int, seq_len: int, vocab: int) -> np.ndarray:
    """Sequences from a sparse Markov chain (4 likely successors per token): learnable in few steps."""
    table_rng = np.random.default_rng(
        1234
    )  # same chain for every mixture, so stages share a language
    succ = table_rng.integers(5, vocab, size=(vocab, 4))
    out = np.empty((n_seq, seq_len), dtype=np.uint32)
    tok = rng.integers(5, vocab, size=n_seq)
    for t in range(seq_len):
        if t % 100 == 0:
            out[:, t] = SPECIAL["boundary"]
            continue
        out[:, t] = tok
        tok = succ[tok, rng.integers(0, 4, size=n_seq)]
    return out


def write_mixture(
    mix_dir: Path, *, seq_len: int, num_sequences: int = 64, vocab: int = VOCAB, seed: int = 0
) -> Path:
    """Write shards, eval sets (two languages) and a manifest.json for a synthetic mixture."""
    rng = np.random.default_rng(seed)
    (mix_dir / "shards").mkdir(parents=True, exist_ok=True)
    (mix_dir / "eval").mkdir(exist_ok=True)
    shards = []
    for i, n in enumerate((num_sequences // 2, num_sequences - num_sequences // 2)):
        path = f"shards/shard_{i:05d}.npy"
        np.save(mix_dir / path, _markov_tokens(rng, n, seq_len, vocab))
        shards.append({"path": path, "num_sequences": n})
    evals = []
    for group in ("en", "fr"):
        arr = _markov_tokens(rng, 8, seq_len, vocab)
        arr[-1, seq_len // 2 :] = SPECIAL["pad"]  # a padded tail must not count in the loss
        path = f"eval/web.{group}.npy"
        np.save(mix_dir / path, arr)
        evals.append({"bucket": "web", "group": group, "path": path, "num_sequences": len(arr)})
    manifest = {
        "seq_len": seq_len,
        "vocab_size": vocab,
        "special_tokens": SPECIAL,
        "shards": shards,
        "eval": evals,
        # what a built mixture records of its training tokens: groups weigh the held-out loss
        "buckets": {
            "web": {
                "groups": {
                    "en": {"tokens": 3 * num_sequences * seq_len // 4},
                    "fr": {"tokens": num_sequences * seq_len // 4},
                }
            }
        },
        "spec_sha256": f"synthetic-{seed}-{seq_len}",
    }
    (mix_dir / "manifest.json").write_text(json.dumps(manifest))
    (mix_dir / "tokenizer.json").write_text("{}")
    return mix_dir


def write_config(path: Path, **train_overrides) -> Path:
    """A small, fast config (4 layers, d_model 64, MoE and KV sharing on) for trainer tests."""
    cfg = {
        "model": {
            "d_model": 64,
            "n_layer": 4,
            "n_head": 4,
            "n_kv_head": 2,
            "window": 32,
            "max_seq_len": 128,
            "kv_share_fraction": 0.25,
            "local_per_global": 1,
            "moe_experts": 4,
            "moe_top_k": 2,
            "moe_hidden": 64,
        },
        "train": {
            "batch_size": 4,
            "threads": 2,
            "log_every": 1,
            "eval_every": 10,
            "checkpoint_every": 5,
            "eval_max_sequences": 8,
            **train_overrides,
        },
        "stages": {
            "pretrain": {"mixture": "tiny-pretrain", "steps": 30, "lr": 3e-3, "warmup_steps": 5},
            "cpt": {"mixture": "tiny-cpt", "steps": 10, "lr": 1e-3, "warmup_steps": 2},
            "long-context": {
                "mixture": "tiny-long-context",
                "steps": 10,
                "lr": 1e-3,
                "warmup_steps": 2,
                "batch_size": 2,
                "rope_base": 100000,
                "max_seq_len": 512,
            },
        },
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(autouse=True)
def _two_threads():
    torch.set_num_threads(2)


def write_mixtures(root: Path) -> dict[str, Path]:
    """Pretrain (seq 64), cpt (seq 64) and long-context (seq 256: 4x) mixtures under root."""
    return {
        "pretrain": write_mixture(root / "tiny-pretrain", seq_len=64, seed=1),
        "cpt": write_mixture(root / "tiny-cpt", seq_len=64, seed=2),
        "long-context": write_mixture(
            root / "tiny-long-context", seq_len=256, num_sequences=16, seed=3
        ),
    }


@pytest.fixture(scope="session")
def mixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Read-only synthetic mixtures shared by the session's tests."""
    return write_mixtures(tmp_path_factory.mktemp("mixtures"))


@pytest.fixture(scope="session")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_config(tmp_path_factory.mktemp("config") / "train.yaml")


@pytest.fixture(scope="session")
def pretrained_run(tmp_path_factory: pytest.TempPathFactory, mixtures, config) -> Path:
    """A 20-step pretraining run (read-only) that later stages start from."""
    from training.trainer import run_stage

    torch.set_num_threads(2)
    out = tmp_path_factory.mktemp("runs") / "pretrain"
    run_stage("pretrain", config, mixtures["pretrain"], out, steps=20)
    return out
