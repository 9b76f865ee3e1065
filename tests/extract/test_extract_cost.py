"""What extraction spends per page: one parse, metadata without the fields no column holds, the
image and comment runs only where they can find something, and the same outputs as before."""

from __future__ import annotations

import copy

import lxml.html
import pytest
from trafilatura.metadata import extract_metadata
from trafilatura.settings import set_date_params

import crawlers.extract.content as content
from crawlers.extract import extract_page
from crawlers.extract.content import parse_html
from crawlers.extract.metadata import page_metadata

URL = "http://127.0.0.9:8000/news/2024/story.html"
EN = (
    "The city council approved the new budget on Tuesday after a long debate about public "
    "transport, housing and the renovation of the central library, which has been closed since "
    "the storm damaged its roof two winters ago. "
)


def article(extra: str = "", head: str = "", after: str = "") -> bytes:
    return (
        f'<html lang="en"><head><meta charset="utf-8">{head}<title>Budget approved | City Times'
        "</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<article><h1>Budget approved</h1>{extra}<p>{EN * 2}</p><p>{EN}</p>"
        f"<table><tr><th>Item</th><th>Sum</th></tr><tr><td>Library</td><td>4 M</td></tr></table>"
        f"</article>{after}<footer>Contact</footer></body></html>"
    ).encode()


def extract(body: bytes) -> dict:
    res = extract_page({"url": URL, "status": 200, "body": body, "content_type": None})
    assert res.document is not None, res.reject
    return res


@pytest.fixture
def calls(monkeypatch):
    """Count the lxml parses and the trafilatura runs of one extraction."""
    counts = {"parse": 0, "image_run": 0, "comments": 0}

    def counting(name, fn):
        def wrapped(*args, **kwargs):
            counts[name] += 1
            return fn(*args, **kwargs)

        return wrapped

    # The page's parses: trafilatura's loader and lxml's own (trafilatura's readability fallback
    # parses its summary with the names it imported, not counted here).
    monkeypatch.setattr(content, "load_html", counting("parse", content.load_html))
    monkeypatch.setattr("lxml.html.fromstring", counting("parse", lxml.html.fromstring))
    monkeypatch.setattr(content, "_image_body", counting("image_run", content._image_body))
    monkeypatch.setattr(content, "extract_comments", counting("comments", content.extract_comments))
    return counts


def test_a_page_is_parsed_once_for_trafilatura_tables_and_opt_outs(calls):
    res = extract(article(head='<meta name="robots" content="noai">'))
    assert calls["parse"] == 1
    assert res.document["noai"] is True and res.document["training_allowed"] is False
    assert res.tables[0]["cells"] == [["Item", "Sum"], ["Library", "4 M"]]


def test_no_image_run_without_an_image_file_and_one_with(calls):
    pixel = '<img src="/track?u=1" width="1"><img src="data:,x">'
    res = extract(article(extra=pixel))
    assert calls["image_run"] == 0 and res.image_refs == []
    res = extract(article(extra='<figure><img src="/img/library.jpg" alt="The library"></figure>'))
    assert calls["image_run"] == 1
    assert [r["src"] for r in res.image_refs] == ["http://127.0.0.9:8000/img/library.jpg"]


@pytest.mark.parametrize(
    "section",
    [
        '<ol class="comment-list"><li><p>{}</p></li></ol>',  # a list only after tag conversion
        '<div id="comments"><p>{}</p></div>',
        '<section class="article-comments"><p>{}</p></section>',
        '<details class="comments"><summary>Replies</summary><p>{}</p></details>',  # a div
    ],
)
def test_comment_sections_of_every_shape_are_still_found(calls, section):
    reply = "What about the bus lines in the north of town? Nobody mentions them at all."
    res = extract(article(after=section.format(reply)))
    assert reply in res.document["comments"] and reply not in res.document["text"]


def test_a_comment_counter_link_runs_no_comment_extraction(calls):
    res = extract(article(extra='<span class="comment-count"><a href="#c">3 comments</a></span>'))
    assert calls["comments"] == 0 and res.document["comments"] == ""


HEADS = [
    '<meta name="author" content="Ada Lovelace"><meta property="og:site_name" content="citytimes">'
    '<meta property="article:published_time" content="2024-03-05T10:00:00Z">',
    '<script type="application/ld+json">{"@type": "NewsArticle", "headline": "Budget approved",'
    ' "author": {"@type": "Person", "name": "Grace Hopper"}, "datePublished": "2023-11-02"}'
    "</script>",
    "",
]
BYLINES = ["", '<div class="byline">By <a rel="author">Alan Turing</a><time>5 March</time></div>']


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("byline", BYLINES)
def test_metadata_fields_are_trafilaturas(head, byline):
    tree = parse_html(article(extra=byline, head=head).decode())
    ours = page_metadata(tree, URL)
    theirs = extract_metadata(tree, URL, set_date_params(extensive=False), False, None)
    for field in ("title", "author", "date", "sitename", "url", "hostname"):
        assert getattr(ours, field) == getattr(theirs, field), field


def _short_story_in_a_big_page() -> bytes:
    # A short story among much more page text: trafilatura's recall escalation looks again.
    teasers = "".join(
        f"<div class='teaser'><h3>Story {i}</h3><span>{EN}</span></div>" for i in range(30)
    )
    return (
        f"<html><head><title>Short</title></head><body><div class='main'><h1>Short</h1>"
        f"<p>{EN}</p></div><div class='more'>{teasers}</div></body></html>"
    ).encode()


FORUM_HEAD = (
    '<script type="application/ld+json">{"@type": "DiscussionForumPosting", "headline": "Bus"}'
    "</script>"
)
RUN_PAGES = {
    "article": article(),
    "images and byline": article(
        extra='<div class="byline">By <a rel="author">Alan Turing</a></div>'
        '<figure><img src="/img/a.jpg" alt="A"><figcaption>Caption</figcaption></figure>',
        after='<ol class="comment-list"><li><p>A reader writes about the bus lines.</p></li></ol>',
    ),
    "short story": _short_story_in_a_big_page(),
    "forum": article(
        head=FORUM_HEAD,
        after='<div id="comments"><p>First post about the budget and the library roof.</p></div>',
    ),
}


@pytest.mark.parametrize("page", sorted(RUN_PAGES))
@pytest.mark.parametrize("favor", ["balanced", "precision", "recall"])
def test_shared_runs_give_trafilaturas_own_results(page, favor, monkeypatch):
    from lxml import etree
    from trafilatura import bare_extraction
    from trafilatura.core import trafilatura_sequence

    from crawlers.extract import runs

    retries = []
    retry = runs._recall_retry
    monkeypatch.setattr(runs, "_recall_retry", lambda *a: retries.append(1) or retry(*a))
    tree = parse_html(RUN_PAGES[page].decode())
    before = etree.tostring(tree)
    raw = runs.RawTree(tree)
    pruned = etree.tostring(raw.pruned(content._options(URL, favor, images=False, fast=False)))
    for images, fast in ((False, False), (True, True), (True, False)):
        options = content._options(URL, favor, images=images, fast=fast)
        theirs = bare_extraction(copy.copy(tree), options=options)
        ours = runs.main_run(raw, options)
        assert (ours is None) == (theirs is None)
        if ours is not None:
            assert ours.text == theirs.text
            assert etree.tostring(ours.body) == etree.tostring(theirs.body)
        body, text, _, _ = trafilatura_sequence(copy.copy(tree), options, URL)
        o_body, o_text = runs.sequence(raw, options, URL)
        assert (o_text, etree.tostring(o_body)) == (text, etree.tostring(body))
    assert etree.tostring(tree) == before  # the raw tree is every run's input, unchanged
    assert etree.tostring(raw.pruned(content._options(URL, favor, images=False, fast=False))) == (
        pruned  # and so is the pruned tree the runs share
    )
    if page == "short story" and favor == "balanced":
        assert retries  # the recall escalation was taken, and agreed


def test_the_image_run_reuses_the_main_runs_pruned_tree(monkeypatch):
    from trafilatura.xpaths import RAW_TREE_PRUNE_XPATH

    from crawlers.extract import runs

    pruned = []
    prune = runs.prune_unwanted_nodes
    monkeypatch.setattr(
        runs,
        "prune_unwanted_nodes",
        lambda tree, xpaths, *a: (
            pruned.append(xpaths is RAW_TREE_PRUNE_XPATH) or prune(tree, xpaths, *a)
        ),
    )
    res = extract(article(extra='<figure><img src="/img/library.jpg" alt="The library"></figure>'))
    assert res.image_refs and pruned.count(True) == 1


COMMENT_GATE_WITH_REGEXES = (  # the gate as first written, with trafilatura's regular expressions
    "boolean(//*[self::div or self::section or self::ul or self::ol or self::dl or self::form "
    "or self::figure or self::table or self::details][contains(@class, 'comment') or "
    "re:test(@class, '^Comments') or starts-with(@id, 'social') or "
    "re:test(@id, 'comment-?list|^comment[s-]|^(?:comol|disqus_thread|dsq-comments)')])"
)


@pytest.mark.parametrize("attr", ["id", "class"])
def test_the_comment_gate_without_regexes_matches_as_the_regexes_do(attr):
    from lxml.etree import XPath

    regexes = XPath(
        COMMENT_GATE_WITH_REGEXES, namespaces={"re": "http://exslt.org/regular-expressions"}
    )
    values = [
        "comments", "comment-3", "commentlist", "my-comment-list", "xcomments", "Comments box",
        "no Comments", "comol", "xcomol", "disqus_thread", "dsq-comments", "dsq-comment",
        "comment_list", "commentary", "social-links", "asocial", "COMMENTS", "Comment", "",
    ]  # fmt: skip
    for value in values:
        for tag in ("div", "ol", "details", "span"):
            tree = lxml.html.fromstring(
                f'<html><body><{tag} {attr}="{value}">x</{tag}></body></html>'
            )
            assert content._may_have_comments(tree) == regexes(tree), (tag, attr, value)


BYLINE_SHAPES = [
    '<a rel="author" href="/a">Alan Turing</a>',
    '<span itemprop="author name">Alan Turing</span>',
    '<div class="post-authorName">Alan Turing</div>',
    '<p id="zuozhe">Alan Turing</p>',
    '<h4 class="journalist-name">Alan Turing</h4>',
    '<div class="BBL">Alan Turing</div>',
    '<section class="Byline">Alan Turing</section>',
    '<em data-component="Byline">Alan Turing</em>',
    '<b id="mainAuthor">Alan Turing</b>',
    "<author>Alan Turing</author>",
    '<div class="byline">By Alan Turing <time>5 March</time></div>',
]


@pytest.mark.parametrize("byline", BYLINE_SHAPES)
def test_every_author_shape_still_reaches_trafilaturas_author_search(byline):
    tree = parse_html(article(extra=byline).decode())
    ours = page_metadata(tree, URL)
    theirs = extract_metadata(tree, URL, set_date_params(extensive=False), False, None)
    assert ours.author == theirs.author == "Alan Turing"


def test_a_page_without_author_markup_is_not_copied_to_look_for_one(monkeypatch):
    import crawlers.extract.metadata as metadata

    copies = []
    copy_of = metadata.deepcopy
    monkeypatch.setattr(metadata, "deepcopy", lambda t: copies.append(1) or copy_of(t))
    tree = parse_html(article(extra='<div class="teaser">More</div>').decode())
    assert page_metadata(tree, URL).author is None and copies == []
    tree = parse_html(article(extra=BYLINE_SHAPES[0]).decode())
    assert page_metadata(tree, URL).author == "Alan Turing" and copies == [1]


def test_the_author_xpaths_without_regexes_select_what_trafilaturas_select():
    from trafilatura.xpaths import AUTHOR_DISCARD_XPATHS, AUTHOR_XPATHS

    import crawlers.extract.metadata as metadata

    words = [
        "author", "Author", "AUTHOR", "authorname", "author-name", "author_name", "AuthorName",
        "authorName", "zuozhe", "bianji", "xiaobian", "channel-name", "submitted-by", "posted-by",
        "journalist-name", "screenname", "writer", "Writer", "byline", "Byline", "BYLINE", "byl",
        "BBL", "username", "comments", "Comments", "comment-list", "commentlist", "comments-list",
        "ProductReviews", "sidebar", "is-hidden", "quote", "embedly-instagram", "article-share",
        "article-support", "article-body", "print", "category", "meta-date", "meta-reviewer",
        "title", "date", "Figure", "me", "author name", "AuthorCard", "AuthorURL",
    ]  # fmt: skip
    values = [v for w in words for v in (w, f"x {w}", f"{w}-y", f"a{w}b")]
    tags = ["a", "address", "div", "link", "p", "span", "strong", "h3", "h4", "section", "em"]
    attrs = ["id", "class", "itemprop", "rel", "data-testid", "data-component"]
    cells = [f'<{t} {a}="{v}">x</{t}>' for t in tags for a in attrs for v in values]
    cells += ["<author>x</author>", "<span><rel>me</rel>x</span>", "<time>x</time>"]
    tree = lxml.html.fromstring(f"<html><body>{''.join(cells)}</body></html>")
    pairs = [
        *zip(metadata._AUTHOR_XPATHS, AUTHOR_XPATHS, strict=True),
        *zip(metadata._AUTHOR_DISCARD_XPATHS, AUTHOR_DISCARD_XPATHS, strict=True),
    ]
    for ours, theirs in pairs:
        found = theirs(tree)
        assert found and ours(tree) == found
    for cell in cells:  # the gate lets every page through where an author XPath matches
        alone = lxml.html.fromstring(f"<html><body>{cell}</body></html>")
        if any(xpath(alone) for xpath in AUTHOR_XPATHS):
            assert metadata._may_have_author(alone), cell


@pytest.mark.parametrize(
    "img",
    [
        '<img src="/a.jpg">',
        '<img data-src="/a.webp" src="data:,x">',
        '<img data-src-large="/a.PNG?w=2">',
        '<img data-lazy="/a.jpg" src="/pixel">',
        '<img srcset="/a.jpg 2x">',
        '<img src="/a.svg">',
        "<img>",
        '<picture><source srcset="/a.jpg"></picture>',
    ],
)
def test_an_image_file_is_found_where_trafilatura_finds_one(img):
    from trafilatura.utils import image_src

    tree = lxml.html.fromstring(f"<html><body><p>x</p>{img}<img src='/track'></body></html>")
    assert content._has_images(tree) == any(image_src(i) is not None for i in tree.iter("img"))


def test_control_bytes_are_counted_as_one_by_one():
    import random

    from crawlers.extract.decode import sniff_binary

    rng = random.Random(7)
    for share in (0.0, 0.03, 0.049, 0.051, 0.2):
        for n in (10, 4096, 9000):
            body = bytes(
                rng.randrange(32) if rng.random() < share * 2 else rng.randrange(32, 256)
                for _ in range(n)
            ).replace(b"\x00", b" ")
            sample = body[:4096]
            controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13))
            expected = "control-bytes" if controls / len(sample) > 0.05 else None
            if not body.startswith((b"\xff\xfe", b"\xfe\xff", b"\xff\xd8\xff", b"\x1f\x8b")):
                assert sniff_binary(body) == expected, (share, n)
