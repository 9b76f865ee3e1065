"""CMS coverage holes: a Shopify (Dawn) store and a Sphinx / Read the Docs project on loopback
(tests/crawl/cmssites.py), crawled for real with a budget of twice their documents; the server's
log says what each request served.

- Dawn's pager links `?page=1`, the bare listing again: that copy is by design and must not sink
  the numbered pager links, or the products listed only on `?page=2` are lost;
- "You may also like" links carry rotating recommendation parameters, numbers among them, that
  every product's rel=canonical drops: learned, they are dropped whatever their value;
- a product under each collection (`/collections/<c>/products/x`, canonical `/products/x`) and a
  docs page under each version (`/en/latest/x`, canonical `/en/stable/x`) are one path alias,
  learned from a few canonical links, not re-learned per collection or section.
"""

from __future__ import annotations

import asyncio

import pytest

from crawlers.crawl import crawl
from crawlers.crawl.traps import FamilyStats, TrapDetector, first_page_variant

from .cmssites import DocsHost, ShopHost

pytestmark = pytest.mark.timeout(180)
H = "http://shop.test"
D = "http://docs.test"
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()


def _text(key: str) -> str:
    """A page's main text of its own: six lines of words drawn for `key`."""
    import random

    rng = random.Random(key)
    return "\n".join(" ".join(rng.choice(WORDS) for _ in range(14)) for _ in range(6))


TEXT = _text("product")


def _crawl(server, out) -> dict:
    cfg = {
        "delay": 0,
        "allow_private_networks": True,
        "robots_retries": 0,
        "use_sitemaps": False,
        "max_pages": 2 * len(server.documents),
        "checkpoint_every": 100_000,
    }
    asyncio.run(crawl([server.url("/")], out, cfg))
    return server.measure()


def test_shop_products_on_second_pages_and_behind_recommendations_within_twice_their_number(
    tmp_path,
):
    with ShopHost("127.0.0.81") as shop:
        result = _crawl(shop, tmp_path / "out")
        hits = [raw for raw, _, _ in shop.log]
    print("\n", result)
    assert result["coverage"] >= 0.95, result
    # a product under each collection is the same product: a few fetches teach the alias
    assert result["duplicate_fetches"] <= 15, result
    assert any("?page=2" in h for h in hits), hits


def test_docs_versions_by_canonical_are_learned_not_fetched_per_section(tmp_path):
    with DocsHost("127.0.0.82", n_sections=8, per_section=6) as docs:
        result = _crawl(docs, tmp_path / "out")
        latest = [raw for raw, kind, _ in docs.log if kind == "content" and "/latest/" in raw]
    print("\n", result, len(latest))
    assert result["coverage"] >= 0.95, result
    assert len(latest) <= 5, (result, latest)


def test_the_first_page_under_its_number_is_no_copy_evidence():
    assert first_page_variant(f"{H}/collections/a?page=1", f"{H}/collections/a")
    assert first_page_variant(f"{H}/list?start=0&q=x", f"{H}/list?q=x")
    assert first_page_variant(f"{H}/list?pg=0", f"{H}/list?pg=1")
    assert not first_page_variant(f"{H}/collections/a?page=2", f"{H}/collections/a")
    assert not first_page_variant(f"{H}/item?id=1", f"{H}/item")
    det = TrapDetector()
    fams = det.families
    for c in "abcdefgh":
        bare, first = f"{H}/collections/{c}", f"{H}/collections/{c}?page=1"
        assert det.observe(bare, _text(c), [first]) is None
        assert det.observe(first, _text(c), []) is None  # the bare listing again, by design
        fams.record(first, "1", 200, 0)
    assert fams.adjustment(f"{H}/collections/z?page=2", "2") == 0.0
    assert fams.cut(f"{H}/collections/z?page=2", "2") is None
    # the same copy under any other parameter is evidence, as before
    assert det.observe(f"{H}/collections/a?view=x", _text("a"), []) == f"{H}/collections/a?view=x"


def test_a_numeric_parameter_every_canonical_drops_is_dropped_whatever_its_value():
    det = TrapDetector()
    rec = "pr_prod_strat=cf&pr_rec_id=12ab&pr_rec_pid={}&pr_ref_pid={}&pr_seq=uniform"
    link = f"{H}/products/new-item?" + rec.format(801, 907)
    assert "pr_rec_pid" in det.canonical(link)[0]
    for i in range(3):
        url = f"{H}/products/p{i}?" + rec.format(800 + i, 900 + i)
        det.observe(url, _text(str(i)), [], canonical=f"{H}/products/p{i}")
    assert det.canonical(link)[0] == f"{H}/products/new-item"
    # whatever other parameters ride along
    assert det.canonical(f"{H}/products/other-item?pr_rec_pid=5")[0] == f"{H}/products/other-item"
    # a page number is never learned so, though sites point page 2 at page 1
    for i in range(2, 6):
        det.observe(f"{H}/blog?page={i}", _text(str(i)), [], canonical=f"{H}/blog")
    assert det.canonical(f"{H}/blog?page=7")[0] == f"{H}/blog?page=7"
    # one page is not enough for a number
    det.observe(f"{H}/items/x?id=5", TEXT, [], canonical=f"{H}/items/x")
    assert det.canonical(f"{H}/items/y?id=6")[0] == f"{H}/items/y?id=6"


def test_a_path_prefix_named_canonical_elsewhere_is_learned_as_an_alias():
    det = TrapDetector()
    for i, c in enumerate(("shirts", "dresses", "hats")):
        det.observe(
            f"{H}/collections/{c}/products/item-{i}", TEXT, [], canonical=f"{H}/products/item-{i}"
        )
    clean, why = det.canonical(f"{H}/collections/bags/products/item-9")
    assert clean == f"{H}/products/item-9" and "path alias" in why
    # another kind of page under the prefix (a collection's tag filter, the listing) stays
    assert det.canonical(f"{H}/collections/bags/red")[0] == f"{H}/collections/bags/red"
    assert det.canonical(f"{H}/collections/bags")[0] == f"{H}/collections/bags"
    # versions of a docs host: learned across sections once 2+ kinds of page confirmed it
    for sec in ("api", "tutorial", "howto"):
        det.observe(
            f"{D}/en/latest/{sec}/x-1.html", TEXT, [], canonical=f"{D}/en/stable/{sec}/x-1.html"
        )
    assert det.canonical(f"{D}/en/latest/install/y-2.html")[0] == f"{D}/en/stable/install/y-2.html"
    assert det.canonical(f"{D}/en/stable/install/y-2.html")[0] == f"{D}/en/stable/install/y-2.html"
    assert det.canonical(f"{D}/fr/latest/api/x-1.html")[0] == f"{D}/fr/latest/api/x-1.html"


def test_a_path_alias_a_page_contradicts_is_not_applied():
    det = TrapDetector()
    for i in range(3):
        det.observe(
            f"{D}/en/latest/api/p{i}.html", TEXT, [], canonical=f"{D}/en/stable/api/p{i}.html"
        )
    assert det.canonical(f"{D}/en/latest/api/q.html")[0] == f"{D}/en/stable/api/q.html"
    # a page only in latest names itself canonical: the prefix is no alias after all
    det.observe(f"{D}/en/latest/api/new.html", TEXT, [], canonical=f"{D}/en/latest/api/new.html")
    assert det.canonical(f"{D}/en/latest/api/q.html")[0] == f"{D}/en/latest/api/q.html"


def test_family_stats_is_unchanged_for_other_copies():
    fams = FamilyStats()
    for i in range(5):
        fams.record(f"{H}/p/{i}?print=1", "Print", 200, 0)
        fams.copy(f"{H}/p/{i}?print=1", "Print")
    assert fams.cut(f"{H}/p/9?print=1", "Print") is not None
