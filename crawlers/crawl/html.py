"""What the crawler reads from a fetched HTML page: links, meta robots, text and title."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urljoin

import lxml.html
from lxml import etree

from crawlers.crawl.canon import UrlError, canonicalize, host_of
from crawlers.crawl.robots_policy import as_found

# Directive names that contain a colon themselves, so 'name: value' is not a user-agent scope.
_VALUED = ("unavailable_after", "max-snippet", "max-image-preview", "max-video-preview")
# Directive words that are never read as a user-agent scope, even when a colon follows them
# ('noai: ...' opts out; it does not name a crawler called noai).
_DIRECTIVE_WORDS = frozenset(
    {"all", "none", "noindex", "nofollow", "noai", "noimageai", "noarchive", "nosnippet"}
)
# One directive word, or one user-agent scope ('otherbot:'). Everything else (commas,
# semicolons, whitespace, quotes, '=') separates words: sites write 'noai noimageai',
# 'noindex; noai' and 'noai,noimageai' as well as the standard 'noai, noimageai'.
_TOKEN = re.compile(r"([a-z0-9_.\-]+)(\s*:)?")


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
    """An outlink: canonical URL, its anchor text and whether rel=nofollow marked it; `found`
    holds the spellings the page wrote it in (absolute, fragment dropped, not canonicalised),
    which robots.txt must allow too."""

    url: str
    anchor: str
    nofollow: bool
    found: tuple[str, ...] = ()


@dataclass
class PageInfo:
    """Parsed page: outlinks, directives, title and visible text."""

    links: list[Link] = field(default_factory=list)
    directives: Directives = field(default_factory=Directives)
    title: str = ""
    text: str = ""
    # http(s) links no connection could use (empty label, bad port, bad IPv6, space in the
    # host...): (the link as written, resolved where possible; why), recorded as skips
    bad_links: list[tuple[str, str]] = field(default_factory=list)
    canonical: str | None = None  # <link rel=canonical>, resolved and canonicalised


def _norm(value: str) -> str:
    """Case-folded NFKC text without invisible format characters (fullwidth 'ＮＯＡＩ' and
    'no\u200bai' with a zero-width space read as 'noai')."""
    text = unicodedata.normalize("NFKC", value or "").casefold()
    if text.isascii():
        return text
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def directive_words(value: str) -> set[str]:
    """The directive words of a meta robots `content`: lower-case, split on commas, semicolons
    and whitespace ('noai noimageai', 'noindex; noai', 'NOAI,noimageai' all give noai)."""
    return {m.group(1) for m in _TOKEN.finditer(_norm(value))}


def scoped_directives(value: str) -> Iterator[tuple[str | None, set[str]]]:
    """One X-Robots-Tag header value as (user agent or None for every agent, directive words).

    'name:' before a directive starts that agent's scope, which lasts to the end of the value or
    the next scope ('otherbot: noindex, noai' is otherbot's only; 'noai, otherbot: noindex' gives
    noai to every agent). Valued directives ('max-snippet: 20', 'unavailable_after: ...') and
    directive words are never scopes."""
    scope: str | None = None
    words: set[str] = set()
    for m in _TOKEN.finditer(_norm(value)):
        word, colon = m.group(1), m.group(2)
        if colon and word[0].isalpha() and word not in _VALUED and word not in _DIRECTIVE_WORDS:
            if words:
                yield scope, words
            scope, words = word, set()
        else:
            words.add(word)
    if words:
        yield scope, words


def apply_x_robots_tag(
    d: Directives, values: Iterable[str], agent: str, training_agent: str
) -> None:
    """Apply X-Robots-Tag header values ('noindex', 'RefineryBot: nofollow', one header or many;
    see `scoped_directives`): unscoped ones apply to both tokens, a scoped one to its agent only."""
    agent_l, training_l = _norm(agent), _norm(training_agent)
    for value in values:
        for scope, words in scoped_directives(value):
            if scope is None:
                d.add(words, for_crawl=True, for_training=True)
            else:
                d.add(words, for_crawl=scope == agent_l, for_training=scope == training_l)


def apply_meta_robots(
    d: Directives, name: str, content: str, agent: str, training_agent: str, http_equiv: str = ""
) -> None:
    """Apply one `<meta>` tag: name="robots" (every agent), a name listing the crawl token (crawl
    and noai) or the training token (noai/noimageai), or http-equiv="X-Robots-Tag" (read as the
    header). Other names (another crawler's) do not apply."""
    if _norm(http_equiv).strip() == "x-robots-tag":
        apply_x_robots_tag(d, [content], agent, training_agent)
        return
    names = set(directive_words(name))
    agent_l, training_l = _norm(agent), _norm(training_agent)
    for_crawl = bool(names & {"robots", agent_l})
    for_training = training_l in names
    if for_crawl or for_training:
        d.add(directive_words(content), for_crawl=for_crawl, for_training=for_training)


_VISIBLE_TEXT = etree.XPath(
    "descendant-or-self::text()[not(ancestor::script or ancestor::style or ancestor::noscript"
    " or ancestor::template)]"
)


def _bad_web_link(href: str, base: str) -> str | None:
    """The http(s) link `href` as written (made absolute when it can be); None for a link of
    another scheme (ftp:, sms:...), which is no web link and not the crawler's to record."""
    try:
        url = urljoin(base, href)
    except ValueError:
        url = href
    scheme = _scheme_of(url)
    return url[:2000] if scheme in ("http", "https") else None


# HTML's declarative refresh: '<delay>[.frac][;|,][ url=]<target>', the target optionally quoted.
_REFRESH = re.compile(
    r"""\s*[0-9.]+\s*[;,]?\s*(?:url\s*=\s*)?(?P<url>.*)""", re.IGNORECASE | re.DOTALL
)


def refresh_target(content: str) -> str | None:
    """The address a `<meta http-equiv=refresh content=...>` sends the reader to, as written
    ('0; url=/next' -> '/next', "5;URL='x'" -> 'x'); None when it only reloads the page."""
    m = _REFRESH.match(content or "")
    if m is None:
        return None
    target = m.group("url").strip()
    if target[:1] in ("'", '"'):
        quote, target = target[0], target[1:]
        target = target.split(quote, 1)[0]
    return target.strip() or None


def _scheme_of(url: str) -> str:
    """The lowercase scheme of a URL that may not parse ('' when it has none)."""
    head, sep, _ = url.partition(":")
    return head.strip().lower() if sep and head.strip().isalpha() else ""


def document_root(body: bytes | str):
    """The parsed document of an HTML body; None when it is empty or lxml cannot parse it."""
    if not body.strip():
        return None
    try:
        return lxml.html.document_fromstring(body)
    except (etree.ParserError, ValueError):
        return None


def parse_html(
    body: bytes | str,
    base_url: str,
    *,
    agent: str,
    training_agent: str,
    max_text_chars: int = 20000,
) -> PageInfo:
    """Parse an HTML body: canonical outlinks (<a href>, <link rel=next/prev/canonical> and a
    meta refresh target; with <base>), meta robots for our agents, text.

    `body` is the bytes a server sent (the crawl) or an already decoded document (the render's
    final DOM, whose links go back to the crawl under these same rules)."""
    info = PageInfo()
    root = document_root(body)
    if root is None:
        return info
    for meta in root.iter("meta"):
        apply_meta_robots(
            info.directives,
            meta.get("name") or "",
            meta.get("content") or "",
            agent,
            training_agent,
            meta.get("http-equiv") or "",
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
    seen: dict[str, Link] = {}

    def spelled(url: str, href: str) -> None:
        """Note one more spelling of a link already added (robots.txt is asked about each)."""
        found = as_found(href, base)
        if found and found not in seen[url].found:
            seen[url].found += (found,)

    def follow(href: str, anchor: str, nofollow: bool) -> None:
        """Add `href` as a link once, or record it as a bad link when it names no web page."""
        try:
            url = canonicalize(href, base)
        except UrlError as exc:
            if bad := _bad_web_link(href, base):
                info.bad_links.append((bad, str(exc)))
            return
        if url not in seen:
            seen[url] = Link(url, anchor, nofollow)
            info.links.append(seen[url])
        spelled(url, href)

    for a in root.iter("a"):
        href = (a.get("href") or "").strip()
        if not href or href.startswith(("#", "javascript:", "mailto:", "tel:", "data:")):
            continue
        rel = {r.lower() for r in (a.get("rel") or "").split()}
        follow(href, " ".join(a.text_content().split())[:200], "nofollow" in rel)
    # A framed document of the page's own host is a page of its own (an embedded article, a
    # reader view): its address is a link, under the same rules. Other hosts' frames (video
    # players, ads, widgets) are not. The render inlines a same-origin frame's content in a
    # <div data-refinery-frame src=...>, which names it the same way.
    for el in root.iter("iframe", "frame", "div"):
        if el.tag == "div" and el.get("data-refinery-frame") is None:
            continue
        src = (el.get("src") or "").strip()
        if not src or src.lower().startswith(("#", "javascript:", "data:", "about:", "blob:")):
            continue
        try:
            if host_of(canonicalize(src, base)) != host_of(canonicalize(base_url)):
                continue
        except (UrlError, ValueError):
            continue
        follow(src, " ".join((el.get("title") or "").split())[:200], False)
    # A listing's further pages may be announced only in the head (infinite-scroll themes put a
    # "load more" button in the body and <link rel=next> in the head): those are links too.
    for el in root.iter("link"):
        rel = {r.lower() for r in (el.get("rel") or "").split()}
        href = (el.get("href") or "").strip()
        if not href or not rel & {"next", "prev", "previous", "canonical"}:
            continue
        try:
            url = canonicalize(href, base)
        except UrlError:
            continue
        if "canonical" in rel:
            info.canonical = info.canonical or url
        if url not in seen:  # a page's canonical address is a link too (often the only one)
            seen[url] = Link(url, "", "nofollow" in rel)
            info.links.append(seen[url])
        spelled(url, href)
    # A meta refresh sends the reader on like a link does (old redirects, moved pages): the
    # target is a link, under the same rules and checks as any other.
    for meta in root.iter("meta"):
        if _norm(meta.get("http-equiv") or "").strip() != "refresh":
            continue
        target = refresh_target(meta.get("content") or "")
        if target and not target.lower().startswith(("javascript:", "data:", "#")):
            follow(target, "", False)
    # Read the text around script/style/noscript/template without editing the tree: drop_tree
    # joins the dropped element's tail onto its neighbour, and lxml refuses to set a string with
    # a control character (a '\x0b' after a </script> ended a crawl of saved pages).
    body_el = root.find("body")
    text = "".join(_VISIBLE_TEXT(body_el if body_el is not None else root))
    info.text = " ".join(text.split())[:max_text_chars]
    return info
