"""Recrawl with conditional requests and a revisit policy by change rate (issue 17, "Recrawl").

A real loopback sample web: a crawl, then one page is edited; the recrawl sends the stored
ETag / Last-Modified, gets 304 for every unchanged page (kept as "unchanged" with the previous
content) and refetches the edited one; revisit intervals double and halve as stated. The
Dagster side: one schedule per raw_pages shard, and the job reports the shard materialized.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest

from crawlers.crawl.recrawl import (
    CHANGED,
    DENIED,
    ERROR,
    RECRAWL_FILE,
    UNCHANGED,
    RevisitPolicy,
    run_recrawl,
)

pytestmark = pytest.mark.timeout(180)

DAY = 86400.0
SITE = "wiki-en"
LOOPBACK = {"allow_private_networks": True, "delay": 0.0, "robots_retries": 0}
EDITED = (
    b"<!DOCTYPE html><html lang='en'><head><title>Edited</title></head><body><main>"
    b"<h1>Edited</h1><p>The publisher rewrote this page after our crawl.</p></main></body></html>"
)


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _warc_requests(out, prefix: str) -> list[dict[str, str]]:
    """Request headers of every request record in the crawl's WARC files starting with prefix."""
    from warcio.archiveiterator import ArchiveIterator

    found = []
    for path in sorted((out / "warc").glob(f"{prefix}*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "request" and not rec.rec_headers.get_header(
                    "WARC-Target-URI"
                ).endswith("/robots.txt"):
                    found.append(dict(rec.http_headers.headers))
    return found


def test_recrawl_gets_304s_refetches_the_edited_page_and_moves_intervals(tmp_path):
    from dagster import build_schedule_context

    from crawlers.crawl import crawl
    from pipelines.graph import build_definitions
    from pipelines.sensors import recrawl_schedules
    from sampleweb import build_web, serve

    lake = tmp_path / "lake"
    out = lake / "crawl" / "shard=0"  # where the raw_pages partition 0 lives
    # Its own web, not the shared sample lake: the test edits a page on the served host.
    with serve(build_web(0), first_octet=200) as web:
        asyncio.run(crawl([web.base_url(SITE) + "/"], out, {**LOOPBACK, "max_pages": 10}))
        before = {p["url"]: p for p in pq.read_table(out / "pages.parquet").to_pylist()}
        fetched = [u for u, p in before.items() if p["status"] == 200 and p["warc_file"]]
        assert len(fetched) >= 5
        edited = next(u for u in fetched if urlsplit(u).path not in ("", "/"))
        web.set_response(SITE, urlsplit(edited).path, EDITED)

        # Not due yet (first revisit 1 day after the crawl): nothing is fetched.
        assert run_recrawl(out, LOOPBACK)["due"] == 0

        t0 = time.time() + 2 * DAY
        first = run_recrawl(out, LOOPBACK, now=t0)
        assert first["due"] == len(fetched)
        assert (first[CHANGED], first[UNCHANGED], first[ERROR]) == (1, len(fetched) - 1, 0)
        assert first["not_modified"] == len(fetched) - 1  # the server said 304 for each

        # Every revisit carried the validators of the copy we hold.
        sent = _warc_requests(out, "recrawl")
        assert len(sent) == len(fetched)
        assert all("If-None-Match" in h and "If-Modified-Since" in h for h in sent)

        after = {p["url"]: p for p in pq.read_table(out / "pages.parquet").to_pylist()}
        assert set(after) == set(before)
        keep = ("warc_file", "warc_offset", "content_sha256", "fetched_at", "title")
        for url in fetched:
            if url != edited:  # unchanged: the previous content and record are kept
                assert {k: after[url][k] for k in keep} == {k: before[url][k] for k in keep}
        page = after[edited]
        assert page["content_sha256"] == hashlib.sha256(EDITED).hexdigest()
        assert page["title"] == "Edited" and page["warc_file"].startswith("warc/recrawl-")

        state = {r["url"]: r for r in pq.read_table(out / RECRAWL_FILE).to_pylist()}
        assert set(state) == set(fetched)
        for url in fetched:
            r = state[url]
            if url == edited:  # changed: interval halves (1 day -> 12 h), new validators
                assert (r["outcome"], r["http_status"], r["changes"]) == (CHANGED, 200, 1)
                assert r["interval_s"] == DAY / 2
                assert r["etag"] == f'W/"{hashlib.sha256(EDITED).hexdigest()[:32]}"'
            else:  # unchanged: interval doubles (1 day -> 2 days)
                assert (r["outcome"], r["http_status"], r["changes"]) == (UNCHANGED, 304, 0)
                assert r["interval_s"] == 2 * DAY and r["etag"].startswith('W/"')
            assert r["checks"] == 1

        # A day later only the edited page is due (12 h); it is unchanged now: 12 h -> 1 day.
        second = run_recrawl(out, LOOPBACK, now=t0 + DAY)
        assert (second["due"], second["not_modified"], second[UNCHANGED]) == (1, 1, 1)
        state = {r["url"]: r for r in pq.read_table(out / RECRAWL_FILE).to_pylist()}
        assert (state[edited]["interval_s"], state[edited]["checks"]) == (DAY, 2)

        # The Dagster job for partition 0 revisits the shard (all pages, due or not) and
        # reports raw_pages partition 0 materialized.
        job = build_definitions("local", root=lake).get_job_def("recrawl_job")
        result = job.execute_in_process(
            partition_key="0",
            run_config={
                "ops": {
                    "recrawl_shard": {
                        "config": {"allow_private_networks": True, "delay": 0.0, "due_only": False}
                    }
                }
            },
        )
        assert result.success
        mats = [
            e.event_specific_data.materialization for e in result.get_asset_materialization_events()
        ]
        assert [(m.asset_key.to_user_string(), m.partition) for m in mats] == [("raw_pages", "0")]
        figures = {k: v.value for k, v in mats[0].metadata.items()}
        assert figures["due"] == figures["not_modified"] == len(fetched)

        # An outage is not a change (kept, asked again after min_s); a page robots.txt now
        # refuses is not fetched, its copy is kept and it loses training consent.
        busy, refused = [u for u in fetched if u != edited and urlsplit(u).path != "/"][:2]
        web.set_response(SITE, urlsplit(busy).path, b"try later", status=503)
        robots = f"User-agent: *\nDisallow: {urlsplit(refused).path}\n".encode()
        web.set_response(SITE, "/robots.txt", robots, content_type="text/plain")
        t1 = t0 + 3 * DAY
        third = run_recrawl(out, {**LOOPBACK, "max_retries": 0}, now=t1, due_only=False)
        assert (third[ERROR], third[DENIED], third[UNCHANGED]) == (1, 1, len(fetched) - 2)
        state = {r["url"]: r for r in pq.read_table(out / RECRAWL_FILE).to_pylist()}
        pages = {p["url"]: p for p in pq.read_table(out / "pages.parquet").to_pylist()}
        assert (state[busy]["outcome"], state[busy]["http_status"]) == (ERROR, 503)
        assert state[busy]["next_due"] == _iso(t1 + RevisitPolicy().min_s)
        assert pages[busy]["content_sha256"] == before[busy]["content_sha256"]
        assert state[refused]["outcome"] == DENIED
        assert pages[refused]["robots_crawl"] == "disallowed"
        assert pages[refused]["training_allowed"] is False
        assert pages[refused]["warc_offset"] == before[refused]["warc_offset"]

    schedules = recrawl_schedules()
    assert [s.name for s in schedules] == [f"recrawl_shard_{k}" for k in range(4)]
    wired = recrawl_schedules({"allow_private_networks": True})[2](build_schedule_context())
    assert wired.run_config == {
        "ops": {"recrawl_shard": {"config": {"allow_private_networks": True}}}
    }
    for k, sched in enumerate(schedules):
        request = sched(build_schedule_context())
        assert request.partition_key == str(k) and request.run_config == {}
        assert sched.job_name == "recrawl_job" and sched.cron_schedule == f"{15 * k} */6 * * *"


def test_revisit_policy_doubles_halves_and_stays_within_bounds():
    p = RevisitPolicy(initial_s=100, min_s=10, max_s=1000)
    interval, seen = p.initial_s, []
    for _ in range(5):
        interval = p.next_interval(interval, UNCHANGED)
        seen.append(interval)
    assert seen == [200, 400, 800, 1000, 1000]
    seen = []
    for _ in range(8):
        interval = p.next_interval(interval, CHANGED)
        seen.append(interval)
    assert seen == [500, 250, 125, 62.5, 31.25, 15.625, 10, 10]
    assert p.next_interval(123, ERROR) == 123
    with pytest.raises(ValueError, match="min_s <= initial_s <= max_s"):
        RevisitPolicy(initial_s=5, min_s=10)
