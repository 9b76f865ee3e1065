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
    """Decode an image (path or bytes) to RGB, or None when it cannot be read or decoded: its
    first frame as `rgb_view` shows it (a 16-bit grey image scaled to 8 bits, anything transparent
    on white)."""
    try:
        source = io.BytesIO(image) if isinstance(image, bytes) else image
        with Image.open(source) as im:
            im.seek(0)
            im.load()
            view = rgb_view(im)
            return im.copy() if view is im else view
    except Exception:  # PIL raises OSError, ValueError, SyntaxError, DecompressionBombError...
        return None


# Greyscale modes wider than 8 bits and the value each holds for white. Pillow's own convert to L
# or RGB clips every value over 255 to white, so a 16-bit grey PNG (mode I;16) came out a white
# page. Mode I is what Pillow's 16-bit grey decoders give where they give no I;16 (0-65535);
# F is taken as 0-1 when every value lies there, else as 0-255 (Pillow's own reading of it).
_WIDE_GREY = {"I;16": 65535, "I;16L": 65535, "I;16B": 65535, "I;16N": 65535, "I": 65535, "F": 255}


def eight_bit(image: Image.Image) -> Image.Image:
    """`image` with a 16-bit or 32-bit integer or float greyscale mode (I;16, I;16B, I, F) scaled
    by its mode's range to 8-bit L (a grey value made transparent by the file, PNG tRNS, becomes
    LA's alpha); any other image as it is. Its info (EXIF, XMP) is kept."""
    if image.mode not in _WIDE_GREY:
        return image
    import numpy as np

    values = np.asarray(image)
    white = _WIDE_GREY[image.mode]
    if image.mode == "F":
        values = np.nan_to_num(values.astype(np.float64), nan=0.0, posinf=255.0, neginf=0.0)
        if values.size and values.min() >= 0.0 and values.max() <= 1.0:
            white = 1
        grey = np.clip(values * (255.0 / white), 0, 255).round().astype(np.uint8)
    else:
        wide = np.clip(values.astype(np.int64), 0, white)
        grey = ((wide * 255 + white // 2) // white).astype(np.uint8)  # 16 bits: round(v / 257)
    info = {k: v for k, v in image.info.items() if k != "transparency"}
    clear = image.info.get("transparency")
    if isinstance(clear, int) and image.mode != "F":
        alpha = np.where(values == clear, 0, 255).astype(np.uint8)
        out = Image.fromarray(np.dstack([grey, alpha]), "LA")
    else:
        out = Image.fromarray(grey, "L")
    out.info.update(info)
    return out


_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")


def has_alpha(image: Image.Image) -> bool:
    """Whether `image` has an alpha channel or a transparent colour (PNG/GIF tRNS)."""
    return image.mode in _ALPHA_MODES or "transparency" in image.info


def on_white(image: Image.Image) -> Image.Image:
    """`image` (after `eight_bit`) with anything transparent composited onto white, as RGB; an
    opaque image as it is (in its own mode). convert("RGB") drops alpha without compositing: black text on a
    transparent ground whose hidden colour is black came out an all-black page."""
    image = eight_bit(image)
    if not has_alpha(image):
        return image
    rgba = image.convert("RGBA")  # P, L and RGB with tRNS too; RGBa and La un-premultiplied
    if rgba.getextrema()[3][0] == 255:
        return image.convert("RGB")  # opaque after all
    white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    white.alpha_composite(rgba)
    return white.convert("RGB")


def rgb_view(image: Image.Image) -> Image.Image:
    """What every reader of pairs sees of a decoded image: `on_white`, as RGB (the image itself
    when it is RGB already)."""
    image = on_white(image)
    return image if image.mode == "RGB" else image.convert("RGB")


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
