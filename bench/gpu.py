"""GPU bench, one script for a lent GPU (< 8 minutes on one H200): prints

- pretrain: training tokens/s and MFU of training/configs/gpu.yaml's model (about 1.4B
  parameters, 150k vocabulary) at 2k and 8k sequence length: bf16 autocast, torch.compile,
  FlexAttention with the sliding window and document masks (random documents of 256-2048
  tokens per sequence), fused AdamW, one optimiser step per micro-batch;
- multimodal: tokens/s of one training step of the vision-language model (an open_clip ViT-B-16
  image tower at random weights, the adapter, the gpu.yaml decoder; 4 images of 144 tokens per
  2k sequence), eager, bf16;
- clip: images/s of `ClipScorer.score` (decode, preprocess, ViT-B-16 image and text towers, fp16)
  on 2,048 PNG images;
- ablation: one arm of `refinery ablate` at a larger proxy (d_model 512, 8 layers, seq 512,
  bf16) on the sample web's documents, 3 seeds: tokens/s and the arm's bits per byte.

`--tiny` runs every part at toy sizes on the CPU (the CI-sized check that the script works).
Usage: python bench/gpu.py [--tiny] [--json OUT]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VOCAB = 150_000


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _doc_tokens(batch: int, seq: int, vocab: int, lo: int, hi: int, g: torch.Generator):
    """Random tokens with a boundary (id 0) opening each document of lo..hi tokens."""
    x = torch.randint(8, vocab, (batch, seq + 1), generator=g)
    for row in x:
        pos = 0
        while pos < seq:
            row[pos] = 0
            pos += int(torch.randint(lo, hi + 1, (1,), generator=g))
    return x


def _decoder_config(tiny: bool, seq: int, **extra):
    import dataclasses

    import yaml

    from training.model import ModelConfig

    if tiny:
        base = dict(
            d_model=64,
            n_layer=4,
            n_head=4,
            n_kv_head=2,
            window=32,
            local_per_global=3,
            vocab_size=512,
        )
    else:
        base = yaml.safe_load((ROOT / "training" / "configs" / "gpu.yaml").read_text())["model"]
        base["vocab_size"] = VOCAB
    cfg = ModelConfig(**base)
    return dataclasses.replace(cfg, max_seq_len=seq, boundary_token_id=0, doc_mask=True, **extra)


def _timed_steps(step, warm: int, timed: int, device: torch.device) -> tuple[float, float]:
    """(seconds of the warm-up steps, seconds of the timed steps)."""
    t0 = time.perf_counter()
    for i in range(warm):
        step(i)
    _sync(device)
    t1 = time.perf_counter()
    for i in range(timed):
        step(i)
    _sync(device)
    return t1 - t0, time.perf_counter() - t1


def _pretrain_at(seq: int, tiny: bool, device: torch.device) -> dict:
    """Tokens/s and MFU of training steps at one sequence length."""
    from training.model import Transformer
    from training.trainer import peak_flops

    cfg = _decoder_config(tiny, seq)
    torch.manual_seed(0)
    model = Transformer(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    step_model = model if tiny else torch.compile(model)
    batch = 2 if tiny else max(1, 16_384 // seq)
    g = torch.Generator().manual_seed(seq)
    data = [_doc_tokens(batch, seq, cfg.vocab_size, seq // 8, seq // 4 + 1, g) for _ in range(4)]
    losses = []

    def step(i: int) -> None:
        x = data[i % 4].to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            _, loss, _ = step_model(x[:, :-1], x[:, 1:], attention_backend="auto")
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())

    warm_s, dt = _timed_steps(step, *((1, 2) if tiny else (3, 10)), device)
    tps = batch * seq * (2 if tiny else 10) / dt
    peak = peak_flops(device)
    mfu = model.flops_per_token(seq) * tps / peak if peak else None
    cuda = device.type == "cuda"
    return {
        "part": "pretrain",
        "seq_len": seq,
        "batch": batch,
        "params": model.num_params(non_embedding=False),
        "tokens_per_s": round(tps),
        "mfu": round(mfu, 4) if mfu else None,
        "warmup_s": round(warm_s, 1),
        "loss": round(float(losses[-1]), 3),
        "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1) if cuda else None,
    }


def pretrain(tiny: bool, device: torch.device) -> list[dict]:
    """Tokens/s and MFU at 2k and 8k (compiled, bf16, flex attention on CUDA)."""
    out = []
    for seq in (128, 256) if tiny else (2048, 8192):
        out.append(_pretrain_at(seq, tiny, device))
        print(json.dumps(out[-1]), flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    return out


def _clip_dir(tiny: bool) -> str:
    """A CLIP directory at random weights (throughput does not depend on them; the scorer and the
    vision tower refuse a bare architecture, whose scores would mean nothing)."""
    from training.clip import load_clip, save_clip

    out = Path(tempfile.gettempdir()) / f"gpu-bench-clip-{'tiny' if tiny else 'vitb16'}"
    if not (out / "open_clip_config.json").exists():
        loaded = load_clip("refinery-tiny" if tiny else "ViT-B-16", "cpu", for_training=True)
        save_clip(loaded.model, loaded.model_cfg, out)
    return str(out)


def multimodal(tiny: bool, device: torch.device) -> dict:
    """One vision-language training step's tokens/s (image tower, adapter, decoder)."""
    from training.model import Transformer
    from training.vision import (
        AdapterConfig,
        VisionAdapter,
        VisionLanguageModel,
        load_vision_encoder,
    )

    seq, k, images = (128, 4, 2) if tiny else (2048, 144, 4)
    image_id = 2
    cfg = _decoder_config(tiny, seq)
    import dataclasses

    cfg = dataclasses.replace(cfg, image_embed_dim=cfg.d_model, image_token_id=image_id)
    encoder = load_vision_encoder(_clip_dir(tiny))  # on the CPU: its probe runs there
    adapter = VisionAdapter(AdapterConfig(encoder.width, cfg.d_model, k, heads=4 if tiny else 8))
    model = VisionLanguageModel(encoder, adapter, Transformer(cfg)).to(device)
    model.set_trainable(vision=False, decoder=True)
    opt = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=1e-4, fused=device.type == "cuda"
    )
    batch = 2 if tiny else 8
    g = torch.Generator().manual_seed(1)
    x = _doc_tokens(batch, seq, cfg.vocab_size, seq // 4, seq // 2, g)
    for row in x:  # `images` blocks of k image tokens per sequence
        for j in range(images):
            start = 1 + j * (seq // images)
            row[start : start + k] = image_id
    size = encoder.info.image_size
    pixels = torch.randn(batch * images, 3, size, size, generator=g)
    y = x[:, 1:].clone()
    y[y == image_id] = -100

    def step(i: int) -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            _, loss, _ = model(
                x[:, :-1].to(device), y.to(device), pixels.to(device), attention_backend="auto"
            )
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    timed = 2 if tiny else 8
    _, dt = _timed_steps(step, 1 if tiny else 2, timed, device)
    out = {
        "part": "multimodal",
        "seq_len": seq,
        "batch": batch,
        "images_per_seq": images,
        "image_tokens": k,
        "tokens_per_s": round(batch * seq * timed / dt),
        "images_per_s": round(batch * images * timed / dt, 1),
    }
    print(json.dumps(out), flush=True)
    return out


def clip(tiny: bool, device: torch.device) -> dict:
    """ClipScorer.score images/s on PNG bytes (decode and preprocess included)."""
    import numpy as np
    from PIL import Image

    from training.clip import ClipScorer

    n = 32 if tiny else 2048
    rng = np.random.default_rng(0)
    pngs = []
    for _ in range(min(n, 64)):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)).save(buf, "PNG")
        pngs.append(buf.getvalue())
    images = [pngs[i % len(pngs)] for i in range(n)]
    captions = [f"a photo of thing {i}" for i in range(n)]
    precision = "fp16" if device.type == "cuda" else "fp32"
    scorer = ClipScorer(_clip_dir(tiny), device, 256, precision=precision, workers=16)
    scorer.score(images[:64], captions[:64])  # warm-up
    _sync(device)
    t0 = time.perf_counter()
    scorer.score(images, captions)
    _sync(device)
    out = {"part": "clip", "images": n, "images_per_s": round(n / (time.perf_counter() - t0), 1)}
    print(json.dumps(out), flush=True)
    return out


def ablation_arm(tiny: bool, device: torch.device) -> dict:
    """One arm of `refinery ablate` at a larger proxy on the sample web's documents."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import yaml

    from sampleweb.content import load_all
    from training.ablate.run import run_ablation

    work = Path(tempfile.mkdtemp(prefix="gpu-ablate-"))
    docs = [
        ("\n\n".join(d.paras), lang, i % 4 == 0)
        for lang, pool in sorted(load_all().items())
        for i, d in enumerate(pool.docs)
    ]
    train = [(t, lang) for t, lang, held in docs if not held]
    pq.write_table(
        pa.table(
            {
                "id": [str(i) for i in range(len(train))],
                "text": [t for t, _ in train],
                "lang": [lang for _, lang in train],
                "training_allowed": [True] * len(train),
            }
        ),
        work / "train.parquet",
    )
    pq.write_table(
        pa.table(
            {"text": [t for t, _, h in docs if h], "lang": [lang for _, lang, h in docs if h]}
        ),
        work / "eval.parquet",
    )
    seq = 128 if tiny else 512
    tokens = 4096 if tiny else 2_000_000
    mix = {
        "name": "gpu-arm",
        "seq_len": seq,
        "total_tokens": min(tokens, 200_000),
        "tokenizer": {"train": {"vocab_size": 1024 if tiny else 4096, "sample_tokens": 1_000_000}},
        "allow_shortfall": True,
        "buckets": {"web": {"weight": 1.0, "sources": [{"path": "train.parquet"}]}},
        "eval": {"sequences_per_group": 0},
    }
    (work / "mix.yaml").write_text(yaml.safe_dump(mix))
    model = (
        {"d_model": 32, "n_layer": 2, "n_head": 2, "n_kv_head": 1, "window": 32}
        if tiny
        else {"d_model": 512, "n_layer": 8, "n_head": 8, "n_kv_head": 4, "window": 256}
    )
    config = {
        "model": {**model, "local_per_global": 3, "max_seq_len": seq, "doc_mask": True},
        "train": {
            "batch_size": 4 if tiny else 32,
            "precision": "bfloat16",
            "deterministic": False,
            "log_every": 10,
        },
        "stages": {"pretrain": {"mixture": "x", "steps": 1, "lr": 1e-3, "warmup_steps": 20}},
    }
    (work / "proxy.yaml").write_text(yaml.safe_dump(config))
    spec = {
        "name": "gpu",
        "config": str(work / "proxy.yaml"),
        "tokens": tokens,
        "seeds": [0] if tiny else [0, 1, 2],
        "arms": {"sampleweb": {"mixture_spec": "mix.yaml"}},
        "eval_sets": [{"name": "held", "path": "eval.parquet"}],
        "eval_batch_size": 32,
    }
    (work / "ablation.yaml").write_text(yaml.safe_dump(spec))
    t0 = time.perf_counter()
    r = run_ablation(work / "ablation.yaml", work / "out")
    seconds = time.perf_counter() - t0
    arm = r["arms"]["sampleweb"]
    tps = [
        json.loads(ln)["tokens_per_s"]
        for d in arm["run_dirs"].values()
        for ln in (Path(d) / "metrics.jsonl").read_text().splitlines()[1:]
        if json.loads(ln)["tokens_per_s"]
    ]
    out = {
        "part": "ablation_arm",
        "model": model,
        "seq_len": seq,
        "tokens_per_run": arm["tokens"],
        "seeds": len(arm["run_dirs"]),
        "train_tokens_per_s": round(sum(tps) / len(tps)) if tps else None,
        "bpb": {k: round(v["mean"], 4) for k, v in arm["summary"].items() if k.startswith("bpb/")},
        "seconds": round(seconds, 1),
    }
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="toy sizes on the CPU")
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--parts", nargs="+", default=["pretrain", "multimodal", "clip", "ablation"])
    args = ap.parse_args()
    device = torch.device("cpu" if args.tiny or not torch.cuda.is_available() else "cuda")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        print(
            f"device: {torch.cuda.get_device_name(device)}, torch {torch.__version__}", flush=True
        )
    parts = {"pretrain": pretrain, "multimodal": multimodal, "clip": clip, "ablation": ablation_arm}
    results: dict = {"device": str(device), "tiny": args.tiny}
    t_all = time.perf_counter()
    for name in args.parts:
        t0 = time.perf_counter()
        try:
            results[name] = parts[name](args.tiny, device)
        except Exception as exc:  # one part failing still reports the others
            traceback.print_exc()
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"-- {name}: {time.perf_counter() - t0:.1f} s", flush=True)
        results["seconds"] = round(time.perf_counter() - t_all, 1)
        if args.json:  # after every part: a run cut short keeps what it measured
            args.json.write_text(json.dumps(results, indent=2))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
