"""A charset named only by the HTTP header survives `refinery crawl` + `refinery extract`.

The crawler's pages.parquet keeps the media type alone (`content_type` = "text/html",
`crawlers/crawl/record.py`); the full header, charset included, is in the WARC response it
stored. `crawl_io._record` hands extraction the WARC's header, the column only where the stored
response has none.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from crawlers.crawl.fetcher import Hop, mime_of
from crawlers.crawl.output import PAGES_SCHEMA
from crawlers.crawl.warc import WarcStore
from crawlers.extract import ExtractConfig, extract_page
from crawlers.extract.crawl_io import iter_crawl_records

CZECH = [
    "Zájem o účast projevili například borci z řad Angolanů, Beninců, Číňanů a Ukrajinců, "
    "s nimiž chtějí změřit síly zástupci německé, italské, slovenské, romské, židovské a "
    "arabské menšiny.",
    "Jako proběhla schůzka s našimi hlavasi na tábory?",
    "V každém případě změna postoje vedení města oddálí bytovou výstavbu ve městě.",
]
TURKISH = [
    "14 Şubat'ta Ankara'da TMMOB Olağanüstü Genel Kurulu'nda buluşuyoruz!",
    "1996 yılında Marmara Üniversitesi Atatürk Eğitim Fakültesi Anaokulu Öğretmenliğinde "
    "lisan eğitimini tamamladı.",
    "1. Çek-senet ve banka kartlarını düzenler ve çıktılarını alır.",
]
# (path, sentences, encoding, the response's Content-Type header or None for none)
PAGES = [
    ("/cs", CZECH, "iso-8859-2", "text/html; charset=ISO-8859-2"),
    ("/tr", TURKISH, "iso-8859-9", "text/html; charset=ISO-8859-9"),
    ("/none", TURKISH, "utf-8", None),
]


def _html(sentences: list[str]) -> str:
    paras = "".join(f"<p>{s}</p>" for s in sentences)
    return (
        "<!DOCTYPE html><html><head><title>T</title></head><body>"
        f"<article><h1>Heading</h1>{paras}</article></body></html>"
    )


def _crawl(tmp: Path) -> Path:
    """A crawl dir written like `refinery crawl`: WarcStore records, pages.parquet rows with
    the media type alone."""
    store = WarcStore(tmp)
    rows = []
    for path, sentences, enc, ctype in PAGES:
        url = "http://127.0.0.1" + path
        headers = [("Content-Type", ctype)] if ctype else []
        hop = Hop(url, 200, "OK", response_headers=headers, raw_body=_html(sentences).encode(enc))
        loc = store.write([hop], "2026-01-01T00:00:00Z")
        rows.append(
            {
                "url": url,
                "status": 200,
                "crawl_allowed": True,
                "training_allowed": True,
                "robots_crawl": "allowed",
                "robots_training": "allowed",
                "content_type": mime_of(ctype) if ctype else "text/html",
                "fetched_at": "2026-01-01T00:00:00Z",
                "warc_file": loc.file,
                "warc_offset": loc.offset,
                "warc_length": loc.length,
            }
        )
    store.close()
    pq.write_table(pa.Table.from_pylist(rows, schema=PAGES_SCHEMA), tmp / "pages.parquet")
    return tmp


def test_header_only_charset_reaches_extraction(tmp_path: Path) -> None:
    records = {r["url"]: r for r in iter_crawl_records(_crawl(tmp_path))}
    assert pq.read_table(tmp_path / "pages.parquet").column("content_type").to_pylist() == [
        "text/html"
    ] * len(PAGES)
    for path, sentences, _, ctype in PAGES:
        record = records["http://127.0.0.1" + path]
        # the stored response's header, or the pages column where the response has none
        assert record["content_type"] == (ctype or "text/html")
        doc = extract_page(record, ExtractConfig()).document
        assert doc is not None, path
        text = " ".join(doc["text"].split())
        assert [s for s in sentences if s not in text] == [], path
