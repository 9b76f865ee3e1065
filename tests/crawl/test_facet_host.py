"""A fourth news host, on Drupal-like software (tests/crawl/facetnews.py): articles at path aliases
and at /node/N (rel=canonical to the alias), a faceted search whose links add one value at a time,
print copies, and edit/comment links that answer 403/404. The crawl runs for real with a budget
of 1.5 x the articles and the server says what each request served.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from crawlers.crawl.traps import FamilyStats, TrapDetector

from .facetnews import FacetNewsServer
from .realnews import crawl_news

pytestmark = pytest.mark.timeout(180)
H = "http://ledger.test"
TEXT = "\n".join(
    f"Paragraph {n} of the article about the harbour bridge and the city." for n in range(6)
)


def test_facet_host_articles_without_facet_combinations_aliases_or_dead_links(tmp_path):
    result = crawl_news(tmp_path / "out", 300, seed=2, ip="127.0.0.75", server=FacetNewsServer)
    print("\n", result)
    assert result["coverage"] >= 0.95, result
    assert result["coverage_clean_url"] >= 0.95, result  # under the aliases, not /node/N
    assert result["trap_share"] <= 0.05, result
    assert result["dead_share"] <= 0.15, result
    skipped = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    reasons = [s["skip_reason"] for s in skipped]
    assert any(r.startswith("trap: facet combinations") for r in reasons)
    assert any(r.startswith("trap: dead links") for r in reasons)


def test_a_link_adding_one_value_to_a_listings_selection_is_a_facet_combination():
    t = TrapDetector()
    one = f"{H}/search?f=topic:climate"
    assert t.check(one, f"{H}/news?page=1") is None  # a single value: a listing of its own
    two = f"{H}/search?f=topic:climate,year:2021"
    assert t.check(two, one).startswith("trap: facet combinations")
    # learned for the host and path: another pair from anywhere is cut too
    assert t.check(f"{H}/search?f=topic:sport,type:news", f"{H}/").startswith("trap: facet")
    # repeated and indexed keys are one parameter
    r = TrapDetector()
    assert r.check(f"{H}/list?tag=a&tag=b", f"{H}/list?tag=a").startswith("trap: facet")
    i = TrapDetector()
    assert i.check(f"{H}/s?f[0]=x:1&f[1]=y:2", f"{H}/s?f[0]=x:1").startswith("trap: facet")
    # two values linked from another page (an article naming its two topics) is no evidence
    assert TrapDetector().check(f"{H}/search?f=a,b", f"{H}/news/2021/story") is None


def test_the_page_that_names_itself_canonical_is_the_original_of_a_copy():
    t = TrapDetector()
    printed = f"{H}/node/7/print"  # shorter than the alias, and fetched first
    alias = f"{H}/news/2021/the-harbour-bridge-reopens"
    assert t.observe(printed, TEXT) is None
    assert t.observe(alias, TEXT, canonical=alias) == printed
    # and a page naming another URL canonical is the copy of that one, fetched before or after
    t2 = TrapDetector()
    assert t2.observe(f"{H}/node/7", TEXT, canonical=alias) is None
    assert t2.observe(alias, TEXT, canonical=alias) == f"{H}/node/7"


def test_a_family_of_links_that_only_fails_is_not_fetched_any_more():
    fam = FamilyStats()
    for n in range(9):
        fam.record(f"{H}/node/{n}/edit", "Edit", 403, 0)
    assert fam.cut(f"{H}/node/99/edit", "Edit") is None
    fam.record(f"{H}/node/9/edit", "Edit", 403, 0)
    assert fam.cut(f"{H}/node/99/edit", "Edit").startswith("trap: dead links")
    mixed = FamilyStats()
    for n in range(20):
        mixed.record(f"{H}/story/{n}", "", 404 if n % 4 else 200, 0)
    assert mixed.cut(f"{H}/story/99") is None  # a quarter of them live: never cut
