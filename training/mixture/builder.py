"""Build a mixture: tokenize sources, hold out eval documents, sample to the spec's targets, pack, shard.

`build_mixture` runs everything in process. The Beam pipeline (`pipelines/beam/mix.py`) tokenizes
the same `ReadUnit`s on workers and then calls `assemble` here, so both give identical shards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from training.mixture.packing import PackStats, TokenStore, pack_sequences, save_array
from training.mixture.sampling import (
    cap_targets,
    largest_remainder,
    repetition_plan,
    split_by_stage,
    temperature_shares,
)
from training.mixture.sources import (
    ALL_GROUP,
    DocBatch,
    ReadUnit,
    plan_units,
    source_files,
    tokenize_unit,
)
from training.mixture.spec import MixtureSpec, SpecError, TokenizerTrain, load_spec, resolve_path
from training.tokenizer import load_tokenizer, sample_texts, special_token_ids, train_tokenizer

MANIFEST_VERSION = 1


def _rng(seed: int, *tags: str | int) -> np.random.Generator:
    """A generator keyed by seed and names (crc32 keeps it stable across processes and runs)."""
    return np.random.default_rng(
        [seed, *(t if isinstance(t, int) else zlib.crc32(t.encode()) for t in tags)]
    )


@dataclass
class Corpus:
    """All candidate documents of a spec, tokenized, with their bucket/source/group labels."""

    store: TokenStore
    bucket: np.ndarray  # object array of bucket names
    source: np.ndarray  # int64 source index within its bucket
    group: np.ndarray  # object array of group names
    repeat: np.ndarray  # float64 per-document repetition weight

    @classmethod
    def from_batches(cls, units: Sequence[ReadUnit], batches: Sequence[DocBatch]) -> Corpus:
        """Concatenate tokenized units in unit order (a single unit's arrays are used as they are)."""
        lengths = _concat([b.lengths for b in batches], np.int64)
        tokens = _concat([b.tokens for b in batches], np.uint32)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        n = [len(b.lengths) for b in batches]
        return cls(
            store=TokenStore(tokens, offsets),
            bucket=np.repeat(np.array([u.bucket for u in units], dtype=object), n),
            source=np.repeat(np.array([u.source for u in units], dtype=np.int64), n),
            group=np.array([g for b in batches for g in b.groups], dtype=object),
            repeat=_concat([b.repeat for b in batches], np.float64),
        )


def _concat(arrays: Sequence[np.ndarray], dtype) -> np.ndarray:
    """np.concatenate as dtype, without copying a lone array that already has it."""
    if len(arrays) == 1:
        return np.asarray(arrays[0]).astype(dtype, copy=False)
    return np.concatenate(arrays or [np.zeros(0, dtype)]).astype(dtype, copy=False)


def prepare_tokenizer(
    spec: MixtureSpec, spec_dir: Path, out_dir: Path, lake_root: Path | None = None
) -> Path:
    """Copy the spec's tokenizer into out_dir/tokenizer.json, or train one there."""
    dest = out_dir / "tokenizer.json"
    out_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(spec.tokenizer, TokenizerTrain):
        cfg = spec.tokenizer.train
        if cfg.sources:
            files = sorted(
                {f for p in cfg.sources for f in _glob(resolve_path(p, spec_dir, lake_root))}
            )
        else:
            files = sorted({f for b, bs in spec.buckets.items() for i in range(len(bs.sources))
                            for f in source_files(spec, b, i, spec_dir, lake_root)})  # fmt: skip
        if not files:
            raise SpecError(
                "tokenizer.train.sources: no source file exists to train the tokenizer on"
            )
        texts = sample_texts([Path(f) for f in files], cfg.sample_tokens, seed=spec.seed)
        return train_tokenizer(texts, cfg.vocab_size, dest)
    src = resolve_path(spec.tokenizer, spec_dir, lake_root)
    if not src.exists():
        raise SpecError(
            f"tokenizer: {spec.tokenizer} (resolved to {src}) does not exist; run `refinery tokenizer train --out {src}`"
        )
    load_tokenizer(src)
    if src.resolve() != dest.resolve():
        shutil.copyfile(src, dest)
    return dest


def _glob(path: Path) -> list[str]:
    import glob

    return sorted(glob.glob(str(path)))


def build_mixture(
    spec_path: str | Path, out_dir: str | Path, *, lake_root: Path | None = None
) -> dict[str, Any]:
    """Build a mixture in process; return its manifest."""
    spec_path, out_dir = Path(spec_path), Path(out_dir)
    spec = load_spec(spec_path)
    tok_path = prepare_tokenizer(spec, spec_path.parent, out_dir, lake_root)
    tok = load_tokenizer(tok_path)
    units = plan_units(spec, spec_path.parent, lake_root)
    batches = [tokenize_unit(u, tok) for u in units]
    return assemble(spec, spec_path, units, batches, out_dir, lake_root)


def _holdout(lengths: np.ndarray, spec: MixtureSpec, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of documents held out for eval: a seeded pick filling the eval sequences, within budget."""
    mask = np.zeros(len(lengths), dtype=bool)
    want = spec.eval.sequences_per_group * spec.seq_len
    budget = spec.eval.max_fraction * float(lengths.sum())
    if want == 0 or len(lengths) < 2:
        return mask
    used_slots, used_tokens = 0, 0
    for i in rng.permutation(len(lengths)):
        n = int(lengths[i])
        if used_slots >= want or used_tokens + n > budget:
            break
        mask[i] = True
        used_slots += n + 1
        used_tokens += n
    return mask


def _pools(spec: MixtureSpec, bucket: str, corpus: Corpus, idx: np.ndarray, target: float):
    """Split a bucket's training documents into sampling pools and give each a float target."""
    bs = spec.buckets[bucket]
    if bs.sources[0].weight is not None:  # per-source weights: one pool per source
        keys = [(ALL_GROUP, i) for i in range(len(bs.sources))]
        members = {k: idx[corpus.source[idx] == k[1]] for k in keys}
        targets = {k: target * (bs.sources[k[1]].weight or 0.0) for k in keys}
    else:
        groups = sorted(set(corpus.group[idx].tolist())) if bs.split_by else [ALL_GROUP]
        keys = [(g, None) for g in groups]
        members = {k: idx[corpus.group[idx] == k[0]] if bs.split_by else idx for k in keys}
        avail = {k: float(corpus.store.lengths[m].sum()) for k, m in members.items()}
        shares = temperature_shares(avail, bs.temperature)
        targets = {k: target * shares[k] for k in keys} if keys else {}
        if not keys and target > 0:
            keys, members, targets = (
                [(ALL_GROUP, None)],
                {(ALL_GROUP, None): idx},
                {(ALL_GROUP, None): target},
            )
    return keys, members, targets


def assemble(
    spec: MixtureSpec,
    spec_path: Path,
    units: Sequence[ReadUnit],
    batches: Sequence[DocBatch],
    out_dir: Path,
    lake_root: Path | None = None,
) -> dict[str, Any]:
    """Sample, shuffle, pack and write shards, eval sets and manifest.json from tokenized units."""
    from training.mixture.report import accounting_checks

    out_dir = Path(out_dir)
    tok = load_tokenizer(out_dir / "tokenizer.json")
    special = special_token_ids(tok)
    corpus = Corpus.from_batches(units, batches)
    lengths = corpus.store.lengths
    spans = spec.stage_spans()
    eff = spec.effective_weights()
    bucket_targets = largest_remainder({b: eff[b] * spec.total_tokens for b in spec.buckets})
    buckets_out: dict[str, Any] = {}
    sources_out: list[dict[str, Any]] = []
    shortfalls: list[dict[str, Any]] = []
    eval_docs: list[tuple[str, str, np.ndarray]] = []
    stage_copies: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in spans]

    for bucket, bs in spec.buckets.items():
        in_bucket = np.nonzero(corpus.bucket == bucket)[0]
        for i, src in enumerate(bs.sources):
            m = in_bucket[corpus.source[in_bucket] == i]
            sources_out.append({"bucket": bucket, "index": i, "path": src.path, "where": src.where,
                                "weight": src.weight, "documents": int(len(m)),
                                "available_tokens": int(lengths[m].sum()), "tokens": 0})  # fmt: skip
            if len(m) == 0 and not src.optional:
                raise SpecError(
                    f"buckets.{bucket}.sources[{i}]: {src.path} offers no rows with training_allowed = true"
                    + (f" matching where {src.where!r}" if src.where else "")
                    + "; loosen the predicate, fix the path, or mark the source `optional: true`"
                )
        # Hold out eval documents per group before sampling, so they never reach a shard.
        held = np.zeros(len(in_bucket), dtype=bool)
        group_names = sorted(set(corpus.group[in_bucket].tolist())) if bs.split_by else [ALL_GROUP]
        groups_out: dict[str, Any] = {}
        for g in group_names:
            sel = (
                np.nonzero(corpus.group[in_bucket] == g)[0]
                if bs.split_by
                else np.arange(len(in_bucket))
            )
            mask = _holdout(lengths[in_bucket[sel]], spec, _rng(spec.seed, "eval", bucket, g))
            held[sel[mask]] = True
            if mask.any():
                eval_docs.append((bucket, g, in_bucket[sel[mask]]))
            groups_out[g] = {"available_tokens": int(lengths[in_bucket[sel]].sum()),
                             "heldout_tokens": int(lengths[in_bucket[sel[mask]]].sum()),
                             "target_tokens": 0, "tokens": 0, "epochs": 0.0}  # fmt: skip
        train_idx = in_bucket[~held]
        keys, members, targets = _pools(spec, bucket, corpus, train_idx, bucket_targets[bucket])
        avail = {k: float(lengths[members[k]].sum()) for k in keys}
        capped, _ = cap_targets(targets, avail, bs.max_epochs)
        int_targets = largest_remainder(capped)
        stage_want = [frac * w[bucket] * spec.total_tokens for _, frac, w in spans]
        placed = 0
        for k in keys:
            pool = members[k]
            d, n = repetition_plan(
                lengths[pool],
                corpus.repeat[pool],
                int_targets[k],
                _rng(spec.seed, "sample", bucket, str(k)),
            )
            perm = _rng(spec.seed, "order", bucket, str(k)).permutation(len(d))
            d, n = pool[d[perm]], n[perm]
            stage = split_by_stage(n, stage_want)
            for s in range(len(spans)):
                stage_copies[s].append((d[stage == s], n[stage == s]))
            g = groups_out.setdefault(
                k[0],
                {
                    "available_tokens": 0,
                    "heldout_tokens": 0,
                    "target_tokens": 0,
                    "tokens": 0,
                    "epochs": 0.0,
                },
            )
            g["target_tokens"] += int(int_targets[k])
            g["tokens"] += int(n.sum())
            placed += int(n.sum())
            for src in sources_out:
                if src["bucket"] == bucket:
                    src["tokens"] += int(n[corpus.source[d] == src["index"]].sum())
                    if k[1] == src["index"]:
                        src["target_tokens"] = int(int_targets[k])
        for g in groups_out.values():
            train_avail = g["available_tokens"] - g["heldout_tokens"]
            g["epochs"] = round(g["tokens"] / train_avail, 6) if train_avail else 0.0
        missing = bucket_targets[bucket] - placed
        if missing > 0:
            shortfalls.append(
                _shortfall(spec, bucket, bucket_targets[bucket], placed, len(in_bucket))
            )
        buckets_out[bucket] = {"weight": eff[bucket], "modality": bs.modality, "target_tokens": int(bucket_targets[bucket]),
                               "tokens": placed, "groups": groups_out}  # fmt: skip

    if shortfalls and not spec.allow_shortfall:
        lines = "\n".join(f"  buckets.{s['bucket']}: {s['reason']}" for s in shortfalls)
        raise SpecError(f"{spec_path}: not enough data for the requested tokens\n{lines}\n"
                        "  (lower total_tokens or the weight, raise max_epochs, or set allow_shortfall: true)")  # fmt: skip

    shards, stages_out, stats = _write_shards(
        spec, corpus.store, stage_copies, spans, special, out_dir
    )
    evals = _write_eval(spec, corpus.store, eval_docs, special, out_dir)
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "name": spec.name,
        "spec_sha256": spec.sha256(),
        "seq_len": spec.seq_len,
        "total_tokens": spec.total_tokens,
        "seed": spec.seed,
        "tolerance": spec.tolerance,
        "tokenizer": "tokenizer.json",
        "vocab_size": tok.get_vocab_size(),
        "special_tokens": special,
        "dtype": "uint32",
        "buckets": buckets_out,
        "sources": sources_out,
        "stages": stages_out,
        "shortfalls": shortfalls,
        "num_sequences": stats.sequences,
        "tokens": stats.doc_tokens,
        "boundary_tokens": stats.boundary_tokens,
        "padding_tokens": stats.padding_tokens,
        "waste_fraction": stats.padding_tokens / max(stats.sequences * spec.seq_len, 1),
        "shards": shards,
        "eval": evals,
        "spec": spec.model_dump(mode="json"),
    }
    manifest["checks"] = accounting_checks(manifest)
    tmp = out_dir / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=False))
    os.replace(tmp, out_dir / "manifest.json")
    return manifest


def _shortfall(
    spec: MixtureSpec, bucket: str, target: int, placed: int, docs: int
) -> dict[str, Any]:
    bs = spec.buckets[bucket]
    if docs == 0:
        reason = f"no data: every source is missing or empty (wanted {target:,} tokens)"
    else:
        cap = f"max_epochs={bs.max_epochs:g} allows" if bs.max_epochs else "the data holds"
        reason = (
            f"{target:,} tokens requested but {cap} only {placed:,} (short {target - placed:,})"
        )
    return {"bucket": bucket, "target_tokens": target, "tokens": placed, "missing_tokens": target - placed,
            "fraction_missing": (target - placed) / target if target else 0.0, "reason": reason}  # fmt: skip


def _clean(dirpath: Path) -> None:
    """Remove arrays of a previous build so no stale shard survives in the directory."""
    if dirpath.exists():
        for f in dirpath.glob("*.npy"):
            f.unlink()
    dirpath.mkdir(parents=True, exist_ok=True)


def _write_shards(spec, store, stage_copies, spans, special, out_dir: Path):
    _clean(out_dir / "shards")
    shards, stages_out, stats = [], [], PackStats()
    for s, (name, frac, _) in enumerate(spans):
        d = np.concatenate([c[0] for c in stage_copies[s]] or [np.zeros(0, np.int64)])
        n = np.concatenate([c[1] for c in stage_copies[s]] or [np.zeros(0, np.int64)])
        perm = _rng(spec.seed, "shuffle", name).permutation(len(d))  # the global shuffle of a stage
        first = stats.sequences
        before = stats.doc_tokens
        for block in pack_sequences(store, d[perm], n[perm], spec.seq_len, special["boundary"], special["pad"],
                                    spec.shard_sequences, stats):  # fmt: skip
            rel = f"shards/{len(shards):05d}.npy"
            shards.append(
                {
                    "path": rel,
                    "num_sequences": int(block.shape[0]),
                    "sha256": save_array(block, out_dir / rel),
                    "stage": name,
                }
            )
        stages_out.append({"name": name, "fraction": frac, "first_sequence": first,
                           "num_sequences": stats.sequences - first, "tokens": stats.doc_tokens - before})  # fmt: skip
    return shards, stages_out, stats


def _write_eval(spec, store, eval_docs, special, out_dir: Path) -> list[dict[str, Any]]:
    _clean(out_dir / "eval")
    out = []
    for bucket, group, docs in eval_docs:
        stats = PackStats()
        blocks = list(pack_sequences(store, docs, store.lengths[docs], spec.seq_len, special["boundary"],
                                     special["pad"], max(spec.eval.sequences_per_group, 1), stats))  # fmt: skip
        arr = np.concatenate(blocks)[: spec.eval.sequences_per_group]
        rel = f"eval/{bucket}.{re.sub(r'[^A-Za-z0-9_-]', '_', group)}.npy"
        save_array(arr, out_dir / rel)
        out.append({"bucket": bucket, "group": group, "path": rel, "num_sequences": int(arr.shape[0]),
                    "documents": int(len(docs)), "tokens": int(store.lengths[docs].sum())})  # fmt: skip
    return out
