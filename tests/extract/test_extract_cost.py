"""What extraction spends per page: one parse, metadata without the fields no column holds, the
image and comment runs only where they can find something, and the same outputs as before."""

from __future__ import annotations

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
