"""A loopback image server (robots.txt per address, images, adversarial responses) that counts
every request and every body byte it manages to send; each fixture stops its server."""

from __future__ import annotations

import asyncio
import io
import struct
import zlib
from collections import Counter
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from PIL import Image

from tests.crawl.loopback import LoopbackServer

AGENT, TRAINING_AGENT = "RefineryBot", "RefineryBot-Extended"
DEFAULT_ROBOTS = (
    f"User-agent: {AGENT}\nDisallow: /private/\n\n"
    f"User-agent: {TRAINING_AGENT}\nDisallow: /notrain/\n"
)
# Fast loopback settings: no politeness delay, no retries (errors are final at once).
FAST = dict(
    delay=0.0,
    allow_private_networks=True,
    max_retries=0,
    robots_retries=0,
    timeout_s=3.0,
    commit_every=4,
    min_side=16,
    max_aspect=3.0,
    max_bytes=2 * 2**20,
    max_pixels=4_000_000,
)


@dataclass
class Resource:
    """One served path: body and headers, plus how to send it."""

    body: bytes = b""
    content_type: str = "image/png"
    status: int = 200
    headers: dict = field(default_factory=dict)
    location: str | None = None  # a 302 to here
    content_length: int | None = None  # declared length; None: the real one (or chunked)
    chunked: bool = False
    chunk: int = 64 * 1024
    repeat: int = 1  # the body is sent this many times (a long stream)
    hold_s: float = 0.0  # pause after the headers, before the first body byte
    delay_s: float = 0.0  # pause before answering at all
    reset: bool = False  # drop the connection without answering


class ImageServer(LoopbackServer):
    """Serves `routes` (path -> Resource) on every address, robots.txt per address (a text, or a
    list of (status, text) answers given in turn, the last one repeated)."""

    label = "image server"

    def __init__(self, ips: list[str], routes: dict[str, Resource], robots: dict):
        super().__init__(ips)
        self.routes, self.robots = routes, robots
        self.requests: Counter = Counter()  # (ip, path) -> requests received
        self.body_bytes: Counter = Counter()  # path -> body bytes written to the socket

    def url(self, ip: str, path: str) -> str:
        """Absolute URL of `path` on address `ip`."""
        return f"http://{ip}:{self.port}{path}"

    def hits(self, path: str) -> int:
        """Requests for `path` on any address."""
        return sum(n for (_, p), n in self.requests.items() if p == path)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        ip = request.transport.get_extra_info("sockname")[0]
        path = request.path_qs
        self.requests[(ip, path)] += 1
        if path == "/robots.txt":
            robots = self.robots.get(ip, DEFAULT_ROBOTS)
            if isinstance(robots, list):  # [(status, text), ...]: one per request, last repeats
                status, text = robots.pop(0) if len(robots) > 1 else robots[0]
                return web.Response(status=status, text=text)
            return web.Response(text=robots)
        res = self.routes.get(path)
        if res is None:
            return web.Response(status=404, text="not found")
        if res.delay_s:
            await asyncio.sleep(res.delay_s)
        if res.reset:
            request.transport.close()
            return web.Response(status=500)
        if res.location:
            return web.Response(status=302, headers={"Location": res.location})
        resp = web.StreamResponse(status=res.status, headers=res.headers)
        resp.content_type = res.content_type
        if res.chunked:
            resp.enable_chunked_encoding()
        else:
            resp.content_length = (
                res.content_length if res.content_length is not None else len(res.body) * res.repeat
            )
        await resp.prepare(request)
        if res.hold_s:
            await asyncio.sleep(res.hold_s)  # the client has the headers and may hang up now
        try:
            for _ in range(res.repeat):
                for i in range(0, len(res.body), res.chunk):
                    if request.transport is None or request.transport.is_closing():
                        return resp
                    part = res.body[i : i + res.chunk]
                    await resp.write(part)
                    self.body_bytes[path] += len(part)
            if res.content_length is None:
                await resp.write_eof()
        except (ConnectionError, RuntimeError):
            pass  # the client hung up
        return resp


def png(w: int, h: int, colour=(200, 40, 40)) -> bytes:
    """A PNG of w x h pixels."""
    buf = io.BytesIO()
    Image.new("RGB", (w, h), colour).save(buf, format="PNG")
    return buf.getvalue()


def encode(w: int, h: int, fmt: str, colour=(40, 90, 214), frames: int = 1) -> bytes:
    """A w x h image in a Pillow format (JPEG, WEBP, GIF with two frames, BMP, AVIF: `frames`
    frames, the later ones black)."""
    buf = io.BytesIO()
    im = Image.new("RGB", (w, h), colour)
    if fmt == "GIF":
        second = Image.new("RGB", (w * 2, h * 2), (0, 0, 0))
        im.save(buf, format="GIF", save_all=True, append_images=[second])
    elif frames > 1:
        rest = [Image.new("RGB", (w, h), (0, 0, 0)) for _ in range(frames - 1)]
        im.save(buf, format=fmt, save_all=True, append_images=rest)
    else:
        im.save(buf, format=fmt)
    return buf.getvalue()


def noisy_jpeg(w: int, h: int, seed: int = 0) -> bytes:
    """A JPEG with content (so cutting it leaves a truncated scan)."""
    import random

    rng = random.Random(seed)
    im = Image.frombytes("RGB", (w, h), bytes(rng.randrange(256) for _ in range(w * h * 3)))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def png_claiming(w: int, h: int) -> bytes:
    """A tiny valid-looking PNG whose IHDR claims w x h pixels (a decompression bomb)."""
    data = bytearray(png(1, 1))
    ihdr = struct.pack(">II", w, h) + bytes(data[24:29])
    data[16:29] = ihdr
    data[29:33] = struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return bytes(data)


@pytest.fixture
def image_server():
    """Factory: `image_server(routes, robots=None, ips=None)` starts a server stopped at test end."""
    servers: list[ImageServer] = []

    def start(routes, robots=None, ips=("127.0.0.151", "127.0.0.152")):
        server = ImageServer(list(ips), routes, robots or {})
        server.__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def ref(rid: str, src: str, **kw) -> dict:
    """An image ref whose page allows training unless told otherwise."""
    return {
        "id": rid,
        "doc_id": kw.pop("doc_id", "d" + rid),
        "src": src,
        "alt": kw.pop("alt", f"alt of {rid}"),
        "training_allowed": kw.pop("training_allowed", True),
        "noai": kw.pop("noai", False),
        **kw,
    }
