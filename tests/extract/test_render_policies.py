"""The browser goes through the crawl's downloader: SSRF guard, robots for the --agent token,
politeness, archived sub-resources and a network-free replay; Chromium runs sandboxed.

Every site is a loopback server on its own 127.0.0.N that counts TCP connections as well as
requests, so "never reached" means no connection at all, not only no HTTP request.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from lxml import html as lxml_html
from warcio.archiveiterator import ArchiveIterator

from common.procs import browser_descendants
from crawlers.crawl.downloader import Downloader
from crawlers.render import RenderConfig, RenderJob, render_pages
from crawlers.render.crawl import replay_renders

from .conftest import write_crawl

pytestmark = pytest.mark.timeout(120)


class Site:
    """A loopback site: `routes` maps a path to (status, headers, body); logs (path, UA, time)."""

    def __init__(self, host: str, routes: dict, robots: str = "User-agent: *\nAllow: /\n"):
        site = self
        self.routes = {
            "/robots.txt": (200, {"Content-Type": "text/plain"}, robots.encode()),
            **routes,
        }
        self.log: list[tuple[str, str, float]] = []
        self.connections = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                site.log.append((self.path, self.headers.get("User-Agent", ""), time.monotonic()))
                route = site.routes.get(self.path.split("?", 1)[0])
                if callable(route):
                    route = route(site)
                if route is None:
                    self.send_error(404)
                    return
                status, headers, body = route
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def verify_request(self, request, client_address):
                site.connections += 1
                return True

        self.httpd = Server((host, 0), Handler)
        self.base = f"http://{host}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def paths(self) -> list[str]:
        return [p for p, _, _ in self.log]

    def __enter__(self) -> Site:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def js(body: str) -> tuple[int, dict, bytes]:
    return 200, {"Content-Type": "application/javascript"}, body.encode()


def jsn(obj) -> tuple[int, dict, bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(obj).encode()


def text_of(html: str | None) -> str:
    assert html, "no DOM"
    root = lxml_html.fromstring(html)
    for bad in root.xpath("//script|//style"):
        bad.getparent().remove(bad)
    return re.sub(r"\s+", " ", root.text_content()).strip()


FAST = {"delay": 0.0, "settle_max_ms": 3000, "idle_ms": 200, "page_timeout_s": 20}


def page_record(url: str, html: str) -> dict:
    """A crawled HTML page (a pages.parquet row for write_crawl), training allowed."""
    return {
        "url": url,
        "status": 200,
        "body": html.encode(),
        "content_type": "text/html",
        "training_allowed": True,
    }


@pytest.fixture(scope="module")
def internal():
    """The 'internal' endpoint pages must never reach: another loopback host."""
    with Site("127.0.0.82", {"/secret": jsn({"secret": "INTERNAL-ONLY"})}) as site:
        yield site


def test_scripts_redirects_and_navigations_cannot_reach_internal_hosts(internal, no_browser_leak):
    secret = f"{internal.base}/secret"
    routes = {
        "/api/ok": jsn({"text": "Own-origin passage about harbour seals."}),
        "/api/bounce": (302, {"Location": secret}, b""),
    }
    with Site("127.0.0.81", routes) as site:
        fetches = f"""<html><head><link rel="preconnect" href="{internal.base}">
<link rel="dns-prefetch" href="{internal.base}"></head><body><div id=root></div><script>
const show = t => {{ const p = document.createElement('p'); p.textContent = t; root.appendChild(p); }};
fetch('/api/ok').then(r => r.json()).then(d => show(d.text));
fetch('{secret}').then(r => r.text()).then(show).catch(() => {{}});
fetch('/api/bounce').then(r => r.text()).then(show).catch(() => {{}});
fetch('http://10.0.0.1/admin').catch(() => {{}});
const x = new XMLHttpRequest(); x.open('GET', '{secret}?xhr'); x.send();
try {{ new WebSocket('{internal.base.replace("http", "ws")}/ws'); }} catch (e) {{}}
try {{ window.open('{secret}?popup'); }} catch (e) {{}}
new Worker(URL.createObjectURL(new Blob(["fetch('{secret}?worker').catch(() => 0)"])));
</script><img src="{internal.base}/pixel.gif"></body></html>"""
        navigate = f"<html><body><p>Leaving.</p><script>setTimeout(() => location.href = '{secret}?nav', 50)</script></body></html>"
        refresh = f'<html><head><meta http-equiv="refresh" content="0;url={secret}?meta"></head><body>x</body></html>'
        jobs = [  # the caller vouches for the page's own loopback origin, and only that one
            RenderJob(f"{site.base}/{name}", page, trust_own_origin=True)
            for name, page in (("fetches", fetches), ("navigate", navigate), ("refresh", refresh))
        ]
        outs = render_pages(jobs, RenderConfig(pages_in_flight=3, **FAST))
    assert internal.connections == 0 and internal.log == []
    first = outs[0]
    assert first.error is None
    assert "Own-origin passage about harbour seals." in text_of(first.html)
    assert "INTERNAL-ONLY" not in first.html
    reasons = {b["url"]: b["reason"] for o in outs for b in o.blocked_requests}
    for url in (secret, f"{secret}?xhr", "http://10.0.0.1/admin"):
        assert reasons[url].startswith("ssrf-blocked"), (url, reasons)
    for url in (f"{secret}?nav", f"{secret}?meta"):  # navigations away are never followed
        assert reasons[url].startswith("navigation away from the page"), (url, reasons)
    assert [o.navigated_to for o in outs] == [None, f"{secret}?nav", f"{secret}?meta"]
    assert reasons[f"{site.base}/api/bounce"].startswith(f"redirect to {secret}: ssrf-blocked")
    assert "/api/bounce" in site.paths()  # the page's own origin is reachable, the hop is not


def test_allowing_private_networks_lets_the_same_page_through(internal, no_browser_leak):
    # The control for the test above: the same request does arrive when the guard is lifted.
    before = len(internal.log)
    page = f"<html><body><div id=r></div><script>fetch('{internal.base}/secret').then(r => r.json()).then(d => r.textContent = d.secret)</script></body></html>"
    (out,) = render_pages(
        [RenderJob("http://127.0.0.83:9/p", page)],
        RenderConfig(pages_in_flight=1, allow_private_networks=True, **FAST),
    )
    assert "INTERNAL-ONLY" in text_of(out.html)
    assert [p for p, _, _ in internal.log[before:]] == ["/robots.txt", "/secret"]


def test_an_imported_page_never_makes_its_private_origin_trusted(tmp_path, no_browser_leak):
    """The render trusted any page on a private IP literal ('the crawl already fetched it'), so
    an imported archive's record for http://127.0.0.N/ had the render fetch that host's
    robots.txt and scripts with private networks off. Only a page that a crawl told to allow
    private networks fetched may reach its own origin; a page of a crawl not told so, or an
    imported one, never (even in a directory whose crawl was told so)."""
    from crawlers.imports.run import import_warc
    from crawlers.render.crawl import plan_renders
    from crawlers.render.run import run_render
    from tests.imports.archives import response, write_warc

    def own_js(site):
        return js(f"document.body.insertAdjacentHTML('beforeend', '<p>OWN-{site.base}</p>')")

    page = '<html><body><div id=app></div><script src="/own.js"></script></body></html>'
    crawl = tmp_path / "lake" / "crawl"
    with (
        Site("127.0.0.91", {"/own.js": own_js}) as crawled,
        Site("127.0.0.92", {"/own.js": own_js}) as imported,
        Site("127.0.0.93", {"/own.js": own_js}) as beside,
        Site("127.0.0.94", {"/own.js": own_js}) as untold,
    ):
        told = {"allow_private_networks": True, "delay": 0.0}
        row = {"url": f"{crawled.base}/app", "status": 200, "body": page.encode()}
        write_crawl(crawl / "shard=0", [{**row, "content_type": "text/html"}], crawl_config=told)
        row = {**row, "url": f"{untold.base}/app"}  # a crawl that ran with the guard on
        write_crawl(crawl / "shard=1", [row], crawl_config={"delay": 0.0})
        for site, shard in ((imported, "shard=import"), (beside, "shard=import-1")):
            warc = write_warc(
                tmp_path / f"{shard}.warc.gz",
                lambda w, s=site: response(w, f"{s.base}/app", page.encode()),
            )
            import_warc([str(warc)], crawl / shard, offline=True)
        # an import written where a crawl told to allow private networks left its frontier
        (crawl / "shard=import-1" / "frontier.sqlite").write_bytes(
            (crawl / "shard=0" / "frontier.sqlite").read_bytes()
        )
        _, jobs = plan_renders(crawl, "always")
        assert {j.url: j.trust_own_origin for j in jobs} == {
            f"{crawled.base}/app": True,
            f"{imported.base}/app": False,
            f"{beside.base}/app": False,
            f"{untold.base}/app": False,
        }
        run_render(crawl, tmp_path / "out", "always", delay=0.0, page_timeout_s=20, archive=False)
    rows = {r["url"]: r for r in pq.read_table(tmp_path / "out" / "rendered.parquet").to_pylist()}
    # the control: the crawled page reached its own origin (robots.txt, then its script)
    assert f"OWN-{crawled.base}" in rows[f"{crawled.base}/app"]["html"]
    assert crawled.paths() == ["/robots.txt", "/own.js"]
    for site in (imported, beside, untold):
        assert site.connections == 0 and site.log == []  # not even robots.txt
        row = rows[f"{site.base}/app"]
        assert f"OWN-{site.base}" not in row["html"] and row["subresources"] == []
        (blocked,) = row["blocked_requests"]
        assert blocked["url"] == f"{site.base}/own.js"
        assert blocked["reason"].startswith("ssrf-blocked: refused 127.0.0.9"), blocked


def test_agent_token_is_sent_and_obeyed_and_training_token_recorded(tmp_path, no_browser_leak):
    from typer.testing import CliRunner

    from pipelines.cli import app

    robots = (
        "User-agent: ProbeBot\nDisallow: /nope/\n\n"
        "User-agent: ProbeBot-Train\nDisallow: /api/\n\n"
        "User-agent: *\nDisallow: /\n"
    )
    routes = {
        "/api/data": jsn({"text": "Passage only ProbeBot may fetch."}),
        "/nope/data": jsn({"text": "Passage ProbeBot must not fetch."}),
    }
    with Site("127.0.0.84", routes, robots) as site:
        page = """<html><body><div id=root></div><noscript>enable js</noscript><script>
for (const u of ['/api/data', '/nope/data']) fetch(u).then(r => r.json()).then(d => {
  const p = document.createElement('p'); p.textContent = d.text; root.appendChild(p); }).catch(() => {});
</script></body></html>"""
        crawl = write_crawl(
            tmp_path / "crawl",
            [
                {
                    "url": f"{site.base}/app",
                    "status": 200,
                    "body": page.encode(),
                    "content_type": "text/html",
                }
            ],
            crawl_config={"allow_private_networks": True},  # a crawl of a loopback site
        )
        out = tmp_path / "render"
        result = CliRunner().invoke(
            app,
            [
                "render",
                "--crawl",
                str(crawl),
                "--out",
                str(out),
                "--mode",
                "always",
                "--agent",
                "ProbeBot",
                "--training-agent",
                "ProbeBot-Train",
                "--delay",
                "0",
            ],
        )
        assert result.exit_code == 0, result.output
        log = list(site.log)
    assert [p for p, _, _ in log] == ["/robots.txt", "/api/data"]  # /nope/ never requested
    assert all("ProbeBot/" in ua and "RefineryBot" not in ua for _, ua, _ in log)
    (row,) = pq.read_table(out / "rendered.parquet").to_pylist()
    # /api/ is fetched (ProbeBot may) but its text is opted out of training: never loaded
    assert "Passage only ProbeBot may fetch." not in text_of(row["html"])
    reason = (
        "training opt-out: robots.txt disallows the training token ProbeBot-Train; "
        "not loaded, so none of its text is in the page"
    )
    assert sorted(row["blocked_requests"], key=lambda b: b["url"]) == [
        {"url": f"{site.base}/api/data", "reason": reason},
        {"url": f"{site.base}/nope/data", "reason": "robots.txt disallows ProbeBot"},
    ]
    assert row["subresources"] == []
    assert "training opt-out: 1 sub-request(s) not loaded" in row["render_reason"]


def test_politeness_spaces_subrequests_and_shared_scripts_are_fetched_once(no_browser_leak):
    routes = {f"/api/{i}": jsn({"text": f"Item {i}."}) for i in range(3)}
    routes["/static/shared.js"] = js("document.title = 'Shared bundle ran';")
    with Site("127.0.0.85", routes) as site:
        page = """<html><head><script src="/static/shared.js"></script></head><body><div id=root></div><script>
Promise.all([0, 1, 2].map(i => fetch('/api/' + i).then(r => r.json()))).then(ds => {
  for (const d of ds) { const p = document.createElement('p'); p.textContent = d.text; root.appendChild(p); } });
</script></body></html>"""
        other = '<html><head><script src="/static/shared.js"></script></head><body>x</body></html>'
        cfg = RenderConfig(pages_in_flight=2, **{**FAST, "delay": 0.4})
        pages = (("p", page), ("q", other))
        jobs = [RenderJob(f"{site.base}/{n}", h, trust_own_origin=True) for n, h in pages]
        out, out2 = render_pages(jobs, cfg)
        times = [t for p, _, t in site.log if p.startswith("/api/")]
        paths = site.paths()
    assert out.error is None and text_of(out.html).endswith("Item 0.Item 1.Item 2.")
    assert "Shared bundle ran" in out.html and "Shared bundle ran" in out2.html
    assert paths.count("/static/shared.js") == 1 and paths.count("/robots.txt") == 1
    assert len(times) == 3
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.4 * 0.95, gaps  # a lower bound: the delay is never shortened


def _gzip(body: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:
        fh.write(body)
    return buf.getvalue()


def test_subresources_are_archived_and_a_replay_renders_the_same_text(tmp_path, no_browser_leak):
    from crawlers.crawl.frontier import Frontier
    from crawlers.render.run import run_render

    app_js = """fetch('/data/items.json').then(r => r.json()).then(d => {
  for (const t of d.items) { const li = document.createElement('li'); li.textContent = t; list.appendChild(li); } });"""
    items = {"items": ["Archived passage about sea otters and urchins.", "Καλημέρα — 海獺の話。"]}
    routes = {
        "/static/app.js": js(app_js),
        "/data/items.json": (
            200,
            {"Content-Type": "application/json; charset=utf-8", "Content-Encoding": "gzip"},
            _gzip(json.dumps(items, ensure_ascii=False).encode()),
        ),
        "/data/old": (301, {"Location": "/data/new"}, b""),
        "/data/new": jsn({"note": "Redirected passage."}),
    }
    with Site("127.0.0.86", routes) as site:
        page = """<html><head><title>Otter feed</title></head><body><ul id=list></ul>
<p id=note></p><script src="/static/app.js"></script>
<script>fetch('/data/old').then(r => r.json()).then(d => note.textContent = d.note)</script></body></html>"""
        url = f"{site.base}/feed"
        crawl = write_crawl(
            tmp_path / "crawl",
            [{"url": url, "status": 200, "body": page.encode(), "content_type": "text/html"}],
        )
        # The render takes the crawl's tokens and delay from the crawl's own config when not given.
        frontier = Frontier(crawl / "frontier.sqlite")
        with frontier:
            frontier.set_meta(
                "config",
                {
                    "agent": "ArchiveBot",
                    "training_agent": "ArchiveBot-Train",
                    "delay": 0.0,
                    "allow_private_networks": True,  # its pages may reach their own origin
                },
            )
        frontier.close()
        out = tmp_path / "render"
        summary = run_render(crawl, out, "always", pages_in_flight=1)
        agents = {ua for _, ua, _ in site.log}
    assert summary["rendered"] == 1 and summary["render_errors"] == 0
    assert len(agents) == 1 and "ArchiveBot/" in agents.pop()
    (row,) = pq.read_table(out / "rendered.parquet").to_pylist()
    live_text = text_of(row["html"])
    assert "Archived passage about sea otters and urchins." in live_text
    assert "海獺の話" in live_text and "Redirected passage." in live_text

    # The records: metadata for the page, request + response per hop, linked to the page.
    assert [p.name for p in out.glob("render-*.warc.gz")] == [row["warc_file"]]
    records = []
    with open(out / row["warc_file"], "rb") as fh:
        for rec in ArchiveIterator(fh):
            records.append((rec.rec_type, rec.rec_headers, rec.content_stream().read()))
    (meta,) = [(h, body) for kind, h, body in records if kind == "metadata"]
    meta_id = meta[0].get_header("WARC-Record-ID")
    assert json.loads(meta[1])["page"] == url
    responses = {h.get_header("WARC-Target-URI"): h for kind, h, _ in records if kind == "response"}
    assert set(responses) == {
        f"{site.base}{p}"
        for p in ("/robots.txt", "/static/app.js", "/data/items.json", "/data/old", "/data/new")
    } - {f"{site.base}/robots.txt"}
    for h in responses.values():
        assert h.get_header("WARC-Concurrent-To") == meta_id
        assert h.get_header("Refinery-Page-URI") == url
    assert sum(1 for kind, _, _ in records if kind == "request") == len(responses)

    # Replay with the site gone: the same text, nothing refused, nothing fetched.
    (again,) = replay_renders(crawl, out, RenderConfig(pages_in_flight=1, **FAST))
    assert again.error is None and again.blocked_requests == []
    assert text_of(again.html) == live_text


def test_downloader_layers_refuse_redirects_and_retry_transient_errors(internal):
    state = {"n": 0}

    def flaky(site):
        state["n"] += 1
        return (503, {"Content-Type": "text/plain"}, b"busy") if state["n"] == 1 else jsn({"ok": 1})

    internal_before = internal.connections
    routes = {"/hop": (302, {"Location": f"{internal.base}/secret"}, b""), "/flaky": flaky}
    with Site("127.0.0.87", routes) as site:
        own = site.base

        async def go():
            cfg = {"delay": 0.0, "backoff_base": 0.05, "max_retries": 2}
            async with Downloader(cfg) as dl:
                plain = await dl.fetch(f"{own}/flaky")  # no trust: this private host is refused
                hop = await dl.fetch(f"{own}/hop", trusted_origin=own)
                flaky_res = await dl.fetch(
                    f"{own}/flaky", trusted_origin=own, wanted_types=("application/json",)
                )
                return plain, hop, flaky_res

        plain, hop, flaky_res = asyncio.run(go())
    assert plain.error.startswith("ssrf-blocked") and plain.status is None
    assert hop.error.startswith("ssrf-blocked") and hop.final_url == f"{internal.base}/secret"
    assert [h.status for h in hop.hops] == [302]
    assert flaky_res.ok and flaky_res.robots_crawl == "allowed" and state["n"] == 2
    assert internal.connections == internal_before


def test_chromium_runs_inside_its_sandbox(no_browser_leak):
    # A sandboxed Chromium's renderers run under seccomp-bpf (Seccomp: 2) once started; with
    # --no-sandbox none ever does. The latest status seen of each renderer is kept.
    seen: dict[int, str] = {}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            for pid in browser_descendants():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"--type=renderer" in cmd:
                    seen[pid] = status
            time.sleep(0.05)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    page = "<html><body><p>sandbox</p><script>setTimeout(() => 0, 1500)</script></body></html>"
    try:
        (out,) = render_pages(
            [RenderJob("http://127.0.0.88:9/s", page)], RenderConfig(pages_in_flight=1, **FAST)
        )
    finally:
        stop.set()
        thread.join()
    assert out.error is None and seen, "no renderer process observed"
    assert any(re.search(r"^Seccomp:\s+2$", s, re.M) for s in seen.values()), seen
