"""An opt-out in any capture of a page wins: a later capture, a revisit, a repeat of the same
payload or a skipped response that says noai takes out the capture the import keeps (and the
document extracted from it); a corpus row that repeats a kept document carries its own no."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from warcio.statusandheaders import StatusAndHeaders

from crawlers.imports import run
from crawlers.imports.docs import import_docs
from crawlers.imports.run import import_warc, is_done, scan_to_part
from tests.imports.archives import (
    ALLOW,
    TEST_CONFIG,
    base,
    page,
    response,
    write_warc,
)

HTML = [("Content-Type", "text/html")]


def _captures(path: Path, a: str) -> Path:
    def fill(w):
        response(w, f"{a}/dup", page("Dup old"))  # kept: the first capture, no opt-out
        response(w, f"{a}/dup", page("Dup new"), [*HTML, ("X-Robots-Tag", "noai")])
        response(w, f"{a}/meta", page("Meta old"))
        response(w, f"{a}/meta", page("Meta new", '<meta name="robots" content="noai">'))
        digest = response(w, f"{a}/orig", page("Orig"))
        revisit_http = StatusAndHeaders("200 OK", [*HTML, ("X-Robots-Tag", "noai")], "HTTP/1.1")
        w.write_record(
            w.create_revisit_record(
                f"{a}/orig", digest, f"{a}/orig", "2020-01-01T00:00:00Z", http_headers=revisit_http
            )
        )
        response(w, f"{a}/gone", page("Gone"))
        response(w, f"{a}/gone", page("Gone 404"), [*HTML, ("X-Robots-Tag", "noai")], "404 No")
        response(w, f"{a}/copy", page("Copied"))
        response(w, f"{a}/copy-b", page("Copied"), [*HTML, ("X-Robots-Tag", "noai")])
        response(w, f"{a}/img", page("Img"))
        response(w, f"{a}/img", page("Img new"), [*HTML, ("X-Robots-Tag", "noimageai")])
        response(w, f"{a}/free", page("Free"))
        response(w, f"{a}/free", page("Free again"))

    return write_warc(path, fill)


def test_an_opt_out_in_any_capture_takes_out_the_capture_kept(tmp_path, robots):
    a = base(ALLOW, robots.port)
    src = _captures(tmp_path / "c.warc.gz", a)
    out = tmp_path / "out"
    import_warc([str(src)], out, config=TEST_CONFIG)
    pages = {
        r["url"].rsplit("/", 1)[1]: r for r in pq.read_table(out / "pages.parquet").to_pylist()
    }
    assert set(pages) == {"dup", "meta", "orig", "gone", "copy", "img", "free"}
    for name in ("dup", "meta", "orig", "gone", "copy"):
        row = pages[name]
        assert row["training_allowed"] is False and row["noai"] is True, (name, row)
        assert "another capture (" in row["consent_source"], row["consent_source"]
        assert str(src.resolve()) + "@" in row["consent_source"]
    assert "X-Robots-Tag noai" in pages["dup"]["consent_source"]
    assert "archived meta: robots noai" in pages["meta"]["consent_source"]
    # noimageai keeps the text in and takes the images out
    assert pages["img"]["training_allowed"] is True and pages["img"]["noimageai"] is True
    assert pages["free"]["training_allowed"] is True and pages["free"]["noai"] is False
    skipped = pq.read_table(out / "skipped.parquet").to_pylist()
    said = [r for r in skipped if "is carried to it" in (r["skip_detail"] or "")]
    assert {r["skip_reason"] for r in said} == {"duplicate_url", "duplicate_payload", "revisit"}
    # the document extracted from the kept capture is not trained on either
    from crawlers.extract.crawl_io import iter_crawl_records
    from crawlers.extract.page import extract_page

    docs = {}
    for record in iter_crawl_records(out):
        doc = extract_page(record).document
        docs[record["url"].rsplit("/", 1)[1]] = doc["training_allowed"]
    assert docs["dup"] is False and docs["orig"] is False and docs["free"] is True


def test_a_part_written_by_an_older_scan_is_read_again(tmp_path):
    src = write_warc(
        tmp_path / "o.warc.gz", lambda w: response(w, "http://127.0.0.2:9/o", page("O"))
    )
    source = str(src.resolve())
    scan_to_part(source, tmp_path / "out", {})
    assert is_done(source, tmp_path / "out", {})
    marker = next((tmp_path / "out" / "parts").glob("*.done.json"))
    done = json.loads(marker.read_text())
    assert done["scan_version"] == run.SCAN_VERSION
    del done["scan_version"]  # as the scan before revisits' opt-outs were kept wrote it
    marker.write_text(json.dumps(done))
    assert not is_done(source, tmp_path / "out", {})


def test_a_corpus_row_that_repeats_a_kept_document_carries_its_opt_out(tmp_path):
    text = "A document the corpus holds twice, once with the author's no to training. " * 3
    other = "Another document, with its own words and nobody's objection to it at all. " * 3
    path = tmp_path / "c.jsonl"
    rows = [
        {"id": "a", "text": text},
        {"id": "b", "text": text, "training_allowed": False},
        {"id": "c", "text": other},
        {"id": "d", "text": other, "noai": True},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = import_docs([str(path)], tmp_path / "out", id_field="id", license="cc-by-4.0", offline=True)
    docs = {r["id"]: r for r in pq.read_table(tmp_path / "out" / "documents.parquet").to_pylist()}
    assert set(docs) == {"a", "c"} and s["training_allowed"] == 0
    assert docs["a"]["training_allowed"] is False
    assert "another row (" in docs["a"]["consent_source"]
    assert "source row: training_allowed is false" in docs["a"]["consent_source"]
    assert docs["c"]["training_allowed"] is False and docs["c"]["noai"] is True
