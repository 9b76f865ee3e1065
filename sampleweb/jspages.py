"""Pages whose main content appears only after JavaScript runs, one per mechanism.

The JS-only paragraphs live in external /static/*.js or /api/*.json resources, never in the page's
own HTML, so a renderer that does not run scripts provably misses them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape

from .markup import paragraphs

MECHANISMS = (
    "settimeout",
    "fetch_json",
    "load_more",
    "infinite_scroll",
    "react_shell",
    "noscript",
    "tabs",
    "accordion",
    "details",
    "shadow_root",
)
# Mechanisms whose hidden text is in the static HTML (collapsed), so it is not JS-only.
STATIC_HIDDEN = ("accordion", "details")

_APPEND = (
    "function refineryAppend(box, paras){paras.forEach(function(t){"
    "var p=document.createElement('p');p.textContent=t;box.appendChild(p);});}"
)


@dataclass
class JsPage:
    """The static main HTML, the resources it loads, and which paragraphs only JS reveals."""

    main: str
    resources: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    js_only: list[str] = field(default_factory=list)
    body_extra: str = ""


def _js(data: object) -> str:
    return json.dumps(data, ensure_ascii=False)


def _json_bytes(data: object) -> tuple[bytes, str]:
    return json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"), "application/json"


def _script(source: str) -> tuple[bytes, str]:
    return source.encode("utf-8"), "text/javascript; charset=utf-8"


def build_js_page(
    mechanism: str, slug: str, title: str, paras: list[str], ui_more: str = "Load more"
) -> JsPage:
    """Build one JS page of the given mechanism over a document's paragraphs."""
    first, rest = list(paras[:1]), list(paras[1:])
    h1 = f"<h1>{escape(title)}</h1>"
    if mechanism == "settimeout":
        src = f"/static/{slug}.js"
        js = (
            f"{_APPEND}\nsetTimeout(function(){{refineryAppend(document.getElementById('late'), "
            f"{_js(rest)});}}, 700);\n"
        )
        return JsPage(
            f'<article>{h1}{paragraphs(first)}<div id="late"></div></article>',
            {src: _script(js)},
            rest,
            f'<script src="{src}"></script>',
        )
    if mechanism in ("fetch_json", "noscript", "react_shell"):
        api = f"/api/{slug}.json"
        if mechanism == "react_shell":  # the whole article, title included, is built by the bundle
            src = f"/static/{slug}.bundle.js"
            js = (
                f"{_APPEND}\n(function(){{var data={_js({'title': title, 'paragraphs': list(paras)})};"
                "var root=document.getElementById('root');var h=document.createElement('h1');"
                "h.textContent=data.title;root.appendChild(h);refineryAppend(root, data.paragraphs);})();\n"
            )
            return JsPage(
                '<div id="root"></div>',
                {src: _script(js)},
                list(paras),
                f'<script src="{src}"></script>',
            )
        shown = [] if mechanism == "noscript" else first
        hidden = list(paras) if mechanism == "noscript" else rest
        noscript = (
            "<noscript>You need to enable JavaScript to read this article.</noscript>"
            if mechanism == "noscript"
            else ""
        )
        loader = (
            f"<script>{_APPEND}fetch('{api}').then(function(r){{return r.json();}})"
            "  .then(function(d){refineryAppend(document.getElementById('more'), d.paragraphs);});</script>"
        )
        return JsPage(
            f'{noscript}<article>{h1}{paragraphs(shown)}<div id="more"></div></article>',
            {api: _json_bytes({"slug": slug, "paragraphs": hidden})},
            hidden,
            loader,
        )
    if mechanism == "load_more":
        api = f"/api/{slug}-more.json"
        loader = (
            f"<script>{_APPEND}document.getElementById('load-more').addEventListener('click', function(ev){{"
            f"fetch('{api}').then(function(r){{return r.json();}}).then(function(d){{"
            "refineryAppend(document.getElementById('more'), d.paragraphs);ev.target.remove();});});</script>"
        )
        main = (
            f'<article>{h1}{paragraphs(first)}<div id="more"></div>'
            f'<button id="load-more" type="button">{escape(ui_more)}</button></article>'
        )
        return JsPage(main, {api: _json_bytes({"paragraphs": rest})}, rest, loader)
    if mechanism == "infinite_scroll":
        res = {}
        for i, para in enumerate(rest):
            nxt = f"/api/{slug}-p{i + 2}.json" if i + 1 < len(rest) else None
            res[f"/api/{slug}-p{i + 1}.json"] = _json_bytes({"paragraphs": [para], "next": nxt})
        # A tall spacer means only a real scroll to the bottom triggers the next fetch.
        loader = (
            f"<script>{_APPEND}var nextUrl='/api/{slug}-p1.json', busy=false;"
            "window.addEventListener('scroll', function(){if(busy||!nextUrl)return;"
            "if(window.innerHeight+window.scrollY<document.body.scrollHeight-80)return;busy=true;"
            "fetch(nextUrl).then(function(r){return r.json();}).then(function(d){"
            "refineryAppend(document.getElementById('feed'), d.paragraphs);nextUrl=d.next;busy=false;});});</script>"
        )
        main = f'<article>{h1}{paragraphs(first)}<div id="feed"></div><div style="height:2400px"></div></article>'
        return JsPage(main, res, rest, loader)
    if mechanism == "tabs":
        urls = {str(i + 2): f"/api/{slug}-tab{i + 2}.json" for i in range(len(rest))}
        res = {urls[str(i + 2)]: _json_bytes({"paragraphs": [p]}) for i, p in enumerate(rest)}
        buttons = "".join(
            f'<button class="tab" data-tab="{i + 1}" type="button">{i + 1}</button>'
            for i in range(len(paras))
        )
        panels = f'<div class="panel" id="panel-1">{paragraphs(first)}</div>' + "".join(
            f'<div class="panel" id="panel-{i + 2}" hidden></div>' for i in range(len(rest))
        )
        loader = (
            f"<script>{_APPEND}var tabUrls={_js(urls)};document.querySelectorAll('.tab').forEach(function(b){{"
            "b.addEventListener('click', function(){var n=b.dataset.tab;"
            "document.querySelectorAll('.panel').forEach(function(p){p.hidden=true;});"
            "var panel=document.getElementById('panel-'+n);panel.hidden=false;"
            "if(tabUrls[n]&&!panel.childElementCount){fetch(tabUrls[n])"
            ".then(function(r){return r.json();}).then(function(d){refineryAppend(panel, d.paragraphs);});}});});</script>"
        )
        return JsPage(
            f'<article>{h1}<div class="tabs">{buttons}</div>{panels}</article>', res, rest, loader
        )
    if mechanism == "accordion":
        sections = "".join(
            f'<div class="acc"><button class="acc-head" type="button">{i + 1}</button>'
            f'<div class="acc-body" style="display:none">{paragraphs([p])}</div></div>'
            for i, p in enumerate(rest)
        )
        toggle = (
            "<script>document.querySelectorAll('.acc-head').forEach(function(b){b.addEventListener('click',"
            "function(){var s=b.nextElementSibling.style;s.display=s.display==='none'?'block':'none';});});</script>"
        )
        return JsPage(f"<article>{h1}{paragraphs(first)}{sections}</article>", {}, [], toggle)
    if mechanism == "details":
        details = "".join(
            f"<details><summary>{i + 1}</summary>{paragraphs([p])}</details>"
            for i, p in enumerate(rest)
        )
        return JsPage(f"<article>{h1}{paragraphs(first)}{details}</article>", {}, [])
    if mechanism == "shadow_root":
        src = f"/static/{slug}.shadow.js"
        js = (
            "(function(){var host=document.getElementById('host');var root=host.attachShadow({mode:'open'});"
            f"{_js(rest)}.forEach(function(t){{var p=document.createElement('p');p.textContent=t;root.appendChild(p);}});}})();\n"
        )
        return JsPage(
            f'<article>{h1}{paragraphs(first)}<div id="host"></div></article>',
            {src: _script(js)},
            rest,
            f'<script src="{src}"></script>',
        )
    raise ValueError(f"unknown JS mechanism {mechanism!r}; known: {MECHANISMS}")
