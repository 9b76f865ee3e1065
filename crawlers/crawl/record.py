"""What a fetched page records in the frontier, read off its response alone.

`describe_page` turns a fetch into the page's frontier fields (status, robots directives from
meta tags and X-Robots-Tag, content hash, title, language, topic, redirect target, training
consent) and the links it lets the crawler follow. Persisting them (WARC, frontier, discovered
URLs) is the engine's part.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from crawlers.crawl.canon import UrlError, canonicalize
from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.fetcher import REDIRECT_STATUSES, FetchResult, mime_of
from crawlers.crawl.html import Directives, Link, PageInfo, apply_x_robots_tag, parse_html
from crawlers.crawl.priority import classify_topic, tokens_of
from crawlers.crawl.robots_policy import ALLOWED

HTML_TYPES = ("text/html", "application/xhtml+xml", "")

LangOf = Callable[[str], tuple[str | None, float | None]]


class PageLanguage:
    """(lang, score) of a page's text with lid.176, loaded on first use; (None, None) for blank text."""

    def __init__(self) -> None:
        self._langid = None

    def __call__(self, text: str) -> tuple[str | None, float | None]:
        if not text.strip():
            return None, None
        if self._langid is None:
            from common.langid import LanguageIdentifier

            self._langid = LanguageIdentifier()
        lang, score = self._langid.predict(text)
        return lang, round(score, 4)


@dataclass
class Page:
    """A fetched page as the frontier records it, and what the crawler does next with it."""

    fields: dict[str, Any]  # frontier columns (WARC location and outlinks are the engine's)
    info: PageInfo | None = None  # parsed HTML (None when the response is not an HTML page)
    links: list[Link] = field(default_factory=list)  # outlinks robots directives let it follow
    bad_links: list[tuple[str, str]] = field(default_factory=list)  # (link, why) to record
    topic: str = "other"  # the page's topic, the prior of its links' topic
    lang: str | None = None


def describe_page(
    row: dict[str, Any],
    res: FetchResult,
    crawl: str,
    training: str,
    cfg: CrawlConfig,
    lang_of: LangOf,
) -> Page:
    """The frontier fields of a finished fetch of `row` that robots.txt allowed (`crawl`)."""
    url = row["url"]
    fields: dict[str, Any] = {
        "state": "done",
        "status": res.status,
        "fetched_at": res.fetched_at,
        "final_url": res.final_url,
        "content_type": mime_of(res.content_type) or None,
        "crawl_allowed": 1,
        "robots_crawl": crawl,
        "robots_training": training,
        "error": res.error,
        "attempts": row["attempts"] + 1,
        "elapsed_s": round(res.elapsed_s, 4),
        "noindex": 0,
        "nofollow": 0,
        "noai": 0,
        "noimageai": 0,
        "outlinks": 0,
    }
    page = Page(fields, topic=row["topic"] or "other")
    unread = False  # True when an HTML page's markup could not be read
    if res.hops:
        xrt = [
            v
            for hop in res.hops[-1:]
            for k, v in hop.response_headers
            if k.lower() == "x-robots-tag"
        ]
        if res.ok and mime_of(res.content_type) in HTML_TYPES:
            try:
                page.info = parse_html(
                    res.body, url, agent=cfg.agent, training_agent=cfg.training_agent
                )
            except Exception as exc:  # one page's markup never ends the crawl: recorded, and
                # its meta robots unread, so no consent for training is assumed
                fields["error"] = f"html-parse-error: {type(exc).__name__}: {exc}"[:500]
                unread = True
        d = page.info.directives if page.info else Directives()
        apply_x_robots_tag(d, xrt, cfg.agent, cfg.training_agent)
        fields.update(
            noindex=int(d.noindex),
            nofollow=int(d.nofollow),
            noai=int(d.noai),
            noimageai=int(d.noimageai),
        )
        if res.ok:
            fields.update(
                content_sha256=hashlib.sha256(res.body).hexdigest(), content_length=len(res.body)
            )
        if page.info is not None:
            info = page.info
            page.lang, score = lang_of(info.text)
            page.topic = classify_topic(tokens_of(info.title, info.text[:5000]))[0]
            fields.update(
                title=info.title[:500], lang=page.lang, lang_score=score, page_topic=page.topic
            )
            if not d.nofollow:
                page.links = [lk for lk in info.links if not lk.nofollow]
                page.bad_links = info.bad_links
        if res.status in REDIRECT_STATUSES and res.header("location"):
            try:
                # its raw non-ASCII bytes percent-encoded as they came (`location_of`)
                fields["redirect_to"] = canonicalize(res.location() or "", url)
            except UrlError as exc:
                fields["error"] = f"bad redirect location: {exc}"
    fields["training_allowed"] = int(training == ALLOWED and not fields["noai"] and not unread)
    return page
