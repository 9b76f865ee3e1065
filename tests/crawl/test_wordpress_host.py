"""A third news host, on WordPress-like software (tests/crawl/wpnews.py): shortlink and old-permalink
redirect chains, listings paged only through <link rel=next>, media files linked from every post,
`wp-login.php?redirect_to=<this page>` on every page, replytocom/amp/print/share variants, session
ids, endless calendar archives, soft 404s. The crawl runs for real with a budget of 1.5 x the posts
and the server says what each request served.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from crawlers.crawl.html import parse_html
from crawlers.crawl.traps import FamilyStats, TrapDetector

from .realnews import crawl_news
from .wpnews import WordPressNewsServer

pytestmark = pytest.mark.timeout(180)
H = "http://blog.test"


def test_wordpress_host_posts_within_one_and_a_half_times_their_number(tmp_path):
    result = crawl_news(
        tmp_path / "out",
        300,
        seed=1,
        ip="127.0.0.71",
        server=WordPressNewsServer,
        use_sitemaps=True,
    )
    print("\n", result)
    assert result["coverage"] >= 0.95, result
    assert result["trap_share"] <= 0.05, result
    with WordPressNewsServer("127.0.0.71", n_articles=300, seed=1) as ns:
        briefs = sum(p["kind"] == "brief" for p in ns.posts)
    # the briefs are listed only on pages announced by <link rel=next>
    assert result["by_kind"].get("brief", 0) >= 0.95 * briefs, result
    skipped = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    reasons = [s["skip_reason"] for s in skipped]
    assert any(r.startswith("unwanted-type: ") and "image/jpeg" in r for r in reasons)
    assert any("return-address parameter 'redirect_to'" in r for r in reasons)
    assert result["families"].get("media", 0) <= 5, result


def test_link_rel_next_prev_and_canonical_in_the_head_are_links():
    html = (
        b'<html><head><link rel="next" href="/briefs/page/3/"><link rel="prev" href="page/1/">'
        b'<link rel="stylesheet" href="/s.css"><link rel="canonical" href="/briefs/page/2/">'
        b"</head><body><button>Load more</button></body></html>"
    )
    info = parse_html(
        html, f"{H}/briefs/page/2/", agent="RefineryBot", training_agent="RefineryBot-Extended"
    )
    assert [lk.url for lk in info.links] == [
        f"{H}/briefs/page/3/",
        f"{H}/briefs/page/2/page/1/",
        f"{H}/briefs/page/2/",  # the canonical address is a link too
    ]
    assert info.canonical == f"{H}/briefs/page/2/"


def test_a_parameter_carrying_the_linking_pages_own_address_is_a_return_address():
    t = TrapDetector()
    page = f"{H}/2019/03/some-post/"
    login = f"{H}/wp-login.php?redirect_to=http%3A%2F%2Fblog.test%2F2019%2F03%2Fsome-post%2F"
    t.observe(page, "Some post text " * 20, [login, f"{H}/tag/x/?paged=2"])
    clean, why = t.canonical(f"{H}/wp-login.php?redirect_to=http%3A%2F%2Fblog.test%2Fother%2F")
    assert clean == f"{H}/wp-login.php" and "return-address" in why
    # a parameter that names another page is not one
    assert t.canonical(f"{H}/tag/x/?paged=3")[1] is None
    other = TrapDetector()
    other.observe(page, "Some post text " * 20, [f"{H}/go?to=/2019/04/another-post/"])
    assert other.canonical(f"{H}/go?to=/2019/05/third/")[1] is None


def test_a_host_that_always_adds_the_trailing_slash_gets_it_before_the_request():
    t = TrapDetector()
    for n in range(3):
        t.note_redirect(f"{H}/2019/03/post-{n}", f"{H}/2019/03/post-{n}/")
    clean, why = t.slashed(f"{H}/2019/04/another-post")
    assert clean == f"{H}/2019/04/another-post/" and "trailing slash" in why
    assert t.canonical(f"{H}/2019/04/another-post?utm_x=1")[0].startswith(clean)
    assert t.slashed(f"{H}/2019/04/file.html")[1] is None  # a file name takes no slash
    assert t.slashed(f"{H}/story/12")[1] is None  # other depths: no evidence
    # a host that also serves slashless pages of that depth is left alone
    mixed = TrapDetector()
    for n in range(3):
        mixed.note_redirect(f"{H}/a/b/post-{n}", f"{H}/a/b/post-{n}/")
    mixed.note_served(f"{H}/a/b/page")
    assert mixed.slashed(f"{H}/a/b/other")[1] is None


def test_a_family_answering_types_the_crawl_does_not_take_sinks():
    fam = FamilyStats()
    for n in range(3):
        fam.record(f"{H}/2019/03/post-{n}/feed/", "Comments RSS", 200, 0, unwanted=True)
    assert fam.adjustment(f"{H}/2019/03/post-9/feed/", "Comments RSS") < -2


def test_an_origin_that_always_redirects_to_another_is_rewritten_before_the_request():
    t = TrapDetector()
    apex, www = "http://127.0.0.76:8080", "http://127.0.0.77:8080"
    for n in range(3):
        t.note_redirect(f"{apex}/2019/03/post-{n}/", f"{www}/2019/03/post-{n}/")
    clean, why = t.canonical(f"{apex}/2019/04/other/?replytocom=5")
    assert clean == f"{www}/2019/04/other/" and "origin alias" in why
    # an origin that also served a page of its own, or redirected elsewhere too, is left alone
    served = TrapDetector()
    for n in range(3):
        served.note_redirect(f"{apex}/a/{n}", f"{www}/a/{n}")
    served.note_served(f"{apex}/b")
    assert served.aliased(f"{apex}/c")[1] is None
    split = TrapDetector()
    for n in range(3):
        split.note_redirect(f"{apex}/a/{n}", f"{www}/a/{n}")
    split.note_redirect(f"{apex}/a/9", f"{apex}/login")  # not the same path: no vote either way
    split.note_redirect(f"{apex}/b/1", "http://127.0.0.78:8080/b/1")
    assert split.aliased(f"{apex}/c")[1] is None
