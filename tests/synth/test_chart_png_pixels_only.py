"""synth.charts._decoded_png keeps the pixels of the sandbox's chart.png and nothing else: an
ICC profile, text, EXIF, gamma or dpi the code chose never reaches images/chart-*.png
(reviewer's t_png.py: a 200,013-byte iCCP starting SECRET-EXFIL- survived the re-encode)."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image, PngImagePlugin

from synth.charts import _decoded_png

PIXEL_CHUNKS = {b"IHDR", b"IDAT", b"IEND"}


def chunks(png: bytes) -> list[bytes]:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    found, pos = [], 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        found.append(png[pos + 4 : pos + 8])
        pos += 12 + length
    return found


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def loaded(image: Image.Image, **params) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", **params)
    return buf.getvalue()


SECRET = b"SECRET-EXFIL-" + b"A" * 200_000


def test_an_icc_profile_does_not_survive():
    """The reviewer's file: IHDR, iCCP (the secret), IDAT, IEND, written by hand."""
    rows = (b"\0" + b"\0" * 10) * 10
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 10, 10, 8, 0, 0, 0, 0))
        + chunk(b"iCCP", b"x\0\0" + zlib.compress(SECRET))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    out, why = _decoded_png(png)
    assert why == "ok"
    assert set(chunks(out)) <= PIXEL_CHUNKS, chunks(out)
    with Image.open(io.BytesIO(out)) as back:
        assert back.info == {} and back.size == (10, 10)


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "LA"])
def test_only_pixel_chunks_survive_and_the_pixels_do(mode):
    image = Image.new(mode, (7, 5))
    pixels = [tuple((i * 37 + k * 11) % 256 for k in range(len(mode))) for i in range(35)]
    image.putdata([p[0] for p in pixels] if mode == "L" else pixels)
    text = PngImagePlugin.PngInfo()
    text.add_text("Comment", "SECRET-EXFIL-text")
    text.add_text("Zipped", "SECRET-EXFIL-ztxt" * 50, zip=True)
    text.add_itxt("Intl", "SECRET-EXFIL-itxt", lang="en", tkey="k")
    exif = Image.Exif()
    exif[0x010E] = "SECRET-EXFIL-exif"  # ImageDescription
    png = loaded(image, pnginfo=text, icc_profile=SECRET[:5000], exif=exif, dpi=(300, 300))
    png = png[:-12] + chunk(b"tIME", b"\x07\xe8\x01\x01\0\0\0") + png[-12:]
    assert {b"iCCP", b"tEXt", b"zTXt", b"iTXt", b"eXIf", b"pHYs", b"tIME"} <= set(chunks(png))
    out, why = _decoded_png(png)
    assert why == "ok"
    assert set(chunks(out)) <= PIXEL_CHUNKS, chunks(out)
    assert b"SECRET" not in out
    with Image.open(io.BytesIO(out)) as back:
        assert back.mode == mode and back.info == {}
        assert back.tobytes() == image.tobytes()


def test_a_palette_with_transparency_becomes_rgba_with_the_same_look():
    image = Image.new("P", (4, 2))
    image.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * 759)
    image.putdata([0, 1, 2, 0, 1, 2, 0, 1])
    png = loaded(image, transparency=1)
    out, why = _decoded_png(png)
    assert why == "ok"
    assert set(chunks(out)) <= PIXEL_CHUNKS, chunks(out)
    with Image.open(io.BytesIO(out)) as back, Image.open(io.BytesIO(png)) as original:
        assert back.mode == "RGBA"
        assert back.tobytes() == original.convert("RGBA").tobytes()
