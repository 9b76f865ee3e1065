"""Safe image decoding: allow-listed formats by magic bytes, pixel and byte caps before decoding.

`decode_image(data, ...)` never raises on bad input; it returns a `Decoded` whose `drop_reason`
is None for a usable image (then `image` holds its decoded first frame), or one of `too_large`, `not_image`, `decompression_bomb`,
`undecodable`, `too_small`, `bad_aspect` with the detail in `error`.

The order is the cheap-and-safe one: the byte cap, then the magic bytes (JPEG, PNG, WebP, GIF,
AVIF; anything else, SVG, HTML, BMP, ICO and HEIC included, is not_image), then the header's
claimed size against the pixel cap and Pillow's decompression-bomb limit (nothing is decoded
yet), then a full decode of the first frame (a truncated or corrupt file is undecodable), then
minimum side and aspect. Anything Pillow raises on the bytes (any exception but MemoryError) is
undecodable. A greyscale image wider than 8 bits (a 16-bit PNG: Pillow's I;16) is scaled to 8-bit
L by its range (`common.pairs.eight_bit`): Pillow's convert clips it to a white page.

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
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from PIL import Image

from common.pairs import eight_bit

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
            out.image = eight_bit(im)  # a 16-bit grey image scaled to 8 bits, not clipped white
    except Image.DecompressionBombError as exc:  # Pillow's own limit, raised while opening
        out.drop_reason, out.error = "decompression_bomb", f"Pillow: {exc}"
        return out
    except MemoryError:
        raise  # the run's, not the image's (KeyboardInterrupt is no Exception either)
    except Exception as exc:
        # Truncated ('image file is truncated'), corrupt chunks, bad headers: OSError,
        # ValueError, SyntaxError, EOFError; and whatever else a plugin raises on bad bytes (a
        # corrupt AVIF: RuntimeError 'Missing or empty image item'; a GIF cut after an extension
        # introducer: IndexError from n_frames). Bad input never raises here.
        out.drop_reason, out.error = "undecodable", f"{fmt}: {type(exc).__name__}: {exc}"[:500]
        out.image = None
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


# --- What a file carries beyond its image --------------------------------------------------------
#
# A face-free image is stored as fetched, byte for byte, unless its bytes carry more than the
# image: an EXIF thumbnail (IFD1: the camera's, or anyone's, picture of something else), bytes
# after the format's end (a JPEG after the EOI, after a PNG's IEND, past a WebP's RIFF size or a
# GIF's trailer), or chunks and segments beyond a small safe set (a private PNG chunk can hold a
# whole JPEG). Every viewer and reader shows the image and none of that, and the face search sees
# only the image: such a file is stored stripped of it, losslessly where the format allows (the
# same pixels), else re-encoded (`strip_extras`).

# Kept as they are: what decoding and colour need. JPEG: APP0 JFIF (its own thumbnail emptied),
# APP2 ICC profile and APP14 Adobe (the colour transform); every other marker is the image itself
# (tables, frame, scans, restart intervals). EXIF is dropped in every format (GPS position, the
# camera's serial, the artist): an orientation other than 1 is applied by a re-encode first.
_PNG_SAFE = frozenset(
    (b"IHDR", b"PLTE", b"IDAT", b"IEND")
    + (b"iCCP", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"pHYs", b"sBIT", b"bKGD")
)
_WEBP_SAFE = frozenset((b"VP8 ", b"VP8L", b"VP8X", b"ALPH", b"ICCP", b"ANIM", b"ANMF"))
_GIF_LOOPS = (b"NETSCAPE2.0", b"ANIMEXTS1.0")  # the loop count; every other extension is dropped
_AVIF_ITEMS = (b"av01", b"grid")  # image items; Exif, mime (XMP), gain maps, other codecs are not
_AVIF_BOXES = (b"ftyp", b"meta", b"mdat", b"free", b"skip", b"moov")
# An image's signature inside a kept block (a maker note's preview JPEG in EXIF, a profile that is
# a picture): the block is dropped too.
_IMAGE_INSIDE = re.compile(
    rb"\xff\xd8\xff[\xc0-\xfe]|\x89PNG\r\n\x1a\n|GIF8[79]a|RIFF.{4}WEBP|ftyp(?:avif|avis|heic|mif1)",
    re.DOTALL,
)
_ICC_MAX = 4 * 2**20  # a PNG's iCCP is inflated this far to be looked into; larger is dropped


class _Unparsed(ValueError):
    """The file's structure is not what its format says (yet it decoded): re-encode it."""


@dataclass
class Extras:
    """What a file carries beyond its image (`dropped`: what, in the order found; empty: nothing)
    and the file without it: `data` the same pixels, losslessly, or None where the format allows
    no lossless strip (AVIF) or the structure could not be followed (then re-encode)."""

    dropped: list[str]
    data: bytes | None

    @property
    def why(self) -> str:
        """`dropped` counted, as one line: 'XMP, 2 x comment, 20078 bytes after EOI'."""
        counts: dict[str, int] = {}
        for what in self.dropped:
            counts[what] = counts.get(what, 0) + 1
        return ", ".join(w if n == 1 else f"{n} x {w}" for w, n in counts.items())


def strip_extras(data: bytes, fmt: str, *, drop_exif: bool = False) -> Extras:
    """What `data` (a decoded file of allow-listed format `fmt`) carries beyond its image, and the
    file without it (see `Extras`). Plain files come back as `Extras([], data)`, the same object.
    A JPEG's EXIF is always dropped (as a PNG's eXIf and a WebP's EXIF are); `drop_exif` says
    why: its orientation could not be read, so every viewer then shows the stored pixels as
    they are."""
    try:
        if fmt == "JPEG":
            return _strip_jpeg(data, drop_exif)
        if fmt == "PNG":
            return _strip_png(data)
        if fmt == "WEBP":
            return _strip_webp(data)
        if fmt == "GIF":
            return _strip_gif(data)
        if fmt == "AVIF":
            dropped = _avif_extras(data)
            return Extras(dropped, None if dropped else data)
    except MemoryError:
        raise
    except Exception as exc:  # _Unparsed, or a structure this parser did not foresee
        return Extras([f"{fmt} structure not followed ({exc})"], None)
    return Extras([], data)


def _joined(data: bytes, keep: list, dropped: list[str]) -> Extras:
    """The kept (start, end) ranges of `data` (or bytes) joined; `data` itself when none dropped."""
    if not dropped:
        return Extras([], data)
    parts = [data[a:b] if isinstance(a, int) else a for a, b in keep]
    return Extras(dropped, b"".join(parts))


def holds_image(block: bytes) -> bool:
    """Whether `block` (a metadata segment's payload) holds an image's signature."""
    return _IMAGE_INSIDE.search(block) is not None


def exif_thumbnail(tiff: bytes) -> bool:
    """Whether a TIFF-structured EXIF block (after 'Exif\\0\\0') has an IFD1, the thumbnail's
    directory; raises _Unparsed on a block whose IFD0 cannot be followed."""
    if tiff[:4] not in (b"II*\x00", b"MM\x00*"):
        raise _Unparsed("EXIF without a TIFF header")
    order = "little" if tiff[:2] == b"II" else "big"
    ifd0 = int.from_bytes(tiff[4:8], order)
    if ifd0 < 8 or ifd0 + 2 > len(tiff):
        raise _Unparsed("EXIF IFD0 outside the block")
    entries = int.from_bytes(tiff[ifd0 : ifd0 + 2], order)
    at = ifd0 + 2 + 12 * entries
    if at + 4 > len(tiff):
        raise _Unparsed("EXIF IFD0 runs past the block")
    return int.from_bytes(tiff[at : at + 4], order) != 0


def _jpeg_segment(marker: int, payload: bytes, state: dict) -> tuple[str | None, bytes | None]:
    """(why a JPEG segment is dropped, or None to keep it; its rewritten payload, or None)."""
    if marker == 0xE0:
        if payload[:5] != b"JFIF\x00":
            return ("JFXX thumbnail" if payload[:5] == b"JFXX\x00" else "APP0"), None
        if len(payload) > 14 or (len(payload) == 14 and payload[12] * payload[13]):
            return "JFIF thumbnail", payload[:12] + b"\x00\x00"  # no thumbnail, the rest kept
        return None, None
    if marker == 0xE1:
        if payload[:6] == b"Exif\x00\x00":
            if state["exif"]:
                return "second EXIF", None
            state["exif"] = True
            if state["drop_exif"]:
                return "EXIF (orientation unreadable)", None
            try:
                thumb = exif_thumbnail(payload[6:])
            except _Unparsed:
                return "unreadable EXIF", None
            if thumb:
                return "EXIF thumbnail", None
            if holds_image(payload):
                return "EXIF holding an image", None
            # Dropped as a PNG's eXIf and a WebP's EXIF are: GPS position, the camera's serial,
            # the artist, comments. Its orientation is 1 or absent here (any other is turned
            # upright and re-encoded by faces.redact), so every viewer shows the same pixels.
            return "EXIF", None
        if payload.startswith(b"http://ns.adobe.com/xap/1.0/\x00"):
            return "XMP", None
        if payload.startswith(b"http://ns.adobe.com/xmp/extension/\x00"):
            return "extended XMP", None
        return "APP1", None
    if marker == 0xE2:
        if payload[:12] == b"ICC_PROFILE\x00":
            return ("ICC profile holding an image", None) if holds_image(payload) else (None, None)
        if payload[:4] == b"MPF\x00":
            return "MPF (multi-picture index)", None
        return "APP2", None
    if marker == 0xEE:
        return (None, None) if payload[:5] == b"Adobe" else ("APP14", None)
    if 0xE3 <= marker <= 0xEF:
        return f"APP{marker - 0xE0}", None
    if marker == 0xFE:
        return "comment", None
    if 0xF0 <= marker <= 0xFD:
        return f"marker FF{marker:02X}", None
    return None, None


def _strip_jpeg(data: bytes, drop_exif: bool) -> Extras:
    """JPEG: segments walked from SOI to EOI; the tables, frame and entropy-coded scans are kept
    byte for byte (so the pixels are the same), the APPn/COM segments outside the safe set, junk
    between segments and everything after EOI are dropped."""
    n, keep, dropped = len(data), [(0, 2)], []
    state = {"exif": False, "drop_exif": drop_exif}
    i = 2
    while i < n:
        if data[i] != 0xFF:  # junk where a marker should be (Pillow skips it)
            j = data.find(b"\xff", i)
            j = n if j < 0 else j
            dropped.append("bytes between segments")
            i = j
            continue
        j = i
        while j + 1 < n and data[j + 1] == 0xFF:  # fill bytes before a marker
            j += 1
        if j + 1 >= n:
            dropped.append("bytes after the last segment")
            break
        marker = data[j + 1]
        if marker == 0xD9:  # EOI
            keep.append((i, j + 2))
            i = j + 2
            if i < n:
                dropped.append(f"{n - i} bytes after EOI")
            return _joined(data, keep, dropped)
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # TEM, RSTn: no length
            keep.append((i, j + 2))
            i = j + 2
            continue
        if marker == 0x00:  # an escaped 0xFF outside a scan: junk (Pillow and libjpeg skip it)
            dropped.append("bytes between segments")
            i = j + 2
            continue
        if marker == 0xD8 or j + 4 > n:
            raise _Unparsed(f"JPEG marker FF{marker:02X} at {j}")
        length = int.from_bytes(data[j + 2 : j + 4], "big")
        end = j + 2 + length
        if length < 2 or end > n:
            raise _Unparsed(f"JPEG segment FF{marker:02X} at {j} runs past the file")
        why, rewritten = _jpeg_segment(marker, data[j + 4 : end], state)
        if why is not None:
            dropped.append(why)
            if rewritten is not None:
                head = data[j : j + 2] + (len(rewritten) + 2).to_bytes(2, "big")
                keep.append((head + rewritten, None))
            i = end
            continue
        if marker == 0xDA:  # SOS: its entropy-coded data runs to the next real marker
            k = end
            while True:
                k = data.find(b"\xff", k)
                if k < 0 or k + 1 >= n:
                    k = n
                    break
                if data[k + 1] == 0x00 or 0xD0 <= data[k + 1] <= 0xD7 or data[k + 1] == 0xFF:
                    k += 1  # stuffed 0xFF, a restart marker, or fill before a marker
                    continue
                break
            end = k
        keep.append((i, end))
        i = end
    return _joined(data, keep, dropped)  # no EOI: the file ends the image (Pillow decoded it)


def _png_chunk_why(ctype: bytes, body: bytes) -> str | None:
    if ctype not in _PNG_SAFE:
        name = ctype.decode("latin-1")
        return {"eXIf": "EXIF", "tEXt": "text", "zTXt": "text", "iTXt": "text/XMP"}.get(
            name, f"chunk {name}"
        )
    if ctype == b"iCCP":  # compressed: looked into inflated
        try:
            z = zlib.decompressobj()
            profile = z.decompress(body[body.index(b"\x00") + 2 :], _ICC_MAX)
        except (ValueError, zlib.error):
            return "unreadable ICC profile"
        if z.unconsumed_tail:
            return "oversized ICC profile"
        if holds_image(profile):
            return "ICC profile holding an image"
    return None


def _strip_png(data: bytes) -> Extras:
    """PNG: only the critical chunks (IHDR, PLTE, IDAT, IEND) and the safe ancillary ones kept, as
    they are (the same pixels); nothing after IEND."""
    n, keep, dropped = len(data), [(0, 8)], []
    i = 8
    while i < n:
        if i + 12 > n:
            dropped.append(f"{n - i} bytes after the last chunk")
            break
        length = int.from_bytes(data[i : i + 4], "big")
        ctype = data[i + 4 : i + 8]
        end = i + 12 + length
        if not ctype.isalpha():
            raise _Unparsed(f"PNG chunk type {ctype!r} at {i}")
        if end > n:
            if ctype in (b"IDAT", b"IHDR", b"PLTE"):
                raise _Unparsed(f"PNG chunk {ctype.decode()} at {i} runs past the file")
            dropped.append(f"{n - i} bytes of a cut chunk")
            break
        why = _png_chunk_why(ctype, data[i + 8 : i + 8 + length])
        if why is None:
            keep.append((i, end))
        else:
            dropped.append(why)
        i = end
        if ctype == b"IEND":
            if i < n:
                dropped.append(f"{n - i} bytes after IEND")
            break
    return _joined(data, keep, dropped)


def _strip_webp(data: bytes) -> Extras:
    """WebP: the RIFF container rebuilt with the image's chunks only (VP8/VP8L/VP8X/ALPH/ICCP/
    ANIM/ANMF, untouched: the same pixels), VP8X's EXIF/XMP/ICC flags cleared for what went, and
    nothing past the RIFF size."""
    n = len(data)
    riff_end = 8 + int.from_bytes(data[4:8], "little")
    if riff_end > n or riff_end < 12:
        raise _Unparsed(f"WebP RIFF size {riff_end - 8} against {n} bytes")
    chunks, dropped, i, flags_at = [], [], 12, None
    while i < riff_end:
        if i + 8 > riff_end:
            raise _Unparsed(f"WebP chunk header at {i} cut")
        fourcc = data[i : i + 4]
        size = int.from_bytes(data[i + 4 : i + 8], "little")
        end = i + 8 + size + (size & 1)
        if end > riff_end:
            raise _Unparsed(f"WebP chunk {fourcc!r} at {i} runs past the RIFF size")
        why = None
        if fourcc not in _WEBP_SAFE:
            why = {b"EXIF": "EXIF", b"XMP ": "XMP"}.get(fourcc, f"chunk {fourcc!r}")
        elif fourcc == b"ICCP" and holds_image(data[i + 8 : i + 8 + size]):
            why = "ICC profile holding an image"
        if why is None:
            if fourcc == b"VP8X":
                flags_at = sum(len(c) for c in chunks) + 8
            chunks.append(data[i:end])
        else:
            dropped.append(why)
        i = end
    if riff_end < n:
        dropped.append(f"{n - riff_end} bytes after the RIFF container")
    if not dropped:
        return Extras([], data)
    body = bytearray(b"WEBP" + b"".join(chunks))
    if flags_at is not None:
        kept = {bytes(c[:4]) for c in chunks}
        clear = 0x08 | 0x04 | (0 if b"ICCP" in kept else 0x20)  # EXIF, XMP, ICC
        body[4 + flags_at] &= ~clear & 0xFF
    return Extras(dropped, b"RIFF" + len(body).to_bytes(4, "little") + bytes(body))


def _gif_blocks(data: bytes, i: int) -> int:
    """The end of the data sub-blocks starting at `i` (after their terminator)."""
    while True:
        if i >= len(data):
            raise _Unparsed("GIF sub-blocks run past the file")
        size = data[i]
        i += 1 + size
        if size == 0:
            return i


def _strip_gif(data: bytes) -> Extras:
    """GIF: the header, colour tables, graphic control and loop extensions and image blocks kept
    as they are (the same pixels); comments, plain text and other application extensions (XMP,
    ICC) and everything after the trailer dropped."""
    n, dropped = len(data), []
    i = 13
    if n < i:
        raise _Unparsed("GIF header cut")
    if data[10] & 0x80:
        i += 3 * 2 ** ((data[10] & 7) + 1)
    keep = [(0, i)]
    while i < n:
        block = data[i]
        if block == 0x3B:  # trailer
            keep.append((i, i + 1))
            i += 1
            if i < n:
                dropped.append(f"{n - i} bytes after the GIF trailer")
            return _joined(data, keep, dropped)
        if block == 0x2C:  # image descriptor, local colour table, LZW code size, data
            if i + 10 > n:
                raise _Unparsed("GIF image descriptor cut")
            j = i + 10
            if data[i + 9] & 0x80:
                j += 3 * 2 ** ((data[i + 9] & 7) + 1)
            end = _gif_blocks(data, j + 1)
            keep.append((i, end))
        elif block == 0x21 and i + 1 < n:
            label = data[i + 1]
            end = _gif_blocks(data, i + 2)
            if label == 0xF9 or (label == 0xFF and data[i + 3 : i + 14] in _GIF_LOOPS):
                keep.append((i, end))
            elif label == 0xFF:
                app = data[i + 3 : i + 14].decode("latin-1", "replace")
                dropped.append(f"GIF application extension {app!r}")
            else:
                dropped.append(
                    {0xFE: "GIF comment", 0x01: "GIF plain text"}.get(label, f"GIF {label:02X}")
                )
        else:  # not a block: Pillow skips such bytes, and found no other frame in them
            dropped.append("unknown GIF blocks")
            keep.append((b";", None))  # the trailer
            return _joined(data, keep, dropped)
        i = end
    return _joined(data, keep, dropped)  # no trailer: the file ends the image


def _boxes(data: bytes, start: int, end: int):
    """(type, payload start, box end) of the ISO-BMFF boxes in data[start:end]."""
    i = start
    while i < end:
        if i + 8 > end:
            raise _Unparsed(f"{end - i} bytes after the last box")
        size, kind, head = int.from_bytes(data[i : i + 4], "big"), data[i + 4 : i + 8], 8
        if size == 1:
            size, head = int.from_bytes(data[i + 8 : i + 16], "big"), 16
        elif size == 0:
            size = end - i
        if size < head or i + size > end:
            raise _Unparsed(f"box {kind!r} at {i} runs past its parent")
        yield kind, i + head, i + size
        i += size


def _avif_extras(data: bytes) -> list[str]:
    """AVIF: what beyond the image's own items (av01 and grid) and boxes it carries; an AVIF is
    re-encoded to drop it (its items are located by offsets, no lossless strip here)."""
    dropped = []
    try:
        top = list(_boxes(data, 0, len(data)))
    except _Unparsed as exc:
        return [f"AVIF: {exc}"]
    for kind, start, end in top:
        if kind not in _AVIF_BOXES:
            dropped.append(f"box {kind!r}")
        if kind != b"meta":
            continue
        for child, cstart, cend in _boxes(data, start + 4, end):  # meta is a full box
            version = data[cstart] if cstart < cend else 0
            if child == b"iinf":
                at = cstart + 4 + (2 if version == 0 else 4)
                for entry, estart, _eend in _boxes(data, at, cend):
                    v = data[estart] if entry == b"infe" else None
                    if v is None or v < 2:
                        dropped.append("AVIF item without a type")
                        continue
                    type_at = estart + 4 + (2 if v == 2 else 4) + 2
                    item = data[type_at : type_at + 4]
                    if item not in _AVIF_ITEMS:
                        dropped.append(
                            {b"Exif": "EXIF", b"mime": "XMP"}.get(item, f"AVIF item {item!r}")
                        )
            elif child == b"iref":
                for ref, _rs, _re in _boxes(data, cstart + 4, cend):
                    if ref == b"thmb":
                        dropped.append("AVIF thumbnail")
    return dropped
