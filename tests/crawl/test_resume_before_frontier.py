"""A crawl killed before it created its frontier (its first second) resumes with --resume: there
is nothing to continue, so it starts fresh and says so; a directory holding a crawl's outputs
but no frontier is still refused."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiohttp import web

from crawlers.crawl import crawl
from crawlers.crawl.config import CrawlError
from crawlers.crawl.engine import crawl_left_in

from .loopback import LoopbackServer

HOST = "127.0.32.21"
FAST = dict(allow_private_networks=True, delay=0, robots_retries=0)


class TinyHost(LoopbackServer):
    def __init__(self):
        super().__init__([HOST])

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        links = '<a href="/a">a</a> <a href="/b">b</a>' if request.path == "/" else ""
        return web.Response(text=f"<p>page {request.path}</p>{links}", content_type="text/html")


@pytest.mark.parametrize("made", [False, True], ids=["no-out-dir", "empty-out-dir"])
def test_resume_of_a_crawl_killed_before_its_frontier_starts_fresh(tmp_path, caplog, made):
    out = tmp_path / "out"
    if made:
        out.mkdir()  # what a start leaves when it is killed before creating the frontier
    with TinyHost() as site, caplog.at_level(logging.WARNING):
        summary = asyncio.run(crawl([site.url("/")], out, FAST, resume=True))
        assert summary["resume_started_fresh"] is True and summary["fetched"] == 3
        assert "starting it fresh" in caplog.text
        assert (out / "frontier.sqlite").exists()
        # the crawl it started resumes as any other: nothing is fetched twice
        again = asyncio.run(crawl([site.url("/")], out, FAST, resume=True))
    assert again["resume_started_fresh"] is False and again["fetched"] == 0


def test_resume_refuses_a_crawl_whose_frontier_is_gone(tmp_path):
    (tmp_path / "pages.parquet").write_bytes(b"")
    (tmp_path / "warc").mkdir()
    (tmp_path / "notes.txt").write_text("not the crawl's")
    assert crawl_left_in(tmp_path) == ["pages.parquet", "warc"]
    with pytest.raises(CrawlError, match=r"does not exist but .* holds pages.parquet, warc"):
        asyncio.run(crawl(["http://127.0.32.21:9/"], tmp_path, FAST, resume=True))
    assert not (tmp_path / "frontier.sqlite").exists()


def test_the_stage_check_lets_resume_start_fresh_only_where_no_crawl_is(tmp_path):
    from crawlers.crawl.config import CrawlError
    from crawlers.crawl.run import check_start

    check_start(tmp_path / "missing", resume=True)  # killed before anything was made
    check_start(tmp_path, resume=True)  # an empty out
    (tmp_path / "pages.parquet").write_bytes(b"")
    with pytest.raises(CrawlError, match="holds pages.parquet"):
        check_start(tmp_path, resume=True)
