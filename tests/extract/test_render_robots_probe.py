"""Robots directives a page's scripts write hold for the page, and only a render shows them.

Before, `--render auto` decided from the static HTML alone: a page whose external script (an
SEO head script) appended `<meta name=robots content="noai">`, or whose inline script added a
`<meta name="RefineryBot-Extended" content="noai">` after a timer, had 500+ chars of text and
"no evidence of script-made content", stayed static and was extracted training_allowed=True.

Now an inline script that writes a <meta> naming robots, a token or a directive is evidence to
render ("consent: ..."), and `settle_pages` probes one page of each host's templates (the pages
that run the same scripts) before anything is rendered: a template whose probe shows directives
the static HTML lacks is rendered, every page of it; so are the host's templates left unprobed
over the cap. A host whose scripts write none stays static.
"""

from __future__ import annotations

import pytest

from crawlers.render import RenderConfig, RenderJob, needs_render
from crawlers.render import probe as probe_mod
from crawlers.render.probe import decide_pages, meta_directives

from .test_render_policies import Site, js

pytestmark = pytest.mark.timeout(180)

ARTICLE = (
    "<h1>{title}</h1><p>The harbour board met on Tuesday to discuss the dredging of the outer "
    "channel, which has silted up faster than the engineers predicted in their last survey. "
    "Fishermen told the board that the larger boats now wait for the tide before they leave.</p>"
    "<p>The board agreed to ask the province for money to dredge the channel before winter, and "
    "to publish the survey so that the skippers can plan their trips around the shallow bar. "
    "A decision on the new pontoon was put off until the spring meeting.</p>"
)


def page(title: str, head: str = "", tail: str = "") -> str:
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>{head}"
        f"</head><body><header><a href='/'>Harbour News</a></header><main><article>"
        f"{ARTICLE.format(title=title)}</article></main><footer>© Harbour News</footer>{tail}"
        "</body></html>"
    )


# An external head script that writes the directives under names built at run time: nothing in
# the page's HTML (or the script's name) says so; only running it shows them.
HEAD_JS = """
(function () {
  var d = document, cfg = {n: ['ro', 'bots'].join(''), c: ['no', 'ai, no', 'imageai'].join('')};
  setTimeout(function () {
    var m = d.createElement('me' + 'ta');
    m.setAttribute('name', cfg.n); m.setAttribute('content', cfg.c); d.head.appendChild(m);
  }, 600);
})();
"""
# Control scripts: they change the page, and write a <meta>, but no robots directive.
THEME_JS = """
(function () {
  var m = document.createElement('meta'); m.name = 'theme-color'; m.content = '#114477';
  document.head.appendChild(m); document.documentElement.dataset.js = 'on';
})();
"""
PLAIN_JS = "document.documentElement.className += ' js';"
INLINE_NOAI = (
    "<script>addEventListener('load', function () { setTimeout(function () {"
    "var m = document.createElement('meta'); m.setAttribute('name', 'RefineryBot-Extended');"
    "m.setAttribute('content', 'noai'); document.head.appendChild(m); }, 700); });</script>"
)
INLINE_ANALYTICS = (
    "<script>window.dataLayer = window.dataLayer || []; dataLayer.push({event: 'view'});</script>"
)

# host A: a members template of four pages runs the head script; a tags template runs it beside
# another script; an about page runs only its own map script.
A_PAGES = {
    **{
        f"/members/{i}": page(
            f"Members digest {i}",
            "<script src='/assets/site-head.4c1d9e.js' defer></script>",
            "<script src='/assets/analytics.77aa01.js'></script>",
        )
        for i in range(4)
    },
    **{
        f"/tags/{t}": page(
            f"Tag {t}",
            "<script src='/assets/site-head.4c1d9e.js' defer></script>",
            "<script src='/assets/tags.js'></script>",
        )
        for t in ("boats", "tides")
    },
    "/about": page("About us", "", "<script src='/assets/about-map.js'></script>"),
}
# host B: the control: its scripts write nothing a crawler must obey.
B_PAGES = {
    **{
        f"/news/{i}": page(f"News {i}", "<script src='/static/app.1a2b3c.js'></script>")
        for i in range(4)
    },
    "/contact": page("Contact", "", INLINE_ANALYTICS),
}
A_ROUTES = {
    "/assets/site-head.4c1d9e.js": js(HEAD_JS),
    "/assets/analytics.77aa01.js": js(PLAIN_JS),
    "/assets/tags.js": js(PLAIN_JS),
    "/assets/about-map.js": js(PLAIN_JS),
}
B_ROUTES = {"/static/app.1a2b3c.js": js(THEME_JS)}


def html_route(html: str):
    return 200, {"Content-Type": "text/html; charset=utf-8"}, html.encode()


@pytest.fixture(scope="module")
def sites():
    a_routes = {**A_ROUTES, **{p: html_route(h) for p, h in A_PAGES.items()}}
    b_routes = {**B_ROUTES, **{p: html_route(h) for p, h in B_PAGES.items()}}
    with Site("127.0.0.173", a_routes) as a, Site("127.0.0.174", b_routes) as b:
        yield a, b


def _pages(a, b) -> list[tuple[str, str]]:
    return [(a.base + p, h) for p, h in A_PAGES.items()] + [
        (b.base + p, h) for p, h in B_PAGES.items()
    ]


def _path(url: str) -> str:
    return url.split("/", 3)[3]  # http://host:port/members/0 -> members/0


CONFIG = RenderConfig(pages_in_flight=2, delay=0.0, allow_private_networks=True)


def test_static_decisions_see_no_evidence_and_name_each_template():
    decisions = {p: needs_render(h) for p, h in {**A_PAGES, **B_PAGES}.items()}
    assert not any(d.render or d.ambiguous for d in decisions.values())
    members = {decisions[f"/members/{i}"].scripts for i in range(4)}
    assert members == {"/assets/analytics.~.js /assets/site-head.~.js"}  # hashes left out
    assert decisions["/tags/boats"].scripts == decisions["/tags/tides"].scripts != members
    assert decisions["/contact"].scripts == "inline"
    assert needs_render(page("No scripts")).scripts == ""


@pytest.mark.parametrize(
    "head, tail, words",
    [
        ("", INLINE_NOAI, "refinerybot-extended, noai"),
        (
            "",
            "<script>document.head.insertAdjacentHTML('beforeend', "
            '\'<meta name="robots" content="noindex, noai">\');</script>',
            "robots, noindex, noai",
        ),
        (  # the static HTML says index; the script changes it
            "<meta name='robots' content='index, follow'>",
            "<script>document.querySelector('meta[name=robots]').content = 'noimageai';</script>",
            "robots, noimageai",
        ),
        (  # an escaped tag written by document.write, under the crawl token
            "",
            '<script>document.write(\'\\x3cmeta name="RefineryBot" content="none">\');</script>',
            "refinerybot",
        ),
    ],
)
def test_an_inline_script_writing_robots_directives_is_evidence_to_render(head, tail, words):
    d = needs_render(page("Digest", head, tail))
    assert d.render and not d.ambiguous
    assert d.reason.startswith(f"consent: an inline script writes a <meta> naming {words} ")
    assert d.evidence[0].startswith("consent:")


def test_a_handler_attribute_writing_robots_directives_is_evidence_to_render():
    html = page("Digest").replace(
        "<body>",
        "<body onload=\"var m=document.createElement('meta');m.name='robots';"
        "m.content='noai';document.head.appendChild(m)\">",
    )
    assert needs_render(html).reason.startswith("consent: an inline script writes a <meta>")


@pytest.mark.parametrize(
    "tail",
    [
        f"<script>{THEME_JS}</script>",  # a <meta>, but theme-color
        INLINE_ANALYTICS,
        "<script>addEventListener('keydown', function (e) { if (e.key === 'Meta') {} });</script>",
    ],
)
def test_inline_scripts_that_write_no_robots_directive_stay_static(tail):
    d = needs_render(page("Digest", "", tail))
    assert not d.render and d.reason.startswith("static:"), d.reason


def test_meta_directives_reads_names_and_tokens_as_extraction_does():
    html = (
        "<html><head><meta name='robots' content='index'><meta name='otherbot' content='noai'>"
        "<meta name='RefineryBot-Extended' content='noimageai'>"
        "<meta http-equiv='X-Robots-Tag' content='RefineryBot: none'></head><body></body></html>"
    )
    got = meta_directives(html, "RefineryBot", "RefineryBot-Extended")
    assert got == {"noimageai", "noindex"}  # another crawler's noai is not ours
    assert meta_directives("<html><body></body></html>", "a", "b") == frozenset()


@pytest.fixture
def probed(monkeypatch) -> list[str]:
    """The paths of the pages probe renders loaded (the page itself comes from the crawl)."""
    seen: list[str] = []
    real = probe_mod.probe_pages

    def spy(jobs, *args, **kwargs):
        seen.extend(_path(j.url) for j in jobs)
        return real(jobs, *args, **kwargs)

    monkeypatch.setattr(probe_mod, "probe_pages", spy)
    return seen


def test_probes_render_every_page_of_a_template_whose_scripts_write_directives(
    sites, probed, no_browser_leak
):
    a, b = sites
    pages = _pages(a, b)
    decisions = decide_pages(pages, config=CONFIG, budget_s=20.0)
    by_path = {_path(url): d for (url, _), d in zip(pages, decisions, strict=True)}
    for i in range(4):
        d = by_path[f"members/{i}"]
        assert d.render, d.reason
        assert d.reason.startswith("consent: scripts set robots directives (noai, noimageai): ")
        assert "static: " in d.reason  # the static decision it overrides is still named
    # one probe of the template told for all four: three name the page that was probed
    assert sum("the probe of this page" in by_path[f"members/{i}"].reason for i in range(4)) == 1
    assert all(by_path[f"tags/{t}"].render for t in ("boats", "tides"))
    # probed clean: the about page's own scripts write nothing; the control host stays static
    assert not by_path["about"].render and by_path["about"].reason.startswith("static:")
    for path in ("news/0", "news/1", "news/2", "news/3", "contact"):
        assert not by_path[path].render, (path, by_path[path].reason)
    # each template on each host was probed once: a probe is no blanket render
    assert sorted(probed) == ["about", "contact", "members/0", "news/0", "tags/boats"]


def test_over_the_cap_a_host_found_writing_directives_is_rendered_and_a_clean_one_not(
    sites, probed, no_browser_leak, monkeypatch
):
    """Each host's scripts are probed once whatever the cap (consent outranks cost); its other
    templates share the cap; over it, they follow what their host's probes found."""
    a, b = sites
    monkeypatch.setattr(probe_mod, "PROBE_MIN_PAGES", 1)
    monkeypatch.setattr(probe_mod, "PROBE_MAX_SHARE", 0.0)  # a cap of one template
    pages = _pages(a, b)
    decisions = [needs_render(h) for _, h in pages]
    settled = probe_mod.settle_pages(
        [RenderJob(u, h) for u, h in pages],
        decisions,
        CONFIG,
        pages=len(pages),
        budget_s=20.0,
    )
    by_path = {_path(url): d for (url, _), d in zip(pages, settled, strict=True)}
    # one template per host (the largest), and the one more the cap allows
    assert sorted(probed) == ["members/0", "news/0", "tags/boats"]
    assert all(by_path[f"members/{i}"].render for i in range(4))
    about = by_path["about"]
    assert about.render, about.reason
    assert about.reason.startswith("consent: scripts of this host set robots directives")
    assert "over the probe cap of 1 templates" in about.reason
    # host B: its largest template probed clean; the inline page over the cap stays static
    contact = by_path["contact"]
    assert not contact.render
    assert "scripts not probed for robots directives" in contact.reason
    assert not any(by_path[f"news/{i}"].render for i in range(4))
