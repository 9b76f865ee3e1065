"""URL canonicalisation: one document, one frontier key."""

from __future__ import annotations

import pytest

from crawlers.crawl.canon import UrlError, canonicalize


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("HTTP://Example.COM:80/a", "http://example.com/a"),
        ("https://example.com:443/", "https://example.com/"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com/a/b#frag", "http://example.com/a/b"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/../../x", "http://example.com/x"),
        ("http://example.com/p?b=2&a=1", "http://example.com/p?a=1&b=2"),
        (
            "http://example.com/p?utm_source=x&id=3&utm_medium=y&fbclid=z",
            "http://example.com/p?id=3",
        ),
        ("http://example.com/p?PHPSESSID=abc&q=1", "http://example.com/p?q=1"),
        ("http://example.com/p;jsessionid=ABC123?x=1", "http://example.com/p?x=1"),
        ("http://example.com/%7euser/%2fa%20b", "http://example.com/~user/%2Fa%20b"),
        ("http://example.com/caf\u00e9", "http://example.com/caf%C3%A9"),
        ("http://example.com/p?q=a+b", "http://example.com/p?q=a%20b"),
        ("http://example.com/100%", "http://example.com/100%25"),
        ("http://b\u00fccher.example/", "http://xn--bcher-kva.example/"),
        ("http://[::1]:8080/a", "http://[::1]:8080/a"),
        ("http://example.com./a", "http://example.com/a"),
    ],
)
def test_canonical_forms(raw, canonical):
    assert canonicalize(raw) == canonical


def test_relative_links_resolve_against_base():
    assert (
        canonicalize("../c?b=1&a=2#x", "http://h.example/a/b/page")
        == "http://h.example/a/c?a=2&b=1"
    )


def test_canonicalisation_is_idempotent():
    url = canonicalize("HTTP://Ex.com:80/a/../%7Eb/c%2f?z=1&utm_x=2&a=%41")
    assert canonicalize(url) == url


@pytest.mark.parametrize(
    "bad", ["ftp://example.com/", "mailto:a@b.c", "http:///nohost", "http://h:99999/"]
)
def test_unusable_urls_raise_a_clear_error(bad):
    with pytest.raises(UrlError):
        canonicalize(bad)
