"""Read a built mixture: training batches from its shards, held-out eval sets per bucket/group.

A mixture directory (written by `training.mixture.builder`) holds `manifest.json`,
`shards/*.npy` (uint32, `(num_sequences, seq_len)`) and `eval/<bucket>.<group>.npy`.

`ShardLoader` yields `np.ndarray` batches of dtype **int64**, shape `(batch_size, seq_len)`
(int64 because that is what embedding lookups take; the shards stay uint32 on disk, mmapped).
Order is a pure function of (seed, epoch): each epoch is a seeded permutation of every
sequence, applied inside each curriculum stage's range so stage order is kept. Rank `r` of
`world_size` takes every `world_size`-th batch-sized slice of that order; the tail that does not
fill a batch on every rank is dropped, so all ranks see the same number of batches per epoch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from common.manifest import read_manifest as read_dataset_manifest

STATE_VERSION = 1


def read_manifest(mix_dir: str | Path) -> dict[str, Any]:
    """Read a mixture's manifest.json, with a clear error when it is not a mixture directory."""
    fix = f"build a mixture there first with `refinery mix build SPEC --out {mix_dir}`"
    return read_dataset_manifest(Path(mix_dir), fix)


class ShardLoader:
    """Deterministic, resumable, rank-sharded batches of packed sequences from a mixture directory."""

    def __init__(
        self,
        mix_dir: str | Path,
        batch_size: int,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        shuffle: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(
                f"rank must be in [0, world_size); got rank={rank}, world_size={world_size}"
            )
        self.mix_dir = Path(mix_dir)
        self.manifest = read_manifest(self.mix_dir)
        self.batch_size, self.seed, self.rank, self.world_size = batch_size, seed, rank, world_size
        self.shuffle = shuffle
        self.seq_len = int(self.manifest["seq_len"])
        self._shards = [
            np.load(self.mix_dir / s["path"], mmap_mode="r") for s in self.manifest["shards"]
        ]
        for spec, arr in zip(self.manifest["shards"], self._shards, strict=True):
            if arr.ndim != 2 or arr.shape != (spec["num_sequences"], self.seq_len):
                raise ValueError(
                    f"{self.mix_dir / spec['path']}: shape {arr.shape} does not match manifest "
                    f"({spec['num_sequences']}, {self.seq_len}); the mixture directory is inconsistent, rebuild it"
                )
        sizes = np.array([a.shape[0] for a in self._shards], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(sizes)])
        self.num_sequences = int(self._starts[-1])
        self._segments = self._stage_segments()
        self.batches_per_epoch = self.num_sequences // (batch_size * world_size)
        if self.batches_per_epoch == 0:
            raise ValueError(
                f"{self.mix_dir}: {self.num_sequences} sequences cannot fill one batch of "
                f"{batch_size} on each of {world_size} ranks; lower batch_size or build more tokens"
            )
        self._epoch = 0
        self._batch = 0

    def _stage_segments(self) -> list[tuple[int, int]]:
        """(start, stop) sequence ranges that are shuffled separately: one per curriculum stage."""
        stages = self.manifest.get("stages") or []
        segs = [
            (int(s["first_sequence"]), int(s["first_sequence"]) + int(s["num_sequences"]))
            for s in stages
        ]
        segs = [s for s in segs if s[1] > s[0]]
        if not segs:
            return [(0, self.num_sequences)]
        if segs[0][0] != 0 or segs[-1][1] != self.num_sequences:
            raise ValueError(
                f"{self.mix_dir}: manifest stages do not cover the shards; rebuild the mixture"
            )
        return segs

    def epoch_order(self, epoch: int) -> np.ndarray:
        """The global sequence order of an epoch (same on every rank)."""
        order = np.arange(self.num_sequences, dtype=np.int64)
        if not self.shuffle:
            return order
        rng = np.random.default_rng([self.seed, epoch])
        for start, stop in self._segments:
            order[start:stop] = start + rng.permutation(stop - start)
        return order

    def _gather(self, indices: np.ndarray) -> np.ndarray:
        out = np.empty((len(indices), self.seq_len), dtype=np.int64)
        shard_of = np.searchsorted(self._starts, indices, side="right") - 1
        for shard in np.unique(shard_of):
            rows = np.nonzero(shard_of == shard)[0]
            local = indices[rows] - self._starts[shard]
            out[rows] = self._shards[shard][np.sort(local)][np.argsort(np.argsort(local))]
        return out

    def batch(self, epoch: int, index: int) -> np.ndarray:
        """Batch `index` of `epoch` for this rank (random access; does not move the iterator)."""
        order = self.epoch_order(epoch)
        start = (index * self.world_size + self.rank) * self.batch_size
        return self._gather(order[start : start + self.batch_size])

    def __len__(self) -> int:
        return self.batches_per_epoch

    def __iter__(self) -> Iterator[np.ndarray]:
        """Yield batches forever (epochs loop), starting from the current state."""
        while True:
            epoch = self._epoch
            order = self.epoch_order(epoch)
            while self._batch < self.batches_per_epoch and self._epoch == epoch:
                start = (self._batch * self.world_size + self.rank) * self.batch_size
                batch = self._gather(order[start : start + self.batch_size])
                self._batch += 1
                yield batch
            if self._epoch == epoch:
                self._epoch, self._batch = epoch + 1, 0

    @property
    def epoch(self) -> int:
        """The epoch the next batch comes from."""
        return self._epoch if self._batch < self.batches_per_epoch else self._epoch + 1

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly at the next batch."""
        epoch, batch = (
            (self._epoch, self._batch)
            if self._batch < self.batches_per_epoch
            else (self._epoch + 1, 0)
        )
        return {
            "version": STATE_VERSION,
            "epoch": epoch,
            "batch": batch,
            "seed": self.seed,
            "batch_size": self.batch_size,
            "rank": self.rank,
            "world_size": self.world_size,
            "shuffle": self.shuffle,
            "num_sequences": self.num_sequences,
            "spec_sha256": self.manifest.get("spec_sha256"),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from `state_dict()`; refuses a state from a different mixture or batch layout."""
        for key in ("seed", "batch_size", "world_size", "shuffle", "num_sequences", "spec_sha256"):
            mine = self.state_dict()[key]
            if state.get(key) != mine:
                raise ValueError(
                    f"loader state field {key!r} is {state.get(key)!r} but this loader has {mine!r}; "
                    "resume with the same mixture, seed, batch_size and world_size"
                )
        if not 0 <= int(state["batch"]) < self.batches_per_epoch:
            raise ValueError(
                f"loader state batch {state['batch']} outside [0, {self.batches_per_epoch})"
            )
        self._epoch, self._batch = int(state["epoch"]), int(state["batch"])


class EvalSets:
    """The mixture's held-out eval sequences, one uint32 array per (bucket, group), mmapped."""

    def __init__(self, mix_dir: str | Path) -> None:
        self.mix_dir = Path(mix_dir)
        manifest = read_manifest(self.mix_dir)
        self.entries: list[dict[str, Any]] = list(manifest.get("eval", []))
        self.pad_id = int(manifest["special_tokens"]["pad"])
        self.seq_len = int(manifest["seq_len"])

    def keys(self) -> list[tuple[str, str]]:
        """(bucket, group) pairs that have eval sequences."""
        return [(e["bucket"], e["group"]) for e in self.entries]

    def get(self, bucket: str, group: str) -> np.ndarray:
        """The (num_sequences, seq_len) uint32 eval array of one bucket/group (pad id marks padding)."""
        for e in self.entries:
            if e["bucket"] == bucket and e["group"] == group:
                return np.load(self.mix_dir / e["path"], mmap_mode="r")
        raise KeyError(f"no eval set for bucket={bucket!r} group={group!r}; have {self.keys()}")

    def items(self) -> Iterator[tuple[tuple[str, str], np.ndarray]]:
        """Iterate ((bucket, group), array) in manifest order."""
        for key in self.keys():
            yield key, self.get(*key)

    def __len__(self) -> int:
        return len(self.entries)
