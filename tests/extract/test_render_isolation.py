"""Each page renders alone and every page comes back: no storage carried from page to page, no
opted-out stylesheet text, no budget lost to a refused navigation, a crashed browser relaunched,
a DOM size cap, and a timed-out page's snapshot prepared like a finished one."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from crawlers.extract.page import ExtractConfig, extract_page
from crawlers.render import RenderConfig, Renderer, RenderJob, render_pages
from crawlers.render.session import render_all

from .test_render_policies import FAST, Site, jsn, text_of

pytestmark = pytest.mark.timeout(120)


def page_html(body: str) -> str:
    return f"<html><head></head><body>{body}</body></html>"


def test_a_page_sees_no_storage_or_cookie_an_earlier_page_left(no_browser_leak):
    # The first page is opted out (its own data is loaded: nothing of it is for training); its
    # script keeps that data in localStorage and a cookie, as a "recently viewed" widget does.
    spa = """<div id=app></div><p id=recent></p><script>
const n = 1 + Number(localStorage.getItem('visits') || 0); localStorage.setItem('visits', n);
recent.textContent = 'Recently viewed: ' + (localStorage.getItem('recent') || 'nothing') +
  ' | cookie: ' + (document.cookie || 'none') + ' | visit ' + n;
fetch('%s').then(r => r.json()).then(d => { app.textContent = d.text;
  localStorage.setItem('recent', d.text); document.cookie = 'seen=' + encodeURIComponent(d.text); });
</script>"""
    routes = {"/optout/data": jsn({"text": "OPTED-OUT-PASSAGE"}), "/data": jsn({"text": "Open."})}
    with Site("127.0.0.101", routes) as site:
        jobs = [
            RenderJob(
                f"{site.base}/optout/a",
                page_html(spa % "/optout/data"),
                training_allowed=False,
                trust_own_origin=True,
            ),
            RenderJob(
                f"{site.base}/b",
                page_html(spa % "/data"),
                training_allowed=True,
                trust_own_origin=True,
            ),
        ]
        first, second = render_pages(jobs, RenderConfig(pages_in_flight=1, **FAST))
    assert first.error is None and "OPTED-OUT-PASSAGE" in text_of(first.html)
    assert second.error is None
    assert "OPTED-OUT-PASSAGE" not in second.html
    assert "Recently viewed: nothing | cookie: none | visit 1" in text_of(second.html)


def test_an_opted_out_stylesheet_is_not_loaded_so_its_text_never_shows(no_browser_leak):
    robots = "User-agent: RefineryBot-Extended\nDisallow: /optout/\n\nUser-agent: *\nAllow: /\n"
    css = b'.q::before { content: "OPTED-OUT-CSS-TEXT"; }'
    routes = {"/optout/s.css": (200, {"Content-Type": "text/css"}, css)}
    body = """<link rel=stylesheet href="/optout/s.css"><p class=q>Quote</p><p id=out></p><script>
addEventListener('load', () => {
  const shown = getComputedStyle(document.querySelector('.q'), '::before').content;
  let rules = '';
  try { for (const s of document.styleSheets) for (const r of s.cssRules) rules += r.cssText; }
  catch (e) { rules = 'unreadable'; }
  out.textContent = 'shown=' + shown + ' rules=' + rules; });
</script>"""
    with Site("127.0.0.102", routes, robots) as site:
        job = RenderJob(
            f"{site.base}/p", page_html(body), training_allowed=True, trust_own_origin=True
        )
        (out,) = render_pages([job], RenderConfig(pages_in_flight=1, **FAST))
    assert out.error is None
    assert "shown=" in out.html and "OPTED-OUT-CSS-TEXT" not in out.html
    assert out.opted_out == [f"{site.base}/optout/s.css"]
    (blocked,) = out.blocked_requests
    assert blocked["url"] == f"{site.base}/optout/s.css"
    assert blocked["reason"].startswith("training opt-out: robots.txt disallows the training token")


def test_a_navigation_away_while_loading_costs_no_budget(no_browser_leak):
    vectors = {
        "assign": "<script>location.href = '/elsewhere';</script>",
        "click": "<script>const a = document.createElement('a'); a.href = '/elsewhere';"
        " document.body.append(a); a.click();</script>",
    }
    with Site("127.0.0.103", {}) as site:
        jobs = [
            RenderJob(
                f"{site.base}/{name}",
                page_html(f"<p>Own text of {name}.</p>{script}"),
                trust_own_origin=True,
            )
            for name, script in vectors.items()
        ]
        cfg = RenderConfig(pages_in_flight=2, **{**FAST, "page_timeout_s": 6})
        outs = render_pages(jobs, cfg)
    for out, name in zip(outs, vectors, strict=True):
        assert out.error is None, (name, out.error)
        assert out.render_ms < 4000, (name, out.render_ms)
        assert out.navigated_to == f"{site.base}/elsewhere"
        assert f"Own text of {name}." in text_of(out.html)


def _kill_browser(renderer: Renderer) -> bool:
    """SIGKILL the browser's main process (as the OOM killer would)."""
    for pid, cmd in renderer.pids.items():
        if b"--remote-debugging-pipe" in cmd.split(b"\0"):
            try:
                os.kill(pid, signal.SIGKILL)
                return True
            except ProcessLookupError:
                pass
    return False


def _render_with_a_crash(renderer: Renderer, jobs: list[RenderJob]):
    async def go():
        killed = []

        def after_first(_out):
            if not killed:
                killed.append(_kill_browser(renderer))

        async with renderer:
            return await render_all(jobs, renderer, after_first), killed

    return asyncio.run(go())


def crash_jobs(n: int) -> list[RenderJob]:
    base = "http://127.0.0.104:9"  # nothing is fetched: the pages have no sub-requests
    return [
        RenderJob(f"{base}/c{i}", page_html(f"<p>Page {i} text.</p>"), trust_own_origin=True)
        for i in range(n)
    ]


def test_a_crashed_browser_is_relaunched_and_the_page_rendered_again(no_browser_leak):
    renderer = Renderer(RenderConfig(pages_in_flight=1, **FAST))
    outs, killed = _render_with_a_crash(renderer, crash_jobs(3))
    assert killed == [True]
    assert [o.error for o in outs] == [None, "browser crashed; retried", None]
    assert [f"Page {i} text." in (o.html or "") for i, o in enumerate(outs)] == [True] * 3
    assert renderer.crashes == 1


def test_a_browser_that_cannot_be_relaunched_leaves_an_error_on_every_page(
    monkeypatch, no_browser_leak
):
    launches = []
    real = Renderer._launch

    async def launch_once(self, chromium, proxy):
        launches.append(chromium)
        if len(launches) > 1:
            raise RuntimeError("no memory for a new browser")
        return await real(self, chromium, proxy)

    monkeypatch.setattr(Renderer, "_launch", launch_once)
    renderer = Renderer(RenderConfig(pages_in_flight=1, **FAST))
    outs, killed = _render_with_a_crash(renderer, crash_jobs(3))
    assert killed == [True] and len(launches) == 2  # one relaunch tried, not one per page
    assert outs[0].error is None and outs[0].html
    assert outs[1].html is None and outs[1].error.startswith("browser crashed (")
    assert outs[1].error.endswith(
        "could not be relaunched: RuntimeError: no memory for a new browser"
    )
    for out in outs[2:]:
        assert out.html is None
        assert out.error == "browser unavailable: RuntimeError: no memory for a new browser"


def test_a_dom_over_the_cap_is_not_serialised(no_browser_leak):
    grow = "<p>small</p><script>const d = document.createElement('div');"
    grow += " d.textContent = 'word '.repeat(40000); document.body.append(d);</script>"
    job = RenderJob("http://127.0.0.104:9/huge", page_html(grow), trust_own_origin=True)
    cfg = RenderConfig(pages_in_flight=1, max_dom_chars=100_000, **FAST)
    (out,) = render_pages([job], cfg)
    assert out.html is None
    assert out.error.startswith("dom too large: ")
    assert out.error.endswith(" chars > 100000 (RenderConfig.max_dom_chars)")
    assert int(out.error.split()[3]) > 200_000


def test_max_dom_chars_must_be_positive():
    with pytest.raises(ValueError, match="max_dom_chars=0"):
        RenderConfig(max_dom_chars=0)


def test_a_timed_out_page_keeps_its_shadow_dom_text(no_browser_leak):
    card = (
        "<x-card></x-card><script>customElements.define('x-card', class extends HTMLElement {"
        " connectedCallback() { this.attachShadow({mode: 'open'}).innerHTML ="
        " '<p>Shadow article text.</p>'; } });</script>"
    )
    churn = "<script>setInterval(() => { const p = document.createElement('i');"
    churn += " p.textContent = '.'; document.body.append(p); }, 50);</script>"
    job = RenderJob("http://127.0.0.104:9/churn", page_html(card + churn), trust_own_origin=True)
    cfg = RenderConfig(pages_in_flight=1, **{**FAST, "page_timeout_s": 2, "settle_max_ms": 5000})
    (out,) = render_pages([job], cfg)
    assert out.error == "timeout after 2s"
    assert out.html.count('data-refinery-shadow-root="open"') == 1
    assert "Shadow article text." in out.html


ARTICLE = "<p>" + "A plain sentence about river otters and their dens in the reeds. " * 12 + "</p>"


def _record(static: bytes, rendered: str) -> dict:
    return {
        "url": "http://a.test/page",
        "status": 200,
        "content_type": "text/html",
        "training_allowed": True,
        "body": static,
        "rendered_html": rendered,
        "rendered": True,
        "render_reason": "app shell",
    }


def test_extraction_holds_a_rendered_dom_to_max_body_bytes():
    big = "<html><body><article>" + ARTICLE * 200 + "</article></body></html>"
    config = ExtractConfig(max_body_bytes=100_000)
    shell = b"<html><body><div id=root></div></body></html>"
    res = extract_page(_record(shell, big), config)
    assert res.document is None and res.reject["reason"] == "too_large"
    assert (
        "rendered DOM has" in res.reject["detail"] and "100000-byte limit" in res.reject["detail"]
    )
    # A static page with content of its own is kept, and says why the render was not used.
    static = f"<html><body><article>{ARTICLE}</article></body></html>".encode()
    res = extract_page(_record(static, big), config)
    assert res.reject is None and res.document["rendered"] is False
    assert (
        "static kept: the rendered DOM was rejected (too_large: " in res.document["render_reason"]
    )
    # Multi-byte text counts in bytes, as the static body does.
    wide = "<html><body><article>" + "<p>" + "川" * 40_000 + "</p></article></body></html>"
    res = extract_page(_record(shell, wide), config)
    assert res.reject["reason"] == "too_large" and "rendered DOM is " in res.reject["detail"]


def test_the_render_summary_counts_the_pages_a_crash_took_down():
    from crawlers.render.run import _crashed
    from pipelines.stages.extract import RenderSummary

    errors = [None, "timeout after 5s", "browser crashed; retried", "browser unavailable: gone"]
    assert [_crashed(e) for e in errors] == [False, False, True, True]
    fields = dict(path="p", candidates=2, rendered=2, rendered_fraction=1.0, render_errors=1)
    fields |= dict(blocked_requests=0, subresources=0, seconds=1.0, pages_per_s=2.0)
    assert RenderSummary(outputs={}, crashed_pages=1, **fields).crashed_pages == 1
