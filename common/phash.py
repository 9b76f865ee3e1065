"""The 64-bit perceptual hash (pHash) of an image and its 8x8 colour thumbnail, as the image fetch
records them and the pairs' de-duplication (filters/images/dedup.py) compares them."""

from __future__ import annotations

import io

import numpy as np

# Dead zone of the pHash threshold, as a share of the largest AC coefficient (see phash_hex).
PHASH_DEAD_ZONE = 0.003


def phash_hex(image, dead_zone: float = PHASH_DEAD_ZONE) -> str:
    """64-bit perceptual hash of a PIL image as 16 lowercase hex digits.

    imagehash's pHash (grey, 32x32 LANCZOS, 2-D DCT, the 8x8 lowest frequencies against their
    median; with `dead_zone=0` the bits are exactly `str(imagehash.phash(image))`), with one
    change: a coefficient must exceed the median by `dead_zone` x the largest AC coefficient to
    set its bit. Symmetric flat graphics (logos, diagrams, the sample web's scenes) have many DCT
    coefficients at exactly 0 and a median of 0, so without the dead zone re-encoding noise flips
    those bits at random: on 190 sample-web scenes x 6 copies (JPEG 50-90, resized 0.5-1.5x),
    copies within 4 bits rose from 78% to 98%, while distinct-scene pairs within 4 bits went from
    0.34% to 0.51% (random_scene draws, seed 1). Photos have few such coefficients and
    hash as before."""
    import scipy.fftpack
    from PIL import Image

    grey = image.convert("L").resize((32, 32), Image.Resampling.LANCZOS)
    pixels = np.asarray(grey)
    dct = scipy.fftpack.dct(scipy.fftpack.dct(pixels, axis=0), axis=1)[:8, :8]
    tolerance = dead_zone * float(np.abs(dct.ravel()[1:]).max()) if dead_zone else 0.0
    bits = (dct > np.median(dct) + tolerance).ravel()
    return f"{int(''.join('1' if b else '0' for b in bits), 2):016x}"


def phash_bytes(data: bytes, dead_zone: float = PHASH_DEAD_ZONE) -> str:
    """pHash (phash_hex) of encoded image bytes (first frame, as `common.pairs.rgb_view` shows
    it: anything transparent on white, 16-bit grey scaled to 8 bits), as 16 hex digits."""
    from PIL import Image

    from common.pairs import rgb_view

    with Image.open(io.BytesIO(data)) as im:
        im.seek(0)
        im.load()
        return phash_hex(rgb_view(im), dead_zone)  # transparent on white, 16-bit grey scaled


def colour_thumbnail(image) -> bytes:
    """The 8x8 RGB box-filtered thumbnail of a PIL image (first frame as decoded), as 192 bytes
    (rows, then columns, then R, G, B): what the de-duplication's colour check compares
    (filters.images.dedup.colour_confirm). The image fetch records it, hex-encoded, from its
    one decode, so the check reads no stored file again."""
    from PIL import Image

    from common.pairs import rgb_view

    rgb = rgb_view(image)  # the image itself when RGB (convert() would copy it)
    return rgb.resize((8, 8), Image.Resampling.BOX).tobytes()
