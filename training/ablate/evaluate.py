"""Score a trained proxy model: bits per byte per language and zero-shot multiple choice.

Bits per byte: every token of a text is predicted (the first after the `<|endoftext|>` boundary),
summed in nats, / ln 2 / the text's UTF-8 bytes; a language's figure is its texts' total nats over
their total bytes, so tokenizers of different arms compare. A text longer than the model's
context is scored in consecutive windows, each starting from the previous window's last token.

Multiple choice, as lm-eval-harness scores it: the log-likelihood of each choice's tokens after
the context (context and choice encoded apart, their ids joined); `acc` picks the highest sum,
`acc_norm` the highest sum per character of the choice. The context is cut from the left to
what fits beside the choice; a choice longer than the model's context (a long URL in a web
text) is scored in consecutive windows as bits per byte is, so no item ends an ablation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from training.ablate.texts import EvalText, Item

IGNORE = -100


@torch.no_grad()
def sequence_logprobs(
    model, seqs: Sequence[list[int]], pad_id: int, batch_size: int
) -> list[list[float]]:
    """Log-probability of every token after the first, per sequence (each fits the model)."""
    out: list[list[float]] = [[] for _ in seqs]
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))  # batch similar lengths
    device = next(model.parameters()).device
    for b in range(0, len(order), batch_size):
        idx = order[b : b + batch_size]
        width = max(len(seqs[i]) for i in idx)
        x = torch.full((len(idx), width), pad_id, dtype=torch.long)
        for row, i in enumerate(idx):
            x[row, : len(seqs[i])] = torch.tensor(seqs[i], dtype=torch.long)
        x = x.to(device)
        logits, _, _ = model(x[:, :-1])
        logp = F.log_softmax(logits.float(), dim=-1)
        picked = logp.gather(-1, x[:, 1:].unsqueeze(-1)).squeeze(-1).cpu()
        for row, i in enumerate(idx):
            out[i] = picked[row, : len(seqs[i]) - 1].tolist()
    return out


def _windows(ids: list[int], width: int) -> list[list[int]]:
    """Consecutive windows of at most `width` tokens that together predict every id after the
    first; each window starts with the token before its first prediction."""
    return [ids[s : s + width] for s in range(0, max(len(ids) - 1, 1), width - 1)]


def bits_per_byte(
    model, tok, texts: list[EvalText], special: dict[str, int], width: int, batch_size: int
) -> dict[str, dict[str, float]]:
    """Per language: bpb, nats, bytes, tokens and texts."""
    seqs, owner = [], []
    for n, t in enumerate(texts):
        ids = [special["boundary"], *tok.encode(t.text, add_special_tokens=False).ids]
        for w in _windows(ids, width):
            seqs.append(w)
            owner.append(n)
    logps = sequence_logprobs(model, seqs, special["pad"], batch_size)
    per: dict[str, dict[str, float]] = {}
    for n, lp in zip(owner, logps, strict=True):
        lang = texts[n].lang
        d = per.setdefault(lang, {"nats": 0.0, "tokens": 0, "bytes": 0, "texts": 0})
        d["nats"] -= sum(lp)
        d["tokens"] += len(lp)
    for t in texts:
        per[t.lang]["bytes"] += len(t.text.encode("utf-8"))
        per[t.lang]["texts"] += 1
    for d in per.values():
        d["bpb"] = d["nats"] / math.log(2) / d["bytes"]
    return per


def choice_loglik(
    model, tok, items: list[Item], special: dict[str, int], width: int, batch_size: int
) -> list[list[float]]:
    """Sum log-likelihood of each choice's tokens after its item's context."""
    seqs, owner, spans = [], [], []
    for item in items:
        ctx = [special["boundary"], *tok.encode(item.context, add_special_tokens=False).ids]
        for choice in item.choices:
            cont = tok.encode(choice, add_special_tokens=False).ids or [special["pad"]]
            keep = max(width - len(cont), 1)  # the context's end, as much as fits
            for w in _windows(ctx[-keep:] + cont, width):  # one window unless cont > width - 1
                seqs.append(w)
                owner.append(len(spans))
            spans.append(len(cont))
    logps = sequence_logprobs(model, seqs, special["pad"], batch_size)
    joined: list[list[float]] = [[] for _ in spans]
    for n, lp in zip(owner, logps, strict=True):
        joined[n].extend(lp)
    sums = [sum(lp[-n:]) for lp, n in zip(joined, spans, strict=True)]
    out, k = [], 0
    for item in items:
        out.append(sums[k : k + len(item.choices)])
        k += len(item.choices)
    return out


def score_items(items: list[Item], lls: list[list[float]]) -> dict[str, dict[str, float]]:
    """acc and acc_norm (per character) per task and per task/language."""
    out: dict[str, dict[str, float]] = {}
    for item, ll in zip(items, lls, strict=True):
        best = max(range(len(ll)), key=ll.__getitem__)
        norm = [v / max(len(c), 1) for v, c in zip(ll, item.choices, strict=True)]
        best_norm = max(range(len(norm)), key=norm.__getitem__)
        for key in (item.task, f"{item.task}/{item.lang}"):
            d = out.setdefault(key, {"acc": 0.0, "acc_norm": 0.0, "n": 0, "chance": 0.0})
            d["acc"] += best == item.answer
            d["acc_norm"] += best_norm == item.answer
            d["chance"] += 1 / len(item.choices)
            d["n"] += 1
    for d in out.values():
        for k in ("acc", "acc_norm", "chance"):
            d[k] /= d["n"]
    return out


def evaluate_run(
    run_dir: Path,
    tokenizer: Path,
    sets: dict[str, tuple[list[EvalText], list[Item]]],
    seq_len: int,
    batch_size: int,
) -> dict[str, Any]:
    """Every figure of one trained run on every eval set: {set: {bpb: {lang: ..}, tasks: {..}}}.
    Windows are the mixture's `seq_len` tokens, the length the model trained on."""
    from training.longctx import load_model_for_eval
    from training.tokenizer import load_tokenizer, special_token_ids

    tok = load_tokenizer(tokenizer)
    special = special_token_ids(tok, tokenizer)
    model, _ = load_model_for_eval(run_dir, tokenizer=tokenizer)
    model.eval()
    width = min(seq_len, model.config.max_seq_len + 1)
    out = {}
    for name, (texts, items) in sets.items():
        bpb = bits_per_byte(model, tok, texts, special, width, batch_size)
        tasks = (
            score_items(items, choice_loglik(model, tok, items, special, width, batch_size))
            if items
            else {}
        )
        out[name] = {"bpb": bpb, "tasks": tasks}
    return out
