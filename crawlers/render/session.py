"""Render pages in headless Chromium (Playwright, async) with a pool of contexts and no leaked processes.

The main document is served from the crawl (route.fulfill), so it is not fetched twice;
sub-resources go to the network, each checked against the origin's robots.txt for the crawl
token. Every Chromium process started here is tracked by PID and killed if a graceful close
fails, times out, or is interrupted.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from crawlers.browser import CHROMIUM_ARGS, find_chromium
from crawlers.render import page_scripts as js
from crawlers.render.decide import LOAD_MORE_TEXTS
from crawlers.render.procs import alive, descendants, is_browser, kill_all
from crawlers.robots import RobotsTxt, origin_of

MEDIA_TYPES = {"image", "media", "font"}


class RenderInterrupted(RuntimeError):
    """Rendering stopped because the process got SIGTERM; the browser was shut down."""


@dataclass
class RenderConfig:
    """Browser, concurrency, time budget and interaction caps."""

    chromium: str | None = None
    pages_in_flight: int = 4
    page_timeout_s: float = 20.0
    block_media: bool = True
    robots_token: str = "RefineryBot"
    user_agent: str = "Mozilla/5.0 (compatible; RefineryBot/0.1; render)"
    max_scrolls: int = 8
    max_clicks: int = 8
    idle_ms: int = 300
    settle_max_ms: int = 4000
    viewport: tuple[int, int] = (1280, 1600)

    def __post_init__(self) -> None:
        if self.pages_in_flight < 1:
            raise ValueError(f"pages_in_flight={self.pages_in_flight}: must be at least 1")
        if self.page_timeout_s <= 0:
            raise ValueError(f"page_timeout_s={self.page_timeout_s}: must be positive")


@dataclass
class RenderJob:
    """One page to render: its URL and the HTML the crawl stored for it."""

    url: str
    html: str


@dataclass
class RenderOutcome:
    """The final DOM (or the error that prevented it) and what the page was denied."""

    url: str
    html: str | None
    render_ms: int
    error: str | None = None
    blocked_requests: list[dict] = field(default_factory=list)
    media_blocked: int = 0
    interactions: int = 0


class Renderer:
    """An async context manager owning one Chromium and a pool of browser contexts."""

    def __init__(self, config: RenderConfig | None = None):
        self.config = config or RenderConfig()
        self.pids: dict[int, bytes] = {}  # PID -> cmdline, so a reused PID is never killed
        self._pw = None
        self._browser = None
        self._contexts: asyncio.Queue | None = None
        self._robots: dict[str, RobotsTxt] = {}
        self._robots_locks: dict[str, asyncio.Lock] = {}

    def _track_new(self, before: set[int]) -> None:
        for pid in descendants() - before:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    self.pids[pid] = fh.read()
            except OSError:
                continue

    async def __aenter__(self) -> Renderer:
        from playwright.async_api import async_playwright

        cfg = self.config
        before = descendants()
        try:
            self._pw = await async_playwright().start()
            self._browser = await self._pw.chromium.launch(
                executable_path=str(find_chromium(cfg.chromium)), args=CHROMIUM_ARGS, headless=True
            )
            self._track_new(before)
            self._contexts = asyncio.Queue()
            for _ in range(cfg.pages_in_flight):
                ctx = await self._browser.new_context(
                    user_agent=cfg.user_agent,
                    viewport={"width": cfg.viewport[0], "height": cfg.viewport[1]},
                    service_workers="block",
                )
                await ctx.add_init_script(js.INIT_SCRIPT)
                self._contexts.put_nowait(ctx)
        except BaseException:
            self._track_new(before)
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the browser gracefully (bounded in time), then SIGKILL whatever is left."""
        try:
            if self._browser is not None:
                await asyncio.wait_for(asyncio.shield(self._browser.close()), timeout=10)
            if self._pw is not None:
                await asyncio.wait_for(asyncio.shield(self._pw.stop()), timeout=10)
        except BaseException:  # noqa: BLE001 - cleanup must go on; the kill below is the backstop
            pass
        finally:
            self._browser = self._pw = None
            self.kill_leftovers()

    def kill_leftovers(self) -> set[int]:
        """SIGKILL tracked processes still alive with the same command line (browser or driver)."""
        survivors = set()
        for pid, cmd in self.pids.items():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    same = fh.read() == cmd
            except OSError:
                same = False
            if same and alive(pid):
                survivors.add(pid)
                survivors |= {p for p in descendants(pid) if is_browser(p)}
        return kill_all(survivors)

    async def _robots_for(self, ctx, origin: str) -> RobotsTxt:
        if origin in self._robots:
            return self._robots[origin]
        lock = self._robots_locks.setdefault(origin, asyncio.Lock())
        async with lock:
            if origin not in self._robots:
                try:
                    resp = await ctx.request.get(
                        f"{origin}/robots.txt",
                        timeout=5000,
                        max_redirects=5,
                        fail_on_status_code=False,
                    )
                    parsed = RobotsTxt.from_response(resp.status, await resp.body())
                except Exception:  # noqa: BLE001 - unreachable robots.txt means disallow all (RFC 9309)
                    parsed = RobotsTxt.from_response(None, None)
                self._robots[origin] = parsed
        return self._robots[origin]

    async def render(self, job: RenderJob) -> RenderOutcome:
        """Render one page within the time budget; errors are returned, never raised."""
        assert self._contexts is not None, "use Renderer inside `async with`"
        ctx = await self._contexts.get()
        out = RenderOutcome(job.url, None, 0)
        start = time.monotonic()
        page = None
        try:
            page = await ctx.new_page()
            await asyncio.wait_for(self._drive(ctx, page, job, out), self.config.page_timeout_s)
        except TimeoutError:
            out.error = f"timeout after {self.config.page_timeout_s:g}s"
            out.html = await self._snapshot(page)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad page must not stop the others
            out.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        finally:
            out.render_ms = int((time.monotonic() - start) * 1000)
            if page is not None:
                try:
                    await asyncio.wait_for(page.close(), 5)
                except BaseException:  # noqa: BLE001 - the browser is closed later anyway
                    pass
            self._contexts.put_nowait(ctx)
        return out

    async def _snapshot(self, page) -> str | None:
        # A page that ran out of time may still have most of its content: keep what is there.
        try:
            return await asyncio.wait_for(page.content(), 2) if page is not None else None
        except BaseException:  # noqa: BLE001 - no snapshot is an acceptable outcome
            return None

    async def _drive(self, ctx, page, job: RenderJob, out: RenderOutcome) -> None:
        cfg = self.config
        inflight = {"n": 0}
        page.on("request", lambda r: inflight.__setitem__("n", inflight["n"] + 1))
        for ev in ("requestfinished", "requestfailed"):
            page.on(ev, lambda r: inflight.__setitem__("n", max(0, inflight["n"] - 1)))

        served = {"main": False}

        async def route(route, request):
            url = request.url
            # The first main-frame navigation is the crawled page: serve the stored HTML (the URL
            # may come back normalised, e.g. with a trailing slash, so it is not compared).
            if (
                not served["main"]
                and request.is_navigation_request()
                and request.frame == page.main_frame
            ):
                served["main"] = True
                await route.fulfill(
                    status=200, content_type="text/html; charset=utf-8", body=job.html
                )
                return
            if not url.startswith(("http://", "https://")):
                await route.continue_()
                return
            if cfg.block_media and request.resource_type in MEDIA_TYPES:
                out.media_blocked += 1
                await route.abort("blockedbyclient")
                return
            try:
                origin = origin_of(url)
            except ValueError:
                out.blocked_requests.append({"url": url, "reason": "no origin to check robots.txt"})
                await route.abort("blockedbyclient")
                return
            robots = await self._robots_for(ctx, origin)
            if not robots.allows(cfg.robots_token, url):
                out.blocked_requests.append(
                    {"url": url, "reason": f"robots.txt disallows {cfg.robots_token}"}
                )
                await route.abort("blockedbyclient")
                return
            await route.continue_()

        await page.route("**/*", route)
        await page.goto(job.url, wait_until="load")
        await self._settle(page, inflight)
        for _ in range(cfg.max_scrolls):
            before = await page.evaluate(js.SCROLL_TO_END)
            await self._settle(page, inflight)
            if await page.evaluate(js.SCROLL_TO_END) <= before:
                break
            out.interactions += 1
        phrases = [p.lower() for p in LOAD_MORE_TEXTS]
        for _ in range(cfg.max_clicks):
            if not await page.evaluate(js.CLICK_LOAD_MORE, phrases):
                break
            out.interactions += 1
            await self._settle(page, inflight)
        for _ in range(3):  # opening one expander can reveal nested ones
            opened = await page.evaluate(js.OPEN_EXPANDERS)
            if not opened:
                break
            out.interactions += opened
            await self._settle(page, inflight)
        await page.evaluate(js.UNHIDE_PANELS)
        await page.evaluate(js.FLATTEN_SHADOW)
        out.html = await page.content()

    async def _settle(self, page, inflight: dict) -> None:
        """Wait until no request is in flight, no short timer is pending and the DOM is quiet."""
        cfg = self.config
        deadline = time.monotonic() + cfg.settle_max_ms / 1000
        while time.monotonic() < deadline:
            quiet_ms, timers = await page.evaluate(js.SETTLE_PROBE)
            if inflight["n"] == 0 and timers == 0 and quiet_ms >= cfg.idle_ms:
                return
            await asyncio.sleep(0.05)


async def render_all(
    jobs: Iterable[RenderJob],
    renderer: Renderer,
    on_result: Callable[[RenderOutcome], None] | None = None,
) -> list[RenderOutcome]:
    """Render jobs on an open Renderer with its `pages_in_flight` concurrency, in input order."""

    async def one(job: RenderJob) -> RenderOutcome:
        res = await renderer.render(job)
        if on_result:
            on_result(res)
        return res

    return list(await asyncio.gather(*(one(j) for j in jobs)))


async def _main(jobs, renderer: Renderer, on_result) -> list[RenderOutcome]:
    loop = asyncio.get_running_loop()
    on_main = threading.current_thread() is threading.main_thread()
    if on_main:
        # SIGTERM cancels the run like Ctrl-C does, so the browser is closed on the way out.
        loop.add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)
    try:
        async with renderer:
            return await render_all(jobs, renderer, on_result)
    finally:
        if on_main:
            loop.remove_signal_handler(signal.SIGTERM)


def render_pages(
    jobs: Iterable[RenderJob],
    config: RenderConfig | None = None,
    on_result: Callable[[RenderOutcome], None] | None = None,
) -> list[RenderOutcome]:
    """Synchronous entry point: render every job; no Chromium survives, even on Ctrl-C or SIGTERM."""
    renderer = Renderer(config or RenderConfig())
    try:
        return asyncio.run(_main(list(jobs), renderer, on_result))
    except asyncio.CancelledError as exc:
        raise RenderInterrupted(
            "rendering was cancelled (SIGTERM); the browser was shut down"
        ) from exc
    finally:
        renderer.kill_leftovers()
