"""Articles a listing links only after its "Load more" button (a script fetches their links as
JSON) are crawled: the render hands the links its rendered DOM holds, and the static HTML does
not, to the crawl's inbox (`outbox/to-<k>/part-render-<hash>.parquet`), and `crawl --resume`
fetches them under its own rules. Before, the render held the links and the crawl never saw
them (8% of a news site's articles were lost). An imported page hands on nothing: an archive's
data never grants a fetch."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawlers.crawl import crawl
from crawlers.crawl.config import shard_of
from crawlers.crawl.html import parse_html
from crawlers.crawl.routing import OUTBOX_SCHEMA
from crawlers.render import RenderConfig
from crawlers.render.crawl import (
    JOURNAL_FILE,
    LinkSource,
    RenderJournal,
    hand_on_links,
    new_links,
    render_crawl,
)
from crawlers.render.run import run_render
from crawlers.render.session import RenderOutcome

from .conftest import write_crawl
from .test_render_policies import Site, js, jsn

pytestmark = pytest.mark.timeout(120)

HOST = "127.0.0.147"
BUNDLE = (
    "document.addEventListener('DOMContentLoaded', function () {"
    " var b = document.getElementById('load-more');"
    " b.addEventListener('click', function () {"
    "  fetch('/api/more').then(r => r.json()).then(j => {"
    "   document.querySelector('.river').insertAdjacentHTML('beforeend',"
    "    j.items.map(u => '<h3><a href=\"' + u + '\">' + u + '</a></h3>').join(''));"
    "   b.remove(); }); }); });"
)
HOME = (
    "<html><head><title>News</title><script defer src='/static/js/app.1a2b.js'></script></head>"
    "<body><main><h1>Latest</h1><div class='river'>"
    "<h3><a href='/news/story-1.html'>Story one</a></h3>"
    "<h3><a href='/news/story-2.html'>Story two</a></h3></div>"
    "<button id='load-more'>Load more</button></main></body></html>"
)
MORE = ["/news/story-3.html", "/news/story-4.html"]


def _article(i: int) -> tuple[int, dict, bytes]:
    body = "".join(
        f"<p>Paragraph {k} of story {i}: the council voted on the harbour budget today.</p>"
        for k in range(6)
    )
    page = f"<html><head><title>Story {i}</title></head><body><main><article>{body}</article>"
    return 200, {"Content-Type": "text/html"}, (page + "</main></body></html>").encode()


def _html(body: str) -> tuple[int, dict, bytes]:
    return 200, {"Content-Type": "text/html"}, body.encode()


ROUTES = {
    "/": _html(HOME),
    "/static/js/app.1a2b.js": js(BUNDLE),
    "/api/more": jsn({"items": MORE}),
    **{f"/news/story-{i}.html": _article(i) for i in range(1, 5)},
}
CRAWL = {"delay": 0.0, "allow_private_networks": True, "robots_retries": 0, "use_sitemaps": False}
RENDER = {"delay": 0.0, "page_timeout_s": 20}
TOKENS = {"agent": "RefineryBot", "training_agent": "RefineryBot-Extended"}


def _fetched(out) -> dict[str, dict]:
    rows = pq.read_table(out / "pages.parquet").to_pylist()
    return {r["url"]: r for r in rows if r["warc_file"]}


def _parts(out) -> list:
    return sorted((out / "outbox" / "to-0").glob("part-*.parquet"))


def test_links_a_load_more_button_reveals_are_crawled_on_resume(tmp_path, no_browser_leak):
    with Site(HOST, ROUTES) as site:
        out = tmp_path / "crawl"
        first = asyncio.run(crawl([site.base + "/"], out, {**CRAWL, "max_pages": 1}))
        assert first["fetched"] == 1  # the listing only: its budget is spent
        summary = run_render(out, tmp_path / "render", "auto", **RENDER)
        assert summary["links_handed_on"] == 2
        rendered = pq.read_table(tmp_path / "render" / "rendered.parquet").to_pylist()
        (home,) = [r for r in rendered if r["url"] == site.base + "/"]
        assert home["rendered"] and home["links_handed_on"] == 2, home["render_reason"]
        (part,) = _parts(out)  # an unsharded crawl's inbox: outbox/to-0/
        rows = pq.read_table(part).to_pylist()
        assert [r["url"] for r in rows] == [site.base + p for p in MORE]  # not story 1 or 2
        assert {(r["source"], r["parent"], r["depth"]) for r in rows} == {
            ("render", site.base + "/", 1)
        }

        resumed = asyncio.run(
            crawl([site.base + "/"], out, {**CRAWL, "max_pages": 20}, resume=True)
        )
        assert resumed["inbox"] == 2
        pages = _fetched(out)
        for path in MORE:
            page = pages[site.base + path]  # a link of the rendered listing, fetched
            assert page["status"] == 200 and page["source"] == "link"
            assert page["parent"] == site.base + "/" and page["depth"] == 1
        assert sum(p.startswith("/news/story-3") for p in site.paths()) == 1

        # The render run again hands on the same links: the same part, never a second one,
        # and a resumed crawl has nothing new to read.
        again = run_render(out, tmp_path / "render2", "auto", **RENDER)
        assert again["links_handed_on"] == 2 and _parts(out) == [part]
        last = asyncio.run(crawl([site.base + "/"], out, {**CRAWL, "max_pages": 20}, resume=True))
        assert last["inbox"] == 0 and last["fetched"] == 0


@pytest.mark.parametrize("source", ["link", "import:warc"])
def test_only_a_crawled_page_hands_on_its_links(tmp_path, source, no_browser_leak):
    with Site(HOST, ROUTES) as site:
        page = {
            "url": site.base + "/",
            "status": 200,
            "body": HOME.encode(),
            "content_type": "text/html",
        }
        out = write_crawl(tmp_path / "crawl", [page], crawl_config=CRAWL)
        table = pq.read_table(out / "pages.parquet")
        table = table.set_column(
            table.schema.get_field_index("source"), "source", [[source]]
        ).set_column(table.schema.get_field_index("depth"), "depth", [[0]])
        pq.write_table(table, out / "pages.parquet")
        config = RenderConfig(pages_in_flight=1, allow_private_networks=True, **RENDER)
        (row,) = render_crawl(out, "auto", config)
    assert row["rendered"] and "story-3" in row["html"]  # the button was clicked either way
    if source == "link":
        assert row["links_handed_on"] == 2 and len(_parts(out)) == 1
    else:  # an archive's data: its links are no reason to fetch anything
        assert row["links_handed_on"] == 0 and not (out / "outbox").exists()


def test_the_crawl_judges_handed_on_links_by_its_own_rules(tmp_path):
    """Scope, depth, file type and robots.txt apply to a link the render handed on as to any
    link of the page (no browser: the part is written as the render writes it)."""
    routes = {"/": _html(HOME), **{f"/news/story-{i}.html": _article(i) for i in range(1, 5)}}
    robots = "User-agent: *\nDisallow: /private/\n"
    with Site(HOST, routes, robots=robots) as site:
        out = tmp_path / "crawl"
        cfg = {**CRAWL, "max_depth": 2, "follow_external": False}
        asyncio.run(crawl([site.base + "/"], out, {**cfg, "max_pages": 1}))
        base = site.base

        def row(url: str, depth: int = 1) -> dict:
            return dict(
                url=url, depth=depth, source="render", parent=base + "/", anchor="", from_shard=0
            )

        rows = [
            row(base + "/news/story-3.html"),
            row("http://127.0.0.148:9/elsewhere"),  # another host: follow_external is off
            row(base + "/files/brochure.pdf"),  # a type the crawl does not take
            row(base + "/news/story-4.html", depth=3),  # beyond max_depth
            row(base + "/private/x.html"),  # robots.txt disallows it
        ]
        (out / "outbox" / "to-0").mkdir(parents=True)
        part = out / "outbox" / "to-0" / "part-render-0123abcd.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=OUTBOX_SCHEMA), part)
        resumed = asyncio.run(crawl([base + "/"], out, {**cfg, "max_pages": 20}, resume=True))
    assert resumed["inbox"] == 5
    pages = {r["url"]: r for r in pq.read_table(out / "pages.parquet").to_pylist()}
    skipped = {
        r["url"]: r["skip_reason"] for r in pq.read_table(out / "skipped.parquet").to_pylist()
    }
    assert pages[base + "/news/story-3.html"]["status"] == 200
    assert skipped["http://127.0.0.148:9/elsewhere"].startswith("external")
    assert skipped[base + "/files/brochure.pdf"].startswith("unwanted-type")
    assert skipped[base + "/news/story-4.html"].startswith("max-depth")
    assert not pages[base + "/private/x.html"]["crawl_allowed"]
    assert not [p for p in site.paths() if p.startswith(("/private", "/files"))]


def test_a_sharded_crawl_gets_each_link_in_the_inbox_of_its_host_shard(tmp_path):
    """Links go to the shard their host hashes to (as the crawl routes them), one part per
    target shard, named by its rows: handing the same links on again writes nothing new."""
    hosts = ["127.0.0.147", "127.0.0.148", "127.0.0.227", "127.0.0.228", "127.0.0.229"]
    by_shard: dict[int, list[str]] = {}
    for h in hosts:
        by_shard.setdefault(shard_of(h, 2), []).append(h)
    assert len(by_shard) == 2, "the test needs hosts on both shards"
    page = f"http://{hosts[0]}/listing"
    static = f"<html><body><a href='http://{hosts[1]}/old'>old</a></body></html>"
    links = "".join(f"<a href='http://{h}/new'>{h}</a>" for h in hosts)
    dom = f"<html><body><a href='http://{hosts[1]}/old'>old</a>{links}</body></html>"
    source = LinkSource(
        shard_root=tmp_path,
        shards=2,
        shard=1,
        agent="RefineryBot",
        training_agent="RefineryBot-Extended",
        depth=4,
        static=frozenset(lk.url for lk in parse_html(static, page, **TOKENS).links),
    )
    outcomes = {page: RenderOutcome(page, dom, 0)}
    handed = hand_on_links([{"url": page}], outcomes, {page: source})
    assert handed == {page: len(hosts)}
    for k, mine in by_shard.items():
        (part,) = (tmp_path / "outbox" / f"to-{k}").glob("part-render-*.parquet")
        rows = pq.read_table(part).to_pylist()
        assert sorted(r["url"] for r in rows) == sorted(f"http://{h}/new" for h in mine)
        assert {(r["depth"], r["from_shard"], r["parent"]) for r in rows} == {(5, 1, page)}
    hand_on_links([{"url": page}], outcomes, {page: source})
    assert len(list((tmp_path / "outbox").glob("to-*/part-*.parquet"))) == 2
    nofollow = dom.replace("<body>", "<head><meta name=robots content=nofollow></head><body>")
    assert new_links(nofollow, page, source) == []


def test_a_page_the_journal_resumes_hands_on_its_links_too(tmp_path, no_browser_leak):
    with Site(HOST, ROUTES) as site:
        page = {"url": site.base + "/", "status": 200, "body": HOME.encode()}
        out = write_crawl(
            tmp_path / "crawl", [{**page, "content_type": "text/html"}], "w.gz", CRAWL
        )
        config = RenderConfig(pages_in_flight=1, allow_private_networks=True, **RENDER)
        path = tmp_path / "render" / JOURNAL_FILE
        first = RenderJournal(path, {"run": 1})
        render_crawl(out, "auto", config, journal=first)
        first.close()  # killed before rendered.parquet: the journal stays
        (part,) = _parts(out)
        part.unlink()  # as if the kill came before the part was written
        served = len(site.paths())
        again = RenderJournal(path, {"run": 1})
        (row,) = render_crawl(out, "auto", config, journal=again)
        again.close()
    assert again.resumed == 1 and len(site.paths()) == served  # taken from the journal
    assert row["links_handed_on"] == 2 and _parts(out) == [part]
