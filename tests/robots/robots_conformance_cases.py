"""Conformance table for robots.txt matchers: (id, robots body, agent, url, expected).

Sources: Google's robots_test.cc (ID_* and GoogleOnly_* tests, ported case by case), the
examples of RFC 9309, and Refinery-specific cases (full UA strings, token isolation, status-free
parsing edge cases). Where Refinery deliberately follows RFC 9309 over Google's reference
parser, the case carries ``google`` with Google's answer and ``note`` with the reason.
Also used by bench/robots.py to score peer parsers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    id: str
    robots: bytes
    agent: str
    url: str
    expected: bool
    google: bool | None = None  # Google's answer where it differs on purpose
    note: str = ""


CASES: list[Case] = []


def _add(name: str, robots: str | bytes, checks: list[tuple], note: str = "") -> None:
    body = robots.encode("utf-8") if isinstance(robots, str) else robots
    for i, check in enumerate(checks):
        agent, url, expected = check[:3]
        google = check[3] if len(check) > 3 else None
        CASES.append(Case(f"{name}#{i}", body, agent, url, expected, google, note))


# ---- Google robots_test.cc ------------------------------------------------------------------

_FOO = "user-agent: FooBot\ndisallow: /\n"
_add("google.SystemTest", "", [("FooBot", "", True), ("", "", True)])
_add("google.SystemTest.rules", _FOO, [("", "", True), ("FooBot", "", False)])

_add("google.LineSyntax_Line.correct", _FOO, [("FooBot", "http://foo.bar/x/y", False)])
_add(
    "google.LineSyntax_Line.incorrect",
    "foo: FooBot\nbar: /\n",
    [("FooBot", "http://foo.bar/x/y", True)],
)
_add(
    "google.LineSyntax_Line.no_colon",
    "user-agent FooBot\ndisallow /\n",
    [("FooBot", "http://foo.bar/x/y", False)],
)

_GROUPS = (
    "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\n"
    "disallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\n"
    "allow: /z/\ndisallow: /\n"
)
_add(
    "google.LineSyntax_Groups",
    _GROUPS,
    [
        ("FooBot", "http://foo.bar/x/b", True),
        ("FooBot", "http://foo.bar/z/d", True),
        ("FooBot", "http://foo.bar/y/c", False),
        ("BarBot", "http://foo.bar/y/c", True),
        ("BarBot", "http://foo.bar/w/a", True),
        ("BarBot", "http://foo.bar/z/d", False),
        ("BazBot", "http://foo.bar/z/d", True),
        ("FooBot", "http://foo.bar/foo/bar/", False),
        ("BarBot", "http://foo.bar/foo/bar/", False),
        ("BazBot", "http://foo.bar/foo/bar/", False),
    ],
)
_add(
    "google.Groups_OtherRules.sitemap",
    "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
    [("FooBot", "http://foo.bar/", False), ("BarBot", "http://foo.bar/", False)],
)
_add(
    "google.Groups_OtherRules.unknown",
    "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
    [("FooBot", "http://foo.bar/", False), ("BarBot", "http://foo.bar/", False)],
)

for _name, _body in {
    "upper": "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n",
    "lower": "user-agent: FooBot\nallow: /x/\ndisallow: /\n",
    "camel": "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n",
}.items():
    _add(
        f"google.REPLineNamesCaseInsensitive.{_name}",
        _body,
        [("FooBot", "http://foo.bar/x/y", True), ("FooBot", "http://foo.bar/a/b", False)],
    )

for _name, _ua in {"upper": "FOO BAR", "lower": "foo bar", "camel": "FoO bAr"}.items():
    _add(
        f"google.UserAgentValueCaseInsensitive.{_name}",
        f"User-Agent: {_ua}\nAllow: /x/\nDisallow: /\n",
        [
            ("Foo", "http://foo.bar/x/y", True),
            ("Foo", "http://foo.bar/a/b", False),
            ("foo", "http://foo.bar/x/y", True),
            ("foo", "http://foo.bar/a/b", False),
        ],
    )

_add(
    "google.AcceptUserAgentUpToFirstSpace",
    "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
    [("Foo", "http://foo.bar/x/y", True), ("Foo Bar", "http://foo.bar/x/y", True, False)],
    note="the agent passed in is reduced to its product token ('Foo Bar' -> 'Foo'), so it "
    "matches the 'Foo' group; Google compares the raw string",
)

_add("google.GlobalGroups_Secondary.empty", "", [("FooBot", "http://foo.bar/x/y", True)])
_add(
    "google.GlobalGroups_Secondary.global",
    "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
    [("FooBot", "http://foo.bar/x/y", False), ("BarBot", "http://foo.bar/x/y", True)],
)
_add(
    "google.GlobalGroups_Secondary.only_specific",
    "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n",
    [("QuxBot", "http://foo.bar/x/y", True)],
)

_add(
    "google.AllowDisallow_CaseSensitive.lower",
    "user-agent: FooBot\ndisallow: /x/\n",
    [("FooBot", "http://foo.bar/x/y", False)],
)
_add(
    "google.AllowDisallow_CaseSensitive.upper",
    "user-agent: FooBot\ndisallow: /X/\n",
    [("FooBot", "http://foo.bar/x/y", True)],
)

_PAGE = "http://foo.bar/x/page.html"
_add(
    "google.LongestMatch.1",
    "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n",
    [("FooBot", _PAGE, False)],
)
_add(
    "google.LongestMatch.2",
    "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n",
    [("FooBot", _PAGE, True), ("FooBot", "http://foo.bar/x/", False)],
)
_add(
    "google.LongestMatch.3", "user-agent: FooBot\ndisallow: \nallow: \n", [("FooBot", _PAGE, True)]
)
_add(
    "google.LongestMatch.4",
    "user-agent: FooBot\ndisallow: /\nallow: /\n",
    [("FooBot", _PAGE, True)],
)
_add(
    "google.LongestMatch.5",
    "user-agent: FooBot\ndisallow: /x\nallow: /x/\n",
    [("FooBot", "http://foo.bar/x", False), ("FooBot", "http://foo.bar/x/", True)],
)
_add(
    "google.LongestMatch.6",
    "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n",
    [("FooBot", _PAGE, True)],
)
_add(
    "google.LongestMatch.7",
    "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n",
    [("FooBot", "http://foo.bar/page.html", False), ("FooBot", "http://foo.bar/page", True)],
)
_add(
    "google.LongestMatch.8",
    "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n",
    [("FooBot", _PAGE, True), ("FooBot", "http://foo.bar/x/y.html", False)],
)
_add(
    "google.LongestMatch.9",
    "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
    [("FooBot", "http://foo.bar/x/page", True), ("FooBot", "http://foo.bar/y/page", False)],
)

_add(
    "google.Encoding.query_unencoded",
    "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
    [("FooBot", "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", True)],
)
_RFC_NORMALISE = (
    "RFC 3986 §6.2.2.1: the hex digits of a URL's escapes are compared case-insensitively; "
    "Google compares them as given"
)
_RFC_UNRESERVED = (
    "RFC 9309 §2.2.2: an escaped unreserved character is unencoded before comparison (its own "
    "example: /foo/bar/%62%61%7A matches /foo/bar/baz); Google compares escapes as given"
)
# A URL's non-ASCII bytes are compared as the caller gives them (the crawler's canonicaliser
# encodes them first); the rule's are UTF-8 %-escaped (Google, robots.cc). Escapes of unreserved
# characters are decoded on both sides (RFC 9309 §2.2.2), reserved ones are not.
_add(
    "google.Encoding.utf8_pattern",
    "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n",
    [
        ("FooBot", "http://foo.bar/foo/bar/%E3%83%84", True),
        ("FooBot", "http://foo.bar/foo/bar/ツ", False),
    ],
)
_add(
    "google.Encoding.escaped_pattern",
    "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
    [
        ("FooBot", "http://foo.bar/foo/bar/%E3%83%84", True),
        ("FooBot", "http://foo.bar/foo/bar/ツ", False),
    ],
)
_add(
    "google.Encoding.unreserved_escapes",
    "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
    [
        ("FooBot", "http://foo.bar/foo/bar/baz", True, False),
        ("FooBot", "http://foo.bar/foo/bar/%62%61%7A", True),
    ],
    note=_RFC_UNRESERVED,
)

_add(
    "google.SpecialCharacters.star",
    "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
    [
        ("FooBot", "http://foo.bar/foo/bar/quz", False),
        ("FooBot", "http://foo.bar/foo/quz", True),
        ("FooBot", "http://foo.bar/foo//quz", True),
        ("FooBot", "http://foo.bar/foo/bax/quz", True),
    ],
)
_add(
    "google.SpecialCharacters.dollar",
    "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
    [
        ("FooBot", "http://foo.bar/foo/bar", False),
        ("FooBot", "http://foo.bar/foo/bar/qux", True),
        ("FooBot", "http://foo.bar/foo/bar/", True),
        ("FooBot", "http://foo.bar/foo/bar/baz", True),
    ],
)
_add(
    "google.SpecialCharacters.comment",
    "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
    [("FooBot", "http://foo.bar/foo/bar", True), ("FooBot", "http://foo.bar/foo/quz", False)],
)

_add(
    "google.IndexHTMLisDirectory",
    "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n",
    [
        ("foobot", "http://foo.com/allowed-slash/", True),
        ("foobot", "http://foo.com/allowed-slash/index.htm", False),
        ("foobot", "http://foo.com/allowed-slash/index.html", True),
        ("foobot", "http://foo.com/anyother-url", False),
    ],
)

_MAX_LINE = 2083 * 8
_long = "/x/" + "a" * (_MAX_LINE - 3 - len("disallow: ") + 1 - 3)
_add(
    "google.LineTooLong.disallow",
    f"user-agent: FooBot\ndisallow: {_long}/qux\n",
    [("FooBot", "http://foo.bar/fux", True), ("FooBot", f"http://foo.bar{_long}/fux", False)],
)
_la = "/x/" + "a" * (_MAX_LINE - 3 - len("allow: ") + 1 - 3)
_lb = "/x/" + "b" * (_MAX_LINE - 3 - len("allow: ") + 1 - 3)
_add(
    "google.LineTooLong.allow",
    f"user-agent: FooBot\ndisallow: /\nallow: {_la}/qux\nallow: {_lb}/qux\n",
    [
        ("FooBot", "http://foo.bar/", False),
        ("FooBot", f"http://foo.bar{_la}/qux", True),
        ("FooBot", f"http://foo.bar{_lb}/fux", True),
    ],
)

_fish = [
    (
        "/fish",
        [
            "/fish",
            "/fish.html",
            "/fish/salmon.html",
            "/fishheads",
            "/fishheads/yummy.html",
            "/fish.html?id=anything",
        ],
        ["/bar", "/Fish.asp", "/catfish", "/?id=fish"],
    ),
    (
        "/fish*",
        [
            "/fish",
            "/fish.html",
            "/fish/salmon.html",
            "/fishheads",
            "/fishheads/yummy.html",
            "/fish.html?id=anything",
        ],
        ["/bar", "/Fish.bar", "/catfish", "/?id=fish"],
    ),
    (
        "/fish/",
        ["/fish/", "/fish/salmon", "/fish/?salmon", "/fish/salmon.html", "/fish/?id=anything"],
        ["/bar", "/fish", "/fish.html", "/Fish/Salmon.html"],
    ),
    (
        "/*.php",
        [
            "/filename.php",
            "/folder/filename.php",
            "/folder/filename.php?parameters",
            "//folder/any.php.file.html",
            "/filename.php/",
            "/index?f=filename.php/",
        ],
        ["/bar", "/php/", "/index?php", "/windows.PHP"],
    ),
    (
        "/*.php$",
        ["/filename.php", "/folder/filename.php"],
        [
            "/bar",
            "/filename.php?parameters",
            "/filename.php/",
            "/filename.php5",
            "/php/",
            "/filename?php",
            "/aaaphpaaa",
            "//windows.PHP",
        ],
    ),
    ("/fish*.php", ["/fish.php", "/fishheads/catfish.php?parameters"], ["/bar", "/Fish.PHP"]),
]
for _pattern, _yes, _no in _fish:
    _add(
        f"google.DocumentationChecks.{_pattern}",
        f"user-agent: FooBot\ndisallow: /\nallow: {_pattern}\n",
        [("FooBot", "http://foo.bar" + u, True) for u in _yes]
        + [("FooBot", "http://foo.bar" + u, False) for u in _no],
    )
_add(
    "google.DocumentationChecks.order1",
    "user-agent: FooBot\nallow: /p\ndisallow: /\n",
    [("FooBot", "http://example.com/page", True)],
)
_add(
    "google.DocumentationChecks.order2",
    "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n",
    [("FooBot", "http://example.com/folder/page", True)],
)
_add(
    "google.DocumentationChecks.order3",
    "user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n",
    [("FooBot", "http://example.com/page.htm", False)],
)
_add(
    "google.DocumentationChecks.order4",
    "user-agent: FooBot\nallow: /$\ndisallow: /\n",
    [("FooBot", "http://example.com/", True), ("FooBot", "http://example.com/page.html", False)],
)

_ENDINGS = {"unix": "\n", "dos": "\r\n", "mac": "\r"}
for _name, _eol in _ENDINGS.items():
    _body = _eol.join(
        ["User-Agent: foo", "Allow: /some/path", "User-Agent: bar", "", "", "Disallow: /", ""]
    )
    _add(
        f"google.LineEndings.{_name}",
        _body,
        [
            ("bar", "http://foo.bar/x", False),
            ("foo", "http://foo.bar/x", True),
            ("baz", "http://foo.bar/x", True),
        ],
    )
_add(
    "google.LineEndings.mixed",
    "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
    [("bar", "http://foo.bar/x", False), ("foo", "http://foo.bar/x", True)],
)
_add(
    "google.LineEndings.no_final_newline",
    "User-Agent: foo\nDisallow: /",
    [("foo", "http://foo.bar/x", False)],
)

for _name, _bom in {"full": b"\xef\xbb\xbf", "partial2": b"\xef\xbb", "partial1": b"\xef"}.items():
    _add(
        f"google.BOM.{_name}",
        _bom + b"User-Agent: foo\nDisallow: /AnyValue\n",
        [("foo", "/AnyValue", False)],
    )
_add(
    "google.BOM.broken",
    b"\xef\x11\xbfUser-Agent: foo\nDisallow: /AnyValue\n",
    [("foo", "/AnyValue", True)],
)
_add(
    "google.BOM.middle",
    b"User-Agent: foo\n\xef\xbb\xbfDisallow: /AnyValue\n",
    [("foo", "/AnyValue", True)],
)

# ---- RFC 9309 ---------------------------------------------------------------------------------

_RFC_EXAMPLE = (
    "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n"
    "User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n"
    "User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\nUser-Agent: quxbot\n\nEOF\n"
)
_add(
    "rfc.5.1",
    _RFC_EXAMPLE,
    [
        ("foobot", "https://www.example.com/example/page.html", True),
        ("foobot", "https://www.example.com/example/allowed.gif", True),
        ("foobot", "https://www.example.com/example/other", False),
        ("foobot", "https://www.example.com/", False),
        ("barbot", "https://www.example.com/example/page.html", False),
        ("bazbot", "https://www.example.com/example/page.html", False),
        ("barbot", "https://www.example.com/example/other", True),
        ("bazbot", "https://www.example.com/a.gif", True),
        ("quxbot", "https://www.example.com/example/page.html", True),
        ("quxbot", "https://www.example.com/a.gif", True),
        ("otherbot", "https://www.example.com/a.gif", False),
        ("otherbot", "https://www.example.com/a.gif?x=1", True),
        ("otherbot", "https://www.example.com/example/x", False),
        ("otherbot", "https://www.example.com/publications/x", True),
        ("otherbot", "https://www.example.com/", True),
    ],
)
_add(
    "rfc.5.2.longest_match",
    "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n",
    [
        ("foobot", "https://www.example.com/example/page/disallowed.gif", False),
        ("foobot", "https://www.example.com/example/page/", True),
        ("foobot", "https://www.example.com/example/page/other.gif", True),
    ],
)
_add(
    "rfc.2.2.1.merge",
    "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n",
    [
        ("ExampleBot", "/foo", False),
        ("ExampleBot", "/bar", False),
        ("ExampleBot", "/baz", False),
        ("ExampleBot", "/qux", True),
        ("examplebot", "/baz", False),
    ],
)
_add(
    "rfc.2.2.3.comment",
    "user-agent: a\nallow: / # comment in line\n# comment on its own line\ndisallow: /\n",
    [("a", "/x", True)],
)
_add(
    "rfc.2.2.3.dollar",
    "user-agent: a\ndisallow: /\nallow: /this/path/exactly$\n",
    [("a", "/this/path/exactly", True), ("a", "/this/path/exactly/", False)],
)
_add(
    "rfc.2.2.3.star",
    "user-agent: a\ndisallow: /\nallow: /this/*/exactly\n",
    [("a", "/this/one/exactly", True), ("a", "/this/exactly", False)],
)
_add(
    "rfc.2.2.3.escaped_star",
    "user-agent: a\ndisallow: /path/file-with-a-%2A.html\n",
    [
        ("a", "https://www.example.com/path/file-with-a-*.html", False, True),
        ("a", "https://www.example.com/path/file-with-a-%2A.html", False),
        ("a", "https://www.example.com/path/file-with-a-x.html", True),
    ],
    note="RFC 9309 §2.2.3: a %2A pattern matches a literal '*' in the URI",
)
_add(
    "rfc.2.2.3.escaped_dollar",
    "user-agent: a\ndisallow: /path/foo-%24\n",
    [
        ("a", "https://www.example.com/path/foo-$", False, True),
        ("a", "https://www.example.com/path/foo-", True),
    ],
    note="RFC 9309 §2.2.3: a %24 pattern matches a literal '$' in the URI",
)
_add(
    "rfc.2.2.2.encoded_query",
    "user-agent: a\ndisallow: /foo/bar?baz=https%3A%2F%2Ffoo.bar\n",
    [
        ("a", "/foo/bar?baz=https%3A%2F%2Ffoo.bar", False),
        ("a", "/foo/bar?baz=https%3a%2f%2ffoo.bar", False, True),
        ("a", "/foo/bar?baz=https://foo.bar", True),
    ],
    note=_RFC_NORMALISE,
)
_add(
    "rfc.2.2.2.robots_txt_allowed",
    "user-agent: *\ndisallow: /\n",
    [
        ("a", "/robots.txt", True, False),
        ("a", "http://h/robots.txt", True, False),
        ("a", "/robots.txt.bak", False),
    ],
    note="RFC 9309 §2.2.2: /robots.txt is implicitly allowed",
)
_add(
    "rfc.2.2.1.star_fallback_only_when_no_group",
    "user-agent: *\ndisallow: /\nuser-agent: a\nallow: /x\n",
    [("a", "/y", True), ("b", "/y", False)],
)
_add(
    "rfc.2.2.1.empty_disallow", "user-agent: *\ndisallow:\n", [("a", "/", True), ("a", "/x", True)]
)

# ---- Google robotstxt-spec-test (the independent suite; all of it: spec_suite_cases.py) --------
# The standard cases Refinery failed before following Google on URL encoding and product tokens.

_ROBOTS_TXT_RFC = "RFC 9309 §2.2.2: /robots.txt is implicitly allowed; the suite follows Google"
_add(
    "spec.stress.369883",
    "User-agent: *\n<br />\nAllow: /\n<br />\nUser-agent: BarBot\n<br />\nDisallow: /\n<br />\n"
    "User-agent: AB42bot\n<br />\nDisallow: /\n<br />\nsitemap: http://example.com/sitemap.xml\n",
    [
        ("foobot", "http://example.com/", True),
        ("BarBot", "http://example.com/foo/bar/baz", False),
        ("BarBot", "http://example.com/robots.txt", True, False),
        ("AB42bot", "http://example.com/foo/bar", True),
        ("AB42bot", "http://example.com/", True),
        ("AB", "http://example.com/", False),
        ("AB", "http://example.com/robots.txt", True, False),
    ],
    note=_ROBOTS_TXT_RFC,
)
_add(
    "spec.stress.860237",
    "User-Agent: *\nCrawl-delay : 60\nDisallow : /*baz*\nDisallow : /*qux*\n\n"
    "User-agent: XYZ123bot\nCrawl-delay : 60\nDisallow: /\n\n",
    [
        ("foo_bot", "http://example.com/new_baz", False),
        ("XYZ123bot", "http://example.com/foo", True),
        ("XYZ", "http://example.com/foo", False),
        ("XYZ", "http://example.com/robots.txt", True, False),
    ],
    note=_ROBOTS_TXT_RFC,
)

# ---- Refinery: agents, tokens, robustness -----------------------------------------------------

_ISO = "User-agent: RefineryBot\nDisallow: /a\nUser-agent: RefineryBot-Extended\nDisallow: /b\nUser-agent: *\nDisallow: /c\n"
_FULL = "Mozilla/5.0 (compatible; RefineryBot/1.0; +http://example.invalid/bot)"
_add(
    "refinery.token_isolation",
    _ISO,
    [
        ("RefineryBot", "/a", False),
        ("RefineryBot", "/b", True),
        ("RefineryBot", "/c", True),
        ("RefineryBot-Extended", "/a", True, True),
        ("RefineryBot-Extended", "/b", False),
        ("RefineryBot-Extended", "/c", True),
        ("Refinery", "/c", False),
        ("Refinery", "/a", True),
        (_FULL, "/a", False, True),
        (_FULL, "/b", True),
        ("refinerybot/2.0", "/a", False, True),
        ("Mozilla/5.0 (compatible; RefineryBot-Extended/1.0)", "/b", False, True),
    ],
    note="full user-agent strings are reduced to their product token",
)
_add(
    "refinery.no_substring_match",
    "User-agent: RefineryBot\nDisallow: /\n",
    [("RefineryBot-Extended", "/x", True), ("Refinery", "/x", True), ("XRefineryBot", "/x", True)],
)
_add(
    "refinery.no_substring_match_reverse",
    "User-agent: RefineryBot-Extended\nDisallow: /\n",
    [("RefineryBot", "/x", True), ("RefineryBot-Extended", "/x", False)],
)
for _key in ["dissallow", "dissalow", "disalow", "diaslow", "diasllow", "disallaw", "DisAllow"]:
    _add(f"refinery.typo.{_key}", f"user-agent: a\n{_key}: /x\n", [("a", "/x/y", False)])
for _key in ["useragent", "user agent", "User-Agent"]:
    _add(f"refinery.typo.{_key}", f"{_key}: a\ndisallow: /x\n", [("a", "/x/y", False)])
_add(
    "refinery.no_colon_multiple_spaces", "user-agent    a\ndisallow \t /x\n", [("a", "/x/y", False)]
)
_add(
    "refinery.no_colon_three_words_ignored", "user-agent: a\ndisallow /x /y\n", [("a", "/x", True)]
)
_add("refinery.whitespace", "   User-agent :   a   \n\t Disallow\t:\t/x\t\n", [("a", "/x", False)])
_add("refinery.star_with_comment", "User-agent: * # everyone\nDisallow: /x\n", [("a", "/x", False)])
_add("refinery.star_then_words", "User-agent: * all bots\nDisallow: /x\n", [("a", "/x", False)])
_add("refinery.star_prefix_not_global", "User-agent: *bot\nDisallow: /x\n", [("a", "/x", True)])
_add(
    "refinery.multi_agent_group",
    "User-agent: a\nUser-agent: b\nDisallow: /x\n",
    [("a", "/x", False), ("b", "/x", False), ("c", "/x", True)],
)
_add(
    "refinery.empty_specific_group",
    "User-agent: *\nDisallow: /\nUser-agent: a\n",
    [("a", "/x", True), ("b", "/x", False)],
)
_add(
    "refinery.crawl_delay_keeps_group",
    "User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /x\n",
    [("a", "/x", False)],
)
_add(
    "refinery.rules_before_agent_ignored",
    "Disallow: /x\nUser-agent: a\nDisallow: /y\n",
    [("a", "/x", True), ("a", "/y", False)],
)
_add(
    "refinery.fragment_ignored",
    "user-agent: a\ndisallow: /x$\n",
    [("a", "/x#frag", False), ("a", "http://h/x#y", False)],
)
_add(
    "refinery.query_matters",
    "user-agent: a\ndisallow: /*?\n",
    [("a", "/x?y=1", False), ("a", "/x", True)],
)
_add(
    "refinery.lowercase_hex_url",
    "user-agent: a\ndisallow: /a%2Fb\n",
    [("a", "/a%2fb", False, True), ("a", "/a/b", True)],
    note=_RFC_NORMALISE,
)
_add(
    "refinery.lowercase_hex_pattern", "user-agent: a\ndisallow: /a%2fb\n", [("a", "/a%2Fb", False)]
)
_add(
    "refinery.tilde_escape",
    "user-agent: a\ndisallow: /%7Euser\n",
    [
        ("a", "/~user/x", False, True),
        ("a", "/%7Euser/x", False),
        ("a", "/%7euser/x", False, True),
    ],
    note=_RFC_UNRESERVED,
)
_add(
    "refinery.nonascii_url_raw",
    "user-agent: a\ndisallow: /caf%C3%A9\n",
    [("a", "/café", True), ("a", "/caf%C3%A9", False), ("a", "/cafe", True)],
)
_add(
    "refinery.nonascii_pattern_raw",
    "user-agent: a\ndisallow: /café\ndisallow: /Ωmega/*/x$\n",
    [
        ("a", "/caf%C3%A9/menu", False),
        ("a", "/café/menu", True),
        ("a", "/%CE%A9mega/q/x", False),
        ("a", "/%CE%A9mega/q/x/", True),
    ],
)
_add(
    "refinery.dollar_literal_midpattern",
    "user-agent: a\ndisallow: /a$b\n",
    [("a", "/a$b", False), ("a", "/a%24b", False, True), ("a", "/a", True)],
    note="RFC 9309 §2.2.3: a literal '$' and its escape %24 are the same character in a URL",
)
# Product tokens (Google's ExtractUserAgent): a group line keeps only its leading letters, '-'
# and '_', so "AB42bot" names the group "AB"; the crawler's own token keeps its digits.
_add(
    "refinery.token_digits",
    "User-agent: AB42bot\nDisallow: /\nUser-agent: *\nDisallow: /private\n",
    [
        ("AB42bot", "/x", True),
        ("AB42bot", "/private", False),
        ("AB", "/x", False),
        ("ab", "/x", False),
        ("Mozilla/5.0 (compatible; AB42bot/1.0)", "/x", True),
        ("AB42bot/1.0", "/x", True),
    ],
)
_add(
    "refinery.token_digits_no_star",
    "User-agent: Foo1Bot\nAllow: /a\nDisallow: /\n",
    [("Foo1Bot", "/b", True), ("Foo", "/b", False), ("Foo", "/a", True), ("Foo2", "/b", True)],
)
_add(
    "refinery.star_literal_in_url",
    "user-agent: a\ndisallow: /a*b\n",
    [("a", "/a*b", False), ("a", "/axyzb", False), ("a", "/ab", False)],
)
_add(
    "refinery.multi_star",
    "user-agent: a\ndisallow: /*a*b*c$\n",
    [("a", "/xaybzc", False), ("a", "/xaybzcd", True), ("a", "/cba", True)],
)
_add(
    "refinery.star_only",
    "user-agent: a\ndisallow: *\n",
    [("a", "/", False), ("a", "/anything", False)],
)
_add("refinery.path_url", "user-agent: a\ndisallow: /p\n", [("a", "/p?q", False), ("a", "p", True)])
_add(
    "refinery.https_and_port",
    "user-agent: a\ndisallow: /p\n",
    [("a", "https://h:8443/p/x", False), ("a", "https://h:8443/", True)],
)
