"""Acceptance on the sample web: crawl it, extract with --render auto, compare with ground truth."""

from __future__ import annotations

import statistics

import pyarrow.parquet as pq
import pytest

from crawlers.extract.evaluate import contains_passage, token_prf

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@pytest.fixture(scope="module")
def sampleweb_run(sample_lake):
    """The session's sample web, crawled and extracted with --render auto (tests/samplelake.py)."""
    root, summary = sample_lake.root, sample_lake.extract.summary
    labels = sample_lake.labels()
    docs = {r["url"]: r for r in pq.read_table(root / "extract" / "documents.parquet").to_pylist()}
    content = [lab for lab in labels if lab["is_content"] and lab["url"] in docs]
    return root, summary, docs, content


def test_every_js_only_passage_is_recovered(sampleweb_run):
    _, _, docs, content = sampleweb_run
    js_pages = [lab for lab in content if lab["js_only_text"]]
    assert len({lab["js_mechanism"] for lab in js_pages}) >= 5
    missing = [
        (lab["url"], lab["js_mechanism"], passage[:40])
        for lab in js_pages
        for passage in lab["js_only_text"]
        if not contains_passage(docs[lab["url"]]["text"], passage)
    ]
    assert not missing


def test_only_pages_with_script_made_content_are_rendered(sampleweb_run):
    _, _, docs, content = sampleweb_run
    wrong = [
        (lab["url"], docs[lab["url"]]["render_reason"])
        for lab in content
        if docs[lab["url"]]["rendered"] != bool(lab["js_only_text"])
    ]
    assert not wrong


def test_text_matches_ground_truth_with_high_token_f1(sampleweb_run):
    _, _, docs, content = sampleweb_run
    scores = [token_prf(docs[lab["url"]]["text"], lab["main_text"]) for lab in content]
    assert len(scores) >= 100
    assert statistics.mean(s[2] for s in scores) >= 0.8
    assert statistics.median(s[2] for s in scores) >= 0.9


def test_tables_and_images_come_out_in_page_order(sampleweb_run):
    root, _, docs, content = sampleweb_run
    tables = pq.read_table(root / "extract" / "tables.parquet").to_pylist()
    refs = pq.read_table(root / "extract" / "image_refs.parquet").to_pylist()
    checked = 0
    for lab in content:
        if lab["tables"]:
            got = sorted(
                (t for t in tables if t["url"] == lab["url"]), key=lambda t: t["table_index"]
            )
            assert [t["header"] for t in got] == [t["header"] for t in lab["tables"]]
            assert [t["n_rows"] for t in got] == [t["rows"] for t in lab["tables"]]
            checked += 1
        if lab["images"]:
            got = sorted((r for r in refs if r["url"] == lab["url"]), key=lambda r: r["position"])
            assert [r["src"].split("/", 3)[3] for r in got] == [
                i["src"].lstrip("/") for i in lab["images"]
            ]
            assert [r["alt"] for r in got] == [i["alt"] for i in lab["images"]]
            checked += 1
    assert checked >= 10


def test_every_crawled_page_is_accounted_for(sampleweb_run):
    root, summary, _, _ = sampleweb_run
    pages = pq.read_metadata(root / "crawl" / "pages.parquet").num_rows
    assert summary.documents + summary.rejects == pages == summary.pages
    rejects = pq.read_table(root / "extract" / "rejects.parquet").to_pylist()
    assert all(r["reason"] and r["detail"] for r in rejects)
    assert {"robots_denied", "http_status"} <= {r["reason"] for r in rejects}
