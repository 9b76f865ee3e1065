"""Content-Encoding br (what most servers answer a browser with, so archives of browser crawls
hold it) is decoded with the output capped: a page, a bomb stopped at the cap, a cut body."""

from __future__ import annotations

import brotli
import pytest

from crawlers.extract.warc import BadPage, decode_content

PAGE = ("<html><body><article><p>" + "Brotli keeps this paragraph. " * 200 + "</p></article>"
        "</body></html>").encode()  # fmt: skip


def test_a_brotli_body_decodes_to_the_page():
    assert decode_content(brotli.compress(PAGE), "br", 1 << 20) == PAGE
    # stacked: brotli applied after gzip is undone first
    import gzip

    assert decode_content(brotli.compress(gzip.compress(PAGE)), "gzip, br", 1 << 20) == PAGE


def test_a_brotli_bomb_stops_at_the_cap():
    bomb = brotli.compress(b"\0" * (64 << 20), quality=5)
    assert len(bomb) < 64 << 10
    with pytest.raises(BadPage) as err:
        decode_content(bomb, "br", 1 << 20, "x.warc.gz@0")
    assert err.value.reason == "too_large" and "x.warc.gz@0" in str(err.value)


@pytest.mark.parametrize("damage", ["cut", "garbage"])
def test_a_cut_or_damaged_brotli_body_is_a_decode_error(damage):
    body = brotli.compress(PAGE)
    body = body[: len(body) // 2] if damage == "cut" else b"\xff\xfe" + body[2:]
    with pytest.raises(BadPage) as err:
        decode_content(body, "br", 1 << 20)
    assert err.value.reason == "decode_error"
