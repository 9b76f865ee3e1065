"""What the image stage stores and reads whatever the file is: a 16-bit grey image, orientation
metadata however carried, bytes beyond the image (an EXIF thumbnail, data after the end, private
chunks), malformed EXIF, corrupt files Pillow raises odd errors on, and transparency."""

from __future__ import annotations

import hashlib
import io
import struct
import zlib

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image, ImageOps, PngImagePlugin

from common.pairs import open_image
from crawlers.images import FETCHED, decode_image, fetch_images
from crawlers.images.faces import FaceConfig, FaceDetector, redact

from .conftest import FAST, Resource, ref
from .face_render import background, photo_face, scene

DET = FaceDetector()
IP = "127.0.0.155"


def _enc(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def _decode(data: bytes):
    return decode_image(
        data,
        max_bytes=2**24,
        max_pixels=2**26,
        min_side=16,
        max_aspect=4.0,
        draft_side=FaceConfig().search_side,
    )


def _redact(data: bytes, detector: FaceDetector = DET):
    """What the fetch stores for `data` (decode_image, then redact)."""
    dec = _decode(data)
    assert dec.drop_reason is None, dec.error
    return redact(
        data, dec.image, dec.format, detector, frames=dec.frames, size=(dec.width, dec.height)
    )


def _pixels(data: bytes) -> tuple[str, tuple[int, int], bytes]:
    """The first frame as Pillow decodes it: mode, size and pixels."""
    with Image.open(io.BytesIO(data)) as im:
        im.seek(0)
        im.load()
        return im.mode, im.size, im.tobytes()


def _plain(size=(120, 90), seed=0) -> Image.Image:
    return background("gradient", size, seed)


def _face(seed: int = 2) -> tuple[Image.Image, tuple[int, int, int, int]]:
    return scene(photo_face(110), (260, 230), bg="flat", seed=seed)


def _orientation_exif(value: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = value
    return exif.tobytes()


def _exif_with_thumbnail(thumb: bytes, orientation: int = 1) -> bytes:
    """An EXIF block (little-endian TIFF) whose IFD0 holds Orientation and whose IFD1 holds a
    JPEG thumbnail, as cameras write it."""
    ifd0 = struct.pack("<H", 1) + struct.pack("<HHII", 0x0112, 3, 1, orientation)
    ifd1_at = 8 + len(ifd0) + 4
    ifd0 += struct.pack("<I", ifd1_at)
    thumb_at = ifd1_at + 2 + 3 * 12 + 4
    ifd1 = struct.pack("<H", 3) + struct.pack("<HHII", 0x0103, 3, 1, 6)
    ifd1 += struct.pack("<HHII", 0x0201, 4, 1, thumb_at) + struct.pack(
        "<HHII", 0x0202, 4, 1, len(thumb)
    )
    ifd1 += struct.pack("<I", 0)
    return b"Exif\x00\x00II*\x00" + struct.pack("<I", 8) + ifd0 + ifd1 + thumb


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def _before_iend(png: bytes, chunk: bytes) -> bytes:
    at = png.rindex(b"IEND") - 4
    return png[:at] + chunk + png[at:]


def _malformed_exif() -> bytes:
    """Orientation 6 and a GPS IFD whose entry count says 157 where it holds 2: Pillow reads it,
    and ImageOps.exif_transpose's re-serialisation raises TypeError on it (a fuzzed camera EXIF;
    every decoder shows the image)."""
    exif = Image.Exif()
    exif[0x0112] = 6
    exif[0x010F] = "Make"
    gps = exif.get_ifd(0x8825)
    gps[1] = "N"
    gps[2] = (1.0, 2.0, 3.0)
    raw = bytearray(exif.tobytes())
    tiff = 6  # after 'Exif\0\0'
    order = "big" if raw[tiff : tiff + 2] == b"MM" else "little"
    ifd0 = tiff + int.from_bytes(raw[tiff + 4 : tiff + 8], order)
    for k in range(int.from_bytes(raw[ifd0 : ifd0 + 2], order)):
        entry = ifd0 + 2 + 12 * k
        if int.from_bytes(raw[entry : entry + 2], order) == 0x8825:
            gps_at = tiff + int.from_bytes(raw[entry + 8 : entry + 12], order)
            break
    assert int.from_bytes(raw[gps_at : gps_at + 2], order) == 2
    raw[gps_at : gps_at + 2] = (157).to_bytes(2, order)
    return bytes(raw)


# --- 16-bit and float grey ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "values", "expected"),
    [
        ("I;16", [0, 257, 32896, 65535], [0, 1, 128, 255]),
        ("I;16B", [0, 257, 32896, 65535], [0, 1, 128, 255]),
        ("I", [0, 257, 32896, 65535], [0, 1, 128, 255]),
        ("F", [0.0, 0.25, 0.5, 1.0], [0, 64, 128, 255]),
        ("F", [0.0, 64.0, 128.0, 255.0], [0, 64, 128, 255]),
    ],
)
def test_wide_grey_modes_are_scaled_to_8_bits_by_their_range(mode, values, expected):
    from common.pairs import eight_bit

    dtype = {"I;16": "<u2", "I;16B": ">u2", "I": "<i4", "F": "<f4"}[mode]
    raw = np.asarray([values], dtype=dtype).tobytes()
    img = Image.frombytes(mode, (4, 1), raw)
    out = eight_bit(img)
    assert out.mode == "L" and list(np.asarray(out)[0]) == expected


def test_a_16_bit_grey_png_is_read_and_searched_in_its_own_tones_and_its_face_blurred():
    """Pillow decodes a 16-bit grey PNG as I;16 and its convert("L"/"RGB") clips every value over
    255 to white: the face search saw a white page and stored the face as fetched."""
    img, _ = _face()
    grey = np.asarray(img.convert("L"))
    data = _enc(Image.fromarray(grey.astype(np.uint16) * 257), "PNG")
    with Image.open(io.BytesIO(data)) as im:
        assert im.mode.startswith("I")
    dec = _decode(data)
    assert dec.image.mode == "L" and np.array_equal(np.asarray(dec.image), grey)
    seen = open_image(data)
    assert seen.mode == "RGB" and np.array_equal(np.asarray(seen)[..., 0], grey)
    red = _redact(data)
    assert red.face_count >= 1 and red.data != data and red.change == "faces blurred"
    with Image.open(io.BytesIO(red.data)) as out:
        assert out.mode == "L"


def test_a_16_bit_grey_pixel_made_transparent_by_trns_is_composited_onto_white():
    grey = np.full((20, 30), 40 * 257, np.uint16)
    grey[:, :10] = 1000
    data = _enc(Image.fromarray(grey), "PNG", transparency=1000)
    seen = np.asarray(open_image(data))
    assert (seen[:, :10] == 255).all() and (seen[:, 10:] == 40).all()


# --- orientation ----------------------------------------------------------------------------


def _xmp(value: int) -> bytes:
    return (
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-'
        b'rdf-syntax-ns#"><rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" '
        b'tiff:Orientation="%d"/></rdf:RDF></x:xmpmeta>' % value
    )


def _raw_profile(value: int) -> PngImagePlugin.PngInfo:
    raw = _orientation_exif(value)
    hexed = raw.hex()
    info = PngImagePlugin.PngInfo()
    lines = "\n".join(hexed[i : i + 72] for i in range(0, len(hexed), 72))
    info.add_text("Raw profile type exif", f"\nexif\n{len(raw):8d}\n{lines}\n")
    return info


CARRIERS = {
    "JPEG EXIF": lambda img, n: _enc(img, "JPEG", quality=95, exif=_orientation_exif(n)),
    "JPEG XMP": lambda img, n: _enc(img, "JPEG", quality=95, xmp=_xmp(n)),
    "PNG eXIf": lambda img, n: _enc(img, "PNG", exif=_orientation_exif(n)),
    "PNG raw profile text": lambda img, n: _enc(img, "PNG", pnginfo=_raw_profile(n)),
    "WebP XMP": lambda img, n: _enc(img, "WEBP", lossless=True, xmp=_xmp(n)),
}


@pytest.mark.parametrize("turn", [3, 6, 8])
@pytest.mark.parametrize("carrier", list(CARRIERS))
def test_an_image_with_orientation_metadata_is_stored_upright_without_it(carrier, turn):
    """Pillow turns by EXIF, a PNG's raw-profile text and XMP; readers of pairs turn by none of
    them and browsers ignore XMP and PNG text: whatever carries it, the stored file is the
    upright image without metadata, the one searched, so every view of it is the same."""
    img = _plain((120, 90), seed=turn)
    data = CARRIERS[carrier](img, turn)
    with Image.open(io.BytesIO(data)) as im:
        upright = ImageOps.exif_transpose(im).convert("RGB")  # what Pillow shows
        assert upright.size != img.size or turn == 3
    red = _redact(data)
    assert red.boxes == [] and red.data != data and not red.same_pixels
    assert red.change == f"turned upright (orientation {turn})"
    with Image.open(io.BytesIO(red.data)) as out:
        assert out.format == Image.open(io.BytesIO(data)).format
        assert out.getexif().get(0x0112) is None and "xmp" not in out.info
        assert not any("exif" in k.lower() for k in out.info)
        assert (red.width, red.height) == out.size == upright.size
        stored = np.asarray(out.convert("RGB"), dtype=float)
        assert np.abs(stored - np.asarray(upright, dtype=float)).mean() < 2.0
        assert np.array_equal(np.asarray(ImageOps.exif_transpose(out)), np.asarray(out))
    assert np.array_equal(np.asarray(open_image(red.data)), np.asarray(out.convert("RGB")))


def test_a_large_jpeg_decoded_reduced_is_stored_upright_at_full_size():
    img = _plain((2000, 1200), seed=4)
    data = _enc(img, "JPEG", quality=85, exif=_orientation_exif(6))
    assert _decode(data).reduced
    red = _redact(data)
    assert (red.width, red.height) == (1200, 2000) and red.change.startswith("turned upright")
    with Image.open(io.BytesIO(red.data)) as out:
        assert out.size == (1200, 2000) and out.getexif().get(0x0112) is None


def test_malformed_exif_is_turned_by_its_orientation_without_being_rewritten():
    """ImageOps.exif_transpose re-serialises the EXIF it turns by, and raised TypeError on this
    one: the row became a process_error, and eight in a row ended the run."""
    exif = _malformed_exif()
    img = _plain((96, 64), seed=1)
    data = _enc(img, "JPEG", quality=90, exif=exif)
    with Image.open(io.BytesIO(data)) as im:
        with pytest.raises(TypeError):
            ImageOps.exif_transpose(im)
    red = _redact(data)
    assert red.change == "turned upright (orientation 6)" and (red.width, red.height) == (64, 96)


@pytest.mark.parametrize("value", [0, 9, 300])
def test_an_orientation_that_cannot_be_read_is_dropped_and_the_pixels_stored_as_they_are(value):
    """A value outside 1-8 (Pillow ignores it; a browser may not): the EXIF is dropped, so every
    viewer shows the pixels as they are, the ones searched, byte for byte in the entropy data."""
    img = _plain((96, 64), seed=2)
    data = _enc(img, "JPEG", quality=90, exif=_orientation_exif(value))
    red = _redact(data)
    assert red.change == "stripped (EXIF (orientation unreadable))" and red.same_pixels
    assert _pixels(red.data) == _pixels(data)
    with Image.open(io.BytesIO(red.data)) as out:
        assert "exif" not in out.info


# --- bytes beyond the image -----------------------------------------------------------------


def _face_jpeg(size=(160, 140)) -> bytes:
    img, _ = _face()
    return _enc(img.resize(size), "JPEG", quality=85)


def _webp_trailing() -> bytes:
    return _enc(_plain(), "WEBP", quality=80) + _face_jpeg()


HIDDEN = {
    "JPEG EXIF thumbnail": (
        lambda: _enc(_plain(), "JPEG", quality=90, exif=_exif_with_thumbnail(_face_jpeg())),
        "EXIF thumbnail",
    ),
    "JPEG after EOI": (
        lambda: _enc(_plain(), "JPEG", quality=90) + _face_jpeg(),
        "bytes after EOI",
    ),
    "JPEG XMP and comment": (
        lambda: _enc(_plain(), "JPEG", quality=90, xmp=b"<x/>", comment=b"hi"),
        "XMP, comment",
    ),
    "PNG private chunk": (
        lambda: _before_iend(_enc(_plain(), "PNG"), _png_chunk(b"prVt", _face_jpeg())),
        "chunk prVt",
    ),
    "PNG eXIf thumbnail": (
        lambda: _enc(_plain(), "PNG", exif=_exif_with_thumbnail(_face_jpeg())),
        "EXIF",
    ),
    "PNG after IEND": (lambda: _enc(_plain(), "PNG") + _face_jpeg(), "bytes after IEND"),
    "WebP EXIF thumbnail": (
        lambda: _enc(_plain(), "WEBP", quality=80, exif=_exif_with_thumbnail(_face_jpeg())),
        "EXIF",
    ),
    "WebP after the RIFF size": (_webp_trailing, "bytes after the RIFF container"),
    "GIF comment and after the trailer": (
        lambda: _enc(_plain().convert("P"), "GIF", comment=b"x" * 40) + b"<html>" + _face_jpeg(),
        "GIF comment",
    ),
}


@pytest.mark.parametrize("case", list(HIDDEN))
def test_bytes_beyond_the_image_are_stripped_and_the_pixels_kept_exactly(case):
    """A face-free image's bytes that carry another picture (a thumbnail of a face, a JPEG after
    the end, a private chunk) were stored as fetched: every viewer shows only the main image, the
    face search saw only it, and the face went into the training set. Such a file is stored
    stripped, losslessly: the same pixels, decoded exactly alike."""
    make, why = HIDDEN[case]
    data = make()
    dec = _decode(data)
    assert dec.drop_reason is None
    red = _redact(data)
    assert red.boxes == [] and red.data != data and red.same_pixels, red.change
    assert red.change.startswith("stripped (") and why in red.change, red.change
    assert _pixels(red.data) == _pixels(data)
    assert len(red.data) < len(data)
    assert b"\xff\xd8\xff" not in red.data[3:]  # no JPEG inside it any more
    with Image.open(io.BytesIO(red.data)) as out:
        assert not {"exif", "xmp", "comment"} & set(out.info)


def test_a_jfif_thumbnail_is_emptied_and_the_rest_of_the_jpeg_kept():
    data = _enc(_plain(), "JPEG", quality=90)
    assert data[2:4] == b"\xff\xe0" and data[6:11] == b"JFIF\x00" and data[4:6] == b"\x00\x10"
    thumb = bytes(range(96))  # a 4 x 8 RGB thumbnail
    app0 = data[6:18] + b"\x04\x08" + thumb
    with_thumb = data[:2] + b"\xff\xe0" + (len(app0) + 2).to_bytes(2, "big") + app0 + data[20:]
    red = _redact(with_thumb)
    assert red.change == "stripped (JFIF thumbnail)" and red.data == data


def _plain_files() -> dict[str, bytes]:
    from PIL import ImageCms

    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    img = _plain()
    png_meta = _enc(img, "PNG", icc_profile=icc, dpi=(96, 96))
    png_meta = _before_iend(png_meta, _png_chunk(b"gAMA", (45455).to_bytes(4, "big")))
    return {
        "JPEG": _enc(img, "JPEG", quality=90),
        "progressive JPEG with restarts": _enc(
            img, "JPEG", progressive=True, restart_marker_rows=1
        ),
        "JPEG with ICC": _enc(img, "JPEG", quality=90, icc_profile=icc),
        "CMYK JPEG (Adobe)": _enc(img.convert("CMYK"), "JPEG", quality=90),
        "PNG": _enc(img, "PNG"),
        "PNG with iCCP, pHYs, gAMA": png_meta,
        "palette PNG with tRNS": _enc(img.convert("P"), "PNG", transparency=3),
        "WebP": _enc(img, "WEBP", quality=80),
        "WebP with ICC (VP8X)": _enc(img.convert("RGBA"), "WEBP", lossless=True, icc_profile=icc),
        "GIF": _enc(img.convert("P"), "GIF"),
        "AVIF": _enc(img, "AVIF", quality=80),
    }


def test_plain_files_are_stored_byte_for_byte():
    """Zero change to an image without faces whose bytes are just the image."""
    for name, data in _plain_files().items():
        red = _redact(data)
        assert red.boxes == [] and red.data is data and red.change is None, (name, red.change)


def test_an_avif_carrying_exif_is_re_encoded_without_it():
    exif = Image.Exif()
    exif[0x010F] = "Make"
    data = _enc(_plain(), "AVIF", quality=80, exif=exif.tobytes())
    red = _redact(data)
    assert red.change == "re-encoded without (EXIF)" and not red.same_pixels
    with Image.open(io.BytesIO(red.data)) as out:
        assert out.format == "AVIF" and "exif" not in out.info


def test_the_fetch_records_why_a_stored_file_differs(image_server, tmp_path):
    img = _plain()
    files = {
        "/plain.jpg": _enc(img, "JPEG", quality=90),
        "/thumb.jpg": _enc(img, "JPEG", quality=90, exif=_exif_with_thumbnail(_face_jpeg())),
        "/turned.jpg": _enc(img, "JPEG", quality=90, exif=_orientation_exif(6)),
    }
    server = image_server({p: Resource(b, "image/jpeg") for p, b in files.items()}, ips=[IP])
    refs = [ref(p[1:-4], server.url(IP, p)) for p in files]
    fetch_images(refs, tmp_path, FAST)
    rows = {r["id"]: r for r in pq.read_table(tmp_path / FETCHED).to_pylist()}
    assert rows["plain"]["stored_change"] is None
    assert rows["thumb"]["stored_change"] == "stripped (EXIF thumbnail)"
    assert rows["turned"]["stored_change"] == "turned upright (orientation 6)"
    for name, r in rows.items():
        stored = (tmp_path / r["image_path"]).read_bytes()
        assert r["image_sha256"] == hashlib.sha256(files[f"/{name}.jpg"]).hexdigest()
        assert r["stored_sha256"] == hashlib.sha256(stored).hexdigest()
        assert (r["stored_sha256"] == r["image_sha256"]) == (name == "plain")
        assert r["face_count"] == 0 and r["drop_reason"] is None
    # the stripped file decodes to the fetch's own decode: its colour thumbnail is recorded
    from common.phash import colour_thumbnail

    with Image.open(tmp_path / rows["thumb"]["image_path"]) as im:
        assert rows["thumb"]["colour_thumbnail"] == colour_thumbnail(im).hex()
    assert rows["turned"]["colour_thumbnail"] is None


# --- image faults are the image's rows, not the run's ---------------------------------------


@pytest.mark.timeout(120)
def test_a_run_of_images_with_malformed_exif_is_stored_and_the_run_finishes(image_server, tmp_path):
    """Ten face-free JPEGs with the same malformed EXIF ended the run (eight process_errors in a
    row), left no fetched.parquet, and a resumed run died the same way."""
    exif = _malformed_exif()
    files = {f"/{i}.jpg": _enc(_plain((96, 64), i), "JPEG", exif=exif) for i in range(10)}
    server = image_server({p: Resource(b, "image/jpeg") for p, b in files.items()}, ips=[IP])
    refs = [ref(f"r{i}", server.url(IP, f"/{i}.jpg")) for i in range(10)]
    summary = fetch_images(refs, tmp_path, {**FAST, "concurrency": 1})
    assert summary["stored"] == 10 and summary["drop_reasons"] == {}
    rows = pq.read_table(tmp_path / FETCHED).to_pylist()
    assert {r["stored_change"] for r in rows} == {"turned upright (orientation 6)"}


@pytest.mark.timeout(120)
def test_an_image_fault_is_its_rows_reject_not_counted_and_not_tried_again(
    image_server, tmp_path, monkeypatch
):
    """A step on the image's own bytes failing (here every re-encode) is the image's: a recorded
    reject naming the step, not a process_error (those are the run's: eight in a row end it,
    and a resumed run tries them again)."""
    import crawlers.images.faces as faces_mod

    def broken(image, fmt):
        raise ValueError("no encoder for this palette")

    monkeypatch.setattr(faces_mod, "_encode", broken)
    files = {
        f"/{i}.jpg": _enc(_plain((96, 64), i), "JPEG", exif=_orientation_exif(6)) for i in range(10)
    }
    server = image_server({p: Resource(b, "image/jpeg") for p, b in files.items()}, ips=[IP])
    refs = [ref(f"r{i}", server.url(IP, f"/{i}.jpg")) for i in range(10)]
    summary = fetch_images(refs, tmp_path, {**FAST, "concurrency": 1})
    assert summary["drop_reasons"] == {"undecodable": 10} and summary["stored"] == 0
    rows = pq.read_table(tmp_path / FETCHED).to_pylist()
    for r in rows:
        assert r["error"] == "JPEG: re-encoding as JPEG: ValueError: no encoder for this palette"
        assert r["image_path"] is None and r["image_sha256"]
    fetch_images(refs, tmp_path, {**FAST, "concurrency": 1}, resume=True)
    assert all(server.hits(p) == 1 for p in files)  # a reject, not tried again


# --- decode_image never raises on bad input -------------------------------------------------


def test_a_corrupt_avif_is_undecodable_not_an_exception():
    data = _enc(Image.new("RGB", (64, 48), (20, 90, 200)), "AVIF").replace(b"iloc", b"xloc", 1)
    dec = _decode(data)
    assert dec.drop_reason == "undecodable" and dec.error.startswith("AVIF: RuntimeError: ")
    assert dec.image is None


def test_a_gif_cut_after_an_extension_introducer_is_undecodable_not_an_exception():
    frames = [Image.new("RGB", (64, 48), c) for c in ((200, 0, 0), (0, 200, 0))]
    one = _enc(frames[0], "GIF")[:-1] + b"!"
    two = _enc(frames[0], "GIF", save_all=True, append_images=frames[1:])
    two = two[: two.index(b"\x21\xf9", 30)] + b"!"
    for data in (one, two):
        dec = _decode(data)
        assert dec.drop_reason == "undecodable" and dec.error.startswith("GIF: IndexError"), dec


def test_decode_lets_a_memory_error_through(monkeypatch):
    import crawlers.images.decode as decode_mod

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(decode_mod.Image, "open", no_memory)
    with pytest.raises(MemoryError):
        _decode(_enc(_plain(), "PNG"))


# --- transparency ---------------------------------------------------------------------------


def _text_on_transparent_black(mode: str) -> bytes:
    """Black glyph strokes on a transparent ground whose hidden colour is black too (a logo)."""
    ink = np.zeros((40, 60), np.uint8)
    ink[10:30, 10:14] = 255  # a vertical stroke
    black = np.zeros_like(ink)
    if mode == "LA":
        return _enc(Image.fromarray(np.dstack([black, ink])), "PNG")
    rgba = Image.fromarray(np.dstack([black] * 3 + [ink]))
    if mode == "RGBA":
        return _enc(rgba, "PNG")
    if mode == "WebP RGBA":
        return _enc(rgba, "WEBP", lossless=True)
    if mode == "P tRNS":
        pal = Image.frombytes("P", (60, 40), np.where(ink > 0, 1, 0).astype(np.uint8).tobytes())
        pal.putpalette([0, 0, 0] * 256)
        return _enc(pal, "PNG", transparency=0)
    raise ValueError(mode)


@pytest.mark.parametrize("mode", ["LA", "RGBA", "WebP RGBA", "P tRNS"])
def test_open_image_composites_transparency_onto_white(mode):
    """convert("RGB") drops alpha without compositing: a logo's black text on a transparent
    ground of hidden black read as an all-black page (and text_rich dropped it as no_text)."""
    seen = np.asarray(open_image(_text_on_transparent_black(mode)))
    assert (seen[0, 0] == 255).all() and (seen[20, 12] == 0).all()


def test_text_on_a_transparent_ground_is_read():
    from crawlers.images.ocr import OcrEngine

    from .ocr_render import TEXTS, char_error_rate, render

    page = np.asarray(render(TEXTS["latin"][:1], "latin", size=28).convert("L"))
    data = _enc(Image.fromarray(np.dstack([np.zeros_like(page), 255 - page])), "PNG")
    reading = OcrEngine().read(open_image(data))
    assert char_error_rate(TEXTS["latin"][0], reading.text) < 0.1, reading.text


def test_a_face_seen_only_through_alpha_is_found_and_blurred():
    """Black pixels whose alpha is the face's darkness: on white (a page, open_image) a face; with
    the alpha dropped (the search's convert("RGB")) a black square."""
    img, true = _face()
    grey = np.asarray(img.convert("L"))
    data = _enc(Image.fromarray(np.dstack([np.zeros_like(grey), 255 - grey])), "PNG")
    red = _redact(data)
    assert red.face_count >= 1 and red.change == "faces blurred"
    with Image.open(io.BytesIO(red.data)) as out:
        alpha = np.asarray(out.getchannel("A").crop(true), dtype=float)
    assert alpha.var() < 0.5 * np.asarray(Image.fromarray(255 - grey).crop(true), float).var()


def test_a_face_under_transparent_pixels_is_still_found():
    """The colour under alpha 0 is what a reader that drops alpha sees: searched too."""
    img, _ = _face()
    rgba = img.convert("RGBA")
    rgba.putalpha(0)
    red = _redact(_enc(rgba, "PNG"))
    assert red.face_count >= 1


def test_the_fetch_hands_on_image_what_open_image_reads_of_the_file(image_server, tmp_path):
    data = _text_on_transparent_black("RGBA")
    server = image_server({"/logo.png": Resource(data)}, ips=[IP])
    handed = {}
    fetch_images(
        [ref("logo", server.url(IP, "/logo.png"))],
        tmp_path,
        FAST,
        on_image=lambda path, image: handed.update({path: image}),
    )
    ((path, image),) = handed.items()
    assert image.mode == "RGB" and np.array_equal(np.asarray(image), np.asarray(open_image(path)))
