"""Headless rendering: decide which pages need a browser, then render them in Chromium.

`needs_render(html)` is a pure function over static HTML; `render_pages(jobs, config)` drives
Playwright with a fresh browser context per page and leaves no Chromium process behind.
"""

from crawlers.render.decide import RenderDecision, needs_render
from crawlers.render.session import (
    RenderConfig,
    Renderer,
    RenderInterrupted,
    RenderJob,
    RenderOutcome,
    render_pages,
)

__all__ = [
    "RenderConfig",
    "RenderDecision",
    "RenderInterrupted",
    "RenderJob",
    "RenderOutcome",
    "Renderer",
    "needs_render",
    "render_pages",
]
