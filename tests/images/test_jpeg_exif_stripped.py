"""A face-free JPEG is stored without its EXIF (a GPS position, the artist, the camera's serial, a
user comment), as a PNG's eXIf and a WebP's EXIF are: losslessly, the same pixels, its ICC profile
kept; an orientation other than 1 still takes the upright re-encode."""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from crawlers.images import FETCHED, decode_image, fetch_images
from crawlers.images.faces import FaceConfig, FaceDetector, redact

from .conftest import FAST, Resource, ref

DET = FaceDetector()
IP = "127.0.0.157"
SECRETS = (b"Jane Doe", b"SERIAL-1234567", b"12 Main St")


def _enc(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def _noface() -> Image.Image:
    rng = np.random.default_rng(0)
    base = np.full((240, 320, 3), (90, 120, 160), np.int16) + rng.integers(0, 30, (240, 320, 3))
    return Image.fromarray(base.astype(np.uint8))


def _private_exif(orientation: int | None = None) -> bytes:
    """EXIF as a phone writes it: the artist, a GPS position, the body's serial, a comment."""
    ex = Image.Exif()
    ex[0x013B] = "Jane Doe"  # Artist
    ex[0x8825] = {1: "N", 2: (48.0, 51.0, 29.9), 3: "E", 4: (2.0, 17.0, 40.2)}
    ex.get_ifd(0x8769)[0xA431] = "SERIAL-1234567"  # BodySerialNumber
    ex.get_ifd(0x8769)[0x9286] = b"ASCII\0\0\0home address 12 Main St"  # UserComment
    if orientation is not None:
        ex[0x0112] = orientation
    return ex.tobytes()


def _redact(data: bytes):
    dec = decode_image(
        data,
        max_bytes=2**24,
        max_pixels=2**26,
        min_side=16,
        max_aspect=4.0,
        draft_side=FaceConfig().search_side,
    )
    assert dec.drop_reason is None, dec.error
    return redact(data, dec.image, dec.format, DET, frames=dec.frames, size=(dec.width, dec.height))


def _pixels(data: bytes) -> bytes:
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return im.tobytes()


def _icc() -> bytes:
    from PIL import ImageCms

    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


@pytest.mark.parametrize("orientation", [None, 1])
def test_a_face_free_jpegs_exif_is_stripped_losslessly_and_its_icc_kept(orientation):
    """It was stored as fetched, GPS position and all, while the same EXIF in a PNG or a WebP
    was stripped."""
    icc = _icc()
    data = _enc(_noface(), "JPEG", quality=90, exif=_private_exif(orientation), icc_profile=icc)
    assert all(s in data for s in SECRETS)
    red = _redact(data)
    assert red.boxes == [] and red.change == "stripped (EXIF)" and red.same_pixels
    assert not any(s in red.data for s in SECRETS)
    assert _pixels(red.data) == _pixels(data)
    with Image.open(io.BytesIO(red.data)) as out:
        assert "exif" not in out.info and len(out.getexif()) == 0
        assert out.info.get("icc_profile") == icc


@pytest.mark.parametrize("fmt", ["PNG", "WEBP"])
def test_png_and_webp_exif_are_stripped_as_before(fmt):
    kw = {"quality": 90} if fmt == "WEBP" else {}
    data = _enc(_noface(), fmt, exif=_private_exif(), **kw)
    red = _redact(data)
    assert red.change == "stripped (EXIF)" and not any(s in red.data for s in SECRETS)


def test_another_orientation_still_takes_the_upright_re_encode():
    """Dropping EXIF must never drop a turn: orientation 6 is applied, then the file re-encoded
    without metadata."""
    img = _noface()
    data = _enc(img.transpose(Image.Transpose.ROTATE_90), "JPEG", exif=_private_exif(6))
    red = _redact(data)
    assert red.change == "turned upright (orientation 6)" and not red.same_pixels
    assert (red.width, red.height) == img.size
    assert not any(s in red.data for s in SECRETS)
    with Image.open(io.BytesIO(red.data)) as out:
        assert out.size == img.size and len(out.getexif()) == 0


def test_the_fetch_stores_a_face_free_jpeg_without_its_exif(image_server, tmp_path):
    files = {
        "/gps.jpg": _enc(_noface(), "JPEG", quality=90, exif=_private_exif()),
        "/plain.jpg": _enc(_noface(), "JPEG", quality=90),
    }
    server = image_server({p: Resource(b, "image/jpeg") for p, b in files.items()}, ips=[IP])
    fetch_images([ref(p[1:-4], server.url(IP, p)) for p in files], tmp_path, FAST)
    rows = {r["id"]: r for r in pq.read_table(tmp_path / FETCHED).to_pylist()}
    assert len(rows) == len(files)
    gps, plain = rows["gps"], rows["plain"]
    assert gps["stored_change"] == "stripped (EXIF)" and gps["face_count"] == 0
    stored = (tmp_path / gps["image_path"]).read_bytes()
    assert gps["stored_sha256"] == hashlib.sha256(stored).hexdigest() != gps["image_sha256"]
    assert not any(s in stored for s in SECRETS)
    with Image.open(io.BytesIO(stored)) as im:
        assert len(im.getexif()) == 0
    assert plain["stored_change"] is None  # no EXIF: stored as fetched
    assert (tmp_path / plain["image_path"]).read_bytes() == files["/plain.jpg"]
