"""What the crawler reads from a fetched HTML page: links, meta robots, text and title."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import lxml.html
from lxml import etree

from crawlers.crawl.canon import UrlError, canonicalize

# Directive names that contain a colon themselves, so 'name: value' is not a user-agent scope.
_VALUED = ("unavailable_after", "max-snippet", "max-image-preview", "max-video-preview")
_UA_SCOPED = re.compile(r"^\s*([A-Za-z][\w.\-]*)\s*:\s*(.*)$")


@dataclass
class Directives:
    """Robots directives that apply to our agents, merged from meta tags and X-Robots-Tag."""

    noindex: bool = False
    nofollow: bool = False
    noai: bool = False
    noimageai: bool = False  # the page's images must not be used for AI (its text may be)

    def add(self, words: set[str], *, for_training: bool, for_crawl: bool) -> None:
        """Merge directive words; noai and noimageai may also come from a training-token-scoped
        directive."""
        if for_crawl:
            self.noindex |= bool(words & {"noindex", "none"})
            self.nofollow |= bool(words & {"nofollow", "none"})
        if for_crawl or for_training:
            self.noai |= "noai" in words
            self.noimageai |= "noimageai" in words


@dataclass
class Link:
    """An outlink: canonical URL, its anchor text and whether rel=nofollow marked it."""

    url: str
    anchor: str
    nofollow: bool


@dataclass
class PageInfo:
    """Parsed page: outlinks, directives, title and visible text."""

    links: list[Link] = field(default_factory=list)
    directives: Directives = field(default_factory=Directives)
    title: str = ""
    text: str = ""


def _words(value: str) -> set[str]:
    return {w.strip().lower() for w in value.split(",") if w.strip()}


def apply_x_robots_tag(d: Directives, values: list[str], agent: str, training_agent: str) -> None:
    """Apply X-Robots-Tag header values ('noindex', 'RefineryBot: nofollow', ...)."""
    agent_l, training_l = agent.lower(), training_agent.lower()
    for value in values:
        m = _UA_SCOPED.match(value)
        if m and m.group(1).lower() not in _VALUED:
            scope = m.group(1).lower()
            words = _words(m.group(2))
            d.add(words, for_crawl=scope == agent_l, for_training=scope == training_l)
        else:
            d.add(_words(value), for_crawl=True, for_training=True)


def parse_html(
    body: bytes, base_url: str, *, agent: str, training_agent: str, max_text_chars: int = 20000
) -> PageInfo:
    """Parse an HTML body: canonical outlinks (with <base>), meta robots for our agents, text."""
    info = PageInfo()
    if not body.strip():
        return info
    try:
        root = lxml.html.document_fromstring(body)
    except (etree.ParserError, ValueError):
        return info
    agent_l, training_l = agent.lower(), training_agent.lower()
    for meta in root.iter("meta"):
        name = (meta.get("name") or "").strip().lower()
        if name in ("robots", agent_l, training_l):
            d_words = _words(meta.get("content") or "")
            info.directives.add(
                d_words, for_crawl=name in ("robots", agent_l), for_training=name == training_l
            )
    base = base_url
    for b in root.iter("base"):
        if b.get("href"):
            try:
                base = canonicalize(b.get("href"), base_url)
            except UrlError:
                pass
            break
    title = root.find(".//title")
    info.title = " ".join((title.text_content() if title is not None else "").split())
    seen: set[str] = set()
    for a in root.iter("a"):
        href = (a.get("href") or "").strip()
        if not href or href.startswith(("#", "javascript:", "mailto:", "tel:", "data:")):
            continue
        try:
            url = canonicalize(href, base)
        except UrlError:
            continue
        if url in seen:
            continue
        seen.add(url)
        rel = {r.lower() for r in (a.get("rel") or "").split()}
        anchor = " ".join(a.text_content().split())[:200]
        info.links.append(Link(url, anchor, "nofollow" in rel))
    for bad in root.xpath("//script|//style|//noscript|//template"):
        bad.drop_tree()
    body_el = root.find("body")
    text = (body_el if body_el is not None else root).text_content()
    info.text = " ".join(text.split())[:max_text_chars]
    return info
