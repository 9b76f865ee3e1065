"""Crawl throughput next to the politeness bound, Refinery vs Scrapy, on copies of the sample web;
and (--many-hosts) how the scheduler scales with the number of hosts.

    .venv/bin/python bench/crawl.py [--quick] [--delay 0.1] [--copies 3] [--max-pages 600]
    .venv/bin/python bench/crawl.py --many-hosts 50,1000,10000,50000 [--max-pages 8000]
    .venv/bin/python bench/crawl.py --scheduler-only 50,1000,10000,50000
    .venv/bin/python bench/crawl.py --news 2000 [--max-pages 3000]

--news N: article coverage and trap share on news-like hosts built like real ones, four sites on
different software, each crawled from its home page with max_pages = 1.5 N (default):
tests/crawl/realnews.py's two (shared template, session ids in many styles, sort/view/comment
variants, 404 families and 200 print/AMP copies, item?id articles only behind paginated listings)
and tests/crawl/wpnews.py's WordPress-like blog (shortlink and old-permalink redirect chains,
rel=next-only listings, media links, replytocom/amp/print, login return addresses, calendars)
and tests/crawl/facetnews.py's Drupal-like host (/node/N aliases with rel=canonical, faceted
search whose links add one value at a time, print copies, 403/404 edit and comment links).
Coverage: articles fetched under any URL; trap share: requests to variants / all requests.
Measured 2026-11-28 (N=2000, max_pages 3000): RealNewsServer coverage 0.390 -> 1.000, trap share
0.513 -> 0.000 (before/after commit a5bb425); OtherNewsServer coverage 1.000, trap share 0.0033;
WordPressNewsServer (sitemaps on, as by default) coverage 0.623 -> 1.000, trap share 0.162 ->
0.006 (media-file links, wp-login.php?redirect_to=, listings paged only by <link rel=next>);
FacetNewsServer coverage 0.910 -> 1.000 (under the aliases: 0.010 -> 1.000), trap share 0.952 ->
0.0047; 404 share on the first two 0.295/0.291 -> 0.010/0.009 (families that only fail are cut).

--many-hosts: one server process on 0.0.0.0 answers for every 127.200.b.c address, each address
a host with robots.txt (allow all) and a home page linking to a few pages. Refinery crawls with
the home pages as seeds at the same global concurrency and a small per-host delay (0.01 s), so
the bound is the concurrency, not politeness. Requests/s (robots.txt included) is counted
server-side from the first to the last request; scheduler CPU per page comes from the crawl
summary (`scheduler_us_per_page`: choosing the next server, heaps included).

Each crawler runs against a fresh server process (its own GIL) serving `--copies` instances of
the sample web (18 hosts each, on distinct 127.0.0.N). The server logs every request, and
throughput, robots violations (requests for URLs the labels forbid) and delay violations
(two requests to a host closer than max(delay, Crawl-delay), or overlapping) are computed from
that log for both crawlers identically. Scrapy is installed on first run into bench/.venvs/scrapy.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import tempfile
import textwrap
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _peers import SCRAPY, peer_python

ROOT = Path(__file__).resolve().parents[1]
UA = "Mozilla/5.0 (compatible; RefineryBot/0.1; +https://example.invalid/bot)"
FIRST_OCTETS = (10, 40, 70, 100, 130, 160)

# The server: sample web copies with a request log (start/end per request), in its own process.
SERVER = textwrap.dedent(
    """
    import json, sys, time, threading, signal
    from sampleweb import build_web, serve
    from sampleweb import server as sws
    log, lock = [], threading.Lock()
    orig = sws._Handler._respond
    def logged(self, head):
        start = time.monotonic()
        try:
            orig(self, head)
        finally:
            with lock:
                log.append((self.server.server_address[0], self.path, self.headers.get("User-Agent", ""), start, time.monotonic()))
    sws._Handler._respond = logged
    octets, info_path, log_path = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
    web = build_web(0)
    servers = [serve(web, first_octet=o) for o in octets]
    labels = {}
    for sw in servers:
        for r in sw.labels_table().select(["url", "expect_crawl_allowed"]).to_pylist():
            labels[r["url"]] = r["expect_crawl_allowed"]
    delays = {}
    for sw in servers:
        for s in web.sites:
            delays[sw.base_url(s.name).split("//")[1].split(":")[0]] = s.crawl_delay or 0.0
    seeds = [u for sw in servers for u in sw.seeds()]
    json.dump({"seeds": seeds, "labels": labels, "crawl_delays": delays}, open(info_path, "w"))
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    done.wait()
    json.dump(log, open(log_path, "w"))
    for sw in servers:
        sw.stop()
    """
)

SPIDER = textwrap.dedent(
    """
    import json, sys, scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.linkextractors import LinkExtractor
    seeds, max_pages, delay, ua, out = json.loads(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
    hosts = sorted({u.split("//")[1].split("/")[0] for u in seeds})  # host:port, as w3lib compares netlocs
    class Bench(scrapy.Spider):
        name = "bench"
        start_urls = seeds
        links = LinkExtractor(allow_domains=hosts)
        def parse(self, response):
            yield {"url": response.url, "status": response.status}
            if hasattr(response, "text"):
                for link in self.links.extract_links(response):
                    if not link.nofollow:
                        yield response.follow(link.url, callback=self.parse)
    p = CrawlerProcess(settings={
        "USER_AGENT": ua, "ROBOTSTXT_OBEY": True, "ROBOTSTXT_USER_AGENT": "RefineryBot",
        "DOWNLOAD_DELAY": delay, "RANDOMIZE_DOWNLOAD_DELAY": False,
        "CONCURRENT_REQUESTS": 64, "CONCURRENT_REQUESTS_PER_DOMAIN": 1, "AUTOTHROTTLE_ENABLED": False,
        "CLOSESPIDER_PAGECOUNT": max_pages, "LOG_LEVEL": "ERROR", "TELNETCONSOLE_ENABLED": False,
        "COOKIES_ENABLED": False, "RETRY_TIMES": 2, "DOWNLOAD_TIMEOUT": 20,
        "WARN_ON_GENERATOR_RETURN_VALUE": False,  # the spider is code from -c: no source to read
        "FEEDS": {out: {"format": "jsonlines"}},
    })
    p.crawl(Bench)
    p.start()
    """
)


def ensure_scrapy() -> Path:
    """The throwaway venv with Scrapy (bench/_peers.py)."""
    return peer_python("scrapy", *SCRAPY)


def start_server(octets: list[int], work: Path) -> tuple[subprocess.Popen, dict, Path]:
    """Start the logging sample-web server process; returns (process, info, log path)."""
    info, log = work / f"info-{time.monotonic_ns()}.json", work / f"log-{time.monotonic_ns()}.json"
    proc = subprocess.Popen(
        [str(ROOT / ".venv/bin/python"), "-c", SERVER, json.dumps(octets), str(info), str(log)],
        cwd=ROOT,
    )
    deadline = time.monotonic() + 120
    while not info.exists() or info.stat().st_size == 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("sample web server did not start")
        time.sleep(0.1)
    time.sleep(0.2)
    return proc, json.loads(info.read_text()), log


def stop_server(proc: subprocess.Popen, log: Path) -> list:
    """Stop the server (SIGTERM to its PID) and read its request log."""
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    return json.loads(log.read_text())


def analyse(log: list, info: dict, delay: float) -> dict:
    """Throughput and violations from the server-side log."""
    labels, crawl_delays = info["labels"], info["crawl_delays"]
    content = [r for r in log if r[1] != "/robots.txt" and "sitemap" not in r[1]]
    port = info["seeds"][0].rsplit(":", 1)[1].split("/")[0]
    robots_viol = sum(1 for ip, path, *_ in log if labels.get(f"http://{ip}:{port}{path}") is False)
    by_host = defaultdict(list)
    for ip, _path, _ua, start, end in log:
        by_host[ip].append((start, end))
    delay_viol = overlap = 0
    for ip, hits in by_host.items():
        hits.sort()
        need = max(delay, crawl_delays.get(ip, 0.0)) - 0.005
        for (s0, e0), (s1, _e1) in zip(hits, hits[1:], strict=False):
            overlap += s1 < e0
            delay_viol += s1 - s0 < need
    span = max(r[4] for r in log) - min(r[3] for r in log) if log else 0.0
    return {
        "content_requests": len(content),
        "requests": len(log),
        "span_s": span,
        "pages_per_s": len(content) / span if span else 0.0,
        "robots_violations": robots_viol,
        "delay_violations": delay_viol,
        "overlaps": overlap,
        "hosts": len(by_host),
        "ua_ok": all("RefineryBot" in r[2] for r in log),
    }


def run_refinery(info: dict, work: Path, max_pages: int, delay: float) -> float:
    """Crawl with Refinery in a subprocess; returns wall seconds."""
    seeds = work / "seeds.txt"
    seeds.write_text("\n".join(info["seeds"]) + "\n")
    cfg = {
        "delay": delay,
        "max_pages": max_pages,
        "allow_private_networks": True,
        "concurrency": 64,
        # The sample web's portal answers robots.txt 503 forever. By default Refinery re-fetches
        # it with backoff (1+2+4 s) and holds that seed's share of max_pages meanwhile, a fixed
        # tail that would swamp a 150-page run; the first failure is final here, as Scrapy's is.
        "robots_retries": 0,
    }
    out = work / f"refinery-{time.monotonic_ns()}"
    t = time.monotonic()
    subprocess.run(
        [
            str(ROOT / ".venv/bin/python"),
            "-m",
            "crawlers.crawl",
            str(seeds),
            str(out),
            "--config",
            json.dumps(cfg),
        ],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - t


def run_scrapy(py: Path, info: dict, work: Path, max_pages: int, delay: float) -> float:
    """Crawl with Scrapy in its own venv; returns wall seconds."""
    out = work / f"scrapy-{time.monotonic_ns()}.jsonl"
    t = time.monotonic()
    subprocess.run(
        [
            str(py),
            "-c",
            SPIDER,
            json.dumps(info["seeds"]),
            str(max_pages),
            str(delay),
            UA,
            str(out),
        ],
        check=True,
        cwd=work,
        env={**os.environ, "PYTHONPATH": ""},
    )
    return time.monotonic() - t


# The many-hosts server: every 127.x address is a host; counts requests (start of the first,
# end of the last) and writes them on SIGTERM.
MANY_SERVER = textwrap.dedent(
    """
    import asyncio, json, signal, sys, time
    from aiohttp import web
    pages, stats_path, port_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    st = {"requests": 0, "robots": 0, "first": None, "last": 0.0}
    links = "".join(f'<a href="/p{i}">page {i} about science research</a> ' for i in range(1, pages))
    home = f"<html><head><title>home</title></head><body><p>Science research news.</p>{links}</body></html>"
    page = "<html><head><title>page</title></head><body><p>Plain English text about science research and experiments.</p></body></html>"
    async def handle(request):
        t = time.monotonic()
        st["first"] = t if st["first"] is None else st["first"]
        st["requests"] += 1
        p = request.path
        if p == "/robots.txt":
            st["robots"] += 1
            resp = web.Response(text="User-agent: *\\nAllow: /\\n", content_type="text/plain")
        elif p == "/":
            resp = web.Response(text=home, content_type="text/html")
        else:
            resp = web.Response(text=page, content_type="text/html")
        st["last"] = time.monotonic()
        return resp
    async def main():
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "0.0.0.0", 0, backlog=4096)
        await site.start()
        open(port_path, "w").write(str(site._server.sockets[0].getsockname()[1]))
        done = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
        await done.wait()
        st["cpu"] = time.process_time()
        json.dump(st, open(stats_path, "w"))
        await runner.cleanup()
    asyncio.run(main())
    """
)


def many_host_ip(i: int) -> str:
    """The i-th bench host: 127.200.b.c (c in 1..254), ~65k addresses."""
    return f"127.{200 + i // (256 * 254)}.{(i // 254) % 256}.{1 + i % 254}"


def run_many_hosts(hosts: int, max_pages: int, concurrency: int, delay: float, work: Path) -> dict:
    """One many-hosts crawl: server process + Refinery process; returns the measured figures."""
    pages = max(2, -(-max_pages // hosts) + 1)  # enough pages that max_pages is the limit
    stats, port_file = work / f"many-{hosts}.json", work / f"many-{hosts}.port"
    server = subprocess.Popen(
        [str(ROOT / ".venv/bin/python"), "-c", MANY_SERVER, str(pages), str(stats), str(port_file)],
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text():
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("many-hosts server did not start")
            time.sleep(0.05)
        port = int(port_file.read_text())
        seeds = work / f"seeds-{hosts}.txt"
        seeds.write_text("".join(f"http://{many_host_ip(i)}:{port}/\n" for i in range(hosts)))
        cfg = {
            "delay": delay,
            "max_pages": max_pages,
            "allow_private_networks": True,
            "concurrency": concurrency,
            "use_sitemaps": False,
            "checkpoint_every": 1000,
        }
        out = work / f"many-{hosts}-{time.monotonic_ns()}"
        t = time.monotonic()
        proc = subprocess.run(
            [
                str(ROOT / ".venv/bin/python"),
                "-m",
                "crawlers.crawl",
                str(seeds),
                str(out),
                "--config",
                json.dumps(cfg),
            ],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - t
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    st = json.loads(stats.read_text())
    span = (st["last"] - st["first"]) if st["first"] is not None else 0.0
    return {
        "hosts": hosts,
        "pages_per_host": pages,
        "requests": st["requests"],
        "robots": st["robots"],
        "span_s": round(span, 2),
        "requests_per_s": round(st["requests"] / span, 1) if span else 0.0,
        "pages_per_s": round((st["requests"] - st["robots"]) / span, 1) if span else 0.0,
        "fetched": summary["fetched"],
        "crawl_cpu_s": summary.get("crawl_cpu_s"),
        # Requests per second of crawler CPU: the throughput a dedicated core would give, which
        # unlike wall time does not move with other processes' load on a shared machine.
        "requests_per_cpu_s": round(st["requests"] / summary["crawl_cpu_s"], 1)
        if summary.get("crawl_cpu_s")
        else 0.0,
        "server_cpu_s": round(st.get("cpu", 0.0), 3),
        "scheduler_s": summary.get("scheduler_s"),
        "scheduler_us_per_page": summary.get("scheduler_us_per_page"),
        "wall_s": round(wall, 1),
        "load_avg": round(os.getloadavg()[0], 1),
    }


def many_hosts_main(counts: list[int], max_pages: int, concurrency: int, delay: float) -> None:
    """Run the many-hosts case for each host count and print the table and the ratios."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-crawl-many-") as tmp:
        for n in counts:
            rows.append(run_many_hosts(n, max_pages, concurrency, delay, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    base = rows[0]["requests_per_s"] or float("nan")
    base_cpu = rows[0]["requests_per_cpu_s"] or float("nan")
    print(
        f"\nmany-hosts crawl: concurrency {concurrency}, delay {delay}s, max {max_pages} pages; "
        f"machine load: {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'hosts':>7} {'requests':>8} {'robots':>7} {'span s':>7} {'req/s':>7} {'pages/s':>8} {'ratio':>6} "
        f"{'req/CPU-s':>9} {'ratio':>6} {'sched us/page':>13} {'load':>5}"
    )
    for r in rows:
        print(
            f"{r['hosts']:7d} {r['requests']:8d} {r['robots']:7d} {r['span_s']:7.1f} {r['requests_per_s']:7.1f} "
            f"{r['pages_per_s']:8.1f} {r['requests_per_s'] / base:6.2f} {r['requests_per_cpu_s']:9.1f} "
            f"{r['requests_per_cpu_s'] / base_cpu:6.2f} {r['scheduler_us_per_page']:13.1f} {r['load_avg']:5.1f}"
        )
    print("ratio: against the first host count; req/CPU-s: requests per second of crawler CPU")
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "crawl_many_hosts.json").write_text(
        json.dumps(
            {"concurrency": concurrency, "delay": delay, "max_pages": max_pages, "rows": rows},
            indent=2,
        )
    )


def scheduler_only(counts: list[int], per_host: int = 3) -> None:
    """The scheduler alone, no network: queue `per_host` URLs on each of N hosts (one a seed),
    then pick, start and finish every item; prints CPU microseconds per pick + reschedule, with
    each host on its own server and with all N hosts on one (subdomains behind one address)."""
    import sys

    sys.path.insert(0, str(ROOT))
    from crawlers.crawl.config import CrawlConfig
    from crawlers.crawl.engine import Crawler

    def run(n: int, url: Callable[[int, int], str], **cfg: Any) -> tuple[int, float]:
        with tempfile.TemporaryDirectory(prefix="bench-sched-") as tmp:
            c = Crawler([], Path(tmp), CrawlConfig(delay=0.0, allow_private_networks=True, **cfg))
            with c.frontier:
                for i in range(n):
                    for j in range(per_host):
                        c._discover(url(i, j), min(j, 1), "link" if j else "seed")
            t0, picks = time.thread_time(), 0
            while True:
                key, host, _tier, _wait = c.sched.pick()
                if not key:
                    break
                c.sched.start(key)
                c.sched.unreserve(c.sched.pop(host))
                c.sched.finish(key)
                picks += 1
            dt = time.thread_time() - t0
            c.frontier.close()
        return picks, 1e6 * dt / picks

    print(f"{'hosts':>7} {'items':>8} {'us/pick':>8} {'one key':>8}")
    for n in counts:
        picks, us = run(n, lambda i, j: f"http://{many_host_ip(i)}:80/p{j}")
        _, shared = run(n, lambda i, j: f"http://h{i}.shared.example/p{j}", politeness_key="domain")
        print(f"{n:7d} {picks:8d} {us:8.1f} {shared:8.1f}", flush=True)


def news_main(n_articles: int, max_pages: int | None) -> None:
    """Crawl each news-like host once; print coverage, trap share and where requests went."""
    import sys

    sys.path.insert(0, str(ROOT))
    from tests.crawl.facetnews import FacetNewsServer
    from tests.crawl.realnews import OtherNewsServer, RealNewsServer, crawl_news
    from tests.crawl.wpnews import WordPressNewsServer

    extra = {"max_pages": max_pages} if max_pages else {}
    servers = (RealNewsServer, OtherNewsServer, WordPressNewsServer, FacetNewsServer)
    with tempfile.TemporaryDirectory(prefix="bench-news-") as tmp:
        for i, server in enumerate(servers):
            out = Path(tmp) / server.__name__
            # the WordPress-like host announces a sitemap index in robots.txt: read it, as a
            # crawl with the defaults does
            sitemaps = {"use_sitemaps": True} if server is WordPressNewsServer else {}
            r = crawl_news(
                out, n_articles, ip=f"127.0.0.{62 + i}", server=server, **sitemaps, **extra
            )
            print(
                f"{server.__name__:16s} articles {r['articles']}  max_pages {r['max_pages']}  "
                f"coverage {r['coverage']:.3f}  trap share {r['trap_share']:.4f}  "
                f"404 share {r['dead_share']:.3f}  {r['seconds']} s"
            )
            print(f"  requests by family: {r['families']}; articles by kind: {r['by_kind']}")


def main() -> None:
    """Run both crawlers on the same hosts (alternating, --repeat times) and print the comparison."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="1 copy (18 hosts), 150 pages")
    ap.add_argument("--delay", type=float, default=None, help="default 0.1 (0.01 --many-hosts)")
    ap.add_argument(
        "--copies", type=int, default=3, help="sample web copies (18 hosts each, max 6)"
    )
    ap.add_argument("--max-pages", type=int, default=None, help="default 600 (8000 --many-hosts)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per crawler (median reported)")
    ap.add_argument(
        "--many-hosts",
        default="",
        help="comma-separated host counts (e.g. 50,1000,10000,50000): the scheduler-scaling case",
    )
    ap.add_argument("--concurrency", type=int, default=32, help="--many-hosts global concurrency")
    ap.add_argument(
        "--scheduler-only",
        default="",
        help="comma-separated host counts: time the scheduler's pick alone (no network)",
    )
    ap.add_argument(
        "--news",
        type=int,
        default=0,
        help="articles per news-like host: coverage and trap share within max_pages (1.5x)",
    )
    a = ap.parse_args()
    if a.news:
        news_main(a.news, a.max_pages)
        return
    if a.scheduler_only:
        scheduler_only([int(x) for x in a.scheduler_only.split(",") if x.strip()])
        return
    if a.many_hosts:
        counts = [int(x) for x in a.many_hosts.split(",") if x.strip()]
        many_hosts_main(
            counts, a.max_pages or 8000, a.concurrency, 0.01 if a.delay is None else a.delay
        )
        return
    a.max_pages = a.max_pages or 600
    a.delay = 0.1 if a.delay is None else a.delay
    copies, max_pages = (1, 150) if a.quick else (min(a.copies, len(FIRST_OCTETS)), a.max_pages)
    a.repeat = 1 if a.quick else a.repeat
    octets = list(FIRST_OCTETS[:copies])
    py = ensure_scrapy()
    runs: dict[str, list[dict]] = {"refinery": [], "scrapy": []}
    with tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp:
        work = Path(tmp)
        for rep in range(a.repeat):
            # Alternate the order so neither crawler always gets the quieter moment of a noisy machine.
            for name in ("refinery", "scrapy") if rep % 2 == 0 else ("scrapy", "refinery"):
                proc, info, log = start_server(octets, work)
                try:
                    if name == "refinery":
                        wall = run_refinery(info, work, max_pages, a.delay)
                    else:
                        wall = run_scrapy(py, info, work, max_pages, a.delay)
                finally:
                    records = stop_server(proc, log)
                runs[name].append({**analyse(records, info, a.delay), "wall_s": wall})
    # Report the median run by throughput; violations are summed over all runs.
    rows = {}
    for name, rs in runs.items():
        med = sorted(rs, key=lambda r: r["pages_per_s"])[len(rs) // 2]
        rows[name] = {
            **med,
            "robots_violations": sum(r["robots_violations"] for r in rs),
            "delay_violations": sum(r["delay_violations"] for r in rs),
            "overlaps": sum(r["overlaps"] for r in rs),
            "all_pages_per_s": [round(r["pages_per_s"], 1) for r in rs],
        }
    hosts = rows["refinery"]["hosts"]
    bound = hosts / a.delay
    print(
        f"\ncrawl benchmark: {hosts} hosts, delay {a.delay}s (politeness bound {bound:.0f} pages/s), max {max_pages} pages; machine load: {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'crawler':10} {'pages':>6} {'reqs':>6} {'span s':>7} {'pages/s':>8} {'% bound':>8} {'robots viol':>11} {'delay viol':>10} {'overlaps':>8} {'wall s':>7}"
    )
    for name, r in rows.items():
        print(
            f"{name:10} {r['content_requests']:6d} {r['requests']:6d} {r['span_s']:7.2f} {r['pages_per_s']:8.1f} {100 * r['pages_per_s'] / bound:7.1f}% "
            f"{r['robots_violations']:11d} {r['delay_violations']:10d} {r['overlaps']:8d} {r['wall_s']:7.1f}"
        )
    ratio = (
        rows["refinery"]["pages_per_s"] / rows["scrapy"]["pages_per_s"]
        if rows["scrapy"]["pages_per_s"]
        else float("inf")
    )
    print(
        f"ratio refinery/scrapy pages/s (median runs): {ratio:.2f}x; all runs pages/s: "
        + ", ".join(f"{n} {r['all_pages_per_s']}" for n, r in rows.items())
    )
    print(
        "violations are summed over all runs, from the server-side log (delay: max(delay, Crawl-delay)"
        " between request starts to one host)"
    )
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "crawl.json").write_text(
        json.dumps(
            {
                "delay": a.delay,
                "max_pages": max_pages,
                "bound": bound,
                "rows": rows,
                "ratio": ratio,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
