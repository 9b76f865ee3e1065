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


@dataclass
class ImageRows:
    """The images of a packed block: per row `offsets` (rows + 1) into `ids` (corpus image ids,
    in row-major block order) and `pos` (each block's first column in its row)."""

    offsets: np.ndarray
    ids: np.ndarray
    pos: np.ndarray

    @classmethod
    def concat(cls, parts: list[ImageRows]) -> ImageRows:
        """The images of blocks stacked in order."""
        offsets, base = [np.zeros(1, np.int64)], 0
        for p in parts:
            offsets.append(p.offsets[1:] + base)
            base += int(p.offsets[-1])
        return cls(
            np.concatenate(offsets),
            np.concatenate([p.ids for p in parts] or [np.zeros(0, np.int64)]),
            np.concatenate([p.pos for p in parts] or [np.zeros(0, np.int64)]),
        )

    def head(self, rows: int) -> ImageRows:
        """The images of the first `rows` rows."""
        n = int(self.offsets[rows])
        return ImageRows(self.offsets[: rows + 1].copy(), self.ids[:n], self.pos[:n])


class _Stream:
    """A packed stream written token by token into blocks of `block_sequences` rows."""

    def __init__(self, seq_len: int, block_sequences: int, pad_id: int, stats: PackStats):
        self.seq_len, self.pad_id, self.stats = seq_len, pad_id, stats
        self.cap = block_sequences * seq_len
        self.buf = np.empty(self.cap, dtype=np.uint32)
        self.fill = 0
        self.img_at: list[int] = []
        self.img_id: list[int] = []
        self.done: list[tuple[np.ndarray, ImageRows]] = []

    def write(self, arr: np.ndarray) -> None:
        while len(arr):
            n = min(len(arr), self.cap - self.fill)
            self.buf[self.fill : self.fill + n] = arr[:n]
            self.fill += n
            arr = arr[n:]
            if self.fill == self.cap:
                self.flush()

    def _pad_to_row(self) -> None:
        """Pad to the start of the next row."""
        gap = -self.fill % self.seq_len
        self.buf[self.fill : self.fill + gap] = self.pad_id
        self.fill += gap
        self.stats.padding_tokens += gap

    def image(self, block: np.ndarray, image_id: int) -> None:
        """An image block, moved to the next row when it would straddle this one."""
        if self.fill % self.seq_len + len(block) > self.seq_len:
            self._pad_to_row()
            if self.fill == self.cap:
                self.flush()
        self.img_at.append(self.fill)
        self.img_id.append(image_id)
        self.write(block)

    def flush(self) -> None:
        if self.fill == 0:
            return
        self._pad_to_row()
        rows = self.fill // self.seq_len
        at = np.array(self.img_at, dtype=np.int64)
        offsets = np.searchsorted(at // self.seq_len, np.arange(rows + 1), side="left")
        self.done.append(
            (
                self.buf[: self.fill].reshape(rows, self.seq_len).copy(),
                ImageRows(
                    offsets.astype(np.int64),
                    np.array(self.img_id, dtype=np.int64),
                    (at % self.seq_len).astype(np.int64),
                ),
            )
        )
        self.stats.sequences += rows
        self.fill = 0
        self.img_at, self.img_id = [], []


def pack_sequences_images(
    store: TokenStore,
    docs: np.ndarray,
    lengths: np.ndarray,
    seq_len: int,
    boundary_id: int,
    pad_id: int,
    block_sequences: int,
    stats: PackStats,
    *,
    image_id: int,
    image_tokens: int,
    img_offsets: np.ndarray,
    img_ids: np.ndarray,
) -> Iterator[tuple[np.ndarray, ImageRows]]:
    """`pack_sequences` for a mixture with images: the same stream of copies and boundaries, but an
    image block (image_tokens ids) that would straddle two rows starts the next row instead, the
    rest of the row padded. Yields (uint32 block, its ImageRows). Copies must end on a block
    boundary (the builder's sampling ensures it); document d's images are
    img_ids[img_offsets[d]:img_offsets[d + 1]], in block order.
    """
    stream = _Stream(seq_len, block_sequences, pad_id, stats)
    boundary = np.array([boundary_id], dtype=np.uint32)
    block = np.full(image_tokens, image_id, dtype=np.uint32)
    for d, n in zip(np.asarray(docs).tolist(), np.asarray(lengths).tolist(), strict=True):
        tokens = np.asarray(store.doc(d, n))
        first = int(img_offsets[d])
        if first == int(img_offsets[d + 1]):
            stream.write(tokens)
        else:
            hits = np.flatnonzero(tokens == image_id)
            if len(hits) % image_tokens:
                raise ValueError(
                    f"document {d}: a copy of {n} tokens ends inside an image block; this is a bug"
                )
            prev = 0
            for k, s in enumerate(hits[::image_tokens].tolist()):
                stream.write(tokens[prev:s])
                stream.image(block, int(img_ids[first + k]))
                prev = s + image_tokens
            stream.write(tokens[prev:])
        stream.write(boundary)
        stats.doc_tokens += n
        stats.boundary_tokens += 1
        while stream.done:
            yield stream.done.pop(0)
    stream.flush()
    while stream.done:
        yield stream.done.pop(0)
