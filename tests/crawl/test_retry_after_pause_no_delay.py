"""A 429's Retry-After pauses the whole server even with `delay=0`: the pause is applied before
the request's slot is released, so no request waiting on that server's slot starts inside it.
(Recorded after the release, a waiter that took the slot in that gap saw the server free and sent
at once: it happens when waiters are in timed waits, e.g. at the end of an earlier pause.)"""

from __future__ import annotations

import asyncio

from crawlers.crawl.fetcher import Fetcher
from crawlers.crawl.politeness import Politeness

HOST = "127.0.47.3"
FIRST_PAUSE = 1  # the first 429's pause: the waiters sit out its end together
PAUSE = 30  # then announced by every 429; the test watches only the first moments of it


def _raw(status: str, headers: bytes = b"") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n".encode()
        + headers
        + b"\r\n"
    )


def test_no_request_starts_inside_an_announced_retry_after_pause_with_delay_zero():
    async def go() -> tuple[list[str], list[str]]:
        arrived: list[str] = []  # paths in arrival order, as the server saw them
        answered_429 = asyncio.Event()
        after_429: list[str] = []  # paths that arrived once a PAUSE had been announced

        async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode("latin-1")
                arrived.append(path)
                if answered_429.is_set():
                    after_429.append(path)
                pause = FIRST_PAUSE if len(arrived) == 1 else PAUSE
                writer.write(_raw("429 Too Many Requests", f"Retry-After: {pause}\r\n".encode()))
                if pause == PAUSE:
                    answered_429.set()
                await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(on_conn, HOST, 0)
        port = server.sockets[0].getsockname()[1]
        politeness = Politeness(delay=0.0, max_retry_after=PAUSE)
        async with server:
            async with Fetcher(
                user_agent="RefineryBot/0.1", politeness=politeness, allow_private_networks=True
            ) as f:
                urls = [f"http://{HOST}:{port}/a{i}.png" for i in range(8)]
                tasks = [asyncio.create_task(f.fetch(u)) for u in urls]
                await asyncio.wait_for(answered_429.wait(), 10)
                # Every waiter gets many turns of the loop: none may start inside the pause.
                await asyncio.sleep(0.5)
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        return arrived, after_429

    arrived, after_429 = asyncio.run(go())
    assert len(arrived) >= 2, arrived
    assert after_429 == [], f"requests started inside the Retry-After pause: {after_429}"
