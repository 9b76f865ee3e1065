"""An article cut short behind a "Continue reading" button (the rest fetched by a script when
clicked) is rendered and clicked, so its whole body is kept; a listing whose teasers link to
their articles with "Read more" stays static (a link navigates away, it loads nothing here).
Before, the decision found "no evidence of script-made content" and the document kept the first
two paragraphs of nine."""

from __future__ import annotations

import pytest

from crawlers.render import RenderConfig, needs_render
from crawlers.render.crawl import render_crawl

from .conftest import write_crawl
from .test_render_policies import Site, js, jsn, text_of

pytestmark = pytest.mark.timeout(120)

LEAD = [
    f"Paragraph {i} of the harbour report: the new pier opened to ferries today." for i in (1, 2)
]
REST = [
    f"Paragraph {i} of the harbour report: the council counted the crossings." for i in range(3, 10)
]
BUNDLE = r"""
document.querySelectorAll('.js-continue').forEach(function (btn) {
  btn.addEventListener('click', function () {
    fetch('/api/rest/' + btn.dataset.id).then(function (r) { return r.json(); }).then(function (d) {
      var body = document.querySelector('.article-body');
      d.paragraphs.forEach(function (t) {
        var p = document.createElement('p'); p.textContent = t; body.appendChild(p); });
      btn.remove(); });
  });
});
"""


def _article(label: str) -> str:
    lead = "".join(f"<p>{t}</p>" for t in LEAD)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Harbour</title></head>"
        "<body><header><nav><a href='/'>Home</a></nav></header><main><article><h1>Harbour</h1>"
        f"<div class='article-body'>{lead}</div><button class='js-continue' data-id='7'>{label}"
        "</button></article></main><footer>© Ledger</footer>"
        "<script src='/static/js/app.9c1e.js'></script></body></html>"
    )


LISTING = (
    "<!DOCTYPE html><html><head><title>News</title></head><body><main><h1>News</h1>"
    + "".join(
        f"<article><h2>Story {i}</h2><p>The ferry timetable changed again on the northern route"
        f" this week, and the council explained why in a long statement {i}.</p>"
        f"<a href='/story-{i}'>Read more</a></article>"
        for i in range(6)
    )
    + "</main></body></html>"
)


@pytest.mark.parametrize("label", ["Continue reading", "Weiterlesen", "Lire la suite"])
def test_a_continue_reading_button_is_evidence_to_render(label):
    decision = needs_render(_article(label))
    assert decision.render and "load-more control" in decision.reason, decision.reason


def test_read_more_links_on_a_listing_stay_static():
    decision = needs_render(LISTING)
    assert not decision.render, decision.reason


def test_the_rendered_article_holds_its_whole_body(tmp_path, no_browser_leak):
    routes = {"/static/js/app.9c1e.js": js(BUNDLE), "/api/rest/7": jsn({"paragraphs": REST})}
    with Site("127.0.0.93", routes) as site:
        records = [
            {
                "url": f"{site.base}/harbour",
                "status": 200,
                "body": _article("Continue reading").encode(),
                "content_type": "text/html",
                "training_allowed": True,
            }
        ]
        crawl = write_crawl(tmp_path / "crawl", records)
        config = RenderConfig(
            pages_in_flight=1,
            delay=0.0,
            idle_ms=200,
            page_timeout_s=30,
            allow_private_networks=True,
        )
        (row,) = render_crawl(crawl, "auto", config)
    assert row["rendered"], row["render_reason"]
    text = text_of(row["html"])
    assert all(t in text for t in LEAD + REST), text[:300]
    assert row["interactions"] >= 1
