"""Politeness rules as pure logic: Retry-After parsing, Crawl-delay caps, backoff and the breaker."""

from __future__ import annotations

import email.utils
import time

from crawlers.crawl.politeness import Politeness, parse_retry_after


def test_retry_after_seconds_and_http_date():
    assert parse_retry_after("120") == 120.0
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= parse_retry_after(date, now=now) <= 31
    assert parse_retry_after(email.utils.formatdate(now - 60, usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_crawl_delay_is_honoured_up_to_the_cap_and_never_below_the_minimum():
    p = Politeness(delay=0.5, max_crawl_delay=10)
    p.set_crawl_delay("a", 3)
    p.set_crawl_delay("b", 60)
    p.set_crawl_delay("c", 0.1)
    assert (p.state("a").delay, p.state("b").delay, p.state("c").delay) == (3, 10, 0.5)


def test_retry_after_sets_the_next_allowed_time():
    p = Politeness(delay=0.0)
    p.record("h", 429, "7")
    assert 6.5 < p.ready_in("h") <= 7.0


def test_backoff_is_exponential_and_deterministic_for_a_seed():
    def waits(seed):
        p = Politeness(delay=0, backoff_base=1, backoff_max=100, breaker_threshold=100, seed=seed)
        return [p.record("h", 500) for _ in range(5)]

    first = waits(1)
    assert first == waits(1) and first != waits(2)
    for i, w in enumerate(first):
        assert 2**i / 2 <= w <= 2**i  # full jitter within [cap/2, cap]


def test_success_resets_errors_and_the_breaker_gives_up_after_repeated_trips():
    p = Politeness(
        delay=0, backoff_base=0, breaker_threshold=2, breaker_cooldown=0, breaker_max_trips=2
    )
    p.record("h", 500)
    p.record("h", 200)
    assert p.state("h").consecutive_errors == 0
    for _ in range(4):
        p.record("h", None)  # network errors count like 5xx
    assert p.gave_up("h") and p.ready_in("h") == float("inf")
    assert not p.gave_up("other")
