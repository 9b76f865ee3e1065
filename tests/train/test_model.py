"""Each architectural option of training/model.py against a plain reference implementation."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from training.model import (
    Attention,
    ModelConfig,
    MoE,
    Transformer,
    apply_rope,
    rope_cos_sin,
    sliding_window_mask,
)

pytestmark = pytest.mark.timeout(60)


def naive_attention(q, k, v, window=None):
    """Softmax attention with explicit loops over queries and keys (keys repeated per head group)."""
    B, H, T, D = q.shape
    group = H // k.size(1)
    out = torch.zeros_like(q)
    for b in range(B):
        for h in range(H):
            kh, vh = k[b, h // group], v[b, h // group]
            for i in range(T):
                keys = [j for j in range(T) if j <= i and (window is None or i - j < window)]
                scores = torch.stack([q[b, h, i] @ kh[j] for j in keys]) / math.sqrt(D)
                w = torch.softmax(scores, 0)
                out[b, h, i] = sum(w[n] * vh[j] for n, j in enumerate(keys))
    return out


def cfg(**kw) -> ModelConfig:
    base = dict(
        vocab_size=50, d_model=32, n_layer=4, n_head=4, n_kv_head=2, window=4, max_seq_len=64
    )
    return ModelConfig(**{**base, **kw})


def test_sliding_window_mask_allows_exactly_the_last_window_keys():
    m = sliding_window_mask(6, 3, torch.device("cpu"))
    for i in range(6):
        assert [j for j in range(6) if m[i, j]] == list(range(max(0, i - 2), i + 1))


def test_local_layer_matches_naive_windowed_attention_loop():
    torch.manual_seed(0)
    c = cfg(local_per_global=3)
    attn = Attention(c, layer=0)
    assert not attn.is_global
    x = torch.randn(2, 10, c.d_model)
    rope = rope_cos_sin(10, c.head_dim, c.rope_base, x.device)
    out, _ = attn(x, rope)
    q = apply_rope(attn.q_proj(x).view(2, 10, 4, 8).transpose(1, 2), *rope)
    k = apply_rope(attn.k_proj(x).view(2, 10, 2, 8).transpose(1, 2), *rope)
    v = attn.v_proj(x).view(2, 10, 2, 8).transpose(1, 2)
    ref = attn.o_proj(naive_attention(q, k, v, window=c.window).transpose(1, 2).reshape(2, 10, -1))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)


def test_gqa_matches_multi_head_attention_with_repeated_kv():
    torch.manual_seed(0)
    c = cfg(local_per_global=0)  # every layer global: plain causal attention
    attn = Attention(c, layer=0)
    assert attn.is_global
    x = torch.randn(2, 12, c.d_model)
    out, _ = attn(x, rope_cos_sin(12, c.head_dim, c.rope_base, x.device))
    q = attn.q_proj(x).view(2, 12, 4, 8).transpose(1, 2)
    k = attn.k_proj(x).view(2, 12, 2, 8).transpose(1, 2).repeat_interleave(2, dim=1)
    v = attn.v_proj(x).view(2, 12, 2, 8).transpose(1, 2).repeat_interleave(2, dim=1)
    mha = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # 4 KV heads = standard MHA
    ref = attn.o_proj(mha.transpose(1, 2).reshape(2, 12, -1))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)


def test_global_layer_is_nope_and_local_layer_uses_rope():
    torch.manual_seed(0)
    c = cfg(local_per_global=1, window=64)  # window >= T: only RoPE separates local from global
    x = torch.randn(1, 8, c.d_model)
    rope = rope_cos_sin(8, c.head_dim, c.rope_base, x.device)
    for layer, expect_rope in ((0, True), (1, False)):
        attn = Attention(c, layer)
        out, (k, _) = attn(x, rope)
        raw_q = attn.q_proj(x).view(1, 8, 4, 8).transpose(1, 2)
        raw_k = attn.k_proj(x).view(1, 8, 2, 8).transpose(1, 2)
        no_rope = attn.o_proj(
            naive_attention(raw_q, raw_k, attn.v_proj(x).view(1, 8, 2, 8).transpose(1, 2))
            .transpose(1, 2)
            .reshape(1, 8, -1)
        )
        assert torch.allclose(out, no_rope, atol=1e-5) is not expect_rope
        assert torch.allclose(k, raw_k) is not expect_rope


def test_rope_matches_complex_number_formula():
    torch.manual_seed(0)
    T, D, base = 7, 16, 500.0
    x = torch.randn(2, 3, T, D)
    got = apply_rope(x, *rope_cos_sin(T, D, base, x.device))
    z = torch.complex(x[..., : D // 2].double(), x[..., D // 2 :].double())
    theta = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    rot = torch.exp(1j * torch.arange(T, dtype=torch.float64)[:, None] * theta[None, :])
    ref = torch.cat([(z * rot).real, (z * rot).imag], dim=-1).float()
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


def test_kv_sharing_pairs_each_shared_layer_with_same_pattern_position_in_first_block():
    c = cfg(n_layer=8, kv_share_fraction=0.375)
    assert [c.kv_source(i) for i in range(8)] == [None] * 5 + [1, 2, 3]
    assert all(c.is_global(i) == c.is_global(c.kv_source(i)) for i in range(5, 8))
    model = Transformer(c)
    assert not hasattr(model.layers[5].attn, "k_proj") and hasattr(model.layers[4].attn, "k_proj")
    with pytest.raises(ValueError, match="kv_share_fraction"):
        cfg(n_layer=4, kv_share_fraction=0.75)  # layer 1's pattern position has no partner left


def test_kv_sharing_model_matches_explicit_kv_reuse():
    torch.manual_seed(0)
    c = cfg(n_layer=8, kv_share_fraction=0.375)
    model = Transformer(c).eval()
    idx = torch.randint(0, c.vocab_size, (2, 12))
    logits, _, _ = model(idx)
    # Reference: run layers by hand, feeding each shared layer the stored (k, v) of its partner.
    rope = rope_cos_sin(12, c.head_dim, c.rope_base, idx.device)
    x, saved = model.embed(idx), {}
    for i, layer in enumerate(model.layers):
        partner = {5: 1, 6: 2, 7: 3}.get(i)
        h = layer.attn_norm(x)
        if partner is None:
            a, saved[i] = layer.attn(h, rope)
        else:
            q = layer.attn.q_proj(h).view(2, 12, 4, 8).transpose(1, 2)
            if not c.is_global(i):
                q = apply_rope(q, *rope)
            k, v = saved[partner]
            y = naive_attention(q, k, v, window=None if c.is_global(i) else c.window)
            a = layer.attn.o_proj(y.transpose(1, 2).reshape(2, 12, -1))
        x = x + a
        x = x + layer.ffn(layer.ffn_norm(x))
    ref = model.lm_head(model.norm(x))
    torch.testing.assert_close(logits, ref, atol=1e-4, rtol=1e-4)


def test_moe_top_k_matches_naive_per_token_loop_and_drops_no_token():
    torch.manual_seed(0)
    c = cfg(moe_experts=4, moe_top_k=2, moe_hidden=16)
    moe = MoE(c)
    x = torch.randn(3, 5, c.d_model)
    out, aux = moe(x)
    flat = x.reshape(-1, c.d_model)
    ref = torch.zeros_like(flat)
    probs = torch.softmax(moe.router(flat), -1)
    for n in range(flat.size(0)):
        w, e = probs[n].topk(2)
        w = w / w.sum()
        for weight, expert in zip(w, e, strict=True):
            ref[n] += weight * moe.experts[int(expert)](flat[n : n + 1])[0]
    torch.testing.assert_close(out.reshape(-1, c.d_model), ref, atol=1e-5, rtol=1e-4)
    assert (out.reshape(-1, c.d_model).abs().sum(-1) > 0).all()  # every token got expert output
    chosen = probs.topk(2, -1).indices.reshape(-1)
    fraction = torch.stack([(chosen == e).float().mean() for e in range(4)])
    torch.testing.assert_close(aux, 4 * (fraction * probs.mean(0)).sum())


def test_moe_layers_are_every_other_layer_and_aux_loss_reaches_the_output():
    c = cfg(moe_experts=4, moe_hidden=16)
    model = Transformer(c)
    assert [isinstance(layer.ffn, MoE) for layer in model.layers] == [False, True, False, True]
    _, loss, aux = model(torch.randint(0, 50, (2, 9)), torch.randint(0, 50, (2, 9)))
    assert loss is not None and aux.item() >= 2 * 0.99  # two MoE layers, each >= ~1


def test_image_embeds_replace_placeholder_positions_only():
    torch.manual_seed(0)
    c = cfg(image_embed_dim=6, image_token_id=7)
    model = Transformer(c).eval()
    idx = torch.tensor([[5, 7, 7, 9, 11], [7, 3, 4, 5, 6]])
    emb = torch.randn(3, 6)
    x = model.embed_tokens(idx, emb)
    torch.testing.assert_close(x[0, 1], model.image_proj(emb[0]))
    torch.testing.assert_close(x[1, 0], model.image_proj(emb[2]))
    torch.testing.assert_close(x[0, 0], model.embed.weight[5])
    logits_a, _, _ = model(idx, image_embeds=emb)
    logits_b, _, _ = model(idx, image_embeds=emb + 1)
    assert torch.equal(logits_a[0, 0], logits_b[0, 0])  # causal: before the first image token
    assert not torch.allclose(logits_a[0, 1:], logits_b[0, 1:])
    with pytest.raises(ValueError, match="one row per image"):
        model(idx, image_embeds=torch.randn(2, 6))


@pytest.mark.parametrize("tie", [True, False])
def test_tied_and_untied_embeddings_train_a_step(tie):
    torch.manual_seed(0)
    model = Transformer(cfg(tie_embeddings=tie))
    assert (model.lm_head.weight is model.embed.weight) is tie
    idx = torch.randint(0, 50, (2, 16))
    _, loss, _ = model(idx[:, :-1], idx[:, 1:])
    loss.backward()
    assert model.embed.weight.grad is not None and torch.isfinite(loss)


def test_config_errors_name_the_problem():
    with pytest.raises(ValueError, match="n_kv_head"):
        cfg(n_kv_head=3)
    with pytest.raises(ValueError, match="max_seq_len"):
        Transformer(cfg())(torch.zeros(1, 65, dtype=torch.long))
