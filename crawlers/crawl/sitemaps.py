"""Sitemaps (urlset and sitemap index, optionally gzipped), parsed without network or entities."""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field

from lxml import etree

from crawlers.crawl.fetcher import decode_body


@dataclass
class Sitemap:
    """Page URLs and child sitemaps listed by one sitemap document."""

    urls: list[str] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    dropped: int = 0  # <loc>s beyond max_urls, not kept


def parse_sitemap(body: bytes, *, max_urls: int = 50000, max_bytes: int = 50 * 2**20) -> Sitemap:
    """Parse a sitemap, keeping at most `max_urls` page URLs and as many child sitemaps (the rest
    are counted in `dropped`); ValueError names what is wrong with it."""
    if body[:2] == b"\x1f\x8b":  # a .xml.gz served as-is
        try:
            body = decode_body(body, "gzip", max_bytes)
        except (ValueError, gzip.BadGzipFile, zlib.error) as exc:
            raise ValueError(f"bad gzipped sitemap: {exc}") from exc
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
    if kind not in ("urlset", "sitemapindex"):
        raise ValueError(f"sitemap root is <{kind}>, expected <urlset> or <sitemapindex>")
    for el in root:
        if not isinstance(el.tag, str):
            continue
        for child in el:
            if isinstance(child.tag, str) and etree.QName(child).localname == "loc" and child.text:
                target = out.sitemaps if kind == "sitemapindex" else out.urls
                if len(target) < max_urls:
                    target.append(child.text.strip())
                else:
                    out.dropped += 1
    return out
