"""Benchmark the render decision on held-out pages unlike the sample web's, with real Chromium renders.

    .venv/bin/python bench/render_decision.py [--seed 7] [--pages 120] [--pages-in-flight 2]
        [--corpus heldout|sites|external] [--real-pages GIT_DIR]

`--corpus sites` generates pages from sites built like real ones instead
(tests/extract/jspages_sites.py: external bundles, load-more controls, feeds, shadow roots; tests
use seed 4242, development used 11); `--corpus external` from framework-style builds
(tests/extract/jspages_external.py: minified React/Next bundles, Vue templates, jQuery plugins,
module web components, consent overlays, query-string pagers; tests use seed 2718, development
used 5). `--real-pages` names a bare git directory of
adbar/trafilatura (as the `fetch` tool leaves it, read at run time, nothing committed): the share
of its ~990 real, saved pages (tests/cache, tests/eval) each decision would send to Chromium,
and the decision's time per page.

Generates the held-out corpus (tests/extract/jspages_heldout.py; JS pages of ten kinds and static
pages of thirteen kinds, in 13 languages), serves the pages and their sub-resources from a loopback
HTTP server started and stopped here, then in one run:

  1. renders every page once in Chromium (crawlers.render, the pipeline's default budget) and keeps
     the final DOM and the render time of each page;
  2. extracts every page from its static HTML and from its rendered DOM with Refinery's
     `extract_page`, timing each, and runs plain `trafilatura.extract` (defaults) on the static HTML;
  3. probes the pages the new decision calls ambiguous (crawlers.render.probe, short renders);
  4. scores each policy a user could pick, from those measurements: render nothing (Refinery
     extraction, and plain trafilatura), render everything, the old decision (decide.py before the
     evidence-based rewrite, loaded from git), the new decision, and the new decision + probe.

Columns: recall of JS-only text (share of the text only JavaScript produces, CJK characters
counted double, found in the extracted text), the same measured in the DOM (before extraction),
share of JS pages and of static pages rendered, share of static text kept, and cost: seconds per
page (render + extraction for rendered pages, extraction for the others, probe time for probed
ones) with the ratio to rendering nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._peers import module_at  # noqa: E402
from crawlers.extract import extract_page  # noqa: E402
from crawlers.extract.evaluate import contains_passage  # noqa: E402
from crawlers.render import RenderConfig, RenderJob, needs_render, render_pages  # noqa: E402
from crawlers.render.decide import text_weight  # noqa: E402
from crawlers.render.probe import probe_pages, visible_blocks  # noqa: E402
from tests.extract.jspages_external import generate as generate_external  # noqa: E402
from tests.extract.jspages_heldout import generate  # noqa: E402
from tests.extract.jspages_sites import generate as generate_sites  # noqa: E402

DECIDE = "crawlers/render/decide.py"


def old_decision(rev: str | None):
    """`needs_render` of decide.py as it was before the evidence-based rewrite (or at `rev`)."""
    if rev is None:
        # The first commit whose decide.py weighs missing prose is the rewrite; take its parent.
        log = subprocess.run(
            ["git", "log", "--format=%H", "-S", "MISSING_PROSE_CHARS", "--", DECIDE],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        if not log:
            raise SystemExit(f"no commit introduces the new {DECIDE}; pass --old-rev")
        rev = f"{log[-1]}^"
    rev = subprocess.run(
        ["git", "rev-parse", "--short=12", rev],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return module_at(rev, DECIDE, "old_decide").needs_render, rev


class Server:
    """Serves the held-out pages, their sub-resources and an allow-all robots.txt on loopback."""

    def __init__(self, pages, host: str = "127.0.0.64"):
        files = {"/robots.txt": (b"User-agent: *\nAllow: /\n", "text/plain")}
        for p in pages:
            files[p.path] = (p.html.encode("utf-8"), "text/html; charset=utf-8")
            files.update(p.resources)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                # A resource may be keyed with its query (/api/items?page=2) or without it.
                body, ctype = files.get(self.path) or files.get(
                    self.path.split("?")[0], (None, None)
                )
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://{host}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _record(url: str, html: str, rendered_html: str | None = None) -> dict:
    rec = {
        "url": url,
        "status": 200,
        "body": html.encode("utf-8"),
        "content_type": "text/html; charset=utf-8",
        "crawl_allowed": True,
        "training_allowed": True,
        "robots_crawl": "allowed",
    }
    if rendered_html:
        rec.update(rendered=True, rendered_html=rendered_html)
    return rec


def _timed(fn, *args) -> tuple[str, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def _refinery_text(url: str, html: str, rendered: str | None = None) -> str:
    doc = extract_page(_record(url, html, rendered)).document
    return doc["text"] if doc else ""


def _trafilatura_text(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html) or ""


def _share(passages: list[str], text: str) -> tuple[int, int]:
    total = sum(text_weight(p) for p in passages)
    found = sum(text_weight(p) for p in passages if contains_passage(text, p))
    return found, total


def measure(pages, base: str, in_flight: int, budget_s: float) -> dict:
    """Render, probe and extract every page once; everything the policies are scored from."""
    # Every page sits on one loopback host: the crawl's 1 s per-host delay would serialise them.
    config = RenderConfig(pages_in_flight=in_flight, delay=0.0)
    urls = [base + p.path for p in pages]
    # served here on loopback: each page may reach its own origin (nothing else private)
    jobs = [RenderJob(u, p.html, trust_own_origin=True) for u, p in zip(urls, pages, strict=True)]
    start = time.perf_counter()
    outcomes = render_pages(jobs, config)
    render_wall = time.perf_counter() - start
    m = {
        "render_wall": render_wall,
        "render_s": [],
        "render_err": [],
        "dom": [],
        "static": [],
        "rendered": [],
        "trafilatura": [],
        "static_s": [],
        "rendered_s": [],
        "traf_s": [],
    }
    for url, p, out in zip(urls, pages, outcomes, strict=True):
        m["render_s"].append(out.render_ms / 1000)
        m["render_err"].append(out.error)
        m["dom"].append(" ".join(visible_blocks(out.html)) if out.html else "")
        text, secs = _timed(_refinery_text, url, p.html)
        m["static"].append(text)
        m["static_s"].append(secs)
        text, secs = _timed(_refinery_text, url, p.html, out.html)
        m["rendered"].append(text)
        m["rendered_s"].append(secs)
        text, secs = _timed(_trafilatura_text, p.html)
        m["trafilatura"].append(text)
        m["traf_s"].append(secs)
    m["static_dom"] = [" ".join(visible_blocks(p.html)) for p in pages]
    new = [needs_render(p.html) for p in pages]
    todo = [i for i, d in enumerate(new) if d.ambiguous]
    start = time.perf_counter()
    probes = probe_pages([jobs[i] for i in todo], config, budget_s)
    m["probe_wall"] = time.perf_counter() - start
    m["probe"] = {i: r for i, r in zip(todo, probes, strict=True)}
    return m


def score(name: str, pages, m: dict, render: list[bool], probed=(), text_key=None) -> dict:
    """One policy's row: recall of JS-only text, static share rendered, static text kept, cost."""
    js_found = js_total = dom_found = st_found = st_total = 0
    cost = 0.0
    for i, p in enumerate(pages):
        if text_key:
            text, secs = m[text_key][i], m["traf_s"][i]
            dom = m["static_dom"][i]
        elif render[i]:
            text, secs = m["rendered"][i], m["render_s"][i] + m["rendered_s"][i]
            dom = m["dom"][i]
        else:
            text, secs = m["static"][i], m["static_s"][i]
            dom = m["static_dom"][i]
        if i in probed:
            secs += m["probe"][i].render_ms / 1000
        cost += secs
        if p.needs_js:
            f, t = _share(p.js_only, text)
            js_found, js_total = js_found + f, js_total + t
            dom_found += _share(p.js_only, dom)[0]
        else:
            f, t = _share(p.static_text, text)
            st_found, st_total = st_found + f, st_total + t
    js = [i for i, p in enumerate(pages) if p.needs_js]
    static = [i for i, p in enumerate(pages) if not p.needs_js]
    return {
        "name": name,
        "recall": js_found / js_total,
        "dom_recall": dom_found / js_total,
        "js_rendered": sum(render[i] for i in js) / len(js),
        "static_rendered": sum(render[i] for i in static) / len(static),
        "static_probed": sum(1 for i in static if i in probed) / len(static),
        "static_kept": st_found / st_total,
        "s_per_page": cost / len(pages),
    }


def real_pages(git_dir: str, old_needs_render, rev: str) -> None:
    """Share of real saved pages (static: their text is in the HTML) each decision renders."""
    from crawlers.extract.decode import BadPage, decode_html

    def git(*a: str) -> bytes:
        return subprocess.run(
            ["git", f"--git-dir={git_dir}", *a], capture_output=True, check=True
        ).stdout

    listing = git("ls-tree", "-r", "-z", "--name-only", "HEAD", "tests/cache", "tests/eval")
    names = [n for n in listing.decode().split("\0") if n.endswith((".html", ".htm"))]
    htmls = []
    for name in names:
        try:
            htmls.append(decode_html(git("show", f"HEAD:{name}"), None))
        except BadPage:
            continue
    print(f"\nReal saved pages (adbar/trafilatura tests/cache + tests/eval): {len(htmls)} pages")
    for label, fn in (
        (f"old decision ({rev[:12]})", old_needs_render),
        ("new decision", needs_render),
    ):
        start = time.perf_counter()
        decisions = [fn(h) for h in htmls]
        secs = (time.perf_counter() - start) / len(htmls)
        rendered = sum(d.render for d in decisions) / len(htmls)
        # an old revision's RenderDecision may predate `ambiguous` and `evidence`
        ambiguous = sum(getattr(d, "ambiguous", False) for d in decisions) / len(htmls)
        first = Counter(
            (getattr(d, "evidence", ()) or (d.reason,))[0].split(" (")[0][:40]
            for d in decisions
            if d.render
        )
        print(
            f"{label:28} rendered {rendered:.3f}, ambiguous {ambiguous:.3f}, "
            f"{secs * 1000:.0f} ms/page; first evidence: {dict(first.most_common(5))}"
        )


def main() -> None:
    """Run the benchmark and print its tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--seed", type=int, default=7, help="held-out seed (tests use 2024, dev used 1)"
    )
    ap.add_argument("--pages", type=int, default=120, help="pages, half JS and half static")
    ap.add_argument("--pages-in-flight", type=int, default=2, help="browser pages at once")
    ap.add_argument("--probe-budget", type=float, default=5.0, help="seconds per probe render")
    ap.add_argument("--old-rev", default=None, help="git revision of the old decide.py")
    ap.add_argument("--corpus", choices=("heldout", "sites", "external"), default="heldout")
    ap.add_argument("--real-pages", default=None, help="bare git dir of adbar/trafilatura")
    args = ap.parse_args()

    old_needs_render, rev = old_decision(args.old_rev)
    if args.real_pages:
        real_pages(args.real_pages, old_needs_render, rev)
    corpora = {"heldout": generate, "sites": generate_sites, "external": generate_external}
    pages = corpora[args.corpus](args.seed, args.pages)
    with Server(pages) as srv:
        m = measure(pages, srv.base, args.pages_in_flight, args.probe_budget)

    new = [needs_render(p.html) for p in pages]
    old = [old_needs_render(p.html).render for p in pages]
    probed = set(m["probe"])
    with_probe = [d.render or (i in probed and m["probe"][i].grew(80)) for i, d in enumerate(new)]
    n = len(pages)
    rows = [
        score("render nothing (Refinery extract)", pages, m, [False] * n),
        score("plain trafilatura.extract", pages, m, [False] * n, text_key="trafilatura"),
        score("render everything", pages, m, [True] * n),
        score(f"old decision ({rev[:12]})", pages, m, old),
        score("new decision (auto)", pages, m, [d.render for d in new]),
        score("new decision + probe", pages, m, with_probe, probed=probed),
    ]
    js_n = sum(p.needs_js for p in pages)
    errors = Counter(e.split(":")[0] for e in m["render_err"] if e)
    print(
        f"\nHeld-out render decision, seed {args.seed}: {n} pages ({js_n} JS, {n - js_n} static),"
    )
    print(
        f"{len({p.lang for p in pages})} languages; Chromium, {args.pages_in_flight} pages in flight"
    )
    print(
        f"render errors: {dict(errors) or 'none'}; probe: {len(probed)} pages in {m['probe_wall']:.1f} s"
    )
    head = f"{'policy':36} {'JS-text recall':>14} {'in DOM':>7} {'JS rendered':>11} {'static rendered':>15} {'static probed':>13} {'static text kept':>16} {'s/page':>7} {'x nothing':>9}"
    print(head)
    base = rows[0]["s_per_page"]
    for r in rows:
        print(
            f"{r['name']:36} {r['recall']:14.3f} {r['dom_recall']:7.3f} {r['js_rendered']:11.3f} "
            f"{r['static_rendered']:15.3f} {r['static_probed']:13.3f} {r['static_kept']:16.3f} "
            f"{r['s_per_page']:7.3f} {r['s_per_page'] / base:9.1f}"
        )
    render_cost = statistics.mean(
        a + b for a, b in zip(m["render_s"], m["rendered_s"], strict=True)
    )
    static_cost = statistics.mean(m["static_s"])
    probe_ms = [r.render_ms / 1000 for r in m["probe"].values()]
    print(
        f"\ncost per page: rendered {render_cost:.3f} s (render + extraction; render wall "
        f"{m['render_wall'] / n:.3f} s/page at {args.pages_in_flight} in flight), static "
        f"{static_cost:.4f} s, ratio x{render_cost / static_cost:.0f}; probe "
        f"{statistics.mean(probe_ms) if probe_ms else 0:.3f} s per probed page"
    )
    for label, decisions in (
        ("old", old),
        ("new", [d.render for d in new]),
        ("new + probe", with_probe),
    ):
        missed = Counter(
            p.kind for p, r in zip(pages, decisions, strict=True) if p.needs_js and not r
        )
        wrong = Counter(
            p.kind for p, r in zip(pages, decisions, strict=True) if not p.needs_js and r
        )
        print(
            f"{label:12} JS pages not rendered: {dict(missed) or '-'}; static rendered: {dict(wrong) or '-'}"
        )


if __name__ == "__main__":
    main()
