"""Image-text pairs as `images build` writes them: finding their files, decoding their images.

Shared by every reader of pairs (CLIP and captioner training, synthetic captions, domain QA,
interleaved documents), so none of them reaches into another domain for it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from PIL import Image

PAIRS_NAME = "pairs.parquet"
ImageInput = str | os.PathLike[str] | bytes


def pairs_files(pairs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """pairs.parquet files of `images build` outputs: a file, or every `**/pairs.parquet` under a
    directory (the lake's images/pairs holds one per shard); several of them in order."""
    items = [pairs] if isinstance(pairs, str | os.PathLike) else list(pairs)
    files: list[Path] = []
    for item in items:
        path = Path(item)
        found = [path] if path.is_file() else sorted(path.glob(f"**/{PAIRS_NAME}"))
        if not found:
            raise FileNotFoundError(
                f"--pairs {path}: no {PAIRS_NAME} there; run `refinery images build` first"
            )
        files += found
    return files


def open_image(image: ImageInput) -> Image.Image | None:
    """Decode an image (path or bytes) to RGB, or None when it cannot be read or decoded."""
    try:
        source = io.BytesIO(image) if isinstance(image, bytes) else image
        with Image.open(source) as im:
            im.seek(0)
            return im.convert("RGB")
    except Exception:  # PIL raises OSError, ValueError, SyntaxError, DecompressionBombError...
        return None


PAIR_COLUMNS = {
    "id": "string",
    "caption": "string",
    "image_path": "string",
    "drop_reason": "string",
}


def kept_pairs(
    pairs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], consent: Any = None
) -> list[dict]:
    """The kept, training-allowed pairs, in file order: drop_reason null, an image inside the
    pairs' own directory (no local file outside it is read), and the one consent rule
    (`common.consent`: training_allowed the boolean true, and `consent`'s ledger, when given,
    has not opted its document out). Dicts with pair_id, caption, image_sha256, image_path
    (relative, as stored), image_file (absolute) and training_allowed."""
    from common.consent import NO_LEDGER
    from common.inputs import BadImagePath, read_rows, resolve_image

    rule = consent if consent is not None else NO_LEDGER
    fix = "pass an `images build` output"
    out = []
    for f in pairs_files(pairs):
        for r in read_rows(f, required=PAIR_COLUMNS, fix=fix):
            if r["drop_reason"] is None and r["image_path"] and rule.allows(r):
                try:
                    resolve_image(r["image_path"], f.parent)
                except BadImagePath:
                    continue  # absolute, '..' or a symlink out: not an image of this dataset
                out.append(
                    {
                        "pair_id": r["id"],
                        "caption": r["caption"],
                        "image_sha256": r.get("image_sha256"),
                        "image_path": r["image_path"],
                        "image_file": str(f.parent / r["image_path"]),
                        "training_allowed": True,
                    }
                )
    return out
