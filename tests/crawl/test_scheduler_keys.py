"""Hosts sharing a politeness key (subdomains behind one address): the scheduler ranks them with
heaps, in the order a scan of every host gives, without scanning them at each pick (issue #11:
a pick costs O(log hosts))."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from typing import Any

import pytest

from crawlers.crawl import scheduler as scheduler_module
from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.priority import Weights, topic_quota_penalty
from crawlers.crawl.scheduler import DISCOVERED, SEED, SITEMAP, Scheduler


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


class Keys:
    """Politeness as the scheduler sees it: a fixed key per host and a next time per key."""

    def __init__(self, key_of: dict[str, str]):
        self.key_of = key_of
        self.next_at: dict[str, float] = defaultdict(float)

    def known_key(self, host: str) -> str:
        return self.key_of[host]

    def next_time(self, key: str) -> float:
        return self.next_at[key]

    def gave_up_key(self, key: str) -> bool:
        return False


class Langs:
    """A language signal on a grid of eighths (sums and differences stay exact, so two equal
    scores are equal whichever way they were computed)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def observe(self, host: str, lang: str) -> None:
        self.counts[host] += 3 if lang == "de" else 5

    def signal(self, host: str) -> float:
        return (self.counts[host] % 9) / 8


class ScanScheduler(Scheduler):
    """The scheduler before the key heaps: every host of a key looked at on each pick. Its ties
    (a set's order before) go to the URL queued first (a sitemap: the shortest queue), then the
    host name, as the heaps break them."""

    def _host_item(self, host: str) -> tuple[int, float] | None:
        heap = self.heaps.get(host)
        if heap and heap[0][0] == 0:
            return SEED, heap[0][1]
        if self.sitemap_queue.get(host) and not (heap and self.queue_full(host)):
            return SITEMAP, float("-inf")
        if not heap:
            return None
        prio, url = -heap[0][1], heap[0][3]
        row = self.rows[url]
        score = prio + self.weights.lang * (self.langs.signal(host) - (row["lang_signal"] or 0))
        score -= topic_quota_penalty(
            row["topic"] or "other", self.topics_fetched, self.cfg.topic_max_share
        )
        return DISCOVERED, -score

    def _key_entry(self, key: str, now: float):
        hosts = self.key_hosts.get(key)
        best: Any = None
        best_host, held_until = None, float("inf")
        for host in list(hosts or ()):
            item = self._host_item(host)
            if item is None:
                hosts.discard(host)
                continue
            heap = self.heaps.get(host)
            tie = (item, len(heap or ()) if item[0] == SITEMAP else heap[0][2], host)
            hold = self.hold.get(host, 0.0)
            if hold > now:
                held_until = min(held_until, hold)
            elif best is None or tie < best:
                best, best_host = tie, host
        if not hosts:
            self.key_hosts.pop(key, None)
            return None
        at = self.politeness.next_time(key)
        if best is None:
            return max(at, held_until), None, None
        return at, best[0], best_host


def _scheduler(cls: type[Scheduler], cfg: CrawlConfig, key_of: dict[str, str]) -> Scheduler:
    sched = cls(cfg, Keys(key_of), Langs(), Weights(), Counter(), Counter())
    sched.reprice = lambda row: row["_base"] - (row["seq"] % 3) / 8
    return sched


def _drive(seed: int, cfg: CrawlConfig, clock: Clock, steps: int = 2500) -> list[tuple]:
    """The same random pushes, sitemaps, holds, clock steps, picks, pops, retries and language
    observations on both schedulers; each pick must agree. Returns the picks."""
    rng = random.Random(seed)
    hosts = [f"h{i}.site{i % 4}.example" for i in range(36)] + ["solo.example"]
    key_of = {h: h.split(".", 1)[1] for h in hosts}
    new, old = _scheduler(Scheduler, cfg, key_of), _scheduler(ScanScheduler, cfg, key_of)
    both = (new, old)
    in_flight: list[tuple[str, str, int, list]] = []
    picks: list[tuple] = []
    n = 0
    for _ in range(steps):
        op = rng.choices(
            ["push", "sitemap", "hold", "tick", "observe", "pick", "finish"],
            [30, 4, 3, 8, 3, 30, 25],
        )[0]
        host = rng.choice(hosts)
        if op == "push":
            n += 1
            tier = rng.choice([0, 1, 1, 2])
            prio = rng.randint(0, 12) / 4
            row = {
                "url": f"http://{host}/u{n}",
                "host": host,
                "tier": tier,
                "priority": prio,
                "_base": prio,
                "seq": rng.randint(1, 40),  # ties on purpose
                "lang_signal": rng.randint(0, 8) / 8,
                "topic": rng.choice(["news", "sports", "other", None]),
                "lang": rng.choice(["de", "en"]),
            }
            for s in both:
                s.push(dict(row))
        elif op == "sitemap":
            for s in both:
                s.add_sitemap(host, f"http://{host}/sitemap{n}.xml", 0)
        elif op == "hold":
            until = clock.t + rng.choice([0.5, 1.0, 3.0])
            for s in both:
                s.hold_host(host, until)
        elif op == "tick":
            clock.t += rng.choice([0.25, 0.5, 1.0])
        elif op == "observe":  # a resumed crawl counts the pages it fetched before
            lang = rng.choice(["de", "en"])
            for s in both:
                s.observe_lang(host, lang)
        elif op == "pick":
            got = [s.pick() for s in both]
            assert got[0] == got[1], (seed, len(picks), got)
            picks.append(got[0])
            key, host, tier, _ = got[0]
            if not key:
                continue
            rows = []
            for s in both:
                s.start(key)
                if tier == SITEMAP:
                    rows.append(s.next_sitemap(host))
                elif s.has_queued(host):
                    rows.append(s.pop(host))
                    s.unreserve(rows[-1])
                    s.in_flight += 1
                else:
                    rows.append(None)
            in_flight.append((key, host, tier, rows))
        elif op == "finish" and in_flight:
            key, host, tier, rows = in_flight.pop(rng.randrange(len(in_flight)))
            retry, delay = rng.random() < 0.15, rng.choice([0.0, 0.5, 1.0])
            for s, row in zip(both, rows, strict=True):
                if tier == SITEMAP and row is not None and retry:
                    s.requeue_sitemap(host, *row)
                elif tier != SITEMAP and row is not None:
                    s.in_flight -= 1
                    if retry:
                        s.push(row)
                    else:  # fetched: the engine counts the page's topic and language
                        s.fetched += 1
                        s.topics_fetched[row["topic"] or "other"] += 1
                        s.observe_lang(host, row["lang"])
                s.politeness.next_at[key] = clock.t + delay
                s.finish(key)
    assert new.queued == old.queued
    return picks


@pytest.mark.parametrize(
    "conns,max_pages,seed",
    [(1, None, 1), (1, 150, 2), (2, None, 3), (2, 120, 4), (1, 60, 5), (3, None, 6)],
)
def test_key_heaps_pick_what_a_scan_of_every_host_picks(monkeypatch, conns, max_pages, seed):
    clock = Clock()
    monkeypatch.setattr(scheduler_module, "time", clock)
    cfg = CrawlConfig(
        per_host_connections=conns,
        max_pages=max_pages,
        topic_max_share=0.3,
        sitemap_queue_factor=2.0,
    )
    picks = _drive(seed, cfg, clock)
    started = [p for p in picks if p[0]]
    # the sequence exercised what matters: hosts of one key, every tier, waits
    assert len({p[1] for p in started}) > 20
    assert {p[2] for p in started} == {SEED, SITEMAP, DISCOVERED}
    assert any(not p[0] and p[3] > 0 for p in picks)


class CountingQueues(defaultdict):
    """Host queues that count how often the scheduler looks one up."""

    looked = 0

    def get(self, host, default=None):
        self.looked += 1
        return super().get(host, default)

    def __getitem__(self, host):
        self.looked += 1
        return super().__getitem__(host)


def _looked_per_pick(n_hosts: int, picks: int) -> list[int]:
    """Host queues looked up by each pick-start-pop-finish cycle on one key of `n_hosts` hosts
    (a seed and two discovered URLs each), after the first pick ranked them all."""
    key_of = {f"h{i}.cdn.example": "cdn.example" for i in range(n_hosts)}
    sched = _scheduler(Scheduler, CrawlConfig(topic_max_share=0.3), key_of)
    sched.heaps = CountingQueues(list)
    for i, host in enumerate(key_of):
        for j in range(3):
            prio = (i * 7 + j) % 13 / 4
            row = {"url": f"http://{host}/p{j}", "host": host, "tier": min(j, 1)}
            row.update(priority=prio, _base=prio, seq=3 * i + j, lang_signal=0.5, topic="news")
            sched.push(row)
    looked = []
    for _ in range(picks):
        before = sched.heaps.looked
        key, host, tier, _ = sched.pick()
        assert key == "cdn.example" and tier in (SEED, DISCOVERED)
        sched.start(key)
        row = sched.pop(host)
        sched.unreserve(row)
        sched.fetched += 1
        sched.topics_fetched[row["topic"]] += 1
        sched.observe_lang(host, "de")
        sched.finish(key)
        looked.append(sched.heaps.looked - before)
    return looked[1:]


def test_a_pick_looks_at_a_few_hosts_not_every_host_of_the_key():
    # 3,000 hosts behind one address: the seeds, then discovered URLs (language signal and
    # topic quota at work). A scan looked at all 3,000 hosts' queues on each pick.
    looked = _looked_per_pick(3000, 3600)
    assert max(looked) <= 8, max(looked)


def test_stale_entries_do_not_pile_up_in_a_keys_heaps():
    # Better URLs keep arriving on 50 hosts of one key: each supersedes its host's entry, and
    # the superseded (worse) entries would stay deep in the heap unless compacted.
    key_of = {f"h{i}.cdn.example": "cdn.example" for i in range(50)}
    sched = _scheduler(Scheduler, CrawlConfig(), key_of)
    rng = random.Random(7)
    for n in range(6000):
        host = f"h{rng.randrange(50)}.cdn.example"
        row = {"url": f"http://{host}/u{n}", "host": host, "tier": 1, "priority": n / 4}
        row.update(_base=row["priority"], seq=n, lang_signal=0.0, topic="other")
        sched.push(row)
        if n % 3 == 0:
            key, host, _, _ = sched.pick()
            sched.start(key)
            sched.pop(host)
            sched.finish(key)
    assert sched._ranked["cdn.example"].entries <= 4 * 50 + 64
