"""Every spelling of an AI-training opt-out is read, in a meta tag and in X-Robots-Tag, by the
crawl (crawlers.crawl.html) and by the image header gate (crawlers.images.consent), the same way:
directives split on commas, semicolons and whitespace, any case; a user-agent scope applies to
that agent only. Pure functions: no network."""

from __future__ import annotations

import pytest

from crawlers.crawl.html import Directives, apply_x_robots_tag, parse_html, scoped_directives
from crawlers.images.consent import HeaderGate, xrt_opt_out

AGENT, TRAINING = "RefineryBot", "RefineryBot-Extended"


def _page(head: str) -> Directives:
    body = f'<html><head><meta charset="utf-8">{head}</head><body><p>text</p></body></html>'
    return parse_html(
        body.encode(), "http://a.test/", agent=AGENT, training_agent=TRAINING
    ).directives


def _xrt(values: list[str]) -> Directives:
    d = Directives()
    apply_x_robots_tag(d, values, AGENT, TRAINING)
    return d


# (meta tags in <head>, noai, noimageai)
META = [
    ('<meta name="robots" content="noai noimageai">', True, True),
    ('<meta name="robots" content="noindex; noai">', True, False),
    ('<meta name="robots" content="NOAI">', True, False),
    ('<meta name="robots" content="noai,noimageai">', True, True),
    ('<meta name="robots" content="  noindex ,\tNoImageAI ">', False, True),
    ('<meta name="ROBOTS" content="noai">', True, False),
    ('<META NAME="Robots" CONTENT="noai">', True, False),
    ('<meta name="robots" content="\uff4e\uff4f\uff41\uff49">', True, False),  # fullwidth
    ('<meta name="robots" content="no\u200bai, noimage\u00adai">', True, True),  # invisible
    ('<meta name="robots" content="noindex"><meta name="robots" content="noai">', True, False),
    ('<meta name="robots" content="noimageai"><meta name="robots" content="noai">', True, True),
    ('<meta name="RefineryBot-Extended" content="noai">', True, False),
    ('<meta name="refinerybot-extended" content="noindex noimageai">', False, True),
    ('<meta name="RefineryBot" content="noai; noimageai">', True, True),
    ('<meta name="googlebot, RefineryBot-Extended" content="noai">', True, False),
    ('<meta http-equiv="X-Robots-Tag" content="noai">', True, False),
    ('<meta http-equiv="x-robots-tag" content="OtherBot: noai">', False, False),
    ('<meta name="OtherBot" content="noai noimageai">', False, False),
    ('<meta name="robots" content="noindex, nofollow">', False, False),
    ('<meta name="robots" content="none">', False, False),
    ('<meta name="description" content="noai">', False, False),
]


@pytest.mark.parametrize(("head", "noai", "noimageai"), META)
def test_meta_robots_spellings(head, noai, noimageai):
    d = _page(head)
    assert (d.noai, d.noimageai) == (noai, noimageai)


def test_meta_none_is_noindex_nofollow():
    d = _page('<meta name="robots" content="None">')
    assert (d.noindex, d.nofollow, d.noai) == (True, True, False)
    d = _page('<meta name="robots" content="noindex;nofollow">')
    assert (d.noindex, d.nofollow) == (True, True)


# (X-Robots-Tag header values, one per header, noai, noimageai)
XRT = [
    (["noai noimageai"], True, True),
    (["noindex; noai"], True, False),
    (["NOAI"], True, False),
    (["noai,noimageai"], True, True),
    (["noindex", "noai"], True, False),  # several headers
    (["noimageai", "noai"], True, True),
    (["otherbot: noai"], False, False),  # scoped to another agent: not ours
    (["OtherBot: noai, noimageai"], False, False),  # the scope lasts to the end of the value
    (["otherbot: noindex", "noai"], True, False),  # a second header without scope: everyone's
    (["noai, otherbot: noimageai"], True, False),  # unscoped first, then another agent's
    (["otherbot: noai", "RefineryBot-Extended: noimageai"], False, True),
    (["refinerybot-extended:noai"], True, False),
    (["RefineryBot: noai; noimageai"], True, True),
    (["otherbot: noindex, RefineryBot-Extended: noai"], True, False),
    (["noai: yes"], True, False),  # a directive word is never a user-agent name
    (["unavailable_after: 25 Jun 2030 15:00:00 PST"], False, False),
    (["max-image-preview: large, noai"], True, False),
    (["unavailable_after: Wednesday, 03-Nov-30 15:00:00 GMT; noimageai"], False, True),
    (["none"], False, False),
    ([""], False, False),
]


@pytest.mark.parametrize(("values", "noai", "noimageai"), XRT)
def test_x_robots_tag_spellings(values, noai, noimageai):
    d = _xrt(values)
    assert (d.noai, d.noimageai) == (noai, noimageai)
    # The image header gate reads them the same way.
    expected = "noai" if noai else "noimageai" if noimageai else None
    assert xrt_opt_out(values, AGENT, TRAINING) == expected


def test_x_robots_tag_scope_limits_crawl_directives():
    assert _xrt(["otherbot: noindex, nofollow"]).nofollow is False
    assert _xrt(["RefineryBot: none"]).nofollow is True
    assert _xrt(["RefineryBot-Extended: nofollow"]).nofollow is False  # training token: noai only
    assert _xrt(["None"]).noindex is True


def test_scoped_directives_shape():
    assert list(scoped_directives("noindex, OtherBot: noai noimageai")) == [
        (None, {"noindex"}),
        ("otherbot", {"noai", "noimageai"}),
    ]


class _Hop:
    def __init__(self, headers, status=200):
        self.response_headers, self.status = headers, status


def test_header_gate_reads_every_x_robots_tag_header():
    gate = HeaderGate(AGENT, TRAINING)
    assert gate(_Hop([("Content-Type", "image/png"), ("X-Robots-Tag", "noindex")])) is None
    refused = gate(_Hop([("X-Robots-Tag", "noindex"), ("x-robots-tag", "noindex; NoAI")]))
    assert refused is not None and refused.startswith("x-robots-tag-noai")
    assert gate(_Hop([("X-Robots-Tag", "otherbot: noai")])) is None


def test_crawl_record_marks_opt_out_spellings_not_allowed():
    """describe_page: a page whose header says 'noindex; noai' is not allowed for training."""
    from crawlers.crawl.config import CrawlConfig
    from crawlers.crawl.fetcher import FetchResult, Hop
    from crawlers.crawl.record import describe_page

    def page(headers, head=""):
        body = f"<html><head>{head}</head><body>x</body></html>".encode()
        hop = Hop(
            url="http://a.test/p",
            status=200,
            response_headers=[("Content-Type", "text/html"), *headers],
            raw_body=body,
        )
        res = FetchResult(
            url="http://a.test/p",
            final_url="http://a.test/p",
            status=200,
            content_type="text/html",
            body=body,
            hops=[hop],
        )
        row = {"url": "http://a.test/p", "attempts": 0, "topic": None}
        cfg = CrawlConfig(agent=AGENT, training_agent=TRAINING)
        return describe_page(row, res, "allowed", "allowed", cfg, lambda t: (None, None)).fields

    assert page([])["training_allowed"] == 1
    f = page([("X-Robots-Tag", "noindex; noai")])
    assert (f["noai"], f["training_allowed"]) == (1, 0)
    f = page([], '<meta name="robots" content="noai noimageai">')
    assert (f["noai"], f["noimageai"], f["training_allowed"]) == (1, 1, 0)
    assert page([("X-Robots-Tag", "otherbot: noai")])["training_allowed"] == 1
