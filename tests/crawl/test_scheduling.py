"""Scheduling rules checked against the fault server's own request log: seeds first, politeness
keyed on the server (IP address) with K connections, robots.txt outages that wait instead of
denying, breaker-abandoned hosts retried on --resume, incremental checkpoints."""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pyarrow.parquet as pq
import pytest

from crawlers.crawl import crawl
from crawlers.crawl.politeness import Politeness, registered_domain

from .conftest import FAST
from .faultserver import FaultServer, Site

pytestmark = pytest.mark.timeout(120)


def _pages(out):
    return {p["url"]: p for p in pq.read_table(out / "pages.parquet").to_pylist()}


def _max_in_flight(hits) -> int:
    events = sorted([(h.start, 1) for h in hits] + [(h.end, -1) for h in hits])
    most = cur = 0
    for _, step in events:
        cur += step
        most = max(most, cur)
    return most


# --- seeds first --------------------------------------------------------------------------
SEED_HOSTS = ["127.0.0.121", "127.0.0.122", "127.0.0.123"]


def _seed_crawl(tmp_path, max_pages):
    with FaultServer([Site(ip) for ip in SEED_HOSTS], gone_links=25) as fs:
        seeds = [fs.url(ip, f"/seedpage/{n}") for ip in SEED_HOSTS for n in range(40)]
        seeds.append(fs.url(SEED_HOSTS[0], "/private/seed"))  # robots.txt disallows this one
        cfg = {**FAST, "delay": 0.0, "max_pages": max_pages, "use_sitemaps": False}
        summary = asyncio.run(crawl(seeds, tmp_path, cfg))
        return fs, seeds, summary, _pages(tmp_path)


def test_every_allowed_seed_is_fetched_before_discovered_links_take_the_budget(tmp_path):
    # 121 seeds, each page links to 25 better-looking URLs that are all 404s.
    fs, seeds, summary, pages = _seed_crawl(tmp_path, max_pages=120)
    fetched = {u for u, p in pages.items() if p["warc_file"]}
    allowed = [s for s in seeds if "/private/" not in s]
    assert fetched == set(allowed) and summary["fetched"] == 120
    assert all(pages[s]["status"] == 200 and pages[s]["source"] == "seed" for s in allowed)
    assert all(pages[s]["priority_reasons"].startswith("seed: ") for s in allowed)
    assert not [h for h in fs.hits if h.path.startswith(("/gone/", "/private/"))]


def test_discovered_links_use_only_the_budget_left_after_the_seeds(tmp_path):
    fs, seeds, summary, pages = _seed_crawl(tmp_path, max_pages=135)
    fetched = [p for p in pages.values() if p["warc_file"]]
    assert summary["fetched"] == 135
    assert sum(p["source"] == "seed" for p in fetched) == 120
    gone = [p for p in fetched if "/gone/" in p["url"]]
    assert len(gone) == 15 and all(p["status"] == 404 and p["source"] == "link" for p in gone)
    denied = pages[fs.url(SEED_HOSTS[0], "/private/seed")]
    assert denied["robots_crawl"] == "disallowed" and not denied["warc_file"]
    for ip in SEED_HOSTS:  # per host, every seed was requested before any discovered link
        paths = [h.path for h in sorted(fs.hits_for(ip), key=lambda h: h.start)]
        last_seed = max(i for i, p in enumerate(paths) if p.startswith("/seedpage/"))
        assert not any(p.startswith("/gone/") for p in paths[:last_seed])


# --- politeness keys and connections --------------------------------------------------------
def test_origins_on_one_ip_share_one_slot(tmp_path):
    # Four origins (ports) on one address, like subdomains of one server: one connection in
    # all, and the delay between any two requests to that address.
    with FaultServer([Site("127.0.0.131")], ports=4, tree_size=6) as fs:
        seeds = [fs.url("127.0.0.131", "/doc/0", i) for i in range(4)]
        cfg = {**FAST, "delay": 0.05, "use_sitemaps": False}
        summary = asyncio.run(crawl(seeds, tmp_path, cfg))
        hits = sorted(fs.hits, key=lambda h: h.start)
    assert len({h.port for h in hits}) == 4 and summary["fetched"] == 4 * 6
    for prev, nxt in zip(hits, hits[1:], strict=False):
        assert nxt.start >= prev.end, f"overlap: {prev.port}{prev.path} / {nxt.port}{nxt.path}"
        assert nxt.start - prev.end >= 0.03, f"{nxt.port}{nxt.path} too soon after {prev.path}"


def test_per_host_connections_allows_k_requests_at_once_and_no_more(tmp_path):
    with FaultServer([Site("127.0.0.132")], tree_size=14, slow_s=0.3) as fs:
        cfg = {**FAST, "delay": 0.0, "per_host_connections": 2, "use_sitemaps": False}
        summary = asyncio.run(crawl([fs.url("127.0.0.132", "/slow/0")], tmp_path, cfg))
        slow = [h for h in fs.hits if h.path.startswith("/slow/")]
    assert summary["fetched"] == 14 and len(slow) == 14
    assert _max_in_flight(slow) == 2


def test_politeness_keys_by_resolved_address_or_registered_domain():
    addresses = {
        "a.example.com": "10.0.0.1",
        "b.example.org": "10.0.0.1",
        "c.example.net": "10.0.0.2",
    }

    async def fake_resolver(name):
        return addresses.get(name)

    async def main():
        p = Politeness(delay=0.0, resolver=fake_resolver)
        keys = [await p.resolve(h) for h in ("a.example.com:80", "b.example.org", "c.example.net")]
        assert keys == ["10.0.0.1", "10.0.0.1", "10.0.0.2"]
        assert await p.resolve("nowhere.invalid") == "name:nowhere.invalid"  # lookup failed
        assert await p.resolve("127.0.0.5:8080") == "127.0.0.5"  # literal: no lookup
        # a.example.com and b.example.org share one slot: b waits while a holds it.
        got_b = asyncio.Event()

        async def take_b():
            async with p.slot("b.example.org"):
                got_b.set()

        async with p.slot("a.example.com:80"):
            task = asyncio.create_task(take_b())
            for _ in range(20):
                await asyncio.sleep(0)
            assert not got_b.is_set()
            async with p.slot("c.example.net"):  # another server is not held up
                pass
        await asyncio.wait_for(task, 5)
        assert got_b.is_set()

    asyncio.run(main())
    d = Politeness(key_by="domain")
    assert d.key_of("www.example.co.uk") == d.key_of("blog.example.co.uk:8080") == "example.co.uk"
    assert d.key_of("a.github.io") != d.key_of("b.github.io")  # public suffix: separate sites
    h = Politeness(key_by="host")
    assert h.key_of("a.example.com:80") != h.key_of("a.example.com:81")
    assert registered_domain("10.1.2.3") == "10.1.2.3"
    with pytest.raises(ValueError, match="key_by"):
        Politeness(key_by="url")


def test_retry_after_beyond_the_cap_pauses_the_host_without_tripping_the_breaker():
    p = Politeness(delay=0.0, max_retry_after=300, breaker_threshold=2, breaker_max_trips=1)
    for _ in range(5):
        assert p.record("h", 429, "3600") == 300
    assert not p.gave_up("h") and 299 < p.ready_in("h") <= 300
    for _ in range(2):
        p.record("h", 503)  # without Retry-After: an error like any 5xx
    assert p.gave_up("h")


# --- robots.txt outages ---------------------------------------------------------------------
def test_robots_503_then_200_gets_the_pages_fetched_not_denied(tmp_path):
    site = Site("127.0.0.141", robots="503-then-ok", robots_failures=2)
    with FaultServer([site], tree_size=4) as fs:
        cfg = {**FAST, "robots_retries": 3, "robots_retry_base_s": 0.1}
        summary = asyncio.run(crawl([fs.url(site.ip, "/doc/0")], tmp_path, cfg))
        robots_hits = fs.hits_for(site.ip, "/robots.txt")
    pages = _pages(tmp_path)
    assert len(robots_hits) == 3 and summary["denied"] == 0 and summary["robots_waits"] >= 2
    tree = [fs.url(site.ip, f"/doc/{n}") for n in range(4)]
    assert all(pages[u]["status"] == 200 and pages[u]["robots_crawl"] == "allowed" for u in tree)


def test_robots_outage_denies_after_giving_up_and_resume_asks_again(tmp_path):
    site = Site("127.0.0.142", robots="503")
    with FaultServer([site], tree_size=3) as fs:
        cfg = {**FAST, "robots_retries": 2, "robots_retry_base_s": 0.05}
        seed = fs.url(site.ip, "/doc/0")
        first = asyncio.run(crawl([seed], tmp_path, cfg))
        assert len(fs.hits_for(site.ip, "/robots.txt")) == 3  # the first try + 2 re-fetches
        row = _pages(tmp_path)[seed]
        assert first["denied"] == 1 and row["robots_crawl"] == "unreachable"
        site.robots = "ok"  # the outage ends; a resumed crawl must not keep the old verdict
        second = asyncio.run(crawl([seed], tmp_path, cfg, resume=True))
    pages = _pages(tmp_path)
    assert second["requeued"] == 1
    assert all(pages[fs.url(site.ip, f"/doc/{n}")]["status"] == 200 for n in range(3))
    assert pages[seed]["robots_crawl"] == "allowed" and len(pages) == 4  # + /from-sitemap


def test_hosts_cut_off_by_the_breaker_are_retried_on_resume(tmp_path):
    site = Site("127.0.0.151", down=True)
    with FaultServer([site]) as fs:
        # A cool-down longer than the run: nothing else keeps the crawl alive until a probe.
        cfg = {
            **FAST,
            "max_retries": 0,
            "breaker_threshold": 2,
            "breaker_max_trips": 1,
            "breaker_cooldown": 60.0,
            "use_sitemaps": False,
        }
        seeds = [fs.url(site.ip, f"/page{n}") for n in range(6)]
        asyncio.run(crawl(seeds, tmp_path, cfg))
        skipped = pq.read_table(tmp_path / "skipped.parquet").to_pylist()
        assert len(skipped) == 4 and all(
            s["skip_reason"].startswith("host-gave-up") for s in skipped
        )
        site.down = False
        asyncio.run(crawl(seeds, tmp_path, cfg, resume=True))
    pages = _pages(tmp_path)
    assert sorted(p["status"] for p in pages.values()) == [200] * 4 + [500] * 2
    assert pq.read_table(tmp_path / "skipped.parquet").num_rows == 0


def test_a_server_cut_off_by_the_breaker_is_probed_again_after_its_cool_down(tmp_path):
    # 127.0.0.152 fails its first two requests: the breaker abandons it, and while the slow
    # chain on .153 keeps the crawl running its cool-down ends, a probe succeeds, it is crawled.
    flaky, busy = Site("127.0.0.152", down_for=2), Site("127.0.0.153")
    with FaultServer([flaky, busy], tree_size=8, slow_s=0.3) as fs:
        cfg = {
            **FAST,
            "delay": 0.0,
            "max_retries": 0,
            "breaker_threshold": 2,
            "breaker_max_trips": 1,
            "breaker_cooldown": 0.3,
            "use_sitemaps": False,
        }
        seeds = [fs.url(flaky.ip, f"/page{n}") for n in range(5)] + [fs.url(busy.ip, "/slow/0")]
        summary = asyncio.run(crawl(seeds, tmp_path, cfg))
    pages = _pages(tmp_path)
    statuses = sorted(pages[s]["status"] for s in seeds[:5])
    assert statuses == [200, 200, 200, 500, 500] and summary["breaker_probes"] >= 1
    assert pq.read_table(tmp_path / "skipped.parquet").num_rows == 0


def test_frontier_transactions_nest():
    import tempfile
    from pathlib import Path

    from crawlers.crawl.frontier import Frontier

    with tempfile.TemporaryDirectory() as tmp:
        f = Frontier(Path(tmp) / "f.sqlite")
        with f:
            f.set_meta("a", 1)
            with f:  # joins the open transaction (no 'transaction within a transaction')
                f.set_meta("b", 2)
        with pytest.raises(RuntimeError), f:
            f.set_meta("c", 3)
            raise RuntimeError("rolled back")
        assert (f.get_meta("a"), f.get_meta("b"), f.get_meta("c")) == (1, 2, None)
        f.close()


# --- checkpoints ----------------------------------------------------------------------------
def test_checkpoints_append_parts_and_the_end_compacts_them(tmp_path):
    seen_parts: list[int] = []

    def progress(ev):
        parts = sorted((tmp_path / "checkpoints").glob("pages-*.parquet"))
        rows = [r["url"] for p in parts for r in pq.read_table(p).to_pylist()]
        assert len(rows) == len(set(rows))  # each part holds only what is new
        seen_parts.append(len(parts))

    with FaultServer([Site("127.0.0.161")], tree_size=20) as fs:
        cfg = {**FAST, "delay": 0.0, "checkpoint_every": 4, "use_sitemaps": False}
        asyncio.run(crawl([fs.url("127.0.0.161", "/doc/0")], tmp_path, cfg, progress=progress))
    assert max(seen_parts) >= 4  # 20 pages, a part every 4
    assert not (tmp_path / "checkpoints").exists()
    assert len(_pages(tmp_path)) == 20


def test_many_hosts_are_scheduled_without_losing_any(tmp_path):
    # 300 hosts on loopback addresses served by one server bound to each of them would be slow
    # to set up; 40 addresses x 4 ports = 160 origins on 40 servers' keys is enough to exercise
    # the heaps (many keys, several origins per key) and check nothing is dropped or repeated.
    ips = [f"127.0.1.{n}" for n in range(1, 41)]
    with FaultServer([Site(ip) for ip in ips], ports=4, tree_size=3) as fs:
        seeds = [fs.url(ip, "/doc/0", i) for ip in ips for i in range(4)]
        # Nothing here is a fault: timeouts a loaded CI machine cannot miss (the whole-graph tests
        # share its two cores), so a page lost is a scheduling bug, never a slow answer.
        cfg = {**FAST, "delay": 0.0, "concurrency": 16, "use_sitemaps": False}
        cfg |= {"total_timeout": 60.0, "read_timeout": 30.0, "connect_timeout": 30.0}
        summary = asyncio.run(crawl(seeds, tmp_path, cfg))
        per_key = defaultdict(list)
        for h in fs.hits:
            per_key[h.host].append(h)
    assert summary["fetched"] == 160 * 3 and summary["queued_left"] == 0, summary
    assert all(_max_in_flight(hits) == 1 for hits in per_key.values())
    assert len(_pages(tmp_path)) == 160 * 3
