"""Safe decoding on its own: allow-list by magic bytes, caps before decoding, first frame only;
and the join of image refs with their page's opt-out flags."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from common.schemas import DOCUMENTS, IMAGE_REFS
from crawlers.images import decode_image, load_refs, page_opt_out, ref_id, sniff

from .conftest import encode, noisy_jpeg, png, png_claiming

CAPS = dict(max_bytes=2**20, max_pixels=4_000_000, min_side=16, max_aspect=3.0)


@pytest.mark.parametrize(
    ("data", "fmt", "size"),
    [
        (png(64, 48), "PNG", (64, 48)),
        (noisy_jpeg(50, 40), "JPEG", (50, 40)),
        (encode(30, 20, "WEBP"), "WEBP", (30, 20)),
        (encode(40, 30, "GIF"), "GIF", (40, 30)),  # first frame (the second is 80x60)
        (encode(36, 28, "AVIF"), "AVIF", (36, 28)),
        (encode(36, 28, "AVIF", frames=2), "AVIF", (36, 28)),  # an 'avis' sequence: frame 1
    ],
)
def test_allowed_formats_decode(data, fmt, size):
    dec = decode_image(data, **CAPS)
    assert (dec.drop_reason, dec.format, (dec.width, dec.height)) == (None, fmt, size)
    assert sniff(data) == fmt


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b'<svg xmlns="http://www.w3.org/2000/svg"/>', "SVG"),
        (b"<!DOCTYPE html><html></html>", "HTML"),
        (encode(40, 40, "BMP"), "magic bytes"),
        (encode(40, 40, "TIFF"), "magic bytes"),
        (encode(40, 40, "ICO"), "magic bytes"),
        # HEIC: ISO-BMFF like AVIF, but no AVIF brand in its ftyp box
        (b"\0\0\0\x18ftypheic\0\0\0\0mif1heic" + b"\0" * 64, "magic bytes"),
        (b"\0\0\0\x18ftypmif1\0\0\0\0mif1heic" + b"\0" * 64, "magic bytes"),
        (b"", "empty"),
    ],
)
def test_everything_else_is_not_image(data, what):
    dec = decode_image(data, **CAPS)
    assert dec.drop_reason == "not_image" and what in dec.error


def test_avif_is_known_by_a_compatible_brand_too():
    """An AVIF file whose ftyp major brand is the container's ('mif1') and whose compatible
    brands name AVIF is AVIF; a body cut inside its ftyp box is not read past its end."""
    real = encode(30, 30, "AVIF")
    size = int.from_bytes(real[:4], "big")
    assert real[4:8] == b"ftyp"
    relabelled = real[:8] + b"mif1" + real[12:]  # brands after offset 16 still name avif
    assert b"avif" in real[16:size] and sniff(relabelled) == "AVIF"
    assert sniff(real[:10]) is None


def test_bomb_is_refused_from_the_header_without_decoding(monkeypatch):
    from PIL import ImageFile

    def no_decoding(self):
        raise AssertionError("a claimed bomb's pixels were decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
    dec = decode_image(png_claiming(30000, 30000), **{**CAPS, "max_pixels": 10**12})
    assert dec.drop_reason == "decompression_bomb" and "Pillow" in dec.error  # Pillow's limit
    dec = decode_image(png_claiming(4000, 2000), **CAPS)  # under Pillow's limit, over ours
    assert dec.drop_reason == "decompression_bomb" and "max_pixels=4000000" in dec.error
    assert (dec.width, dec.height) == (4000, 2000)
    monkeypatch.undo()  # images under the cap are decoded
    assert decode_image(png(2100, 2000), **CAPS).drop_reason == "decompression_bomb"
    assert decode_image(png(1900, 2000), **CAPS).drop_reason is None


def test_byte_cap_truncation_size_and_aspect():
    assert decode_image(png(64, 64), **{**CAPS, "max_bytes": 50}).drop_reason == "too_large"
    jpeg = noisy_jpeg(80, 60)
    cut = decode_image(jpeg[: len(jpeg) // 2], **CAPS)
    assert cut.drop_reason == "undecodable" and "truncated" in cut.error
    assert decode_image(png(64, 64)[:60], **CAPS).drop_reason == "undecodable"
    assert decode_image(encode(1, 400, "GIF"), **CAPS).drop_reason == "too_small"
    assert decode_image(png(15, 40), **CAPS).drop_reason == "too_small"
    assert decode_image(png(16, 48), **CAPS).drop_reason is None  # exactly 3:1
    assert decode_image(png(16, 49), **CAPS).drop_reason == "bad_aspect"
    assert Image.MAX_IMAGE_PIXELS is not None  # Pillow's own limit stays on


def test_load_refs_joins_page_flags(tmp_path):
    docs = [
        {"id": "d1", "noai": False, "training_allowed": True},
        {"id": "d2", "noai": True, "training_allowed": False},
        {"id": "d3", "noai": False, "training_allowed": False},
    ]
    pq.write_table(
        pa.Table.from_pylist(docs, schema=_subset(DOCUMENTS, docs[0])),
        tmp_path / "documents.parquet",
    )
    refs = [
        {
            "doc_id": d["id"],
            "url": f"http://h/{d['id']}",
            "position": p,
            "src": f"http://h/{d['id']}/{p}.png",
            "alt": "a",
            "surrounding_text": "t",
            "training_allowed": d["training_allowed"],
        }
        for d in docs
        for p in (0, 3)
    ]
    pq.write_table(pa.Table.from_pylist(refs, schema=IMAGE_REFS), tmp_path / "image_refs.parquet")
    got = load_refs(tmp_path)
    assert [r["id"] for r in got] == [ref_id(r["doc_id"], r["position"]) for r in refs]
    assert [page_opt_out(r) and page_opt_out(r)[0] for r in got] == [
        None,
        None,
        "noai",
        "noai",
        "training_opt_out",
        "training_opt_out",
    ]
    (tmp_path / "documents.parquet").unlink()
    with pytest.raises(FileNotFoundError, match="documents.parquet"):
        load_refs(tmp_path)


def _subset(schema: pa.Schema, row: dict) -> pa.Schema:
    return pa.schema([f for f in schema if f.name in row])
