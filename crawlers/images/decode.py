"""Safe image decoding: allow-listed formats by magic bytes, pixel and byte caps before decoding.

`decode_image(data, ...)` never raises on bad input; it returns a `Decoded` whose `drop_reason`
is None for a usable image (then `image` holds its decoded first frame), or one of `too_large`, `not_image`, `decompression_bomb`,
`undecodable`, `too_small`, `bad_aspect` with the detail in `error`.

The order is the cheap-and-safe one: the byte cap, then the magic bytes (JPEG, PNG, WebP, GIF,
AVIF; anything else, SVG, HTML, BMP, ICO and HEIC included, is not_image), then the header's
claimed size against the pixel cap and Pillow's decompression-bomb limit (nothing is decoded
yet), then a full decode of the first frame (a truncated or corrupt file is undecodable), then
minimum side and aspect.

`draft_side`: a JPEG whose longer side is at least twice that is decoded reduced (libjpeg's
1/2, 1/4 or 1/8 DCT scaling, the largest that keeps the longer side >= draft_side): every byte
is still decoded, so a truncated or corrupt file is still undecodable, and `width`/`height`
stay the header's size; `image.size` is then smaller (`reduced` says so). `draft_side` may
also be a function of the header's (width, height) giving that side (the face search's copy is
larger for a large image: `FaceConfig.search_side`).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from PIL import Image, UnidentifiedImageError

# Allow-listed Pillow format name -> stored file extension
FORMATS = {
    "JPEG": "jpg",
    "PNG": "png",
    "WEBP": "webp",
    "GIF": "gif",
    "AVIF": "avif",
}
# AVIF: an ISO-BMFF file whose ftyp box names an AVIF brand, as the major brand or a compatible
# one (an image sequence is 'avis'); HEIC ('heic', 'mif1' without an AVIF brand) is not AVIF.
_AVIF_BRANDS = (b"avif", b"avis")


def sniff(data: bytes) -> str | None:
    """The allow-listed format of `data` from its magic bytes ('JPEG', 'PNG', 'WEBP', 'GIF',
    'AVIF'), or None."""
    if data[:3] == b"\xff\xd8\xff":
        return "JPEG"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "PNG"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    if data[4:8] == b"ftyp" and _avif_brand(data):
        return "AVIF"
    return None


def _avif_brand(data: bytes) -> bool:
    """Whether an ISO-BMFF ftyp box (at offset 0) names an AVIF brand (major or compatible)."""
    size = min(int.from_bytes(data[:4], "big"), len(data), 256)
    if data[8:12] in _AVIF_BRANDS:
        return True
    return any(data[i : i + 4] in _AVIF_BRANDS for i in range(16, size - 3, 4))


def _supported(fmt: str) -> bool:
    """Whether this Pillow decodes `fmt` (AVIF needs a Pillow built with libavif: wheels >= 11.3)."""
    if fmt != "AVIF":
        return True
    from PIL import features

    return bool(features.check("avif"))


@dataclass
class Decoded:
    """What decoding found: format and size when known, and a drop reason (None = usable)."""

    format: str | None = None
    width: int | None = None
    height: int | None = None
    drop_reason: str | None = None
    error: str | None = None
    # the decoded first frame and the frame count, for a usable image (the face blur reuses it)
    image: Image.Image | None = field(default=None, repr=False, compare=False)
    frames: int = 1

    @property
    def reduced(self) -> bool:
        """True when `image` was decoded smaller than the header's size (JPEG draft)."""
        return self.image is not None and self.image.size != (self.width, self.height)

    @property
    def ext(self) -> str | None:
        """File extension for storage ('jpg', 'png', 'webp', 'gif', 'avif'), or None."""
        return FORMATS.get(self.format or "")


def _what(data: bytes) -> str:
    head = data[:64].lstrip().lower()
    if head.startswith((b"<svg", b"<?xml")):
        return "SVG/XML"
    if head.startswith((b"<!doctype", b"<html", b"<")):
        return "HTML/markup"
    return f"unknown magic bytes {data[:8].hex()}" if data else "empty body"


def decode_image(
    data: bytes,
    *,
    max_bytes: int,
    max_pixels: int,
    min_side: int,
    max_aspect: float,
    draft_side: int | Callable[[int, int], int] | None = None,
) -> Decoded:
    """Check and decode the first frame of `data`; see the module docstring for the order."""
    if len(data) > max_bytes:
        return Decoded(drop_reason="too_large", error=f"{len(data)} bytes > max_bytes={max_bytes}")
    fmt = sniff(data)
    if fmt is None:
        return Decoded(
            drop_reason="not_image",
            error=f"not an allow-listed image (JPEG, PNG, WebP, GIF, AVIF): {_what(data)}",
        )
    if not _supported(fmt):
        return Decoded(
            format=fmt,
            drop_reason="undecodable",
            error=f"{fmt}: this Pillow has no {fmt} decoder; install a Pillow wheel built with it",
        )
    out = Decoded(format=fmt)
    try:
        with Image.open(io.BytesIO(data), formats=[fmt]) as im:
            out.width, out.height = im.size  # from the header; nothing decoded yet
            pixels = out.width * out.height
            limit = min(max_pixels, Image.MAX_IMAGE_PIXELS or max_pixels)
            if pixels > limit:
                out.drop_reason = "decompression_bomb"
                out.error = (
                    f"{out.width}x{out.height} = {pixels} pixels > max_pixels={max_pixels}"
                    + (
                        f" (Pillow MAX_IMAGE_PIXELS={Image.MAX_IMAGE_PIXELS})"
                        if limit < max_pixels
                        else ""
                    )
                )
                return out
            out.frames = getattr(im, "n_frames", 1)
            im.seek(0)  # GIF/WebP/AVIF sequence: the first frame only
            side = draft_side(*im.size) if callable(draft_side) else draft_side
            if fmt == "JPEG" and side and max(im.size) >= 2 * side:
                k = side / max(im.size)
                im.draft(im.mode, (math.ceil(im.size[0] * k), math.ceil(im.size[1] * k)))
            im.load()
            out.image = im
    except Image.DecompressionBombError as exc:  # Pillow's own limit, raised while opening
        out.drop_reason, out.error = "decompression_bomb", f"Pillow: {exc}"
        return out
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as exc:
        # Truncated ('image file is truncated'), corrupt chunks, bad headers.
        out.drop_reason, out.error = "undecodable", f"{fmt}: {type(exc).__name__}: {exc}"
        return out
    if out.width < 1 or out.height < 1 or min(out.width, out.height) < min_side:
        out.drop_reason = "too_small"
        out.error = f"{out.width}x{out.height}: shorter side < min_side={min_side}"
    elif max(out.width, out.height) / min(out.width, out.height) > max_aspect:
        out.drop_reason = "bad_aspect"
        out.error = f"{out.width}x{out.height}: aspect ratio > max_aspect={max_aspect}"
    if out.drop_reason is not None:
        out.image = None
    return out
