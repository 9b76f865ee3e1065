"""Read a built mixture: training batches from its shards, held-out eval sets per bucket/group.

A mixture directory (written by `training.mixture.builder`) holds `manifest.json`,
`shards/*.npy` (uint32, `(num_sequences, seq_len)`) and `eval/<bucket>.<group>.npy`.

`ShardLoader` yields `np.ndarray` batches of dtype **int64**, shape `(batch_size, seq_len)`
(int64 because that is what embedding lookups take; the shards stay uint32 on disk, mmapped).
Order is a pure function of (seed, epoch): each epoch is a seeded permutation of every
sequence, applied inside each curriculum stage's range so stage order is kept. Rank `r` of
`world_size` takes every `world_size`-th batch-sized slice of that order; the tail that does not
fill a batch on every rank is dropped, so all ranks see the same number of batches per epoch.

A mixture with images (manifest `image_tokens` > 0; layout in training/mixture/store.py) has an
image block of `image_tokens` consecutive `<|image|>` ids per image, never across two rows.
`batch_images(epoch, index)` gives the sha256 of each block of a batch in row-major order;
`ShardLoader(..., with_images=True)` yields `(tokens, shas)`; `ImageStore(mix_dir).pixels(shas,
image_size)` decodes them to a normalised (N, 3, S, S) float tensor (open_clip's val transform).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from common.manifest import read_manifest as read_dataset_manifest

STATE_VERSION = 1


def read_manifest(mix_dir: str | Path) -> dict[str, Any]:
    """Read a mixture's manifest.json, with a clear error when it is not a mixture directory or
    a build into it has not finished (its in-progress marker is there)."""
    from training.mixture.outdir import IN_PROGRESS

    fix = f"build a mixture there first with `refinery mix build SPEC --out {mix_dir}`"
    marker = Path(mix_dir) / IN_PROGRESS
    if marker.exists():
        raise ValueError(
            f"{marker}: a mixture build into {mix_dir} did not finish (killed or failed), so its "
            f"files are not the manifest's; rebuild it with `refinery mix build SPEC --out {mix_dir}`"
        )
    if not Path(mix_dir).is_dir():  # a mixture is a directory: name its manifest, not a sidecar
        raise FileNotFoundError(
            f"{mix_dir}: no mixture directory (no {Path(mix_dir) / 'manifest.json'}); {fix}"
        )
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
        with_images: bool = False,
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
        self._shards = [_open_shard(self.mix_dir, s, self.seq_len) for s in self.manifest["shards"]]
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
        self.image_tokens = int(self.manifest.get("image_tokens") or 0)
        self.with_images = with_images
        if with_images and not self.image_tokens:
            raise ValueError(
                f"{self.mix_dir}: with_images=True but the mixture has no images "
                "(manifest image_tokens is 0); build it from a spec with image_tokens"
            )
        self._img = _ShardImages(self.mix_dir, self.manifest) if self.image_tokens else None

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

    def _indices(self, epoch: int, index: int, order: np.ndarray | None = None) -> np.ndarray:
        order = self.epoch_order(epoch) if order is None else order
        start = (index * self.world_size + self.rank) * self.batch_size
        return order[start : start + self.batch_size]

    def batch(self, epoch: int, index: int) -> np.ndarray:
        """Batch `index` of `epoch` for this rank (random access; does not move the iterator)."""
        return self._gather(self._indices(epoch, index))

    def batch_images(self, epoch: int, index: int) -> list[str]:
        """sha256 of every image block of batch `index` of `epoch`, in row-major block order."""
        if self._img is None:
            raise ValueError(f"{self.mix_dir}: the mixture has no images (image_tokens is 0)")
        return self._img.shas(self._indices(epoch, index))

    def __len__(self) -> int:
        return self.batches_per_epoch

    def __iter__(self) -> Iterator[Any]:
        """Yield batches forever (epochs loop), starting from the current state."""
        while True:
            epoch = self._epoch
            order = self.epoch_order(epoch)
            while self._batch < self.batches_per_epoch and self._epoch == epoch:
                rows = self._indices(epoch, self._batch, order)
                batch = self._gather(rows)
                self._batch += 1
                yield (batch, self._img.shas(rows)) if self.with_images else batch
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


def _open_shard(mix_dir: Path, entry: dict[str, Any], seq_len: int) -> np.ndarray:
    """A shard the manifest lists, mmapped, after the cheap checks that it is the manifest's:
    there, readable as .npy, uint32 of shape (num_sequences, seq_len) and of exactly that many
    bytes. A shard left by a build that died, or cut short, is one line naming it and the fix."""
    path = mix_dir / entry["path"]
    rebuild = (
        "the mixture directory is inconsistent (an interrupted build or copy?); rebuild it with "
        f"`refinery mix build SPEC --out {mix_dir}`"
    )
    try:
        arr = np.load(path, mmap_mode="r")
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: cannot be read as a shard ({exc}); {rebuild}") from None
    want = (int(entry["num_sequences"]), seq_len)
    if arr.ndim != 2 or arr.shape != want or arr.dtype != np.uint32:
        raise ValueError(
            f"{path}: {arr.dtype} of shape {arr.shape} does not match the manifest's uint32 "
            f"{want}; {rebuild}"
        )
    size = path.stat().st_size
    if size != arr.offset + arr.nbytes:
        raise ValueError(
            f"{path}: {size} bytes, not the {arr.offset + arr.nbytes} its manifest shape needs; "
            f"{rebuild}"
        )
    return arr


class _ShardImages:
    """Per global sequence, the images of its blocks (from the shard sidecars), as sha256."""

    def __init__(self, mix_dir: Path, manifest: dict[str, Any]) -> None:
        self.sha_list = _image_shas(mix_dir, manifest)
        offsets, index, base = [np.zeros(1, np.int64)], [], 0
        for s in manifest["shards"]:
            off, idx = _sidecar(mix_dir, s)
            offsets.append(off[1:] + base)
            index.append(idx)
            base += int(off[-1])
        self.offsets = np.concatenate(offsets)
        self.index = np.concatenate(index or [np.zeros(0, np.int64)])

    def shas(self, rows: np.ndarray) -> list[str]:
        return [
            self.sha_list[i]
            for r in np.asarray(rows).tolist()
            for i in self.index[self.offsets[r] : self.offsets[r + 1]].tolist()
        ]


def _image_shas(mix_dir: Path, manifest: dict[str, Any]) -> list[str]:
    import pyarrow.parquet as pq

    table = mix_dir / manifest["images"]["table"]
    if not table.exists():
        raise FileNotFoundError(
            f"{table}: the mixture's images table is missing; rebuild the mixture"
        )
    return [str(x) for x in pq.read_table(table, columns=["sha256"]).column(0).to_pylist()]


def _sidecar(mix_dir: Path, entry: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(img_offsets, img_index) of one shard or eval array, checked against its rows."""
    info = entry.get("images")
    if not info:
        raise ValueError(
            f"{mix_dir / 'manifest.json'}: {entry['path']} has no image sidecar although the "
            "mixture has image_tokens; rebuild the mixture"
        )
    with np.load(mix_dir / info["path"]) as z:
        off, idx = z["img_offsets"].astype(np.int64), z["img_index"].astype(np.int64)
    if len(off) != int(entry["num_sequences"]) + 1 or int(off[-1]) != len(idx):
        raise ValueError(
            f"{mix_dir / info['path']}: img_offsets has {len(off)} entries for "
            f"{entry['num_sequences']} sequences (and {len(idx)} images); rebuild the mixture"
        )
    return off, idx


def image_slot_count(tokens: np.ndarray, image_token_id: int, image_tokens: int) -> int:
    """Number of image blocks in a (B, T) or (T,) token array; ValueError when an image-token run
    in some row is not a whole number of `image_tokens`-long blocks (a cut or straddling block)."""
    if image_tokens < 1:
        raise ValueError(f"image_tokens must be >= 1, got {image_tokens}")
    arr = np.atleast_2d(np.asarray(tokens))
    hit = arr == image_token_id
    count = 0
    for r in np.flatnonzero(hit.any(axis=1)).tolist():
        h = np.concatenate([[False], hit[r], [False]]).astype(np.int8)
        starts = np.flatnonzero(np.diff(h) == 1)
        ends = np.flatnonzero(np.diff(h) == -1)
        runs = ends - starts
        bad = runs % image_tokens != 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"row {r}: a run of {int(runs[i])} image tokens at column {int(starts[i])} is not "
                f"a whole number of {image_tokens}-token image blocks"
            )
        count += int((runs // image_tokens).sum())
    return count


OPENAI_DATASET_MEAN = (0.48145466, 0.4578275, 0.40821073)  # open_clip.constants
OPENAI_DATASET_STD = (0.26862954, 0.26130258, 0.27577711)


class ImageStore:
    """A mixture's stored images (images.parquet + images/), decoded to pixel tensors."""

    def __init__(self, mix_dir: str | Path) -> None:
        import pyarrow.parquet as pq

        self.mix_dir = Path(mix_dir)
        manifest = read_manifest(self.mix_dir)
        if not manifest.get("image_tokens"):
            raise ValueError(f"{self.mix_dir}: the mixture has no images (image_tokens is 0)")
        table = pq.read_table(self.mix_dir / manifest["images"]["table"]).to_pylist()
        self.rows = {r["sha256"]: r for r in table}
        self._transforms: dict[tuple, Any] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def path(self, sha: str) -> Path:
        """The stored file of an image."""
        try:
            return self.mix_dir / self.rows[sha]["path"]
        except KeyError:
            raise KeyError(f"{self.mix_dir}: no stored image with sha256 {sha}") from None

    def pixels(
        self,
        shas: list[str],
        image_size: int,
        mean: tuple[float, float, float] | None = None,
        std: tuple[float, float, float] | None = None,
    ):
        """torch.FloatTensor (N, 3, S, S): each image decoded (PIL, RGB), resized and centre-cropped
        to `image_size` and normalised, as open_clip's val transform does (mean/std default to
        open_clip's OPENAI_DATASET_MEAN/STD)."""
        import torch
        from open_clip.transform import image_transform
        from PIL import Image

        mean = tuple(mean or OPENAI_DATASET_MEAN)
        std = tuple(std or OPENAI_DATASET_STD)
        key = (int(image_size), mean, std)
        if key not in self._transforms:
            self._transforms[key] = image_transform(
                int(image_size), is_train=False, mean=mean, std=std
            )
        tf = self._transforms[key]
        if not shas:
            return torch.zeros((0, 3, image_size, image_size), dtype=torch.float32)
        out = []
        for sha in shas:
            with Image.open(self.path(sha)) as im:
                out.append(tf(im.convert("RGB")))
        return torch.stack(out).to(torch.float32)


class EvalSets:
    """The mixture's held-out eval sequences, one uint32 array per (bucket, group), mmapped.

    Each array gets the shards' checks when the sets are opened (before a run writes anything):
    readable, uint32 of the manifest's `(num_sequences, seq_len)`, exactly that many bytes."""

    def __init__(self, mix_dir: str | Path) -> None:
        self.mix_dir = Path(mix_dir)
        manifest = read_manifest(self.mix_dir)
        self.entries: list[dict[str, Any]] = list(manifest.get("eval", []))
        self.pad_id = int(manifest["special_tokens"]["pad"])
        self.seq_len = int(manifest["seq_len"])
        self.manifest = manifest
        self.image_tokens = int(manifest.get("image_tokens") or 0)
        self._shas: list[str] | None = None
        self._arrays = [_open_shard(self.mix_dir, e, self.seq_len) for e in self.entries]

    def keys(self) -> list[tuple[str, str]]:
        """(bucket, group) pairs that have eval sequences."""
        return [(e["bucket"], e["group"]) for e in self.entries]

    def get(self, bucket: str, group: str) -> np.ndarray:
        """The (num_sequences, seq_len) uint32 eval array of one bucket/group (pad id marks padding)."""
        for e, arr in zip(self.entries, self._arrays, strict=True):
            if e["bucket"] == bucket and e["group"] == group:
                return arr
        raise KeyError(f"no eval set for bucket={bucket!r} group={group!r}; have {self.keys()}")

    def get_images(self, bucket: str, group: str) -> list[str]:
        """sha256 of every image block of one eval array, in row-major block order."""
        if not self.image_tokens:
            raise ValueError(f"{self.mix_dir}: the mixture has no images (image_tokens is 0)")
        for e in self.entries:
            if e["bucket"] == bucket and e["group"] == group:
                if self._shas is None:
                    self._shas = _image_shas(self.mix_dir, self.manifest)
                _, idx = _sidecar(self.mix_dir, e)
                return [self._shas[i] for i in idx.tolist()]
        raise KeyError(f"no eval set for bucket={bucket!r} group={group!r}; have {self.keys()}")

    def items(self) -> Iterator[tuple[tuple[str, str], np.ndarray]]:
        """Iterate ((bucket, group), array) in manifest order."""
        for key in self.keys():
            yield key, self.get(*key)

    def __len__(self) -> int:
        return len(self.entries)
