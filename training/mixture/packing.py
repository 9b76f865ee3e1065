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


class DiskTokens:
    """A uint32 token file read with positioned reads (`pread`), never mapped.

    Packing reads documents in shuffled order; through a memory map every page (plus the kernel's
    fault-around) would stay resident and memory would grow with the corpus. Reads copy exactly the
    tokens asked for into the caller's buffer.
    """

    def __init__(self, path: str | Path, length: int):
        self.path, self.length = Path(path), int(length)
        self._fd = os.open(self.path, os.O_RDONLY)

    def __len__(self) -> int:
        return self.length

    def read(self, start: int, count: int) -> np.ndarray:
        """Tokens [start, start + count) as a new array."""
        if count <= 0:
            return np.zeros(0, dtype=np.uint32)
        buf = os.pread(self._fd, 4 * count, 4 * start)
        if len(buf) != 4 * count:
            raise OSError(
                f"{self.path}: short read at token {start} ({len(buf)} of {4 * count} bytes)"
            )
        return np.frombuffer(buf, dtype=np.uint32)

    def __getitem__(self, key: slice) -> np.ndarray:
        start, stop, step = key.indices(self.length)
        if step != 1:
            raise IndexError("DiskTokens supports contiguous slices only")
        return self.read(start, stop - start)

    def close(self) -> None:
        """Close the file descriptor (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.close()


@dataclass
class TokenStore:
    """Every candidate document's tokens: a uint32 array (or a `DiskTokens` file) plus offsets
    (doc i = tokens[off[i]:off[i+1]])."""

    tokens: np.ndarray | DiskTokens
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


# Stream positions gathered per NumPy call: bounds the int64 index temporaries to a few MB.
GATHER_CHUNK = 1 << 18


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
    """Yield uint32 blocks of at most `block_sequences` rows × seq_len, packing the copies in order.

    Copy j (the first lengths[j] tokens of document docs[j]) plus its boundary token occupies stream
    positions [starts[j], ends[j]); a stream position p inside it reads token p + shift[j] of the store.
    Blocks are filled by gathering with those indices, without a Python loop per document.
    """
    docs = np.asarray(docs, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lengths + 1)
    starts = ends - (lengths + 1)
    shift = store.offsets[docs] - starts
    total = int(ends[-1]) if len(ends) else 0
    stats.doc_tokens += int(lengths.sum())
    stats.boundary_tokens += len(docs)
    block_tokens = block_sequences * seq_len
    for lo in range(0, total, block_tokens):
        hi = min(lo + block_tokens, total)
        rows = -(-(hi - lo) // seq_len)
        block = np.empty(rows * seq_len, dtype=np.uint32)
        for a in range(lo, hi, GATHER_CHUNK):
            b = min(a + GATHER_CHUNK, hi)
            _gather(store.tokens, starts, ends, shift, a, b, boundary_id, block[a - lo : b - lo])
        block[hi - lo :] = pad_id  # only the stream's last block can be short
        stats.padding_tokens += rows * seq_len - (hi - lo)
        stats.sequences += rows
        yield block.reshape(rows, seq_len)


def _gather(tokens, starts, ends, shift, a: int, b: int, boundary_id: int, out: np.ndarray) -> None:
    """Write stream positions [a, b) into out: document tokens, and boundary_id where a copy ends."""
    j0 = int(np.searchsorted(ends, a, side="right"))  # first copy still running at a
    j1 = int(np.searchsorted(starts, b, side="left"))  # copies starting before b
    # how many positions of [a, b) each of those copies holds
    seg = np.minimum(ends[j0:j1], b) - np.maximum(starts[j0:j1], a)
    if isinstance(tokens, DiskTokens):
        # One positioned read per copy piece (a copy's tokens are contiguous in the file); the
        # piece's last position may be its boundary, which the read leaves out.
        pos = np.maximum(starts[j0:j1], a)
        src = pos + shift[j0:j1]
        n_tok = np.minimum(seg, ends[j0:j1] - 1 - pos)
        for p, s, n in zip(pos.tolist(), src.tolist(), n_tok.tolist(), strict=True):
            if n > 0:
                out[p - a : p - a + n] = tokens.read(s, n)
    else:
        idx = np.repeat(shift[j0:j1], seg)
        idx += np.arange(a, b, dtype=np.int64)
        # A boundary position indexes one past its copy (maybe past the store's end): clip, overwrite.
        if len(tokens):  # an empty store: every copy is empty and [a, b) holds only boundaries
            np.take(tokens, idx, out=out, mode="clip")
    bounds = ends[j0:j1] - 1
    out[bounds[bounds < b] - a] = boundary_id


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
