"""Render pages in headless Chromium (Playwright, async), each page in a fresh browser context, with
no leaked processes.

The browser has no network of its own: Chromium is pointed at a proxy port that refuses every
connection, and every request a page makes is intercepted (Playwright routing) and answered
with `route.fulfill` from the crawl's `Downloader`, so robots.txt (both tokens), the SSRF guard,
per-host politeness, retries and caps apply to sub-requests, JS/meta navigations and redirects
exactly as they do to the crawl. The main document is served from the crawl's WARC. Every
response a page used can be archived (`RenderArchive`) and a render replayed from those records
with no network at all (`RenderJob.archive`). A same-origin frame whose document the render
served itself (so those rules applied to it) is inlined into the page's DOM; a frame they
blocked never loaded and is left as it is. Every Chromium process started here is tracked by
PID and killed if a graceful close fails, times out, or is interrupted; a browser that crashes
is relaunched and the pages it took down are rendered once more.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from common.browser import fallback_plan, find_chromium, launch_kwargs, log_once, sandbox_plan
from common.procs import alive, descendants, is_browser, kill_all
from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.downloader import Downloader
from crawlers.crawl.fetcher import Hop
from crawlers.crawl.html import (
    Directives,
    apply_meta_robots,
    apply_x_robots_tag,
    document_root,
)
from crawlers.crawl.robots_policy import ALLOWED, DISALLOWED
from crawlers.crawl.ssrf import blocked_reason, parse_ip_literal
from crawlers.render import page_scripts as js
from crawlers.render.archive import (
    ArchivedPage,
    ArchiveLocation,
    Captured,
    RenderArchive,
    browser_headers,
)
from crawlers.render.decide import (
    LOAD_MORE_PATTERN,
    LOAD_MORE_TEXTS,
    MORE_NAME_PATTERN,
    PAGER_DENY_PATTERN,
)
from crawlers.robots import origin_of

MEDIA_TYPES = {"image", "media", "font"}
# Responses that cannot put text into the DOM: loaded even when their site opts out of training.
# A stylesheet can (`content: "..."` shows text, and a script can read it from the CSSOM), so an
# opted-out one is not loaded, like a script or a fetch.
TEXTLESS_TYPES = MEDIA_TYPES
ASSET_TYPES = {"script", "stylesheet"}  # shared by a site's pages: fetched once per run
ASSET_CACHE_BYTES = 64 * 2**20
# WebRTC talks UDP (STUN/TURN, ICE) around the refusing proxy and the routing, which are TCP only.
# Chromium is told to send no UDP that does not go through its proxy (common.browser.NO_UDP_ARGS),
# and every frame of every page loses the WebRTC constructors before its own scripts run.
NO_WEBRTC = """(() => {
  const names = Object.getOwnPropertyNames(globalThis).filter((n) => /^(webkit)?RTC/.test(n));
  for (const name of names) {
    try { delete globalThis[name]; } catch (e) {}
    try {
      Object.defineProperty(globalThis, name, {value: undefined, writable: false, configurable: false});
    } catch (e) {}
  }
})();"""
DEFAULT_USER_AGENT = CrawlConfig.model_fields["user_agent"].default
log = logging.getLogger(__name__)


class RenderInterrupted(RuntimeError):
    """Rendering stopped because the process got SIGTERM; the browser was shut down."""


@dataclass
class RenderConfig:
    """Browser, concurrency, time budget, interaction caps, and the downloader's policies."""

    chromium: str | None = None
    pages_in_flight: int = 4
    page_timeout_s: float = 20.0
    block_media: bool = True
    robots_token: str = "RefineryBot"  # the crawl token: decides what is fetched
    training_token: str = "RefineryBot-Extended"  # recorded per sub-resource, as in the crawl
    user_agent: str | None = None  # None: the crawl's User-Agent template with robots_token
    allow_private_networks: bool = False
    delay: float = 1.0  # seconds between requests to one host, as in the crawl
    max_retries: int = 1
    max_page_bytes: int = 20 * 2**20  # sub-resource bytes per page
    sandbox: str = "auto"  # auto | on | off (see common.browser.sandbox_plan)
    archive_dir: str | Path | None = None  # where render WARCs go (None: not archived)
    max_scrolls: int = 8
    max_clicks: int = 8
    # The first scroll goes down a viewport at a time (lazy sections mid-page), at most this
    # many steps and this long (and a fifth of page_timeout_s); then it jumps to the end as
    # every later scroll does.
    scroll_steps: int = 24
    scroll_pass_ms: int = 3000
    # Client-side pagers clicked through (states after the first), and tabs clicked one at a
    # time (each settled, the content it replaced kept); each of the two within cycle_max_ms
    # (and a fifth of page_timeout_s).
    max_pager_states: int = 5
    max_tab_clicks: int = 12
    cycle_max_ms: int = 5000
    idle_ms: int = 300
    settle_max_ms: int = 4000
    viewport: tuple[int, int] = (1280, 1600)
    # The final DOM's size cap (characters of its HTML; extraction's max_body_bytes is the same
    # 8 MB): a larger DOM is not serialised; the page's html is None and its error says why.
    max_dom_chars: int = 8_000_000

    def __post_init__(self) -> None:
        if self.pages_in_flight < 1:
            raise ValueError(f"pages_in_flight={self.pages_in_flight}: must be at least 1")
        if self.max_dom_chars < 1:
            raise ValueError(f"max_dom_chars={self.max_dom_chars}: must be at least 1")
        if self.page_timeout_s <= 0:
            raise ValueError(f"page_timeout_s={self.page_timeout_s}: must be positive")
        if self.sandbox not in ("auto", "on", "off"):
            raise ValueError(f"sandbox={self.sandbox!r}: choose auto, on or off")
        self.crawl_config()  # agent/user-agent/delay problems surface here, naming the field

    def crawl_config(self) -> CrawlConfig:
        """The downloader's configuration: tokens, User-Agent, SSRF, politeness, retries."""
        budget = max(1.0, float(self.page_timeout_s))
        return CrawlConfig(
            agent=self.robots_token,
            training_agent=self.training_token,
            user_agent=self.user_agent or DEFAULT_USER_AGENT,
            allow_private_networks=self.allow_private_networks,
            delay=self.delay,
            max_retries=self.max_retries,
            concurrency=max(4, self.pages_in_flight * 2),
            connect_timeout=min(10.0, budget),
            read_timeout=min(20.0, budget),
            total_timeout=min(60.0, budget),
            robots_retries=0,
        )


@dataclass
class RenderJob:
    """One page to render: its URL and the HTML the crawl stored for it.

    With `archive` set, the render is a replay: sub-resources come only from those records.
    """

    url: str
    html: str
    archive: ArchivedPage | None = None
    # The page's own training consent (the crawl record's training_allowed). Unless it is False
    # (the page is opted out already: nothing of it is for training), text from sub-requests
    # that opt out of training (robots.txt for the training token, X-Robots-Tag or a framed
    # document's meta robots noai) is not loaded.
    training_allowed: bool | None = None
    # The caller's word that this page's own origin may be reached although its host is a
    # private IP literal (that exact origin only; names never; see `trusted_origin`). Set it
    # only for a page a crawl told to allow private networks fetched (`plan_renders` reads the
    # crawl's own allow_private_networks), never for an imported record or any URL read from
    # data alone. Without it (or RenderConfig.allow_private_networks), a private page origin is
    # refused like every other private target.
    trust_own_origin: bool = False


@dataclass
class RenderOutcome:
    """The final DOM (or the error that prevented it), what the page used and was denied."""

    url: str
    html: str | None
    render_ms: int
    error: str | None = None
    blocked_requests: list[dict] = field(default_factory=list)
    media_blocked: int = 0
    interactions: int = 0
    # url, status, resource_type, robots_training (the training token's robots.txt decision)
    subresources: list[dict] = field(default_factory=list)
    archive: ArchiveLocation | None = None
    # Sub-requests not loaded because they opt out of training (robots.txt disallows the training
    # token, or X-Robots-Tag / a framed document's meta robots says noai): the text they would
    # bring is opted out, so it never reaches the DOM (also in blocked_requests).
    opted_out: list[str] = field(default_factory=list)
    # Where a script or meta refresh tried to take the page (not followed; the DOM stays the page's).
    navigated_to: str | None = None
    # Same-origin URLs the page gave itself with history.pushState/replaceState (a client-side
    # pager's "?page=2"), in the order given: addresses of states the crawl may fetch itself.
    history_urls: list[str] = field(default_factory=list)


async def _refuse(route) -> None:
    """Context-wide fallback route: a request no page route answers (a popup's) is refused."""
    await route.abort("blockedbyclient")


def trusted_origin(page_url: str) -> str | None:
    """The page's own origin when its host is a private IP literal; only asked for a job whose
    caller vouches for that origin (`RenderJob.trust_own_origin`), never for a URL alone."""
    try:
        origin, host = origin_of(page_url), urlsplit(page_url).hostname or ""
    except ValueError:
        return None
    addr = parse_ip_literal(host)
    return origin if addr is not None and blocked_reason(addr) else None


def _reason(url: str, res) -> str:
    err = (res.error or "").splitlines()[0][:300]
    if err.startswith("robots-disallowed"):
        err = f"robots.txt disallows {res.error.split(' for ', 1)[-1]}"
    elif err.startswith("robots-unreachable"):
        err = "robots.txt unreachable (RFC 9309: disallow all)"
    if res.final_url and res.final_url != url:
        return f"redirect to {res.final_url}: {err}"
    return err


def xrt_noai(hops: list[Hop], agent: str, training_agent: str) -> str | None:
    """Why a response opts out of training by its X-Robots-Tag, or None.

    Every hop counts (an opt-out said on a redirect holds for what it leads to, as in the image
    fetch), read as the crawl reads the header (`apply_x_robots_tag`: unscoped, or scoped to the
    crawl or the training token). Only `noai`: `noimageai` leaves text free to use.
    """
    for i, hop in enumerate(hops):
        values = [v for k, v in hop.response_headers if k.lower() == "x-robots-tag"]
        if not values:
            continue
        d = Directives()
        apply_x_robots_tag(d, values, agent, training_agent)
        if d.noai:
            where = f" on the redirect from {hop.url}" if i < len(hops) - 1 else ""
            return f"X-Robots-Tag {'; '.join(values)!r}{where} says noai"
    return None


def meta_noai(body: bytes, agent: str, training_agent: str) -> str | None:
    """Why an HTML body opts out of training by its meta robots (noai), or None.

    Read as the crawl reads a page's metas (`apply_meta_robots`: name="robots", a name listing
    one of our tokens, or http-equiv="X-Robots-Tag").
    """
    root = document_root(body)
    if root is None:
        return None
    for meta in root.iter("meta"):
        name, equiv = meta.get("name") or "", meta.get("http-equiv") or ""
        content = meta.get("content") or ""
        d = Directives()
        apply_meta_robots(d, name, content, agent, training_agent, equiv)
        if d.noai:
            attr = f'http-equiv="{equiv}"' if equiv else f'name="{name}"'
            return f'meta robots <meta {attr} content="{content[:200]}"> says noai'
    return None


def _is_html(resource_type: str, headers: list[tuple[str, str]]) -> bool:
    """A response declared HTML (a frame's, or a fetch's that a script puts into the page), or a
    frame's document that declares no type (the browser sniffs it)."""
    ctype = next((v for k, v in headers if k.lower() == "content-type"), "").lower()
    return "html" in ctype or (resource_type == "document" and not ctype.strip())


class Renderer:
    """An async context manager owning one Chromium (relaunched if it crashes) and the downloader.

    Each page is rendered in a browser context of its own, closed when the page is done: no
    cookie, storage, cache or service worker one page leaves behind is seen by the next, so a
    page's DOM depends on the page alone, and an opted-out page's data never shows in another's.
    """

    def __init__(self, config: RenderConfig | None = None):
        self.config = config or RenderConfig()
        self.pids: dict[int, bytes] = {}  # PID -> cmdline, so a reused PID is never killed
        self.sandbox_note = ""
        self.downloader: Downloader | None = None
        self.archive: RenderArchive | None = None
        self._pw = None
        self._browser = None
        self._slots: asyncio.Semaphore | None = None  # pages in flight
        self._lock: asyncio.Lock | None = None  # held while the browser is (re)launched
        self._chromium: Path | None = None
        self._proxy: dict | None = None
        self.crashes = 0  # browser crashes seen (each one relaunched the browser)
        self._broken: str | None = None  # why the browser could not be relaunched
        self._workdir: str | None = None
        self._proxy_sock: socket.socket | None = None
        self._serial = 0
        self._assets: dict[tuple[str, str | None], asyncio.Task] = {}  # see _fetch
        self._asset_bytes = 0

    def _track_new(self, before: set[int]) -> None:
        for pid in descendants() - before:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    self.pids[pid] = fh.read()
            except OSError:
                continue

    async def _launch(self, chromium: Path, proxy: dict):
        cfg = self.config
        assert self._pw is not None and self._workdir is not None
        plan = sandbox_plan(chromium, Path(self._workdir), cfg.sandbox)
        try:
            browser = await self._pw.chromium.launch(**launch_kwargs(plan, proxy=proxy))
        except Exception as exc:
            plan = fallback_plan(chromium, cfg.sandbox, plan, exc)
            browser = await self._pw.chromium.launch(**launch_kwargs(plan, proxy=proxy))
        self.sandbox_note = plan.why
        if plan.sandbox:
            log_once(logging.INFO, f"Chromium sandbox on: {plan.why}")
        else:
            log_once(logging.WARNING, f"Chromium runs WITHOUT its sandbox: {plan.why}")
        return browser

    async def __aenter__(self) -> Renderer:
        from playwright.async_api import async_playwright

        cfg = self.config
        before = descendants()
        try:
            self.downloader = Downloader(cfg.crawl_config(), max_page_bytes=cfg.max_page_bytes)
            await self.downloader.__aenter__()
            if cfg.archive_dir is not None:
                self.archive = RenderArchive(cfg.archive_dir)
            self._workdir = tempfile.mkdtemp(prefix="refinery-chromium-")
            # A bound, never-listening port: Chromium's own connections (WebSockets, preconnect,
            # anything not routed) go to it and are refused; nothing else can take the port.
            self._proxy_sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._proxy_sock.bind(("127.0.0.1", 0))
            port = self._proxy_sock.getsockname()[1]
            self._proxy = {"server": f"http://127.0.0.1:{port}", "bypass": "<-loopback>"}
            self._chromium = find_chromium(cfg.chromium)
            self._pw = await async_playwright().start()
            self._browser = await self._launch(self._chromium, self._proxy)
            self._track_new(before)
            self._slots = asyncio.Semaphore(cfg.pages_in_flight)
            self._lock = asyncio.Lock()
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
            try:
                if self.downloader is not None:
                    await asyncio.wait_for(asyncio.shield(self.downloader.__aexit__()), 10)
            except BaseException:  # noqa: BLE001 - the sessions die with the loop anyway
                pass
            self.downloader = None
            if self.archive is not None:
                self.archive.close()
            if self._proxy_sock is not None:
                self._proxy_sock.close()
                self._proxy_sock = None
            if self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)
                self._workdir = None

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

    async def render(self, job: RenderJob) -> RenderOutcome:
        """Render one page within the time budget; errors are returned, never raised.

        A page the browser crashed under (Chromium killed, out of memory) is rendered once more
        in the relaunched browser; its error says so ("browser crashed; retried").
        """
        assert self._slots is not None, "use Renderer inside `async with`"
        async with self._slots:
            out, captured, crashed = await self._render_once(job)
            if crashed is not None:
                first = out.error
                if await self._relaunch(crashed):
                    out, captured, again = await self._render_once(job)
                    if again is not None:
                        await self._relaunch(again)  # for the pages after this one
                        out.error = f"browser crashed twice; retried once: {out.error}"
                    else:
                        note = "browser crashed; retried"
                        out.error = f"{note}; then {out.error}" if out.error else note
                else:
                    out.error = (
                        f"browser crashed ({first}) and could not be relaunched: {self._broken}"
                    )
        if self.archive is not None and job.archive is None:
            info = {
                "blocked": out.blocked_requests,
                "user_agent": self.downloader.user_agent,
                "agent": self.config.robots_token,
                "training_agent": self.config.training_token,
                "error": out.error,
            }
            out.archive = self.archive.write_page(job.url, list(captured), info)
        return out

    async def _render_once(self, job: RenderJob):
        """(outcome, captured responses, the browser if it crashed under the page, else None)."""
        out = RenderOutcome(job.url, None, 0)
        captured: list[Captured] = []
        assert self._lock is not None
        async with self._lock:  # never a browser that is being relaunched
            browser = self._browser
        if browser is None:
            out.error = f"browser unavailable: {self._broken}"
            return out, captured, None
        self._serial += 1
        key = f"{job.url}#{self._serial}"  # the same URL may be rendered twice at once
        start = time.monotonic()
        ctx = page = None
        # The main document served yet; the framed documents served (URLs), the only frames
        # whose content may be inlined into the page.
        served: dict = {"main": False, "frames": set()}
        try:
            ctx = await self._new_context(browser)
            page = await ctx.new_page()
            await asyncio.wait_for(
                self._drive(page, job, out, captured, key, served), self.config.page_timeout_s
            )
        except TimeoutError:
            out.error = f"timeout after {self.config.page_timeout_s:g}s"
            out.html = await self._snapshot(page, out, job, served)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad page must not stop the others
            out.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if type(exc).__name__ == "TargetClosedError":
                await self._disconnected(browser)
        finally:
            out.render_ms = int((time.monotonic() - start) * 1000)
            if ctx is not None:
                try:
                    await asyncio.wait_for(ctx.close(), 5)
                except BaseException:  # noqa: BLE001 - the browser is closed later anyway
                    pass
            if self.downloader is not None:
                self.downloader.caps.forget(key)
        return out, captured, (None if browser.is_connected() else browser)

    async def _new_context(self, browser):
        """A fresh context for one page: nothing another page stored is in it."""
        cfg = self.config
        assert self.downloader is not None
        ctx = await browser.new_context(
            user_agent=self.downloader.user_agent,
            viewport={"width": cfg.viewport[0], "height": cfg.viewport[1]},
            service_workers="block",
        )
        try:
            await ctx.add_init_script(NO_WEBRTC)
            await ctx.add_init_script(js.INIT_SCRIPT)
            # Pages' own routes answer first; this catches what no page route covers (popups).
            await ctx.route("**/*", _refuse)
        except BaseException:
            await asyncio.wait_for(ctx.close(), 5)
            raise
        return ctx

    @staticmethod
    async def _disconnected(browser, wait_s: float = 2.0) -> None:
        # A killed browser fails the page's call before Playwright reports the disconnect.
        deadline = time.monotonic() + wait_s
        while browser.is_connected() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    async def _relaunch(self, crashed) -> bool:
        """Start a new browser in place of `crashed` (once per crash, whichever page sees it
        first); False if it cannot be started, and then no page is rendered any more."""
        assert self._lock is not None
        async with self._lock:
            if self._browser is not crashed:
                return self._browser is not None  # another page relaunched it (or could not)
            self.crashes += 1
            log.warning(
                "Chromium crashed or was killed (crash %d of this run): relaunching it",
                self.crashes,
            )
            old_pw, self._browser, self._pw = self._pw, None, None
            try:
                await asyncio.wait_for(asyncio.shield(old_pw.stop()), timeout=10)
            except BaseException:  # noqa: BLE001 - the kill below is the backstop
                pass
            self.kill_leftovers()
            self.pids.clear()
            before = descendants()
            try:
                from playwright.async_api import async_playwright

                self._pw = await async_playwright().start()
                self._browser = await asyncio.wait_for(
                    self._launch(self._chromium, self._proxy), timeout=60
                )
            except Exception as exc:  # noqa: BLE001 - recorded on every page from now on
                first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
                self._broken = f"{type(exc).__name__}: {first}"
                log.error(
                    "Chromium could not be relaunched: %s; no page is rendered any more", first
                )
                return False
            finally:
                self._track_new(before)
            return True

    async def _snapshot(self, page, out: RenderOutcome, job: RenderJob, served: dict) -> str | None:
        # A page that ran out of time may still have most of its content: keep what is there,
        # prepared as a finished render's is (content clicks replaced put back, panels shown,
        # open shadow roots copied out, same-origin frames inlined).
        if page is None:
            return None
        for script in (js.KEEP_FINISH, js.UNHIDE_PANELS, js.FLATTEN_SHADOW):
            try:
                await asyncio.wait_for(page.evaluate(script), 1)
            except BaseException:  # noqa: BLE001 - the DOM as it is, then
                pass
        try:
            await asyncio.wait_for(self._inline_frames(page, job, served), 2)
        except BaseException:  # noqa: BLE001 - frames left as they are, then
            pass
        try:
            out.history_urls = await asyncio.wait_for(self._history(page), 1)
        except BaseException:  # noqa: BLE001 - none recorded, then
            pass
        try:
            return await asyncio.wait_for(self._serialise(page, out), 3)
        except BaseException:  # noqa: BLE001 - no snapshot is an acceptable outcome
            return None

    async def _serialise(self, page, out: RenderOutcome) -> str | None:
        """The page's HTML, or None (and the page's error says why) when the DOM is over the cap."""
        cap = self.config.max_dom_chars
        size = await page.evaluate(js.DOM_SIZE)
        if size > cap:
            why = f"dom too large: {size} chars > {cap} (RenderConfig.max_dom_chars)"
            out.error = f"{out.error}; {why}" if out.error else why
            return None
        return await page.content()

    async def _drive(
        self,
        page,
        job: RenderJob,
        out: RenderOutcome,
        captured: list[Captured],
        key: str,
        served: dict,
    ) -> None:
        inflight = {"n": 0, "total": 0}
        page.on(
            "request", lambda r: inflight.update(n=inflight["n"] + 1, total=inflight["total"] + 1)
        )
        for ev in ("requestfinished", "requestfailed"):
            page.on(ev, lambda r: inflight.__setitem__("n", max(0, inflight["n"] - 1)))
        # Trust is the caller's (a crawl explicitly allowed private networks), never the URL's.
        trusted = None
        if job.trust_own_origin and not self.config.allow_private_networks:
            trusted = trusted_origin(job.url)

        async def route(route, request):
            try:
                await self._answer(route, request, page, job, out, captured, key, trusted, served)
            except Exception as exc:  # noqa: BLE001 - e.g. the page closed (timeout) while fetching
                first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
                if not page.is_closed():  # a closed page's outcome is already reported
                    reason = f"not answered: {type(exc).__name__}: {first}"
                    out.blocked_requests.append({"url": request.url, "reason": reason})
                try:
                    await route.abort("failed")
                except Exception:  # noqa: BLE001 - already handled or page gone
                    pass

        await page.route("**/*", route)
        await page.goto(job.url, wait_until="commit")
        await self._loaded(page, out)
        await self._settle(page, inflight)
        if await page.evaluate(js.DISMISS_CONSENT, [js.REJECT_LABELS, js.ACCEPT_LABELS]):
            out.interactions += 1  # some sites load their content once the visitor has chosen
            await self._settle(page, inflight)
        await self._interact(page, inflight, out)
        # From here on, what a click takes out of the page (a list's previous page, a shared
        # panel's previous tab) is kept and put back before the DOM is serialised.
        await page.evaluate(js.KEEP_START)
        await self._paginate(page, inflight, out)
        await self._cycle_tabs(page, inflight, out)
        for _ in range(3):  # opening one expander can reveal nested ones
            opened = await page.evaluate(js.OPEN_EXPANDERS)
            if not opened:
                break
            out.interactions += opened
            await self._settle(page, inflight)
        await page.evaluate(js.KEEP_FINISH)
        await page.evaluate(js.UNHIDE_PANELS)
        await page.evaluate(js.FLATTEN_SHADOW)
        await self._inline_frames(page, job, served)
        out.history_urls = await self._history(page)
        out.html = await self._serialise(page, out)

    async def _loaded(self, page, out: RenderOutcome) -> None:
        """Wait for the page's load, at most half its budget, then settling goes on.

        A navigation away that `_answer` refused (a script or meta refresh) leaves the page's
        own document in place, but the load event is never reported for it: once one is
        recorded there is no load to wait for.
        """
        deadline = time.monotonic() + self.config.page_timeout_s / 2
        while not out.navigated_to and time.monotonic() < deadline:
            if await page.evaluate("document.readyState") == "complete":
                return
            await asyncio.sleep(0.05)

    async def _interact(self, page, inflight: dict, out: RenderOutcome) -> None:
        """Scroll to the end and click load-more controls until the page's text stops growing.

        The first round scrolls down a viewport at a time first (`js.SCROLL_THROUGH`: sections
        mid-page that load when they come into view), bounded by `scroll_steps` and
        `scroll_pass_ms` (at most a fifth of the page's budget). Each round scrolls every
        scroller to its end (scroll listeners, IntersectionObserver sentinels) and clicks one
        visible control that promises more content (a button, an `<a href="#">`, a
        `role=button`, in light DOM or an open shadow root); rounds go on while either grew the
        text, within `max_scrolls` scrolls and `max_clicks` clicks.
        """
        cfg = self.config
        phrases = [p.lower() for p in LOAD_MORE_TEXTS]
        scrolls = clicks = 0
        size = await page.evaluate(js.CONTENT_SIZE)
        while scrolls < cfg.max_scrolls or clicks < cfg.max_clicks:
            grew = False
            if scrolls < cfg.max_scrolls:
                scrolls += 1
                if scrolls == 1 and cfg.scroll_steps > 0:
                    steps = [cfg.scroll_steps, min(cfg.scroll_pass_ms, self._fifth_ms()), 50]
                    await page.evaluate(js.SCROLL_THROUGH, steps)
                await page.evaluate(js.SCROLL_TO_END)
                await self._settle(page, inflight)
                now = await page.evaluate(js.CONTENT_SIZE)
                if now > size:
                    out.interactions, size, grew = out.interactions + 1, now, True
            if clicks < cfg.max_clicks and await page.evaluate(
                js.CLICK_LOAD_MORE, [phrases, LOAD_MORE_PATTERN, MORE_NAME_PATTERN]
            ):
                clicks += 1
                await self._settle(page, inflight)
                now = await page.evaluate(js.CONTENT_SIZE)
                if now > size:
                    out.interactions, size, grew = out.interactions + 1, now, True
            if not grew:
                return

    def _fifth_ms(self) -> float:
        """A fifth of the page's time budget, in ms: the most one extra interaction phase takes
        (a probe's short budget keeps its phases short)."""
        return self.config.page_timeout_s * 200

    async def _paginate(self, page, inflight: dict, out: RenderOutcome) -> None:
        """Click a client-side pager through its next states ("Next page", "›", "Older posts",
        the next page number: `js.CLICK_NEXT_PAGE`), settling after each, while each click
        changes the page's text, within `max_pager_states` clicks and `cycle_max_ms` (at most a
        fifth of the page's budget). The list a click replaces is kept (`js.KEEP_START`), so
        every state's items reach the DOM."""
        cfg = self.config
        deadline = time.monotonic() + min(cfg.cycle_max_ms, self._fifth_ms()) / 1000
        args = [
            js.NEXT_PAGE_PATTERN,
            js.NEXT_WORD_PATTERN,
            js.NEXT_PAGE_BOX,
            js.NEXT_PAGE_LABEL,
            PAGER_DENY_PATTERN,
        ]
        before = await page.evaluate(js.TEXT_PRINT)
        for _ in range(cfg.max_pager_states):
            if time.monotonic() >= deadline or not await page.evaluate(js.CLICK_NEXT_PAGE, args):
                return
            await self._settle(page, inflight)
            now = await page.evaluate(js.TEXT_PRINT)
            if now == before:
                return  # the control changed nothing: the last page, or no pager after all
            out.interactions, before = out.interactions + 1, now

    async def _cycle_tabs(self, page, inflight: dict, out: RenderOutcome) -> None:
        """Click each tab of each tab group (`js.TAB_GROUPS`) one at a time, settling after
        each: a tab that fetches into one shared panel replaces the last tab's content, which is
        kept (`js.KEEP_START`). Within `max_tab_clicks` clicks and `cycle_max_ms` (at most a
        fifth of the page's budget); a group whose first two clicks neither fetched nor replaced
        anything (panes that are only shown and hidden) is left to `js.OPEN_EXPANDERS`, which
        clicks its other tabs at once."""
        cfg = self.config
        if cfg.max_tab_clicks <= 0:
            return
        deadline = time.monotonic() + min(cfg.cycle_max_ms, self._fifth_ms()) / 1000
        clicks = 0
        for ids in await page.evaluate(js.TAB_GROUPS, [6, 8]):
            idle = 0
            for tab in ids:
                if clicks >= cfg.max_tab_clicks or time.monotonic() >= deadline:
                    return
                if idle >= 2:
                    break
                kept, asked = await page.evaluate(js.KEPT_COUNT), inflight["total"]
                if not await page.evaluate(js.TAB_CLICK, tab):
                    continue
                clicks += 1
                await self._settle(page, inflight)
                if inflight["total"] > asked or await page.evaluate(js.KEPT_COUNT) > kept:
                    out.interactions, idle = out.interactions + 1, 0
                else:
                    idle += 1

    async def _inline_frames(self, page, job: RenderJob, served: dict) -> int:
        """Put each same-origin framed document's content in its <iframe>'s place (innermost
        first; `js.INLINE_FRAME`): only a frame whose document this render served itself
        (`served["frames"]`: fetched through the downloader, so robots.txt, the SSRF guard and
        training opt-outs were applied; a blocked frame never loaded and is left alone) and of
        the page's own origin. At most 20 frames, none bigger than `max_dom_chars`."""
        frames = served.get("frames") or set()
        if not frames:
            return 0
        try:
            origin = origin_of(job.url)
        except ValueError:
            return 0
        done = 0

        async def walk(frame, depth: int) -> None:
            nonlocal done
            for child in list(frame.child_frames):
                if depth < 4:
                    await walk(child, depth + 1)  # its own frames go into it first
                if done >= 20 or child.is_detached() or child.url not in frames:
                    continue
                try:
                    if origin_of(child.url) != origin:
                        continue
                    await child.evaluate(js.FLATTEN_SHADOW)
                    html = await child.evaluate(js.FRAME_HTML)
                    if len(html) > self.config.max_dom_chars:
                        continue
                    element = await child.frame_element()
                    if await element.evaluate(js.INLINE_FRAME, [html, child.url]):
                        done += 1
                except Exception:  # noqa: BLE001 - a frame that went away stays as it was
                    continue

        await walk(page.main_frame, 0)
        return done

    @staticmethod
    async def _history(page) -> list[str]:
        """The same-origin URLs the page pushed or replaced into its history (interact.js)."""
        urls = await page.evaluate(js.HISTORY_URLS)
        return [u for u in urls or [] if isinstance(u, str)]

    async def _answer(self, route, request, page, job, out, captured, key, trusted, served) -> None:
        """Fulfil one intercepted request: the stored page, the archive, or the downloader."""
        url = request.url
        # The first main-frame navigation is the crawled page: serve the stored HTML (the URL
        # may come back normalised, e.g. with a trailing slash, so it is not compared).
        if request.is_navigation_request() and request.frame == page.main_frame:
            if not served["main"]:
                served["main"] = True
                await route.fulfill(
                    status=200, content_type="text/html; charset=utf-8", body=job.html
                )
                return
            # A script or meta refresh navigating away (to a 404, a login, another page) would
            # replace the document with another page's: never followed, nothing is fetched.
            # ERR_ABORTED cancels the navigation and leaves the current document in place.
            out.navigated_to = out.navigated_to or url
            reason = "navigation away from the page: not followed, the page's own DOM is kept"
            out.blocked_requests.append({"url": url, "reason": reason})
            await route.abort("aborted")
            return
        if self.config.block_media and request.resource_type in MEDIA_TYPES:
            out.media_blocked += 1
            await route.abort("blockedbyclient")
            return
        if request.method != "GET":
            reason = f"method {request.method}: only GET requests are fetched for a render"
            out.blocked_requests.append({"url": url, "reason": reason})
            await route.abort("blockedbyclient")
            return
        if job.archive is not None:
            stored = job.archive.take(url)
            if stored is None:
                out.blocked_requests.append({"url": url, "reason": "not in the render archive"})
                await route.abort("blockedbyclient")
                return
            why = None
            if job.training_allowed is not False and request.resource_type not in TEXTLESS_TYPES:
                # A batch archived before sub-resources' own opt-outs were read may hold one.
                hop = Hop(url, stored.status, response_headers=stored.headers)
                why = self._own_opt_out(request.resource_type, [hop], stored.body)
            if why is not None:
                await self._opt_out(route, url, why, out)
                return
            out.subresources.append(
                {
                    "url": url,
                    "status": stored.status,
                    "robots_training": None,
                    "resource_type": request.resource_type,
                }
            )
            await route.fulfill(
                status=stored.status, headers=browser_headers(stored.headers), body=stored.body
            )
            if request.resource_type == "document":
                served["frames"].add(url)
            return
        assert self.downloader is not None
        res = await self._fetch(url, request.resource_type, key, trusted)
        if res.error is not None or res.status is None or not res.hops:
            out.blocked_requests.append({"url": url, "reason": _reason(url, res)})
            await route.abort("blockedbyclient" if res.status is None else "failed")
            return
        why = None
        if job.training_allowed is not False and request.resource_type not in TEXTLESS_TYPES:
            why = self._training_opt_out(res, request.resource_type)
        if why is not None:
            await self._opt_out(route, url, why, out)
            return
        captured.append(Captured(url, request.resource_type, res))
        out.subresources.append(
            {
                "url": url,
                "status": res.status,
                "resource_type": request.resource_type,
                "robots_training": res.robots_training,
            }
        )
        await route.fulfill(
            status=res.status, headers=browser_headers(res.hops[-1].response_headers), body=res.body
        )
        if request.resource_type == "document":
            served["frames"].add(url)  # a framed document the page may show inlined

    def _training_opt_out(self, res, resource_type: str) -> str | None:
        """Why a fetched sub-resource opts out of training, or None: robots.txt for the training
        token, then X-Robots-Tag noai on any hop, then an HTML body's meta robots noai."""
        if res.robots_training != ALLOWED:
            if res.robots_training == DISALLOWED:
                return f"robots.txt disallows the training token {self.config.training_token}"
            return "robots.txt unreachable" if res.robots_training else "no robots.txt decision"
        return self._own_opt_out(resource_type, res.hops, res.body)

    def _own_opt_out(self, resource_type: str, hops: list[Hop], body: bytes) -> str | None:
        """Why a response opts out by what it says itself: X-Robots-Tag on any of its hops (the
        last one is the response) or, for HTML (a frame's document), its meta robots."""
        cfg = self.config
        why = xrt_noai(hops, cfg.robots_token, cfg.training_token)
        if why is None and hops and _is_html(resource_type, hops[-1].response_headers):
            why = meta_noai(body, cfg.robots_token, cfg.training_token)
        return why

    @staticmethod
    async def _opt_out(route, url: str, why: str, out: RenderOutcome) -> None:
        """Refuse a sub-request whose content opted out of training, recording it as such: what it
        would put into the page (a fetch's JSON, a script's strings, a frame) is not loaded."""
        reason = f"training opt-out: {why}; not loaded, so none of its text is in the page"
        out.opted_out.append(url)
        out.blocked_requests.append({"url": url, "reason": reason})
        await route.abort("blockedbyclient")

    async def _fetch(self, url: str, resource_type: str, key: str, trusted: str | None):
        """Fetch through the downloader; scripts and stylesheets are fetched once per run.

        Pages of one site share their bundles: asking the server again for each page would
        cost a politeness delay per page for the same bytes. The cache key includes the page's
        trusted origin, so an entry never answers a page the SSRF guard would refuse it to.
        """
        assert self.downloader is not None
        if resource_type not in ASSET_TYPES:
            return await self.downloader.fetch(
                url, resource_type=resource_type, page=key, trusted_origin=trusted
            )
        ck = (url, trusted)
        task = self._assets.get(ck)
        if task is None:
            task = asyncio.ensure_future(
                self.downloader.fetch(
                    url, resource_type=resource_type, page=key, trusted_origin=trusted
                )
            )
            self._assets[ck] = task
            task.add_done_callback(lambda t: self._keep_asset(ck, t))
        return await asyncio.shield(task)

    def _keep_asset(self, ck: tuple[str, str | None], task: asyncio.Task) -> None:
        res = None if task.cancelled() or task.exception() else task.result()
        no_store = res is not None and "no-store" in (res.header("cache-control") or "").lower()
        size = len(res.body) if res is not None else 0
        if res is None or not res.ok or no_store or self._asset_bytes + size > ASSET_CACHE_BYTES:
            self._assets.pop(ck, None)
        else:
            self._asset_bytes += size

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
    """Render jobs on an open Renderer with its `pages_in_flight` concurrency, in input order.

    If `on_result` raises (e.g. the render's journal cannot be written), the other pages are
    cancelled before the error goes on: none of them is reported as finished with an error
    that only the browser closing under it caused."""

    async def one(job: RenderJob) -> RenderOutcome:
        res = await renderer.render(job)
        if on_result:
            on_result(res)
        return res

    tasks = [asyncio.ensure_future(one(j)) for j in jobs]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


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
