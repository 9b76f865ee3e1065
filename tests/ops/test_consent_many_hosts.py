"""The consent recheck over hundreds of hosts at once (issue 17, "Opt-out sensor", at scale).

One loopback server answers for ~300 host names (a test resolver maps each name to one of a few
127.61.x.y addresses, so most servers carry many virtual hosts, as shared hosting does) and
varies robots.txt per Host header: new training opt-outs (whole site, one directory, `*`),
a crawl-token-only Disallow (not a training opt-out: the training token decides), unchanged
files, 404 (allow all), 500/503/429 and timeouts (no evidence: state kept), slow hosts,
same-host and cross-host redirects of robots.txt, a redirect loop, IDN (punycode) names, and one
whole server down (its circuit breaker gives up: those hosts are never hammered).

Checked: the ledger holds exactly one row per document whose decision changed, with its
evidence; every host is either decided or reported unreachable; a recheck with nothing changed
appends nothing; later 404s re-allow, later outages keep the opt-out; each robots.txt is asked
for once per recheck, one request at a time per server, `delay` apart; with the SSRF guard on,
no request leaves and nothing is appended.

Run by hand to time the recheck at N and 10N hosts (not part of the suite):
    .venv/bin/python -m tests.ops.test_consent_many_hosts --repeat 1,10
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver

from common.consent import latest_rows, ledger_files, opted_out
from crawlers.consent import recheck
from tests.crawl.loopback import LoopbackServer

pytestmark = pytest.mark.timeout(120)

TRAINING = "RefineryBot-Extended"
DELAY = 0.004  # politeness delay between two requests to one server (seconds)
CONFIG = {
    "allow_private_networks": True,
    "delay": DELAY,
    "robots_retries": 0,
    # Timeouts far above what a served answer takes (slow hosts: 0.1 s) even on a loaded CI
    # machine, where 0.8 s once timed out slow hosts; only the tarpit host exceeds them.
    "connect_timeout": 3.0,
    "read_timeout": 3.0,
    "total_timeout": 3.0,
    "backoff_base": 0.005,
    "backoff_max": 0.02,
    "breaker_cooldown": 0.05,
}
SHARED = [f"127.61.0.{k}" for k in range(1, 17)]  # 16 servers with many virtual hosts each
DOWN, TARPIT, CDN_IP = "127.61.1.1", "127.61.1.2", "127.61.1.3"
CDN = "cdn.test"
DOWN_HOSTS = 20  # all answer 500: the breaker opens 3 times x 5 errors, then gives up
TIMEOUT_HOSTS = 1

ALLOW = b"User-agent: *\nDisallow: /private/\n"
OPT_OUT = b"User-agent: *\nAllow: /\n\nUser-agent: RefineryBot-Extended\nDisallow: /\n"
PART = b"User-agent: RefineryBot-Extended\nDisallow: /a/\n"
CRAWL_ONLY = b"User-agent: RefineryBot\nDisallow: /\n"
STAR = b"User-agent: *\nDisallow: /\n"
# Kinds per shared server, in this order; "fail" cycles over 500, 503 and 429 by server.
PATTERN = tuple(
    "same out part crawl star none slow redir xredir loop idn was_out same out fail same idn out".split()
)
FAIL = ("e500", "e503", "e429")
OUT_KINDS = {"out", "slow", "redir", "xredir", "idn"}  # whole-site training opt-out, 200
UNREACHABLE = {"e500", "e503", "e429", "loop", "timeout", "down"}
DOC_PATHS = ("/", "/a/page.html")


@dataclass(frozen=True)
class Host:
    name: str  # ASCII (punycode for IDN names), as the crawler's canonical URLs hold it
    ip: str
    kind: str
    idx: int


def layout(repeat: int = 1, grouped: bool = False) -> list[Host]:
    """Hosts: `repeat` x PATTERN on each shared server, one server down, one tarpit.

    Names sort interleaved across servers by default; `grouped` makes each server's names sort
    together (as a provider's subdomains do: a.blogspot.com, b.blogspot.com, ...)."""
    hosts: list[Host] = []
    for _ in range(repeat):
        for kind in PATTERN:
            for s, ip in enumerate(SHARED):
                idx = len(hosts)
                k = FAIL[s % len(FAIL)] if kind == "fail" else kind
                first = f"s{s:02d}-" if grouped else ""
                name = f"{first}h{idx:05d}-{k}.test"
                if k == "idn":  # "bücher-<idx>.test" as the crawler canonicalises it
                    name = f"{first}bücher-{idx:05d}.test".encode("idna").decode("ascii")
                hosts.append(Host(name, ip, k, idx))
    for _ in range(DOWN_HOSTS * repeat):
        hosts.append(Host(f"h{len(hosts):05d}-down.test", DOWN, "down", len(hosts)))
    for _ in range(TIMEOUT_HOSTS):
        hosts.append(Host(f"h{len(hosts):05d}-timeout.test", TARPIT, "timeout", len(hosts)))
    return hosts


class RobotsWeb(LoopbackServer):
    """Answers GET by (Host name, path) from `routes`; 404 otherwise. Logs every request."""

    label = "many-hosts robots server"

    def __init__(self, ips: list[str]):
        super().__init__(ips)
        self.routes: dict[tuple[str, str], tuple[int, bytes, dict[str, str], float]] = {}
        self.log: list[tuple[str, str, str, float]] = []  # (host name, path, server ip, t)
        self.in_flight: Counter[str] = Counter()
        self.max_in_flight: Counter[str] = Counter()

    def set(self, name: str, path: str, status: int, body: bytes = b"", **kw) -> None:
        """Serve (status, body) at name+path; kw: headers=dict, sleep=seconds before answering."""
        self.routes[(name, path)] = (status, body, kw.get("headers", {}), kw.get("sleep", 0.0))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        name = request.host.rsplit(":", 1)[0].lower()
        ip = request.transport.get_extra_info("sockname")[0]
        self.log.append((name, request.path_qs, ip, time.monotonic()))
        status, body, headers, sleep = self.routes.get(
            (name, request.path_qs), (404, b"no such file\n", {}, 0.0)
        )
        tarpit = sleep >= CONFIG["total_timeout"]  # the client gives up on these and moves on
        if not tarpit:
            self.in_flight[ip] += 1
            self.max_in_flight[ip] = max(self.max_in_flight[ip], self.in_flight[ip])
        try:
            if sleep:
                await asyncio.sleep(sleep)
            if headers.get("ETag") and request.headers.get("If-None-Match") == headers["ETag"]:
                return web.Response(status=304, headers={"ETag": headers["ETag"]})
            return web.Response(
                status=status, body=body, headers={"Content-Type": "text/plain", **headers}
            )
        finally:
            if not tarpit:
                self.in_flight[ip] -= 1


class MapResolver(AbstractResolver):
    """Resolves the test's names (and their IDNA forms) to their loopback address only."""

    def __init__(self, table: dict[str, str]):
        self.table = table

    async def resolve(self, host: str, port: int = 0, family=socket.AF_INET) -> list[dict]:
        ip = self.table.get(host.encode("idna").decode("ascii").lower())
        if ip is None:
            raise OSError(f"{host}: not a test host (the test never resolves real names)")
        return [
            {
                "hostname": host,
                "host": ip,
                "port": port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        pass


def install_dns(monkeypatch, table: dict[str, str]) -> None:
    """Point the crawler's resolvers (connections and politeness keys) at `table`."""
    import crawlers.crawl.politeness as politeness
    import crawlers.crawl.ssrf as ssrf

    async def resolve_ip(name: str) -> str | None:
        return table.get(name.encode("idna").decode("ascii").lower())

    monkeypatch.setattr(ssrf, "DefaultResolver", lambda: MapResolver(table))
    monkeypatch.setattr(politeness, "resolve_ip", resolve_ip)


def serve_phase1(web_: RobotsWeb, hosts: list[Host], port: int) -> None:
    """robots.txt per host kind as it is at the first recheck."""
    for h in hosts:
        k = h.kind
        if k in ("same", "was_out"):
            web_.set(h.name, "/robots.txt", 200, ALLOW)
        elif k == "out":
            web_.set(h.name, "/robots.txt", 200, OPT_OUT)
        elif k == "part":
            web_.set(h.name, "/robots.txt", 200, PART)
        elif k == "crawl":
            web_.set(h.name, "/robots.txt", 200, CRAWL_ONLY)
        elif k == "star":
            web_.set(h.name, "/robots.txt", 200, STAR)
        elif k == "slow":
            web_.set(h.name, "/robots.txt", 200, OPT_OUT, sleep=0.1)
        elif k == "redir":
            web_.set(h.name, "/robots.txt", 301, headers={"Location": "/policies/robots.txt"})
            web_.set(h.name, "/policies/robots.txt", 200, OPT_OUT)
        elif k == "xredir":
            target = f"http://{CDN}:{port}/r/{h.name}.txt"
            web_.set(h.name, "/robots.txt", 302, headers={"Location": target})
            web_.set(CDN, f"/r/{h.name}.txt", 200, OPT_OUT)
        elif k == "loop":
            web_.set(h.name, "/robots.txt", 302, headers={"Location": "/r1"})
            web_.set(h.name, "/r1", 302, headers={"Location": "/robots.txt"})
        elif k == "idn":
            web_.set(h.name, "/robots.txt", 200, OPT_OUT)
        elif k in ("e500", "down"):
            web_.set(h.name, "/robots.txt", 500, b"oops")
        elif k == "e503":
            web_.set(h.name, "/robots.txt", 503, b"busy")
        elif k == "e429":
            web_.set(h.name, "/robots.txt", 429, b"slow down")
        elif k == "timeout":
            web_.set(h.name, "/robots.txt", 200, ALLOW, sleep=CONFIG["total_timeout"] + 0.3)
        # "none": nothing served, 404


def write_lake(lake: Path, hosts: list[Host], port: int) -> None:
    """extract/documents.parquet: two documents per host, as the crawl left them."""
    rows = []
    for h in hosts:
        allowed = h.kind != "was_out"  # the crawl saw a training Disallow for these
        for p in DOC_PATHS:
            url = f"http://{h.name}:{port}{p}"
            rows.append(
                {
                    "id": f"{h.name}{p}",
                    "url": url,
                    "robots_training": "allowed" if allowed else "disallowed",
                    "training_allowed": allowed,
                }
            )
    (lake / "extract").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), lake / "extract" / "documents.parquet")


def _origin(h: Host, port: int) -> str:
    return f"http://{h.name}:{port}"


@pytest.fixture
def many_hosts(tmp_path, monkeypatch):
    hosts = layout(1, grouped=True)
    table = {h.name: h.ip for h in hosts} | {CDN: CDN_IP}
    install_dns(monkeypatch, table)
    with RobotsWeb([*SHARED, DOWN, TARPIT, CDN_IP]) as web_:
        lake = tmp_path / "lake"
        write_lake(lake, hosts, web_.port)
        serve_phase1(web_, hosts, web_.port)
        yield web_, hosts, lake


def _check_politeness(web_: RobotsWeb, since: int) -> None:
    """One request at a time per server, starts at least `delay` apart."""
    assert max(web_.max_in_flight.values()) == 1, web_.max_in_flight
    by_ip: dict[str, list[float]] = defaultdict(list)
    for _, _, ip, t in web_.log[since:]:
        by_ip[ip].append(t)
    for ip, times in by_ip.items():
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        assert not gaps or min(gaps) >= DELAY * 0.99, (ip, min(gaps))


def test_recheck_over_many_hosts_records_exactly_the_changed_documents(many_hosts):
    web_, hosts, lake = many_hosts
    port = web_.port
    by_kind = Counter(h.kind for h in hosts)
    assert len(hosts) >= 300 and by_kind["idn"] == 2 * len(SHARED)

    t0 = time.monotonic()
    first = recheck(lake, CONFIG)
    first_s = time.monotonic() - t0
    assert (first.hosts, first.documents) == (len(hosts), 2 * len(hosts))

    # Every host accounted: unreachable exactly for the outage kinds, decided otherwise.
    expected_unreachable = {_origin(h, port) for h in hosts if h.kind in UNREACHABLE}
    assert set(first.unreachable) == expected_unreachable
    why = {h.kind: first.unreachable.get(_origin(h, port)) for h in hosts}
    assert (why["e500"], why["e503"], why["e429"]) == ("HTTP 500", "HTTP 503", "HTTP 429")
    assert why["timeout"] == "timeout" and why["loop"].startswith("redirect-loop")
    down = [first.unreachable[_origin(h, port)] for h in hosts if h.kind == "down"]
    assert Counter(w.split(":")[0] for w in down) == {"HTTP 500": 15, "host-gave-up": 5}

    # Exactly one row per changed document, with its evidence.
    rows = pq.read_table(first.file).to_pylist()
    assert len(rows) == len({r["url"] for r in rows}) == first.changed
    got = {r["url"]: r for r in rows}
    want: dict[str, tuple[Host, bool, str | None, str | None, bytes]] = {}
    for h in hosts:
        o = _origin(h, port)
        if h.kind in OUT_KINDS:
            for p in DOC_PATHS:
                want[o + p] = (h, False, "refinerybot-extended", "Disallow: /", OPT_OUT)
        elif h.kind == "part":
            want[o + "/a/page.html"] = (h, False, "refinerybot-extended", "Disallow: /a/", PART)
        elif h.kind == "star":
            for p in DOC_PATHS:
                want[o + p] = (h, False, "*", "Disallow: /", STAR)
        elif h.kind == "was_out":  # allowed again; the crawl's own flag still keeps it out
            for p in DOC_PATHS:
                want[o + p] = (h, True, "*", None, ALLOW)
    assert set(got) == set(want)
    for url, (h, allowed, group, rule, body) in want.items():
        r = got[url]
        origin = _origin(h, port)
        assert (r["training_allowed"], r["previous"]) == (allowed, not allowed), url
        assert (r["agent"], r["agent_group"], r["rule"]) == (TRAINING, group, rule), url
        assert (r["robots_status"], r["robots_kind"]) == (200, "parsed"), url
        assert r["robots_sha256"] == hashlib.sha256(body).hexdigest(), url
        assert (r["robots_url"], r["host"]) == (origin + "/robots.txt", f"{h.name}:{port}")
        assert r["doc_ids"] == [h.name + url.removeprefix(origin)]
    assert first.opted_out == sum(not w[1] for w in want.values())
    assert first.re_allowed == sum(w[1] for w in want.values())

    # Politeness: robots.txt asked for once per host (each redirect hop once), never a page;
    # one request at a time per server, `delay` apart; the down server got 15 requests, no more.
    asked = Counter((name, path) for name, path, _, _ in web_.log)
    assert max(asked.values()) == 1
    assert all(asked[(h.name, "/robots.txt")] == 1 for h in hosts if h.kind != "down")
    assert sum(asked[(h.name, "/robots.txt")] for h in hosts if h.kind == "down") == 15
    paths = {path for name, path in asked if name != CDN}
    assert paths == {"/robots.txt", "/policies/robots.txt", "/r1"}
    _check_politeness(web_, 0)

    # Servers are worked in parallel even though each server's names sort together: every
    # server got its first request among the first few, not after the servers sorted before it
    # (a recheck takes as long as its busiest server, not the sum of them all).
    first_at: dict[str, int] = {}
    for i, (_, _, ip, _) in enumerate(web_.log):
        first_at.setdefault(ip, i)
    assert max(first_at[ip] for ip in SHARED) < 2 * len(first_at), first_at

    # Nothing changed: the second recheck appends nothing and reports the same outages.
    seen = len(web_.log)
    second = recheck(lake, CONFIG)
    assert second.file is None and second.changed == 0
    assert [f.name for f in ledger_files(lake)] == ["ledger-000001.parquet"]
    assert set(second.unreachable) == expected_unreachable
    assert len(web_.log) - seen == seen  # the same requests again, once each
    _check_politeness(web_, seen)

    # Later: half the opted-out sites delete robots.txt (404: re-allowed), the other half go
    # down (no evidence: still out); the 500 hosts come back opting out; "part" opts out fully.
    outs = [h for h in hosts if h.kind == "out"]
    gone, broken = outs[0::2], outs[1::2]
    for h in gone:
        web_.routes.pop((h.name, "/robots.txt"))
    for h in broken:
        web_.set(h.name, "/robots.txt", 503, b"busy")
    for h in hosts:
        if h.kind == "e500":
            web_.set(h.name, "/robots.txt", 200, OPT_OUT)
        elif h.kind == "part":
            web_.set(h.name, "/robots.txt", 200, OPT_OUT)
    third = recheck(lake, CONFIG)
    rows3 = pq.read_table(third.file).to_pylist()
    assert len(rows3) == len({r["url"] for r in rows3}) == third.changed
    back = {_origin(h, port) + p for h in gone for p in DOC_PATHS}
    newly = {_origin(h, port) + p for h in hosts if h.kind == "e500" for p in DOC_PATHS}
    newly |= {_origin(h, port) + "/" for h in hosts if h.kind == "part"}
    assert {r["url"] for r in rows3 if r["training_allowed"]} == back
    assert {r["url"] for r in rows3 if not r["training_allowed"]} == newly
    for r in rows3:
        if r["training_allowed"]:
            assert (r["robots_status"], r["robots_kind"]) == (404, "unavailable-4xx")
            assert (r["agent_group"], r["rule"], r["previous"]) == ("unavailable-4xx", None, False)
    assert set(third.unreachable) == (
        expected_unreachable - {_origin(h, port) for h in hosts if h.kind == "e500"}
    ) | {_origin(h, port) for h in broken}

    urls, ids = opted_out(ledger_files(lake))
    out_now = ({u for u, w in want.items() if not w[1]} - back) | newly
    assert urls == out_now
    assert ids == {u.split("//", 1)[1].replace(f":{port}", "", 1) for u in out_now}
    assert len(latest_rows(ledger_files(lake))) == len(want) + len(newly - set(want))
    print(f"\n{len(hosts)} hosts: first recheck {first_s:.2f} s")


def test_ssrf_guard_on_sends_nothing_and_appends_nothing(many_hosts):
    """Without --allow-private-networks every name resolves to loopback and is refused before a
    connection: every host unreachable (not an opt-out), the server sees no request."""
    web_, hosts, lake = many_hosts
    result = recheck(lake, {**CONFIG, "allow_private_networks": False})
    assert web_.log == []
    assert result.file is None and ledger_files(lake) == []
    assert set(result.unreachable) == {_origin(h, web_.port) for h in hosts}
    reasons = Counter(w.split(":")[0] for w in result.unreachable.values())
    assert set(reasons) <= {"ssrf-blocked", "host-gave-up"} and reasons["ssrf-blocked"] > 0


def test_one_host_in_unicode_punycode_and_upper_case_is_asked_once(tmp_path, monkeypatch):
    """Documents may name one host as 'bücher.test', 'xn--bcher-kva.test' or in capitals: one
    origin, one robots.txt request, every document decided from it."""
    puny = "bücher.test".encode("idna").decode("ascii")
    install_dns(monkeypatch, {puny: "127.61.3.1", "upper.test": "127.61.3.1"})
    with RobotsWeb(["127.61.3.1"]) as web_:
        port = web_.port
        urls = [
            f"http://bücher.test:{port}/x",
            f"http://{puny}:{port}/y",
            f"http://UPPER.test:{port}/z",
            f"http://upper.test:{port}/w",
        ]
        rows = [
            {"id": str(i), "url": u, "robots_training": "allowed", "training_allowed": True}
            for i, u in enumerate(urls)
        ]
        (tmp_path / "extract").mkdir()
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / "extract" / "documents.parquet")
        web_.set(puny, "/robots.txt", 200, OPT_OUT)
        web_.set("upper.test", "/robots.txt", 200, OPT_OUT)
        result = recheck(tmp_path, CONFIG)
    assert sorted(name for name, _, _, _ in web_.log) == sorted([puny, "upper.test"])
    assert (result.hosts, result.documents, result.opted_out) == (2, 4, 4)
    ledger = {r["url"]: r for r in pq.read_table(result.file).to_pylist()}
    assert set(ledger) == set(urls)
    assert {r["robots_url"] for r in ledger.values()} == {
        f"http://{puny}:{port}/robots.txt",
        f"http://upper.test:{port}/robots.txt",
    }


def test_recrawl_over_many_hosts_revisits_every_page_once_servers_in_parallel(
    tmp_path, monkeypatch
):
    """`recrawl` over 32 hosts on 8 servers (96 pages, each server's pages contiguous in the
    crawl's order): one conditional request per page, 304s kept, edits and outages told apart,
    one request at a time per server `delay` apart, and the servers worked in parallel."""
    from crawlers.crawl import crawl
    from crawlers.crawl.recrawl import CHANGED, ERROR, UNCHANGED, run_recrawl

    servers = [f"127.61.2.{k}" for k in range(1, 9)]
    hosts = [
        Host(f"s{k}-site{j}.test", ip, "page", 4 * k + j)
        for k, ip in enumerate(servers)
        for j in range(4)
    ]
    install_dns(monkeypatch, {h.name: h.ip for h in hosts})
    paths = ("/", "/p1.html", "/p2.html")
    html = (
        b"<!DOCTYPE html><html lang='en'><head><title>T</title></head><body><p>%s</p></body></html>"
    )
    config = {**CONFIG, "concurrency": 8, "max_retries": 0}
    with RobotsWeb(servers) as web_:
        pages = [f"http://{h.name}:{web_.port}{p}" for h in hosts for p in paths]
        for h in hosts:
            for p in paths:
                body = html % f"{h.name}{p}".encode()
                tag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
                web_.set(h.name, p, 200, body, headers={"Content-Type": "text/html", "ETag": tag})
        out = tmp_path / "crawl"
        asyncio.run(crawl(pages, out, {**config, "delay": 0.0, "use_sitemaps": False}))
        crawled = pq.read_table(out / "pages.parquet").to_pylist()
        assert sorted(p["url"] for p in crawled if p["status"] == 200) == sorted(pages)

        edited, busy = pages[4], pages[40]
        web_.set(
            hosts[1].name, "/p1.html", 200, html % b"edited", headers={"Content-Type": "text/html"}
        )
        web_.set(hosts[13].name, "/p1.html", 503, b"busy")
        web_.log.clear()
        web_.max_in_flight.clear()
        summary = run_recrawl(out, config, due_only=False)
    assert edited == f"http://{hosts[1].name}:{web_.port}/p1.html"
    assert busy == f"http://{hosts[13].name}:{web_.port}/p1.html"
    assert summary["due"] == len(pages)
    assert (summary[CHANGED], summary[ERROR]) == (1, 1)
    assert summary[UNCHANGED] == summary["not_modified"] == len(pages) - 2
    asked = Counter((name, path) for name, path, _, _ in web_.log)
    assert all(asked[(h.name, p)] == 1 for h in hosts for p in paths)
    assert all(asked[(h.name, "/robots.txt")] == 1 for h in hosts)
    assert sum(asked.values()) == len(pages) + len(hosts)
    _check_politeness(web_, 0)
    first_at: dict[str, int] = {}
    for i, (_, _, ip, _) in enumerate(web_.log):
        first_at.setdefault(ip, i)
    assert set(first_at) == set(servers)
    assert max(first_at.values()) < 2 * len(servers), first_at


def _measure(repeats: list[int], grouped: bool, delay: float, robots_kib: int) -> None:
    """Time one recheck at each size (hosts = repeat x the layout); prints a table. With
    `robots_kib`, the unchanged hosts serve robots.txt files of that size (peak RSS printed)."""
    import resource
    import tempfile

    padded = ALLOW + b"".join(b"Disallow: /p/%06d/\n" % i for i in range(robots_kib * 1024 // 22))

    config = {**CONFIG, "delay": delay}
    for repeat in repeats:
        hosts = layout(repeat, grouped)
        table = {h.name: h.ip for h in hosts} | {CDN: CDN_IP}
        mp = pytest.MonkeyPatch()
        install_dns(mp, table)
        try:
            with (
                RobotsWeb([*SHARED, DOWN, TARPIT, CDN_IP]) as web_,
                tempfile.TemporaryDirectory() as d,
            ):
                lake = Path(d) / "lake"
                write_lake(lake, hosts, web_.port)
                serve_phase1(web_, hosts, web_.port)
                for h in hosts:
                    if h.kind == "same" and robots_kib:
                        web_.set(h.name, "/robots.txt", 200, padded)
                t0 = time.monotonic()
                first = recheck(lake, config)
                t1 = time.monotonic()
                second = recheck(lake, config)
                t2 = time.monotonic()
                print(
                    f"grouped={grouped} delay={delay} hosts={len(hosts)} docs={first.documents} rows={first.changed} "
                    f"unreachable={len(first.unreachable)} requests={len(web_.log)} "
                    f"first={t1 - t0:.2f}s second={t2 - t1:.2f}s (second.changed={second.changed}) "
                    f"robots={len(padded) // 1024 if robots_kib else 0}KiB "
                    f"maxrss={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}MiB",
                    flush=True,
                )
        finally:
            mp.undo()


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", default="1,10", help="comma-separated layout repeats")
    ap.add_argument("--grouped", action="store_true", help="each server's names sort together")
    ap.add_argument("--delay", type=float, default=DELAY, help="politeness delay (s)")
    ap.add_argument("--robots-kib", type=int, default=0, help="size of unchanged robots.txt")
    args = ap.parse_args()
    _measure([int(x) for x in args.repeat.split(",")], args.grouped, args.delay, args.robots_kib)
