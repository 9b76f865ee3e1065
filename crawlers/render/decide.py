"""Decide from the static HTML alone whether a page needs a browser to show its content.

Rendering costs ~100x static extraction, so only pages with evidence of script-made content
are rendered: an app shell with little text, framework markers, noscript hints, inline
scripts that fetch data or insert DOM, load-more controls, infinite scroll, shadow DOM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree
from lxml import html as lxml_html

# Below this much visible body text, an app shell is taken to be hiding the content.
SHELL_TEXT_CHARS = 400

LOAD_MORE_TEXTS = (
    "load more",
    "show more",
    "see more",
    "view more",
    "more results",
    "read more comments",
    "mehr laden",
    "mehr anzeigen",
    "weitere laden",
    "voir plus",
    "charger plus",
    "afficher plus",
    "cargar más",
    "cargar mas",
    "ver más",
    "mostrar más",
    "carica altro",
    "mostra altro",
    "carregar mais",
    "ver mais",
    "meer laden",
    "toon meer",
    "załaduj więcej",
    "pokaż więcej",
    "загрузить ещё",
    "показать ещё",
    "もっと見る",
    "さらに表示",
    "加载更多",
    "显示更多",
    "查看更多",
    "載入更多",
    "더 보기",
    "더보기",
    "daha fazla",
    "visa fler",
    "vis flere",
    "näytä lisää",
)
_SHELL_IDS = ("root", "app", "__next", "__nuxt", "svelte", "main-app", "react-root")
_FRAMEWORK_MARKERS = (
    ("__NEXT_DATA__", "next.js data"),
    ("data-reactroot", "react root"),
    ("ng-version", "angular"),
    ("ng-app", "angular"),
    ("data-v-app", "vue"),
    ("window.__NUXT__", "nuxt"),
    ("data-server-rendered", "vue ssr"),
    ("__sveltekit", "sveltekit"),
)
_FETCH_RE = re.compile(
    r"\bfetch\s*\(|XMLHttpRequest|\$\.(ajax|get|getJSON)\s*\(|axios\.|\.load\s*\("
)
_INSERT_RE = re.compile(
    r"innerHTML|insertAdjacentHTML|appendChild|append\s*\(|replaceChildren|textContent\s*=|"
    r"document\.write|createElement"
)
_SCROLL_RE = re.compile(r"IntersectionObserver|addEventListener\(\s*['\"]scroll|onscroll")
_SHADOW_RE = re.compile(r"attachShadow|customElements\.define")


@dataclass(frozen=True)
class RenderDecision:
    """Whether to render, and the evidence for it (or why not)."""

    render: bool
    reason: str


def _visible_text_len(tree) -> int:
    body = tree.find(".//body")
    root = body if body is not None else tree
    n = 0
    for el in root.iter():
        if el.tag in ("script", "style", "noscript", "template") or not isinstance(el.tag, str):
            continue
        for chunk in (el.text,):
            if chunk:
                n += len(chunk.strip())
        parent = el.getparent()
        if el.tail and (parent is None or parent.tag not in ("script", "style", "noscript")):
            n += len(el.tail.strip())
    return n


def _control_texts(tree) -> list[str]:
    out = []
    for el in tree.iter("button", "a"):
        text = " ".join(el.text_content().split()).lower()
        if text and len(text) < 60:
            out.append(text)
    return out


def needs_render(html: str) -> RenderDecision:
    """Look at static HTML for script-made content; reasons are joined with ';' in order found."""
    try:
        tree = lxml_html.fromstring(html)
    except (etree.ParserError, ValueError):
        return RenderDecision(False, "static: unparseable html")
    reasons: list[str] = []
    text_len = _visible_text_len(tree)
    scripts = " ".join((s.text or "") for s in tree.iter("script") if not s.get("src"))
    has_scripts = bool(scripts.strip()) or any(s.get("src") for s in tree.iter("script"))
    shell = [
        el.get("id")
        for el in tree.iter("div", "main", "section")
        if el.get("id") in _SHELL_IDS and not el.text_content().strip()
    ]
    markers = [name for needle, name in _FRAMEWORK_MARKERS if needle in html]
    if text_len < SHELL_TEXT_CHARS and (shell or markers):
        reasons.append(f"app shell ({', '.join(shell + markers)}) with {text_len} chars of text")
    elif markers:
        reasons.append(f"framework markers ({', '.join(markers)})")
    noscript = " ".join(n.text_content() for n in tree.iter("noscript")).strip()
    if noscript and has_scripts:
        reasons.append("noscript hint")
    if _FETCH_RE.search(scripts):
        reasons.append("inline script fetches data")
    elif _INSERT_RE.search(scripts):
        reasons.append("inline script inserts content")
    controls = _control_texts(tree)
    hits = sorted({t for t in controls for m in LOAD_MORE_TEXTS if m in t})
    if hits:
        reasons.append(f"load-more control ({hits[0]})")
    if _SCROLL_RE.search(scripts):
        reasons.append("infinite scroll")
    if _SHADOW_RE.search(scripts) or tree.xpath("//template[@shadowrootmode or @shadowroot]"):
        reasons.append("shadow dom")
    placeholders = [
        el.get("id")
        for el in tree.iter("div", "section", "ul", "ol")
        if el.get("id")
        and el.get("id") not in _SHELL_IDS
        and len(el) == 0
        and not (el.text or "").strip()
    ]
    if has_scripts and placeholders and not reasons:
        # An empty, named container next to scripts is where script-made content lands.
        reasons.append(f"empty container #{placeholders[0]} filled by script")
    if not reasons and has_scripts and text_len < SHELL_TEXT_CHARS:
        reasons.append(f"scripts with only {text_len} chars of static text")
    if reasons:
        return RenderDecision(True, "; ".join(reasons))
    return RenderDecision(False, f"static: {text_len} chars of text, no script-made content found")
