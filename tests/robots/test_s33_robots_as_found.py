"""robots.txt holds for a URL as found and as requested (review s33).

RFC 9309 §2.2.2: an escaped unreserved character is unencoded before comparison, on the
pattern's side and the URL's, while escapes of reserved characters stay escapes. And the crawler
asks robots.txt about a URL under every spelling it was found under, not only its canonical form
(which sorts query parameters and decodes `%7E`): a disallowed spelling wins. No network.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from crawlers.crawl.canon import canonicalize
from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.engine import Crawler
from crawlers.crawl.robots_policy import ALLOWED, DISALLOWED, RobotsFetch, decision
from crawlers.robots import RobotsTxt

BOT, TRAINING = "RefineryBot", "RefineryBot-Extended"
CFG = CrawlConfig.from_any({"allow_private_networks": True})
H = "http://h.test"
ROBOTS = (
    "User-agent: *\nUser-agent: RefineryBot-Extended\n"
    "Disallow: /index.php?title=Special:\nDisallow: /search?q=\n"
    "Disallow: /%7Ejoe/\n"
    "User-agent: RefineryBot-Extended\nDisallow: /wiki?lang=\n"
)


@pytest.mark.parametrize(
    ("rule", "url", "allowed"),
    [
        ("/foo/bar/%62%61%7A", "/foo/bar/baz", False),  # the RFC's own example
        ("/foo/bar/baz", "/foo/bar/%62%61%7a", False),
        ("/%7Ejoe", "/~joe/x", False),
        ("/~joe", "/%7Ejoe/x", False),
        ("/~joe", "/%7ejoe/x", False),
        ("/a%2Db", "/a-b", False),
        ("/a b", "/a%20b", False),  # a space is no URI character: compared escaped
        ("/a/b", "/a%2Fb", True),  # reserved escapes stay escapes
        ("/a?b=c", "/a?b%3Dc", True),
        ("/a%2Fb", "/a/b", True),
        ("/caf%C3%A9", "/caf%c3%a9", False),
    ],
)
def test_unreserved_escapes_are_unencoded_before_comparison(rule, url, allowed) -> None:
    robots = RobotsTxt.parse(f"User-agent: *\nDisallow: {rule}\n".encode())
    assert robots.allows(BOT, H + url) is allowed


@pytest.mark.parametrize(
    ("found", "crawl", "training"),
    [
        ("/index.php?title=Special:Random&action=view", DISALLOWED, DISALLOWED),
        ("/index.php?title=Special:Search&search=foo#top", DISALLOWED, DISALLOWED),
        ("/search?q=test&page=2", DISALLOWED, DISALLOWED),
        ("/%7Ejoe/a", DISALLOWED, DISALLOWED),
        ("/wiki?lang=de&action=view", ALLOWED, DISALLOWED),
        ("/search?page=2&q=test", ALLOWED, ALLOWED),
    ],
)
def test_decision_asks_about_the_url_as_found_and_as_requested(found, crawl, training) -> None:
    robots = RobotsTxt.parse(ROBOTS.encode())
    requested = canonicalize(H + found)  # parameters sorted, %7E decoded, fragment dropped
    assert decision(robots, BOT, requested, [H + found]) == crawl
    assert decision(robots, TRAINING, requested, [H + found]) == training


def _crawler(tmp_path) -> Crawler:
    return Crawler([], tmp_path / "out", CFG)


def _preload(crawler: Crawler) -> None:
    crawler.downloader.robots.preload(RobotsFetch(H, 200, ROBOTS.encode(), time.time()))


def _row(crawler: Crawler, url: str) -> dict:
    return next(r for r in crawler.frontier.rows() if r["url"] == url)


def test_discovery_denies_a_url_whose_spelling_robots_txt_disallows(tmp_path) -> None:
    crawler = _crawler(tmp_path)
    _preload(crawler)
    found = H + "/index.php?title=Special:Random&action=view"
    url = canonicalize(found)
    with crawler.frontier:
        got = crawler._discover(url, 1, "link", H + "/", found=found)
        assert got == "robots disallowed"
        # the same document, spelled the allowed way, is already decided
        assert crawler._discover(url, 1, "link", H + "/", found=url) == "known"
    row = _row(crawler, url)
    assert (row["state"], row["robots_crawl"], row["robots_training"]) == (
        "denied",
        DISALLOWED,
        DISALLOWED,
    )
    assert (row["crawl_allowed"], row["training_allowed"]) == (0, 0)
    crawler.frontier.close()


def test_a_disallowed_spelling_found_later_wins_at_the_visit(tmp_path) -> None:
    # robots.txt is not known when the URL is found (a seed, a first link to a host): the
    # spellings are kept with the canonical URL and the visit asks about all of them; one found
    # while the URL waits in the queue counts too, and so does one kept across a restart.
    crawler = _crawler(tmp_path)
    url = canonicalize(H + "/search?q=test&page=2")
    with crawler.frontier:
        assert crawler._discover(url, 1, "link", H + "/", found=H + "/search?page=2&q=test")
        assert crawler._discover(url, 1, "link", H + "/x", found=H + "/search?q=test&page=2")
    assert _row(crawler, url)["state"] == "queued"
    crawler.frontier.close()

    crawler = Crawler([], tmp_path / "out", CFG, resume=True)
    crawler._load()
    _preload(crawler)
    crawler.robots = crawler.downloader.robots
    row = crawler.sched.pop("h.test")
    asyncio.run(crawler._visit(row))
    row = _row(crawler, url)
    assert (row["state"], row["robots_crawl"], row["robots_training"]) == (
        "denied",
        DISALLOWED,
        DISALLOWED,
    )
    crawler.frontier.close()


def test_the_training_opt_out_holds_for_the_spelling_found(tmp_path) -> None:
    crawler = _crawler(tmp_path)
    found = H + "/wiki?lang=de&action=view"  # crawl allowed, training disallowed as found
    url = canonicalize(H + "/wiki?action=view&lang=de")
    assert url == canonicalize(found)
    with crawler.frontier:
        assert crawler._discover(url, 1, "link", H + "/", found=found) == "queued"
    _preload(crawler)
    crawl, training, _ = asyncio.run(
        crawler.downloader.robots.decide(url, crawler._found_spellings(url))
    )
    assert (crawl, training) == (ALLOWED, DISALLOWED)
    assert asyncio.run(crawler.downloader.robots.decide(url))[:2] == (ALLOWED, ALLOWED)
    crawler.frontier.close()
