"""Traps and priorities on software unlike the sample web's: a phpBB-like forum whose member list
never ends (each page a few names as links, its sort orders and the next page), and a
MediaWiki-like wiki whose thin talk and user pages share the articles' path. The crawls run for
real on loopback with budgets near the content's size; the server says what each request served.
"""

from __future__ import annotations

import asyncio
import html

import pytest
from aiohttp import web

from crawlers.crawl.traps import FamilyStats, TrapDetector, own_variant, shape_of

from .loopback import LoopbackServer

pytestmark = pytest.mark.timeout(180)
H = "http://board.test"
WORDS = (
    "engine clutch gearbox bearing piston valve timing chain brake caliper radiator gasket".split()
)


class ForumServer(LoopbackServer):
    """3 forums of 8 threads, each thread 1-3 pages of 10 posts; an endless member list."""

    label = "forum server"

    def __init__(self, ip: str):
        super().__init__([ip])
        self.served: list[str] = []
        self.threads = {t: 1 + t % 3 for t in range(24)}  # thread -> its pages

    def url(self, path: str) -> str:
        return f"http://{self.ips[0]}:{self.port}{path}"

    @staticmethod
    def _frame(title: str, body: str) -> web.Response:
        nav = (
            '<div class="navbar"><a href="/index.php">Board index</a> '
            '<a href="/memberlist.php">Members</a> <a href="/faq.php">FAQ</a></div>'
        )
        page = (
            f"<html><head><title>{html.escape(title)} - Forum</title></head><body>"
            f"<h1>Bike Forum</h1>{nav}<div id='page-body'>{body}</div></body></html>"
        )
        return web.Response(text=page, content_type="text/html")

    def _post(self, t: int, k: int, i: int) -> str:
        n = t * 1000 + k * 100 + i
        words = " ".join(WORDS[(n * 7 + j * j) % len(WORDS)] for j in range(40))
        return f"<div class='post'><p>{words} post {n}.</p></div>"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.served.append(request.path_qs)
        q, path = request.query, request.path
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow:\n")
        if path in ("/", "/index.php"):
            return self._frame(
                "Board index",
                "".join(
                    f'<h3><a href="/viewforum.php?f={f}">Forum {f}</a></h3>' for f in (1, 2, 3)
                ),
            )
        if path == "/viewforum.php":
            f = int(q.get("f", 1))
            rows = "".join(
                f'<li><a href="/viewtopic.php?f={f}&amp;t={t}">Topic {t} about the {WORDS[t % 12]}'
                "</a>"
                + "".join(
                    f' <a href="/viewtopic.php?f={f}&amp;t={t}&amp;start={k * 10}">{k + 1}</a>'
                    for k in range(1, n)
                )
                + "</li>"
                for t, n in self.threads.items()
                if 1 + t % 3 == f
            )
            return self._frame(f"Forum {f}", f"<ul>{rows}</ul>")
        if path == "/viewtopic.php":
            t, start = int(q.get("t", 0)), int(q.get("start", 0))
            pages = self.threads.get(t, 1)
            posts = "".join(self._post(t, start // 10, i) for i in range(10))
            links = "".join(
                f' <a href="/viewtopic.php?f={1 + t % 3}&amp;t={t}&amp;start={k * 10}">{k + 1}</a>'
                for k in range(pages)
            )
            return self._frame(f"Topic {t}", f"<h2>Topic {t}</h2>{posts}<p>{links}</p>")
        if path == "/memberlist.php":
            start = int(q.get("start", 0))
            names = "".join(
                f'<li><a href="/memberlist.php?mode=viewprofile&amp;u={i}">rider{i}</a></li>'
                for i in range(25)
            )
            sorts = "".join(
                f'<a href="/memberlist.php?sk={sk}&amp;sd={sd}&amp;start={start}">{sk}{sd}</a> '
                for sk in "abcdefm"
                for sd in "ad"
            )
            nxt = f'<a href="/memberlist.php?start={start + 25}">next</a>'
            return self._frame("Members", f"<ul>{names}</ul>{sorts}{nxt}")
        return self._frame("FAQ", "<p>Frequently asked questions.</p>")


def _crawl(server: ForumServer, out, max_pages: int) -> None:
    from crawlers.crawl import crawl

    cfg = {
        "delay": 0,
        "allow_private_networks": True,
        "robots_retries": 0,
        "use_sitemaps": False,
        "max_pages": max_pages,
        "checkpoint_every": 100_000,
    }
    asyncio.run(crawl([server.url("/index.php")], out, cfg))


def test_an_endless_member_list_does_not_take_the_forums_budget(tmp_path):
    with ForumServer("127.0.0.233") as fs:
        pages = {(t, k * 10) for t, n in fs.threads.items() for k in range(n)}  # 48
        _crawl(fs, tmp_path / "out", 90)
        served = list(fs.served)
    got = set()
    for p in served:
        if p.startswith("/viewtopic.php"):
            q = dict(kv.split("=") for kv in p.split("?")[1].split("&"))
            got.add((int(q["t"]), int(q.get("start", 0))))
    member_lists = [p for p in served if p.startswith("/memberlist.php") and "mode=" not in p]
    print(f"\nthread pages {len(got)}/{len(pages)}, member-list pages {len(member_lists)}")
    # before: each list page led to its own sort orders (unseen URLs of another shape), so the
    # endless walk was never a run of look-alikes and took nearly all of the budget
    assert len(member_lists) <= 12, member_lists
    assert len(got & pages) >= 0.95 * len(pages)


def test_links_to_a_pages_own_sort_orders_and_next_page_do_not_make_it_productive():
    det = TrapDetector()
    text = "Members\nBike Forum"  # a few words of main text: names are link text
    cut = None
    prev = f"{H}/memberlist.php?start=25"
    det.check(prev, f"{H}/memberlist.php")
    for n in range(2, 20):
        links = [f"{H}/memberlist.php?sd={d}&sk=a&start={25 * (n - 1)}" for d in "ad"]
        nxt = f"{H}/memberlist.php?start={25 * n}"
        det.observe(prev, text, [*links, nxt])
        for link in links:
            det.check(link, prev)
        cut = det.check(nxt, prev)
        if cut:
            break
        prev = nxt
    assert cut and "run of near-identical pages" in cut, cut
    assert n <= 10


def test_short_pages_with_the_same_visible_text_are_copies():
    det = TrapDetector()
    form = "<html><title>Login</title><body><p>You need to login in order to reply to topics "
    form += "within this forum.</p><form><label>Username:</label></form></body></html>"
    assert det.observe(f"{H}/posting.php?mode=reply&t=1", "Login", [], body=form) is None
    copy = det.observe(f"{H}/posting.php?mode=reply&t=2", "Login", [], body=form)
    assert copy == f"{H}/posting.php?mode=reply&t=2"
    other = form.replace("reply to topics", "email users")
    assert det.observe(f"{H}/memberlist.php?mode=email&u=2", "Login", [], body=other) is None
    # a few visible words are too few to judge (an empty shell waiting for its script)
    shell = "<html><body><div id='app'>Loading</div></body></html>"
    assert det.observe(f"{H}/app/1", "Loading", [], body=shell) is None
    assert det.observe(f"{H}/app/2", "Loading", [], body=shell) is None


def test_a_post_link_multiplying_a_thread_page_is_the_copy_fetched_first_or_not():
    text = " ".join(f"word{i}" for i in range(80))
    det = TrapDetector()
    thread = f"{H}/viewtopic.php?f=1&start=10&t=5"
    for p in range(1000, 1030):  # every post on every page links its ?p= address
        det.check(f"{H}/viewtopic.php?p={p}", thread)
    det.check(thread, f"{H}/viewforum.php?f=1")
    assert det.observe(f"{H}/viewtopic.php?p=1011", text) is None
    assert det.observe(thread, text) == f"{H}/viewtopic.php?p=1011"  # shorter, yet the copy
    # two addresses of one document: the longer is the copy, fetched first or not
    det2 = TrapDetector()
    assert det2.observe(f"{H}/amp/story/5", text) is None
    assert det2.observe(f"{H}/story/5", text) == f"{H}/amp/story/5"


def test_own_variants_are_the_same_paths_parameters_revalued_or_added():
    page = f"{H}/memberlist.php?start=25"
    assert own_variant(f"{H}/memberlist.php?start=50", page)
    assert own_variant(f"{H}/memberlist.php?sd=a&sk=a&start=25", page)
    assert not own_variant(f"{H}/memberlist.php?mode=viewprofile&u=3", page)
    assert not own_variant(f"{H}/viewtopic.php?start=25", page)
    assert not own_variant(f"{H}/news.php?id=5", f"{H}/news.php")  # a page without a query


def test_a_wiki_namespace_is_a_family_of_its_own():
    base = "http://wiki.test/wiki/"
    shapes = {shape_of(base + t) for t in ("Talk:River_1", "User:Editor3", "Category%3ATopic_0")}
    assert shapes == {
        "wiki.test/wiki/talk:*",
        "wiki.test/wiki/user:*",
        "wiki.test/wiki/category:*",
    }
    assert shape_of(base + "Category:Topic_1") == "wiki.test/wiki/category:*"
    assert shape_of(base + "River_history_12") == "wiki.test/wiki/*"
    assert shape_of("http://h.test/a/12:30") == "h.test/a/*"  # a time is no namespace


def test_thin_families_sink_and_hubs_count_only_links_to_content():
    fam = FamilyStats()
    art, talk = "http://wiki.test/wiki/River_{}", "http://wiki.test/wiki/Talk:River_{}"
    for n in range(6):
        fam.record(art.format(n), "", 200, 8, words=600, leads=["wiki.test/wiki/*"] * 8)
    for n in range(3):
        # a talk page links six revision variants and three user pages, none shown to be content
        leads = ["wiki.test/wiki/*?oldid"] * 6 + ["wiki.test/wiki/user:*"] * 3
        fam.record(talk.format(n), "Talk", 200, 9, words=25, leads=leads)
    assert fam.adjustment(talk.format(9), "Talk") == -1.0
    assert "25 words a page" in fam.why(talk.format(9), "Talk")
    assert fam.adjustment(art.format(9), "") == 0.5  # leads to articles: a hub
    # a listing of a few words whose links lead to articles is a hub, not thin
    for n in range(3):
        fam.record(
            f"http://wiki.test/cat/{n}?page=2",
            "next",
            200,
            10,
            words=4,
            leads=["wiki.test/wiki/*"] * 10,
        )
    assert fam.adjustment("http://wiki.test/cat/7?page=2", "next") == 0.5
