"""RobotsTxt construction, status mapping, size limit, extras (delay, sitemaps) and RobotsCache."""

from __future__ import annotations

import pickle

import pytest

from crawlers.robots import MAX_ROBOTS_BYTES, RobotsCache, RobotsTxt, origin_of, product_token

BOT = "RefineryBot"
BLOCK_ALL = b"User-agent: *\nDisallow: /\n"


# ---- status mapping (RFC 9309 §2.3.1) -----------------------------------------------------


@pytest.mark.parametrize("status", [200, 203, 206, 299])
def test_2xx_parses_the_body(status: int) -> None:
    robots = RobotsTxt.from_response(status, b"User-agent: *\nDisallow: /private\n")
    assert robots.kind == "parsed" and robots.status == status
    assert not robots.allows(BOT, "http://h/private/x")
    assert robots.allows(BOT, "http://h/public")


@pytest.mark.parametrize("body", [None, b"", b"\n\n# only comments\n"])
def test_2xx_with_empty_body_allows_everything(body: bytes | None) -> None:
    robots = RobotsTxt.from_response(200, body)
    assert robots.kind == "parsed"
    assert robots.allows(BOT, "http://h/anything")


@pytest.mark.parametrize("status", [300, 301, 302, 307, 308])
def test_unresolved_3xx_is_unavailable_and_allows_all(status: int) -> None:
    robots = RobotsTxt.from_response(status, BLOCK_ALL)
    assert robots.kind == "unavailable-3xx"
    assert robots.allows(BOT, "http://h/x")


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451, 499])
def test_4xx_is_unavailable_and_allows_all(status: int) -> None:
    robots = RobotsTxt.from_response(status, BLOCK_ALL)
    assert robots.kind == "unavailable-4xx" and robots.status == status
    assert robots.allows(BOT, "http://h/x")
    assert str(status) in robots.reason


def test_429_is_treated_like_5xx_and_disallows_all() -> None:
    robots = RobotsTxt.from_response(429, b"")
    assert robots.kind == "unreachable-429"
    assert not robots.allows(BOT, "http://h/x")


@pytest.mark.parametrize("status", [500, 502, 503, 504, 599])
def test_5xx_is_unreachable_and_disallows_all(status: int) -> None:
    robots = RobotsTxt.from_response(status, b"")
    assert robots.kind == "unreachable-5xx"
    assert not robots.allows(BOT, "http://h/x")
    assert not robots.allows(BOT, "/")


def test_1xx_final_status_is_unreachable() -> None:
    assert not RobotsTxt.from_response(103, b"").allows(BOT, "/x")


def test_network_error_disallows_all() -> None:
    robots = RobotsTxt.from_response(None, None)
    assert robots.kind == "network-error" and robots.status is None
    assert not robots.allows(BOT, "http://h/x")


@pytest.mark.parametrize("status", [0, 99, 600, 1000])
def test_invalid_status_is_a_clear_error(status: int) -> None:
    with pytest.raises(ValueError, match="status="):
        RobotsTxt.from_response(status, b"")


@pytest.mark.parametrize("status", [None, 404, 503])
def test_robots_txt_itself_is_always_allowed(status: int | None) -> None:
    assert RobotsTxt.from_response(status, b"").allows(BOT, "http://h/robots.txt")
    assert RobotsTxt.parse(BLOCK_ALL).allows(BOT, "http://h/robots.txt")
    assert RobotsTxt.disallow_all().allows(BOT, "/robots.txt")


def test_allow_all_and_disallow_all() -> None:
    assert RobotsTxt.allow_all().allows(BOT, "/x") and RobotsTxt.allow_all().kind == "allow-all"
    assert not RobotsTxt.disallow_all().allows(BOT, "/x")
    assert RobotsTxt.disallow_all("blocked by policy").reason == "blocked by policy"


def test_parse_rejects_text_with_a_clear_error() -> None:
    with pytest.raises(TypeError, match="expects bytes"):
        RobotsTxt.parse("User-agent: *")  # type: ignore[arg-type]


# ---- size limit (RFC 9309 §2.5) -------------------------------------------------------------


def _padded(rules_after: bytes, size: int) -> bytes:
    head = b"User-agent: *\nDisallow: /early\n"
    filler = b"# " + b"x" * 98 + b"\n"
    body = head + filler * ((size - len(head)) // len(filler))
    return body + rules_after


def test_rules_within_500_kib_are_honoured() -> None:
    body = _padded(b"Disallow: /late\n", MAX_ROBOTS_BYTES - 200)
    robots = RobotsTxt.parse(body)
    assert not robots.truncated
    assert not robots.allows(BOT, "/early") and not robots.allows(BOT, "/late")


def test_content_after_500_kib_is_ignored() -> None:
    body = _padded(b"Disallow: /late\n", MAX_ROBOTS_BYTES + 10)
    robots = RobotsTxt.parse(body)
    assert robots.truncated
    assert not robots.allows(BOT, "/early")
    assert robots.allows(BOT, "/late")
    assert "ignored" in RobotsTxt.from_response(200, body).reason


def test_line_cut_by_the_limit_is_dropped_not_shortened() -> None:
    # A cut "Allow: /private-area" would become the broader "Allow: /pr".
    body = b"User-agent: *\nDisallow: /\n"
    body += b"#" * (MAX_ROBOTS_BYTES - len(body) - 10) + b"\nAllow: /private-area\n"
    robots = RobotsTxt.parse(body)
    assert robots.truncated
    assert not robots.allows(BOT, "/pr")
    assert not robots.allows(BOT, "/private-area")


def test_limit_can_be_raised_but_not_lowered() -> None:
    body = _padded(b"Disallow: /late\n", MAX_ROBOTS_BYTES + 10)
    assert not RobotsTxt.parse(body, max_bytes=2 * MAX_ROBOTS_BYTES).allows(BOT, "/late")
    with pytest.raises(ValueError, match="max_bytes"):
        RobotsTxt.parse(body, max_bytes=1024)


# ---- agents, delays, sitemaps ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("RefineryBot", "RefineryBot"),
        ("RefineryBot/1.0", "RefineryBot"),
        ("Mozilla/5.0 (compatible; RefineryBot/1.0; +http://x.invalid)", "RefineryBot"),
        ("Mozilla/5.0 (compatible; RefineryBot-Extended/1.0)", "RefineryBot-Extended"),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; "
            "+http://www.google.com/bot.html) Chrome/120 Safari/537.36",
            "Googlebot",
        ),
        ("  refinery_bot ", "refinery_bot"),
        ("", ""),
    ],
)
def test_product_token_extraction(user_agent: str, token: str) -> None:
    assert product_token(user_agent) == token


def test_matched_group_reports_token_or_star() -> None:
    robots = RobotsTxt.parse(b"User-agent: RefineryBot\nDisallow: /a\nUser-agent: *\nDisallow: /\n")
    assert robots.matched_group("Mozilla/5.0 (compatible; RefineryBot/1.0)") == "refinerybot"
    assert robots.matched_group("RefineryBot-Extended") == "*"
    assert RobotsTxt.parse(b"User-agent: a\nDisallow: /\n").matched_group("b") is None


def test_crawl_delay_per_group_with_star_fallback() -> None:
    robots = RobotsTxt.parse(
        b"User-agent: *\nCrawl-delay: 3\nDisallow: /x\n"
        b"User-agent: RefineryBot\nCrawl-delay: 1.5\n"
        b"User-agent: RefineryBot\nCrawl-delay: 4\nDisallow: /r\n"
        b"User-agent: Quiet\nDisallow: /q\n"
        b"User-agent: Broken\nCrawl-delay: soon\nCrawl-delay: -1\n"
    )
    assert robots.crawl_delay(BOT) == 4.0  # merged groups: the most polite value
    assert robots.crawl_delay("Other") == 3.0
    assert robots.crawl_delay("Quiet") is None  # its own group has none; '*' does not apply
    assert robots.crawl_delay("Broken") is None
    # Crawl-delay is not a rule, so it does not close a group (like Sitemap, RFC 9309 §2.2.4).
    shared = RobotsTxt.parse(b"User-agent: a\nCrawl-delay: 7\nUser-agent: b\nDisallow: /x\n")
    assert shared.crawl_delay("b") == 7.0
    assert RobotsTxt.allow_all().crawl_delay(BOT) is None


def test_sitemaps_collected_anywhere_in_order_without_duplicates() -> None:
    robots = RobotsTxt.parse(
        b"Sitemap: http://h/a.xml\nUser-agent: *\nDisallow: /x\nsite-map: http://h/b.xml\n"
        b"Sitemap: http://h/a.xml\nSitemap:\n"
    )
    assert robots.sitemaps == ["http://h/a.xml", "http://h/b.xml"]
    assert not robots.allows(BOT, "/x")  # sitemap lines do not break groups


def test_invalid_utf8_and_control_bytes_do_not_break_parsing() -> None:
    robots = RobotsTxt.parse(b"User-agent: *\nDisallow: /caf\xe9\nDisallow: /a\x00b\n")
    assert not robots.allows(BOT, "/caf%E9")  # a non-UTF-8 byte is escaped as that octet
    # A control byte is no URI character: raw or escaped, it is compared as its escape.
    assert not robots.allows(BOT, "/a\x00b")
    assert not robots.allows(BOT, "/a%00b")
    assert robots.allows(BOT, "/cafe")


def test_parsed_robots_survive_pickling() -> None:
    robots = RobotsTxt.parse(b"User-agent: *\nDisallow: /x\nAllow: /x/*.html$\nCrawl-delay: 2\n")
    robots.allows(BOT, "/warm-the-cache")
    clone = pickle.loads(pickle.dumps(robots))
    assert not clone.allows(BOT, "/x/a") and clone.allows(BOT, "/x/a.html")
    assert clone.crawl_delay(BOT) == 2.0 and clone.kind == "parsed"


@pytest.mark.timeout(30)
def test_hostile_wildcard_patterns_match_in_linear_time() -> None:
    # A backtracking matcher needs ~path_len ** stars steps here; ours finds pieces left to right.
    pattern = "/" + "*a" * 200 + "*b$"
    robots = RobotsTxt.parse(f"User-agent: *\nDisallow: {pattern}\n".encode())
    path = "/" + "a" * 20_000
    for _ in range(50):
        assert robots.allows(BOT, path)
    assert not robots.allows(BOT, path + "b")


# ---- cache ----------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_cache_entry_expires_after_24_hours() -> None:
    clock = FakeClock()
    cache = RobotsCache(clock=clock)
    robots = RobotsTxt.parse(BLOCK_ALL)
    cache.put("http://h", robots)
    clock.now += 86400 - 1
    assert cache.get("http://h") is robots
    clock.now += 1
    assert cache.get("http://h") is None
    assert cache.get_stale("http://h") is robots  # RFC 9309 §2.4: usable while unreachable


def test_cache_max_age_is_configurable_and_capped_at_24_hours() -> None:
    clock = FakeClock()
    cache = RobotsCache(max_age_s=60, clock=clock)
    cache.put("http://h", RobotsTxt.allow_all())
    clock.now += 59.9
    assert cache.get("http://h") is not None
    clock.now += 0.1
    assert cache.get("http://h") is None
    for bad in (0, -1, 86401):
        with pytest.raises(ValueError, match="max_age_s"):
            RobotsCache(max_age_s=bad)


def test_cache_per_entry_age_can_only_shorten() -> None:
    clock = FakeClock()
    cache = RobotsCache(max_age_s=3600, clock=clock)
    cache.put("http://a", RobotsTxt.from_response(503, None), max_age_s=300)
    cache.put("http://b", RobotsTxt.allow_all(), max_age_s=10**9)
    clock.now += 300
    assert cache.get("http://a") is None
    clock.now += 3000
    assert cache.get("http://b") is not None
    clock.now += 300
    assert cache.get("http://b") is None


def test_cache_keys_by_normalised_origin() -> None:
    cache = RobotsCache(clock=FakeClock())
    robots = RobotsTxt.allow_all()
    cache.put("HTTP://Example.COM:80/some/page?q=1", robots)
    assert cache.get("http://example.com") is robots
    assert cache.get("http://example.com/other") is robots
    assert cache.get("https://example.com") is None
    assert cache.get("http://example.com:8080") is None
    assert len(cache) == 1


def test_cache_evicts_oldest_beyond_max_entries() -> None:
    cache = RobotsCache(clock=FakeClock(), max_entries=2)
    for host in ("a", "b", "c"):
        cache.put(f"http://{host}", RobotsTxt.allow_all())
    assert cache.get("http://a") is None
    assert cache.get("http://b") is not None and cache.get("http://c") is not None


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://h.example:443/x", "https://h.example"),
        ("http://127.0.0.5:8080/robots.txt", "http://127.0.0.5:8080"),
        ("http://[::1]:81/", "http://[::1]:81"),
    ],
)
def test_origin_of(url: str, origin: str) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize("url", ["/relative/path", "example.com", ""])
def test_origin_of_rejects_non_absolute_urls(url: str) -> None:
    with pytest.raises(ValueError, match="absolute URL"):
        origin_of(url)


def test_crawler_canonical_urls_match_non_ascii_rules() -> None:
    # Rules are compared with the URL as given (Google); the crawler asks with canonical URLs,
    # which are percent-encoded, so a raw-UTF-8 rule still applies to what it fetches.
    from crawlers.crawl.canon import canonicalize

    robots = RobotsTxt.parse("User-agent: *\nDisallow: /ツ/\nDisallow: /café\n".encode())
    for raw in ["http://h/ツ/page", "http://h/%E3%83%84/page", "http://h/café?x=1"]:
        url = canonicalize(raw)
        assert url.isascii()
        assert not robots.allows(BOT, url), url
    assert robots.allows(BOT, canonicalize("http://h/cafe"))
    assert robots.allows(BOT, "http://h/ツ/page")  # a raw URL is compared as given


def test_a_decision_meets_the_rules_in_the_url_as_requested_and_in_its_canonical_form():
    """The downloader's decision (crawl, images, render, redirects): an image src or a redirect
    target spelt /%70rivate or /a/../private meets Disallow: /private, as the frontier's
    canonical URLs do; and a rule on what canonicalizing drops (?sid=) still holds."""
    from crawlers.crawl.robots_policy import ALLOWED, DISALLOWED, decision
    from crawlers.robots import RobotsTxt

    robots = RobotsTxt.parse(
        b"User-agent: RefineryBot-Extended\nDisallow: /private\nDisallow: /*?sid=\n"
        b"User-agent: *\nAllow: /\n"
    )
    agent = "RefineryBot-Extended"
    for url in (
        "http://127.0.0.9/%70rivate/a.png",
        "http://127.0.0.9/public/../private/b.png",
        "http://127.0.0.9/img.png?sid=42",
    ):
        assert decision(robots, agent, url) == DISALLOWED, url
        assert decision(robots, "RefineryBot", url) == ALLOWED, url
    assert decision(robots, agent, "http://127.0.0.9/public/c.png") == ALLOWED
