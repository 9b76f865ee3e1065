"""Export a built mixture to the formats trainers read: Megatron-LM indexed datasets, MosaicML
streaming MDS and Hugging Face `datasets` (Parquet); `refinery mix export MIXDIR --format F --out
DIR`.

A mixture's shards hold documents packed into rows of `seq_len`: every document followed by the
boundary token (`<|endoftext|>`), the last row of each curriculum stage padded with `<|pad|>`
(docs/schemas.md). The export undoes the packing: one record per document (its tokens and its
boundary token, Megatron's `--append-eod` layout), in shard order, and the padding of each stage
is recorded, not written (an eval set is cut at its row cap, so its last document may end
without a boundary token: `cut_document`). `export.json` names, per dataset (`train` and each `eval/<bucket>.<group>`),
the stages' document ranges and padding, so `packed_rows` rebuilds the exact shards from the
exported documents: nothing is lost, every token and boundary is where it was.

- `megatron`: `<name>.bin` (token ids, uint16 when the vocabulary fits, else int32) and
  `<name>.idx` in megatron-core's `IndexedDataset` layout: the 9-byte header `MMIDIDX\\0\\0`,
  version (u64 1), dtype code (u8), sequence count (u64), document count (u64, documents + 1),
  then int32 sequence lengths, int64 byte pointers and int64 document indices (one sequence per
  document: 0, 1, ..., n).
- `mds`: `<name>/index.json` plus `shard.NNNNN.mds` files, one sample per document with the
  column `tokens` (encoding `ndarray:uint32`), uncompressed, shards of at most 64 MiB (MosaicML
  streaming's `MDSWriter` layout, format version 2).
- `hf`: `data/<split>-NNNNN-of-NNNNN.parquet` (a file per 2^27 tokens) with the column
  `input_ids` (list of uint32) and a
  `README.md` whose `configs` name the splits (`train`, `eval_<bucket>_<group>`), so
  `datasets.load_dataset(DIR)` reads them.

Mixtures with images are refused: their image blocks point into images/ through sidecars that
none of these formats carries.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FORMATS = ("megatron", "mds", "hf")
EXPORT_FILE = "export.json"
MEGATRON_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_DTYPES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}
MDS_SIZE_LIMIT = 1 << 26
HF_ROW_GROUP = 8192
HF_GROUP_TOKENS = 1 << 26  # list offsets stay int32 (datasets' Sequence)
HF_FILE_TOKENS = 1 << 27  # 512 MiB of uint32 ids per file


@dataclass
class Segment:
    """Documents of one stage of a dataset: how many, their tokens and the padding after them."""

    name: str
    documents: int = 0
    tokens: int = 0
    padding_tokens: int = 0
    sequences: int = 0
    cut_document: bool = False  # the last document was cut (no boundary token): eval row cap


@dataclass
class Dataset:
    """One exported dataset: `train` (the shards) or `eval/<bucket>.<group>`."""

    name: str
    arrays: list[Path]
    stages: list[tuple[str, int]]  # (stage name, number of arrays of the stage), in order
    segments: list[Segment] = field(default_factory=list)


def _read_manifest(mix_dir: Path) -> dict[str, Any]:
    from training.loader import read_manifest

    manifest = read_manifest(mix_dir)
    if int(manifest.get("image_tokens") or 0):
        raise ValueError(
            f"{mix_dir / 'manifest.json'}: image_tokens {manifest['image_tokens']}: a mixture "
            "with images cannot be exported (its image blocks refer to images/ through sidecars "
            "no export format carries); export a text mixture"
        )
    return manifest


def datasets_of(mix_dir: Path, manifest: dict[str, Any]) -> list[Dataset]:
    """The training shards (grouped by curriculum stage) and each eval set, in manifest order."""
    shards = manifest["shards"]
    stages: list[tuple[str, int]] = []
    for s in shards:
        stage = str(s.get("stage") or "main")
        if stages and stages[-1][0] == stage:
            stages[-1] = (stage, stages[-1][1] + 1)
        else:
            stages.append((stage, 1))
    out = [Dataset("train", [mix_dir / s["path"] for s in shards], stages)]
    for e in manifest.get("eval") or []:
        # the file's own name (the builder made it safe), never a bucket or group value raw:
        # the export writes under OUT by these names
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(e["path"]).name.removesuffix(".npy"))
        name = f"eval/{stem.lstrip('.') or 'eval'}"
        out.append(Dataset(name, [mix_dir / e["path"]], [(name, 1)]))
    splits = [hf_split(d.name) for d in out]
    if len(set(splits)) != len(splits):
        raise ValueError(
            f"{mix_dir / 'manifest.json'}: eval sets {sorted(d.name for d in out)} give the same "
            "split name twice once made safe; rename the buckets or groups and rebuild"
        )
    return out


def documents(ds: Dataset, boundary: int, pad: int, seq_len: int) -> Iterator[np.ndarray]:
    """Each document of the dataset (tokens + boundary token), in order; fills `ds.segments`."""
    arrays = iter(ds.arrays)
    for stage, count in ds.stages:
        seg = Segment(stage)
        ds.segments.append(seg)
        carry = np.zeros(0, dtype=np.uint32)
        for _ in range(count):
            path = next(arrays)
            arr = np.load(path, mmap_mode="r")
            if arr.ndim != 2 or arr.shape[1] != seq_len or arr.dtype != np.uint32:
                raise ValueError(
                    f"{path}: shape {arr.shape} {arr.dtype}, not (rows, {seq_len}) uint32; "
                    "the mixture directory is inconsistent, rebuild it"
                )
            seg.sequences += arr.shape[0]
            flat = np.concatenate([carry, np.asarray(arr).reshape(-1)])
            ends = np.flatnonzero(flat == boundary) + 1
            start = 0
            for end in ends.tolist():
                seg.documents += 1
                seg.tokens += end - start
                yield flat[start:end]
                start = end
            carry = flat[start:]
        # After the last boundary: the stage's padding, or (an eval set cut at its row cap) the
        # start of a document that has no boundary token here
        body = np.flatnonzero(carry != pad)
        cut = int(body[-1]) + 1 if len(body) else 0
        if cut:
            seg.documents += 1
            seg.tokens += cut
            seg.cut_document = True
            yield carry[:cut]
        seg.padding_tokens = len(carry) - cut


def packed_rows(docs: Iterator[np.ndarray], segments: list[dict], seq_len: int, pad: int):
    """The mixture's rows rebuilt from exported documents: per stage, its documents
    concatenated, its padding appended, cut into rows of `seq_len` (uint32)."""
    it = iter(docs)
    for seg in segments:
        parts = [np.asarray(next(it), dtype=np.uint32) for _ in range(seg["documents"])]
        parts.append(np.full(seg["padding_tokens"], pad, dtype=np.uint32))
        yield seg["name"], np.concatenate(parts).reshape(-1, seq_len)


# --- writers: each takes documents one at a time ---


def _megatron_dtype(vocab_size: int) -> np.dtype:
    """megatron-core's choice (`DType.optimal_dtype`): uint16 below 65500 ids, else int32."""
    return np.dtype(np.uint16) if vocab_size < 65500 else np.dtype(np.int32)


class MegatronWriter:
    """`<prefix>.bin` + `<prefix>.idx` in megatron-core's IndexedDataset layout."""

    def __init__(self, prefix: Path, vocab_size: int):
        self.prefix = prefix
        self.dtype = _megatron_dtype(vocab_size)
        self.top = np.iinfo(self.dtype).max
        prefix.parent.mkdir(parents=True, exist_ok=True)
        self.bin = open(f"{prefix}.bin", "wb")  # noqa: SIM115 - closed in close()
        self.lengths: list[int] = []

    def add(self, doc: np.ndarray) -> None:
        if len(doc) and int(doc.max()) > self.top:
            raise ValueError(
                f"{self.prefix}.bin: token id {int(doc.max())} does not fit {self.dtype} (the "
                "manifest's vocab_size is too small for the shards); rebuild the mixture"
            )
        self.bin.write(doc.astype(self.dtype).tobytes(order="C"))
        self.lengths.append(len(doc))

    def close(self) -> list[str]:
        self.bin.close()
        n = len(self.lengths)
        lengths = np.array(self.lengths, dtype=np.int32)
        pointers = np.zeros(n, dtype=np.int64)
        if n:
            pointers[1:] = np.cumsum(lengths[:-1], dtype=np.int64) * self.dtype.itemsize
        doc_index = np.arange(n + 1, dtype=np.int64)
        with open(f"{self.prefix}.idx", "wb") as f:
            f.write(MEGATRON_HEADER)
            f.write(struct.pack("<Q", 1))
            f.write(struct.pack("<B", MEGATRON_DTYPES[self.dtype]))
            f.write(struct.pack("<Q", n))
            f.write(struct.pack("<Q", n + 1))
            f.write(lengths.tobytes(order="C"))
            f.write(pointers.tobytes(order="C"))
            f.write(doc_index.tobytes(order="C"))
        return [f"{self.prefix}.bin", f"{self.prefix}.idx"]


def _mds_tokens(doc: np.ndarray) -> bytes:
    """An `ndarray:uint32` value: static dtype, dynamic shape ([ndim << 2 | shape dtype], the
    shape, the values)."""
    n = len(doc)
    code, shape_dtype = (
        (0, np.uint8) if n < 1 << 8 else (1, np.uint16) if n < 1 << 16 else (2, np.uint32)
    )
    return bytes([(1 << 2) | code]) + np.array([n], shape_dtype).tobytes() + doc.tobytes()


class MdsWriter:
    """`<dir>/index.json` and `shard.NNNNN.mds` files: MDS format version 2, uncompressed."""

    columns = {"tokens": "ndarray:uint32"}

    def __init__(self, out: Path, size_limit: int | None = None):
        size_limit = size_limit or MDS_SIZE_LIMIT
        self.out, self.size_limit = out, size_limit
        out.mkdir(parents=True, exist_ok=True)
        self.config = {
            "version": 2,
            "format": "mds",
            "compression": None,
            "hashes": [],
            "size_limit": size_limit,
            "column_names": sorted(self.columns),
            "column_encodings": [self.columns[c] for c in sorted(self.columns)],
            "column_sizes": [None for _ in self.columns],
        }
        self.config_data = json.dumps(self.config, sort_keys=True).encode("utf-8")
        self.samples: list[bytes] = []
        self.size = 8 + len(self.config_data)
        self.shards: list[dict] = []
        self.files: list[str] = []

    def add(self, doc: np.ndarray) -> None:
        datum = _mds_tokens(np.ascontiguousarray(doc, dtype=np.uint32))
        sample = np.array([len(datum)], np.uint32).tobytes() + datum
        if self.samples and self.size + len(sample) + 4 > self.size_limit:
            self._flush()
        self.samples.append(sample)
        self.size += len(sample) + 4

    def _flush(self) -> None:
        n = len(self.samples)
        offsets = np.array([0, *map(len, self.samples)], dtype=np.int64).cumsum()
        offsets += 4 + 4 * (n + 1) + len(self.config_data)
        if offsets[-1] >= 1 << 32:
            raise ValueError(f"{self.out}: an MDS shard would pass 4 GiB; lower its size limit")
        data = (
            np.uint32(n).tobytes()
            + offsets.astype(np.uint32).tobytes()
            + self.config_data
            + b"".join(self.samples)
        )
        name = f"shard.{len(self.shards):05d}.mds"
        (self.out / name).write_bytes(data)
        raw = {"basename": name, "bytes": len(data), "hashes": {}}
        self.shards.append({"samples": n, "raw_data": raw, "zip_data": None, **self.config})
        self.files.append(str(self.out / name))
        self.samples, self.size = [], 8 + len(self.config_data)

    def close(self) -> list[str]:
        if self.samples:
            self._flush()
        index = self.out / "index.json"
        index.write_text(json.dumps({"version": 2, "shards": self.shards}, sort_keys=True))
        return [*self.files, str(index)]


class HfWriter:
    """`data/<split>-NNNNN-of-NNNNN.parquet` with `input_ids` (list<uint32>): row groups of at
    most HF_ROW_GROUP documents or HF_GROUP_TOKENS tokens, a new file every HF_FILE_TOKENS."""

    def __init__(self, out: Path, split: str):
        import pyarrow as pa

        self.pa, self.split = pa, split
        self.schema = pa.schema([("input_ids", pa.list_(pa.uint32()))])
        self.dir = out / "data"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.parts: list[Path] = []
        self.writer = None
        self.file_tokens = 0
        self.buf: list[np.ndarray] = []
        self.buf_tokens = 0

    def add(self, doc: np.ndarray) -> None:
        self.buf.append(np.array(doc, dtype=np.uint32))
        self.buf_tokens += len(doc)
        if len(self.buf) >= HF_ROW_GROUP or self.buf_tokens >= HF_GROUP_TOKENS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow.parquet as pq

        pa = self.pa
        if self.writer is None or self.file_tokens >= HF_FILE_TOKENS:
            if self.writer is not None:
                self.writer.close()
            self.parts.append(self.dir / f"{self.split}-{len(self.parts):05d}.parquet.part")
            self.writer = pq.ParquetWriter(self.parts[-1], self.schema)
            self.file_tokens = 0
        offsets = pa.array(np.array([0, *map(len, self.buf)], dtype=np.int64).cumsum(), pa.int64())
        values = pa.array(np.concatenate(self.buf) if self.buf else np.zeros(0, np.uint32))
        col = pa.LargeListArray.from_arrays(offsets, values).cast(self.schema.field(0).type)
        self.writer.write_table(pa.Table.from_arrays([col], schema=self.schema))
        self.file_tokens += self.buf_tokens
        self.buf, self.buf_tokens = [], 0

    def close(self) -> list[str]:
        if self.buf or self.writer is None:
            self._flush()
        self.writer.close()
        final = []
        for i, part in enumerate(self.parts):
            dest = self.dir / f"{self.split}-{i:05d}-of-{len(self.parts):05d}.parquet"
            part.rename(dest)
            final.append(str(dest))
        return final


def hf_split(name: str) -> str:
    """A dataset's split name for `datasets` (`train`, `eval_<bucket>_<group>`)."""
    split = re.sub(r"\W", "_", name.replace("eval/", "eval_", 1))
    return split if split[:1].isalpha() else f"s_{split}"


def _hf_readme(splits: list[str], mixture: str) -> str:
    lines = ["---", "configs:", "- config_name: default", "  data_files:"]
    for s in splits:
        lines += [f"  - split: {s}", f'    path: "data/{s}-*.parquet"']
    lines += ["---", "", f"Token ids of the Refinery mixture `{mixture}`, one document per row", ""]
    return "\n".join(lines) + "\n"


def _writer(fmt: str, out: Path, ds: Dataset, vocab_size: int):
    if fmt == "megatron":
        return MegatronWriter(out / ds.name, vocab_size)
    if fmt == "mds":
        return MdsWriter(out / ds.name)
    return HfWriter(out, hf_split(ds.name))


def export_mixture(mix_dir: str | Path, fmt: str, out_dir: str | Path) -> dict[str, Any]:
    """Write the mixture in `fmt` under `out_dir` (replaced if it holds a previous export);
    return the export description (also `out_dir/export.json`)."""
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    mix_dir, out = Path(mix_dir), Path(out_dir)
    manifest = _read_manifest(mix_dir)
    if out.resolve() == mix_dir.resolve() or mix_dir.resolve() in out.resolve().parents:
        raise ValueError(f"--out {out}: must not be the mixture directory or inside it")
    if out.exists() and any(out.iterdir()) and not (out / EXPORT_FILE).exists():
        raise FileExistsError(
            f"--out {out}: exists and holds no previous export ({EXPORT_FILE}); "
            "choose an empty or new directory"
        )
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    special = manifest["special_tokens"]
    boundary, pad, seq_len = int(special["boundary"]), int(special["pad"]), int(manifest["seq_len"])
    vocab = int(manifest["vocab_size"])
    described = []
    splits = []
    for ds in datasets_of(mix_dir, manifest):
        writer = _writer(fmt, out, ds, vocab)
        digest = hashlib.sha256()
        for doc in documents(ds, boundary, pad, seq_len):
            digest.update(doc.astype("<u4").tobytes())
            writer.add(doc)
        files = writer.close()
        splits.append(hf_split(ds.name))
        described.append(
            {
                "name": ds.name,
                "split": hf_split(ds.name) if fmt == "hf" else None,
                "files": [str(Path(f).relative_to(out)) for f in files],
                "documents": sum(s.documents for s in ds.segments),
                "tokens": sum(s.tokens for s in ds.segments),
                "documents_sha256": digest.hexdigest(),
                "stages": [s.__dict__ for s in ds.segments],
            }
        )
    if fmt == "hf":
        (out / "README.md").write_text(_hf_readme(splits, manifest["name"]))
    if (mix_dir / "tokenizer.json").exists():
        shutil.copyfile(mix_dir / "tokenizer.json", out / "tokenizer.json")
    doc = {
        "format": fmt,
        "mixture": {
            "name": manifest["name"],
            "path": str(mix_dir.resolve()),
            "spec_sha256": manifest.get("spec_sha256"),
        },
        "seq_len": seq_len,
        "vocab_size": vocab,
        "special_tokens": special,
        "record": "one document per record: its token ids then the boundary token",
        "dtype": str(_megatron_dtype(vocab)) if fmt == "megatron" else "uint32",
        "datasets": described,
    }
    (out / EXPORT_FILE).write_text(json.dumps(doc, indent=2) + "\n")
    return doc
