"""Rendering a feed whose "more" control is worded in no phrase list ('Mehr Beiträge',
'次の記事を読み込む', 'Zobrazit další'): the one control right under the feed's linked items is
clicked until the feed stops growing, in real Chromium, with the behaviour in the site's own
external bundle (its inline code only calls into it)."""

from __future__ import annotations

import pytest

from crawlers.render import RenderConfig
from crawlers.render.crawl import render_crawl

from .conftest import write_crawl
from .test_render_policies import FAST, Site, js, jsn, page_record, text_of

pytestmark = pytest.mark.timeout(120)

PAGES = 3
ITEMS = [
    [
        f"Beitrag {k}-{i}: Der Stadtrat berät über die neue Fährverbindung am Nordufer."
        for i in range(3)
    ]
    for k in range(1, PAGES + 1)
]
BUNDLE = r"""
(function () {
  function teaser(t, n) {
    var a = document.createElement('article'); a.className = 'teaser';
    a.innerHTML = '<h2><a href="/beitrag/' + n + '"></a></h2><p></p>';
    a.querySelector('a').textContent = 'Beitrag ' + n; a.querySelector('p').textContent = t;
    return a;
  }
  window.River = function (listId) {
    var list = document.getElementById(listId), next = 1, ctl = document.querySelector('.js-next');
    ctl.addEventListener('click', function (e) {
      e.preventDefault();
      fetch('/api/river/' + next + '.json').then(function (r) { return r.json(); }).then(function (d) {
        d.items.forEach(function (t, i) { list.appendChild(teaser(t, next * 10 + i)); });
        next += 1; if (!d.more) ctl.remove();
      });
    });
  };
})();
"""
FIRST = "".join(
    f'<article class="teaser"><h2><a href="/beitrag/{i}">Beitrag {i}</a></h2>'
    f"<p>Erster Bildschirm, Meldung {i} über den Hafen und die Fähren am Nordufer.</p></article>"
    for i in range(4)
)
CONTROLS = {
    "de": '<a href="#" class="js-next">Mehr Beiträge</a>',
    "ja": '<button type="button" class="js-next">次の記事を読み込む</button>',
    "cs": '<div role="button" tabindex="0" class="js-next">Zobrazit další</div>',
}


def _page(lang: str, control: str) -> str:
    return (
        f"<!DOCTYPE html><html lang='{lang}'><head><meta charset='utf-8'><title>Nachrichten</title>"
        "<script src='/assets/js/river.5be1.js'></script></head><body><header><nav>"
        "<a href='/'>Start</a></nav></header><main><h1>Nachrichten</h1>"
        f"<div id='river'>{FIRST}</div>{control}</main><footer>Impressum</footer>"
        "<script>River('river')</script></body></html>"
    )


def test_a_control_under_a_feed_is_clicked_whatever_its_language(tmp_path, no_browser_leak):
    routes = {
        "/assets/js/river.5be1.js": js(BUNDLE),
        **{
            f"/api/river/{n}.json": jsn({"items": items, "more": n < PAGES})
            for n, items in enumerate(ITEMS, 1)
        },
    }
    with Site("127.0.0.89", routes) as site:
        records = [
            page_record(f"{site.base}/{lang}", _page(lang, ctl)) for lang, ctl in CONTROLS.items()
        ]
        crawl = write_crawl(tmp_path / "crawl", records)
        config = RenderConfig(
            pages_in_flight=2, allow_private_networks=True, **{**FAST, "page_timeout_s": 30}
        )
        rows = render_crawl(crawl, "always", config)
    for row in rows:
        text = text_of(row["html"])
        missing = [t for page in ITEMS for t in page if t not in text]
        assert not missing, (row["url"], missing[:2])
        assert row["interactions"] >= PAGES and row["error"] is None, row["url"]
