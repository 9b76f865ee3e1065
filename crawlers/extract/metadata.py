"""The page's title, author, date and site name, as trafilatura's metadata extraction finds them.

`page_metadata` follows `trafilatura.metadata.extract_metadata` step for step for the fields a
document keeps (same values), and leaves out what no column holds: categories, tags and the
license link search (a third of the metadata time on real pages). One difference: trafilatura
unescapes HTML entities in every value at the end, though the parser has decoded the page's
markup already, so a page whose title reads `&amp;#8217;` (the text "&#8217;") got "’". Here a
value read from the parsed tree is not unescaped again; only one read from a JSON-LD text that
trafilatura left raw is (`_json_ld`), once.
"""

from __future__ import annotations

import json
from copy import deepcopy
from html import unescape

from courlan import extract_domain
from lxml.etree import XPath
from trafilatura.htmlprocessing import prune_unwanted_nodes
from trafilatura.json_metadata import (
    extract_json,
    extract_json_parse_error,
    normalize_authors,
    normalize_json,
)
from trafilatura.metadata import (
    JSON_MINIFY,
    META_URL,
    examine_meta,
    extract_author,
    extract_metainfo,
    extract_sitename,
    extract_title,
    extract_url,
)
from trafilatura.settings import Document, set_date_params
from trafilatura.utils import LINES_TRIMMING, remove_control_characters, trim

from crawlers.extract.runs import SHARED


def _contains(attr: str, *parts: str) -> str:
    return " or ".join(f"contains(@{attr}, '{part}')" for part in parts)


# trafilatura's AUTHOR_XPATHS and AUTHOR_DISCARD_XPATHS (trafilatura.xpaths, FOLLOWED_VERSION)
# with each EXSLT regular expression spelled as the substring tests it stands for: lxml calls
# Python for each re:test, on every element of the page. Same elements, same order
# (tests/extract/test_extract_cost.py compares them with trafilatura's).
_AUTHOR_XPATHS = [
    XPath(
        "//*[self::a or self::address or self::div or self::link or self::p or self::span or "
        "self::strong][@rel='author' or @id='author' or @class='author' or "
        "@itemprop='author name' or rel='me' or @data-testid='AuthorCard' or "
        "@data-testid='AuthorURL' or "
        + _contains("class", "author-name", "authorname", "AuthorName", "authorName")
        + "]|//author"
    ),
    XPath(
        "//*[self::a or self::div or self::h3 or self::h4 or self::p or self::span]["
        "@class='byline' or @class='username' or @class='byl' or @class='BBL' or "
        "contains(@itemprop, 'author') or "
        + _contains("id", "author", "zuozhe", "bianji", "xiaobian")
        + " or "
        + _contains(
            "class",
            *("author", "channel-name", "zuozhe", "bianji", "xiaobian"),
            *("submitted-by", "posted-by", "journalist-name"),
        )
        + "]"
    ),
    XPath(
        "//*[contains(@data-component, 'Byline') or contains(@itemprop, 'author') or "
        + _contains("id", "Author", "author")
        + " or "
        + _contains("class", "Author", "author", "screenname", "writer", "Byline", "byline")
        + "]"
    ),
]
_AUTHOR_DISCARD_XPATHS = [
    XPath(
        ".//*[self::a or self::div or self::section or self::span]["
        "@id='comments' or @class='comments' or @class='title' or @class='date' or "
        "starts-with(@id, 'comments') or "
        + _contains("id", "commentlist", "comment-list", "ProductReviews")
        + " or starts-with(@class, 'Comments') or starts-with(@class, 'comments') or "
        + _contains(
            "class",
            *("commentlist", "comments-list", "sidebar", "is-hidden", "quote"),
            *("embedly-instagram", "article-share", "article-support", "print", "category"),
            *("meta-date", "meta-reviewer"),
        )
        + " or contains(@data-component, 'Figure')]"
    ),
    XPath("//time|//figure"),
]
# What any of them needs to match (a superset): their tests read only an element's own name and
# attributes (and a child <rel>'s text), and the search only removes elements before them, so a
# page without any of these has no author to find, and its copy and pruning can be skipped. Each
# attribute's values are read in one XPath and searched as one string (joined by NUL, which no
# attribute holds): an XPath testing every element's attributes costs ten times as much.
_GATE_ATTRS = ("class", "id", "rel", "data-testid", "itemprop", "data-component")
_ATTR_VALUES = {name: XPath(f"//@{name}", smart_strings=False) for name in _GATE_ATTRS}
_GATE_CLASS_PARTS = ("uthor", "channel-name", "zuozhe", "bianji", "xiaobian", "submitted-by")
_GATE_CLASS_PARTS += ("posted-by", "journalist-name", "screenname", "writer", "yline")
_GATE_CLASSES = ("\0username\0", "\0byl\0", "\0BBL\0")
_GATE_ID_PARTS = ("uthor", "zuozhe", "bianji", "xiaobian")


def _may_have_author(tree) -> bool:
    """Whether the page has an <author> or <rel> element, or an element with rel=author,
    data-testid AuthorCard or AuthorURL, itemprop containing 'author', data-component containing
    'Byline', class username, byl or BBL, or one of the id and class parts above."""
    if next(tree.iter("author", "rel"), None) is not None:
        return True
    v = {name: "\0" + "\0".join(xpath(tree)) + "\0" for name, xpath in _ATTR_VALUES.items()}
    return (
        "\0author\0" in v["rel"]
        or "\0AuthorCard\0" in v["data-testid"]
        or "\0AuthorURL\0" in v["data-testid"]
        or "author" in v["itemprop"]
        or "Byline" in v["data-component"]
        or any(x in v["class"] for x in _GATE_CLASSES)
        or any(x in v["id"] for x in _GATE_ID_PARTS)
        or any(x in v["class"] for x in _GATE_CLASS_PARTS)
    )


def _author(tree) -> str | None:
    """trafilatura's extract_author(tree), with its XPaths spelled without regexes."""
    if not SHARED:
        return extract_author(tree)
    if not _may_have_author(tree):
        return None
    subtree = prune_unwanted_nodes(deepcopy(tree), _AUTHOR_DISCARD_XPATHS)
    author = extract_metainfo(subtree, _AUTHOR_XPATHS, len_limit=120)
    return normalize_authors(None, author) if author else None


_JSON_LD = XPath('.//script[@type="application/ld+json" or @type="application/settings+json"]')
_JSON_FIELDS = ("title", "sitename")  # JSON-LD authors are unescaped by normalize_authors
_MAX_CHARS = 10000


def _json_ld(tree, metadata: Document) -> set[str]:
    """trafilatura's extract_meta_json(tree, metadata), in place (a bug in its reader costs the
    fields of the rest of the JSON-LD only, as in trafilatura); the fields whose value comes
    from a JSON text still HTML-escaped: normalize_json unescapes only a text with a
    backslash (an escaped "/" or a "\\u" escape), and the parser leaves a <script>'s text raw."""
    raw: set[str] = set()
    for elem in _JSON_LD(tree):
        if not elem.text:
            continue
        before = {name: getattr(metadata, name) for name in _JSON_FIELDS}
        text = JSON_MINIFY.sub(r"\1", elem.text)
        failed = False
        try:
            element_text = normalize_json(text)
            try:
                schema = json.loads(element_text, strict=False)
                extract_json(schema, metadata)
            except json.JSONDecodeError:
                extract_json_parse_error(element_text, metadata)
        except Exception:
            failed = True
        changed = {name for name in _JSON_FIELDS if getattr(metadata, name) != before[name]}
        raw = (raw - changed) if "\\" in text else (raw | changed)
        if failed:
            break
    return raw


def _clean_and_trim(metadata: Document, raw: set[str]) -> None:
    """Document.clean_and_trim without decoding the values again: each string value cut to
    `_MAX_CHARS`, its control characters removed and its spaces trimmed (None when nothing is
    left); a field of `raw` (JSON-LD text still escaped) is HTML-unescaped first, once."""
    for name in metadata.__slots__:
        value = getattr(metadata, name, None)
        if not isinstance(value, str):
            continue
        if len(value) > _MAX_CHARS:
            value = value[: _MAX_CHARS - 1] + "…"
        if name in raw:
            value = unescape(value)
        value = trim(LINES_TRIMMING.sub(" ", remove_control_characters(value)))
        setattr(metadata, name, value or None)


def page_metadata(tree, url: str | None) -> Document:
    """Title, author, date and sitename of a parsed page (trafilatura's values, but entities
    decoded once: `_clean_and_trim`); the tree is left as it was."""
    from htmldate import find_date

    metadata = examine_meta(tree)
    if metadata.author and " " not in metadata.author:
        metadata.author = None
    raw = _json_ld(tree, metadata)
    if not metadata.title:
        metadata.title = extract_title(tree)
    if not metadata.author:
        metadata.author = _author(tree)
    if not metadata.url:
        metadata.url = extract_url(tree, url)
    if metadata.url:
        metadata.hostname = extract_domain(metadata.url, fast=True)
    # Dates from the page's markup (meta, JSON-LD, <time>, URL), not htmldate's extensive search
    # of the free text: that search took 3/4 of the extraction time on real pages.
    date_config = {**set_date_params(extensive=False), "url": metadata.url}
    metadata.date = find_date(tree, **date_config)
    if not metadata.sitename:
        metadata.sitename = extract_sitename(tree)
    if metadata.sitename:
        metadata.sitename = metadata.sitename.lstrip("@")
        if (
            metadata.sitename
            and "." not in metadata.sitename
            and not metadata.sitename[0].isupper()
        ):
            metadata.sitename = metadata.sitename.title()
    elif metadata.url:
        match = META_URL.match(metadata.url)
        if match:
            metadata.sitename = match[1]
    metadata.filedate = date_config.get("max_date")
    _clean_and_trim(metadata, raw)
    return metadata
