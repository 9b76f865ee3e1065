"""Sitemaps, parsed without network or entities: XML (urlset and sitemap index), the text form
(one URL per line), and RSS 2.0, RSS 1.0 (RDF) and Atom feeds; each optionally gzipped."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urljoin

from lxml import etree

from crawlers.crawl.fetcher import decode_body

FEED_ROOTS = ("rss", "RDF", "feed")
RDF_NS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"


@dataclass
class Sitemap:
    """Page URLs and child sitemaps listed by one sitemap document."""

    urls: list[str] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    dropped: int = 0  # entries (<loc>s, items, lines) beyond max_urls, not kept

    def keep(self, target: list[str], url: str, max_urls: int) -> None:
        """Append `url` to `target` while it holds fewer than `max_urls`; count it otherwise."""
        if len(target) < max_urls:
            target.append(url)
        else:
            self.dropped += 1


def parse_sitemap(body: bytes, *, max_urls: int = 50000, max_bytes: int = 50 * 2**20) -> Sitemap:
    """Parse a sitemap, keeping at most `max_urls` page URLs and as many child sitemaps (the rest
    are counted in `dropped`); ValueError names what is wrong with it."""
    if body[:2] == b"\x1f\x8b":  # a .xml.gz served as-is
        try:
            body = decode_body(body, "gzip", max_bytes)
        except (ValueError, gzip.BadGzipFile, zlib.error) as exc:
            raise ValueError(f"bad gzipped sitemap: {exc}") from exc
    if not _looks_like_xml(body):
        return _parse_text(body[:max_bytes], max_urls)
    # No entity resolution or network access: sitemaps are untrusted input (XXE).
    parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True, huge_tree=False)
    try:
        root = etree.fromstring(body, parser)
    except etree.XMLSyntaxError as exc:
        raise ValueError(f"sitemap is not XML: {exc}") from exc
    if root is None:
        raise ValueError("sitemap is empty or not XML")
    out = Sitemap()
    kind = etree.QName(root).localname
    if kind in FEED_ROOTS:
        for url in _feed_links(root):
            out.keep(out.urls, url, max_urls)
        return out
    if kind not in ("urlset", "sitemapindex"):
        raise ValueError(
            f"sitemap root is <{kind}>, expected <urlset>, <sitemapindex>, <rss>, <rdf:RDF> "
            "or <feed>"
        )
    for el in root:
        if not isinstance(el.tag, str):
            continue
        for child in el:
            if isinstance(child.tag, str) and etree.QName(child).localname == "loc" and child.text:
                target = out.sitemaps if kind == "sitemapindex" else out.urls
                out.keep(target, child.text.strip(), max_urls)
    return out


def _looks_like_xml(body: bytes) -> bool:
    """True when the body opens with markup (after a BOM and white space) or a UTF-16 BOM."""
    if body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return True
    return body.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] == b"<"


def _parse_text(body: bytes, max_urls: int) -> Sitemap:
    """The sitemaps.org text form: UTF-8, one absolute http(s) URL per line; other lines are
    ignored, and a body with none is an error."""
    out = Sitemap()
    text = body.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")
    for line in text.splitlines():
        url = line.strip()
        if url.lower().startswith(("http://", "https://")) and not any(c.isspace() for c in url):
            out.keep(out.urls, url, max_urls)
    if not out.urls and not out.dropped:
        raise ValueError(
            "sitemap is empty or not XML, and lists no http(s) URL one per line (text form)"
        )
    return out


def _local(el: etree._Element) -> str:
    return etree.QName(el).localname if isinstance(el.tag, str) else ""


def _feed_links(root: etree._Element) -> Iterator[str]:
    """Item links of a feed: RSS 2.0 <item><link>, RSS 1.0 <item rdf:about> (or its <link>),
    Atom <entry><link href> with rel alternate or none."""
    for el in root.iter():
        name = _local(el)
        if name == "item":
            about = el.get(f"{{{RDF_NS}}}about")
            link = next((c.text for c in el if _local(c) == "link" and c.text), None)
            url = (link or about or "").strip()
        elif name == "entry":
            hrefs = (
                urljoin(c.base or "", c.get("href", "").strip())  # xml:base, where one is set
                for c in el
                if _local(c) == "link" and c.get("rel", "alternate").strip() == "alternate"
            )
            url = next((h for h in hrefs if h), "")
        else:
            continue
        if url:
            yield url
