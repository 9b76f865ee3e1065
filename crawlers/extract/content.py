"""Main content with trafilatura: plain text, Markdown, metadata and the interleaved text/image form."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from urllib.parse import urljoin

from lxml import html as lxml_html
from trafilatura import bare_extraction
from trafilatura.core import normalize_unicode, xmltotxt

_TEXT_TAGS = {"p", "head", "list", "quote", "code", "table", "item"}
SHORT_PAGE_CHARS = 600  # below this, a balanced extraction is retried in precision mode
_SURROUND_CHARS = 300  # text kept on each side of an image, enough for a caption-like context
# Plain-ASCII marker: trafilatura's sanitiser strips control and private-use characters.
_MARK = "@@refinery-image@@"


@dataclass
class Content:
    """What trafilatura found in one page."""

    text: str
    markdown: str
    title: str | None
    author: str | None
    date: str | None
    sitename: str | None
    canonical_url: str | None
    lang_hint: str | None
    blocks: list[dict] = field(default_factory=list)


def _meta(tree, xpath: str) -> str | None:
    hits = tree.xpath(xpath)
    for hit in hits:
        value = (hit if isinstance(hit, str) else hit.text_content()).strip()
        if value:
            return value
    return None


def page_lang_hint(tree) -> str | None:
    """Language the page declares (<html lang>, Content-Language, og:locale), normalised to a base code."""
    raw = _meta(
        tree,
        "/html/@lang | //meta[translate(@http-equiv,'CONTENT-LANGUAGE','content-language')"
        "='content-language']/@content | //meta[@property='og:locale']/@content",
    )
    if not raw:
        return None
    return raw.replace("_", "-").split("-")[0].split(",")[0].strip().lower() or None


def canonical_url(tree, base_url: str) -> str | None:
    """Absolute <link rel=canonical> of the page, if it declares one."""
    href = _meta(
        tree, "//link[contains(concat(' ', normalize-space(@rel), ' '), ' canonical ')]/@href"
    )
    return urljoin(base_url, href) if href else None


def _block_text(el) -> str:
    return " ".join(xmltotxt(copy.deepcopy(el), include_formatting=False).split())


def _without_images(el):
    el = copy.deepcopy(el)
    for g in el.findall(".//graphic"):
        _replace_with_text(g, "")
    return el


def _replace_with_text(el, text: str) -> None:
    # Removing an lxml element drops its tail; move text + tail into the previous sibling or parent.
    insert = text + (el.tail or "")
    prev, parent = el.getprevious(), el.getparent()
    if prev is not None:
        prev.tail = (prev.tail or "") + insert
    else:
        parent.text = (parent.text or "") + insert
    parent.remove(el)


def _split_at_images(el, base_url: str) -> list[dict]:
    el = copy.deepcopy(el)
    images = el.findall(".//graphic")
    for i, g in enumerate(images):
        _replace_with_text(g, f" {_MARK}{i}{_MARK} ")
    parts: list[dict] = []
    for j, chunk in enumerate(_block_text(el).split(_MARK)):
        if j % 2 == 0:
            parts.append({"kind": "text", "text": chunk.strip(), "src": None, "alt": None})
        else:
            g = images[int(chunk)]
            if g.get("src"):
                src = urljoin(base_url, g.get("src"))
                parts.append({"kind": "image", "text": None, "src": src, "alt": g.get("alt") or ""})
    return parts


def interleave(body, base_url: str) -> list[dict]:
    """Walk trafilatura's body in order: text blocks and image references (src made absolute)."""
    blocks: list[dict] = []

    def visit(el) -> None:
        if el.tag == "graphic":
            src = el.get("src")
            if src:
                blocks.append(
                    {
                        "kind": "image",
                        "text": None,
                        "src": urljoin(base_url, src),
                        "alt": el.get("alt") or "",
                    }
                )
            return
        images = el.findall(".//graphic")
        if el.tag in _TEXT_TAGS and not images:
            text = _block_text(el)
            if text:
                blocks.append({"kind": "text", "text": text, "src": None, "alt": None})
            return
        if el.tag in _TEXT_TAGS:
            # A block holding images: split its text at each image so order is kept.
            for part in _split_at_images(el, base_url):
                if part["kind"] == "image" or part["text"]:
                    blocks.append(part)
            return
        for child in el:
            visit(child)

    if body is not None:
        for child in body:
            visit(child)
    return blocks


def image_refs(blocks: list[dict]) -> list[dict]:
    """Image references with the nearest text before and after them (caption-like context)."""
    refs = []
    for i, block in enumerate(blocks):
        if block["kind"] != "image":
            continue
        before = next((b["text"] for b in reversed(blocks[:i]) if b["kind"] == "text"), "")
        after = next((b["text"] for b in blocks[i + 1 :] if b["kind"] == "text"), "")
        surrounding = (before[-_SURROUND_CHARS:] + " " + after[:_SURROUND_CHARS]).strip()
        refs.append(
            {
                "position": i,
                "src": block["src"],
                "alt": block["alt"],
                "surrounding_text": surrounding,
            }
        )
    return refs


def _run_trafilatura(tree, url: str, favor: str, with_metadata: bool = True):
    return bare_extraction(
        copy.deepcopy(tree),
        url=url,
        with_metadata=with_metadata,
        include_images=True,
        include_tables=True,
        include_formatting=True,
        include_comments=True,
        favor_precision=favor == "precision",
        favor_recall=favor == "recall",
    )


def _plain(doc) -> str:
    bodies = [b for b in (doc.body, doc.commentsbody) if b is not None and len(b)]
    return "\n".join(xmltotxt(_without_images(b), include_formatting=False) for b in bodies).strip()


def extract_content(html: str, url: str, *, favor: str = "balanced") -> Content | None:
    """Run trafilatura and derive every output from its XML tree; None if it finds no content."""
    tree = lxml_html.fromstring(html)
    doc = _run_trafilatura(tree, url, favor)
    if favor == "balanced" and (doc is None or len(_plain(doc)) < SHORT_PAGE_CHARS):
        # On short pages trafilatura's balanced mode falls back to a baseline that keeps the
        # navigation and drops images; precision mode usually finds the real main block.
        precise = _run_trafilatura(tree, url, "precision", with_metadata=doc is None)
        if precise is not None and precise.body is not None and _plain(precise):
            if doc is not None:  # metadata does not depend on the mode: keep the first run's
                precise.title, precise.author, precise.date = doc.title, doc.author, doc.date
                precise.sitename = doc.sitename
            doc = precise
    if doc is None or doc.body is None:
        return None
    bodies = [b for b in (doc.body, doc.commentsbody) if b is not None and len(b)]
    # Plain text leaves images out; Markdown keeps them as ![alt](src) in place.
    text = _plain(doc)
    markdown = "\n\n".join(
        xmltotxt(copy.deepcopy(b), include_formatting=True) for b in bodies
    ).strip()
    if not text:
        return None
    blocks = [blk for b in bodies for blk in interleave(b, url)]
    return Content(
        text=normalize_unicode(text),
        markdown=normalize_unicode(markdown),
        title=doc.title,
        author=doc.author,
        date=doc.date,
        sitename=doc.sitename,
        canonical_url=canonical_url(tree, url),
        lang_hint=page_lang_hint(tree),
        blocks=blocks,
    )
