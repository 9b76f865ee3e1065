"""The render decision and the renderer on pages whose behaviour sits in external script files.

tests/extract/jspages_external.py builds sites in framework styles (minified React/Next bundles,
Vue templates, jQuery plugin files, module web components, consent overlays, query-string
pagers) with static pages built the same way. The decision must render the JS pages' text and
leave the static pages static; Chromium must then get the text: dismiss a consent overlay that
holds the content back, keep a feed's sentinel firing while it stays in view, scroll a page no
taller than the window.
"""

from __future__ import annotations

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from crawlers.extract.evaluate import contains_passage
from crawlers.render import RenderConfig, RenderJob, needs_render, render_pages
from crawlers.render.decide import text_weight
from crawlers.render.probe import visible_blocks

from .jspages_external import EXT_JS_KINDS, EXT_STATIC_KINDS, generate

SEED = 2718  # development of tests/extract/jspages_external.py used seed 5


def test_framework_built_sites_render_their_js_pages_and_leave_static_pages_static():
    """JS-only text weight rendered >= 0.95 and static pages rendered <= 10%; on 800c806's
    decide the list pager in a <nav>/<footer> of its section, the class-named article box that
    names its source and the custom element of a component file were missed (0.79)."""
    pages = generate(SEED, 128)
    assert {p.kind for p in pages} == set(EXT_JS_KINDS) | set(EXT_STATIC_KINDS)
    assert len({p.lang for p in pages}) >= 5
    for p in pages:
        visible = " ".join(visible_blocks(p.html))
        assert not any(t in visible for t in p.js_only), (p.kind, p.variant)
        assert "<script" in p.html and any(k.endswith(".js") for k in p.resources)
    decided = [(p, needs_render(p.html)) for p in pages]
    js = [(p, d) for p, d in decided if p.needs_js]
    weight = sum(text_weight(" ".join(p.js_only)) for p, _ in js)
    rendered = sum(text_weight(" ".join(p.js_only)) for p, d in js if d.render)
    missed = Counter(f"{p.kind}/{p.variant}" for p, d in js if not d.render)
    assert rendered / weight >= 0.95, missed
    static = [(p, d) for p, d in decided if not p.needs_js]
    wrong = Counter(f"{p.kind}/{p.variant}" for p, d in static if d.render)
    assert sum(d.render for _, d in static) / len(static) <= 0.10, wrong


_P = (
    "Die Stadtverwaltung hat am Dienstag den neuen Haushalt beschlossen. Größere Summen fließen in "
    "den öffentlichen Nahverkehr, in Wohnungen und in die Sanierung der Bücherei. "
)


def _page(main: str, scripts: str = '<script src="/assets/app.3f9a1c.js" defer></script>') -> str:
    nav = "".join(f'<li><a href="/r/{i}">Ressort {i}</a></li>' for i in range(8))
    return (
        '<!doctype html><html lang="de"><head><meta charset="utf-8"><title>Stadtblatt</title></head>'
        f'<body><header><a href="/">Stadtblatt</a><nav><ul>{nav}</ul></nav></header>{main}'
        f"<footer><p>© Stadtblatt</p></footer>{scripts}</body></html>"
    )


@pytest.mark.parametrize("box", ["nav", "footer"])
def test_a_load_more_control_in_its_lists_own_nav_or_footer_is_rendered(box):
    """A pager in the list's own <nav class=pagination> or <footer> (inside the main content's
    section) loads the page's content; the site's <nav>/<footer> controls stay no evidence."""
    items = "".join(f"<li><p>{_P}</p></li>" for i in range(3))
    control = '<a href="#" class="js-more">Weitere Artikel</a>'
    main = f'<main><h1>Aktuell</h1><section><ul id="posts">{items}</ul><{box} class="pagination">{control}</{box}></section></main>'
    d = needs_render(_page(main))
    assert d.render and "load-more control" in d.reason, d.reason
    # The site's own footer with a "mehr anzeigen" menu opener is not the page's content.
    article = f"<main><article><h1>Haushalt</h1>{f'<p>{_P}</p>' * 4}</article></main>"
    site_footer = '<footer class="page-footer"><a href="#" class="more">mehr anzeigen</a></footer>'
    d = needs_render(_page(article + site_footer))
    assert not d.render, d.reason


def test_an_empty_content_box_that_names_its_source_ends_the_article_and_is_rendered():
    """An article whose body is an empty class-named box with data-article-src="/api/..." (the
    bundle loads it, here after the consent overlay is dismissed) is rendered; a share widget's
    box naming the page's URL (data-url) or a lazy image's data-src is not."""
    lead = f'<p class="lead">{_P}{_P}</p>'
    box = '<div class="article-body" data-article-src="/api/article/7.json"></div>'
    d = needs_render(_page(f"<main><article><h1>Haushalt</h1>{lead}{box}</article></main>"))
    assert d.render and "names its source" in d.reason, d.reason
    for widget in (
        '<div class="shariff" data-url="https://example.org/haushalt" data-mail-body="x"></div>',
        '<div class="article-image" data-src="/img/haushalt.jpg"></div>',
    ):
        body = (
            f"<main><article><h1>Haushalt</h1>{_P * 2}{f'<p>{_P}</p>' * 3}{widget}</article></main>"
        )
        d = needs_render(_page(body))
        assert not d.render, (widget, d.reason)


def test_an_empty_custom_element_from_the_pages_own_component_file_is_rendered():
    """<x-river> says nothing of what it holds; its definition in the page's own component file
    (/js/components/x-river.<hash>.js) and its place at the end of the main content do. The same
    element defined by another origin's script (a vendor's widget) stays no strong evidence."""
    main = f'<main><h1>Fähren</h1><p class="intro">{_P}{_P}{_P}</p><x-river src="/api/feed.json"></x-river></main>'
    own = '<script type="module" src="/js/components/x-river.3f9a1c.js"></script>'
    d = needs_render(_page(main, own))
    assert d.render and "<x-river>" in d.reason, d.reason
    vendor = '<script type="module" src="https://cdn.example.net/x-river.js"></script>'
    assert not needs_render(_page(main, vendor)).render


@pytest.mark.parametrize(
    "control",
    [
        '<button class="btn">Weitere 10 Artikel anzeigen</button>',
        '<button class="btn">Ältere Beiträge</button>',
        '<button class="btn">Afficher plus d\'actualités</button>',
        '<a href="#" class="btn">Load older posts</a>',
        '<button class="load-more" data-page="2"><svg width="16" height="16"></svg></button>',
    ],
)
def test_load_more_labels_with_counts_elisions_older_or_only_an_icon(control):
    """Labels sites use beyond "load more": a count inside a German phrase, "older" posts, a
    French elided "d'", and an icon-only button whose class says load-more (800c806: static)."""
    items = "".join(f"<li><p>{_P}</p></li>" for i in range(3))
    d = needs_render(_page(f'<main><h1>Aktuell</h1><ul id="posts">{items}</ul>{control}</main>'))
    assert d.render and "load-more control" in d.reason, d.reason


def test_older_posts_and_unlabelled_buttons_that_navigate_or_are_not_named_are_no_evidence():
    items = "".join(f"<li><p>{_P}</p></li>" for i in range(3))
    for control in (
        '<a href="/page/2" class="btn">Ältere Beiträge</a>',  # a real link: it navigates
        '<button class="btn share"><svg width="16" height="16"></svg></button>',
        '<button class="load-more">Mehr</button>',  # a one-word label is not "load more"
    ):
        d = needs_render(
            _page(f'<main><h1>Aktuell</h1><ul id="posts">{items}</ul>{control}</main>')
        )
        assert not d.render, (control, d.reason)


# --- Chromium ------------------------------------------------------------------------------------


class _Server:
    """The generated pages and their resources (keyed with or without a query) on loopback."""

    def __init__(self, pages, host: str = "127.0.0.93"):
        files = {"/robots.txt": (b"User-agent: *\nAllow: /\n", "text/plain")}
        for p in pages:
            files[p.path] = (p.html.encode(), "text/html; charset=utf-8")
            files.update(p.resources)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                hit = files.get(self.path) or files.get(self.path.split("?")[0])
                if hit is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", hit[1])
                self.send_header("Content-Length", str(len(hit[0])))
                self.end_headers()
                try:
                    self.wfile.write(hit[0])
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://{host}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.timeout(120)
def test_chromium_dismisses_consent_and_keeps_feeds_loading_to_their_end(no_browser_leak):
    """On 800c806's renderer: the consent-gated article came out empty (0.00 of its text), the
    IntersectionObserver feed stopped after its first page (its sentinel never left the view:
    0.55), the scroll-listener feed on a page no taller than the window loaded nothing, and an
    icon-only load-more button (named by its class only) was never clicked."""
    pages = generate(5, 64)
    wanted = {"consent_gate", "io_spinner/io_dots", "io_spinner/scroll_gif", "jquery_more/icon"}
    chosen = []
    for p in pages:
        key = next((k for k in wanted if f"{p.kind}/{p.variant}".startswith(k)), None)
        if key:
            chosen.append(p)
            wanted.discard(key)
    assert not wanted, wanted
    config = RenderConfig(pages_in_flight=3, delay=0.0, idle_ms=150, settle_max_ms=2000)
    with _Server(chosen) as srv:
        jobs = [RenderJob(srv.base + p.path, p.html, trust_own_origin=True) for p in chosen]
        outcomes = render_pages(jobs, config)
    for p, out in zip(chosen, outcomes, strict=True):
        assert out.error is None, (p.kind, out.error)
        dom = " ".join(visible_blocks(out.html))
        found = [t for t in p.js_only if contains_passage(dom, t)]
        assert len(found) == len(p.js_only), (p.kind, p.variant, len(found), len(p.js_only))
