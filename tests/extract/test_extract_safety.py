"""Extraction does not trust the crawl's bytes: bombs, truncation, odd encodings, crashing pages.

WARCs are written by the crawler's own `WarcStore` (the exact framing a crawl stores: encoded
payload, `WARC-Truncated`, renamed Transfer-Encoding), except where a foreign WARC is the point.
"""

from __future__ import annotations

import functools
import gzip
import io
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from common.schemas import REJECTS
from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.fetcher import Hop
from crawlers.crawl.output import PAGES_SCHEMA
from crawlers.crawl.warc import WarcStore
from crawlers.extract import ExtractConfig, extract_page
from crawlers.extract.crawl_io import count_pages, iter_crawl_records
from crawlers.extract.decode import BadPage
from crawlers.extract.warc import MAX_DECOMPRESSED_BYTES, decode_content, read_response

from .pages import article

MiB = 2**20
HTML = article("Kelp forests", "<p>" + "Kelp holds the coast together. " * 40 + "</p>").encode()


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def _deflate(data: bytes, raw: bool = False) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS if raw else zlib.MAX_WBITS)
    return comp.compress(data) + comp.flush()


@functools.lru_cache(maxsize=1)
def _bomb(size: int = 40 * MiB) -> bytes:
    """A gzip body inflating to `size` bytes of a valid-looking HTML page (~1000:1 ratio)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [comp.compress(b"<html><body><p>")]
    block = b"A" * MiB
    for _ in range(size // MiB):
        out.append(comp.compress(block))
    out.append(comp.compress(b"</p></body></html>"))
    out.append(comp.flush())
    return b"".join(out)


def _crawl(tmp: Path, pages: list[dict]) -> Path:
    """A crawl dir written like `refinery crawl`: WarcStore records plus pages.parquet rows."""
    store = WarcStore(tmp)
    rows = []
    for p in pages:
        row = {
            "url": p["url"],
            "status": p.get("status", 200),
            "crawl_allowed": True,
            "training_allowed": True,
            "robots_crawl": "allowed",
            "robots_training": "allowed",
            "content_type": "text/html",
            "error": p.get("error"),
            "fetched_at": "2026-01-01T00:00:00Z",
        }
        headers = [("Content-Type", "text/html; charset=utf-8"), *p.get("headers", [])]
        hop = Hop(
            p["url"],
            row["status"],
            "OK",
            response_headers=headers,
            raw_body=p["raw"],
            truncated=p.get("truncated"),
        )
        loc = store.write([hop], "2026-01-01T00:00:00Z")
        row.update(warc_file=loc.file, warc_offset=loc.offset, warc_length=loc.length)
        rows.append(row)
    store.close()
    pq.write_table(pa.Table.from_pylist(rows, schema=PAGES_SCHEMA), tmp / "pages.parquet")
    return tmp


def _extract_all(crawl: Path, **kw) -> tuple[dict[str, dict], dict[str, dict]]:
    docs, rejects = {}, {}
    for record in iter_crawl_records(crawl, **kw):
        result = extract_page(record, ExtractConfig())
        assert (result.document is None) != (result.reject is None)
        if result.document is not None:
            docs[result.document["url"]] = result.document
        else:
            rejects[result.reject["url"]] = result.reject
    assert len(docs) + len(rejects) == count_pages(crawl)  # pages in = documents + rejects
    return docs, rejects


def test_extraction_uses_the_crawlers_decompression_cap() -> None:
    assert MAX_DECOMPRESSED_BYTES == CrawlConfig().max_decompressed_bytes


@pytest.mark.timeout(60)
def test_gzip_bomb_is_rejected_too_large_without_inflating_it(tmp_path: Path) -> None:
    import resource

    bomb = _bomb()
    assert len(bomb) < 100_000  # ~41 KB on the wire, 40 MiB inflated
    crawl = _crawl(
        tmp_path,
        [
            {"url": "http://a.test/bomb", "raw": bomb, "headers": [("Content-Encoding", "gzip")]},
            {
                "url": "http://a.test/ok",
                "raw": _gzip(HTML),
                "headers": [("Content-Encoding", "gzip")],
            },
        ],
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    docs, rejects = _extract_all(crawl, max_decompressed_bytes=4 * MiB)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert rejects["http://a.test/bomb"]["reason"] == "too_large"
    assert "compression bomb" in rejects["http://a.test/bomb"]["detail"]
    assert "Kelp holds the coast" in docs["http://a.test/ok"]["text"]
    assert grown_kib < 30 * 1024  # peak memory never held the 40 MiB the bomb expands to
    # The default cap (the crawler's, 20 MiB) also stops a 40 MiB bomb.
    with pytest.raises(BadPage) as info:
        decode_content(bomb, "gzip", MAX_DECOMPRESSED_BYTES)
    assert info.value.reason == "too_large"


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", _gzip),
        ("x-gzip", _gzip),
        ("deflate", _deflate),  # zlib-wrapped, as the RFC says
        ("deflate", lambda d: _deflate(d, raw=True)),  # raw deflate, as many servers send
        ("gzip, gzip", lambda d: _gzip(_gzip(d))),
        ("deflate, gzip", lambda d: _gzip(_deflate(d))),
        ("GZIP ,  identity", _gzip),
        ("identity", lambda d: d),
        ("", lambda d: d),
    ],
)
def test_content_encodings_and_stacks_decode(encoding: str, encode) -> None:
    assert decode_content(encode(HTML), encoding, MiB) == HTML


def test_stacked_bomb_is_capped_at_every_layer() -> None:
    inner = _bomb()  # gzip(gzip(bomb)): the outer layer is small, the inner explodes
    with pytest.raises(BadPage) as info:
        decode_content(_gzip(inner), "gzip, gzip", 2 * MiB)
    assert info.value.reason == "too_large"


@pytest.mark.parametrize(
    ("raw", "encoding", "reason"),
    [
        (b"\x1f\x8b\x08\x00garbage-not-gzip", "gzip", "decode_error"),
        (b"plain text sent with a gzip label", "gzip", "decode_error"),
        (_gzip(HTML)[:-40], "gzip", "decode_error"),  # cut: the decoder alone would not notice
        (_gzip(HTML) + _gzip(b"<p>second member</p>"), "gzip", "decode_error"),
        (_deflate(HTML)[:-30], "deflate", "decode_error"),
        (_deflate(HTML, raw=True)[:-30], "deflate", "decode_error"),
        (HTML, "br", "decode_error"),  # plain text sent with a brotli label
        (HTML, "compress", "unsupported_encoding"),
        (_gzip(HTML), "gzip, gzip, gzip, gzip, gzip", "unsupported_encoding"),
    ],
)
def test_bad_encodings_are_named(raw: bytes, encoding: str, reason: str) -> None:
    with pytest.raises(BadPage) as info:
        decode_content(raw, encoding, MiB, "x.warc.gz@0")
    assert info.value.reason == reason
    assert "x.warc.gz@0" in info.value.detail


@pytest.mark.timeout(60)
def test_truncated_and_undecodable_bodies_are_rejected_with_reasons(tmp_path: Path) -> None:
    cut = HTML[: len(HTML) // 2]
    crawl = _crawl(
        tmp_path,
        [
            # Cut at the crawler's body cap: half an article is not a document.
            {
                "url": "http://b.test/cut",
                "raw": cut,
                "truncated": "length",
                "error": "body-too-large: more than 2048 bytes",
            },
            # Same, in a crawl whose pages row lost the error: the WARC header alone decides.
            {
                "url": "http://b.test/cut2",
                "raw": _gzip(HTML)[:300],
                "truncated": "length",
                "headers": [("Content-Encoding", "gzip")],
            },
            {"url": "http://b.test/slow", "raw": HTML[:900], "truncated": "time"},
            # Unwanted type: the crawler stored headers only (WARC-Truncated: unspecified).
            {
                "url": "http://b.test/img",
                "raw": b"",
                "truncated": "unspecified",
                "error": "unwanted-content-type: image/png",
            },
            {
                "url": "http://b.test/lzw",
                "raw": HTML,
                "headers": [("Content-Encoding", "compress")],
            },
            {
                "url": "http://b.test/bad",
                "raw": b"\x1f\x8b\x08\x00junk",
                "headers": [("Content-Encoding", "gzip")],
            },
            {
                "url": "http://b.test/deflate",
                "raw": _deflate(HTML, raw=True),
                "headers": [("Content-Encoding", "deflate")],
            },
            # A crawler-stored Transfer-Encoding (renamed: the payload is not chunk-framed).
            {
                "url": "http://b.test/chunked",
                "raw": _gzip(HTML),
                "headers": [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")],
            },
        ],
    )
    docs, rejects = _extract_all(crawl)
    assert rejects["http://b.test/cut"]["reason"] == "truncated"
    assert "WARC-Truncated" in rejects["http://b.test/cut"]["detail"]
    assert "size cap" in rejects["http://b.test/cut"]["detail"]
    assert rejects["http://b.test/cut2"]["reason"] == "truncated"
    assert rejects["http://b.test/slow"]["reason"] == "truncated"
    assert "ran out of time" in rejects["http://b.test/slow"]["detail"]
    assert rejects["http://b.test/img"]["reason"] == "not_html"
    assert rejects["http://b.test/lzw"]["reason"] == "unsupported_encoding"
    assert rejects["http://b.test/bad"]["reason"] == "decode_error"
    assert set(docs) == {"http://b.test/deflate", "http://b.test/chunked"}
    for doc in docs.values():
        assert "Kelp holds the coast" in doc["text"]


def test_pages_row_error_alone_marks_a_truncated_body() -> None:
    record = {
        "url": "http://c.test/x",
        "status": 200,
        "body": HTML,
        "error": "body-too-large: more than 4096 bytes",
    }
    result = extract_page(record)
    assert result.reject is not None and result.reject["reason"] == "truncated"


def test_foreign_warc_with_chunked_framing_and_oversized_identity_body(tmp_path: Path) -> None:
    # Other crawlers keep Transfer-Encoding: chunked and the framing: de-chunk, then gunzip.
    body = _gzip(HTML)
    framed = (
        b"".join(
            b"%x\r\n%s\r\n" % (len(body[i : i + 500]), body[i : i + 500])
            for i in range(0, len(body), 500)
        )
        + b"0\r\n\r\n"
    )
    big = b"<html><body><p>" + b"x" * (3 * MiB) + b"</p></body></html>"
    path = tmp_path / "foreign.warc.gz"
    offsets = []
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for payload, headers in [
            (framed, [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")]),
            (big, []),
        ]:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), *headers], "HTTP/1.1")
            offsets.append(fh.tell())
            writer.write_record(
                writer.create_warc_record(
                    "http://d.test/", "response", payload=io.BytesIO(payload), http_headers=http
                )
            )
    assert read_response(path, offsets[0]).body == HTML
    assert read_response(path, offsets[1]).body == big
    with pytest.raises(BadPage) as info:
        read_response(path, offsets[1], max_decompressed_bytes=MiB)
    assert info.value.reason == "too_large"
    assert str(path) in info.value.detail


class _Boom:
    def __str__(self) -> str:
        raise RuntimeError("cannot render this value")


def test_an_exception_inside_result_becomes_a_reject(monkeypatch: pytest.MonkeyPatch) -> None:
    import crawlers.extract.page as page

    def broken_tables(tree):  # a bug in a helper that runs after extraction succeeded
        raise KeyError("colspan")

    monkeypatch.setattr(page, "extract_tables", broken_tables)
    result = extract_page({"url": "http://e.test/a", "status": 200, "body": HTML})
    assert result.document is None and result.reject is not None
    assert result.reject["reason"] == "extract_error"
    assert "KeyError" in result.reject["detail"] and "colspan" in result.reject["detail"]


@pytest.mark.parametrize(
    "record",
    [
        # A fetched_at that cannot be turned into text fails inside _result.
        {"url": "http://e.test/t", "status": 200, "body": HTML, "fetched_at": _Boom()},
        {"url": "http://e.test/s", "status": "two hundred", "body": HTML},
        {"url": "http://e.test/b", "status": 200, "body": "not bytes"},
    ],
)
def test_any_error_on_one_page_becomes_a_reject(record: dict) -> None:
    result = extract_page(record)
    assert result.document is None and result.reject is not None
    assert result.reject["reason"] == "extract_error"
    assert result.reject["url"] == record["url"]
    assert "Error" in result.reject["detail"]
    pa.Table.from_pylist([result.reject], schema=REJECTS)  # the row stays writable


@pytest.mark.timeout(120)
def test_extract_stage_keeps_pages_in_equal_documents_plus_rejects(tmp_path: Path) -> None:
    # The Beam stage end to end: a bomb, a cut body and a good page; the run completes and the
    # rejects carry their reasons.
    from pipelines.stages.extract import run_extract

    crawl = _crawl(
        tmp_path / "crawl",
        [
            {
                "url": "http://f.test/bomb",
                "raw": _bomb(),
                "headers": [("Content-Encoding", "gzip")],
            },
            {
                "url": "http://f.test/cut",
                "raw": HTML[:700],
                "truncated": "length",
                "error": "body-too-large: more than 700 bytes",
            },
            {
                "url": "http://f.test/ok",
                "raw": _gzip(HTML),
                "headers": [("Content-Encoding", "gzip")],
            },
        ],
    )
    out = tmp_path / "out"
    run_extract(crawl, out, "never")
    docs = pq.read_table(out / "documents.parquet").to_pylist()
    rejects = {r["url"]: r["reason"] for r in pq.read_table(out / "rejects.parquet").to_pylist()}
    assert [d["url"] for d in docs] == ["http://f.test/ok"]
    assert rejects == {"http://f.test/bomb": "too_large", "http://f.test/cut": "truncated"}
