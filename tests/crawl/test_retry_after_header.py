"""Retry-After is read as RFC 9110 writes it (ASCII delta-seconds or an HTTP-date); anything else
is no Retry-After at all, never an exception out of the fetch."""

from __future__ import annotations

import asyncio

import pytest

from crawlers.crawl.downloader import Downloader
from crawlers.crawl.politeness import parse_retry_after
from crawlers.crawl.robots_policy import RobotsFetch, retry_after

HOST = "127.0.31.7"
FAST = dict(allow_private_networks=True, delay=0, max_retries=1, backoff_base=0.01)


@pytest.mark.parametrize(
    "value",
    ["\xb2", "\u0661\u0662", "1.5", "-3", "3 s", "Mon, 99 Feb 2024 00:00:00 GMT", "\x00", ""],
)
def test_retry_after_that_is_no_number_or_date_is_none(value):
    assert parse_retry_after(value, now=0.0) is None


def test_retry_after_seconds_and_dates_still_parse():
    assert parse_retry_after(" 120 ", now=0.0) == 120.0
    assert parse_retry_after("Thu, 01 Jan 1970 00:01:00 GMT", now=0.0) == 60.0


async def _serve_raw(answers: dict[str, bytes]) -> tuple[asyncio.AbstractServer, int]:
    """A loopback server answering each path with raw bytes (headers as latin-1 on the wire)."""

    async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode("latin-1")
            writer.write(answers.get(path, answers["*"]))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_conn, HOST, 0)
    return server, server.sockets[0].getsockname()[1]


def _raw(status: str, headers: bytes = b"", body: bytes = b"") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n".encode()
        + headers
        + b"\r\n"
        + body
    )


def test_a_503_with_a_superscript_retry_after_comes_back_as_a_503_not_an_exception():
    async def go():
        server, port = await _serve_raw(
            {
                "/robots.txt": _raw("200 OK", b"Content-Type: text/plain\r\n", b"User-agent: *\n"),
                "*": _raw("503 Busy", b"Retry-After: \xb2\r\n"),
            }
        )
        async with server:
            async with Downloader(FAST) as d:
                return await d.fetch(f"http://{HOST}:{port}/img.png", resource_type="image")

    res = asyncio.run(go())
    assert res.status == 503 and res.error is None


def test_a_robots_txt_503_with_a_bad_retry_after_is_an_outage_without_a_wait():
    async def go():
        server, port = await _serve_raw({"*": _raw("503 Busy", b"Retry-After: \xb2\r\n")})
        async with server:
            async with Downloader({**FAST, "robots_retries": 0}) as d:
                got: list[RobotsFetch] = []
                d.robots.on_fetch = got.append
                crawl, _, _ = await d.robots.decide(f"http://{HOST}:{port}/x")
                return crawl, got[0]

    crawl, record = asyncio.run(go())
    assert crawl == "unreachable" and record.status == 503
    assert retry_after(record) is None
