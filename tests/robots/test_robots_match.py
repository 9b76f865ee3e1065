"""Matching primitives: Google's path extraction and escaping tests, RFC 9309 normalisation."""

from __future__ import annotations

import pytest

from crawlers.robots_match import (
    normalize_path,
    normalize_pattern,
    path_params_query,
    pattern_matches,
)


@pytest.mark.parametrize(
    ("url", "path"),
    [  # Google robots_test.cc TestGetPathParamsQuery
        ("", "/"),
        ("http://www.example.com", "/"),
        ("http://www.example.com/", "/"),
        ("http://www.example.com/a", "/a"),
        ("http://www.example.com/a/", "/a/"),
        ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
        ("http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
        ("example.com", "/"),
        ("example.com/", "/"),
        ("example.com/a", "/a"),
        ("example.com/a/", "/a/"),
        ("example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
        ("a", "/"),
        ("a/", "/"),
        ("/a", "/a"),
        ("a/b", "/b"),
        ("example.com?a", "/?a"),
        ("example.com/a;b#c", "/a;b"),
        ("//a/b/c", "/b/c"),
    ],
)
def test_path_params_query_matches_googles_extraction(url: str, path: str) -> None:
    assert path_params_query(url) == path


@pytest.mark.parametrize(
    ("pattern", "normalised"),
    [  # Google TestMaybeEscapePattern, then the RFC 9309 §2.2.2 table
        ("http://www.example.com", "http://www.example.com"),
        ("/a/b/c", "/a/b/c"),
        ("á", "%C3%A1"),
        ("%aa", "%AA"),
        ("/foo/bar?baz=https%3A%2F%2Ffoo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar"),
        ("/foo/bar/ツ", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%62%61%7A", "/foo/bar/baz"),  # unreserved escapes decoded (RFC 9309)
        ("/%7ejoe/%2f%3d", "/~joe/%2F%3D"),  # reserved escapes stay escapes
        ("/a$b$", "/a%24b$"),
        ("/*.gif$", "/*.gif$"),
        ("/100%", "/100%"),
        ("/a b", "/a%20b"),  # a character no URI carries raw is compared escaped
        ("/a%2fb\xe9", "/a%2Fb%C3%A9"),
    ],
)
def test_normalize_pattern(pattern: str, normalised: str) -> None:
    assert normalize_pattern(pattern) == normalised


@pytest.mark.parametrize(
    ("path", "normalised"),
    [
        ("/foo/bar/ツ", "/foo/bar/ツ"),  # compared as given: callers pass encoded URLs
        ("/a%2fb", "/a%2Fb"),
        ("/%7Euser", "/~user"),
        ("/%41%2d%5F%2E", "/A-_."),
        ("/a b\t<x>", "/a%20b%09%3Cx%3E"),
        ("/file-with-a-*.html", "/file-with-a-%2A.html"),
        ("/foo-$", "/foo-%24"),
        ("/plain/path?q=1", "/plain/path?q=1"),
    ],
)
def test_normalize_path(path: str, normalised: str) -> None:
    assert normalize_path(path) == normalised


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("/", "/anything", True),
        ("/fish", "/fish.html", True),
        ("/fish", "/Fish", False),
        ("/fish$", "/fish", True),
        ("/fish$", "/fish/", False),
        ("/*.php$", "/a/b.php", True),
        ("/*.php$", "/a/b.php?x", False),
        ("/*a*a$", "/aa", True),
        ("/*a*a$", "/a", False),
        ("*", "/", True),
        ("/a**b", "/ab", True),
        ("/x*$", "/x", True),
        ("/x/*/y", "/x//y", True),
        ("/x/*/y", "/x/y", False),
    ],
)
def test_pattern_matches(pattern: str, path: str, matches: bool) -> None:
    assert pattern_matches(pattern, path) is matches
