"""Data model of the sample web: sites, pages and the label schema every page carries."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

SITE_MARKER = "{{site:%s}}"
# What SITE_MARKER leaves in a page body; the server and the exporters substitute base URLs.
MARKER = re.compile(rb"\{\{site:([a-z0-9-]+)\}\}")


def site_link(site: str, path: str) -> str:
    """Absolute link to another site as a template marker; the server substitutes the base URL."""
    return SITE_MARKER % site + path


@dataclass(frozen=True)
class Site:
    """One host of the sample web; it binds 127.0.0.(first_octet + index)."""

    name: str
    index: int
    langs: list[str]
    kind: str
    robots: str = "standard"
    description: str = ""
    crawl_delay: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form for sites.json."""
        return {
            "name": self.name,
            "index": self.index,
            "langs": list(self.langs),
            "kind": self.kind,
            "robots": self.robots,
            "description": self.description,
            "crawl_delay": self.crawl_delay,
        }


@dataclass
class Page:
    """One response of the sample web: status, headers and body, with its ground-truth labels."""

    site: str
    path: str
    status: int
    headers: dict[str, str]
    body: bytes
    content_type: str
    labels: dict[str, Any] = field(default_factory=dict)
    gzip: bool = False


def default_labels(**overrides: Any) -> dict[str, Any]:
    """The full label record with neutral defaults (see docs/schemas.md for each column)."""
    labels: dict[str, Any] = {
        "lang": None,
        "page_type": "other",
        "topic": None,
        "quality": None,
        "is_reference": False,
        "is_content": False,
        "dup_cluster": None,
        "title": None,
        "main_text": "",
        "js_only_text": [],
        "js_mechanism": None,
        "expect_crawl_allowed": True,
        "expect_training_allowed": True,
        "noindex": False,
        "nofollow": False,
        "noai": False,
        "noimageai": False,
        "images": [],
        "tables": [],
        "pii": [],
        "pii_decoys": [],
        "redirect_to": None,
        "resources": [],
    }
    unknown = set(overrides) - set(labels)
    if unknown:
        raise KeyError(f"unknown label field(s) {sorted(unknown)}; add them to default_labels()")
    labels.update(overrides)
    return labels


@dataclass
class SampleWeb:
    """The whole sample web: its sites and every page keyed by (site name, path)."""

    seed: int
    sites: list[Site]
    pages: dict[tuple[str, str], Page]

    def site(self, name: str) -> Site:
        """Look a site up by name; a clear error names the known sites."""
        for site in self.sites:
            if site.name == name:
                return site
        raise KeyError(f"no site {name!r}; known: {', '.join(s.name for s in self.sites)}")

    def content_pages(self) -> list[Page]:
        """Pages that are documents (articles, forums, ...), not robots/sitemaps/images/redirects."""
        return [p for p in self.pages.values() if p.labels.get("is_content")]
