"""The consent recheck asks about every document the lake holds and every origin its text came
through: imported documents (`imports/wet/`, `imports/docs/`), a filter run written elsewhere in
the lake, and the sub-resources (fetch, XHR, frames) a rendered page's text was loaded from."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from aiohttp import web

from common.consent import Consent
from crawlers.consent import lake_documents, recheck
from tests.crawl.loopback import LoopbackServer

pytestmark = pytest.mark.timeout(60)

A, B = "127.0.5.1", "127.0.5.2"  # a site that allows training; one that has since opted out
ALLOW = "User-agent: *\nAllow: /\n"
OPTED_OUT = "User-agent: *\nAllow: /\n\nUser-agent: RefineryBot-Extended\nDisallow: /\n"
RECHECK = {"allow_private_networks": True, "delay": 0.0, "robots_retries": 0}


class RobotsServer(LoopbackServer):
    """robots.txt per address; every other path is a page."""

    label = "robots server"

    def __init__(self, robots: dict[str, str]):
        super().__init__(list(robots))
        self.robots = robots

    def url(self, ip: str, path: str) -> str:
        return f"http://{ip}:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        ip = request.transport.get_extra_info("sockname")[0]
        if request.path == "/robots.txt":
            return web.Response(text=self.robots[ip])
        return web.Response(text="<p>page</p>", content_type="text/html")


def _docs(path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    base = {"text": "words", "training_allowed": True, "robots_training": "allowed"}
    pq.write_table(pa.Table.from_pylist([{**base, **r} for r in rows]), path)


@pytest.mark.parametrize("where", ["imports/wet", "imports/docs", "filter-wet"])
def test_documents_outside_extract_and_filter_are_rechecked(where, tmp_path):
    with RobotsServer({A: ALLOW, B: OPTED_OUT}) as s:
        _docs(tmp_path / "extract" / "documents.parquet", [{"id": "a1", "url": s.url(A, "/a")}])
        _docs(tmp_path / where / "documents.parquet", [{"id": "w1", "url": s.url(B, "/article")}])
        # a dataset of the same name without URLs (synthetic text): no robots.txt to ask
        _docs(tmp_path / "synth" / "documents.parquet", [{"id": "s1"}])
        result = recheck(tmp_path, RECHECK)
        consent = Consent.load(tmp_path)
    assert result.documents == 2 and result.opted_out == 1
    assert s.url(B, "/article") in consent.urls and "w1" in consent.ids
    assert consent.allows({"id": "a1", "url": s.url(A, "/a"), "training_allowed": True})


def test_a_rendered_pages_sub_resource_origin_that_opts_out_opts_the_page_out(tmp_path):
    with RobotsServer({A: ALLOW, B: OPTED_OUT}) as s:
        page, other = s.url(A, "/page"), s.url(A, "/other")
        _docs(
            tmp_path / "extract" / "documents.parquet",
            [{"id": "d1", "url": page}, {"id": "d2", "url": other}],
        )
        subs = {
            page: [  # its text was fetched from B; a font from B carries no text
                {"url": s.url(B, "/api/data.json"), "status": 200, "resource_type": "fetch"},
                {"url": s.url(A, "/app.js"), "status": 200, "resource_type": "script"},
            ],
            other: [{"url": s.url(B, "/font.woff2"), "status": 200, "resource_type": "font"}],
        }
        rendered = tmp_path / "rendered" / "rendered.parquet"
        rendered.parent.mkdir()
        rows = [{"url": u, "rendered": True, "subresources": v} for u, v in subs.items()]
        pq.write_table(pa.Table.from_pylist(rows), rendered)
        assert lake_documents(tmp_path)[page].hops == [
            s.url(B, "/api/data.json"),
            s.url(A, "/app.js"),
        ]
        result = recheck(tmp_path, RECHECK)
        consent = Consent.load(tmp_path)
    assert result.opted_out == 1
    assert "d1" in consent.ids and "d2" not in consent.ids
