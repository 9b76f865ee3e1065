"""Optional LLM extraction for domain-specific pages: a teacher model turns cleaned HTML into Markdown."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from lxml import html as lxml_html
from lxml_html_clean import Cleaner

from crawlers.extract.decode import drop_controls

SYSTEM_PROMPT = (
    "You extract the main content of a web page. Answer with that content only, as Markdown: "
    "keep headings, lists and tables (as Markdown tables), drop navigation, ads, footers and "
    "cookie notices. Do not add commentary."
)
_CLEANER = Cleaner(scripts=True, javascript=True, style=True, comments=True, forms=True, meta=True)
_MD_SYNTAX = re.compile(
    r"^\s{0,3}(#{1,6}\s+|[-*+]\s+|\d+\.\s+|>\s?)|[*_`]|!?\[([^\]]*)\]\([^)]*\)", re.M
)


class NotSent(ValueError):
    """The page may not go to a teacher (the consent rule refused it); nothing was sent."""


class LLMExtractor:
    """Send pages of selected hosts to a teacher (`common.teacher.TeacherClient`-like `.chat`).

    Only a page the one consent rule allows is sent (common.consent: its `training_allowed` is
    the boolean true, no `noai`, and `consent`, the lake's ledger, has not opted it out); the
    page goes to the client as its `items=` too, so a TeacherClient refuses it as well."""

    def __init__(
        self,
        client,
        hosts: Iterable[str],
        *,
        max_input_chars: int = 24_000,
        consent: Any = None,
    ):
        from common.consent import NO_LEDGER

        self.client = client
        self.consent = consent or NO_LEDGER
        self.hosts = {h.lower() for h in hosts}
        if not self.hosts:
            raise ValueError(
                "LLMExtractor needs at least one host to apply to (e.g. docs.example.org)"
            )
        self.max_input_chars = max_input_chars

    def applies_to(self, url: str) -> bool:
        """True if the page's host is one the LLM path is configured for."""
        return (urlsplit(url).hostname or "").lower() in self.hosts

    def prompt(self, html: str, url: str) -> list[dict[str, str]]:
        """Chat messages for one page: cleaned, truncated HTML and its URL."""
        cleaned = lxml_html.tostring(
            _CLEANER.clean_html(lxml_html.fromstring(html)), encoding="unicode"
        )
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"URL: {url}\n\nHTML:\n{cleaned[: self.max_input_chars]}"},
        ]

    @staticmethod
    def item(record: Mapping[str, Any], doc_id: str | None = None) -> dict[str, Any]:
        """What the consent rule reads of a crawl record: its id, URL and consent flag (false
        when the page said `noai`)."""
        flag = record.get("training_allowed")
        return {
            "id": doc_id,
            "url": record.get("url"),
            "training_allowed": False if record.get("noai") else flag,
        }

    def extract(self, html: str, url: str, item: Mapping[str, Any] | None = None) -> str:
        """The teacher's Markdown for this page (control characters replaced by spaces); raise
        ValueError if it is empty or not valid Unicode (a lone surrogate).

        `item`: the page's consent record (`LLMExtractor.item(record)`); without one the page
        has no consent evidence and is not sent. NotSent names why a page was not sent."""
        item = dict(item) if item is not None else {"url": url}
        why = self.consent.why_not(item)
        if why is not None:
            raise NotSent(f"not sent to the teacher: {why}")
        answer = self.client.chat(self.prompt(html, url), items=[item], temperature=0)
        # Control characters are no text (the page's own are replaced the same way); a lone
        # surrogate is a broken answer, which no Parquet file can hold.
        answer = drop_controls(answer).strip()
        try:
            answer.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"teacher answer for {url} is not valid Unicode ({exc.reason} at character "
                f"{exc.start}); trafilatura's extraction is kept"
            ) from None
        if answer.startswith("```"):
            answer = re.sub(r"^```\w*\n?|\n?```$", "", answer).strip()
        if not answer:
            raise ValueError(f"teacher returned empty content for {url}")
        return answer

    @staticmethod
    def plain_text(markdown: str) -> str:
        """Markdown without its syntax (link text and alt text kept), for the `text` column."""
        return _MD_SYNTAX.sub(lambda m: m.group(2) or "", markdown).strip()
