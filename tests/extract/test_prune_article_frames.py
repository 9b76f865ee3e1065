"""Repeated content frames that are the sections of one article keep their class.

`unmark_repeated_frames` renames a frame class (`content`, `post`, `entry`) shared by elements
side by side, for forums: each phpBB post is a `div.content`. A how-to page shaped as eHow
writes it has a `div.content` per step of its one article; renamed, trafilatura took another
frame and lost the "What You'll Need" list.
"""

from __future__ import annotations

from lxml import html as lxml_html

from crawlers.extract import extract_page
from crawlers.extract.prune import REPEATED_CLASS, unmark_repeated_frames

NEEDS = ["Glass cloche", "Shallow clay saucer", "Floral foam block", "Sheet moss", "Tweezers"]
STEPS = [
    "Measure the inside of the cloche and cut the foam block a finger's width smaller, then soak "
    "it in a bowl of water until it sinks and carve a hollow for the root ball of the fern.",
    "Set the fern into the hollow, press the foam around its roots and add a second small plant "
    "beside it if the cloche is wide enough to leave a little air between the leaves.",
    "Pin sheet moss over the foam with bent florist wire so none of the green block shows, and "
    "tuck the edges under with tweezers where the moss curls up at the rim of the saucer.",
    "Lower the cloche over the arrangement; the glass keeps the moisture in, so water only when "
    "the walls stop misting in the morning, which is usually every two or three weeks.",
]
LEAD = (
    "A closed glass terrarium keeps a small piece of woodland on a shelf: it holds its own "
    "moisture, asks for little light and almost no care once the plants have settled in."
)


def _step(heading: str, body: str, marks: str = "") -> str:
    return (
        f'<div class="mod step"><div class="stepContent">{marks}<div class="content">'
        f'<span class="headline2 head mg-1 block">{heading}</span>{body}</div>'
        '<figure class="stepThumb"><img src="/img/step.jpg" alt="A step" class="photo" '
        'data-credit="Ann Potter"></figure><figcaption class="small caption">A step (Ann Potter)'
        "</figcaption></div></div>"
    )


def howto_page(marks=lambda i: "") -> str:
    """A how-to article as eHow writes it: title and byline, a lead, a "What You'll Need" list
    and the steps, each a `div.stepContent > div.content` opening with a heading span, with
    related links and an ad between them. `marks(i)` adds markup to the i-th block."""
    needs = "".join(f"<li>{n}</li>" for n in NEEDS)
    steps = [
        _step("What You'll Need:", f'<ul class="markdown-ul">{needs}</ul>', marks(0)),
        *(_step(f"Step {i}", f"<p>{s}</p>", marks(i)) for i, s in enumerate(STEPS, 1)),
    ]
    related = "".join(
        f'<li class="item"><a href="/how_{i}.html"><img src="/t{i}.jpg" class="thumb"></a>'
        f'<a class="title" href="/how_{i}.html">Terrarium idea number {i}</a></li>'
        for i in range(3)
    )
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>How to Build a Terrarium | '
        'Howto</title></head><body class="Crafts"><section id="Body"><div class="col-main">'
        '<header class="page-head"><h1 class="headline1 head" itemprop="headline">How to Build '
        'a Terrarium</h1><div class="post-meta"><a class="byline" rel="author" '
        'href="/contributor/ann_potter/">By Ann Potter</a></div><ul class="social-icons">'
        '<li><a href="/share?p">Pin</a></li><li><a href="/share?f">Share</a></li></ul></header>'
        f'<div class="mod step"><div class="stepContent mod"><div class="content lead"><p>{LEAD}'
        "</p></div></div></div>"
        '<div class="RelatedContent"><header><h3>Other People Are Reading</h3></header>'
        f'<ul class="people-reading">{related}</ul></div>'
        + "".join(steps[:2])
        + '<div class="mod Inline"><div id="GoogleAdsense300x250"></div></div>'
        + "".join(steps[2:])
        + '<aside class="mod related"><h3>More Like This</h3>'
        f'<ul class="unstyled">{related}</ul></aside></div></section></body></html>'
    )


def _content_classes(tree) -> list[str]:
    """The classes of the frames of the lead and the steps (each in a `div.stepContent`)."""
    return [el.get("class") for el in tree.xpath("//div[starts-with(@class, 'stepContent')]/div")]


def test_the_steps_of_a_howto_article_keep_their_frame_class():
    tree = lxml_html.document_fromstring(howto_page())
    assert unmark_repeated_frames(tree) == 0
    assert _content_classes(tree) == ["content lead"] + ["content"] * 5


def test_a_howto_article_keeps_its_list_of_what_you_need():
    res = extract_page(
        {
            "url": "http://howto.test/how_1_build-terrarium.html",
            "status": 200,
            "body": howto_page().encode(),
        }
    )
    assert res.document is not None, res.reject
    text = res.document["text"]
    for item in NEEDS:
        assert item in text
    for step in STEPS:
        assert step in text
    assert "Terrarium idea number" not in text


def test_blocks_with_a_post_author_or_date_are_posts_and_lose_the_class():
    """The same layout with a poster or a date in each repeated block is a list of posts."""
    for marks in (
        lambda i: f'<p class="author">by <a href="./memberlist.php?u={i}">gardener{i}</a></p>',
        lambda i: f'<time datetime="2024-04-0{i + 1}">April {i + 1}, 2024</time>',
        lambda i: f'<a class="username" href="#">gardener{i}</a>',
    ):
        tree = lxml_html.document_fromstring(howto_page(marks))
        assert unmark_repeated_frames(tree) == 5
        assert _content_classes(tree) == ["content lead"] + [REPEATED_CLASS] * 5


def test_sections_in_one_article_element_or_opening_with_headings_keep_the_class():
    sections = "".join(
        f'<div class="content"><p>{s}</p></div><p>Between the sections.</p>' for s in STEPS
    )
    tree = lxml_html.document_fromstring(
        f"<body><h1>Site</h1><div><article><h2>Terrarium</h2>{sections}</article></div>"
        "<h1>Another headline</h1></body>"
    )
    assert unmark_repeated_frames(tree) == 0
    headed = "".join(
        f'<div class="entry"><h3>Step {i}</h3><p>{s}</p></div>' for i, s in enumerate(STEPS)
    )
    tree = lxml_html.document_fromstring(f"<body><div>{headed}</div></body>")
    assert unmark_repeated_frames(tree) == 0
    # without a heading opening each, bare repeated frames are still taken for posts
    bare = "".join(f'<div class="entry"><p>{s}</p><h3>After</h3></div>' for s in STEPS)
    tree = lxml_html.document_fromstring(f"<body><div>{bare}</div></body>")
    assert unmark_repeated_frames(tree) == 4
