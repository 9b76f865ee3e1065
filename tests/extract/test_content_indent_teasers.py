"""Markdown without the page source's indentation, and without related-content thumbnails.

A template indents its markup: the text after a <pre> (or a line of a paragraph broken in the
source) kept that indentation, four spaces or more, which Markdown reads as a code block
(readability's test pages mercurial, toc-missing, mathjax). And trafilatura's image run keeps a
teaser card's thumbnail but not its title, so the placer hung a "Related stories" box's
thumbnails on the main block before them (webmd-1, aclu).
"""

from crawlers.extract import extract_page
from crawlers.extract.content import unindent_markdown

_PARAGRAPHS = [
    "The migration of the grey whale is one of the longest of any mammal on the planet, "
    "a round trip of some twenty thousand kilometres every single year.",
    "Researchers followed the animals along the coast with small boats, noting where the "
    "mothers rested with their calves in the shallow and sheltered lagoons.",
    "The counts they made over a decade show the population recovering slowly, though the "
    "warmer water of recent summers has thinned the amphipods the whales feed on.",
]


def _markdown(html: str) -> str:
    url = "http://fakehost/test/page/"
    result = extract_page({"url": url, "status": 200, "body": html.encode()})
    assert result.document is not None, result.reject
    return result.document["markdown"]


def _outside_fences(markdown: str) -> list[str]:
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def test_template_indentation_does_not_make_code_blocks_but_pre_keeps_its_own():
    pad = "\n" + " " * 28
    html = (
        "<html><head><title>Whales</title></head><body><nav><a href='/'>Home</a></nav>"
        "<div class='content'><div class='post'><div class='entry'>"
        f"{pad}<h2>Counting whales</h2>"
        f"{pad}<p>{_PARAGRAPHS[0]}</p>"
        f"{pad}<pre>def count(pods):\n    total = 0\n    for pod in pods:\n"
        f"        total += len(pod)\n    return total</pre>"
        f"{pad}<p>{_PARAGRAPHS[1]}</p>"
        f"{pad}<pre>$ whales --count\n    12 pods</pre>"
        f"{pad}<p>{_PARAGRAPHS[2]}{pad}The lagoons are quiet again by April.</p>"
        f"{pad}</div></div></div></body></html>"
    )
    markdown = _markdown(html)
    for line in _outside_fences(markdown):
        assert not line.startswith("    "), line
    assert _PARAGRAPHS[1] in markdown
    # the code keeps its indentation, in a fence
    assert "\n    for pod in pods:\n        total += len(pod)\n" in markdown
    assert "\n    12 pods\n" in markdown


def test_plain_text_loses_template_indentation_but_code_keeps_its_own():
    pad = "\n" + "\t" * 5
    html = (
        "<html><head><title>Whales</title></head><body><nav><a href='/'>Home</a></nav>"
        "<article>"
        f"{pad}<p>{_PARAGRAPHS[0]}</p>"
        f"{pad}<figure><img src='/w.jpg'><figcaption>{pad}A grey whale off Baja.</figcaption>"
        "</figure>"
        f"{pad}<pre>def count(pods):\n    return sum(len(p) for p in pods)</pre>"
        f"{pad}<p>{_PARAGRAPHS[1]}{pad}The lagoons are quiet again by April.</p>"
        f"{pad}<p>{_PARAGRAPHS[2]}</p>"
        f"{pad}</article></body></html>"
    )
    result = extract_page({"url": "http://fakehost/w/", "status": 200, "body": html.encode()})
    text = result.document["text"]
    assert "\n    return sum(len(p) for p in pods)" in text  # code keeps its indentation
    for line in text.split("\n"):
        if "return sum" not in line:
            assert line == line.lstrip(), repr(line)
    assert "The lagoons are quiet again by April." in text


def test_nested_list_indentation_survives():
    html = (
        "<html><body><article><h1>Whale facts</h1>"
        f"<p>{_PARAGRAPHS[0]}</p>"
        "<ul><li>Grey whales<ul><li>Pacific population<ol><li>Eastern stock</li>"
        "<li>Western stock</li></ol></li></ul></li><li>Humpback whales</li></ul>"
        f"<p>{_PARAGRAPHS[1]}</p></article></body></html>"
    )
    markdown = _markdown(html)
    assert "- Grey whales\n  - Pacific population\n    1. Eastern stock\n" in markdown
    assert "\n    2. Western stock\n" in markdown


def test_unindent_markdown_keeps_fences_and_list_nesting_only():
    markdown = (
        "- item\n  - nested\n    1. deeper\n  after the sublist\n\n"
        "        a paragraph the template indented\n"
        "      ## A heading\n"
        "```\n    code stays\n\tand tabs\n```\n"
        "\t![photo](http://x.test/a.jpg)\n"
        "~~~~\n        tilde code\n~~~~\n"
        "- top\n          - a deeper indent than any item: the source's"
    )
    assert unindent_markdown(markdown) == (
        "- item\n  - nested\n    1. deeper\n  after the sublist\n\n"
        "a paragraph the template indented\n"
        "## A heading\n"
        "```\n    code stays\n\tand tabs\n```\n"
        "![photo](http://x.test/a.jpg)\n"
        "~~~~\n        tilde code\n~~~~\n"
        "- top\n- a deeper indent than any item: the source's"
    )


def _card(n: int) -> str:
    href = f"/stories/story-{n}"
    return (
        f"<div class='entry'><a href='{href}'><img src='/thumbs/story-{n}.jpg' alt='t{n}'></a>"
        f"<div class='link'><a href='{href}'>The headline of related story number {n}</a></div>"
        f"<div class='dek'>A short teaser line for story {n} of the box.</div></div>"
    )


def test_related_box_thumbnails_stay_out_and_article_images_stay_in():
    html = (
        "<html><head><title>Whales</title></head><body><nav><a href='/'>Home</a></nav>"
        "<div id='main'><article>"
        # a call to action ahead of the title, as aclu's: its image would wait for the title
        "<div class='action'><h2><a href='/act/now'>Protect the lagoons</a></h2>"
        "<div class='field-image'><a href='/act/now'><img src='/thumbs/action.jpg' alt=''></a>"
        "</div><a href='/act/now'>Send a message now</a></div>"
        "<h1>The grey whale's long road</h1>"
        f"<p>{_PARAGRAPHS[0]}</p>"
        "<p><img src='/photos/lagoon.jpg' alt='A lagoon'></p>"
        f"<p>{_PARAGRAPHS[1]}</p>"
        # a photo linked to its own page, with a caption: the article's
        "<div class='thumb'><a href='/wiki/File:Calf.jpg' class='image'>"
        "<img src='/photos/calf.jpg' alt='A calf'></a>"
        "<div class='thumbcaption'>A calf beside its mother in the lagoon</div></div>"
        f"<p>{_PARAGRAPHS[2]}</p></article>"
        "<div class='related'><h2>Today on Whale News</h2>"
        + "".join(_card(n) for n in range(1, 5))
        + "</div></div></body></html>"
    )
    markdown = _markdown(html)
    assert "lagoon.jpg" in markdown
    assert "calf.jpg" in markdown
    assert "/thumbs/" not in markdown, markdown
