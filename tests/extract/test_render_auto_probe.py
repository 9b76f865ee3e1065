"""`--render auto` settles the pages whose static evidence is ambiguous with a short probe
render: a teaser whose own script fetches the rest of the article is rendered ("probe: scripts
added N chars"), a short page whose scripts add nothing stays static and says what the probe
saw. Before, the probe had no caller in the render stage and both pages stayed static
("static, ambiguous: little text"). The probe writes nothing to the render's archive."""

from __future__ import annotations

import dataclasses

import pytest

from crawlers.render import RenderConfig, needs_render
from crawlers.render.crawl import plan_renders, render_crawl
from crawlers.render.probe import probe_config

from .conftest import write_crawl
from .test_render_policies import FAST, Site, js, jsn, page_record, text_of

pytestmark = pytest.mark.timeout(120)

REST = [
    f"Paragraph {i}: the glacier lost more ice this summer than any year on record."
    for i in range(5)
]
ARTICLE_JS = r"""
(function () {
  var body = document.querySelector('.article__body');
  fetch('/api/full/glacier.json').then(function (r) { return r.json(); }).then(function (d) {
    d.paragraphs.forEach(function (t) {
      var p = document.createElement('p'); p.textContent = t; body.appendChild(p); });
  });
})();
"""
TEASER = (
    "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Glacier</title></head>"
    "<body><header><a href='/'>Ledger</a></header><main><article><h1>Glacier retreat</h1>"
    "<div class='article__body'><p>The glacier above the valley retreated further this year, "
    "surveyors said on Monday after their last visit.</p></div></article></main>"
    "<footer>© Ledger</footer><script src='/static/js/article.c0ffee.js' defer></script>"
    "</body></html>"
)
ABOUT = (
    "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>About</title></head>"
    "<body><header><a href='/'>Ledger</a></header><main><h1>About us</h1><p>The Ledger is a "
    "regional paper, written by six reporters in the valley since 1952. It covers the "
    "council, the schools and the mountain rescue, and it prints on Fridays.</p></main>"
    "<footer>© Ledger</footer><script src='/static/js/analytics.2b7e11.js'></script></body></html>"
)


def test_auto_renders_an_ambiguous_page_a_probe_shows_scripts_fill(tmp_path, no_browser_leak):
    assert needs_render(TEASER).ambiguous and needs_render(ABOUT).ambiguous
    routes = {
        "/static/js/article.c0ffee.js": js(ARTICLE_JS),
        "/static/js/analytics.2b7e11.js": js("(function(){var i=new Image();i.src='/c.gif';})();"),
        "/api/full/glacier.json": jsn({"paragraphs": REST}),
    }
    with Site("127.0.0.151", routes) as site:
        records = [
            page_record(f"{site.base}{path}", html)
            for path, html in (("/glacier", TEASER), ("/about", ABOUT))
        ]
        crawl = write_crawl(tmp_path / "crawl", records)
        config = RenderConfig(
            pages_in_flight=2,
            allow_private_networks=True,
            archive_dir=tmp_path / "render",
            **FAST,
        )
        planned, _ = plan_renders(crawl, "auto")  # the decision alone
        rows = {r["url"].rsplit("/", 1)[1]: r for r in render_crawl(crawl, "auto", config)}
    assert not any(d["rendered"] for d in planned)
    glacier, about = rows["glacier"], rows["about"]
    assert glacier["rendered"] and glacier["render_reason"].startswith("probe: scripts added")
    assert "ambiguous: little text" in glacier["render_reason"]
    text = text_of(glacier["html"])
    assert all(t in text for t in REST), text[:300]
    assert not about["rendered"] and about["html"] is None
    assert about["render_reason"].startswith("static, probe: scripts added 0 chars")
    # only the full render is archived: every archived row points at its own page's records
    assert [r["url"] for r in rows.values() if r["warc_file"]] == [glacier["url"]]
    probe = probe_config(dataclasses.replace(config))
    assert probe.archive_dir is None and probe.max_clicks == 0
