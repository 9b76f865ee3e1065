"""Google's independent robots.txt compliance suite (github.com/google/robotstxt-spec-test).

Ported by hand from its textproto files, `src/main/resources/CTC/correctness/*.textproto`
(plus the top-level `uri-case-sensitivity.textproto`) and `CTC/stress/*.textproto` (Apache-2.0,
Copyright 2020 Google LLC). Each expectation keeps the suite's `test_type`: STANDARD cases are
what every REP parser should agree on; GOOGLE_SPECIFIC ones describe Google's own choices.
The explanations are left out; the source file is named per case.
"""

from __future__ import annotations

from dataclasses import dataclass

A, D = True, False  # ALLOWED, DISALLOWED
G = "google"  # test_type GOOGLE_SPECIFIC


@dataclass(frozen=True)
class SpecCase:
    id: str
    robots: bytes
    agent: str
    url: str
    allowed: bool
    standard: bool


SPEC_CASES: list[SpecCase] = []


def _t(source: str, robots: str | bytes, *expectations: tuple) -> None:
    body = robots.encode("utf-8") if isinstance(robots, str) else robots
    n = sum(1 for c in SPEC_CASES if c.id.startswith(source + "/"))
    for i, (agent, url, allowed, *kind) in enumerate(expectations, start=n):
        SPEC_CASES.append(SpecCase(f"{source}/{i}", body, agent, url, allowed, G not in kind))


# ---- correctness ------------------------------------------------------------------------------

_BOM_RULES = b"User-Agent: foo\nDisallow: /AnyValue\n"
_t("BOM-characters", b"\xef\xbb\xbf" + _BOM_RULES, ("foo", "http://example.com/AnyValue", D))
_t("BOM-characters", b"\xef\xbb" + _BOM_RULES, ("foo", "http://example.com/AnyValue", A))
_t("BOM-characters", b"\xef" + _BOM_RULES, ("foo", "http://example.com/AnyValue", A))
_t("BOM-characters", b"\xef\x11\xbf" + _BOM_RULES, ("foo", "http://example.com/AnyValue", A))
_t(
    "BOM-characters",
    b"User-Agent: foo\n\xef\xbb\xbfDisallow: /AnyValue\n",
    ("foo", "http://example.com/AnyValue", A),
)

_t("accepted-mistakes", "user-agent: FooBot\ndisallow: /\n", ("FooBot", "http://foo.bar/x/y", D))
_t("accepted-mistakes", "foo: FooBot\nbar: /\n", ("FooBot", "http://foo.bar/x/y", A))
_t("accepted-mistakes", "user-agent FooBot\ndisallow /\n", ("FooBot", "http://foo.bar/x/y", D, G))

for _robots in [
    "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n",
    "User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n",
    "User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r",
    "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /",
    "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
]:
    _t("different-line-endings", _robots, ("bar", "http://example.com/page", D))

for _robots in [
    "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n",
    "user-agent: FooBot\nallow: /x/\ndisallow: /\n",
    "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n",
]:
    _t(
        "directives-case-insensitivity",
        _robots,
        ("FooBot", "http://foo.bar/x/y", A),
        ("FooBot", "http://foo.bar/a/b", D),
    )

_t("empty-string", "", ("FooBot", "", A, G), ("", "", A, G))
_t("empty-string", "user-agent: FooBot\ndisallow: /\n", ("", "", A, G), ("FooBot", "", D, G))

_t("global-rules", "", ("FooBot", "http://foo.bar/x/y", A))
_t(
    "global-rules",
    "user-agent: *\ndisallow: /x\nuser-agent: FooBot\nallow: /x/y\n",
    ("FooBot", "http://foo.bar/x/y", A),
    ("BarBot", "http://foo.bar/x/y", D),
)
_t(
    "global-rules",
    "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\n"
    "disallow: /\n",
    ("QuxBot", "http://foo.bar/x/y", A),
)

_t(
    "groups",
    "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\n"
    "disallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\n"
    "allow: /z/\ndisallow: /\n",
    ("FooBot", "http://foo.bar/x/b", A),
    ("FooBot", "http://foo.bar/z/d", A),
    ("FooBot", "http://foo.bar/y/c", D),
    ("BarBot", "http://foo.bar/y/c", A),
    ("BarBot", "http://foo.bar/w/a", A),
    ("BarBot", "http://foo.bar/z/d", D),
    ("BazBot", "http://foo.bar/z/d", A),
    ("FooBot", "http://foo.bar/foo/bar/", D),
    ("BarBot", "http://foo.bar/foo/bar/", D),
    ("BazBot", "http://foo.bar/foo/bar/", D),
)

_t(
    "index-page",
    "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n",
    ("foobot", "http://foo.com/allowed-slash/", A, G),
    ("foobot", "http://foo.com/allowed-slash/index.htm", D, G),
    ("foobot", "http://foo.com/allowed-slash/index.html", A, G),
    ("foobot", "http://foo.com/anyother-url", D),
)

_t(
    "matching-path-values-1",
    "user-agent: FooBot\ndisallow: /\nallow: /fish\n",
    ("FooBot", "http://foo.bar/bar", D),
    ("FooBot", "http://foo.bar/fish", A),
    ("FooBot", "http://foo.bar/fish.html", A),
    ("FooBot", "http://foo.bar/fish/salmon.html", A),
    ("FooBot", "http://foo.bar/fishheads", A),
    ("FooBot", "http://foo.bar/fishheads/yummy.html", A),
    ("FooBot", "http://foo.bar/fish.html?id=anything", A),
    ("FooBot", "http://foo.bar/Fish.asp", D),
    ("FooBot", "http://foo.bar/catfish", D),
    ("FooBot", "http://foo.bar/?id=fish", D),
)
_t(
    "matching-path-values-1",
    "user-agent: FooBot\ndisallow: /\nallow: /fish*\n",
    ("FooBot", "http://foo.bar/bar", D),
    ("FooBot", "http://foo.bar/fish", A),
    ("FooBot", "http://foo.bar/fish.html", A),
    ("FooBot", "http://foo.bar/fish/salmon.html", A),
    ("FooBot", "http://foo.bar/fishheads", A),
    ("FooBot", "http://foo.bar/fishheads/yummy.html", A),
    ("FooBot", "http://foo.bar/fish.html?id=anything", A),
    ("FooBot", "http://foo.bar/Fish.bar", D),
    ("FooBot", "http://foo.bar/catfish", D),
    ("FooBot", "http://foo.bar/?id=fish", D),
)
_t(
    "matching-path-values-1",
    "user-agent: FooBot\ndisallow: /\nallow: /fish/\n",
    ("FooBot", "http://foo.bar/bar", D),
    ("FooBot", "http://foo.bar/fish/", A),
    ("FooBot", "http://foo.bar/fish/salmon", A),
    ("FooBot", "http://foo.bar/fish/?salmon", A),
    ("FooBot", "http://foo.bar/fish/salmon.html", A),
    ("FooBot", "http://foo.bar/fish/?id=anything", A),
    ("FooBot", "http://foo.bar/fish", D),
    ("FooBot", "http://foo.bar/fish.html", D),
    ("FooBot", "http://foo.bar/Fish/Salmon.html", D),
)
_t(
    "matching-path-values-2",
    "user-agent: FooBot\ndisallow: /\nallow: /*.php\n",
    ("FooBot", "http://foo.bar/bar", D),
    ("FooBot", "http://foo.bar/filename.php", A),
    ("FooBot", "http://foo.bar/folder/filename.php", A),
    ("FooBot", "http://foo.bar/folder/filename.php?parameters", A),
    ("FooBot", "http://foo.bar//folder/any.php.file.html", A),
    ("FooBot", "http://foo.bar/filename.php/", A),
    ("FooBot", "http://foo.bar/index?f=filename.php/", A),
    ("FooBot", "http://foo.bar/php/", D),
    ("FooBot", "http://foo.bar/index?php", D),
    ("FooBot", "http://foo.bar/windows.PHP", D),
)
_t(
    "matching-path-values-2",
    "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n",
    ("FooBot", "http://foo.bar/bar", D),
    ("FooBot", "http://foo.bar/filename.php", A),
    ("FooBot", "http://foo.bar/folder/filename.php", A),
    ("FooBot", "http://foo.bar/filename.php?parameters", D),
    ("FooBot", "http://foo.bar/filename.php/", D),
    ("FooBot", "http://foo.bar/filename.php5", D),
    ("FooBot", "http://foo.bar/php/", D),
    ("FooBot", "http://foo.bar/filename?php", D),
    ("FooBot", "http://foo.bar/aaaphpaaa", D),
    ("FooBot", "http://foo.bar//windows.PHP", D),
)
_t(
    "matching-path-values-2",
    "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n",
    ("FooBot", "http://foo.bar/bar", D),
    ("FooBot", "http://foo.bar/fish.php", A),
    ("FooBot", "http://foo.bar/fishheads/catfish.php?parameters", A),
    ("FooBot", "http://foo.bar/Fish.PHP", D),
)

_t(
    "non-ascii-paths",
    "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
    ("FooBot", "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", A),
)
_t(
    "non-ascii-paths",
    "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n",
    ("FooBot", "http://foo.bar/foo/bar/%E3%83%84", A),
    ("FooBot", "http://foo.bar/foo/bar/ツ", D),
)
_t(
    "non-ascii-paths",
    "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
    ("FooBot", "http://foo.bar/foo/bar/%E3%83%84", A),
    ("FooBot", "http://foo.bar/foo/bar/ツ", D),
)
_t(
    "non-ascii-paths",
    "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
    ("FooBot", "http://foo.bar/foo/bar/baz", D),
    ("FooBot", "http://foo.bar/foo/bar/%62%61%7A", A),
)

_t(
    "special-characters",
    "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
    ("FooBot", "http://foo.bar/foo/bar/quz", D),
    ("FooBot", "http://foo.bar/foo/quz", A),
    ("FooBot", "http://foo.bar/foo//quz", A),
    ("FooBot", "http://foo.bar/foo/bax/quz", A),
)
_t(
    "special-characters",
    "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
    ("FooBot", "http://foo.bar/foo/bar", D),
    ("FooBot", "http://foo.bar/foo/bar/qux", A),
    ("FooBot", "http://foo.bar/foo/bar/", A),
    ("FooBot", "http://foo.bar/foo/bar/baz", A),
)
_t(
    "special-characters",
    "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
    ("FooBot", "http://foo.bar/foo/bar", A),
    ("FooBot", "http://foo.bar/foo/quz", D),
)

_t(
    "user-agent-name",
    "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
    ("Foo", "http://foo.bar/x/y", A, G),
    ("Foo Bar", "http://foo.bar/x/y", D, G),
)
for _ua in ["FOO BAR", "foo bar", "FoO bAr"]:
    _t(
        "user-agent-name",
        f"user-agent: {_ua}\nallow: /x/\ndisallow: /\n",
        ("Foo", "http://foo.bar/x/y", A, G),
        ("foo", "http://foo.bar/x/y", A, G),
        ("Foo", "http://foo.bar/a/b", D, G),
        ("foo", "http://foo.bar/a/b", D, G),
    )

_t(
    "uri-case-sensitivity",
    "user-agent: FooBot\ndisallow: /X/\n",
    ("FooBot", "http://foo.bar/x/y", A),
)
_t(
    "uri-case-sensitivity",
    "user-agent: FooBot\ndisallow: /x/\n",
    ("FooBot", "http://foo.bar/x/y", D),
)

# ---- stress (real-world shaped files) ---------------------------------------------------------

_E = "http://example.com"
_W = "http://www.example.com"
_t(
    "stress/155227",
    "User-agent: *\nCrawl-delay: 10\n# Foo\nDisallow: /asdf-main/\nDisallow: /asdf-media/\n"
    "Disallow: /asdf-shared/\n# Bar\nDisallow: /asdf-control.php\n"
    "Disallow: /asdf-control-sample.php\nDisallow: /asdf-settings.php\n",
    ("foobot", f"{_E}/", A),
    ("foo_bot", f"{_E}/bar/index.html", A),
    ("foo-bot", f"{_E}/asdf-control.pdf", A),
    ("foobot", f"{_E}/asdf-control.php", D),
    ("foobot", f"{_E}/asdf-control-sample.php", D),
    ("foobot", f"{_E}/asdf-control-simple.php", A),
    ("FooBot", f"{_E}/asdf-settings.php", D),
    ("Foo-Bot", f"{_E}/asdf-shared/index.html", D),
)
_t(
    "stress/174022",
    "User-agent: *\nDisallow: /view-responses.html\nDisallow: /help.html\n"
    "Disallow: /chat/reviews/view/\nDisallow: /chat/view/\nDisallow: /chat/view/hg/\n"
    "Disallow: /chat/view/asd/\nDisallow: /chat/asd/\nDisallow: /chat/trackback/\n"
    "Disallow: /chat/wp/\nDisallow: /chat/*/reviews/view/$\nDisallow: /chat/*/view/$\n"
    "Disallow: /chat/*/view/hg/$\nDisallow: /chat/*/view/asd/$\nDisallow: /chat/*/asd/$\n"
    "Disallow: /chat/*/trackback/$\nDisallow: /contact-someone.html\n",
    ("FooBot", f"{_E}/", A),
    ("foobot", f"{_E}/search?req=123", A),
    ("Foo_Bot", f"{_E}/view-responses.html", D),
    ("barbot", f"{_E}/chat/", A),
    ("BarBot", f"{_E}/chat/reviews/view/112", D),
    ("BazBot", f"{_E}/chat/view", A),
    ("BazBot", f"{_E}/chat/view/hg", D),
    ("FooBot", f"{_E}/chat/foo/bar/baz/view/", D),
    ("barbot", f"{_E}/chat/something/asd/", D),
    ("BarBot", f"{_E}/chat/asd/", D),
    ("QuxBot", f"{_E}/contact-someone.html?user=foo", D),
)
_t(
    "stress/278501",
    "User-agent: *\nDisallow: /dump-*\nDisallow: /vlog/dump-*\nDisallow: /_pcms/preview/\n"
    "Disallow: /tf/manage-roles/\n\nSitemap: https://www.example.com/sitemap.xml\n"
    "Disallow: /_pcms/preview/\nDisallow: /tf/manage-roles/\n",
    ("foobot", f"{_W}/index.html", A),
    ("foo-bot", f"{_W}/dump-", D),
    ("foobot", f"{_W}/dump", A),
    ("foo_bot", f"{_W}/dump-786", D),
    ("foo-bot", f"{_W}/vlog/123", A),
    ("foo-bot", f"{_W}/vlog/dump-123", D),
    ("foobot", f"{_W}/_pcms/test.txt", A),
    ("foo_bot", f"{_W}/_pcms/preview/test.txt", D),
    ("foo-bot", f"{_W}/pcms/preview/test.txt", A),
    ("foo_bot", f"{_W}/tf/manage-roles/foo/bar", D),
    ("foobot", f"{_W}/tf/manage-roles/", D),
    ("foo_bot", f"{_W}/tf/index.html", A),
)
_t(
    "stress/308278",
    "User-agent: *\nDisallow: /asdf-login\nDisallow: /asdf-admin\nDisallow: /databack/\n"
    "Disallow: /data/*\nDisallow: /?*/\nDisallow: /author/\nDisallow: /id/*/page/\n"
    "Disallow: /id/*/data/\nSitemap: http://example.com/page-sitemap.xml\n",
    ("foobot", f"{_E}/asdf-login", D),
    ("foobot", f"{_E}/asdf-login/", D),
    ("foobot", f"{_E}/", A),
    ("foobot", f"{_E}/databack", A),
    ("foobot", f"{_E}/databack/recent", D),
    ("foobot", f"{_E}/foo/?user=admin/data", A),
    ("foobot", f"{_E}/?user=admin/data", D),
    ("foobot", f"{_E}/id/page/", A),
    ("foobot", f"{_E}/id/some/page/", D),
    ("foobot", f"{_E}/id/some/data", A),
    ("foobot", f"{_E}/id/some/data/more", D),
)
_t(
    "stress/327748",
    "User-agent: asdfbot\nDisallow: /\nUser-agent: *\nDisallow:\nCrawl-delay: 15\n"
    "Sitemap: http://example.com/sitemap.xml\n",
    ("foobot", "http://m.example.com/", A),
    ("FooBot", "http://m.example.com/foo/bar/baz.php", A),
    ("Foo_Bot", "http://m.example.com/index.html", A),
    ("asdfbot", "http://m.example.com/", D),
    ("asdfbot", "http://m.example.com/foo/bar/baz.js", D),
    ("asdfbot", "http://m.example.com/robots.txt", D),
)
_t(
    "stress/369883",
    "User-agent: *\n<br />\nAllow: /\n<br />\nUser-agent: BarBot\n<br />\nDisallow: /\n<br />\n"
    "User-agent: AB42bot\n<br />\nDisallow: /\n<br />\nsitemap: http://example.com/sitemap.xml\n",
    ("foobot", f"{_E}/", A),
    ("foo-bot", f"{_E}/foo/bar", A),
    ("foo_bot", f"{_E}/robots.txt", A),
    ("BarBot", f"{_E}/", D),
    ("BarBot", f"{_E}/foo/bar/baz", D),
    ("BarBot", f"{_E}/robots.txt", D),
    ("AB42bot", f"{_E}/foo/bar", A),
    ("AB42bot", f"{_E}/", A),
    ("AB", f"{_E}/", D),
    ("AB", f"{_E}/robots.txt", D),
)
_t(
    "stress/371856",
    "User-agent: Foobot\nUser-agent: Barbot\nUser-agent: Bazbot\nUser-agent: Quxbot\n"
    "Crawl-delay: 10\nDisallow:\n\nUser-agent: *\nDisallow: /\n",
    ("Foobot", f"{_E}/foo/bar", A),
    ("Barbot", f"{_E}/foo/bar", A),
    ("Bazbot", f"{_E}/foo/baz", A),
    ("Bazbot", f"{_E}/", A),
    ("Bazbot", f"{_E}/index.html", A),
    ("zazbot", f"{_E}/", D),
    ("zazbot", f"{_E}/index.html", D),
    ("zazbot", f"{_E}/foo/zaz", D),
)
_ASSETS = "".join(
    f"Allow: /{d}/*.css$\nAllow: /{d}/*.css?\nAllow: /{d}/*.js$\nAllow: /{d}/*.js?\n"
    f"Allow: /{d}/*.gif\nAllow: /{d}/*.jpg\nAllow: /{d}/*.jpeg\nAllow: /{d}/*.png\n"
    for d in ("stuff", "things", "data", "more_data")
)
_t(
    "stress/434582",
    "#\n# robots.txt\n#\n# This is robots.txt\n# and it saves server resources\n"
    "# some more comment lines\n# and an empty one\n#\n"
    "# Don't forget to put robots.txt in root of your host\n"
    "# Used:    http://example.com/robots.txt\n# Ignored: http://example.com/site/robots.txt\n#\n"
    "# For more information about the robots.txt standard, see:\n"
    "# http://www.robotstxt.org/robotstxt.html\n\nUser-agent: *\nCrawl-delay: 15\n# Foo\n"
    + _ASSETS
    + "# Bar\nDisallow: /something/\nDisallow: /stuff/\nDisallow: /things/\nDisallow: /data/\n"
    "Disallow: /scripts/\nDisallow: /more_data/\n# Baz\nDisallow: /SOME_TEXT.txt\n"
    "Disallow: /some_script.php\nDisallow: /INSTALL.foo.txt\nDisallow: /INSTALL.bar.txt\n"
    "Disallow: /INSTALL.baz.txt\nDisallow: /get.php\nDisallow: /GET.txt\nDisallow: /LICENSE.txt\n"
    "Disallow: /HELPERS.txt\nDisallow: /update.php\nDisallow: /UPGRADE.txt\nDisallow: /what.php\n"
    "# Some more stuff to disallow\nDisallow: /?q=main/\nDisallow: /?q=comment/reply/\n"
    "Disallow: /?q=filter/ads/\nDisallow: /?q=data/add/\nDisallow: /?q=find/\n"
    "Disallow: /?q=baz/password/\nDisallow: /?q=baz/register/\nDisallow: /?q=baz/login/\n"
    "Disallow: /?q=baz/logout/\n",
    ("foobot", "https://www.example.com/", A),
    ("foobot", "https://www.example.com/help.html", A),
    ("foobot", "https://www.example.com/some.css", A),
    ("foobot", "https://www.example.com/foo/some.css", A),
    ("foobot", "https://www.example.com/stuff/some.css", A),
    ("foobot", "https://www.example.com/stuff/some.html", D),
    ("foobot", "https://www.example.com/stuff/some.jpeg", A),
    ("foobot", "https://www.example.com/things/some.css?user=main", A),
    ("foobot", "https://www.example.com/things/some.jpeg?user=main", A),
    ("foobot", "https://www.example.com/something/foo.cpp", D),
    ("foobot", "https://www.example.com/more_data/dark", D),
    ("foobot", "https://www.example.com/some_script.php", D),
    ("foobot", "https://www.example.com/upgrade.txt", A),
    ("foobot", "https://www.example.com/UPGRADE.txt", D),
    ("foobot", "https://www.example.com/data/main", D),
    ("foobot", "https://www.example.com/?q=baz/", A),
    ("foobot", "https://www.example.com/?q=baz/login", A),
    ("foobot", "https://www.example.com/?q=baz/login/", D),
    ("foobot", "https://www.example.com/?q=data/discard/", A),
    ("foobot", "https://www.example.com/?q=data/add/", D),
)
_t(
    "stress/478151",
    "\n\nUser-agent: Whoosh-Qux\nAllow: /\n\nUser-agent: Baz-Qux\nAllow: /\n\nUser-agent: barbot\n"
    "Allow: /\nDisallow: /braa\n\nUser-agent: BeepBot\nDisallow: /braa\n\n"
    "User-agent: Sample-web-crawler\nDisallow: /braa\n\nUser-agent: *\nDisallow: /\n\n"
    "User-agent: *\nDisallow: /braa\n\nSitemap: /sitemap.xml\n",
    ("Whoosh-Qux", f"{_E}/robots.txt", A),
    ("Baz-Qux", f"{_E}/foo/bar", A),
    ("BeepBot", f"{_E}/braallaboration/index.htm", D),
    ("BeepBot", f"{_E}/foo/bar", A),
    ("BeepBot", f"{_E}/", A),
    ("BeepBot", f"{_E}/braa/balt", D),
    ("foobot", f"{_E}/index.htm", D),
    ("foo_bot", f"{_E}/braabalt", D),
    ("foo-bot", f"{_E}/", D),
)
_t(
    "stress/517712",
    "# Some comment\n# http://www.exapmle.com/something.html\n\n\n\n"
    "# Some more explanation to lines below\n# (and some line wrapping)\n\nUser-agent: *\n"
    "Disallow:\n\n\n\n# Some comments regarding some specific robot restrictions\n"
    "# maybe regarding his functionality\n# and some website to visit\n"
    "# http://www.example.com/some/help/about/quxbot?arg=123\n\nUser-Agent: Quxbot\n"
    "Disallow: /*dispatch_request$\nDisallow: /*directory_ctors$\n",
    ("foobot", f"{_E}/", A),
    ("FooBot", f"{_E}/search?req=123", A),
    ("foobot", f"{_E}/foo/bar/dispatch_request", A),
    ("foo-bot", f"{_E}/bar/baz/foler_ctors", A),
    ("Quxbot", f"{_E}/", A),
    ("barbot", f"{_E}/robots.txt", A),
    ("Quxbot", f"{_E}/baz/dispatch_request", D),
    ("Quxbot", f"{_E}/baz/dispatch_request?args=123", A),
    ("Quxbot", f"{_E}/new_directory_ctors", D),
    ("Quxbot", f"{_E}/bar/baz/directory_ctors", D),
)
_t(
    "stress/541230",
    "User-agent: *\nAllow: /*.js\nAllow: /*.css\nAllow: /*.jpg\nAllow: /*.png\nAllow: /*.gif\n"
    "Allow: /*?page\nAllow: /*?ref=\nDisallow: /*?\nDisallow: /stat/\nDisallow: /id/1\n"
    "Disallow: /id/3\nDisallow: /register\nDisallow: /id/5\nDisallow: /id/7\nDisallow: /id/8\n"
    "Disallow: /id/9\nDisallow: /id/sub/\nDisallow: /panel/\nDisallow: /master/\n"
    "Disallow: /informer/\nDisallow: /secure/\nDisallow: /poll/\nDisallow: /search/\n"
    "Disallow: /abnl/\nDisallow: /*_escaped_pattern_=\nDisallow: /*-*-*-*-321$\n"
    "Disallow: /baz/order/\nDisallow: /baz/printorder/\nDisallow: /baz/checkout/\n"
    "Disallow: /baz/user/\nDisallow: /baz/search\nDisallow: /*0-*-0-03$\nDisallow: /*-0-0-\n\n"
    "Sitemap: http://example.com/sitemap.xml\nSitemap: http://example.com/sitemap-forum.xml\n",
    ("foobot", f"{_E}/foo.js", A),
    ("foobot", f"{_E}/foo/bar.css", A),
    ("foobot", f"{_E}/x/y/z?ref=bar", A),
    ("foobot", f"{_E}/x/y/z", A),
    ("foobot", f"{_E}/status/x", A),
    ("foobot", f"{_E}/stat/perf", D),
    ("foobot", f"{_E}/id/13579", D),
    ("foobot", f"{_E}/id/24680", A),
    ("foobot", f"{_E}/search/stats", D),
    ("foobot", f"{_E}/foo_bar_escaped_pattern_=123", D),
    ("foobot", f"{_E}/foo-bar-vaz-qux-321", D),
    ("foobot", f"{_E}/foo-bar-vaz-qux-3216", A),
    ("foobot", f"{_E}/-0-0-312", D),
    ("foobot", f"{_E}/baz", A),
    ("foobot", f"{_E}/baz/user/123", D),
)
_t(
    "stress/584234",
    "User-agent: barbot\nDisallow: /\n\nUser-agent: bazbot\nDisallow: /\n\nUser-agent: qux_bot\n"
    "Crawl-delay: 1\n\nUser-agent: *\nAllow: /\n\nUser-agent: *\nCrawl-delay: 1\n",
    ("barbot", f"{_E}/foo/bar", D),
    ("barbot", f"{_E}/foo/foo/foo", D),
    ("barbot", f"{_E}/index.html", D),
    ("bazbot", f"{_E}/secrets/123", D),
    ("bazbot", f"{_E}/log?id=113", D),
    ("qux_bot", f"{_E}/index.html", A),
    ("qux_bot", f"{_E}/foo/bar", A),
    ("qux_bot", f"{_E}/", A),
    ("foobot", f"{_E}/foo/bar", A),
    ("foobot", f"{_E}/log?id=113", A),
)
_t(
    "stress/638845",
    "# For more information about the robots.txt standard, see:\n"
    "# http://www.robotstxt.org/orig.html\n#\n\nUser-agent: *\nDisallow: /main/\n"
    "Disallow: /store/\nDisallow: /scp/\nDisallow: /mods/\nDisallow: /view/\nDisallow: /deps/\n"
    "Disallow: /setup/\nDisallow: /language/\nDisallow: /libs/\nDisallow: /data/\n"
    "Disallow: /media/\nDisallow: /parts/\nDisallow: /plugins/\nDisallow: /help/\n"
    "Disallow: /tmp/\n\n",
    ("foobot", f"{_E}/", A),
    ("foobot", f"{_E}/index.html", A),
    ("foobot", f"{_E}/scp/data", D),
    ("foobot", f"{_E}/medi", A),
    ("foobot", f"{_E}/media", A),
    ("foobot", f"{_E}/loogs?user=admin", A),
)
_FIVE = (
    "Disallow: /workers/\nDisallow: /media/common/\nDisallow: /misc/\nDisallow: /bin/\n"
    "Disallow: /trash/\n\n"
)
_t(
    "stress/701159",
    "".join(
        f"User-agent: {a}\n{_FIVE}"
        for a in ("foofoobot*", "barbarbot*", "quxbot", "ddbot", "toebot", "io_tester")
    )
    + "User-agent: *\nDisallow: /\n\n\nSitemap: http://www.example.com/sitemap.xml\n",
    ("foofoobot-exp", f"{_E}/workers/log", D),
    ("foofoobot", f"{_E}/trash/index.html", D),
    ("barbarbot-prod", f"{_E}/bin/bash", D),
    ("barbarbot-prod", f"{_E}/foo/bar", D),
    ("barbarbot", f"{_E}/bin/bash", D),
    ("barbarbot", f"{_E}/foo/bar", A),
    ("quxbot", f"{_E}/qux/qux/qux", A),
    ("quxbot", f"{_E}/trash/view.html", D),
    ("io_tester", f"{_E}/search?req=123", A),
    ("io_tester", f"{_E}/media/common/123", D),
    ("foo_bot", f"{_E}/search?req=123", D),
)
_t(
    "stress/715135",
    "User-agent: admin\nDisallow:\n\nUser-agent: *\nDisallow: /buzz\nAllow: /\n\n"
    "Sitemap: http://example.com/sitemap.xml\n\n",
    ("foobot", f"{_E}/buzz/settings", D),
    ("foobot", f"{_E}/buzz-lite", D),
    ("barbot", f"{_E}/qux/bar", A),
    ("quxbot", f"{_E}/buzz", D),
    ("bazbot", f"{_E}/prod/buzz", A),
    ("barbot", f"{_E}/anotherbuzz/x", A),
    ("foobot", f"{_E}/rebuzz/x", A),
    ("foobot", f"{_E}/buzz/buzz/buzz", D),
    ("foo-bot", f"{_E}/searc/buzz", A),
    ("bar-bot", f"{_E}/buzz/searc", D),
    ("admin", f"{_E}/buzz/ses", A),
    ("admin", f"{_E}/foo/bar", A),
    ("admin", f"{_E}/buzz", A),
)
_t(
    "stress/768939",
    "User-agent: *\nCrawl-delay: 3500\nDisallow: /ab_controller\nDisallow: /ab_imports\n"
    "Disallow: /ab_content/bar\nDisallow: /ab_content/cache\nDisallow: /ab_content/baz\n",
    ("foobot", f"{_W}/ab_controller", D),
    ("foo_bot", f"{_W}/ab_controller-foo", D),
    ("foo-bot", f"{_W}/ab_imports/foo.txt", D),
    ("foobot", f"{_W}/foo/bar", A),
    ("foobot", f"{_W}/ab_content/foo", A),
    ("foo_bot", f"{_W}/ab_content/bar/foo.bar", D),
    ("foo-bot", f"{_W}/ab_content/cache-foo", D),
    ("foo-bot", f"{_W}/", A),
)
_t(
    "stress/777406",
    "User-agent: *\nAllow: /\n\n# Optimization for Baz Bot\nUser-Agent: FunBot-Baz-Mobile\n"
    "User-Agent: FunBot-Baz\nDisallow: /_api/*\nDisallow: /_misc*\nDisallow: /media/v1/view/*\n\n"
    "Sitemap: https://www.example.com/sitemap.xml\n",
    ("foobot", f"{_W}/foo/bar", A),
    ("foo_bot", f"{_W}/", A),
    ("foo-bot", f"{_W}/robots.txt", A),
    ("FunBot-Baz-Mobile", f"{_W}/_api/index.html", D),
    ("FunBot-Baz-Mobile", f"{_W}/_misc", D),
    ("FunBot-Baz-Mobile", f"{_W}/_media/v2/foo", A),
    ("FunBot-Baz-Mobile", f"{_W}/media/v1/view/", D),
    ("FunBot-Baz", f"{_W}/media/v1/view/foo", D),
    ("foo-bot", f"{_W}/media/v1/view/foo", A),
    ("foo_bot", f"{_W}/_misc/index.html", A),
)
_t(
    "stress/797409",
    "User-agent: quxbot\nDisallow: /\nUser-agent: *\nDisallow:\n"
    "Sitemap: https://example.com/sitemap.xml\n",
    ("foobot", f"{_E}/foo/bar", A),
    ("foobot", f"{_E}/", A),
    ("foo_bot", f"{_E}/log?id=132", A),
    ("quxbot", f"{_E}/", D),
    ("quxbot", f"{_E}/baz/baz", D),
    ("quxbot", f"{_E}/index.htm", D),
)
_t(
    "stress/824664",
    "Sitemap: http://example.com/sitemap.xml\nSitemap: http://example.com/news-sitemap.xml\n"
    "User-agent: *\nDisallow: /controller/\nAllow: /controller/admin-ajax.php\n",
    ("foo-bot", f"{_E}/index.html", A),
    ("foo-bot", f"{_E}/controller/index.html", D),
    ("foo_bot", f"{_E}/controller/foo/bar/index.htm", D),
    ("foobot", f"{_E}/controller/admin-ajax.php", A),
    ("foobot", f"{_E}/log?id=234", A),
)
_t(
    "stress/860237",
    "User-Agent: *\nCrawl-delay : 60\nDisallow : /*baz*\nDisallow : /*qux*\n\n"
    "User-agent: XYZ123bot\nCrawl-delay : 60\nDisallow: /\n\n",
    ("Foobot", f"{_E}/", A),
    ("foo-bot", f"{_E}/foo/bar", A),
    ("foo_bot", f"{_E}/robots.txt", A),
    ("foo_bot", f"{_E}/new_baz", D),
    ("foo_bot", f"{_E}/baz/new", D),
    ("foo-bot", f"{_E}/move/qux/add", D),
    ("foo_bot", f"{_E}/baznew/start", D),
    ("Foobot", f"{_E}/foo_qux_bar", D),
    ("XYZ123bot", f"{_E}/robots.txt", A),
    ("XYZ", f"{_E}/robots.txt", D),
)
_t(
    "stress/894248",
    "User-agent: *\nDisallow: /ab-baz/\nAllow: /ab-baz/baz-ajax.php\n\n"
    "Sitemap: https://example.com/ab-sitemap.xml\n",
    ("FooBot", f"{_E}/", A),
    ("Foo_Bot", f"{_E}/foo/bar.php", A),
    ("foobot", f"{_E}/ab-baz/index.htm", D),
    ("foo-bot", f"{_E}/ab-baz/foo/bar", D),
    ("foo_bot", f"{_E}/ab-baz/baz-ajax.php", A),
    ("foo-bot", f"{_E}/ab-baz/baz-ajax.php?user=123", A),
)
_t(
    "stress/912555",
    "User-Agent: *\nDisallow: /error$\nDisallow: /jm/com.example.FooController\nDisallow: /log\n"
    "Disallow: /admin$\nDisallow: /adminactions$\nDisallow: /adminactions?\nDisallow: /baz\n"
    "Disallow: /jm/com.example.BarController\nSitemap: https://example.com/sitemap.xml\n",
    ("foobot", f"{_E}/error?user=admin", A),
    ("foobot", f"{_E}/error", D),
    ("foo_bot", f"{_E}/search/foo", A),
    ("foo_bot", f"{_E}/log", D),
    ("foo-bot", f"{_E}/adminactions", D),
    ("foo-bot", f"{_E}/adminactions?id=123", D),
    ("foo-bot", f"{_E}/adminactions/new", A),
    ("foobot", f"{_E}/jm/test.txt", A),
    ("foobot", f"{_E}/jm/com.example.BarController", D),
    ("foobot", f"{_E}/foo/bar", A),
)
_SEVEN = (
    "Disallow: /resources/bazbaz/baz/more_stuff\nDisallow: /wha/some_dir/files\n"
    "Disallow: /lib\nDisallow: /sys\nDisallow: /foo\nDisallow: /bar\nDisallow: /baz\n"
)
_t(
    "stress/923994",
    "User-agent: *\n"
    + _SEVEN
    + "Sitemap: http://www.example.com/wha/some_dir/resources/sitemap.xml\n\n"
    "User-agent: quxbot\n"
    + _SEVEN
    + "Disallow: /users/big_foo/some_stuff\nDisallow: /users/big_foo/other_stuff\n"
    "Disallow: /en/stuff/arr\nDisallow: /en/stuff/dep\nDisallow: /sk/stuff/pri\n"
    "Disallow: /sk/stuff/odl\nDisallow: /cz/stuff/pri\nDisallow: /cz/stuff/odl\n"
    "Disallow: /hu/stuff/rke\nDisallow: /hu/stuff/ind\nDisallow: /addfightyos\n"
    "Disallow: /addfightnope\nCrawl-delay: 29\n",
    ("foobot", f"{_E}/home", A),
    ("foobot", f"{_E}/foo?id=12", D),
    ("foobot", f"{_E}/qux", A),
    ("foobot", f"{_E}/home/scripts/s.js", A),
    ("foobot", f"{_E}/baz/112", D),
    ("foobot", f"{_E}/resources/index.html", A),
    ("foobot", f"{_E}/resources/bazbaz/baz/more_stuff", D),
    ("quxbot", f"{_E}/resources/bazbaz/baz/more_stuff", D),
    ("quxbot", f"{_E}/users/big_foo/some_stuff/new", D),
    ("quxbot", f"{_E}/addfightyos", D),
    ("foobot", f"{_E}/addfight/new", A),
    ("quxbot", f"{_E}/addfight/new", A),
    ("quxbot", f"{_E}/addfightnope?dest=ULLI", D),
    ("quxbot", f"{_E}/cz", A),
)
_t(
    "stress/943687",
    "# Today I heard something new and unmemorable\n"
    "# If I don’t like something, I’ll stay away from it\n"
    "# Everyone was busy, so I went to the movie alone\n#\n"
    "# For more information about the robots.txt standard, see:\n"
    "# http://www.robotstxt.org/orig.html\n#\n# For syntax checking, see:\n"
    "# http://tool.motoricerca.info/robots-checker.phtml\n\nUser-agent: *\nDisallow: /master/\n"
    "Disallow: /bin/\nDisallow: /cache/\nDisallow: /clion/\nDisallow: /components/\n"
    "Disallow: /excludes/\nDisallow: /deinstallation/\nDisallow: /layouts/\n"
    "Disallow: /libraries/\nDisallow: /logs/\nDisallow: /plugins/\nDisallow: /tmp/\n\n",
    ("foobot", f"{_W}/foo/bar", A),
    ("foobot", f"{_W}/master/settings", D),
    ("foobot", f"{_W}/bin/sh", D),
    ("foo-bot", f"{_W}/search?req=123", A),
    ("foo_bot", f"{_W}/log/113", A),
    ("foo_bot", f"{_W}/logs/113", D),
    ("foo-bot", f"{_W}/example/master", A),
    ("foobot", f"{_W}/master", A),
    ("foobot", f"{_W}/master/", D),
    ("foo_bot", f"{_W}/dev/null", A),
    ("foo_bot", f"{_W}/tmp/null", D),
)
_QUERY_RULES = "".join(
    f"Disallow:/*?{k}\nDisallow:/*&{k}\n"
    for k in (
        "creator=*",
        "finder=*",
        "locator=*",
        "viewer=*",
        "format=json",
        "format=page-context",
        "format=main-content",
        "format=json-pretty",
        "format=ical",
        "someStuff=*",
    )
)
_t(
    "stress/974982",
    "# Some Robots Txt\n\n\nUser-agent: *\nDisallow: /data\nDisallow: /find\nDisallow: /stuff$\n"
    "Disallow: /stuff/\nDisallow: /contacts/\nDisallow: /dynamic/\n"
    + _QUERY_RULES
    + "\n\nSitemap: https://example.com/sitemap.xml\n",
    ("foobot", f"{_W}/", A),
    ("foobot", f"{_W}/robots.txt", A),
    ("foobot", f"{_W}/find", D),
    ("foobot", f"{_W}/find/", D),
    ("foobot", f"{_W}/find?id=123", D),
    ("foobot", f"{_W}/stuff", D),
    ("foobot", f"{_W}/stuffstats", A),
    ("foobot", f"{_W}/stuff/new", D),
    ("foobot", f"{_W}/foo?creator=bar", D),
    ("foobot", f"{_W}/foo?finder=baz", D),
    ("foobot", f"{_W}/foo?creator=bar&finder=baz", D),
    ("foobot", f"{_W}/foo?viewer=qux", D),
    ("foobot", f"{_W}/foo?creator=bar&stuff=baz", D),
    ("foobot", f"{_W}/contacts/index.html", D),
)
