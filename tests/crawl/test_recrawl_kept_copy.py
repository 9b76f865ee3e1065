"""A recrawl keeps the copy it holds unless the page really changed: a failed 2xx (timeout
mid-body, unwanted type) is an error, not a change; a 304's or a failed answer's X-Robots-Tag
can only take consent away; a change without a body clears what the old body said."""

from __future__ import annotations

import asyncio

import pyarrow.parquet as pq
import pytest
from aiohttp import web

from crawlers.crawl import crawl
from crawlers.crawl.recrawl import CHANGED, ERROR, RECRAWL_FILE, UNCHANGED, recrawl

from .loopback import LoopbackServer

HOST = "127.0.31.9"
GOOD = (
    b"<html><head><title>Good</title></head><body><p>The original good article.</p></body></html>"
)
CFG = dict(
    allow_private_networks=True,
    delay=0,
    read_timeout=0.5,
    total_timeout=3,
    max_retries=0,
    use_sitemaps=False,
    robots_retries=0,
)


class Site(LoopbackServer):
    """One article whose answer the test switches (`mode`)."""

    def __init__(self):
        super().__init__([HOST])
        self.mode = "good"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        etag = {"ETag": '"v1"'}
        if self.mode == "good":
            return web.Response(body=GOOD, content_type="text/html", headers=etag)
        if self.mode in ("304", "304-noai"):
            assert request.headers.get("If-None-Match") == '"v1"'
            noai = {"X-Robots-Tag": "noai"} if self.mode == "304-noai" else {}
            return web.Response(status=304, headers={**etag, **noai})
        if self.mode in ("type", "type-noai"):
            noai = {"X-Robots-Tag": "noai"} if self.mode == "type-noai" else {}
            return web.Response(
                body=GOOD, content_type="application/octet-stream", headers={**etag, **noai}
            )
        if self.mode == "drip":
            resp = web.StreamResponse(headers={"Content-Type": "text/html", "ETag": '"v2"'})
            resp.content_length = 5000
            await resp.prepare(request)
            await resp.write(b"<html>")
            await asyncio.sleep(2)
            return resp
        return web.Response(status=404, text="gone", content_type="text/html")


@pytest.fixture
def crawled(tmp_path):
    with Site() as site:
        url = f"http://{HOST}:{site.port}/a"
        asyncio.run(crawl([url], tmp_path, CFG))
        yield site, tmp_path, url, _page(tmp_path)


def _page(out) -> dict:
    (row,) = pq.read_table(out / "pages.parquet").to_pylist()
    return row


def _revisit(site: Site, out, mode: str) -> tuple[dict, dict, dict]:
    site.mode = mode
    summary = asyncio.run(recrawl(out, CFG, due_only=False))
    (state,) = pq.read_table(out / RECRAWL_FILE).to_pylist()
    return summary, state, _page(out)


KEPT = ("status", "content_sha256", "content_length", "title", "warc_file", "warc_offset")


@pytest.mark.parametrize("mode", ["type", "drip"])
def test_a_failed_200_is_an_error_and_keeps_the_good_copy(crawled, mode):
    site, out, _, before = crawled
    assert before["status"] == 200 and before["title"] == "Good"
    summary, state, after = _revisit(site, out, mode)
    assert (summary[ERROR], summary[CHANGED]) == (1, 0)
    assert state["outcome"] == ERROR
    assert {k: after[k] for k in KEPT} == {k: before[k] for k in KEPT}
    assert after["error"] is None and after["training_allowed"] is True


def test_a_304_carrying_noai_withdraws_training_consent(crawled):
    site, out, _, before = crawled
    assert before["training_allowed"] is True and before["noai"] is False
    summary, state, after = _revisit(site, out, "304-noai")
    assert (summary[UNCHANGED], summary["not_modified"]) == (1, 1)
    assert after["noai"] is True and after["training_allowed"] is False
    assert after["content_sha256"] == before["content_sha256"]
    # The next 304 without the header grants nothing back.
    _, state, after = _revisit(site, out, "304")
    assert state["outcome"] == UNCHANGED and after["training_allowed"] is False


def test_a_failed_200_carrying_noai_still_withdraws_consent(crawled):
    site, out, _, before = crawled
    summary, state, after = _revisit(site, out, "type-noai")
    assert state["outcome"] == ERROR
    assert after["noai"] is True and after["training_allowed"] is False
    assert after["content_sha256"] == before["content_sha256"]


def test_a_page_now_gone_drops_what_its_old_body_said(crawled):
    site, out, _, before = crawled
    summary, state, after = _revisit(site, out, "gone")
    assert state["outcome"] == CHANGED and after["status"] == 404
    assert after["content_sha256"] is None and after["content_length"] is None
    assert after["title"] is None and after["lang"] is None
    assert (
        after["warc_offset"] != before["warc_offset"] or after["warc_file"] != before["warc_file"]
    )
