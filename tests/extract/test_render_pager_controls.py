"""A pager worded in the page's language ("Pokaż starsze wpisy", "次の10件") is clicked until the
list stops growing, and so is the one short control that ends the main content whatever its
label ("Dalej"), though the items above it link nowhere; a "More options" control there is never
clicked. Real Chromium, the behaviour in the site's own external bundle."""

from __future__ import annotations

import pytest

from crawlers.render import RenderConfig
from crawlers.render.crawl import render_crawl

from .conftest import write_crawl
from .test_render_policies import FAST, Site, js, jsn, page_record, text_of

pytestmark = pytest.mark.timeout(120)

BATCHES = 2
ITEMS = [[f"Wpis {k}-{i}: na szlaku leży świeży śnieg po nocy." for i in range(3)] for k in (1, 2)]
BUNDLE = r"""
document.addEventListener('DOMContentLoaded', function () {
  var ctl = document.querySelector('.js-more'), box = document.querySelector('.posts'), n = 1;
  ctl.addEventListener('click', function (e) {
    e.preventDefault();
    if (ctl.dataset.menu) { box.insertAdjacentText('afterend', 'OPTIONS PANEL OPENED'); return; }
    fetch('/api/posts/' + n + '.json').then(function (r) { return r.json(); }).then(function (d) {
      d.items.forEach(function (t) {
        var a = document.createElement('article'); a.className = 'post';
        a.textContent = t; box.appendChild(a); });
      n += 1; if (!d.more) ctl.remove();
    });
  });
});
"""
FIRST = "".join(
    f'<article class="post"><p>Wpis {i}: schronisko otwarte, szlak przetarty do połowy.</p>'
    "</article>"
    for i in range(3)
)
CONTROLS = {
    "pl": '<button type="button" class="btn js-more">Pokaż starsze wpisy</button>',
    "ja": '<div role="button" tabindex="0" class="js-more">次の10件</div>',
    "end": '<button type="button" class="btn js-more">Dalej</button>',
    "menu": '<button type="button" class="btn js-more" data-menu="1">More options</button>',
}


def _page(control: str) -> str:
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Blog górski</title>"
        "<script src='/static/js/posts.55e9b4.js' defer></script></head><body><header><nav>"
        "<a href='/'>Start</a></nav></header><main><h1>Blog górski</h1>"
        f"<section class='posts'>{FIRST}</section><div class='pager'>{control}</div></main>"
        "<footer><a href='/o-nas'>O nas</a></footer></body></html>"
    )


def test_pagers_in_the_pages_language_and_a_lone_end_control_are_clicked(tmp_path, no_browser_leak):
    routes = {
        "/static/js/posts.55e9b4.js": js(BUNDLE),
        **{
            f"/api/posts/{n}.json": jsn({"items": items, "more": n < BATCHES})
            for n, items in enumerate(ITEMS, 1)
        },
    }
    with Site("127.0.0.149", routes) as site:
        records = [page_record(f"{site.base}/{name}", _page(ctl)) for name, ctl in CONTROLS.items()]
        crawl = write_crawl(tmp_path / "crawl", records)
        config = RenderConfig(
            pages_in_flight=2, allow_private_networks=True, **{**FAST, "page_timeout_s": 30}
        )
        rows = {r["url"].rsplit("/", 1)[1]: r for r in render_crawl(crawl, "always", config)}
    for name in ("pl", "ja", "end"):
        text = text_of(rows[name]["html"])
        missing = [t for batch in ITEMS for t in batch if t not in text]
        assert not missing, (name, missing[:2])
        assert rows[name]["interactions"] >= BATCHES and rows[name]["error"] is None, name
    menu = text_of(rows["menu"]["html"])
    assert "OPTIONS PANEL OPENED" not in menu and rows["menu"]["interactions"] == 0
