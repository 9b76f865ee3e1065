"""Review fixes of the archive import: one page per URL however an archive spells it (so an
opt-out in a later capture is carried), pages without a Content-Type sniffed past a byte order
mark, comments and an XML declaration, repeated Content-Encoding lines as one list, the
--max-record-bytes default the help states, and a detail on every WET skip."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import brotli
import pyarrow.parquet as pq

from crawlers.imports.run import import_warc
from crawlers.imports.warc import ScanOptions, html_type, import_url
from crawlers.imports.wet import import_wet
from tests.imports.archives import (
    ALLOW,
    TEST_CONFIG,
    base,
    page,
    response,
    write_warc,
)

HTML = [("Content-Type", "text/html; charset=utf-8")]


def _rows(out: Path, name: str) -> list[dict]:
    return pq.read_table(out / name).to_pylist()


def test_import_url_is_the_crawlers_form_of_scheme_host_port_and_fragment():
    assert import_url("HTTP://Example.COM:80/A/b?Q=1&a=2#top") == "http://example.com/A/b?Q=1&a=2"
    assert import_url("<https://EXAMPLE.com:443>") == "https://example.com/"
    assert import_url("http://Example.com:8080/x#") == "http://example.com:8080/x"
    assert import_url("http://[::1]:80/p") == "http://[::1]/p"
    assert import_url("http://user@Host.example/p") == "http://user@host.example/p"
    assert import_url("dns:Example.COM") == "dns:Example.COM"  # not http(s): as archived
    assert import_url("http://host:bad/p") == "http://host:bad/p"  # does not parse: as archived


def test_url_variants_are_one_page_and_a_later_opt_out_is_carried(tmp_path, robots):
    a = base(ALLOW, robots.port)
    local = f"http://localhost:{robots.port}"
    noai = [*HTML, ("X-Robots-Tag", "noai")]
    first = write_warc(
        tmp_path / "c1.warc.gz",
        lambda w: [
            response(w, f"{a}/q", page("Q old")),
            response(w, f"{local}/n", page("N old")),
            response(w, f"{a}/free", page("Free")),
        ],
    )
    second = write_warc(
        tmp_path / "c2.warc.gz",
        lambda w: [
            response(w, f"{a}/q#top", page("Q new"), noai),
            response(w, f"http://LOCALHOST:{robots.port}/n", page("N new"), noai),
        ],
    )
    out = tmp_path / "out"
    import_warc([str(first), str(second)], out, config=TEST_CONFIG)
    pages = {r["url"]: r for r in _rows(out, "pages.parquet")}
    assert set(pages) == {f"{a}/q", f"{local}/n", f"{a}/free"}
    assert pages[f"{a}/q"]["training_allowed"] is False and pages[f"{a}/q"]["noai"] is True
    assert pages[f"{local}/n"]["noai"] is True
    for url in (f"{a}/q", f"{local}/n"):
        assert "another capture (" in pages[url]["consent_source"]
    assert pages[f"{a}/free"]["training_allowed"] is True  # robots.txt allows; no opt-out
    skipped = _rows(out, "skipped.parquet")
    assert sorted((s["url"], s["skip_reason"]) for s in skipped) == [
        (f"{a}/q", "duplicate_url"),
        (f"{local}/n", "duplicate_url"),
    ]


def test_a_page_without_content_type_is_sniffed_past_its_prologue(tmp_path):
    a = "http://127.0.0.2"
    bodies = {
        "bom": b"\xef\xbb\xbf" + page("Bom"),
        "xml": b'<?xml version="1.0"?>\n' + page("Xml"),
        "comment": b"<!-- saved from url=(0014)about:internet -->\n" + page("Saved"),
        "plain": b"\n  " + page("Plain"),
        "text": b"just some words, no markup",
        "pdf": b"%PDF-1.4 ...",
        "open-comment": b"<!-- never closed <html>",
    }
    src = write_warc(
        tmp_path / "t.warc.gz",
        lambda w: [response(w, f"{a}/{k}", v, [("X-Other", "1")]) for k, v in bodies.items()],
    )
    out = tmp_path / "out"
    import_warc([str(src)], out, offline=True)
    kept = sorted(r["url"].rsplit("/", 1)[1] for r in _rows(out, "pages.parquet"))
    assert kept == ["bom", "comment", "plain", "xml"]
    reasons = {r["url"].rsplit("/", 1)[1]: r["skip_reason"] for r in _rows(out, "skipped.parquet")}
    assert reasons == {"text": "not_html", "pdf": "not_html", "open-comment": "not_html"}
    assert html_type(None, b"<HTML lang=en><body>x") and html_type("", b"<!DOCTYPE html>")
    assert not html_type(None, b"<?xml version='1.0'?><rss version='2.0'>")
    assert not html_type("text/plain", page("Typed"))


def test_repeated_content_encoding_lines_are_one_list(tmp_path):
    body = page("Two codings")
    hdrs = [*HTML, ("Content-Encoding", "gzip"), ("Content-Encoding", "br")]  # gzip, then br
    src = write_warc(
        tmp_path / "e.warc.gz",
        lambda w: response(w, "http://127.0.0.2/two", brotli.compress(gzip.compress(body)), hdrs),
    )
    out = tmp_path / "out"
    import_warc([str(src)], out, offline=True)
    pages = _rows(out, "pages.parquet")
    assert [p["url"] for p in pages] == ["http://127.0.0.2/two"], _rows(out, "skipped.parquet")
    assert pages[0]["content_sha256"] == hashlib.sha256(body).hexdigest()
    from crawlers.extract.warc import read_response  # extraction reads the same list

    got = read_response(pages[0]["warc_file"], pages[0]["warc_offset"])
    assert got.body == body


def test_max_record_bytes_help_states_the_real_default():
    from pipelines.stages.imports import ImportWarcParams

    default = ScanOptions().max_record_bytes
    help_text = ImportWarcParams.model_fields["max_record_bytes"].description
    assert f"default: {default >> 20} MiB" in help_text and default % (1 << 20) == 0


def _wet(url: str | None, text: bytes) -> bytes:
    head = ["WARC/1.0", "WARC-Type: conversion", "WARC-Record-ID: <urn:uuid:1>"]
    head += ["WARC-Date: 2024-01-01T00:00:00Z"] + ([f"WARC-Target-URI: {url}"] if url else [])
    head += ["Content-Type: text/plain", f"Content-Length: {len(text)}"]
    return gzip.compress(("\r\n".join(head) + "\r\n\r\n").encode() + text + b"\r\n\r\n")


def test_every_wet_skip_has_a_detail(tmp_path):
    src = tmp_path / "x.warc.wet.gz"
    src.write_bytes(
        _wet("http://127.0.0.2/ok", b"some text")
        + _wet(None, b"text without a URL")
        + _wet("http://127.0.0.2/empty", b"  \n ")
        + _wet("http://127.0.0.2/OK#frag", b"other text")
    )
    out = tmp_path / "out"
    s = import_wet([str(src)], out, offline=True)
    skipped = _rows(out, "skipped.parquet")
    assert sorted(r["skip_reason"] for r in skipped) == ["empty_text", "missing_target_uri"]
    for r in skipped:
        assert r["skip_detail"] and str(src) in r["skip_detail"], r
    urls = sorted(r["url"] for r in _rows(out, "documents.parquet"))
    assert urls == ["http://127.0.0.2/OK", "http://127.0.0.2/ok"] and s["records"] == 4
