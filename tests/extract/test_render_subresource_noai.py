"""A sub-resource's own opt-out: `X-Robots-Tag: noai` (plain or scoped to one of our tokens, on
any redirect hop) and a framed document's meta robots noai keep its text out of the rendered
DOM, recorded in `opted_out` and `blocked_requests` as a robots.txt training opt-out is.

Images, fonts and media (no text) are still loaded, a page that is itself not training-allowed
loads everything as before, and a replay refuses an archived response that says noai.
"""

from __future__ import annotations

import pytest

from crawlers.render import RenderConfig, RenderJob, render_pages
from crawlers.render.archive import ArchivedPage, ArchivedResponse
from crawlers.render.session import meta_noai, xrt_noai

from .test_render_policies import FAST, Site, js, jsn, text_of

pytestmark = pytest.mark.timeout(120)

AGENTS = ("RefineryBot", "RefineryBot-Extended")
NOT_LOADED = "not loaded, so none of its text is in the page"


def _hop(*values: str):
    from crawlers.crawl.fetcher import Hop

    return Hop("http://127.0.0.1/x", 200, response_headers=[("X-Robots-Tag", v) for v in values])


@pytest.mark.parametrize(
    ("values", "opted_out"),
    [
        (("noai",), True),
        (("NOAI, noimageai",), True),
        (("noindex; noai",), True),
        (("RefineryBot-Extended: noai",), True),
        (("RefineryBot: noai",), True),
        (("nofollow", "refinerybot-extended: noindex, noai"), True),
        (("OtherBot: noai",), False),
        (("noimageai",), False),  # images only: text may be used
        (("noindex",), False),
    ],
)
def test_xrt_noai_reads_the_header_as_the_crawl_does(values, opted_out):
    assert (xrt_noai([_hop(*values)], *AGENTS) is not None) is opted_out


def test_xrt_noai_on_a_redirect_hop_names_it():
    from crawlers.crawl.fetcher import Hop

    hops = [Hop("http://127.0.0.1/a", 302, response_headers=[("X-Robots-Tag", "noai")])]
    hops.append(Hop("http://127.0.0.1/b", 200, response_headers=[]))
    why = xrt_noai(hops, *AGENTS)
    assert why == "X-Robots-Tag 'noai' on the redirect from http://127.0.0.1/a says noai"


@pytest.mark.parametrize(
    ("meta", "opted_out"),
    [
        ('<meta name="robots" content="noai">', True),
        ('<meta name="RefineryBot-Extended" content="noai, noimageai">', True),
        ('<meta http-equiv="X-Robots-Tag" content="noai">', True),
        ('<meta name="otherbot" content="noai">', False),
        ('<meta name="robots" content="noimageai">', False),
    ],
)
def test_meta_noai_reads_meta_robots_as_the_crawl_does(meta, opted_out):
    body = f"<html><head>{meta}</head><body>x</body></html>".encode()
    assert (meta_noai(body, *AGENTS) is not None) is opted_out


def _html(status: int = 200, headers: dict | None = None, body: str = "") -> tuple:
    return status, {"Content-Type": "text/html", **(headers or {})}, body.encode()


def _with(route: tuple, **headers: str) -> tuple:
    status, hdrs, body = route
    return status, {**hdrs, **headers}, body


PAGE = """<html><head><link rel="stylesheet" href="/noai.css"></head><body><div id=root></div>
<script>
const show = t => { const p = document.createElement('p'); p.textContent = t; root.appendChild(p); };
const copy = f => { try { show(f.contentDocument.body.textContent); } catch (e) {} };
for (const u of ['/plain.json', '/scoped.json', '/other.json', '/imgonly.json', '/hop.json'])
  fetch(u).then(r => r.json()).then(d => show(d.text)).catch(() => {});
</script>
<script src="/xrt.js"></script>
<iframe src="/meta-frame.html" onload="copy(this)"></iframe>
<iframe src="/xrt-frame.html" onload="copy(this)"></iframe>
<img src="/noai.png"></body></html>"""

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f"
    b"\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00"
    b"\x00IEND\xaeB`\x82"
)


def test_a_sub_resource_that_says_noai_is_not_loaded_into_a_training_page(no_browser_leak):
    routes = {
        "/plain.json": jsn({"text": "PLAIN-TEXT"}),
        "/scoped.json": _with(
            jsn({"text": "SCOPED-TEXT"}), **{"X-Robots-Tag": "RefineryBot-Extended: noai"}
        ),
        "/other.json": _with(jsn({"text": "OTHERBOT-TEXT"}), **{"X-Robots-Tag": "OtherBot: noai"}),
        "/imgonly.json": _with(jsn({"text": "NOIMAGEAI-TEXT"}), **{"X-Robots-Tag": "noimageai"}),
        "/hop.json": (302, {"Location": "/clean.json", "X-Robots-Tag": "noai"}, b""),
        "/clean.json": jsn({"text": "REDIRECTED-TEXT"}),
        "/xrt.js": _with(js("show('XRT-SCRIPT-TEXT');"), **{"X-Robots-Tag": "noai, noimageai"}),
        "/noai.css": (
            200,
            {"Content-Type": "text/css", "X-Robots-Tag": "noai"},
            b'#root::after { content: "CSS-TEXT"; }',
        ),
        "/meta-frame.html": _html(
            body='<html><head><meta name="robots" content="noai"></head>'
            "<body>META-FRAME-TEXT</body></html>"
        ),
        "/xrt-frame.html": _html(
            headers={"X-Robots-Tag": "noai"}, body="<html><body>XRT-FRAME-TEXT</body></html>"
        ),
        "/noai.png": (200, {"Content-Type": "image/png", "X-Robots-Tag": "noai"}, PNG),
    }
    with Site("127.0.0.91", routes) as site:
        base = site.base
        old = ArchivedResponse(
            f"{base}/xrt.js",
            200,
            [("Content-Type", "application/javascript"), ("X-Robots-Tag", "noai")],
            b"show('XRT-SCRIPT-TEXT');",
        )
        replay = ArchivedPage(f"{base}/c", {}, {f"{base}/xrt.js": [old]})
        jobs = [
            RenderJob(f"{base}/a", PAGE, training_allowed=True),
            RenderJob(f"{base}/b", PAGE, training_allowed=False),  # nothing of it is for training
            RenderJob(f"{base}/c", PAGE, archive=replay),
        ]
        cfg = RenderConfig(allow_private_networks=True, block_media=False, **FAST)
        allowed, opted_out_page, replayed = render_pages(jobs, cfg)

    assert allowed.error is None, allowed.error
    text = text_of(allowed.html)
    for kept in ("PLAIN-TEXT", "OTHERBOT-TEXT", "NOIMAGEAI-TEXT"):
        assert kept in text, (kept, text)
    for gone in ("SCOPED-TEXT", "REDIRECTED-TEXT", "XRT-SCRIPT-TEXT", "META-FRAME-TEXT"):
        assert gone not in text, (gone, text)
    assert "XRT-FRAME-TEXT" not in text
    refused = ["/scoped.json", "/hop.json", "/xrt.js", "/noai.css", "/meta-frame.html"]
    refused.append("/xrt-frame.html")
    assert sorted(allowed.opted_out) == sorted(f"{base}{p}" for p in refused)
    reasons = {b["url"].removeprefix(base): b["reason"] for b in allowed.blocked_requests}
    assert set(reasons) == set(refused), reasons
    assert reasons["/xrt.js"] == (
        f"training opt-out: X-Robots-Tag 'noai, noimageai' says noai; {NOT_LOADED}"
    )
    assert reasons["/scoped.json"] == (
        f"training opt-out: X-Robots-Tag 'RefineryBot-Extended: noai' says noai; {NOT_LOADED}"
    )
    assert reasons["/hop.json"] == (
        f"training opt-out: X-Robots-Tag 'noai' on the redirect from {base}/hop.json says noai; "
        f"{NOT_LOADED}"
    )
    assert reasons["/meta-frame.html"] == (
        f'training opt-out: meta robots <meta name="robots" content="noai"> says noai; {NOT_LOADED}'
    )
    # An image cannot put text into the DOM: loaded even though it says noai.
    loaded = {s["url"].removeprefix(base) for s in allowed.subresources}
    assert "/noai.png" in loaded and not loaded & set(refused)

    # A page that is itself not for training loads everything, as before.
    assert opted_out_page.opted_out == []
    assert "XRT-SCRIPT-TEXT" in text_of(opted_out_page.html)
    assert "META-FRAME-TEXT" in text_of(opted_out_page.html)

    # A replay of a batch archived before this was read refuses the archived noai script too.
    assert f"{base}/xrt.js" in replayed.opted_out
    assert "XRT-SCRIPT-TEXT" not in text_of(replayed.html)
