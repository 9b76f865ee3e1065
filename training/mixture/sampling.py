"""Sampling arithmetic: temperature shares, epoch caps with redistribution, repetition, stage split.

Pure functions over numbers and NumPy arrays so each rule can be checked against hand-computed cases.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

EPS = 1e-9


def temperature_shares(available: Mapping[str, float], temperature: float) -> dict[str, float]:
    """p_g ∝ n_g^(1/T) over groups with data; T=1 keeps natural proportions, larger T flattens them."""
    if not 0 < temperature < math.inf:
        raise ValueError(f"temperature must be a finite number > 0, got {temperature}")
    try:
        raw = {g: (n ** (1.0 / temperature) if n > 0 else 0.0) for g, n in available.items()}
    except OverflowError:
        raw = {g: math.inf for g in available}
    if any(math.isinf(v) for v in raw.values()):  # a small T: the same shares, in log space
        logs = {g: math.log(n) / temperature for g, n in available.items() if n > 0}
        top = max(logs.values())
        raw = {
            g: (0.0 if g not in logs else 1.0 if logs[g] == top else math.exp(logs[g] - top))
            for g in available
        }
    total = sum(raw.values())
    return {g: (v / total if total > 0 else 0.0) for g, v in raw.items()}


def cap_targets(
    targets: Mapping[str, float], available: Mapping[str, float], max_epochs: float | None
) -> tuple[dict[str, float], float]:
    """Cap each target at max_epochs × available (None: no cap; empty groups always cap at 0); move the excess to uncapped groups in proportion
    to their targets, repeating until no group exceeds its cap. Returns (targets, unplaceable shortfall)."""
    # A group with no data can take nothing, even without an epoch cap.
    limit = float("inf") if max_epochs is None else max_epochs
    caps = {g: (limit * available[g] if available.get(g, 0) > 0 else 0.0) for g in targets}
    total = sum(targets.values())
    capped: set[str] = set()
    out = dict(targets)
    while True:
        free = [g for g in targets if g not in capped]
        remaining = total - sum(caps[g] for g in capped)
        base = sum(targets[g] for g in free)
        for g in capped:
            out[g] = caps[g]
        for g in free:
            out[g] = remaining * targets[g] / base if base > 0 else 0.0
        newly = [g for g in free if out[g] > caps[g] * (1 + EPS) + EPS]
        if not newly:
            shortfall = remaining if base <= 0 else 0.0
            return out, max(shortfall, 0.0)
        capped.update(newly)


def largest_remainder(targets: Mapping[str, float]) -> dict[str, int]:
    """Round float targets to integers that sum to round(sum(targets)) (largest-remainder method)."""
    floors = {k: math.floor(v) for k, v in targets.items()}
    missing = round(sum(targets.values())) - sum(floors.values())
    order = sorted(targets, key=lambda k: (-(targets[k] - floors[k]), k))
    for k in order[: max(missing, 0)]:
        floors[k] += 1
    return floors


def repetition_plan(
    lengths: np.ndarray, weights: np.ndarray, target: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Choose document copies totalling exactly `target` tokens (when any data exists).

    Document d is wanted c_d = r·w_d times, r = target / Σ w·n. It gets floor(c_d) whole copies;
    the remaining tokens come from a weighted sample without replacement (weights = fractional parts,
    Efraimidis–Spirakis keys), the last chosen document cut to fit. Returns (doc indices, copy lengths).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    effective = float(np.dot(weights, lengths))
    if target <= 0 or effective <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    counts = (target / effective) * weights
    whole = np.floor(counts + EPS).astype(np.int64)
    frac = np.clip(counts - whole, 0.0, 1.0)
    need = target - int(np.dot(whole, lengths))
    docs = [np.repeat(np.arange(len(lengths), dtype=np.int64), whole)]
    lens = [np.repeat(lengths, whole)]
    if need < 0:  # float rounding gave one whole copy too many: trim from the end
        docs, lens = [docs[0]], [lens[0].copy()]
        while need < 0 and len(lens[0]):
            cut = min(-need, int(lens[0][-1]))
            lens[0][-1] -= cut
            need += cut
            if lens[0][-1] == 0:
                docs[0], lens[0] = docs[0][:-1], lens[0][:-1]
    u = rng.random(len(lengths))
    cand = np.nonzero((frac > 0) & (lengths > 0))[0]
    keys = -np.log1p(-u[cand]) / frac[cand]  # exponential race: smaller key = chosen earlier
    order = cand[np.argsort(keys, kind="stable")]
    if need > 0 and len(order):
        cum = np.cumsum(lengths[order])
        k = int(np.searchsorted(cum, need, side="left"))
        chosen = order[: k + 1]
        chosen_lens = lengths[chosen].copy()
        chosen_lens[-1] -= int(cum[min(k, len(cum) - 1)]) - need if k < len(cum) else 0
        docs.append(chosen)
        lens.append(chosen_lens)
    d, n = np.concatenate(docs), np.concatenate(lens)
    keep = n > 0
    return d[keep], n[keep]


def cut_at_stages(
    lengths: np.ndarray, stage_tokens: Sequence[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Cut (already shuffled) copies into stage pieces whose token totals follow `stage_tokens`.

    The copies are laid end to end and cut at the stage boundaries (integer token counts by
    largest remainder): a copy that straddles a boundary becomes two pieces, its head in one stage
    and the rest in the next, as packing continues a long document in the next sequence. Returns
    (copy index, start within the copy, length, stage) per piece, in copy order; no empty pieces.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    want = np.asarray(stage_tokens, dtype=np.float64)
    n = len(lengths)
    whole = np.arange(n, dtype=np.int64)
    if n == 0 or want.sum() <= 0:
        return whole, np.zeros(n, np.int64), lengths.copy(), np.zeros(n, np.int64)
    total = int(lengths.sum())
    quota = largest_remainder(dict(enumerate((want / want.sum() * total).tolist())))
    bounds = np.cumsum([quota[s] for s in range(len(want))]).astype(np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    cuts: dict[int, list[int]] = {}
    for b in bounds[:-1].tolist():
        j = int(np.searchsorted(ends, b, side="right"))
        if j < n and starts[j] < b:
            cuts.setdefault(j, []).append(b - int(starts[j]))
    count = np.ones(n, dtype=np.int64)
    for j, at in cuts.items():
        count[j] += len(at)
    copy = np.repeat(whole, count)
    start = np.zeros(len(copy), dtype=np.int64)
    first = np.cumsum(count) - count  # each copy's first piece
    for j, at in cuts.items():
        start[first[j] + 1 : first[j] + 1 + len(at)] = at
    stop = np.append(start[1:], 0)
    last = np.append(copy[1:] != copy[:-1], True)
    stop[last] = lengths[copy[last]]
    length = stop - start
    stage = np.searchsorted(bounds, starts[copy] + start, side="right")
    keep = length > 0
    stage = np.minimum(stage[keep], len(want) - 1).astype(np.int64)
    return copy[keep], start[keep], length[keep], stage
