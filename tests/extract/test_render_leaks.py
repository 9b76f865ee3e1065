"""No Chromium survives a render that timed out, was interrupted (Ctrl-C) or got SIGTERM."""

from __future__ import annotations

import _thread
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from common.procs import alive, browser_descendants
from crawlers.render import RenderConfig, RenderJob, render_pages

pytestmark = pytest.mark.timeout(120)


def hanging_page(base: str) -> str:
    # The fetch to /hang keeps the page busy well past any budget used here.
    return f"<html><body><div id=root>Waiting</div><script>fetch('{base}/hang').then(r => r.text())</script></body></html>"


def test_page_over_budget_times_out_and_leaves_no_browser(subresources, no_browser_leak):
    cfg = RenderConfig(pages_in_flight=1, page_timeout_s=1.5, settle_max_ms=6000)
    page = hanging_page(subresources.base)  # its loopback origin (and only it) may be reached
    (out,) = render_pages(
        [RenderJob(f"{subresources.base}/slow", page, trust_own_origin=True)], cfg
    )
    assert out.error == "timeout after 1.5s"
    assert out.html is not None and "Waiting" in out.html  # the partial DOM is kept


def test_ctrl_c_during_rendering_shuts_the_browser_down(subresources, no_browser_leak):
    cfg = RenderConfig(pages_in_flight=2, page_timeout_s=30, settle_max_ms=20000)
    jobs = [
        RenderJob(f"{subresources.base}/slow{i}", hanging_page(subresources.base)) for i in range(2)
    ]

    def interrupt_once_browser_runs():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not browser_descendants():
            time.sleep(0.05)
        time.sleep(0.5)
        _thread.interrupt_main()

    # Ctrl-C as Python delivers it in a terminal: pytest-xdist's workers ignore SIGINT (the
    # controller handles it), and interrupt_main() honours that, so the handler is set here.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_once_browser_runs, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            render_pages(jobs, cfg)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_sigterm_during_rendering_shuts_the_browser_down(subresources, tmp_path: Path):
    script = textwrap.dedent(
        f"""
        import sys, threading, time
        from crawlers.render import RenderConfig, RenderJob, RenderInterrupted, render_pages
        from common.procs import browser_descendants
        def report():
            while not browser_descendants():
                time.sleep(0.05)
            time.sleep(0.5)
            print("PIDS", *sorted(browser_descendants()), flush=True)
        threading.Thread(target=report, daemon=True).start()
        html = "<html><body><script>fetch('{subresources.base}/hang')</script></body></html>"
        try:
            render_pages([RenderJob("{subresources.base}/x", html)], RenderConfig(page_timeout_s=60, settle_max_ms=60000))
        except RenderInterrupted as exc:
            print("INTERRUPTED", exc, flush=True)
            sys.exit(3)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("PIDS"), line
        pids = [int(p) for p in line.split()[1:]]
        os.kill(proc.pid, signal.SIGTERM)
        rest = proc.stdout.read()
        assert proc.wait(timeout=30) == 3 and "INTERRUPTED" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if alive(p)], "Chromium outlived its SIGTERM-ed parent"
