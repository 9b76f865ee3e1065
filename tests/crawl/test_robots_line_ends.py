"""An oversized robots.txt is cut to its first 500 KiB at a line end as the parser reads line
ends (CR, LF, CRLF): a cut rule is never read whole, a CR-terminated rule is never dropped, and
the policy says it was truncated."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from crawlers.crawl.fetcher import ROBOTS_MAX_BYTES, Fetcher, PrefixDecoder
from crawlers.crawl.frontier import Frontier
from crawlers.crawl.robots_policy import DISALLOWED, RobotsFetch, RobotsPolicy
from crawlers.robots import RobotsTxt, complete_lines

from .loopback import LoopbackServer

CR_HOST, MIXED_HOST = "127.0.31.1", "127.0.31.2"


def cr_only_robots() -> bytes:
    """CR line ends; an 'Allow: /priva|te-...' line straddles the 500 KiB cut."""
    body = b"User-agent: *\rDisallow: /\r"
    pad = b"# " + b"x" * 97 + b"\r"
    while len(body) + len(pad) < ROBOTS_MAX_BYTES - 200:
        body += pad
    body += b"#" * (ROBOTS_MAX_BYTES - 8 - len(body) - 1) + b"\r"
    return body + b"Allow: /private-only-for-partner\r" + b"# tail\r" * 10


def mixed_robots() -> bytes:
    """The first line ends in LF, every other in CR: the Disallow rule is at byte 14."""
    return b"User-agent: *\n" + b"Disallow: /secret\r" + (b"# " + b"x" * 97 + b"\r") * 6000


class RobotsServer(LoopbackServer):
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        ip = request.transport.get_extra_info("sockname")[0]
        if request.path == "/robots.txt":
            body = cr_only_robots() if ip == CR_HOST else mixed_robots()
            return web.Response(body=body, content_type="text/plain")
        return web.Response(text="<p>page</p>", content_type="text/html")


@pytest.fixture(scope="module")
def server():
    with RobotsServer([CR_HOST, MIXED_HOST]) as srv:
        yield srv


def _prefix(body: bytes) -> bytes:
    dec = PrefixDecoder("", ROBOTS_MAX_BYTES)
    dec.feed(body)
    return dec.result(cut_to_line=True)


def test_prefix_cut_ends_at_a_carriage_return_not_inside_the_next_rule():
    got = _prefix(cr_only_robots())
    assert got.endswith(b"\r") and b"Allow: /priva" not in got
    assert RobotsTxt.parse(got).allows("RefineryBot", "/private-only-for-partner") is False


def test_prefix_cut_keeps_cr_terminated_rules_after_an_lf_line():
    got = _prefix(mixed_robots())
    assert got.startswith(b"User-agent: *\nDisallow: /secret\r")
    assert RobotsTxt.parse(got).allows("RefineryBot", "/secret/page") is False


def test_complete_lines_reads_line_ends_as_the_parser_does():
    assert complete_lines(b"a\r\nb\rc") == b"a\r\nb\r"
    assert complete_lines(b"a\nb\r") == b"a\nb\r"
    assert complete_lines(b"Allow: /priva") == b""  # no whole line: nothing to read


def test_parse_of_a_prefix_said_truncated_drops_its_partial_line_and_says_so():
    body = b"User-agent: *\rDisallow: /\rAllow: /priva"
    robots = RobotsTxt.from_response(200, body, truncated=True)
    assert robots.truncated and "ignored" in robots.reason
    assert robots.allows("RefineryBot", "/private") is False
    assert RobotsTxt.from_response(200, body).allows("RefineryBot", "/private") is True


@pytest.mark.parametrize("ip", [CR_HOST, MIXED_HOST])
def test_oversized_robots_with_cr_line_ends_denies_through_the_fetcher(server, ip, tmp_path):
    async def decide():
        async with Fetcher(user_agent="RefineryBot/0.1", allow_private_networks=True) as f:
            got: list[RobotsFetch] = []
            policy = RobotsPolicy(
                f, agent="RefineryBot", training_agent="RefineryBot-Extended", retries=0
            )
            policy.on_fetch = got.append
            url = f"http://{ip}:{server.port}/secret/page"
            crawl, training, robots = await policy.decide(url)
            return crawl, training, robots, got[0]

    crawl, training, robots, record = asyncio.run(decide())
    assert (crawl, training) == (DISALLOWED, DISALLOWED)
    assert record.truncated and robots.truncated
    assert "(content after 512000 bytes ignored)" in robots.reason
    # A resumed crawl reads the stored fetch back as truncated too.
    frontier = Frontier(tmp_path / "frontier.sqlite")
    with frontier:
        frontier.save_robots(record.origin, 200, record.body, None, truncated=True)
    (row,) = frontier.robots_records()
    frontier.close()
    again = RobotsTxt.from_response(row["status"], row["body"], truncated=bool(row["truncated"]))
    assert again.truncated and not again.allows("RefineryBot", "/secret/page")
