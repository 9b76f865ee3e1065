"""Checks of the crawl and extract outputs: robots.txt obeyed and decided for both tokens on
every page; pages in = documents + rejects."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from common.checks import CheckOutcome, Figure, _first, _read_columns
from common.consent import flag_true

# The robots decisions the crawler records (crawlers.crawl.robots_policy); "allowed" alone
# permits a fetch.
ROBOTS_DECISIONS = ("allowed", "disallowed", "unreachable")


_CRAWL_FIX = "point the check at the directory `refinery crawl --out` wrote"


def _crawl_tables(crawl_dir: Path, columns: list[str]) -> Iterator[tuple[Path, pa.Table]]:
    from crawlers.extract.warc import find_pages_files

    for pages in find_pages_files(crawl_dir):
        yield pages, _read_columns(pages, columns, _CRAWL_FIX)


def crawl_robots_respected(crawl_dir: Path) -> CheckOutcome:
    """No page was requested unless robots.txt allowed it for the crawl token.

    A page counts as fetched when the crawl recorded any trace of a request for it: a status, a
    fetch time or a stored response. Every fetched page must carry robots_crawl = "allowed";
    "disallowed", "unreachable" or no decision at all is a violation. All shards are read.
    """
    crawl_dir = Path(crawl_dir)
    cols = ["url", "status", "fetched_at", "warc_file", "robots_crawl"]
    pages = fetched = 0
    by_decision: Counter[str] = Counter()
    offending: list[str] = []
    shards = 0
    for _, t in _crawl_tables(crawl_dir, cols):
        shards += 1
        pages += t.num_rows
        was_fetched = pc.or_kleene(
            pc.or_kleene(pc.is_valid(t["status"]), pc.is_valid(t["fetched_at"])),
            pc.is_valid(t["warc_file"]),
        )
        f = t.filter(was_fetched)
        fetched += f.num_rows
        decision = pc.fill_null(f["robots_crawl"], "none").to_pylist()
        bad = [d != "allowed" for d in decision]
        by_decision.update(d for d, b in zip(decision, bad, strict=True) if b)
        offending += [u for u, b in zip(f["url"].to_pylist(), bad, strict=True) if b]
    violations = len(offending)
    meta: dict[str, Figure] = {
        "pages": pages,
        "shards": shards,
        "fetched": fetched,
        "fetched_not_allowed": violations,
        "fetched_disallowed": by_decision["disallowed"],
        "fetched_unreachable": by_decision["unreachable"],
        "fetched_no_decision": by_decision["none"],
        "first_offending_url": _first(offending),
    }
    verdict = (
        "0 fetched without an 'allowed' decision"
        if not violations
        else f"{violations} fetched without an 'allowed' decision (disallowed "
        f"{by_decision['disallowed']}, unreachable {by_decision['unreachable']}, none "
        f"{by_decision['none']}; first {offending[0]})"
    )
    return CheckOutcome(
        not violations,
        f"crawl {crawl_dir}: {fetched} of {pages} pages fetched over {shards} shard(s); "
        f"robots for the crawl token: {verdict}",
        meta,
    )


def crawl_robots_decisions_recorded(crawl_dir: Path) -> CheckOutcome:
    """Every page carries both robots decisions (crawl token and training token), each a known
    value, and no page is marked training_allowed while its training-token decision is not
    "allowed"."""
    crawl_dir = Path(crawl_dir)
    cols = ["url", "robots_crawl", "robots_training", "training_allowed"]
    pages = shards = 0
    missing_crawl = missing_training = unknown = consent_leaks = 0
    counts: Counter[str] = Counter()
    offending: list[str] = []
    for _, t in _crawl_tables(crawl_dir, cols):
        shards += 1
        pages += t.num_rows
        for url, rc, rt, ok in zip(
            t["url"].to_pylist(),
            t["robots_crawl"].to_pylist(),
            t["robots_training"].to_pylist(),
            t["training_allowed"].to_pylist(),
            strict=True,
        ):
            counts[f"crawl_{rc}"] += 1
            counts[f"training_{rt}"] += 1
            bad = False
            if rc is None:
                missing_crawl += 1
                bad = True
            if rt is None:
                missing_training += 1
                bad = True
            if (rc is not None and rc not in ROBOTS_DECISIONS) or (
                rt is not None and rt not in ROBOTS_DECISIONS
            ):
                unknown += 1
                bad = True
            if flag_true(ok) and rt != "allowed":
                consent_leaks += 1
                bad = True
            if bad:
                offending.append(url)
    meta: dict[str, Figure] = {
        "pages": pages,
        "shards": shards,
        "missing_crawl_decision": missing_crawl,
        "missing_training_decision": missing_training,
        "unknown_decision_value": unknown,
        "training_allowed_without_training_robots": consent_leaks,
        "first_offending_url": _first(offending),
    }
    for d in ROBOTS_DECISIONS:
        meta[f"crawl_{d}"] = counts[f"crawl_{d}"]
        meta[f"training_{d}"] = counts[f"training_{d}"]
    passed = not offending
    verdict = (
        "every page has both decisions"
        if passed
        else f"{len(offending)} page(s) wrong: no crawl decision {missing_crawl}, no training "
        f"decision {missing_training}, unknown value {unknown}, training_allowed without an "
        f"'allowed' training decision {consent_leaks} (first {offending[0]})"
    )
    return CheckOutcome(
        passed, f"crawl {crawl_dir}: {pages} pages over {shards} shard(s); {verdict}", meta
    )


_EXTRACT_FIX = "run `refinery extract` into this directory first"


def extract_pages_accounted(crawl_dir: Path, extract_dir: Path) -> CheckOutcome:
    """Pages in = documents + rejects, as counts and as URLs (each crawl row is one output row)."""
    from crawlers.extract.warc import find_pages_files

    crawl_dir, extract_dir = Path(crawl_dir), Path(extract_dir)
    page_urls: Counter[str] = Counter()
    for pages in find_pages_files(crawl_dir):
        page_urls.update(_read_columns(pages, ["url"], _CRAWL_FIX)["url"].to_pylist())
    docs = _read_columns(extract_dir / "documents.parquet", ["url"], _EXTRACT_FIX)
    rejects = _read_columns(extract_dir / "rejects.parquet", ["url"], _EXTRACT_FIX)
    out_urls = Counter(docs["url"].to_pylist()) + Counter(rejects["url"].to_pylist())
    pages_in = sum(page_urls.values())
    missing = page_urls - out_urls
    extra = out_urls - page_urls
    n_missing, n_extra = sum(missing.values()), sum(extra.values())
    counted = docs.num_rows + rejects.num_rows
    passed = counted == pages_in and not n_missing and not n_extra
    meta: dict[str, Figure] = {
        "pages_in": pages_in,
        "documents": docs.num_rows,
        "rejects": rejects.num_rows,
        "unaccounted": pages_in - counted,
        "pages_without_output": n_missing,
        "outputs_without_page": n_extra,
        "first_missing_url": _first(sorted(missing)),
        "first_extra_url": _first(sorted(extra)),
    }
    verdict = (
        "every page accounted"
        if passed
        else f"{n_missing} page(s) without an output row, {n_extra} output row(s) without a page"
    )
    return CheckOutcome(
        passed,
        f"extract {extract_dir}: {pages_in} pages in, {docs.num_rows} documents + "
        f"{rejects.num_rows} rejects = {counted}; {verdict}",
        meta,
    )
