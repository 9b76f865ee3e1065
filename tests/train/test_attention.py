"""Attention paths: chunked SDPA and FlexAttention equal the dense reference, documents stay apart,
and one forward's memory grows about linearly with the sequence length."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import training.model as model_mod
from training.model import (
    ModelConfig,
    Transformer,
    attend,
    attention_mask,
    document_segments,
    flex_available,
)

from .test_model import naive_attention

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[2]
ATOL, RTOL = 1e-5, 1e-4  # float32: the paths differ only in summation order


def naive_doc_attention(q, k, v, window, segments):
    """Reference with loops: per batch row, per document, windowed causal attention inside it."""
    out = torch.zeros_like(q)
    for b in range(q.size(0)):
        seg = segments[b]
        for d in seg.unique():
            pos = (seg == d).nonzero().squeeze(1)
            lo, hi = int(pos[0]), int(pos[-1]) + 1  # documents are contiguous
            out[b : b + 1, :, lo:hi] = naive_attention(
                q[b : b + 1, :, lo:hi], k[b : b + 1, :, lo:hi], v[b : b + 1, :, lo:hi], window
            )
    return out


def qkv(B=2, H=4, Hkv=2, T=70, D=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(B, H, T, D, generator=g),
        torch.randn(B, Hkv, T, D, generator=g),
        torch.randn(B, Hkv, T, D, generator=g),
    )


def test_document_segments_put_the_boundary_token_in_the_document_it_ends():
    idx = torch.tensor([[5, 6, 0, 7, 0, 0, 8], [0, 9, 9, 9, 9, 9, 9]])
    assert document_segments(idx, 0).tolist() == [[0, 0, 0, 1, 1, 2, 3], [0, 1, 1, 1, 1, 1, 1]]


def _segments(T=70):
    idx = torch.randint(5, 50, (2, T), generator=torch.Generator().manual_seed(1))
    idx[0, [9, 30, 31, T - 18]] = 0  # includes an empty document (two boundaries in a row)
    idx[1, [T - 1]] = 0  # row 1: one document ending at the last position
    return document_segments(idx, 0)


BACKENDS = ["chunked", "dense"] + (["flex"] if flex_available() else [])


@pytest.mark.parametrize("window", [None, 1, 7, 16, 200])
@pytest.mark.parametrize("docs", [False, True])
def test_backends_match_the_naive_loop(monkeypatch, window, docs):
    monkeypatch.setattr(model_mod, "GLOBAL_CHUNK", 16)  # several chunks for global layers too
    q, k, v = qkv(B=2, H=2, Hkv=1, T=40)
    segments = _segments(40) if docs else None
    ref = (
        naive_doc_attention(q, k, v, window, segments)
        if docs
        else naive_attention(q, k, v, window=window)
    )
    for backend in BACKENDS:
        got = attend(q, k, v, window, segments, backend=backend)
        torch.testing.assert_close(
            got, ref, atol=ATOL, rtol=RTOL, msg=lambda m, b=backend: f"{b}: {m}"
        )


@pytest.mark.skipif(not flex_available(), reason="torch without flex_attention")
def test_flex_block_mask_is_the_dense_mask():
    """The CUDA path's mask_mod, evaluated on CPU, is exactly the reference mask, block by block."""
    from training.model import flex_block_mask

    T, window = 300, 40
    segments = _segments(T)
    bm = flex_block_mask(2, T, window, segments, torch.device("cpu"))
    dense = bm.to_dense()  # (B, 1, T/128 rounded up, same) blocks that hold any allowed pair
    ref = attention_mask(T, window, segments, torch.device("cpu"))
    blocks = -(-T // 128)
    for b in range(2):
        for i in range(blocks):
            for j in range(blocks):
                tile = ref[b, 0, i * 128 : (i + 1) * 128, j * 128 : (j + 1) * 128]
                assert bool(dense[b, 0, i, j]) == bool(tile.any())


def test_chunked_gradients_match_the_dense_reference(monkeypatch):
    monkeypatch.setattr(model_mod, "GLOBAL_CHUNK", 16)
    segments = _segments()
    for window in (None, 7):
        grads = {}
        for backend in ("chunked", "dense"):
            q, k, v = (t.requires_grad_() for t in qkv(seed=3))
            attend(q, k, v, window, segments, backend=backend).square().sum().backward()
            grads[backend] = [t.grad for t in (q, k, v)]
        for a, b in zip(grads["chunked"], grads["dense"], strict=True):
            torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def _cfg(**kw) -> ModelConfig:
    base = dict(
        vocab_size=60,
        d_model=32,
        n_layer=4,
        n_head=4,
        n_kv_head=2,
        window=8,
        local_per_global=1,
        max_seq_len=128,
        boundary_token_id=0,
    )
    return ModelConfig(**{**base, **kw})


def test_model_output_is_unchanged_when_an_earlier_document_changes(monkeypatch):
    monkeypatch.setattr(model_mod, "GLOBAL_CHUNK", 16)
    torch.manual_seed(0)
    model = Transformer(_cfg(kv_share_fraction=0.5)).eval()
    idx = torch.randint(5, 60, (1, 80))
    idx[0, 29] = 0  # document 0 = positions 0..29, document 1 = 30..79
    other = idx.clone()
    other[0, :29] = torch.randint(5, 60, (29,))
    with torch.no_grad():
        a, _, _ = model(idx)
        b, _, _ = model(other)
        torch.testing.assert_close(a[0, 30:], b[0, 30:], atol=1e-5, rtol=1e-5)
        assert not torch.allclose(a[0, :29], b[0, :29])
        # With doc_mask off, the second document does see the first.
        model.config.doc_mask = False
        c, _, _ = model(idx)
        d, _, _ = model(other)
        assert not torch.allclose(c[0, 30:], d[0, 30:], atol=1e-4)


def test_model_backends_agree_on_logits_and_loss(monkeypatch):
    monkeypatch.setattr(model_mod, "GLOBAL_CHUNK", 16)
    torch.manual_seed(0)
    model = Transformer(_cfg()).eval()
    idx = torch.randint(5, 60, (2, 100))
    idx[:, [10, 55]] = 0
    with torch.no_grad():
        ref, ref_loss, _ = model(idx[:, :-1], idx[:, 1:], attention_backend="dense")
        backends = ["chunked"] + (["flex"] if flex_available() else [])
        for backend in backends:
            got, loss, _ = model(idx[:, :-1], idx[:, 1:], attention_backend=backend)
            torch.testing.assert_close(got, ref, atol=ATOL, rtol=RTOL)
            torch.testing.assert_close(loss, ref_loss, atol=ATOL, rtol=RTOL)
    with pytest.raises(ValueError, match="attention backend 'fast'"):
        model(idx, attention_backend="fast")


MEMORY_PROBE = textwrap.dedent(
    """
    import json, re, sys
    import torch
    from training.model import ModelConfig, Transformer
    torch.set_num_threads(1)
    T, backend = int(sys.argv[1]), sys.argv[2]
    cfg = ModelConfig(vocab_size=256, d_model=64, n_layer=4, n_head=4, n_kv_head=2, window=64,
                      local_per_global=3, max_seq_len=T, boundary_token_id=0)
    model = Transformer(cfg).eval()
    idx = torch.randint(1, 256, (1, T), generator=torch.Generator().manual_seed(0))
    idx[0, ::1000] = 0

    def status_kb(field):
        return int(re.search(field + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1))

    # Reset the peak-RSS mark (VmHWM) to the current RSS, so the import's transient peak and
    # library pages evicted since then do not count: the peak is this forward's alone.
    open("/proc/self/clear_refs", "w").write("5")
    base = status_kb("VmRSS")
    with torch.no_grad():
        model(idx, attention_backend=backend)
    print(json.dumps({"peak_mb": (status_kb("VmHWM") - base) / 1024}))
    """
)


def forward_peak_mb(seq_len: int, backend: str) -> float:
    """Peak RSS growth (MB) of one no-grad forward, in a fresh process (VmHWM reset before it)."""
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(seq_len), backend],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=280,
        env={
            "PYTHONPATH": str(ROOT),
            "PATH": "/usr/bin:/bin",
            "OMP_NUM_THREADS": "1",
            "OMP_WAIT_POLICY": "PASSIVE",
            # a fixed mmap threshold: freed tensors go back to the OS, RSS follows live memory
            "MALLOC_MMAP_THRESHOLD_": "65536",
        },
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])["peak_mb"]


@pytest.mark.slow  # over 10 s on a quiet 2-core machine
@pytest.mark.timeout(600)  # three fresh processes; ~15 s on an idle 2-core machine
def test_forward_memory_grows_about_linearly_from_2k_to_8k_tokens():
    small, large = forward_peak_mb(2048, "auto"), forward_peak_mb(8192, "auto")
    # Linear growth gives ~4x (measured ~3.2x); a (T, T) mask grows 16x asymptotically.
    assert large / small <= 5.0, (small, large)
    # The probe sees the difference: one explicit (B, 1, T, T) mask at 8k costs several times more.
    dense = forward_peak_mb(8192, "dense")
    assert dense > 2 * large, (large, dense)
