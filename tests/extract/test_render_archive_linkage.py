"""A render batch's records link as docs/schemas.md says: request and response records both name
the page (`Refinery-Page-URI`); a request's `WARC-Concurrent-To` is its response (the crawl's
convention), a response's is the batch's metadata record; `read_page` still reads it back."""

from __future__ import annotations

import gzip
import io

from warcio.archiveiterator import ArchiveIterator

from crawlers.crawl.fetcher import FetchResult, Hop
from crawlers.render.archive import Captured, RenderArchive, read_page

PAGE = "http://127.0.0.2/app"


def _captured() -> list[Captured]:
    hops = [
        Hop("http://127.0.0.2/old.js", 301, "Moved", response_headers=[("Location", "/a.js")]),
        Hop(
            "http://127.0.0.2/a.js",
            200,
            "OK",
            response_headers=[("Content-Type", "text/javascript")],
            raw_body=b"var a = 1;",
        ),
    ]
    res = FetchResult(
        "http://127.0.0.2/old.js", "http://127.0.0.2/a.js", 200, b"var a = 1;", hops=hops
    )
    page = FetchResult(
        PAGE, PAGE, 200, b"<p>x</p>", hops=[Hop(PAGE, 200, "OK", raw_body=b"<p>x</p>")]
    )
    return [Captured(PAGE, "document", page), Captured(res.url, "script", res)]


def test_render_records_name_the_page_and_link_request_to_response_to_metadata(tmp_path):
    archive = RenderArchive(tmp_path)
    loc = archive.write_page(PAGE, _captured(), {"reason": "test"})
    archive.close()
    data = (tmp_path / loc.file).read_bytes()[loc.offset : loc.offset + loc.length]
    records = [
        (r.rec_type, dict(r.rec_headers.headers))
        for r in ArchiveIterator(io.BytesIO(gzip.decompress(data)))
    ]
    kinds = {h["WARC-Record-ID"]: t for t, h in records}
    assert [t for t, _ in records] == ["metadata"] + ["request", "response"] * 3
    for kind, h in records[1:]:
        assert h["Refinery-Page-URI"] == PAGE, kind
        target = kinds[h["WARC-Concurrent-To"]]
        assert target == ("response" if kind == "request" else "metadata"), kind
    for (_, req), (_, resp) in zip(records[1::2], records[2::2], strict=True):
        assert req["WARC-Concurrent-To"] == resp["WARC-Record-ID"]
    back = read_page(tmp_path / loc.file, loc.offset, loc.length)
    assert back.page_url == PAGE and back.take("http://127.0.0.2/old.js").body == b"var a = 1;"
