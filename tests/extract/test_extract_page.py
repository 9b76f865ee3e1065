"""Static extraction of one record: text, Markdown, metadata, tables, images and rejects."""

from __future__ import annotations

import pytest

from crawlers.extract import ExtractConfig, doc_id, extract_page

from .pages import article

URL = "http://127.0.0.9:8000/articles/otters?ref=feed"


def record(body: bytes | None, **over) -> dict:
    rec = {
        "url": URL,
        "status": 200,
        "body": body,
        "content_type": "text/html; charset=utf-8",
        "crawl_allowed": True,
        "training_allowed": True,
        "robots_crawl": "allowed",
    }
    rec.update(over)
    return rec


def test_article_yields_text_markdown_and_metadata():
    res = extract_page(record(article().encode()))
    doc = res.document
    assert res.reject is None and doc["id"] == doc_id(URL)
    assert doc["title"] == "River otters"
    assert doc["author"] == "Ada Lovelace"
    assert doc["sitename"] == "Wildlife Weekly"
    assert doc["canonical_url"] == "http://127.0.0.9:8000/articles/otters"
    assert doc["lang_hint"] == "en"
    assert "semi-aquatic mammals" in doc["text"] and "Copyright" not in doc["text"]
    assert "![" not in doc["text"]  # images stay out of the plain text
    md = doc["markdown"]
    assert "# River otters" in md and "## Diet" in md and "- Fish and crayfish" in md
    assert "| Species | Region | Weight |" in md


def test_tables_expand_merged_cells_and_keep_the_header():
    (table,) = extract_page(record(article().encode())).tables
    assert table["header"] == ["Species", "Region", "Weight"]
    assert table["cells"] == [
        ["Species", "Region", "Weight"],
        ["Lutra", "Europe", "7 kg"],
        ["Lutra", "Asia", "8 kg"],
        ["Enhydra (sea otter)", "Enhydra (sea otter)", "30 kg"],
    ]
    assert (table["n_rows"], table["n_cols"]) == (3, 3)  # the header row is not counted
    assert table["markdown"].splitlines()[1] == "|---|---|---|"


def test_images_come_out_in_page_order_with_absolute_src_and_context():
    res = extract_page(record(article().encode()))
    refs = res.image_refs
    assert [r["src"] for r in refs] == [
        "http://127.0.0.9:8000/img/otter.jpg",
        "http://127.0.0.9:8000/articles/pics/kelp.png",
    ]
    assert refs[0]["alt"] == "An otter floating on its back"
    assert (
        "Kelp forests" in refs[1]["surrounding_text"]
        and "shelter sea otters" in refs[1]["surrounding_text"]
    )
    kinds = [b["kind"] for b in res.interleaved["blocks"]]
    assert kinds.count("image") == 2
    kelp = next(
        i for i, b in enumerate(res.interleaved["blocks"]) if b["src"] and "kelp" in b["src"]
    )
    assert res.interleaved["blocks"][kelp - 1]["text"] == "Kelp forests"
    assert res.interleaved["blocks"][kelp + 1]["text"].startswith("shelter sea otters")
    assert refs[1]["position"] == kelp


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"body": b""}, "empty_body"),
        ({"body": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4}, "binary_body"),
        ({"body": b"\x00\x01\x02binary\x00" * 100}, "binary_body"),
        ({"status": 404}, "http_status"),
        ({"status": None, "body": None, "crawl_allowed": False}, "robots_denied"),
        ({"status": None, "body": None, "error": "connect timeout"}, "fetch_error"),
        ({"content_type": "application/pdf"}, "not_html"),
        (
            {"body": b"<html><body>" + b"<div>x</div>" * 300_000 + b"</body></html>"},
            "dom_too_large",
        ),
        ({"body": b"<html><body><nav>menu</nav></body></html>"}, "no_main_content"),
        ({"warc_error": "crawl-0.warc.gz@10: EOFError"}, "warc_unreadable"),
    ],
)
def test_bad_input_becomes_a_reject_with_its_reason(over, reason):
    rec = record(article().encode(), training_allowed=False)
    rec.update(over)
    res = extract_page(rec, ExtractConfig())
    assert res.document is None and res.tables == [] and res.image_refs == []
    assert res.reject["reason"] == reason
    assert res.reject["id"] == doc_id(URL) and res.reject["detail"]
    assert res.reject["training_allowed"] is False


def test_wrongly_declared_charset_is_recovered():
    body = article(title="Fischotter in Köln und Düsseldorf").encode("cp1252")
    res = extract_page(
        record(body.replace(b'charset="utf-8"', b""), content_type="text/html; charset=utf-8")
    )
    assert res.reject is None
    assert res.document["title"] == "Fischotter in Köln und Düsseldorf"


def test_training_allowed_and_robots_fields_travel_to_every_row():
    res = extract_page(
        record(article().encode(), training_allowed=False, robots_training="disallowed")
    )
    assert (
        res.document["training_allowed"] is False
        and res.document["robots_training"] == "disallowed"
    )
    rows = [*res.tables, *res.image_refs, res.interleaved]
    assert rows and all(
        r["training_allowed"] is False and r["doc_id"] == res.document["id"] for r in rows
    )


def test_rendered_html_replaces_the_static_body():
    res = extract_page(
        record(
            b"<html><body><div id=root></div></body></html>",
            rendered=True,
            rendered_html=article(),
            render_reason="app shell",
        )
    )
    assert res.document["rendered"] is True and "semi-aquatic" in res.document["text"]


def test_undecodable_bytes_are_rejected_as_encoding_errors():
    body = b"<html><body><p>" + bytes(range(0x80, 0x100)) * 40 + b"</p></body></html>"
    res = extract_page(record(body, content_type="text/html; charset=ascii"))
    assert res.reject is not None and res.reject["reason"] == "encoding_error"


def test_render_gain_does_not_hinge_on_how_lines_break():
    """A row of tab buttons joined the heading to the first paragraph in the static extraction
    and not in the rendered one: the whole static line counted as lost (205 chars) and the
    render's new tab paragraph (147) was thrown away (sample web es-001, 'tabs')."""
    from crawlers.extract.page import render_gain

    static = "El mercado estrena horario 12 El mercado del centro abrirá también por la tarde."
    rendered = (
        "El mercado estrena horario\nEl mercado del centro abrirá también por la tarde.\n"
        "La asociación de vendedores organizará degustaciones los viernes."
    )
    added, lost = render_gain(static, rendered)
    assert lost == 2 and added == len("Laasociacióndevendedoresorganizarádegustacioneslosviernes.")
    assert render_gain("Loading... Please wait!", "Loading... Please wait!") == (0, 0)
