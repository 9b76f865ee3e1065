"""A cheap probe for pages whose static evidence is ambiguous: a short render, text before vs after.

`needs_render` marks a decision `ambiguous` when it found only weak evidence (a class-only empty
box next to external scripts, a load-more button with nothing to load into, little text). For
those pages, and only those, `decide_pages(..., probe=True)` loads the page in Chromium with a
small budget (no scrolling or clicking, a short settle) and compares the visible text of the DOM
with the static HTML: if scripts added at least `min_new_chars` of text the page is rendered,
otherwise it stays static. The probe's reason names what it measured.

The render stage's `--render auto` (`crawlers.render.crawl.render_crawl`) probes the ambiguous
pages of a crawl this way before it plans the full renders (`probe_pages`, then `settle` per
page), with the crawl's own jobs (consent, trust of a private origin); elsewhere:

    decisions = decide_pages([(url, html) for url, html in pages], probe=True, config=config)

The full render of the pages that grew still happens afterwards with the normal budget (with
scrolling and load-more clicks), so the probe never replaces the render itself. A probe costs
one short render: at most `budget_s` per page (5 s), `pages_in_flight` at once, nothing archived.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from lxml import etree
from lxml import html as lxml_html

from crawlers.render.decide import (
    RenderDecision,
    needs_render,
    open_shadow_templates,
    text_weight,
)
from crawlers.render.session import RenderConfig, RenderJob, render_pages

_SKIP = {"script", "style", "noscript", "template", "head"}


@dataclass
class ProbeResult:
    """What one probe render showed: how much text scripts added within the budget."""

    url: str
    new_chars: int
    render_ms: int
    error: str | None = None
    got_dom: bool = True
    sample: str = ""

    def grew(self, min_new_chars: int) -> bool:
        """True if scripts added at least `min_new_chars` of text."""
        return self.new_chars >= min_new_chars


def visible_blocks(html: str) -> list[str]:
    """Whitespace-normalised text nodes of the page body, scripts and styles left out
    (server-rendered shadow roots shown, as a browser shows them)."""
    try:
        tree = open_shadow_templates(lxml_html.fromstring(html))
    except (etree.ParserError, ValueError):
        return []
    out = []
    for el in tree.iter():
        if not isinstance(el.tag, str) or el.tag in _SKIP:
            continue
        if any(a.tag in _SKIP for a in el.iterancestors()):
            continue
        for chunk in (el.text, *(c.tail for c in el)):
            text = " ".join((chunk or "").split())
            if text:
                out.append(text)
    return out


def new_text(static_html: str, rendered_html: str) -> list[str]:
    """Text blocks of the rendered DOM that the static HTML does not contain."""
    before = " ".join(visible_blocks(static_html))
    return [b for b in visible_blocks(rendered_html) if b not in before]


def probe_config(config: RenderConfig | None = None, budget_s: float = 5.0) -> RenderConfig:
    """The render settings of a probe: the caller's browser settings, a short budget, no interaction."""
    if budget_s <= 0:
        raise ValueError(f"budget_s={budget_s}: the probe budget must be positive")
    base = config or RenderConfig()
    return dataclasses.replace(
        base,
        page_timeout_s=budget_s,
        max_scrolls=1,
        max_clicks=0,
        settle_max_ms=int(budget_s * 800),
        archive_dir=None,  # a probe's responses are no render of the page: nothing refers to them
    )


def probe_pages(
    jobs: list[RenderJob], config: RenderConfig | None = None, budget_s: float = 5.0
) -> list[ProbeResult]:
    """Render each job briefly and measure the text scripts added (input order kept)."""
    if not jobs:
        return []
    outcomes = render_pages(jobs, probe_config(config, budget_s))
    results = []
    for job, out in zip(jobs, outcomes, strict=True):
        added = new_text(job.html, out.html) if out.html else []
        # A probe that ran out of budget still reports the text that had appeared by then.
        results.append(
            ProbeResult(
                url=job.url,
                new_chars=sum(text_weight(t) for t in added),
                render_ms=out.render_ms,
                error=out.error,
                got_dom=out.html is not None,
                sample=" ".join(added)[:80],
            )
        )
    return results


MIN_NEW_CHARS = 80  # text a probe must see scripts add for the page to be rendered


def settle(
    decision: RenderDecision, result: ProbeResult, min_new_chars: int = MIN_NEW_CHARS
) -> RenderDecision:
    """An ambiguous decision settled by its page's probe: rendered if scripts added at least
    `min_new_chars` of text, or if the probe got no DOM at all (the evidence was there, and a
    full render with the normal budget is the safer way to find out)."""
    weak = decision.reason.removeprefix("static, ambiguous: ")
    if not result.got_dom:
        render, verdict = True, f"probe failed ({result.error}), rendering anyway"
    else:
        render = result.grew(min_new_chars)
        verdict = f"probe: scripts added {result.new_chars} chars of text"
    prefix = "" if render else "static, "
    return RenderDecision(
        render,
        f"{prefix}{verdict} (ambiguous: {weak})",  # no time: a run's rows are its pages
        ambiguous=True,
        evidence=decision.evidence,
    )


def decide_pages(
    pages: Iterable[tuple[str, str]],
    *,
    probe: bool = True,
    config: RenderConfig | None = None,
    budget_s: float = 5.0,
    min_new_chars: int = MIN_NEW_CHARS,
) -> list[RenderDecision]:
    """`needs_render` for each (url, html); with `probe`, ambiguous pages are settled by a probe
    render (`settle`)."""
    pages = list(pages)
    decisions = [needs_render(html) for _, html in pages]
    if not probe:
        return decisions
    todo = [i for i, d in enumerate(decisions) if d.ambiguous]
    results = probe_pages([RenderJob(*pages[i]) for i in todo], config, budget_s)
    for i, res in zip(todo, results, strict=True):
        decisions[i] = settle(decisions[i], res, min_new_chars)
    return decisions
