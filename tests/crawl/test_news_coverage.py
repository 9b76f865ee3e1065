"""The page budget goes to articles, not to variants and dead links, on a news host built like real
ones (tests/crawl/realnews.py: shared template, session ids under many names, sort/view/comment
variants, 404 families, item?id articles reachable only through paginated listings).

The crawl runs for real with a budget of 1.5 x the articles; the server counts what each request
was. Coverage counts articles fetched under any URL; the trap share counts requests to sort/view/
comment or session-id variants among all requests (robots.txt aside).
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from crawlers.crawl.traps import FamilyStats, TrapDetector, main_text, pagination_step

from .realnews import OtherNewsServer, RealNewsServer, crawl_news

pytestmark = pytest.mark.timeout(120)
H = "http://news.test"


def test_news_host_articles_within_one_and_a_half_times_their_number(tmp_path):
    result = crawl_news(tmp_path / "out", 240, seed=3, ip="127.0.0.63")
    print("\n", result)
    assert result["coverage"] >= 0.95, result
    assert result["trap_share"] <= 0.05, result
    # every family of articles, item?id (only behind the listings' pagination) included
    assert min(result["by_kind"].values()) >= 0.95 * 80, result
    pages = pq.read_table(tmp_path / "out" / "pages.parquet").to_pylist()
    assert sum(p["status"] == 404 for p in pages) == result["families"].get("dead", 0)


def test_another_sites_sessions_controls_and_copies_are_learned_too(tmp_path):
    # ASP.NET path sessions, a rotating ?_t= on one link per page, cmtorder/commentsExpand,
    # print and AMP copies answering 200, listings paged ?p=K with only a "next" link.
    result = crawl_news(tmp_path / "out", 200, seed=5, ip="127.0.0.65", server=OtherNewsServer)
    print("\n", result)
    assert result["coverage"] >= 0.95, result
    assert result["trap_share"] <= 0.05, result
    skipped = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    assert any(s["skip_reason"].startswith("trap: copies") for s in skipped)


def test_links_found_too_deep_first_are_crawled_when_found_shallow_later(tmp_path):
    # Related-article chains reach articles beyond max_depth before the section listings (never
    # deeper than 2 here: pagination is not depth) do; those articles must not stay skipped.
    result = crawl_news(tmp_path / "out", 150, seed=4, ip="127.0.0.64", max_depth=3)
    assert result["coverage"] >= 0.95, result
    skipped = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    with RealNewsServer("127.0.0.64", n_articles=150, seed=4) as ns:
        articles = {a.split(f":{ns.port}", 1)[1] for a in ns.articles}
    too_deep = [
        s["url"]
        for s in skipped
        if s["skip_reason"].startswith("max-depth") and s["url"].split(":", 2)[2][5:] in articles
    ]
    assert not too_deep, too_deep[:3]


# --- canonical addresses ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "url, clean, word",
    [
        (f"{H}/story/5?osCsid=8f3a9c0d1e2f3a4b5c6d7e8f9a0b1c2d", f"{H}/story/5", "session"),
        (f"{H}/story/5?PHPSESSID=k2j3h4g5f6d7s8a9q0w1e2r3t4", f"{H}/story/5", "session"),
        (f"{H}/story/5;jsessionid=0AF3B2C1D4E5F6A7B8C9?x=1", f"{H}/story/5?x=1", "session"),
        (f"{H}/a/b;foo=8f3a9c0d1e2f3a4b5c6d/c", f"{H}/a/b/c", "session"),
        (f"{H}/item?comments=all&id=7", f"{H}/item?id=7", "sort/order/view"),
        (f"{H}/item?id=7&sort=new", f"{H}/item?id=7", "sort/order/view"),
        (f"{H}/2024/05/03/slug?order=asc", f"{H}/2024/05/03/slug", "sort/order/view"),
        (f"{H}/2024/05/03/slug?view=print", f"{H}/2024/05/03/slug", "view=print"),
        (f"{H}/section/world?page=2&view=grid", f"{H}/section/world?page=2", "view=grid"),
    ],
)
def test_session_and_view_parameters_are_canonicalised_away(url, clean, word):
    got, why = TrapDetector().canonical(url)
    assert got == clean and word in why


@pytest.mark.parametrize(
    "url",
    [
        f"{H}/index.php?id=5&option=com_content&view=article",  # view selects content here
        f"{H}/item?id=7",
        f"{H}/watch?v=dQw4w9WgXcQ",
        f"{H}/doc?h=8f3a9c0d1e2f3a4b5c6d7e8f9a0b1c2d",  # one content hash: not a session
        f"{H}/section/world?page=2",
        f"{H}/search?q=flood",
    ],
)
def test_content_parameters_are_kept(url):
    assert TrapDetector().canonical(url) == (url, None)


def test_a_random_token_on_a_pages_links_is_a_session_id_from_that_one_page():
    det = TrapDetector()
    tok = "8f3a9c0d1e2f3a4b5c6d7e8f9a0b1c2d"
    links = [f"{H}{p}?s={tok}" for p in ("/", "/about", "/section/world", "/section/sport")]
    links += [f"{H}/story/{n}?s={tok}" for n in (1, 2, 3)]
    det.observe(f"{H}/", "", links)
    assert det.canonical(f"{H}/story/9?s=0123456789abcdef0123")[0] == f"{H}/story/9"
    # a content hash linked from its own document's paths stays
    det.observe(f"{H}/doc/1", "", [f"{H}/doc/view?h={tok}", f"{H}/doc/raw?h={tok}"])
    assert det.canonical(f"{H}/doc/view?h={tok}")[0].endswith(f"h={tok}")


def test_rotating_tokens_one_per_page_are_recognised_after_a_few_pages():
    det = TrapDetector()
    paths = ["/story/1", "/story/2", "/2024/05/03/a", "/2024/05/04/b", "/story/3", "/story/4"]
    for n, path in enumerate(paths):
        token = f"{n:02d}ab{n * 7919:012x}cd"
        det.observe(f"{H}{path}", "", [f"{H}{path}/comments?ts={token}"])
    assert det.canonical(f"{H}/story/9?ts=99ab0000deadbeefcd")[0] == f"{H}/story/9"


def test_a_parameter_that_does_not_change_main_content_is_learned_per_url_shape():
    det = TrapDetector()
    home = f"{H}/"
    for n in range(4):
        url = f"{H}/login?return=%2Fstory%2F{n}"
        det.check(url, home)
        det.observe(url, "Sign in Not a subscriber yet?", [])
    assert det.canonical(f"{H}/login?return=%2Fstory%2F9")[0] == f"{H}/login"
    # evidence about /login says nothing about another path's parameter of the same name
    assert det.canonical(f"{H}/go?return=%2Fstory%2F9")[1] is None
    # ids whose pages differ are never learned away
    for n in range(6):
        url = f"{H}/item?id={n}"
        det.check(url, f"{H}/section/world")
        det.observe(url, f"article number {n} " + " ".join(f"w{n}x{i}" for i in range(40)), [])
    assert det.canonical(f"{H}/item?id=99")[1] is None
    # nor are numeric ids whose pages look alike (a template-heavy site, stubs): an id space
    # is never erased by a few look-alike pages
    for n in range(6):
        url = f"{H}/node?nid={n}"
        det.check(url, f"{H}/section/world")
        det.observe(url, "Please enable JavaScript to read this article on our site today", [])
    assert det.canonical(f"{H}/node?nid=99")[1] is None


# --- main content, link families, pagination ------------------------------------------------
def test_main_text_leaves_out_the_sites_template():
    ns = RealNewsServer(n_articles=9, seed=1)
    a, b = ns.article_paths[1], ns.article_paths[4]
    text_a = main_text(ns._page(a, []).encode())
    text_b = main_text(ns._page(b, []).encode())
    for boiler in ("Most read", "Riverside Media Group", "Sign in", "Comments", "Related"):
        assert boiler not in text_a
    assert ns.meta[a]["body"][0][:40] in text_a and ns.meta[b]["body"][0][:40] in text_b
    # the print view and the all-comments view carry the same main content
    print_view = main_text(ns._page(a.split("?")[0], [("view", "print")]).encode())
    assert print_view == text_a or a.startswith("/item")
    assert main_text(b"<html><body>" + b"<div>" * 200 + b"deep") == "deep"


def test_a_link_family_that_keeps_failing_sinks_and_a_listing_that_keeps_yielding_rises():
    fam = FamilyStats()
    assert fam.adjustment(f"{H}/amp/story/1", "AMP") == 0.0
    for n in range(3):
        fam.record(f"{H}/amp/story/{n}", "AMP", 404, 0)
    assert fam.adjustment(f"{H}/amp/story/99", "AMP") <= -3.0
    # the same template anchor on another shape sinks too (a family by its anchor text)
    assert fam.adjustment(f"{H}/amp/2024/05/03/x", "AMP") <= -3.0
    assert fam.adjustment(f"{H}/story/99", "A headline") == 0.0
    for k in (1, 2):
        fam.record(f"{H}/section/world?page={k}", "Next", 200, 20)
    assert fam.adjustment(f"{H}/section/world?page=3", "Next") > 0
    # one 404 among many good pages does not sink a family
    for n in range(20):
        fam.record(f"{H}/story/{n}", f"headline {n}", 404 if n == 3 else 200, 1)
    assert fam.adjustment(f"{H}/story/77", "") == 0.0
    # a family that serves nothing but copies of pages already fetched sinks, then is cut
    for n in range(5):
        assert fam.cut(f"{H}/story/{n}/print", "Print") is None
        fam.record(f"{H}/story/{n}/print", "Print", 200, 0)
        fam.copy(f"{H}/story/{n}/print", "Print")
    assert fam.adjustment(f"{H}/story/9/print", "") <= -3.0
    assert "copies" in fam.cut(f"{H}/story/9/print", "")
    assert fam.cut(f"{H}/story/9", "A headline") is None


def test_the_longer_of_two_urls_with_the_same_main_content_is_the_copy():
    det = TrapDetector()
    text = " ".join(f"word{i}" for i in range(60))
    assert det.observe(f"{H}/amp/story/5", text, []) is None
    assert det.observe(f"{H}/story/5", text, []) == f"{H}/amp/story/5"
    assert det.observe(f"{H}/story/5/print", text, []) == f"{H}/story/5/print"
    assert det.observe(f"{H}/story/6", text.replace("word7 ", "other "), []) is None


@pytest.mark.parametrize(
    "url, parent, step",
    [
        (f"{H}/section/world?page=3", f"{H}/section/world?page=2", True),
        (f"{H}/section/world?page=2", f"{H}/section/world", True),
        (f"{H}/news/page/3", f"{H}/news/page/2", True),
        (f"{H}/news/page/2", f"{H}/news", True),
        (f"{H}/story/3", f"{H}/story/2", False),
        (f"{H}/item?id=3", f"{H}/section/world?page=2", False),
        (f"{H}/section/world?page=3&sort=new", f"{H}/section/world?page=2", False),
        ("http://other.test/section/world?page=3", f"{H}/section/world?page=2", False),
    ],
)
def test_pagination_steps(url, parent, step):
    assert pagination_step(url, parent) is step


def test_blocks_the_host_repeats_on_many_pages_do_not_make_its_articles_look_alike():
    # Boilerplate in markup main_text cannot name (a plain div): 600 words on every page, each
    # article 12 words of its own. Judged on whole pages, ?slug= would look like a parameter
    # that does not change the page and be canonicalised away.
    import random

    rng = random.Random(1)
    words = [f"w{i}" for i in range(400)]
    boiler = "\n".join(" ".join(rng.choices(words, k=10)) for _ in range(60))
    det = TrapDetector()
    for n in range(10):
        url = f"{H}/read?slug=story-{n}"
        det.check(url, f"{H}/section/world")
        own = " ".join(rng.choices(words, k=12))
        det.observe(url, f"{boiler}\n{own}", [])
    assert det.canonical(f"{H}/read?slug=story-99")[1] is None
