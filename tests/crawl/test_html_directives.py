"""Robots directives the crawler reads from meta tags and X-Robots-Tag: noai and noimageai are
recorded separately, for our tokens only."""

from __future__ import annotations

import pytest

from crawlers.crawl.html import Directives, apply_x_robots_tag, parse_html

AGENT, TRAINING = "RefineryBot", "RefineryBot-Extended"


def _meta(name: str, content: str) -> Directives:
    body = f'<html><head><meta name="{name}" content="{content}"></head><body>x</body></html>'
    return parse_html(
        body.encode(), "http://a.test/", agent=AGENT, training_agent=TRAINING
    ).directives


@pytest.mark.parametrize(
    "name, content, noai, noimageai",
    [
        ("robots", "noimageai", False, True),
        ("robots", "noai", True, False),
        ("robots", "noai, noimageai", True, True),
        ("RefineryBot-Extended", "noimageai", False, True),
        ("refinerybot", "NoImageAI", False, True),
        ("OtherBot", "noimageai", False, False),
        ("robots", "noindex", False, False),
    ],
)
def test_meta_robots_noimageai(name, content, noai, noimageai):
    d = _meta(name, content)
    assert (d.noai, d.noimageai) == (noai, noimageai)


@pytest.mark.parametrize(
    "values, noai, noimageai",
    [
        (["noimageai"], False, True),
        (["RefineryBot-Extended: noimageai"], False, True),
        (["RefineryBot: noai, noimageai"], True, True),
        (["OtherBot: noimageai"], False, False),
        (["noindex", "OtherBot: noai"], False, False),
    ],
)
def test_x_robots_tag_noimageai(values, noai, noimageai):
    d = Directives()
    apply_x_robots_tag(d, values, AGENT, TRAINING)
    assert (d.noai, d.noimageai) == (noai, noimageai)
    assert not d.nofollow
