"""Content a render used to lose, with real Chromium on loopback sites built like real ones:

* lazy modules mid-page (an IntersectionObserver per section, unobserved once loaded), in a
  page that scrolls and in an app shell whose inner box scrolls: the first scroll goes down a
  viewport at a time, so sections a jump to the end passes over load too;
* tabs that load into one shared panel (a segmented control of class-only buttons fetching
  HTML partials; WAI-ARIA tabs whose panel a framework updates in place): every tab's content
  is kept, and static Bootstrap panes are not copied twice;
* client-side pagers (an arrow in a pagination nav that pushes "?seite=N", page-number buttons
  that replace "?p=N"): every page's items are kept in order, the pushed URLs are reported, and
  a carousel's arrow is never clicked;
* same-origin iframes (nested too) are inlined; a robots-disallowed frame is never fetched, an
  opted-out one never loaded and a cross-origin one never inlined, so none of them shows.
"""

from __future__ import annotations

import pytest

from crawlers.extract import extract_page
from crawlers.render import RenderConfig, RenderJob, render_pages

from .test_render_policies import FAST, Site, js, jsn, text_of

pytestmark = pytest.mark.timeout(120)

CONFIG = {**FAST, "page_timeout_s": 40, "allow_private_networks": True}


def _page(title: str, body: str, head: str = "", lang: str = "en") -> str:
    return (
        f"<!DOCTYPE html><html lang='{lang}'><head><meta charset='utf-8'><title>{title}</title>"
        f"{head}</head><body><header><nav><a href='/'>Home</a> <a href='/about'>About</a></nav>"
        f"</header><main><h1>{title}</h1>{body}</main><footer><p>© Example Press</p></footer>"
        "</body></html>"
    )


def _render(site: Site, pages: dict[str, str]) -> dict:
    jobs = [
        RenderJob(f"{site.base}/{name}", html, trust_own_origin=True)
        for name, html in pages.items()
    ]
    outs = render_pages(jobs, RenderConfig(pages_in_flight=2, **CONFIG))
    return {o.url.rsplit("/", 1)[1]: o for o in outs}


# -- 1. lazy sections mid-page ---------------------------------------------------------------

MODULES = [
    "Quarterly revenue rose on the strength of the northern ferry routes and freight.",
    "Staff turnover fell for the third year as the training programme reached every depot.",
    "The harbour crane replacement finished two months early and under its budget.",
    "Passenger surveys rated punctuality higher than in any year since the survey began.",
]
# A lazy-module loader as bundles ship it (react-intersection-observer's triggerOnce, lozad):
# observe every placeholder, load a module once it is a quarter in view, then unobserve it.
LAZY_BUNDLE = r"""
document.addEventListener('DOMContentLoaded', function () {
  var io = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (!e.isIntersecting) return;
      io.unobserve(e.target);
      fetch(e.target.getAttribute('data-module')).then(function (r) { return r.json(); })
        .then(function (d) { e.target.innerHTML = '<h2>' + d.heading + '</h2><p>' + d.text + '</p>'; });
    });
  }, {threshold: 0.25});
  document.querySelectorAll('[data-module]').forEach(function (el) { io.observe(el); });
});
"""


def _lazy_body() -> str:
    figure = "<figure style='height:3000px;margin:0'><figcaption>Chart</figcaption></figure>"
    modules = "".join(
        f"{figure}<section class='lazy-module' data-module='/api/modules/{i}.json' "
        "style='min-height:240px'><div class='skeleton'></div></section>"
        for i in range(len(MODULES))
    )
    return (
        "<p>The annual review of the harbour authority, published each spring for its members.</p>"
        f"{modules}{figure}"
    )


def test_lazy_sections_mid_page_all_load(no_browser_leak):
    routes = {
        "/static/js/modules.4c1d.js": js(LAZY_BUNDLE),
        **{
            f"/api/modules/{i}.json": jsn({"heading": f"Part {i}", "text": t})
            for i, t in enumerate(MODULES)
        },
    }
    head = "<script src='/static/js/modules.4c1d.js'></script>"
    shell = (
        "<style>html,body{height:100%;margin:0;overflow:hidden}"
        "#app{height:100vh;overflow-y:auto}</style>" + head
    )
    with Site("127.0.0.196", routes) as site:
        outs = _render(
            site,
            {
                "review": _page("Annual review", _lazy_body(), head),
                # An app shell: the window does not scroll, its #app box does.
                "shell": _page("Annual review", f"<div id='app'>{_lazy_body()}</div>", shell),
            },
        )
    for name, out in outs.items():
        text = text_of(out.html)
        missing = [t for t in MODULES if t not in text]
        assert not missing, (name, missing)
        assert out.error is None, (name, out.error)


# -- 2. tabs that load into one shared panel ----------------------------------------------------

SPECS = {
    "overview": "The frame is cold-forged aluminium and folds to forty centimetres.",
    "materials": "Grips are cork over foam; the straps are recycled polyester webbing.",
    "shipping": "Orders leave the warehouse within two working days in plastic-free boxes.",
}
REVIEWS = {
    "top": ["Held up on a three-week traverse with no rattles.", "Light enough to forget about."],
    "newest": [
        "Bought a second pair for my partner after a month.",
        "The locks are easy in gloves.",
    ],
    "critical": ["The tips wore down faster than I expected on rock.", "Strap stitching frayed."],
}
PANES = {
    "fit": "Sized for walkers between one sixty and one ninety centimetres tall.",
    "care": "Rinse the sections after beach walks and dry them apart before storing.",
}
# A Stimulus/htmx-style controller: class-only buttons that fetch an HTML partial into one panel;
# WAI-ARIA tabs whose one panel a framework updates in place (text nodes reused, as React does).
TABS_BUNDLE = r"""
document.addEventListener('DOMContentLoaded', function () {
  var panel = document.querySelector('.segmented__panel');
  function show(btn) {
    document.querySelectorAll('.segmented__item').forEach(function (b) { b.classList.remove('is-selected'); });
    btn.classList.add('is-selected');
    fetch(btn.getAttribute('data-url')).then(function (r) { return r.text(); })
      .then(function (html) { panel.innerHTML = html; });
  }
  document.querySelectorAll('.segmented__item').forEach(function (b) {
    b.addEventListener('click', function () { show(b); }); });
  show(document.querySelector('.segmented__item.is-selected'));

  var items = document.querySelectorAll('#reviews-panel .review');
  function sort(tab) {
    document.querySelectorAll('[role=tab]').forEach(function (t) { t.setAttribute('aria-selected', 'false'); });
    tab.setAttribute('aria-selected', 'true');
    fetch('/api/reviews/' + tab.getAttribute('data-sort') + '.json').then(function (r) { return r.json(); })
      .then(function (d) { d.reviews.forEach(function (t, i) {
        var p = items[i]; if (p.firstChild) p.firstChild.data = t; else p.textContent = t; }); });
  }
  document.querySelectorAll('[role=tab]').forEach(function (t) {
    t.addEventListener('click', function () { sort(t); }); });
  sort(document.querySelector('[role=tab][aria-selected=true]'));

  document.querySelectorAll('[data-bs-toggle=tab]').forEach(function (b) {
    b.addEventListener('click', function () {
      document.querySelectorAll('.tab-pane').forEach(function (p) { p.classList.remove('active'); });
      document.querySelector(b.getAttribute('data-bs-target')).classList.add('active'); }); });
});
"""


def _tabs_body() -> str:
    buttons = "".join(
        f"<button type='button' class='segmented__item{' is-selected' if i == 0 else ''}' "
        f"data-url='/partials/specs/{k}.html'>{k.title()}</button>"
        for i, k in enumerate(SPECS)
    )
    tabs = "".join(
        f"<button role='tab' aria-selected='{'true' if i == 0 else 'false'}' "
        f"aria-controls='reviews-panel' data-sort='{k}'>{k.title()}</button>"
        for i, k in enumerate(REVIEWS)
    )
    panes_nav = "".join(
        f"<li class='nav-item'><button class='nav-link' data-bs-toggle='tab' "
        f"data-bs-target='#pane-{k}' type='button'>{k.title()}</button></li>"
        for k in PANES
    )
    panes = "".join(
        f"<div class='tab-pane{' active' if i == 0 else ''}' id='pane-{k}'><p>{t}</p></div>"
        for i, (k, t) in enumerate(PANES.items())
    )
    return (
        "<style>.tab-pane{display:none}.tab-pane.active{display:block}</style>"
        "<p>The trekking pole that folds into a day pack, tested on three continents.</p>"
        f"<div class='specs'><div class='segmented' role='group'>{buttons}</div>"
        "<div class='segmented__panel'></div></div>"
        f"<h2>Reviews</h2><div role='tablist' aria-label='Sort reviews'>{tabs}</div>"
        "<div role='tabpanel' id='reviews-panel'><p class='review'></p><p class='review'></p></div>"
        f"<h2>Details</h2><ul class='nav nav-tabs'>{panes_nav}</ul>"
        f"<div class='tab-content'>{panes}</div>"
    )


def test_every_tab_of_a_shared_panel_is_kept(no_browser_leak):
    routes = {
        "/static/js/tabs.9b2e.js": js(TABS_BUNDLE),
        **{
            f"/partials/specs/{k}.html": (
                200,
                {"Content-Type": "text/html"},
                f"<p>{t}</p>".encode(),
            )
            for k, t in SPECS.items()
        },
        **{f"/api/reviews/{k}.json": jsn({"reviews": v}) for k, v in REVIEWS.items()},
    }
    head = "<script src='/static/js/tabs.9b2e.js' defer></script>"
    with Site("127.0.0.197", routes) as site:
        html = _page("Trekking Pole", _tabs_body(), head)
        out = _render(site, {"pole": html})["pole"]
    text = text_of(out.html)
    wanted = [*SPECS.values(), *(t for v in REVIEWS.values() for t in v), *PANES.values()]
    assert not [t for t in wanted if t not in text], [t for t in wanted if t not in text]
    assert all(text.count(t) == 1 for t in PANES.values()), "a static pane was copied again"
    record = {
        "url": f"{site.base}/pole",
        "status": 200,
        "body": html.encode(),
        "content_type": "text/html",
        "crawl_allowed": True,
        "training_allowed": True,
        "rendered": True,
        "render_reason": "tabs",
        "rendered_html": out.html,
    }
    doc = extract_page(record).document
    assert SPECS["shipping"] in doc["text"] and SPECS["overview"] in doc["text"]
    assert REVIEWS["top"][0] in doc["text"] and REVIEWS["critical"][1] in doc["text"]


# -- 3. client-side pagers ---------------------------------------------------------------------

ITEMS = {
    n: [f"Eintrag {n}-{i}: der Fährplan für die Inseln wurde angepasst." for i in range(3)]
    for n in (1, 2, 3)
}
# A router-driven listing: the arrow in the pagination nav fetches the next page, replaces the
# list and pushes "?seite=N"; page-number buttons elsewhere replace "?p=N". A carousel's arrow
# on the same page must never be clicked.
PAGER_BUNDLE = r"""
document.addEventListener('DOMContentLoaded', function () {
  var list = document.getElementById('results'), page = 1;
  function load(n, how) {
    fetch('/api/eintraege/' + n + '.json').then(function (r) { return r.json(); }).then(function (d) {
      list.replaceChildren.apply(list, d.items.map(function (t) {
        var li = document.createElement('li'); li.textContent = t; return li; }));
      page = n;
      if (how) history[how]({page: n}, '', how === 'pushState' ? '?seite=' + n : '?p=' + n);
      var next = document.querySelector('.pagination .next');
      if (next) next.disabled = !d.more;
      document.querySelectorAll('.pager button').forEach(function (b) {
        b.classList.toggle('is-current', Number(b.textContent) === n); });
    });
  }
  var next = document.querySelector('.pagination .next');
  if (next) next.addEventListener('click', function () { load(page + 1, 'pushState'); });
  document.querySelectorAll('.pager button').forEach(function (b) {
    b.addEventListener('click', function () { load(Number(b.textContent), 'replaceState'); }); });
  var arrow = document.querySelector('.carousel .carousel-next');
  if (arrow) arrow.addEventListener('click', function () {
    document.querySelector('.carousel').insertAdjacentText('beforeend', 'CAROUSEL MOVED ON'); });
  load(1, null);
});
"""
CAROUSEL = (
    "<div class='carousel'><div class='slide'>Bild der Woche</div>"
    "<button type='button' class='carousel-next' aria-label='Nächste'>›</button></div>"
)


def test_client_side_pagers_keep_every_page_and_report_pushed_urls(no_browser_leak):
    routes = {
        "/static/js/liste.71af.js": js(PAGER_BUNDLE),
        **{f"/api/eintraege/{n}.json": jsn({"items": v, "more": n < 3}) for n, v in ITEMS.items()},
    }
    head = "<script src='/static/js/liste.71af.js' defer></script>"
    arrow = (
        "<nav aria-label='Seitennavigation'><ul class='pagination'><li>"
        "<button type='button' class='next' aria-label='Nächste Seite'>›</button></li></ul></nav>"
    )
    numbers = (
        "<div class='pager'>"
        + "".join(
            f"<button type='button'{' class=is-current' if n == 1 else ''}>{n}</button>"
            for n in ITEMS
        )
        + "</div>"
    )
    intro = "<p>Alle Meldungen der Reederei zu Fahrplänen, Häfen und Tarifen im Überblick.</p>"
    with Site("127.0.0.198", routes) as site:
        outs = _render(
            site,
            {
                "archiv": _page(
                    "Archiv", f"{CAROUSEL}{intro}<ol id='results'></ol>{arrow}", head, "de"
                ),
                "liste": _page("Liste", f"{intro}<ol id='results'></ol>{numbers}", head, "de"),
            },
        )
    for name, out in outs.items():
        text = text_of(out.html)
        order = [text.find(t) for n in (1, 2, 3) for t in ITEMS[n]]
        assert -1 not in order and order == sorted(order), (name, order)
        assert all(text.count(t) == 1 for v in ITEMS.values() for t in v), name
        assert "CAROUSEL MOVED ON" not in text, name
    assert outs["archiv"].history_urls == [
        f"{site.base}/archiv?seite=2",
        f"{site.base}/archiv?seite=3",
    ]
    assert outs["liste"].history_urls == [f"{site.base}/liste?p=2", f"{site.base}/liste?p=3"]


# -- 4. same-origin iframes --------------------------------------------------------------------

STORY = "The lighthouse keepers logged every ship that passed for sixty-one years."
INNER = "A nested frame: the keeper's daughter kept the log after nineteen twelve."
PRIVATE = "Private frame text that robots.txt forbids fetching."
NOAI = "Framed text whose server says noai in its X-Robots-Tag header."
OTHER = "Cross-origin widget text that stays in its own frame."


def _html(body: str) -> tuple[int, dict, bytes]:
    return 200, {"Content-Type": "text/html; charset=utf-8"}, body.encode()


def test_same_origin_frames_are_inlined_and_blocked_ones_never_loaded(no_browser_leak):
    robots = "User-agent: *\nDisallow: /private/\n"
    with Site("127.0.0.199", {"/widget.html": _html(f"<p>{OTHER}</p>")}) as other:
        routes = {
            "/embed/story.html": _html(
                f"<html><body><article><p>{STORY}</p>"
                "<iframe src='/embed/inner.html' title='Log'></iframe></article></body></html>"
            ),
            "/embed/inner.html": _html(f"<html><body><p>{INNER}</p></body></html>"),
            "/private/frame.html": _html(f"<html><body><p>{PRIVATE}</p></body></html>"),
            "/embed/noai.html": (
                200,
                {"Content-Type": "text/html", "X-Robots-Tag": "noai"},
                f"<html><body><p>{NOAI}</p></body></html>".encode(),
            ),
        }
        with Site("127.0.0.195", routes, robots) as site:
            frames = "".join(
                f"<iframe src='{src}' width='100%' height='400'></iframe>"
                for src in (
                    "/embed/story.html",
                    "/private/frame.html",
                    "/embed/noai.html",
                    f"{other.base}/widget.html",
                )
            )
            out = _render(site, {"reader": _page("From the archive", frames)})["reader"]
            paths = site.paths()
        other_paths = other.paths()
    assert out.error is None, out.error
    text = text_of(out.html)
    assert STORY in text and INNER in text
    assert 'data-refinery-frame="" src="' + f"{site.base}/embed/story.html" in out.html
    assert "/private/frame.html" not in paths and PRIVATE not in out.html
    assert "/embed/noai.html" in paths and NOAI not in out.html
    assert f"{site.base}/embed/noai.html" in out.opted_out
    assert "/widget.html" in other_paths and OTHER not in out.html
