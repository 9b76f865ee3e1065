"""Pages from sites built like real ones, for the render decision and the renderer's interaction.

`generate(seed, n)` builds a few sites, each with one shared template (header, navigation, sidebar,
footer), its own external script bundles served as separate files (`vendor.<hash>.js`, a library;
`app.<hash>.js`, the site's behaviour) and a third-party analytics snippet. Every page of a site,
JS or static, loads the same bundles; the page's inline code, if any, only calls into them
(`App.more('#river', '/api/...')`) or configures them through data attributes, as real sites do.

JS pages (text arrives only when a reader acts or scripts run):

* `load_more`: a list whose next pages come on clicking a control labelled in the page's language,
  a `<button>`, an `<a href="#">`, an `<a>` without href or a `<div role="button">`, clicked
  repeatedly (2-3 pages) until the control goes away;
* `io_feed`: a feed whose bundle watches a sentinel (or a spinner) with an IntersectionObserver;
* `scroll_feed`: a feed whose bundle listens to scrolling, ending in a spinner or a loading note;
* `shadow_article`: the article body renders into an open shadow root of a custom element;
* `spa`: an empty mount point (`#app`, `#root`, ...) the bundle fills, with a noscript warning;
* `hx_feed`: a feed built with an htmx-like library (`hx.<hash>.js`): the last element carries
  `hx-get` and `hx-trigger="revealed"` (or `intersect once`), and the server answers each with
  an HTML fragment of cards ending in the next trigger;

Static pages of the same sites carry the same bundles plus ad slots, share buttons, widgets in
custom elements, an empty third-party comments box, pagination links labelled "load more",
expanders over text already in the page and `document.write` of the footer year and ad markup,
an empty consent-manager mount point (`#usercentrics-root`, `#onetrust-consent-sdk`, ...) with its
vendor's script, and (`ssr_component`) an article server-rendered into a declarative shadow root
(`<template shadowrootmode="open">`, as Lit and other web-component frameworks emit it).

Text comes from the held-out phrase pools (13 languages, 7 scripts). Development used seed 11;
tests use 4242.
"""

from __future__ import annotations

import json
import random
from html import escape

from .jspages_heldout import _UI, LANGS, HeldoutPage, _js, _Page, _ps

SITE_JS_KINDS = ("load_more", "io_feed", "scroll_feed", "shadow_article", "spa", "hx_feed")
SITE_STATIC_KINDS = (
    "news_article",
    "listing",
    "expander",
    "widgets",
    "short_note",
    "ssr_component",
)

# Labels real sites put on load-more controls, beyond the held-out UI strings.
_MORE_LABELS = {
    "en": ("Load more", "Show more", "More stories", "See more"),
    "de": ("Mehr laden", "Mehr anzeigen", "Weitere Artikel"),
    "fr": ("Voir plus", "Charger plus", "Afficher plus"),
    "es": ("Cargar más", "Ver más", "Mostrar más"),
    "pt": ("Carregar mais", "Ver mais", "Mostrar mais"),
    "ru": ("Показать ещё", "Загрузить ещё"),
    "pl": ("Pokaż więcej", "Załaduj więcej"),
    "tr": ("Daha fazla yükle", "Daha fazla göster"),
    "ja": ("もっと見る", "さらに読み込む", "さらに表示"),
    "zh": ("加载更多", "查看更多", "更多"),
    "ko": ("더 보기", "더보기", "더 불러오기"),
    "ar": ("تحميل المزيد", "عرض المزيد"),
    "hi": ("और लोड करें", "और देखें"),
}

_BUNDLE = r"""/* app bundle: site behaviour, wired by markup and by App.* calls */
(function () {
  var V = window.Vendor;
  function add(box, items) {
    items.forEach(function (t) { var p = document.createElement('p'); p.className = 'item'; p.textContent = t; box.appendChild(p); });
  }
  var App = window.App = {
    more: function (ctl, box, src) {
      var next = src;
      ctl.addEventListener('click', function (e) {
        e.preventDefault();
        if (!next) return;
        V.getJSON(next).then(function (d) { add(box, d.items); next = d.next; if (!next) ctl.parentNode.removeChild(ctl); });
      });
    },
    feed: function (box, src, end, mode) {
      var next = src, busy = false, io = null;
      function load() {
        if (busy || !next) return;
        busy = true;
        V.getJSON(next).then(function (d) {
          add(box, d.items); next = d.next; busy = false;
          if (!next) { if (end) end.parentNode.removeChild(end); if (io) io.disconnect(); }
          else if (io) { io.unobserve(end); io.observe(end); }
        });
      }
      if (mode === 'io') {
        io = new IntersectionObserver(function (es) { if (es[0].isIntersecting) load(); });
        io.observe(end);
      } else {
        window.addEventListener('scroll', V.throttle(function () {
          if (window.innerHeight + window.scrollY >= document.body.offsetHeight - 300) load();
        }, 100));
      }
    },
    mount: function (root, src) {
      V.getJSON(src).then(function (d) {
        var h = document.createElement('h1'); h.textContent = d.title; root.appendChild(h);
        add(root, d.paragraphs);
      });
    }
  };
  if (window.customElements) {
    customElements.define('__TAG__', class extends HTMLElement {
      connectedCallback() {
        var root = this.attachShadow({mode: 'open'});
        V.getJSON(this.getAttribute('data-src')).then(function (d) { add(root, d.paragraphs); });
      }
    });
  }
  V.ready(function () {
    document.querySelectorAll('[data-more-src]').forEach(function (ctl) {
      App.more(ctl, document.querySelector(ctl.getAttribute('data-target')), ctl.getAttribute('data-more-src'));
    });
    document.querySelectorAll('[data-feed-src]').forEach(function (box) {
      App.feed(box, box.getAttribute('data-feed-src'), document.querySelector(box.getAttribute('data-end')), box.getAttribute('data-mode'));
    });
    document.querySelectorAll('[data-mount-src]').forEach(function (root) { App.mount(root, root.getAttribute('data-mount-src')); });
    document.querySelectorAll('.menu-toggle').forEach(function (b) {
      b.addEventListener('click', function () { document.body.classList.toggle('menu-open'); });
    });
    document.querySelectorAll('.js-expand').forEach(function (b) {
      b.addEventListener('click', function () { document.getElementById(b.getAttribute('aria-controls')).hidden = false; });
    });
  });
})();
"""

_VENDOR = r"""/* vendor: a small DOM and ajax helper library */
(function () {
  window.Vendor = {
    getJSON: function (u) { return fetch(u, {credentials: 'same-origin'}).then(function (r) { return r.json(); }); },
    ready: function (f) { if (document.readyState !== 'loading') f(); else document.addEventListener('DOMContentLoaded', f); },
    throttle: function (f, ms) { var t = 0; return function () { var n = Date.now(); if (n - t > ms) { t = n; f(); } }; }
  };
})();
"""


_HX = r"""/* hx: an htmx-like library: elements with hx-get load an HTML fragment when their trigger fires */
(function () {
  function attr(el, n) { return el.getAttribute('hx-' + n) || el.getAttribute('data-hx-' + n) || ''; }
  function swap(el, html) {
    var how = attr(el, 'swap') || 'innerHTML', t = document.createElement('template');
    t.innerHTML = html;
    var nodes = Array.prototype.slice.call(t.content.childNodes);
    if (how === 'outerHTML') el.replaceWith(t.content);
    else if (how === 'afterend') el.after(t.content);
    else if (how === 'beforeend') el.append(t.content);
    else { el.innerHTML = ''; el.append(t.content); }
    nodes.forEach(function (n) { if (n.nodeType === 1) process(n); });
  }
  function issue(el) {
    fetch(attr(el, 'get'), {headers: {'HX-Request': 'true'}}).then(function (r) { return r.text(); })
      .then(function (html) { swap(el, html); });
  }
  function wire(el) {
    if (el.__hx) return; el.__hx = true;
    var trig = attr(el, 'trigger');
    if (/revealed|intersect/.test(trig)) {
      var io = new IntersectionObserver(function (es) {
        if (es[0].isIntersecting) { io.disconnect(); issue(el); }
      });
      io.observe(el);
    } else if (/load/.test(trig)) issue(el);
    else el.addEventListener('click', function (e) { e.preventDefault(); issue(el); });
  }
  function process(root) {
    if (root.matches && root.matches('[hx-get],[data-hx-get]')) wire(root);
    root.querySelectorAll('[hx-get],[data-hx-get]').forEach(wire);
  }
  if (document.readyState !== 'loading') process(document);
  else document.addEventListener('DOMContentLoaded', function () { process(document); });
})();
"""

# Consent managers: their mount point in the page and the vendor's script (third party).
_CONSENT_ROOTS = (
    ("usercentrics-root", "usercentrics/loader.js"),
    ("onetrust-consent-sdk", "onetrust/otSDKStub.js"),
    ("didomi-host", "didomi/loader.js"),
    ("CybotCookiebotDialog", "cookiebot/uc.js"),
)


class _Site:
    """One site: language, template, bundles (shared by all its pages) and its resources."""

    def __init__(self, rng: random.Random, index: int, third_party: str):
        self.rng = rng
        self.lang = rng.choice(LANGS)
        self.prefix = f"/site{index}"
        self.name = rng.choice(
            ("Harbour Daily", "Ridge Courier", "Ferry Times", "Linden Gazette", "Quay Herald")
        )
        self.layout = rng.choice(("semantic", "divsoup", "magazine"))
        h = f"{rng.randrange(16**8):08x}"
        self.tag = rng.choice(
            ("article-body", "story-text", "post-content", "x-article", "rich-text")
        )
        self.vendor = f"{self.prefix}/assets/vendor.{h[:6]}.js"
        self.app = f"{self.prefix}/assets/app.{h[2:]}.js"
        self.hx = f"{self.prefix}/assets/hx.{h[1:7]}.js"
        self.resources: dict[str, tuple[bytes, str]] = {
            self.vendor: (_VENDOR.encode(), "text/javascript"),
            self.app: (_BUNDLE.replace("__TAG__", self.tag).encode(), "text/javascript"),
            self.hx: (_HX.encode(), "text/javascript"),
        }
        self.third_party = third_party.rstrip("/")

    def page(self, html_main: str, title: str, inline: str = "", head: str = "") -> str:
        ui = _UI[self.lang]
        nav = "".join(
            f'<li><a href="{self.prefix}/{k}">{escape(ui[k])}</a></li>'
            for k in ("home", "news", "about", "contact")
        )
        side = (
            f"<h3>{escape(ui['news'])}</h3><ul>"
            + "".join(
                f'<li><a href="{self.prefix}/n/{i}">{escape(ui["read_more"])} {i}</a></li>'
                for i in range(4)
            )
            + "</ul>"
        )
        year = "<script>document.write(new Date().getFullYear())</script>"
        if self.layout == "semantic":
            body = (
                f'<header class="site-header"><button class="menu-toggle" aria-label="menu">☰</button>'
                f'<a class="logo" href="{self.prefix}/">{self.name}</a><nav><ul>{nav}</ul></nav></header>'
                f'<main id="main">{html_main}</main><aside class="sidebar">{side}</aside>'
                f"<footer><p>© {year} {self.name}</p></footer>"
            )
        elif self.layout == "divsoup":
            body = (
                f'<div class="wrap"><div class="top"><span class="logo">{self.name}</span><ul class="menu">{nav}</ul></div>'
                f'<div class="container"><div class="col-8 main-col">{html_main}</div>'
                f'<div class="col-4 side-col"><div class="box">{side}</div></div></div>'
                f'<div class="bottom">© {year} {self.name}</div></div>'
            )
        else:
            body = (
                f'<div id="page"><header id="masthead"><p class="site-title">{self.name}</p><nav>{nav}</nav></header>'
                f'<div id="primary"><div class="site-content">{html_main}</div></div>'
                f'<div id="secondary" class="widget-area">{side}</div>'
                f'<footer id="colophon">© {year} {self.name}</footer></div>'
            )
        gtag = (
            f"<script async src='{self.third_party}/gtag/js?id=G-{self.rng.randrange(10**6)}'></script>"
            "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments);}"
            "gtag('js',new Date());gtag('config','G-1');</script>"
        )
        scripts = (
            f'<script src="{self.vendor}"></script><script src="{self.hx}" defer></script>'
            f'<script src="{self.app}" defer></script>'
        )
        if inline:
            scripts += f"<script>{inline}</script>"
        dir_attr = ' dir="rtl"' if self.lang == "ar" else ""
        return (
            f'<!DOCTYPE html><html lang="{self.lang}"{dir_attr}><head><meta charset="utf-8">'
            f'<title>{escape(title)} | {self.name}</title><link rel="stylesheet" href="{self.prefix}/assets/site.css">'
            f"{gtag}{head}</head><body>{body}{scripts}</body></html>"
        )


def _chain(p: _Page, name: str, pages: list[list[str]]) -> str:
    """JSON pages that name the next one, like a cursor; returns the first URL."""
    urls = [f"{p.prefix}/api/{name}-{i + 1}.json" for i in range(len(pages))]
    for i, items in enumerate(pages):
        body = {"items": items, "next": urls[i + 1] if i + 1 < len(urls) else None}
        p.resources[urls[i]] = (json.dumps(body, ensure_ascii=False).encode(), "application/json")
    return urls[0]


def _cards(texts: list[str]) -> str:
    return "".join(f'<div class="card"><p class="item">{escape(t)}</p></div>' for t in texts)


def _load_more(site: _Site, p: _Page) -> str:
    title = p.title()
    first = p.paras(p.rng.randint(2, 4))
    later = [p.paras(2) for _ in range(p.rng.randint(2, 3))]
    p.static_text, p.js_only = first, [t for page in later for t in page]
    src = _chain(p, "more", later)
    box = p.ident("river", "story-list", "latest", "js-items", "results", "c-list")
    label = escape(p.rng.choice(_MORE_LABELS[p.lang]))
    p.variant = p.ident("button", "a_hash", "a_nohref", "div_role", "inline_call", "input")
    attrs = f'class="more-btn" data-more-src="{src}" data-target="#{box}"'
    control = {
        "button": f'<button type="button" {attrs}>{label}</button>',
        "a_hash": f'<a href="#" {attrs}>{label}</a>',
        "a_nohref": f"<a {attrs}>{label}</a>",
        "div_role": f'<div role="button" tabindex="0" {attrs}>{label}</div>',
        "inline_call": f'<button type="button" class="more-btn" id="more-{box}">{label}</button>',
        "input": f'<input type="button" value="{label}" {attrs}>',
    }[p.variant]
    inline = ""
    if p.variant == "inline_call":  # inline code only calls into the bundle
        inline = (
            "document.addEventListener('DOMContentLoaded',function(){"
            f"App.more(document.getElementById('more-{box}'),document.getElementById('{box}'),{_js(src)});}});"
        )
    main = f'<h1>{escape(title)}</h1><div id="{box}" class="list">{_cards(first)}</div><div class="pager">{control}</div>'
    return site.page(main, title, inline)


def _io_feed(site: _Site, p: _Page) -> str:
    title = p.title()
    first = p.paras(p.rng.randint(2, 4))
    later = [p.paras(2) for _ in range(p.rng.randint(2, 3))]
    p.static_text, p.js_only = first, [t for page in later for t in page]
    src = _chain(p, "feed", later)
    box = p.ident("feed", "stream", "river", "timeline-items")
    p.variant = p.ident("sentinel", "spinner", "trigger_div")
    end = {
        "sentinel": '<div id="feed-sentinel" class="sentinel"></div>',
        "spinner": '<div id="feed-end" class="spinner" role="progressbar" aria-label="…"></div>',
        "trigger_div": '<div id="infinite-trigger" class="js-infinite"></div>',
    }[p.variant]
    end_id = end.split('id="', 1)[1].split('"', 1)[0]
    main = (
        f'<h1>{escape(title)}</h1><div id="{box}" data-feed-src="{src}" data-end="#{end_id}" data-mode="io">'
        f"{_cards(first)}</div>{end}"
    )
    return site.page(main, title)


def _scroll_feed(site: _Site, p: _Page) -> str:
    title = p.title()
    first = p.paras(p.rng.randint(3, 5))
    later = [p.paras(2) for _ in range(p.rng.randint(2, 3))]
    p.static_text, p.js_only = first, [t for page in later for t in page]
    src = _chain(p, "scroll", later)
    box = p.ident("feed", "posts", "river", "news-list")
    p.variant = p.ident("spinner", "loading_note", "loader_class")
    end = {
        "spinner": '<div id="more-spinner" class="spinner"></div>',
        "loading_note": f'<p id="more-note" class="status">{escape(_UI[p.lang]["loading"])}</p>',
        "loader_class": '<div id="more-loader" class="loader"><span></span><span></span></div>',
    }[p.variant]
    end_id = end.split('id="', 1)[1].split('"', 1)[0]
    main = (
        f'<h1>{escape(title)}</h1><div id="{box}" data-feed-src="{src}" data-end="#{end_id}" data-mode="scroll">'
        f'{_cards(first)}</div>{end}<div style="height:1200px"></div>'
    )
    return site.page(main, title)


def _shadow_article(site: _Site, p: _Page) -> str:
    title = p.title()
    lead, body = p.paras(p.rng.randint(0, 1)), p.paras(p.rng.randint(3, 5))
    p.static_text, p.js_only = lead, body
    src = f"{p.prefix}/api/body.json"
    p.resources[src] = (
        json.dumps({"paragraphs": body}, ensure_ascii=False).encode(),
        "application/json",
    )
    p.variant = "lead" if lead else "bare"
    byline = f'<p class="byline">{escape(p.title()[:20])}</p>'
    main = (
        f'<article class="story"><h1>{escape(title)}</h1>{byline}{_ps(lead, "lead")}'
        f'<{site.tag} data-src="{src}"></{site.tag}></article>'
    )
    return site.page(main, title)


def _spa(site: _Site, p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(3, 5))
    p.js_only = body
    src = f"{p.prefix}/api/page.json"
    p.resources[src] = (
        json.dumps({"title": title, "paragraphs": body}, ensure_ascii=False).encode(),
        "application/json",
    )
    root = p.ident("app", "root", "__nuxt", "view")
    p.variant = root
    main = (
        f'<div id="{root}" data-mount-src="{src}"></div>'
        f"<noscript>{escape(_UI[p.lang]['enable_js'])}</noscript>"
    )
    return site.page(main, title)


def _hx_feed(site: _Site, p: _Page) -> str:
    title = p.title()
    first = p.paras(p.rng.randint(2, 4))
    later = [p.paras(2) for _ in range(p.rng.randint(2, 3))]
    p.static_text, p.js_only = first, [t for page in later for t in page]
    p.variant = p.ident("revealed", "intersect")
    urls = [f"{p.prefix}/feed/page-{i + 2}.html" for i in range(len(later))]

    def trigger(url: str) -> str:
        if p.variant == "revealed":
            return f'<div class="feed-next" hx-get="{url}" hx-trigger="revealed" hx-swap="outerHTML"></div>'
        return (
            f'<p data-hx-get="{url}" data-hx-trigger="intersect once" data-hx-swap="outerHTML"></p>'
        )

    for i, items in enumerate(later):
        fragment = _cards(items) + (trigger(urls[i + 1]) if i + 1 < len(urls) else "")
        p.resources[urls[i]] = (fragment.encode(), "text/html; charset=utf-8")
    box = p.ident("feed", "river", "latest")
    main = (
        f'<h1>{escape(title)}</h1><section id="{box}">{_cards(first)}{trigger(urls[0])}</section>'
    )
    return site.page(main, title)


# --- static pages of the same sites ------------------------------------------------------------


def _news_article(site: _Site, p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(5, 8))
    p.static_text = body
    parts = []
    for i, t in enumerate(body):
        parts.append(f"<p>{escape(t)}</p>")
        if i == 1:
            parts.append(f'<div id="div-gpt-ad-{p.rng.randrange(10**9)}-0" class="ad-slot"></div>')
        if i == 3:
            parts.append('<div class="adsbygoogle-box"><ins class="adsbygoogle"></ins></div>')
    share = f'<div class="share"><button class="share-btn">{escape(_UI[p.lang]["share"])}</button></div>'
    ad_write = (
        "<script>document.write('<div id=\"ad-bottom\"></div><scr'+'ipt src=\""
        f"{site.third_party}/ads/show.js\"></scr'+'ipt>');</script>"
    )
    p.variant = p.ident("ads", "consent")
    main = f'<article class="story"><h1>{escape(title)}</h1>{"".join(parts)}{share}{ad_write}</article>'
    if p.variant == "consent":  # the consent manager's mount point, filled by its vendor's script
        root, script = p.rng.choice(_CONSENT_ROOTS)
        main += f'<div id="{root}"></div>'
        return site.page(main, title, head=f'<script src="{site.third_party}/{script}"></script>')
    return site.page(main, title)


def _listing(site: _Site, p: _Page) -> str:
    title = p.title()
    items = p.paras(p.rng.randint(4, 6))
    p.static_text = items
    label = escape(p.rng.choice(_MORE_LABELS[p.lang]))
    p.variant = p.ident("next_link", "numbered")
    if p.variant == "next_link":  # a real link to the next page: it navigates, it loads nothing
        pager = f'<a class="more-link" href="{p.prefix}/page/2">{label}</a>'
    else:
        pager = "".join(f'<a href="{p.prefix}/page/{i}">{i}</a> ' for i in range(1, 5))
    main = f'<h1>{escape(title)}</h1><div id="river" class="list">{_cards(items)}</div><nav class="pager">{pager}</nav>'
    return site.page(main, title)


def _expander(site: _Site, p: _Page) -> str:
    title = p.title()
    shown, folded = p.paras(p.rng.randint(3, 5)), p.paras(p.rng.randint(1, 2))
    p.static_text = shown + folded
    label = escape(_UI[p.lang]["show_more"])
    p.variant = "aria_controls"
    main = (
        f'<article class="story"><h1>{escape(title)}</h1>{_ps(shown)}'
        f'<div id="rest-{p.rng.randrange(999)}" class="folded" hidden>{_ps(folded)}</div>'
        "</article>"
    )
    rest_id = main.split('<div id="', 1)[1].split('"', 1)[0]
    main = main.replace(
        "</article>",
        f'<button class="js-expand" aria-controls="{rest_id}" aria-expanded="false">{label}</button></article>',
    )
    return site.page(main, title)


def _widgets(site: _Site, p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(5, 7))
    p.static_text = body
    at = p.rng.randint(1, len(body) - 2)
    p.variant = p.ident("player", "comments_embed", "related_empty")
    extra = {
        "player": '<video-player data-id="v1"></video-player><share-bar></share-bar>',
        "comments_embed": f'<div id="comments" class="comments"></div><script src="{site.third_party}/embed/comments.js" async></script>',
        "related_empty": f'<section class="related"><h2>{escape(_UI[p.lang]["news"])}</h2></section>',
    }[p.variant]
    main = (
        f'<article class="story"><h1>{escape(title)}</h1>{_ps(body[:at])}<like-button></like-button>'
        f"{_ps(body[at:])}</article>{extra}"
    )
    return site.page(main, title)


def _ssr_component(site: _Site, p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(3, 5))
    p.static_text = body
    p.variant = p.ident("open", "open_lead")
    lead = f'<p class="lead">{escape(body[0])}</p>' if p.variant == "open_lead" else ""
    rest = body[1:] if lead else body
    main = (
        f'<article class="story"><h1>{escape(title)}</h1>{lead}<{site.tag}>'
        f'<template shadowrootmode="open"><style>p{{margin:0 0 1em}}</style>{_ps(rest)}</template>'
        f"</{site.tag}></article>"
    )
    return site.page(main, title)


def _short_note(site: _Site, p: _Page) -> str:
    title = p.title()
    text = p.paras(1)
    p.static_text = text
    p.variant = "note"
    main = f'<article class="story"><h1>{escape(title)}</h1>{_ps(text)}</article>'
    return site.page(main, title)


_BUILDERS = {
    "load_more": _load_more,
    "io_feed": _io_feed,
    "scroll_feed": _scroll_feed,
    "shadow_article": _shadow_article,
    "spa": _spa,
    "hx_feed": _hx_feed,
    "ssr_component": _ssr_component,
    "news_article": _news_article,
    "listing": _listing,
    "expander": _expander,
    "widgets": _widgets,
    "short_note": _short_note,
}


def generate(
    seed: int, n: int = 60, js_share: float = 0.5, third_party: str = "http://127.0.0.1:9"
) -> list[HeldoutPage]:
    """`n` pages from `max(2, n // 10)` sites, about `js_share` of them JS pages; deterministic.

    Each page's `resources` include its site's bundles, so any page can be served on its own.
    """
    if n < 1:
        raise ValueError(f"n={n}: ask for at least one page")
    if not 0.0 <= js_share <= 1.0:
        raise ValueError(f"js_share={js_share}: must be within [0, 1]")
    rng = random.Random(seed)
    sites = [
        _Site(random.Random(rng.randrange(2**63)), i, third_party) for i in range(max(2, n // 10))
    ]
    n_js = round(n * js_share)
    kinds = [SITE_JS_KINDS[i % len(SITE_JS_KINDS)] for i in range(n_js)]
    kinds += [SITE_STATIC_KINDS[i % len(SITE_STATIC_KINDS)] for i in range(n - n_js)]
    rng.shuffle(kinds)
    pages = []
    for i, kind in enumerate(kinds):
        site = sites[i % len(sites)]
        p = _Page(random.Random(rng.randrange(2**63)), i, kind, third_party)
        p.lang, p.ui = site.lang, _UI[site.lang]
        p.prefix = f"{site.prefix}/p{i:04d}"
        html = _BUILDERS[kind](site, p)
        pages.append(
            HeldoutPage(
                path=f"{p.prefix}/index.html",
                kind=kind,
                variant=p.variant,
                lang=p.lang,
                html=html,
                resources={**site.resources, **p.resources},
                static_text=p.static_text,
                js_only=p.js_only,
            )
        )
    return pages
