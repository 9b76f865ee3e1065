"""One harness for the crawl tests' loopback servers: an aiohttp app on a background thread that
answers GET on each of a list of 127.x addresses, at one shared port (plus `n_ports - 1` more
shared ports). Subclasses write `_handle`; the server stops with its `with` block."""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web


class LoopbackServer:
    """Base class: `with Sub(...) as s:` serves until the block ends; `s.port`, `s.ports`."""

    label = "loopback server"

    def __init__(self, ips: list[str], n_ports: int = 1):
        self.ips = list(ips)
        self.n_ports, self.ports = n_ports, [0] * n_ports
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"{self.label} did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the server and its thread."""
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError(f"{type(self).__name__} must define _handle")

    def _listen_all(self, runner: web.AppRunner, port: int) -> int:
        """Listen on every address at `port` (0: a free one, chosen on the first address)."""
        first = web.TCPSite(runner, self.ips[0], port)
        self._loop.run_until_complete(first.start())
        port = first._server.sockets[0].getsockname()[1]
        for ip in self.ips[1:]:
            self._loop.run_until_complete(web.TCPSite(runner, ip, port).start())
        return port

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        self._loop.run_until_complete(runner.setup())
        for i in range(self.n_ports):
            self.ports[i] = self._listen_all(runner, 0)
        self.port = self.ports[0]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(runner.cleanup())
            self._loop.close()


class SocketListener:
    """Base class of raw-socket listeners on a loopback address (`sock`, bound by the subclass):
    `_listen` runs on a background thread until the `with` block ends or `seconds` pass, each
    pass of its loop waiting on the socket's timeout."""

    def __init__(self, sock, seconds: float = 60.0):
        import time

        self.sock, self._end = sock, time.monotonic() + seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import time

        while not self._stop.is_set() and time.monotonic() < self._end:
            self._listen()

    def _listen(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()
