"""Rendering pages built like real ones: behaviour in external bundles of the page's own origin.

One Chromium renders five pages from two loopback hosts:

* load more behind a German "Mehr laden" control (a <button>, then an <a href="#">, then a
  <div role="button">): clicked until the feed stops growing;
* an infinite feed whose bundle watches a sentinel with an IntersectionObserver;
* an article rendered into an open shadow root, whose "Voir plus" button sits in the shadow root;
* a page whose script navigates to a missing page: not followed, the page's own DOM is kept;
* a page whose script fetches JSON from host B, whose robots.txt disallows the training token:
  that text is opted out, never loaded, and recorded in rendered.parquet and the document.

Then extraction keeps the rendered text only where it adds main content.
"""

from __future__ import annotations

import json

import pytest

from crawlers.extract import extract_page
from crawlers.render import RenderConfig
from crawlers.render.crawl import render_crawl

from .conftest import write_crawl
from .test_render_policies import Site, js, jsn, text_of

pytestmark = pytest.mark.timeout(120)

FEED = [
    [f"Feed page {k} item {i}: the ferry from the northern quay left at dawn." for i in range(2)]
    for k in range(4)
]

# The site's bundle (external, own origin): load-more controls and the sentinel feed.
BUNDLE = r"""
(function () {
  function add(box, items) { items.forEach(function (t) {
    var p = document.createElement('p'); p.textContent = t; box.appendChild(p); }); }
  function more(box, ctl) {
    var n = Number(box.dataset.next || 1);
    return fetch('/api/feed/' + n + '.json').then(function (r) { return r.json(); }).then(function (d) {
      add(box, d.items); box.dataset.next = n + 1;
      if (!d.more && ctl) ctl.remove();
      return d.more; });
  }
  window.Site = {
    loadMore: function (boxId) {
      var box = document.getElementById(boxId);
      document.querySelectorAll('.js-more').forEach(function (ctl) {
        ctl.addEventListener('click', function (e) { e.preventDefault(); more(box, ctl); }); });
    },
    feed: function (boxId) {
      var box = document.getElementById(boxId), s = document.querySelector('.feed-sentinel');
      var io = new IntersectionObserver(function (es) {
        if (!es[0].isIntersecting) return;
        io.unobserve(s);
        more(box, null).then(function (again) { if (again) io.observe(s); else s.remove(); });
      });
      io.observe(s);
    }
  };
})();
"""

SHADOW = r"""
customElements.define('story-body', class extends HTMLElement {
  async connectedCallback() {
    const root = this.attachShadow({mode: 'open'});
    const d = await (await fetch('/api/story')).json();
    const add = (t) => { const p = document.createElement('p'); p.textContent = t; root.insertBefore(p, btn); };
    const btn = document.createElement('button'); btn.textContent = 'Voir plus';
    root.appendChild(btn);
    d.lead.forEach(add);
    btn.addEventListener('click', async () => {
      const m = await (await fetch('/api/story-more')).json(); m.rest.forEach(add); btn.remove(); });
  }
});
"""

STORY = ["Le phare de la pointe a été rallumé après trente ans de silence total."]
STORY_MORE = ["Les gardiens racontent les tempêtes de l'hiver mille neuf cent cinquante-deux."]
OWN = "Own-origin passage about the tram depot's winter timetable."
OPTED_OUT = "Passage from host B, whose robots.txt opts it out of training."
ARTICLE = "".join(
    f"<p>Paragraph {i} of a static article about lighthouse keepers and their long winters.</p>"
    for i in range(4)
)


def _page(title: str, body: str, scripts: str) -> str:
    return (
        f"<!DOCTYPE html><html lang='de'><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><header><nav><a href='/'>Start</a></nav></header><main><h1>{title}</h1>{body}</main>"
        f"<footer>© Beispiel</footer>{scripts}</body></html>"
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("interact")
    b_routes = {
        "/data.json": (
            200,
            {"Content-Type": "application/json", "Access-Control-Allow-Origin": "*"},
            json.dumps({"text": OPTED_OUT}).encode(),
        )
    }
    b_robots = "User-agent: RefineryBot-Extended\nDisallow: /\n\nUser-agent: *\nAllow: /\n"
    with Site("127.0.0.88", b_routes, b_robots) as b:
        a_routes = {
            "/static/js/app.3f9a1c.js": js(BUNDLE),
            "/static/js/story.mjs": js(SHADOW),
            **{
                f"/api/feed/{n}.json": jsn({"items": items, "more": n < len(FEED)})
                for n, items in enumerate(FEED, 1)
            },
            "/api/story": jsn({"lead": STORY}),
            "/api/story-more": jsn({"rest": STORY_MORE}),
            "/api/own": jsn({"text": OWN}),
        }
        with Site("127.0.0.87", a_routes) as a:
            app = "<script src='/static/js/app.3f9a1c.js'></script>"
            controls = (
                "<button class='js-more'>Mehr laden</button>",
                "<a href='#' class='js-more'>Mehr laden</a>",
                "<div role='button' tabindex='0' class='js-more'>Mehr laden</div>",
            )
            pages = {
                f"more-{i}": _page(
                    "Fähren",
                    f"<div id='list'></div>{ctl}",
                    app + "<script>Site.loadMore('list')</script>",
                )
                for i, ctl in enumerate(controls)
            }
            pages["feed"] = _page(
                "Feed",
                "<div id='feed'></div><div class='feed-sentinel'></div>",
                app + "<script>Site.feed('feed')</script>",
            )
            pages["shadow"] = _page(
                "Phare",
                "<story-body></story-body>",
                "<script type=module src='/static/js/story.mjs'></script>",
            )
            pages["navigate"] = _page(
                "Leuchtturm",
                ARTICLE,
                "<script>setTimeout(() => location.href = '/gone', 50)</script>",
            )
            pages["consent"] = _page(
                "Depot",
                ARTICLE + "<div id='r'></div>",
                "<script>const show = t => { const p = document.createElement('p'); p.textContent = t;"
                f" r.appendChild(p); }}; fetch('/api/own').then(x => x.json()).then(d => show(d.text));"
                f" fetch('{b.base}/data.json').then(x => x.json()).then(d => show(d.text)).catch(() => 0);"
                "</script>",
            )
            pages["consent-page-opted-out"] = pages["consent"]
            records = [
                {
                    "url": f"{a.base}/{name}",
                    "status": 200,
                    "body": html.encode(),
                    "content_type": "text/html",
                    "training_allowed": name != "consent-page-opted-out",
                }
                for name, html in pages.items()
            ]
            crawl = write_crawl(tmp / "crawl", records)
            config = RenderConfig(
                pages_in_flight=2,
                delay=0.0,
                settle_max_ms=3000,
                idle_ms=200,
                page_timeout_s=30,
                allow_private_networks=True,  # host B is another loopback address
            )
            rows = render_crawl(crawl, "always", config)
            a_paths, b_paths = a.paths(), b.paths()
    by_name = {r["url"].rsplit("/", 1)[1]: r for r in rows}
    recs = {r["url"].rsplit("/", 1)[1]: r for r in records}
    return by_name, recs, a_paths, b_paths


@pytest.mark.parametrize("name", ["more-0", "more-1", "more-2"])
def test_load_more_controls_are_clicked_until_the_feed_stops_growing(
    rendered, name, no_browser_leak
):
    rows, _, _, _ = rendered
    text = text_of(rows[name]["html"])
    assert all(t in text for page in FEED for t in page), text[:400]
    assert rows[name]["interactions"] >= len(FEED)
    assert rows[name]["error"] is None


def test_infinite_feed_with_an_intersection_observer_sentinel_is_scrolled_to_its_end(rendered):
    rows, _, _, _ = rendered
    text = text_of(rows["feed"]["html"])
    assert all(t in text for page in FEED for t in page), text[:400]


def test_open_shadow_root_text_and_a_load_more_button_inside_it(rendered):
    rows, _, _, _ = rendered
    text = text_of(rows["shadow"]["html"])
    assert STORY[0] in text and STORY_MORE[0] in text


def test_a_navigation_away_is_not_followed_and_the_page_stays(rendered):
    rows, recs, a_paths, _ = rendered
    row = rows["navigate"]
    assert "/gone" not in a_paths  # never fetched
    assert "Paragraph 3 of a static article" in text_of(row["html"])
    assert "navigation to " in row["render_reason"] and row["render_reason"].endswith(
        "/gone not followed"
    )
    assert any(
        b["url"].endswith("/gone") and b["reason"].startswith("navigation away")
        for b in row["blocked_requests"]
    )


def test_text_from_a_training_disallowed_subrequest_is_dropped_and_recorded(rendered):
    rows, recs, _, b_paths = rendered
    row = rows["consent"]
    text = text_of(row["html"])
    assert OWN in text and OPTED_OUT not in text
    (blocked,) = [x for x in row["blocked_requests"] if x["url"].endswith("/data.json")]
    assert blocked["reason"].startswith("training opt-out: robots.txt disallows the training token")
    assert not any(s["url"].endswith("/data.json") for s in row["subresources"])
    assert "training opt-out: 1 sub-request(s) not loaded" in row["render_reason"]
    record = {
        **recs["consent"],
        "rendered": True,
        "rendered_html": row["html"],
        "render_reason": row["render_reason"],
        "crawl_allowed": True,
        "training_allowed": True,
    }
    doc = extract_page(record).document
    assert OWN in doc["text"] and OPTED_OUT not in doc["text"]
    assert doc["rendered"] and "training opt-out" in doc["render_reason"]


def _record(html: str, rendered_html: str) -> dict:
    return {
        "url": "http://127.0.0.1:9/a",
        "status": 200,
        "body": html.encode(),
        "content_type": "text/html",
        "crawl_allowed": True,
        "training_allowed": True,
        "rendered": True,
        "render_reason": "load-more control (mehr laden)",
        "rendered_html": rendered_html,
    }


STATIC = _page("Leuchtturm", ARTICLE, "<script src='/static/js/app.js'></script>")


@pytest.mark.parametrize(
    "dom",
    [
        "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>"
        "<p>The requested URL was not found on this server.</p></body></html>",
        _page("Leuchtturm", "<div class='loader'>Loading... Please wait!</div>", ""),
        STATIC,
    ],
    ids=["navigated-to-404", "loading-note", "unchanged"],
)
def test_a_render_that_adds_no_main_content_keeps_the_static_text(dom):
    doc = extract_page(_record(STATIC, dom)).document
    assert "Paragraph 3 of a static article" in doc["text"]
    assert "Not Found" not in doc["text"] and "Please wait" not in doc["text"]
    assert doc["rendered"] is False
    assert doc["render_reason"].startswith(
        "load-more control (mehr laden); static kept: the render"
    )


def test_a_render_that_adds_main_content_is_kept():
    more = "".join(f"<p>{t}</p>" for page in FEED for t in page)
    doc = extract_page(_record(STATIC, _page("Leuchtturm", ARTICLE + more, ""))).document
    assert doc["rendered"] is True and FEED[3][1] in doc["text"]
    assert doc["render_reason"] == "load-more control (mehr laden)"


def test_an_opt_out_in_the_rendered_dom_holds_when_the_static_text_is_kept():
    dom = STATIC.replace("<head>", '<head><meta name="robots" content="noai">', 1)
    doc = extract_page(_record(STATIC, dom)).document
    assert doc["rendered"] is False and "static kept" in doc["render_reason"]
    assert doc["noai"] is True and doc["training_allowed"] is False


def test_a_page_opted_out_itself_keeps_the_text_of_its_opted_out_subrequests(rendered):
    """Nothing of an opted-out page is for training: its sub-requests' text stays in its document."""
    rows, recs, _, _ = rendered
    row = rows["consent-page-opted-out"]
    assert OWN in text_of(row["html"]) and OPTED_OUT in text_of(row["html"])
    assert not any("training opt-out" in b["reason"] for b in row["blocked_requests"])
    (sub,) = [x for x in row["subresources"] if x["url"].endswith("/data.json")]
    assert sub["robots_training"] == "disallowed"
