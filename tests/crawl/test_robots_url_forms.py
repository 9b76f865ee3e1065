"""robots.txt decides on every form of a URL a server may read it as: as requested, canonical,
and with its path's slashes merged (`//private/x` is `/private/x` to nginx)."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from crawlers.crawl.canon import canonicalize
from crawlers.crawl.downloader import Downloader
from crawlers.crawl.robots_policy import ALLOWED, DISALLOWED, decision, merged_slashes
from crawlers.robots import RobotsTxt

from .loopback import LoopbackServer

ROBOTS = RobotsTxt.parse(b"User-agent: *\nDisallow: /private\nDisallow: /a/b/\n")
HOST = "127.0.31.5"


@pytest.mark.parametrize(
    "url",
    [
        "http://h.test//private/x",
        "http://h.test///private",
        "http://h.test/%2Fprivate/x",
        "http://h.test/a//b/c",
        "http://h.test/a/%2f/b/c",
        "http://h.test//%70rivate/x",
    ],
)
def test_a_path_with_doubled_slashes_meets_the_rule_for_its_merged_path(url):
    assert decision(ROBOTS, "RefineryBot", url) == DISALLOWED


@pytest.mark.parametrize(
    "url", ["http://h.test//public/x", "http://h.test/a%2Fb/c", "http://h.test/x?next=//private"]
)
def test_merging_slashes_denies_nothing_the_rules_do_not_name(url):
    assert decision(ROBOTS, "RefineryBot", url) == ALLOWED


def test_merged_form_leaves_the_canonical_url_as_it_is():
    assert canonicalize("http://h.test//private/x") == "http://h.test//private/x"
    assert merged_slashes("http://h.test//private//x?q=a//b") == "http://h.test/private/x?q=a//b"


class MergingServer(LoopbackServer):
    """Serves every path as its slash-merged path, as nginx does by default."""

    def __init__(self, ips):
        super().__init__(ips)
        self.paths: list[str] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.raw_path)
        if request.path.strip("/") == "robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /private\n")
        return web.Response(text="<p>private</p>", content_type="text/html")


def test_downloader_never_sends_a_doubled_slash_path_robots_disallows():
    with MergingServer([HOST]) as srv:

        async def go():
            async with Downloader({"allow_private_networks": True, "delay": 0}) as d:
                return await d.fetch(f"http://{HOST}:{srv.port}//private/x")

        res = asyncio.run(go())
    assert res.error and res.error.startswith("robots-disallowed")
    assert srv.paths == ["/robots.txt"]
