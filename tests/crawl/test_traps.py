"""Crawler traps are capped from evidence while a news site's 2,000 articles are all crawled.

The crawl runs for real (`crawlers.crawl.engine.crawl`) against a loopback news host
(tests/crawl/newsserver.py) with no page budget: it must end by itself, which it only does if
every trap family is cut off.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections import Counter, defaultdict
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest

from crawlers.crawl import crawl
from crawlers.crawl.traps import TrapDetector, calendar_family, hamming, shape_of, simhash

from .newsserver import FAMILIES, WORDS, NewsServer

N_ARTICLES = 2000
# What each trap family may cost in fetched pages (server-side count), and the words its
# skip_reason must contain to name its evidence.
CAPS = {"calendar": 14, "session": 14, "sort": 20, "deepening": 16, "near-duplicate": 24}
EVIDENCE = {
    "calendar": ("calendar walk",),
    "session": ("session",),
    # sort/order parameters are canonicalised away; the endless /list?page=N walk that is left
    # lists the same articles on every page
    "sort": ("sort", "order", "does not change"),
    "deepening": ("ever-deepening",),
    "near-duplicate": ("near-identical", "simhash"),
}


def _path_qs(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


@pytest.fixture(scope="module")
def news_crawl(tmp_path_factory):
    out = tmp_path_factory.mktemp("newscrawl")
    with NewsServer("127.0.0.61", n_articles=N_ARTICLES, seed=7) as ns:
        config = dict(
            delay=0,
            allow_private_networks=True,
            robots_retries=0,
            use_sitemaps=False,
            max_depth=10_000,  # depth is not what stops traps here
            checkpoint_every=10_000,
        )
        summary = asyncio.run(crawl([ns.url("/")], out, config))
        pages = pq.read_table(out / "pages.parquet").to_pylist()
        skipped = pq.read_table(out / "skipped.parquet").to_pylist()
        yield {"ns": ns, "summary": summary, "pages": pages, "skipped": skipped}


def test_every_article_is_crawled(news_crawl):
    ns, pages = news_crawl["ns"], news_crawl["pages"]
    fetched = {p["url"] for p in pages if p["status"] == 200}
    articles = set(ns.articles)
    covered = len(articles & fetched)
    assert covered / len(articles) >= 0.95, f"covered {covered} of {len(articles)} articles"
    # None of them was even considered a trap.
    trapped = [s for s in news_crawl["skipped"] if s["url"] in articles]
    assert not trapped, trapped[:3]


def test_each_trap_family_is_capped_and_the_crawl_ends(news_crawl):
    ns, summary = news_crawl["ns"], news_crawl["summary"]
    # No page budget was set: the crawl stopped because the frontier ran dry.
    assert summary["queued_left"] == 0
    spent = Counter(ns.family(path) for path in ns.hits)
    skipped = Counter(ns.family(_path_qs(row["url"])) for row in news_crawl["skipped"])
    print(f"\npages fetched per family (URLs skipped): {N_ARTICLES} articles on offer")
    for family in FAMILIES:
        print(f"  {family:15s} {spent[family]:5d} ({skipped[family]} skipped)")
    assert spent["article"] == N_ARTICLES and spent["index"] == ns.pages
    for family, cap in CAPS.items():
        assert 1 <= spent[family] <= cap, f"{family}: {spent[family]} pages (cap {cap})"


def test_each_trap_decision_names_its_evidence(news_crawl):
    ns = news_crawl["ns"]
    reasons = defaultdict(list)
    for row in news_crawl["skipped"]:
        reasons[ns.family(_path_qs(row["url"]))].append(row["skip_reason"])
    for family, words in EVIDENCE.items():
        assert reasons[family], f"no {family} URL was skipped"
        for reason in reasons[family]:
            assert reason.startswith("trap: "), reason
            assert any(w in reason for w in words), f"{family}: {reason}"
    assert set(reasons) <= set(FAMILIES) | {"other"}


# --- the detector on its own ------------------------------------------------------------
def test_numbered_and_dated_articles_are_never_capped():
    det = TrapDetector()
    index = "https://news.example/news?page=1"
    urls = []
    for n in range(3000):
        urls += [
            f"https://news.example/2024/{1 + n % 12:02d}/{1 + n % 28:02d}/a-story-about-{n}",
            f"https://news.example/story/{100000 + n}",
            f"https://news.example/item?id={n}",
            f"https://news.example/news?page={n}",
        ]
    assert [u for u in urls if det.check(u, index)] == []


def test_calendar_budget_grows_only_while_date_pages_lead_somewhere_new():
    det = TrapDetector(max_calendar=3)
    home = "https://ev.example/"
    assert det.check(home) is None
    # An archive whose every day page lists a new article keeps going ...
    for day in range(1, 29):
        url = f"https://ev.example/archive/2024/05/{day:02d}"
        assert det.check(url, home) is None, day
        det.observe(url, simhash_text(day), [f"https://ev.example/post/{day}-news-of-the-day"])
    # ... an empty calendar walk stops after its base budget.
    verdicts = []
    for day in range(1, 10):
        url = f"https://ev.example/cal/2024/06?day={day}"
        verdicts.append(det.check(url, home))
        det.observe(url, "no events", [home])
    assert verdicts[:3] == [None, None, None] and all(verdicts[3:])
    assert "calendar walk" in verdicts[3] and "ev.example/cal/{date}?day={date}" in verdicts[3]


@pytest.mark.parametrize(
    ("url", "family"),
    [
        ("https://h/cal/2024/05?day=3", "h/cal/{date}?day={date}"),
        ("https://h/2024/05/12/", "h/{date}"),
        ("https://h/events/2024-05-12", "h/events/{date}"),
        ("https://h/archive/2024", "h/archive/{date}"),
        ("https://h/search?date=2024-05-12&q=x", "h/search?date={date},q"),
        ("https://h/2024/05/12/a-real-story", None),
        ("https://h/story/2024", None),  # an id that happens to look like a year
        ("https://h/story/123?year=2024", None),
        ("https://h/2024/05/12/123456", None),
    ],
)
def test_calendar_family(url, family):
    got = calendar_family(url)
    assert (got[0] if got else None) == family


def test_sort_permutations_are_capped_per_listing():
    det = TrapDetector(max_param_variants=3)
    parent = "https://shop.example/list"
    verdicts = [
        det.check(f"https://shop.example/list?order={o}&page={p}&sort={s}", parent)
        for p in (1, 2)
        for s in ("price", "name", "date")
        for o in ("asc", "desc")
    ]
    assert [v is None for v in verdicts] == [True] * 3 + [False] * 3 + [True] * 3 + [False] * 3
    assert "sort/order parameters (order, sort)" in verdicts[3]


def test_rotating_session_tokens_are_recognised_without_a_known_name():
    det = TrapDetector()
    verdicts = []
    for n in range(4):
        token = f"{n:04d}f00dfeedbeef{n:04d}"
        parent = f"https://t.example/?v={token}"
        for path in ("/", "/a", "/b", "/c"):
            verdicts.append((n, path, det.check(f"https://t.example{path}?v={token}", parent)))
    first = [v for n, _, v in verdicts if n == 0]
    assert first == [None] * 4  # one token, nothing multiplied yet
    later = [v for n, _, v in verdicts if n >= 2]
    assert all(v and "session-like parameter 'v'" in v for v in later), later


def test_parameter_shown_not_to_change_the_page_is_capped_but_content_ids_are_not():
    det = TrapDetector()
    parent = "https://p.example/"
    same = "the same listing of twenty items " * 20
    for n in range(4):  # each variant links to the next, as a page carrying ?ref= on its links
        url = f"https://p.example/list?ref=src{n}"
        if det.check(url, parent) is None:
            det.observe(url, same, [])
        parent = url
    assert "parameter 'ref' that does not change the page" in (
        det.check("https://p.example/list?ref=src99", parent) or ""
    )
    # The same variant linked from another page (not a variant of /list) is not cut on that
    # evidence: content evidence only stops a page's variants from multiplying themselves.
    assert det.check("https://p.example/list?ref=src100", "https://p.example/") is None
    # A parameter whose variants are different pages stays open however many there are.
    for n in range(200):
        url = f"https://p.example/item?id={n}"
        assert det.check(url, parent) is None
        det.observe(url, f"article {simhash_text(n)}", [])


def simhash_text(n: int) -> str:
    """A different text for every n (seeded word salad, like real articles' vocabulary)."""
    rng = random.Random(n)
    return " ".join(rng.choice(WORDS) for _ in range(60))


def test_ever_deepening_paths():
    det = TrapDetector(max_deepening=4)
    assert "segment 'a' repeats 3 times" in det.check("https://d.example/a/b/a/b/a/", None)
    parent, verdict = "https://d.example/deep/", None
    for n in range(1, 10):
        url = parent + f"x{n}/"
        verdict = det.check(url, parent)
        if verdict:
            break
        parent = url
    assert n == 5 and "ever-deepening path: 5 links in a row" in verdict
    # Siblings at one depth are not deepening.
    assert all(
        det.check(f"https://d.example/docs/page-{k}", "https://d.example/docs/") is None
        for k in range(50)
    )


def test_run_of_near_identical_pages_is_cut_and_distinct_pages_are_not():
    det = TrapDetector(max_dup_run=3)
    parent, cut = "https://g.example/", None
    boilerplate = simhash_text(999)  # sixty words every generated page shares
    for n in range(10):
        url = f"https://g.example/gen/{n:08x}a9"
        cut = det.check(url, parent)
        if cut:
            break
        det.observe(url, f"{boilerplate} generated page {n:08x}a9", [])
        parent = url
    assert cut and "run of near-identical pages" in cut and n == det.max_dup_run + 1
    # Pages of one shape with different text never form a run.
    parent = "https://g.example/stories"
    for n in range(100):
        url = f"https://g.example/story/{n}"
        assert det.check(url, parent) is None
        det.observe(url, simhash_text(n), [])
        parent = url


def test_a_finite_tree_of_short_look_alike_pages_is_kept_an_endless_chain_is_not():
    # Pages like the fault server's /tree/N ("link to /tree/7 link to /tree/8"): a few words,
    # identical once numbers are folded. A finite tree 5 levels deep is crawled whole ...
    det = TrapDetector()
    kept = []
    queue = [("https://t.example/", "https://t.example/tree/0")]
    while queue:
        parent, url = queue.pop(0)
        if det.check(url, parent) is None:
            kept.append(url)
            n = int(url.rsplit("/", 1)[1])
            kids = [k for k in (2 * n + 1, 2 * n + 2) if k < 60]
            links = [f"https://t.example/tree/{k}" for k in kids]
            det.observe(url, " ".join(f"link to /tree/{k}" for k in kids), links)
            queue += [(url, link) for link in links]
    assert len(kept) == 60
    # ... while an endless chain of identical short pages stops after a run of max_dup_run.
    det, parent = TrapDetector(), "https://t.example/"
    for n in range(100):
        url = f"https://t.example/chain/{n}"
        if det.check(url, parent):
            break
        det.observe(url, "nothing here yet", [f"https://t.example/chain/{n + 1}"])
        parent = url
    assert n == det.max_dup_run + 1


def test_simhash_near_identical_and_different_texts():
    long = simhash_text(5)
    assert hamming(simhash(long + " page 17"), simhash(long + " page 18")) <= 6
    # Numbers are words: short pages differing in their number are different pages.
    a = simhash("Story 17. This is story number 17 of the day.")
    b = simhash("Story 18. This is story number 18 of the day.")
    assert hamming(a, b) > 6
    assert simhash("Same text, same print.") == simhash("same TEXT same print")
    c = simhash(simhash_text(1))
    d = simhash(simhash_text(2))
    assert hamming(c, d) > 10
    assert shape_of("https://h/story/123?b=1&a=2") == "h/story/*?a,b"


def _simulate(det: TrapDetector, site, seed: str) -> list[str]:
    """Crawl `site(url) -> (text, links)` breadth-first the way the engine asks the detector:
    every new link is checked when its page is fetched, after the page was observed."""
    fetched, queue, known = [], [seed], {seed}
    assert det.check(seed) is None
    while queue:
        url = queue.pop(0)
        text, links = site(url)
        fetched.append(url)
        det.observe(url, text, links)
        for link in links:
            if link not in known:
                known.add(link)
                if det.check(link, url) is None:
                    queue.append(link)
    return fetched


def test_templated_index_and_articles_differing_only_in_numbers_are_all_crawled():
    # The hard case for near-duplicate detection: every index page reads "Story 100020 Story
    # 100021 ..." and every article "Story N. This is story number N ..." - identical once
    # numbers are folded. Index pages lead to new articles, articles are reached from them: no
    # chain of look-alike pages feeding itself, so nothing is cut.
    base, per_page, pages = "https://tpl.example", 20, 50

    def site(url):
        path = url[len(base) :]
        if path.startswith("/news?page="):
            n = int(path.rsplit("=", 1)[1])
            ids = range(n * per_page, (n + 1) * per_page)
            links = [f"{base}/story/{100000 + i}" for i in ids] + [
                f"{base}/item?id={i}" for i in ids
            ]
            if n + 1 < pages:
                links.append(f"{base}/news?page={n + 1}")
            return " ".join(f"Story {100000 + i} Item {i}" for i in ids), links
        n = (
            int(path.rsplit("/", 1)[1])
            if path.startswith("/story/")
            else int(path.rsplit("=", 1)[1])
        )
        text = f"Story {n}. This is story number {n} of the day, with the usual words in it."
        related = [f"{base}/story/{100000 + (n * 7 + k) % (pages * per_page)}" for k in (1, 2)]
        return text, related

    fetched = _simulate(TrapDetector(), site, f"{base}/news?page=0")
    assert len(fetched) == pages + 2 * pages * per_page


def test_branching_generated_pages_with_a_token_are_capped_while_templated_stories_are_not():
    # Stories share a long template (their own text is a short title), link each other (same
    # shape) and are listed by index pages; generated pages differ by one random token, each
    # linking three new ones. The stories are all crawled, the generated space stops within a few
    # dozen. (Stories differing in nothing but one number would be as alike as the generated
    # pages: only index links could tell them apart, and a look-alike reached first through a
    # related link may be cut.)
    base, n_stories = "https://mix.example", 600
    boiler = "Home About us Latest news Loopback Gazette independent local news since 1901"

    def site(url):
        path = url[len(base) :]
        if path == "/":
            return boiler, [f"{base}/news?page=0", f"{base}/gen/start"]
        if path.startswith("/news?page="):
            n = int(path.rsplit("=", 1)[1])
            ids = range(n * 20, min(n_stories, (n + 1) * 20))
            links = [f"{base}/story/{200000 + i}" for i in ids]
            if (n + 1) * 20 < n_stories:
                links.append(f"{base}/news?page={n + 1}")
            return boiler + " " + " ".join(f"Story {200000 + i}" for i in ids), links
        if path.startswith("/story/"):
            n = int(path.rsplit("/", 1)[1]) - 200000
            related = [f"{base}/story/{200000 + (n * k + 1) % n_stories}" for k in (7, 13)]
            title = " ".join(random.Random(n).choice(WORDS) for _ in range(5))
            text = f"{boiler} {title} Story {200000 + n} is a story. Read it all here today."
            return text, related
        token = hashlib.sha1(path.encode()).hexdigest()[:20]
        links = [
            f"{base}/gen/{hashlib.sha1(f'{path}{k}'.encode()).hexdigest()[:20]}" for k in range(3)
        ]
        text = (
            f"{boiler} Generated content for {token}. This page is generated. Nothing to read here."
        )
        return text, links

    fetched = _simulate(TrapDetector(), site, f"{base}/")
    stories = [u for u in fetched if "/story/" in u]
    generated = [u for u in fetched if "/gen/" in u]
    assert len(stories) == n_stories
    assert len(generated) <= 40, len(generated)
