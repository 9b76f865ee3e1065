"""Crawling the bundled sample web: robots outcomes match its labels exactly."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.timeout(150)


@pytest.fixture(scope="module")
def sample_crawl(sampleweb_single):
    """One full crawl of the sample web (no delay: loopback; robots Crawl-delay still applies)."""
    sw, out, summary = sampleweb_single
    labels = {r["url"]: r for r in sw.labels_table().to_pylist()}
    sites = {s.name: sw.base_url(s.name) for s in sw.web.sites}
    pages = {r["url"]: r for r in pq.read_table(out / "pages.parquet").to_pylist()}
    skipped = pq.read_table(out / "skipped.parquet").to_pylist()
    return {
        "summary": summary,
        "labels": labels,
        "pages": pages,
        "skipped": skipped,
        "sites": sites,
    }


def test_no_page_the_labels_forbid_is_fetched(sample_crawl):
    labels, pages = sample_crawl["labels"], sample_crawl["pages"]
    forbidden = {u for u, lab in labels.items() if not lab["expect_crawl_allowed"]}
    fetched = {u for u, p in pages.items() if p["warc_file"]}
    assert forbidden and not forbidden & fetched
    denied = [p for u, p in pages.items() if u in forbidden]
    assert denied and all(not p["crawl_allowed"] and p["robots_crawl"] != "allowed" for p in denied)


def test_crawl_and_training_decisions_match_labels_for_every_decided_page(sample_crawl):
    labels, pages = sample_crawl["labels"], sample_crawl["pages"]
    decided = [u for u in pages if u in labels]
    assert len(decided) > 200
    for url in decided:
        lab, page = labels[url], pages[url]
        assert page["crawl_allowed"] == lab["expect_crawl_allowed"], url
        assert page["training_allowed"] == lab["expect_training_allowed"], url


def test_noindex_nofollow_and_noai_are_recorded_as_labelled(sample_crawl):
    labels, pages = sample_crawl["labels"], sample_crawl["pages"]
    for flag in ("noindex", "nofollow", "noai", "noimageai"):
        marked = [
            u for u, lab in labels.items() if lab[flag] and u in pages and pages[u]["status"] == 200
        ]
        assert marked, f"sample web has no fetched {flag} page"
        assert all(pages[u][flag] for u in marked), flag
    unmarked = [
        u
        for u, p in pages.items()
        if u in labels and p["status"] == 200 and not labels[u]["noindex"]
    ]
    assert not any(pages[u]["noindex"] for u in unmarked)
    for flag in ("noai", "noimageai"):  # each is recorded on its own, never one for the other
        fetched = [u for u, p in pages.items() if u in labels and p["status"] == 200]
        assert all(bool(pages[u][flag]) == labels[u][flag] for u in fetched), flag


def test_content_pages_reachable_by_links_or_sitemaps_are_all_fetched(sample_crawl):
    labels, pages = sample_crawl["labels"], sample_crawl["pages"]
    wanted = [
        u
        for u, lab in labels.items()
        if lab["is_content"] and lab["expect_crawl_allowed"] and lab["status"] == 200
    ]
    found = [u for u in wanted if u in pages and pages[u]["status"] == 200]
    assert len(found) >= 0.9 * len(wanted)
    assert any(p["source"] == "sitemap" for p in pages.values())


def test_calendar_trap_is_capped(sample_crawl):
    calendar = [u for u in sample_crawl["pages"] if "/calendar/" in u]
    assert 1 <= len(calendar) <= 12
    assert any(
        "calendar" in s["skip_reason"] and "/calendar/" in s["url"] for s in sample_crawl["skipped"]
    )


def test_redirects_are_recorded_and_followed_through_the_frontier(sample_crawl):
    pages, news = sample_crawl["pages"], sample_crawl["sites"]["news-en"]
    start = pages[news + "/go/start"]
    assert start["status"] == 302 and start["redirect_to"] == news + "/go/next"
    assert pages[news + "/go/next"]["status"] == 301
    assert pages[pages[news + "/go/next"]["redirect_to"]]["status"] == 200


def test_priority_signals_are_stored_with_every_page(sample_crawl):
    for page in sample_crawl["pages"].values():
        assert page["priority"] is not None and page["priority_reasons"]
        assert 0 <= page["lang_signal"] <= 1 and page["topic"]
