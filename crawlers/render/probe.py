"""A cheap probe for pages the static HTML cannot decide: a short render, before vs after.

`needs_render` marks a decision `ambiguous` when it found only weak evidence (a class-only empty
box next to external scripts, a load-more button with nothing to load into, little text). For
those pages `decide_pages(..., probe=True)` loads the page in Chromium with a small budget (no
scrolling or clicking, a short settle) and compares the visible text of the DOM with the static
HTML: if scripts added at least `min_new_chars` of text the page is rendered, otherwise it stays
static. The probe's reason names what it measured. It probes a page of each host's templates
too, for the robots directives their scripts write (below).

The render stage's `--render auto` (`crawlers.render.crawl.render_crawl`) probes the pages of a
crawl this way before it plans the full renders (`settle_pages`: `probe_pages`, then `settle`
per ambiguous page and the robots verdict per template), with the crawl's own jobs (consent,
trust of a private origin); elsewhere:

    decisions = decide_pages([(url, html) for url, html in pages], probe=True, config=config)

The full render of the pages that grew still happens afterwards with the normal budget (with
scrolling and load-more clicks), so the probe never replaces the render itself. A probe costs
one short render: at most `budget_s` per page (5 s), `pages_in_flight` at once, nothing archived.

A probe also reads consent: robots directives (noai, noimageai, noindex; in a `<meta>` named
robots or for the crawl or training token) that the rendered DOM states and the static HTML does
not were written by the page's scripts, and hold for the page. Only a render shows them, and
`needs_render` cannot read what an external script writes, so `settle_pages` probes the scripts
of every host before anything is rendered: one page of each template (`RenderDecision.scripts`:
the pages of a host that run the same scripts) that would stay static, reusing an ambiguous
page's probe where the template has one. Every host with such pages gets one probe whatever the
cap (consent outranks cost); beyond that, as many templates as ambiguous pages are probed (the
cap, `probe_cap`), the largest first. A template whose probe found directives is rendered,
every page of it; so is every template of that host left unprobed over the cap, and a template
whose probe got no DOM (directives unknown). Templates probed clean, and unprobed ones on a host
where none was found, stay as decided. All static decisions are made before the first probe, and every probe's verdict is
applied before the first render: no page is planned before what its scripts write is known.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from lxml import etree
from lxml import html as lxml_html

from crawlers.crawl.html import Directives, apply_meta_robots
from crawlers.render.decide import (
    RenderDecision,
    needs_render,
    open_shadow_templates,
    probe_priority,
    text_weight,
)
from crawlers.render.session import RenderConfig, RenderJob, render_pages

_SKIP = {"script", "style", "noscript", "template", "head"}
# The directives a script may add that change what is done with a page (nofollow only stops
# the links a render would hand on, and an unrendered page hands on none).
ROBOTS_DIRECTIVES = ("noai", "noimageai", "noindex")
log = logging.getLogger(__name__)


@dataclass
class ProbeResult:
    """What one probe render showed: how much text scripts added within the budget."""

    url: str
    new_chars: int
    render_ms: int
    error: str | None = None
    got_dom: bool = True
    sample: str = ""
    # robots directives the rendered DOM's <meta> tags state and the static HTML's do not
    robots_added: tuple[str, ...] = ()

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


def meta_directives(html: str, agent: str, training_agent: str) -> frozenset[str]:
    """The ROBOTS_DIRECTIVES the page's <meta> tags state for the crawl token `agent` or the
    training token (name=robots, a token's name, http-equiv X-Robots-Tag), read as extraction
    reads them (`crawlers.crawl.html.apply_meta_robots`); 'none' counts as noindex."""
    try:
        tree = lxml_html.fromstring(html)
    except (etree.ParserError, ValueError):
        return frozenset()
    d = Directives()
    for meta in tree.iter("meta"):
        apply_meta_robots(
            d,
            meta.get("name") or "",
            meta.get("content") or "",
            agent,
            training_agent,
            meta.get("http-equiv") or "",
        )
    return frozenset(k for k in ROBOTS_DIRECTIVES if getattr(d, k))


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
        max_pager_states=0,  # no interaction: no pager or tab clicks either
        max_tab_clicks=0,
        settle_max_ms=int(budget_s * 800),
        archive_dir=None,  # a probe's responses are no render of the page: nothing refers to them
    )


def probe_pages(
    jobs: list[RenderJob], config: RenderConfig | None = None, budget_s: float = 5.0
) -> list[ProbeResult]:
    """Render each job briefly and measure the text scripts added (input order kept)."""
    if not jobs:
        return []
    cfg = probe_config(config, budget_s)
    outcomes = render_pages(jobs, cfg)
    results = []
    for job, out in zip(jobs, outcomes, strict=True):
        added = new_text(job.html, out.html) if out.html else []
        robots: tuple[str, ...] = ()
        if out.html:
            tokens = (cfg.robots_token, cfg.training_token)
            before = meta_directives(job.html, *tokens)
            robots = tuple(sorted(meta_directives(out.html, *tokens) - before))
        # A probe that ran out of budget still reports the text that had appeared by then.
        results.append(
            ProbeResult(
                url=job.url,
                new_chars=sum(text_weight(t) for t in added),
                render_ms=out.render_ms,
                error=out.error,
                got_dom=out.html is not None,
                sample=" ".join(added)[:80],
                robots_added=robots,
            )
        )
    return results


MIN_NEW_CHARS = 80  # text a probe must see scripts add for the page to be rendered


def settle(
    decision: RenderDecision, result: ProbeResult, min_new_chars: int = MIN_NEW_CHARS
) -> RenderDecision:
    """An ambiguous decision settled by its page's probe: rendered if scripts added at least
    `min_new_chars` of text or robots directives (`ProbeResult.robots_added`: they hold for the
    page, and only a render shows them), or if the probe got no DOM at all (the evidence was
    there, and a full render with the normal budget is the safer way to find out)."""
    weak = decision.reason.removeprefix("static, ambiguous: ")
    if not result.got_dom:
        render, verdict = True, f"probe failed ({result.error}), rendering anyway"
    else:
        render = result.grew(min_new_chars) or bool(result.robots_added)
        verdict = f"probe: scripts added {result.new_chars} chars of text"
        if result.robots_added:
            verdict = f"probe: scripts set robots directives ({', '.join(result.robots_added)}); "
            verdict += f"scripts added {result.new_chars} chars of text"
    prefix = "" if render else "static, "
    return RenderDecision(
        render,
        f"{prefix}{verdict} (ambiguous: {weak})",  # no time: a run's rows are its pages
        ambiguous=True,
        evidence=decision.evidence,
        scripts=decision.scripts,
    )


# Probes per render: at most this share of the crawl's HTML pages, but at least PROBE_MIN_PAGES
# (real static pages are often ambiguous: a probe of each would send most of them to Chromium).
# Beyond one per host, as many templates again are probed for robots directives.
PROBE_MAX_SHARE = 0.04
PROBE_MIN_PAGES = 20


def probe_cap(pages: int) -> int:
    """How many ambiguous pages (and, apart, how many more templates) a render of `pages` HTML
    pages probes: PROBE_MAX_SHARE of them, at least PROBE_MIN_PAGES."""
    return max(PROBE_MIN_PAGES, math.ceil(PROBE_MAX_SHARE * pages))


def _origin(url: str) -> str:
    """The host (with its port) whose scripts a page runs: what one template is grouped by."""
    try:
        return urlsplit(url).netloc.lower()
    except ValueError:
        return url


def settle_pages(
    jobs: list[RenderJob],
    decisions: list[RenderDecision],
    config: RenderConfig | None = None,
    *,
    pages: int | None = None,
    budget_s: float = 5.0,
    min_new_chars: int = MIN_NEW_CHARS,
) -> list[RenderDecision]:
    """The decisions (`needs_render`, one per job, in order) once probes settled them: ambiguous
    pages (`settle`) and what each host's scripts write (robots directives; see the module's
    docstring). With `pages` (the render's HTML pages), at most `probe_cap(pages)` ambiguous
    pages are probed, thin pages first (`probe_priority`), then in order, the others staying
    static and saying so; and besides one template per host, at most as many templates, the
    largest first. Without it every ambiguous page and template is probed. Pages already to
    render are never probed: their render shows what their scripts write."""
    if len(jobs) != len(decisions):
        raise ValueError(f"settle_pages: {len(jobs)} jobs for {len(decisions)} decisions")
    out = list(decisions)
    cap = probe_cap(pages) if pages is not None else None
    ambiguous = [i for i, d in enumerate(decisions) if d.ambiguous and not d.render]
    ambiguous.sort(key=lambda i: (probe_priority(decisions[i]), i))
    probed_ambiguous = ambiguous if cap is None else ambiguous[:cap]
    probed = set(probed_ambiguous)
    # Templates: the pages of a host that run the same scripts and would stay static.
    families: dict[tuple[str, str], list[int]] = {}
    for i, d in enumerate(decisions):
        if d.scripts and not d.render:
            families.setdefault((_origin(jobs[i].url), d.scripts), []).append(i)
    sample: dict[tuple[str, str], int] = {}
    for key, members in families.items():
        shared = [i for i in members if i in probed]
        if shared:
            sample[key] = shared[0]  # an ambiguous page's probe tells this template's too
    hosts_done = {host for host, _ in sample}
    by_size = sorted(families, key=lambda k: -len(families[k]))  # stable: first seen first
    for key in by_size:  # consent outranks cost: every host's scripts are probed once
        if key not in sample and key[0] not in hosts_done:
            sample[key] = families[key][0]
            hosts_done.add(key[0])
    extra = 0
    for key in by_size:
        if key not in sample and (cap is None or extra < cap):
            sample[key] = families[key][0]
            extra += 1
    todo = sorted(probed | set(sample.values()))
    start = time.monotonic()
    results = dict(zip(todo, probe_pages([jobs[i] for i in todo], config, budget_s), strict=True))
    for i in probed_ambiguous:
        out[i] = settle(decisions[i], results[i], min_new_chars)
    for i in ambiguous[len(probed_ambiguous) :]:
        out[i] = dataclasses.replace(
            decisions[i],
            reason=decisions[i].reason
            + f" (not probed: over the probe cap of {cap} pages, {PROBE_MAX_SHARE:.0%} of {pages})",
        )
    # What each probed template's scripts write, and which hosts' scripts write directives.
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for key, i in sample.items():
        if results[i].robots_added and key[0] not in found:
            found[key[0]] = (jobs[i].url, results[i].robots_added)
    robots_rendered = 0
    for key, members in families.items():
        i = sample.get(key)
        res = results[i] if i is not None else None
        for j in members:
            if out[j].render:
                continue  # rendered anyway (its own probe, or static evidence)
            page = "this page" if j == i else f"{jobs[i or 0].url} (same scripts)"
            if res is not None and res.robots_added:
                why = (
                    f"consent: scripts set robots directives ({', '.join(res.robots_added)}): "
                    f"the probe of {page} found them only in its rendered DOM"
                )
            elif res is not None and not res.got_dom:
                why = (
                    f"consent: robots directives unknown: the probe of {page} got no DOM "
                    f"({res.error})"
                )
            elif res is None and key[0] in found:
                url, words = found[key[0]]
                why = (
                    f"consent: scripts of this host set robots directives ({', '.join(words)}: "
                    f"the probe of {url}); this page's scripts were not probed (over the probe "
                    f"cap of {cap} templates)"
                )
            else:
                if res is None:  # unprobed, on a host whose probed scripts wrote no directives
                    out[j] = dataclasses.replace(
                        out[j],
                        reason=f"{out[j].reason} (scripts not probed for robots directives: over "
                        f"the probe cap of {cap} templates; the host's probed scripts wrote none)",
                    )
                continue
            out[j] = dataclasses.replace(out[j], render=True, reason=f"{why}; {out[j].reason}")
            robots_rendered += 1
    if todo:
        log.info(
            "render: probed %d page(s) in %.1f s (%.2f s of render each): %d of %d ambiguous, "
            "%d template(s) of %d on %d host(s) for robots directives, found on %d host(s); "
            "%d page(s) to render, %d of them for robots directives",
            len(todo),
            time.monotonic() - start,
            sum(r.render_ms for r in results.values()) / 1000 / len(results),
            len(probed_ambiguous),
            len(ambiguous),
            len(sample),
            len(families),
            len({h for h, _ in families}),
            len(found),
            sum(1 for i in range(len(out)) if out[i].render and not decisions[i].render),
            robots_rendered,
        )
    return out


def decide_pages(
    pages: Iterable[tuple[str, str]],
    *,
    probe: bool = True,
    config: RenderConfig | None = None,
    budget_s: float = 5.0,
    min_new_chars: int = MIN_NEW_CHARS,
) -> list[RenderDecision]:
    """`needs_render` for each (url, html); with `probe`, settled by probe renders
    (`settle_pages`, uncapped): every ambiguous page, and one page of each host's templates for
    the robots directives their scripts write."""
    pages = list(pages)
    cfg = config or RenderConfig()
    tokens = (cfg.robots_token, cfg.training_token)
    decisions = [needs_render(html, tokens) for _, html in pages]
    if not probe:
        return decisions
    jobs = [RenderJob(url, html) for url, html in pages]
    return settle_pages(jobs, decisions, config, budget_s=budget_s, min_new_chars=min_new_chars)
