"""Image-text pairs as `images build` writes them: finding their files, decoding their images.

Shared by every reader of pairs (CLIP and captioner training, synthetic captions, domain QA,
interleaved documents), so none of them reaches into another domain for it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable
from pathlib import Path

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
