"""Packing: concatenate document copies with a boundary token and cut into `seq_len` sequences.

Every document copy is followed by the boundary token (`<|endoftext|>`); documents longer than
the space left in a sequence continue in the next one, so only the very last sequence of a
stream is padded (with `<|pad|>`). Waste = padding / all slots.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class TokenStore:
    """Every candidate document's tokens: one uint32 array plus offsets (doc i = tokens[off[i]:off[i+1]])."""

    tokens: np.ndarray
    offsets: np.ndarray

    def doc(self, i: int, length: int | None = None) -> np.ndarray:
        """Tokens of document i (its first `length` tokens when given)."""
        start = int(self.offsets[i])
        stop = int(self.offsets[i + 1]) if length is None else start + int(length)
        return self.tokens[start:stop]

    @property
    def lengths(self) -> np.ndarray:
        """Token count of each document."""
        return np.diff(self.offsets)


@dataclass
class PackStats:
    """What a packing pass placed: document tokens, boundary tokens, padding, sequences."""

    doc_tokens: int = 0
    boundary_tokens: int = 0
    padding_tokens: int = 0
    sequences: int = 0


def pack_sequences(
    store: TokenStore,
    docs: np.ndarray,
    lengths: np.ndarray,
    seq_len: int,
    boundary_id: int,
    pad_id: int,
    block_sequences: int,
    stats: PackStats,
) -> Iterator[np.ndarray]:
    """Yield uint32 blocks of at most `block_sequences` rows × seq_len, packing the copies in order."""
    block_tokens = block_sequences * seq_len
    buf = np.empty(block_tokens, dtype=np.uint32)
    fill = 0
    for d, n in zip(docs.tolist(), lengths.tolist(), strict=True):
        piece = store.doc(d, n)
        stats.doc_tokens += n
        stats.boundary_tokens += 1
        pos = 0
        while pos < n + 1:  # n document tokens then one boundary
            room = block_tokens - fill
            take = min(room, n + 1 - pos)
            doc_part = min(take, max(n - pos, 0))
            buf[fill : fill + doc_part] = piece[pos : pos + doc_part]
            if doc_part < take:
                buf[fill + doc_part] = boundary_id
            fill += take
            pos += take
            if fill == block_tokens:
                stats.sequences += block_sequences
                yield buf.reshape(block_sequences, seq_len).copy()
                fill = 0
    if fill:
        rows = -(-fill // seq_len)
        buf[fill : rows * seq_len] = pad_id
        stats.padding_tokens += rows * seq_len - fill
        stats.sequences += rows
        yield buf[: rows * seq_len].reshape(rows, seq_len).copy()


def save_array(arr: np.ndarray, path: Path) -> str:
    """Write an .npy atomically; return its sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, arr)
    os.replace(tmp, path)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
