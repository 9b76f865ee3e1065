"""`drop_unrendered` with many hidden elements: the page comes out as removing them one by one
left it (each tail joined to the text before it, nested ones counted), and however many there
are, they go in one `strip_elements` pass (one by one re-joined the growing text each time:
quadratic in the number of hidden siblings), leaving each text one node."""

from __future__ import annotations

import pytest
from lxml import etree

from crawlers.extract import content
from crawlers.extract.content import _UNRENDERED, drop_unrendered, parse_html

pytestmark = pytest.mark.timeout(60)


def _one_by_one(tree) -> int:
    """The former removal: each element in document order, its tail appended to the previous
    sibling's tail or the parent's text; a nested one is removed from its removed ancestor."""
    n = 0
    for el in _UNRENDERED(tree):
        parent = el.getparent()
        if parent is None:
            continue
        prev, tail = el.getprevious(), el.tail or ""
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
        parent.remove(el)
        n += 1
    return n


def _page(body: str) -> str:
    return f"<html><head><title>T</title></head><body><article>{body}</article></body></html>"


PAGES = {
    "many hidden siblings with tails": "<p>Intro.</p><div>"
    + "".join(f"<span hidden>x{i}</span>word {i} " for i in range(2000))
    + "</div>",
    "many hidden void elements": "<div>"
    + "".join(f"<br hidden>w{i} <img hidden src=a.png>v{i} " for i in range(1000))
    + "</div>",
    "hidden inside hidden": "<div>a<div hidden>b<span hidden>c</span>d<p hidden>e</p>f</div>"
    "g<template><p hidden>h</p></template>i</div>",
    "template as first child": "<div><template><p>t</p></template>after template "
    "<b>bold</b>tail</div>",
    "hidden with tail after text and element": "<p>one <i>two</i><span hidden>x</span> three "
    "<em hidden>y</em>four</p>",
    "first children hidden in a row": "<p>"
    + "".join(f"<span hidden>{i}</span>t{i} " for i in range(500))
    + "</p>",
    "panels kept, shadow roots kept": "<div role=tabpanel hidden>panel</div>"
    "<div class='tab-pane x' hidden>pane</div><template shadowrootmode=open>shadow</template>"
    "<p hidden>gone</p>kept",
    "nothing hidden": "<p>plain <b>text</b></p>",
}


@pytest.mark.parametrize("body", PAGES.values(), ids=PAGES.keys())
def test_many_hidden_elements_leave_the_page_as_one_by_one_removal(body):
    html = _page(body)
    ours, theirs = parse_html(html), parse_html(html)
    assert drop_unrendered(ours) == _one_by_one(theirs)
    assert etree.tostring(ours, encoding="unicode") == etree.tostring(theirs, encoding="unicode")


def test_nested_hidden_elements_are_counted_and_tails_kept():
    tree = parse_html(_page(PAGES["hidden inside hidden"]))
    assert drop_unrendered(tree) == 5  # div, span, p, template, and the p in the template
    assert tree.find(".//article/div").text == "agi"  # f was a tail inside the hidden div
    assert not list(tree.iter(content._DROPPED))


def test_hidden_elements_go_in_one_pass_however_many(monkeypatch):
    calls = []
    strip = content.strip_elements
    monkeypatch.setattr(
        content, "strip_elements", lambda *a, **k: calls.append(a) or strip(*a, **k)
    )
    tree = parse_html(_page(PAGES["many hidden siblings with tails"]))
    assert drop_unrendered(tree) == 2000
    assert len(calls) == 1
    div = tree.find(".//article/div")
    assert " ".join(div.text.split()) == " ".join(f"word {i}" for i in range(2000))
    # One text node, not 2000 side by side that every read of the text joins again.
    assert len(div.xpath("text()")) == 1
