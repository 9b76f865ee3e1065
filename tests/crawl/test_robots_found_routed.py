"""robots.txt judges a link as found also when another shard, or the render, hands it on (review
s34): the canonical URL sorts the query and drops tracking parameters, so a link on host A to
B's `/search?q=x&page=2` is requested as `/search?page=2&q=x`; B's `Disallow: /search?q=` holds
only when the shard that fetches B hears how A's page spelled it. Before, outbox rows carried the
canonical URL alone and B's shard fetched what B's robots.txt disallows. Loopback servers only."""

from __future__ import annotations

import asyncio
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from aiohttp import web

from crawlers.crawl import crawl
from crawlers.crawl.config import CrawlConfig, shard_of
from crawlers.crawl.frontier import Frontier
from crawlers.crawl.routing import OUTBOX_SCHEMA, ShardRouter
from crawlers.render.crawl import LinkSource, hand_on_links
from crawlers.render.session import RenderOutcome

from .loopback import LoopbackServer

pytestmark = pytest.mark.timeout(90)
CANDIDATES = [f"127.0.34.{n}" for n in range(11, 31)]
ROBOTS_B = "User-agent: *\nDisallow: /search?q=\nDisallow: /*utm_source=\nDisallow: /~joe/\n"
# (as A's page writes it, the path B's robots.txt disallows it as) -> requested canonically as
DENIED = {
    "/search?q=x&page=2": "/search?page=2&q=x",  # disallowed only as found (query order)
    "/p?utm_source=news&a=1": "/p?a=1",  # disallowed only as found (tracking parameter dropped)
    "/%7Ejoe/a": "/~joe/a",  # disallowed as requested too
}
CFG = {"delay": 0.0, "allow_private_networks": True, "use_sitemaps": False, "shards": 2}
PAGE = "<html><body><p>a page of some words for the crawl</p>{}</body></html>"


def _two_shards() -> tuple[str, str]:
    """A host of shard 0 and one of shard 1."""
    by: dict[int, str] = {}
    for ip in CANDIDATES:
        by.setdefault(shard_of(ip, 2), ip)
    assert len(by) == 2, "the test needs hosts on both shards"
    return by[0], by[1]


class Web(LoopbackServer):
    """Host A's pages link what `links[path]` lists (`{a}`, `{b}`: the two hosts' bases); B
    serves ROBOTS_B and a page without links for any path; every request is logged."""

    def __init__(self, a: str, b: str, links: dict[str, list[str]]):
        super().__init__([a, b])
        self.a, self.b, self.links = a, b, links
        self.log: list[tuple[str, str]] = []  # (host, raw path) of every request

    def base(self, ip: str) -> str:
        return f"http://{ip}:{self.port}"

    def paths(self, ip: str) -> list[str]:
        return [p for h, p in self.log if h == ip]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        ip = request.transport.get_extra_info("sockname")[0]
        self.log.append((ip, request.raw_path))
        if request.path == "/robots.txt":
            return web.Response(text=ROBOTS_B if ip == self.b else "User-agent: *\nAllow: /\n")
        hrefs = self.links.get(request.raw_path, []) if ip == self.a else []
        bases = {"a": self.base(self.a), "b": self.base(self.b)}
        body = PAGE.format("".join(f'<a href="{h.format(**bases)}">x</a>' for h in hrefs))
        return web.Response(text=body, content_type="text/html")


def _rows(out) -> dict[str, dict]:
    return {r["url"]: r for r in pq.read_table(out / "pages.parquet").to_pylist()}


def _assert_denied(site: Web, out, paths) -> None:
    served = site.paths(site.b)
    rows = _rows(out)
    for path in paths:
        assert DENIED[path] not in served and path not in served, served
        row = rows[site.base(site.b) + DENIED[path]]
        assert (row["robots_crawl"], row["crawl_allowed"], row["warc_file"]) == (
            "disallowed",
            0,
            None,
        ), row


def test_a_link_routed_to_another_shard_is_judged_as_found(tmp_path):
    a, b = _two_shards()
    links = {"/": ["{b}" + p for p in [*DENIED, "/ok?b=2&a=1"]]}
    with Web(a, b, links) as site:
        root = tmp_path / "crawl"
        first = asyncio.run(crawl([site.base(a) + "/"], root / "shard=0", {**CFG, "shard": 0}))
        assert first["routed_out"] == len(links["/"])
        two = asyncio.run(crawl([site.base(b) + "/"], root / "shard=1", {**CFG, "shard": 1}))
    assert two["inbox"] == len(links["/"])
    _assert_denied(site, root / "shard=1", DENIED)
    assert "/ok?a=1&b=2" in site.paths(b)  # allowed however spelled: fetched
    assert sorted(site.paths(a)) == ["/", "/robots.txt"]
    (part,) = (root / "outbox" / "to-1").glob("part-*.parquet")
    found = {r["url"]: r["found"] for r in pq.read_table(part).to_pylist()}
    assert found[site.base(b) + "/search?page=2&q=x"] == [site.base(b) + "/search?q=x&page=2"]
    assert found[site.base(b) + "/ok?a=1&b=2"] == [site.base(b) + "/ok?b=2&a=1"]


def test_a_spelling_found_after_the_url_was_routed_is_routed_too(tmp_path):
    # The first run routes B's URL as the home page spells it (allowed) and flushes; the resumed
    # run finds it on /more under the spelling B disallows: it is routed again with it.
    a, b = _two_shards()
    links = {
        "/": ["{a}/more", "{b}/search?page=2&q=x", "{b}/p?a=1"],
        "/more": ["{b}/search?q=x&page=2"],
    }
    with Web(a, b, links) as site:
        root = tmp_path / "crawl"
        out_a, cfg_a = root / "shard=0", {**CFG, "shard": 0}
        asyncio.run(crawl([site.base(a) + "/"], out_a, {**cfg_a, "max_pages": 1}))
        assert "/more" not in site.paths(a)
        asyncio.run(crawl([site.base(a) + "/"], out_a, {**cfg_a, "max_pages": 9}, resume=True))
        assert "/more" in site.paths(a)
        asyncio.run(crawl([site.base(b) + "/"], root / "shard=1", {**CFG, "shard": 1}))
    _assert_denied(site, root / "shard=1", ["/search?q=x&page=2"])
    assert "/p?a=1" in site.paths(b)
    first, again = sorted((root / "outbox" / "to-1").glob("part-*.parquet"))
    assert {r["url"]: r["found"] for r in pq.read_table(first).to_pylist()} == {
        site.base(b) + "/search?page=2&q=x": [],
        site.base(b) + "/p?a=1": [],
    }
    assert [(r["url"], r["found"]) for r in pq.read_table(again).to_pylist()] == [
        (site.base(b) + "/search?page=2&q=x", [site.base(b) + "/search?q=x&page=2"])
    ]


def test_an_old_outbox_part_without_found_still_reads(tmp_path):
    old = pa.schema([f for f in OUTBOX_SCHEMA if f.name != "found"])
    box = tmp_path / "outbox" / "to-1"
    box.mkdir(parents=True)
    rows = [
        {"url": "http://b.example/x", "depth": 2, "source": "link", "parent": None},
        {"url": "http://b.example/s?q=1&a=2", "depth": 1, "source": "link", "parent": None},
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=old), box / "part-0-1-2.parquet")
    new = [{**rows[0], "url": "http://b.example/y", "found": ["http://b.example/%79", None, ""]}]
    pq.write_table(pa.Table.from_pylist(new, schema=OUTBOX_SCHEMA), box / "part-0-3-3.parquet")
    calls: list[tuple] = []

    def discover(url, depth, source, parent, anchor, **kw) -> str:
        calls.append((url, depth, kw["routed"], kw["found"]))
        return "queued"

    frontier = Frontier(tmp_path / "frontier.sqlite")
    try:
        stats: Counter[str] = Counter()
        ShardRouter(CrawlConfig(shards=2, shard=1), frontier, tmp_path, stats).read_inbox(discover)
    finally:
        frontier.close()
    assert calls == [
        ("http://b.example/x", 2, True, ()),
        # a row whose URL is not canonical: robots.txt is asked about it as written too
        ("http://b.example/s?a=2&q=1", 1, True, ("http://b.example/s?q=1&a=2",)),
        ("http://b.example/y", 2, True, ("http://b.example/%79",)),
    ]
    assert stats["inbox"] == 3 and not stats["inbox_rejected"]


def test_the_render_hands_on_a_link_as_the_dom_spelled_it(tmp_path):
    # The rendered DOM of a page the crawl fetched links /search?q=x&page=2 (B's robots.txt
    # disallows it as written); the part carries that spelling and the crawl, resumed, never
    # requests /search?page=2&q=x (no browser: the render's outcome is given).
    a, b = _two_shards()
    with Web(a, b, {}) as site:
        out = tmp_path / "crawl"
        cfg = {"delay": 0.0, "allow_private_networks": True, "use_sitemaps": False}
        asyncio.run(crawl([site.base(a) + "/"], out, {**cfg, "max_pages": 1}))
        page = site.base(a) + "/"
        hrefs = [f"{site.base(b)}{p}" for p in DENIED]
        dom = PAGE.format("".join(f'<a href="{h}">b</a>' for h in hrefs))
        also = PAGE.format(f'<a href="{site.base(b)}/search?page=2&amp;q=x">b</a>')
        source = LinkSource(out, 1, 0, "RefineryBot", "RefineryBot-Extended", 0, frozenset())
        outcomes = {
            page: RenderOutcome(page, dom, 0),
            page + "x": RenderOutcome(page + "x", also, 0),
        }
        sources = {page: source, page + "x": source}
        handed = hand_on_links([{"url": page + "x"}, {"url": page}], outcomes, sources)
        assert handed == {page + "x": 1, page: 2}
        resumed = asyncio.run(crawl([page], out, {**cfg, "max_pages": 9}, resume=True))
    assert resumed["inbox"] == len(DENIED)
    _assert_denied(site, out, DENIED)
    (part,) = (out / "outbox" / "to-0").glob("part-render-*.parquet")
    found = {r["url"]: r["found"] for r in pq.read_table(part).to_pylist()}
    # /%7Ejoe/a is matched as /~joe/a: no spelling robots.txt could judge otherwise
    assert found == {
        site.base(b) + "/search?page=2&q=x": [site.base(b) + "/search?q=x&page=2"],
        site.base(b) + "/p?a=1": [site.base(b) + "/p?utm_source=news&a=1"],
        site.base(b) + "/~joe/a": [],
    }
