"""The render decision and extraction agree on `hidden` text: a static page whose article sits
in a `hidden` wrapper its own script unhides has no static text (extraction drops it), so it is
rendered. Before, the decision counted the hidden text as static, did not render, and
extraction found nothing (a reject, or a 4-character document of chrome)."""

from __future__ import annotations

import pytest

from crawlers.render import needs_render

WORDS = "river council budget restoration approved tuesday project funding residents bridge".split()
PARAS = "".join(
    "<p>" + " ".join(WORDS[(i + j) % len(WORDS)] for j in range(60)) + f" paragraph {i}.</p>"
    for i in range(8)
)


@pytest.mark.parametrize(
    "html",
    [
        "<html><head><title>T</title></head><body><div id='page' hidden><nav><a href='/'>Home"
        "</a></nav><article><h1>Budget</h1>" + PARAS + "</article></div><script>"
        "document.getElementById('page').hidden=false</script></body></html>",
        "<html><head><script>addEventListener('load',()=>document.querySelector('article')"
        ".removeAttribute('hidden'))</script></head><body><header>Site</header><article hidden>"
        "<h1>Budget</h1>" + PARAS + "</article><footer>(c) Site</footer></body></html>",
    ],
    ids=["wrapper", "article"],
)
def test_an_article_in_a_hidden_wrapper_is_rendered(html):
    decision = needs_render(html)
    assert decision.render, decision.reason


def test_hidden_tab_panels_and_a_shown_article_stay_static():
    tabs = "".join(
        f"<div role='tabpanel' hidden><p>{' '.join(WORDS)} tab {i} {' '.join(WORDS)}</p></div>"
        for i in range(6)
    )
    html = (
        "<html><body><article><h1>Budget</h1>" + PARAS + "<div class='tabs'>" + tabs + "</div>"
        "<p hidden>a note shown on click</p></article></body></html>"
    )
    decision = needs_render(html)
    assert not decision.render, decision.reason
