"""Pages whose behaviour sits in external files of framework-style builds, for the render decision.

`generate(seed, n)` builds a few sites in styles the other corpora do not cover; each page loads
its behaviour from same-origin script files (minified production bundles, a jQuery-like library
and its plugin file, ES modules) and its inline code, if any, only configures them:

JS pages (text arrives only when scripts run or a reader acts):

* `react_root`: an empty `<div id="root">` (Create-React-App style, noscript note) or
  `<div id="__next">` with the page's data in `<script id="__NEXT_DATA__" type="application/json">`,
  hydrated by `/static/js/main.<hash>.js`, a minified bundle;
* `vue_cloak`: `<div id="app" v-cloak>` holding `{{ }}` templates the app bundle fills from JSON;
* `jquery_more`: jQuery plus a plugin file binding `$(document).on('click', '.js-more', ...)`; the
  control is an `<a href="#">`, a `<button>` or a `<div role="button">`, labelled in the page's
  language ("Weitere 10 Artikel anzeigen", "Afficher plus d'actualités", "Load older posts"), or
  an icon-only button named by its class, in a paragraph or the list's own `<nav>` / `<footer>`,
  clicked until it goes away;
* `io_spinner`: a post list ending in `<div class="sentinel">` and a spinner (CSS dots or an image),
  watched by an IntersectionObserver in the feed bundle (or a scroll listener);
* `feed_element`: a custom element (`<news-feed>`, `<latest-stories>`, ...) defined in an external
  module script that attaches a shadow root and fetches JSON into it;
* `div_pager`: more items by `fetch('/api/items?page=N')` after a click on a
  `<div role="button" tabindex="0">`;
* `consent_gate`: the article body loads only once the cookie-consent overlay is dismissed;
* `bare_shell`: the HTML holds a title, a header and a navigation; the module bundle builds the
  rest (Vite style, no mount point).

Static pages of the same sites (their text is in the HTML; they must stay static):

* `jq_menus`: jQuery for menus and dropdowns, an ad bundle and empty ad slots in the article;
* `doc_write`: `document.write` during parsing of a dateline, a contact link and ad markup;
* `comments_button`: a "load comments" button and an empty comments list after the article;
* `ssr_next`: a server-rendered Next.js or Nuxt page whose data blob repeats the article text;
* `lazy_media`: lazy images with spinners in figures, a video player box, share buttons;
* `consent_static`: the whole article plus a cookie-consent overlay and its vendor's script;
* `recirc`: empty recommendation boxes (Taboola, Outbrain, related) after the article;
* `template_clone`: the article's second half in a `<template>` a "read more" button clones.

Text comes from the held-out phrase pools (13 languages, 7 scripts). Development used seed 5;
tests use 2718.
"""

from __future__ import annotations

import json
import random
from html import escape

from .jspages_heldout import _UI, LANGS, HeldoutPage, _js, _Page, _ps

EXT_JS_KINDS = (
    "react_root",
    "vue_cloak",
    "jquery_more",
    "io_spinner",
    "feed_element",
    "div_pager",
    "consent_gate",
    "bare_shell",
)
EXT_STATIC_KINDS = (
    "jq_menus",
    "doc_write",
    "comments_button",
    "ssr_next",
    "lazy_media",
    "consent_static",
    "recirc",
    "template_clone",
)

# Load-more labels, in each language, as sites word them (not only the usual "Load more").
_MORE = {
    "en": ("Load more articles", "More news", "Show 10 more", "Load older posts"),
    "de": (
        "Weitere Artikel",
        "Mehr Nachrichten laden",
        "Ältere Beiträge",
        "Weitere 10 Artikel anzeigen",
    ),
    "fr": ("Voir plus", "Plus d'articles", "Afficher plus d'actualités"),
    "es": ("Cargar más", "Ver más noticias", "Mostrar más"),
    "pt": ("Carregar mais", "Ver mais notícias", "Mostrar mais"),
    "ru": ("Показать ещё", "Загрузить ещё"),
    "pl": ("Pokaż więcej", "Załaduj więcej"),
    "tr": ("Daha fazla göster", "Daha fazla yükle"),
    "ja": ("もっと見る", "さらに表示", "もっと読み込む"),
    "zh": ("加载更多", "查看更多", "点击加载更多"),
    "ko": ("더보기", "더 보기"),
    "ar": ("عرض المزيد", "تحميل المزيد"),
    "hi": ("और देखें", "और लोड करें"),
}
# Consent overlays: "reject all" / "only necessary" next to the accept button.
_REJECT = {
    "en": "Reject all",
    "de": "Alle ablehnen",
    "fr": "Tout refuser",
    "es": "Rechazar todo",
    "pt": "Rejeitar tudo",
    "ru": "Отклонить все",
    "pl": "Odrzuć wszystkie",
    "tr": "Tümünü reddet",
    "ja": "すべて拒否",
    "zh": "全部拒绝",
    "ko": "모두 거부",
    "ar": "رفض الكل",
    "hi": "सभी अस्वीकार करें",
}
_LOAD_COMMENTS = {
    "en": "Load comments",
    "de": "Kommentare laden",
    "fr": "Afficher les commentaires",
    "es": "Ver comentarios",
    "pt": "Ver comentários",
    "ru": "Показать комментарии",
    "pl": "Pokaż komentarze",
    "tr": "Yorumları göster",
    "ja": "コメントを見る",
    "zh": "查看评论",
    "ko": "댓글 보기",
    "ar": "عرض التعليقات",
    "hi": "टिप्पणियाँ देखें",
}

# A jQuery-like library: selectors, delegated events, $.getJSON, append, data, remove, ready.
_JQUERY = r"""/*! jQuery-like v3.7.1 | (c) example | MIT */
!function(w,d){function Q(s,c){if(!(this instanceof Q))return new Q(s,c);var e=[];if(typeof s==="function"){d.readyState!=="loading"?s():d.addEventListener("DOMContentLoaded",s);e=[]}else if(typeof s==="string")e=Array.prototype.slice.call((c||d).querySelectorAll(s));else if(s)e=[s];this.e=e;this.length=e.length;for(var i=0;i<e.length;i++)this[i]=e[i]}
Q.prototype={each:function(f){this.e.forEach(function(x,i){f.call(x,i,x)});return this},
on:function(ev,sel,f){if(typeof sel==="function"){f=sel;sel=null}return this.each(function(){this.addEventListener(ev,function(e){if(!sel)return f.call(this,e);var t=e.target.closest(sel);if(t)f.call(t,e)})})},
append:function(h){return this.each(function(){this.insertAdjacentHTML("beforeend",h)})},
html:function(h){return this.each(function(){this.innerHTML=h})},
data:function(k){var x=this.e[0];return x?x.getAttribute("data-"+k):null},
attr:function(k,v){if(v===undefined)return this.e[0]?this.e[0].getAttribute(k):null;return this.each(function(){this.setAttribute(k,v)})},
remove:function(){return this.each(function(){this.parentNode&&this.parentNode.removeChild(this)})},
toggleClass:function(c){return this.each(function(){this.classList.toggle(c)})},
closest:function(s){return Q(this.e[0]&&this.e[0].closest(s))},
find:function(s){return Q(s,this.e[0])}};
Q.getJSON=function(u,f){return fetch(u,{credentials:"same-origin"}).then(function(r){return r.json()}).then(f)};
Q.fn=Q.prototype;w.jQuery=w.$=Q}(window,document);
"""

# The site's jQuery plugin file: menus for every page, load-more for lists that have one.
_PLUGINS = r"""/* site plugins */
(function($){
  $(function(){
    $('.nav-toggle').on('click', function(){ $('body').toggleClass('nav-open'); });
    $('.dropdown > a').on('click', function(e){ e.preventDefault(); $(this).closest('.dropdown').toggleClass('open'); });
  });
  $(document).on('click', '.js-more', function(e){
    e.preventDefault();
    var btn = $(this), list = $(btn.attr('data-list')), page = +(btn.data('page') || 2);
    $.getJSON(list.data('endpoint') + '-' + page + '.json', function(d){
      list.append(d.items.map(function(t){ return '<li class="post"><p>' + t + '</p></li>'; }).join(''));
      if (d.last) btn.remove(); else btn.attr('data-page', page + 1);
    });
  });
})(jQuery);
"""

# Minified React-like production bundle: hydrates #root / #__next from __NEXT_DATA__ or an API.
_REACT = r"""!function(){"use strict";var e=document,t=function(n,r,a){var o=e.createElement(n);if(r)o.className=r;if(a)o.textContent=a;return o},n=function(n,r){var a=t("main","page");a.appendChild(t("h1","title",r.title));var o=t("div","article-body");r.paragraphs.forEach(function(e){o.appendChild(t("p",null,e))});a.appendChild(o);n.appendChild(a)},r=e.getElementById("__next")||e.getElementById("root");if(r){var a=e.getElementById("__NEXT_DATA__");if(a){var o=JSON.parse(a.textContent);setTimeout(function(){n(r,o.props.pageProps.post)},30)}else fetch(r.getAttribute("data-api")||"/api/post.json").then(function(e){return e.json()}).then(function(e){n(r,e)})}}();
//# sourceMappingURL=main.js.map
"""

# Vue-like app: fills {{ }} interpolations and v-for lists from JSON, then drops v-cloak.
_VUE = r"""/* app.js (vue-like build) */
(function(){
  var el = document.querySelector('[v-cloak]'); if (!el) return;
  fetch(el.getAttribute('data-api')).then(function(r){ return r.json(); }).then(function(data){
    el.querySelectorAll('[v-for]').forEach(function(t){
      var m = t.getAttribute('v-for').match(/(\w+) in (\w+)/), par = t.parentNode;
      (data[m[2]] || []).forEach(function(v){
        var c = t.cloneNode(true); c.removeAttribute('v-for');
        c.textContent = c.textContent.replace(/\{\{\s*\w+\s*\}\}/g, v); par.insertBefore(c, t);
      });
      par.removeChild(t);
    });
    var walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), n;
    while ((n = walk.nextNode())) n.nodeValue = n.nodeValue.replace(/\{\{\s*(\w+)\s*\}\}/g, function(_, k){ return data[k] == null ? '' : data[k]; });
    el.removeAttribute('v-cloak');
  });
})();
"""

# Infinite list: IntersectionObserver on the sentinel, or a scroll listener, fetching pages.
_INFINITE = r"""/* infinite.js */
(function(){
  document.querySelectorAll('[data-infinite]').forEach(function(list){
    var page = 2, busy = false, done = false, end = document.querySelector(list.getAttribute('data-infinite'));
    var spin = document.querySelector('.spinner, .loading-indicator');
    function more(){
      if (busy || done) return; busy = true;
      fetch(list.getAttribute('data-endpoint') + '-' + page + '.json').then(function(r){ return r.json(); }).then(function(d){
        d.items.forEach(function(t){ var a = document.createElement('article'); a.className = 'post'; a.innerHTML = '<p></p>'; a.firstChild.textContent = t; list.appendChild(a); });
        page++; busy = false;
        if (d.last) { done = true; if (spin) spin.remove(); if (end) end.remove(); }
      });
    }
    if (list.getAttribute('data-mode') === 'io' && 'IntersectionObserver' in window) {
      new IntersectionObserver(function(es){ es.forEach(function(e){ if (e.isIntersecting) more(); }); }, {rootMargin: '200px'}).observe(end);
    } else {
      window.addEventListener('scroll', function(){ if (window.innerHeight + window.pageYOffset >= document.body.scrollHeight - 400) more(); }, {passive: true});
    }
  });
})();
"""

# A web component in an ES module: shadow root, fetched JSON.
_ELEMENT = r"""// components/__TAG__.js
const tpl = document.createElement('template');
tpl.innerHTML = '<style>:host{display:block}.item{margin:0 0 1em}</style><div class="items"></div>';
class Feed extends HTMLElement {
  async connectedCallback() {
    const root = this.attachShadow({mode: 'open'});
    root.appendChild(tpl.content.cloneNode(true));
    const res = await fetch(this.getAttribute('src'));
    const data = await res.json();
    const box = root.querySelector('.items');
    for (const t of data.items) { const p = document.createElement('p'); p.className = 'item'; p.textContent = t; box.appendChild(p); }
  }
}
customElements.define('__TAG__', Feed);
"""

# Pager on a role=button: fetch('/api/items?page=N').
_PAGER = r"""/* list.js */
(function(){
  var btn = document.querySelector('[data-pager]'); if (!btn) return;
  var list = document.getElementById(btn.getAttribute('data-pager')), page = 1;
  function next(){
    page++;
    fetch(list.getAttribute('data-api') + '?page=' + page).then(function(r){ return r.json(); }).then(function(d){
      d.items.forEach(function(t){ var li = document.createElement('li'); li.textContent = t; list.appendChild(li); });
      if (!d.hasMore) btn.style.display = 'none';
    });
  }
  btn.addEventListener('click', next);
  btn.addEventListener('keydown', function(e){ if (e.key === 'Enter') next(); });
})();
"""

# Consent manager: an overlay; either choice stores it and announces it.
_CMP = r"""/* cmp.js: consent overlay */
(function(){
  function decided(v){ document.cookie = 'consent=' + v + ';path=/'; var o = document.getElementById('cmp-overlay'); if (o) o.remove(); window.dispatchEvent(new CustomEvent('consent', {detail: v})); }
  window.__cmp = {decided: function(){ return /consent=/.test(document.cookie); }};
  document.addEventListener('click', function(e){
    if (e.target.closest('.cmp-accept')) decided('all');
    else if (e.target.closest('.cmp-reject')) decided('necessary');
  });
})();
"""

# Article loader that waits for the consent decision.
_GATED = r"""/* article.js */
(function(){
  var box = document.querySelector('[data-article-src]'); if (!box) return;
  function load(){ fetch(box.getAttribute('data-article-src')).then(function(r){ return r.json(); }).then(function(d){
    d.paragraphs.forEach(function(t){ var p = document.createElement('p'); p.textContent = t; box.appendChild(p); }); }); }
  if (window.__cmp && window.__cmp.decided()) load(); else window.addEventListener('consent', load, {once: true});
})();
"""

# Vite-style module bundle: builds the page's main content with no mount point in the HTML.
_SHELL = r"""import{r as e}from"./vendor-__H__.js";const t=async()=>{const t=await fetch(document.body.dataset.route).then(e=>e.json()),n=document.createElement("main");n.className="content",n.innerHTML=`<article><h1></h1></article>`,n.querySelector("h1").textContent=t.title;for(const e of t.paragraphs){const t=document.createElement("p");t.textContent=e,n.firstChild.appendChild(t)}document.querySelector("header").after(n)};e(t);
"""
_SHELL_VENDOR = r"""export const r=e=>{document.readyState!=="loading"?e():document.addEventListener("DOMContentLoaded",e)};
"""

_ADS = r"""/* ads.js: fills ad slots with an iframe each */
(function(){ document.querySelectorAll('.ad-slot,[id^=div-gpt-ad]').forEach(function(s){ var f = document.createElement('iframe'); f.width = 300; f.height = 250; s.appendChild(f); }); })();
"""
_COMMENTS = r"""/* comments.js */
(function(){
  var b = document.querySelector('.load-comments'); if (!b) return;
  b.addEventListener('click', function(){ fetch(b.getAttribute('data-src')).then(function(r){ return r.json(); }).then(function(d){
    var l = document.getElementById('comment-list'); d.comments.forEach(function(c){ var li = document.createElement('li'); li.textContent = c; l.appendChild(li); }); b.remove(); }); });
})();
"""
_CLONE = r"""/* story.js */
(function(){ document.querySelectorAll('[data-clone]').forEach(function(b){ b.addEventListener('click', function(){
  var t = document.getElementById(b.getAttribute('data-clone')); t.parentNode.insertBefore(t.content.cloneNode(true), t); b.remove(); }); }); })();
"""


class _Site:
    """One site: language, framework style, its script files and the shared template."""

    def __init__(self, rng: random.Random, index: int, third_party: str):
        self.rng = rng
        self.lang = rng.choice(LANGS)
        self.prefix = f"/ext{index}"
        self.name = rng.choice(("Bay Ledger", "North Pier", "Kite Review", "Mill Street Post"))
        h = f"{rng.randrange(16**10):010x}"
        self.h = h
        self.third_party = third_party.rstrip("/")
        self.js = {
            "jquery": f"{self.prefix}/js/jquery-3.7.1.min.js",
            "plugins": f"{self.prefix}/js/plugins.{h[:8]}.js",
            "react": f"{self.prefix}/static/js/main.{h[:6]}.js",
            "vue": f"{self.prefix}/js/app.{h[1:9]}.js",
            "infinite": f"{self.prefix}/assets/infinite.{h[2:8]}.js",
            "pager": f"{self.prefix}/assets/list.{h[3:9]}.js",
            "cmp": f"{self.prefix}/assets/cmp.{h[4:10]}.js",
            "gated": f"{self.prefix}/assets/article.{h[:5]}.js",
            "shell": f"{self.prefix}/assets/index-{h[:8]}.js",
            "shell_vendor": f"{self.prefix}/assets/vendor-{h[2:10]}.js",
            "ads": f"{self.prefix}/assets/ads.{h[5:]}.js",
            "comments": f"{self.prefix}/assets/comments.{h[1:6]}.js",
            "clone": f"{self.prefix}/assets/story.{h[2:7]}.js",
        }
        bodies = {
            "jquery": _JQUERY,
            "plugins": _PLUGINS,
            "react": _REACT,
            "vue": _VUE,
            "infinite": _INFINITE,
            "pager": _PAGER,
            "cmp": _CMP,
            "gated": _GATED,
            "shell": _SHELL.replace("__H__", h[2:10]),
            "shell_vendor": _SHELL_VENDOR,
            "ads": _ADS,
            "comments": _COMMENTS,
            "clone": _CLONE,
        }
        self.resources = {self.js[k]: (v.encode(), "text/javascript") for k, v in bodies.items()}

    def nav(self) -> str:
        ui = _UI[self.lang]
        items = "".join(
            f'<li><a href="{self.prefix}/{k}">{escape(ui[k])}</a></li>'
            for k in ("home", "news", "about", "contact")
        )
        drop = (
            f'<li class="dropdown"><a href="#">{escape(ui["news"])} ▾</a><ul class="dropdown-menu">'
            + "".join(f'<li><a href="{self.prefix}/c/{i}">{i}</a></li>' for i in range(3))
            + "</ul></li>"
        )
        return (
            f'<header class="site-header"><a class="brand" href="{self.prefix}/">{self.name}</a>'
            f'<button class="nav-toggle" aria-label="menu">☰</button><nav><ul>{items}{drop}</ul></nav></header>'
        )

    def page(
        self, main: str, title: str, scripts: list[str], head: str = "", body_attrs: str = ""
    ) -> str:
        """The site's template around `main`; `scripts` are ready-made tags (end of body)."""
        gtag = (
            f"<script async src='{self.third_party}/gtm.js?id=GTM-{self.rng.randrange(10**5)}'></script>"
            "<script>(function(w,l){w[l]=w[l]||[];w[l].push({'gtm.start':Date.now(),event:'gtm.js'});})(window,'dataLayer');</script>"
        )
        footer = (
            f'<footer class="site-footer"><p>© {self.name}</p><ul><li><a href="{self.prefix}/imprint">'
            f'Impressum</a></li><li><a href="{self.prefix}/privacy">Privacy</a></li></ul></footer>'
        )
        dir_attr = ' dir="rtl"' if self.lang == "ar" else ""
        return (
            f'<!DOCTYPE html><html lang="{self.lang}"{dir_attr}><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{escape(title)} – {self.name}</title>"
            f'<link rel="stylesheet" href="{self.prefix}/css/main.{self.h[:6]}.css">{gtag}{head}</head>'
            f"<body{body_attrs}>{self.nav()}{main}{footer}{''.join(scripts)}</body></html>"
        )

    def tag(self, key: str, module: bool = False, defer: bool = False) -> str:
        kind = ' type="module"' if module else ""
        return f'<script{kind} src="{self.js[key]}"{" defer" if defer else ""}></script>'


def _json_res(p: _Page, name: str, value: object) -> str:
    path = f"{p.prefix}/api/{name}"
    p.resources[path] = (json.dumps(value, ensure_ascii=False).encode(), "application/json")
    return path


def _pages_of(p: _Page, stem: str, pages: list[list[str]], last_key: str = "last") -> str:
    """`<stem>-2.json`, `<stem>-3.json`, ...: the list's next pages; returns the stem."""
    stem_path = f"{p.prefix}/api/{stem}"
    for i, items in enumerate(pages):
        body = {"items": items, last_key: i + 1 == len(pages)}
        p.resources[f"{stem_path}-{i + 2}.json"] = (
            json.dumps(body, ensure_ascii=False).encode(),
            "application/json",
        )
    return stem_path


def _posts(texts: list[str], tag: str = "li") -> str:
    return "".join(f'<{tag} class="post"><p>{escape(t)}</p></{tag}>' for t in texts)


# --- JS pages ----------------------------------------------------------------------------------


def _react_root(site: _Site, p: _Page) -> str:
    title, body = p.title(), p.paras(p.rng.randint(3, 5))
    p.js_only = body
    p.variant = p.ident("root", "__next")
    if p.variant == "root":
        api = _json_res(p, "post.json", {"title": title, "paragraphs": body})
        main = f'<noscript>You need to enable JavaScript to run this app.</noscript><div id="root" data-api="{api}"></div>'
        head = ""
    else:
        data = {
            "props": {"pageProps": {"post": {"title": title, "paragraphs": body}}},
            "page": "/[slug]",
            "query": {"slug": f"story-{p.rng.randrange(10**4)}"},
            "buildId": site.h,
        }
        main = (
            '<div id="__next"></div><script id="__NEXT_DATA__" type="application/json">'
            f"{_js(data)}</script>"
        )
        head = f'<link rel="preload" href="{site.js["react"]}" as="script">'
    return site.page(main, title, [site.tag("react", defer=True)], head=head)


def _vue_cloak(site: _Site, p: _Page) -> str:
    title, body = p.title(), p.paras(p.rng.randint(3, 5))
    p.js_only = body
    p.variant = p.ident("list", "article")
    api = _json_res(p, "page.json", {"title": title, "intro": "", "paragraphs": body})
    tag = "li" if p.variant == "list" else "p"
    wrap = ("<ul class='entries'>", "</ul>") if tag == "li" else ("<article>", "</article>")
    main = (
        f'<div id="app" v-cloak data-api="{api}"><h1>{{{{ title }}}}</h1><p class="intro">{{{{ intro }}}}</p>'
        f'{wrap[0]}<{tag} v-for="p in paragraphs" :key="p">{{{{ p }}}}</{tag}>{wrap[1]}</div>'
    )
    head = "<style>[v-cloak]{display:none}</style>"
    return site.page(main, title, [site.tag("vue", defer=True)], head=head)


def _jquery_more(site: _Site, p: _Page) -> str:
    title = p.title()
    first = p.paras(p.rng.randint(2, 4))
    later = [p.paras(2) for _ in range(p.rng.randint(2, 3))]
    p.static_text, p.js_only = first, [t for page in later for t in page]
    stem = _pages_of(p, "posts", later)
    label = escape(p.rng.choice(_MORE[p.lang]))
    p.variant = p.ident("a_hash", "button", "div_role", "icon")
    attrs = 'class="js-more btn btn-outline" data-list="#post-list" data-page="2"'
    icon = '<svg width="24" height="24" viewBox="0 0 24 24"><path d="M12 5v14M5 12h14"/></svg>'
    control = {
        "a_hash": f'<a href="#" {attrs}>{label}</a>',
        "button": f'<button type="button" {attrs}>{label}</button>',
        "div_role": f'<div role="button" tabindex="0" {attrs}>{label}</div>',
        "icon": f'<button type="button" {attrs}>{icon}</button>',  # named by its class only
    }[p.variant]
    # The control's box: a paragraph, or the list's own <nav class="pagination"> or <footer>.
    wrap = p.ident("p", "nav", "footer")
    p.variant += f"/{wrap}"
    box = {
        "p": f'<p class="text-center">{control}</p>',
        "nav": f'<nav class="pagination" aria-label="{escape(title[:12])}">{control}</nav>',
        "footer": f'<footer class="list-footer">{control}</footer>',
    }[wrap]
    main = (
        f'<main class="container"><h1>{escape(title)}</h1><section class="stream"><ul id="post-list" class="posts" '
        f'data-endpoint="{stem}">{_posts(first)}</ul>{box}</section></main>'
    )
    return site.page(main, title, [site.tag("jquery"), site.tag("plugins")])


def _io_spinner(site: _Site, p: _Page) -> str:
    title = p.title()
    first = p.paras(p.rng.randint(2, 4))
    later = [p.paras(2) for _ in range(p.rng.randint(2, 3))]
    p.static_text, p.js_only = first, [t for page in later for t in page]
    stem = _pages_of(p, "feed", later)
    p.variant = p.ident("io_dots", "io_gif", "scroll_gif")
    mode = "io" if p.variant.startswith("io") else "scroll"
    if p.variant == "io_dots":
        spin = '<div class="spinner"><div class="bounce1"></div><div class="bounce2"></div><div class="bounce3"></div></div>'
    else:
        spin = f'<div class="loading-indicator"><img src="{site.prefix}/img/spinner.gif" alt="" width="32" height="32"></div>'
    main = (
        f'<main id="content"><h1>{escape(title)}</h1><section class="post-list" data-infinite=".sentinel" '
        f'data-mode="{mode}" data-endpoint="{stem}">{_posts(first, "article")}</section>'
        f'<div class="sentinel" aria-hidden="true"></div>{spin}</main><div style="height:900px"></div>'
    )
    return site.page(main, title, [site.tag("infinite", defer=True)])


def _feed_element(site: _Site, p: _Page) -> str:
    title = p.title()
    intro = p.paras(p.rng.randint(0, 1))
    items = p.paras(p.rng.randint(3, 5))
    p.static_text, p.js_only = intro, items
    tag = p.ident("news-feed", "latest-stories", "x-river", "app-timeline")
    p.variant = tag
    src = _json_res(p, "feed.json", {"items": items})
    path = f"{site.prefix}/js/components/{tag}.{site.h[:6]}.js"
    p.resources[path] = (_ELEMENT.replace("__TAG__", tag).encode(), "text/javascript")
    main = f'<main><h1>{escape(title)}</h1>{_ps(intro, "intro")}<{tag} src="{src}" limit="20"></{tag}></main>'
    return site.page(main, title, [f'<script type="module" src="{path}"></script>'])


def _div_pager(site: _Site, p: _Page) -> str:
    title = p.title()
    first = p.paras(p.rng.randint(2, 4))
    later = [p.paras(2) for _ in range(p.rng.randint(1, 3))]
    p.static_text, p.js_only = first, [t for page in later for t in page]
    api = f"{p.prefix}/api/items"
    for i, items in enumerate(later):
        body = {"items": items, "hasMore": i + 1 < len(later)}
        p.resources[f"{api}?page={i + 2}"] = (
            json.dumps(body, ensure_ascii=False).encode(),
            "application/json",
        )
    label = escape(p.rng.choice(_MORE[p.lang]))
    p.variant = p.ident("div_role", "span_role")
    el = "div" if p.variant == "div_role" else "span"
    main = (
        f'<main><h1>{escape(title)}</h1><ol id="items" class="results" data-api="{api}">'
        + "".join(f"<li>{escape(t)}</li>" for t in first)
        + f'</ol><{el} role="button" tabindex="0" class="pager" data-pager="items">{label}</{el}></main>'
    )
    return site.page(main, title, [site.tag("pager", defer=True)])


def _consent_overlay(site: _Site, p: _Page) -> str:
    ui = _UI[p.lang]
    return (
        '<div id="cmp-overlay" class="cmp-overlay" role="dialog" aria-modal="true" aria-label="Cookies">'
        f'<div class="cmp-box"><p>{escape(ui["cookies"])}</p>'
        f'<button class="cmp-reject" type="button">{escape(_REJECT[p.lang])}</button>'
        f'<button class="cmp-accept" type="button">{escape(ui["accept"])}</button></div></div>'
    )


def _consent_gate(site: _Site, p: _Page) -> str:
    title = p.title()
    lead, body = p.paras(p.rng.randint(0, 2)), p.paras(p.rng.randint(3, 5))
    p.static_text, p.js_only = lead, body
    p.variant = p.ident("div_body", "section_body") + ("/lead" if lead else "")
    src = _json_res(p, "article.json", {"paragraphs": body})
    el = "section" if p.variant.startswith("section") else "div"
    main = (
        f'<main><article><h1>{escape(title)}</h1>{_ps(lead, "lead")}<{el} class="article-body" '
        f'data-article-src="{src}"></{el}></article></main>{_consent_overlay(site, p)}'
    )
    return site.page(main, title, [site.tag("cmp"), site.tag("gated", defer=True)])


def _bare_shell(site: _Site, p: _Page) -> str:
    title = p.title()
    body = p.paras(p.rng.randint(3, 5))
    p.js_only = body
    p.variant = "vite"
    route = _json_res(p, "route.json", {"title": title, "paragraphs": body})
    head = f'<link rel="modulepreload" href="{site.js["shell_vendor"]}">'
    return site.page("", title, [site.tag("shell", module=True)], head, f' data-route="{route}"')


# --- static pages ------------------------------------------------------------------------------


def _article(p: _Page, body: list[str], extra_at: dict[int, str] | None = None) -> str:
    parts = []
    for i, t in enumerate(body):
        parts.append(f"<p>{escape(t)}</p>")
        if extra_at and i in extra_at:
            parts.append(extra_at[i])
    return "".join(parts)


def _jq_menus(site: _Site, p: _Page) -> str:
    title, body = p.title(), p.paras(p.rng.randint(4, 7))
    p.static_text = body
    p.variant = "ads"
    slots = {
        1: f'<div class="ad-slot" id="ad-mpu-{p.rng.randrange(99)}"></div>',
        3: f'<div id="div-gpt-ad-{p.rng.randrange(10**9)}-0"></div>',
    }
    main = f'<main><article class="post"><h1>{escape(title)}</h1>{_article(p, body, slots)}</article></main>'
    return site.page(main, title, [site.tag("jquery"), site.tag("plugins"), site.tag("ads")])


def _doc_write(site: _Site, p: _Page) -> str:
    title, body = p.title(), p.paras(p.rng.randint(4, 6))
    p.static_text = body
    p.variant = p.ident("dateline", "contact_ad")
    if p.variant == "dateline":
        w = (
            "<script>document.write('<p class=\"dateline\">' + new Date().toLocaleDateString("
            f"{_js(p.lang)}) + '</p>');</script>"
        )
    else:
        w = (
            "<script>var u='redaktion'+'@'+location.hostname;document.write('<a href=\"mailto:'+u+'\">'+u+'</a>');"
            f"document.write('<div id=\"ad-inread\"></div><scr'+'ipt src=\"{site.third_party}/ads/inread.js\"></scr'+'ipt>');</script>"
        )
    main = (
        f"<main><article><h1>{escape(title)}</h1>{w}{_article(p, body)}"
        f"<script>document.write('<div class=\"ad-slot\"></div>')</script></article></main>"
    )
    return site.page(main, title, [site.tag("jquery"), site.tag("plugins")])


def _comments_button(site: _Site, p: _Page) -> str:
    title, body = p.title(), p.paras(p.rng.randint(4, 6))
    p.static_text = body
    p.variant = p.ident("section", "div")
    src = _json_res(p, "comments.json", {"comments": p.paras(3)})
    ui = _UI[p.lang]
    box = "section" if p.variant == "section" else "div"
    main = (
        f"<main><article><h1>{escape(title)}</h1>{_article(p, body)}</article>"
        f'<{box} id="comments" class="comments"><h2>{escape(ui["comments"])} (3)</h2>'
        f'<button class="load-comments" data-src="{src}">{escape(_LOAD_COMMENTS[p.lang])}</button>'
        f'<ul id="comment-list"></ul></{box}></main>'
    )
    return site.page(main, title, [site.tag("comments", defer=True)])


def _ssr_next(site: _Site, p: _Page) -> str:
    title, body = p.title(), p.paras(p.rng.randint(3, 6))
    p.static_text = body
    p.variant = p.ident("next", "nuxt")
    article = f'<main class="page"><h1 class="title">{escape(title)}</h1><div class="article-body">{_ps(body)}</div></main>'
    if p.variant == "next":
        data = {"props": {"pageProps": {"post": {"title": title, "paragraphs": body}}}}
        main = (
            f'<div id="__next">{article}</div><script id="__NEXT_DATA__" type="application/json">'
            f"{_js(data)}</script>"
        )
        scripts = [site.tag("react", defer=True)]
    else:
        main = f'<div id="__nuxt" data-server-rendered="true">{article}</div>'
        scripts = [
            f"<script>window.__NUXT__=(function(a,b){{return {{data:[{{post:{{title:a,paragraphs:b}}}}]}}}}"
            f"({_js(title)},{_js(body)}));</script>",
            site.tag("vue", defer=True),
        ]
    return site.page(main, title, scripts)


def _lazy_media(site: _Site, p: _Page) -> str:
    title, body = p.title(), p.paras(p.rng.randint(4, 6))
    p.static_text = body
    p.variant = "figures"
    fig = (
        f'<figure class="image"><div class="img-wrap"><img class="lazyload" data-src="{site.prefix}/img/a.jpg" '
        'src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt=""><div class="spinner"></div></div></figure>'
    )
    video = '<div class="video-player" data-video-id="x1"><div class="loader"></div></div>'
    share = (
        f'<div class="share-buttons"><button class="share fb">{escape(_UI[p.lang]["share"])}</button>'
        '<a class="share tw" href="#">X</a></div>'
    )
    main = f"<main><article><h1>{escape(title)}</h1>{_article(p, body, {0: fig, 2: video})}{share}</article></main>"
    return site.page(main, title, [site.tag("jquery"), site.tag("plugins")])


def _consent_static(site: _Site, p: _Page) -> str:
    title, body = p.title(), p.paras(p.rng.randint(3, 6))
    p.static_text = body
    p.variant = "overlay"
    main = f"<main><article><h1>{escape(title)}</h1>{_article(p, body)}</article></main>{_consent_overlay(site, p)}"
    return site.page(main, title, [site.tag("cmp")])


def _recirc(site: _Site, p: _Page) -> str:
    title, body = p.title(), p.paras(p.rng.randint(4, 6))
    p.static_text = body
    p.variant = p.ident("taboola", "outbrain", "related")
    box = {
        "taboola": '<div id="taboola-below-article-thumbnails"></div>',
        "outbrain": '<div class="OUTBRAIN" data-widget-id="AR_1"></div>',
        "related": f'<section id="related-articles" class="related"><h2>{escape(_UI[p.lang]["news"])}</h2><div class="related-list"></div></section>',
    }[p.variant]
    main = f"<main><article><h1>{escape(title)}</h1>{_article(p, body)}</article>{box}</main>"
    return site.page(main, title, [site.tag("ads", defer=True)])


def _template_clone(site: _Site, p: _Page) -> str:
    title = p.title()
    shown, folded = p.paras(p.rng.randint(2, 3)), p.paras(p.rng.randint(2, 3))
    p.static_text = shown + folded
    p.variant = "template"
    tid = f"rest-{p.rng.randrange(999)}"
    label = escape(_UI[p.lang]["read_more"])
    main = (
        f'<main><article><h1>{escape(title)}</h1>{_ps(shown)}<template id="{tid}">{_ps(folded)}</template>'
        f'<button type="button" class="read-on" data-clone="{tid}">{label}</button></article></main>'
    )
    return site.page(main, title, [site.tag("clone", defer=True)])


_BUILDERS = {
    "react_root": _react_root,
    "vue_cloak": _vue_cloak,
    "jquery_more": _jquery_more,
    "io_spinner": _io_spinner,
    "feed_element": _feed_element,
    "div_pager": _div_pager,
    "consent_gate": _consent_gate,
    "bare_shell": _bare_shell,
    "jq_menus": _jq_menus,
    "doc_write": _doc_write,
    "comments_button": _comments_button,
    "ssr_next": _ssr_next,
    "lazy_media": _lazy_media,
    "consent_static": _consent_static,
    "recirc": _recirc,
    "template_clone": _template_clone,
}


def generate(
    seed: int, n: int = 64, js_share: float = 0.5, third_party: str = "http://127.0.0.1:9"
) -> list[HeldoutPage]:
    """`n` pages from `max(2, n // 8)` sites, about `js_share` of them JS pages; deterministic.

    Each page's `resources` include its site's script files, so any page can be served alone
    (paths may carry a query string: `/api/items?page=2` is a resource of its own).
    """
    if n < 1:
        raise ValueError(f"n={n}: ask for at least one page")
    if not 0.0 <= js_share <= 1.0:
        raise ValueError(f"js_share={js_share}: must be within [0, 1]")
    rng = random.Random(seed)
    sites = [
        _Site(random.Random(rng.randrange(2**63)), i, third_party) for i in range(max(2, n // 8))
    ]
    n_js = round(n * js_share)
    kinds = [EXT_JS_KINDS[i % len(EXT_JS_KINDS)] for i in range(n_js)]
    kinds += [EXT_STATIC_KINDS[i % len(EXT_STATIC_KINDS)] for i in range(n - n_js)]
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
