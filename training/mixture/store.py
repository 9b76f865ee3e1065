"""The image side of a built mixture: image store, images table, per-shard sidecars, rejects.

Layout (all relative to the mixture directory):

- `images/<sha256[:2]>/<sha256>.<ext>`: every image a shard or eval sequence refers to, stored
  once under the sha256 of its bytes.
- `images.parquet`: one row per stored image, sorted by sha256: `sha256`, `path` (relative to the
  mixture directory), `width`, `height`. A sidecar's `img_index` is a row number of this table.
- `shards/<name>.images.npz` beside each `shards/<name>.npy` (and `eval/<bucket>.<group>.images.npz`
  beside each eval array): `img_offsets` (int64, num_sequences + 1): row r's images are
  `img_index[img_offsets[r]:img_offsets[r + 1]]`, in the order of its image blocks;
  `img_index` (int64 into images.parquet); `img_pos` (int64, the column each block starts at).
  Each block is `image_tokens` consecutive `<|image|>` ids inside one row.
- `rejects.parquet` (every mixture, text-only ones too): rows or images that could not enter,
  with the reason (bucket, source, file, row, id, reason, detail): a text row of invalid UTF-8
  (`invalid_utf8`) or without text (`empty_text`), an image row's or image's reasons
  (training/mixture/images.py).

Sidecars are written as zip archives with fixed timestamps, so a rebuild is byte-identical.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

IMAGES_TABLE = "images.parquet"
IMAGES_DIR = "images"
REJECTS_TABLE = "rejects.parquet"


def save_npz(path: Path, **arrays: np.ndarray) -> str:
    """Write arrays as an .npz (np.load reads it) with fixed zip timestamps; return its sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as z:
        for name in sorted(arrays):
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(arrays[name]))
            z.writestr(
                zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), buf.getvalue()
            )
    os.replace(tmp, path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sidecar_path(array_path: str) -> str:
    """`shards/00000.npy` -> `shards/00000.images.npz`."""
    return array_path.removesuffix(".npy") + ".images.npz"


def _store_image(out_dir: Path, info: dict[str, Any]) -> str:
    """Copy one image into the store (verifying its bytes still hash to the recorded sha256)."""
    sha = info["sha256"]
    rel = f"{IMAGES_DIR}/{sha[:2]}/{sha}.{info['ext']}"
    dest = out_dir / rel
    from training.mixture.images import MAX_IMAGE_BYTES

    with open(info["path"], "rb") as fh:  # capped: the file was a checked regular file
        data = fh.read(MAX_IMAGE_BYTES + 1)
    if hashlib.sha256(data).hexdigest() != sha:
        raise RuntimeError(
            f"{info['path']}: the image changed while the mixture was built (sha256 is no longer "
            f"{sha}); rebuild the mixture once the image stage has finished writing"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, dest)
    return rel


def write_image_outputs(
    out_dir: Path,
    corpus,
    shards: list[dict[str, Any]],
    shard_images: list,
    evals: list[dict[str, Any]],
    eval_images: list,
) -> dict[str, Any]:
    """Store the used images, write images.parquet and every sidecar; record the sidecars in the
    shard and eval entries; return the manifest's `images` field."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_dir = Path(out_dir)
    used = sorted(
        {int(i) for rows in [*shard_images, *eval_images] for i in rows.ids.tolist()},
        key=lambda i: corpus.images[i]["sha256"],
    )
    index = np.full(len(corpus.images) + 1, -1, dtype=np.int64)
    index[used] = np.arange(len(used), dtype=np.int64)
    shutil.rmtree(out_dir / IMAGES_DIR, ignore_errors=True)
    rows = []
    for i in used:
        info = corpus.images[i]
        rel = _store_image(out_dir, info)
        rows.append(
            {
                "sha256": info["sha256"],
                "path": rel,
                "width": info["width"],
                "height": info["height"],
            }
        )
    schema = pa.schema(
        [
            ("sha256", pa.string()),
            ("path", pa.string()),
            ("width", pa.int32()),
            ("height", pa.int32()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out_dir / IMAGES_TABLE)

    def sidecar(entry: dict[str, Any], rows_) -> int:
        rel = sidecar_path(entry["path"])
        sha = save_npz(
            out_dir / rel,
            img_offsets=rows_.offsets.astype(np.int64),
            img_index=index[rows_.ids].astype(np.int64),
            img_pos=rows_.pos.astype(np.int64),
        )
        entry["images"] = {"path": rel, "sha256": sha, "count": int(len(rows_.ids))}
        return int(len(rows_.ids))

    in_shards = sum(sidecar(e, r) for e, r in zip(shards, shard_images, strict=True))
    in_eval = sum(sidecar(e, r) for e, r in zip(evals, eval_images, strict=True))
    return {
        "images": {
            "table": IMAGES_TABLE,
            "store": IMAGES_DIR,
            "count": len(used),
            "shard_occurrences": in_shards,
            "eval_occurrences": in_eval,
        }
    }


def write_rejects(out_dir: Path, rejects: list[dict[str, Any]]) -> dict[str, Any]:
    """Write rejects.parquet (every mixture, text or image: the rows and images that could not
    enter, with their reason); return the manifest's `rejects` field."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rschema = pa.schema(
        [
            ("bucket", pa.string()),
            ("source", pa.int32()),
            ("file", pa.string()),
            ("row", pa.int64()),
            ("id", pa.string()),
            ("reason", pa.string()),
            ("detail", pa.string()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rejects, schema=rschema), Path(out_dir) / REJECTS_TABLE)
    return {
        "rejects": {
            "table": REJECTS_TABLE,
            "count": len(rejects),
            "by_reason": dict(sorted(Counter(r["reason"] for r in rejects).items())),
        },
    }
