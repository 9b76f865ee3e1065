"""The benchmark that leaked into the sample web (sampleweb.evals): its items, the pages they came
from, and the filter's decontamination marking exactly those pages."""

import json

import pyarrow as pa
import pyarrow.parquet as pq

from sampleweb import build_web, write_to_lake
from sampleweb.evals import FILE, LANGS, NAME, eval_items, leaked_pages


def test_items_are_cut_from_consented_crawlable_pages_one_per_language():
    web = build_web(0)
    pages = leaked_pages(web)
    assert [p.labels["lang"] for p in pages] == list(LANGS)
    for page, item in zip(pages, eval_items(web), strict=True):
        lab = page.labels
        assert lab["expect_crawl_allowed"] and lab["expect_training_allowed"] and not lab["noai"]
        assert lab["dup_cluster"] is None and not lab["js_only_text"]
        assert item["context"] in lab["main_text"] and item["answer"] in item["context"]
        assert set(item) == {"id", "lang", "context", "question", "answer"}
    assert leaked_pages(build_web(0)) == pages  # deterministic for a seed


def test_write_to_lake_writes_the_benchmark_as_jsonl(tmp_path):
    web = build_web(0)
    summary = write_to_lake(web, tmp_path)
    path = tmp_path / FILE
    assert summary["evals"] == str(path) and path.name == f"{NAME}.jsonl"
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert items == eval_items(web)


def test_decontamination_marks_exactly_the_leaked_pages(tmp_path):
    """The filter, given the benchmark, marks the leaked pages' documents and no other."""
    from filters.run import run_filter
    from sampleweb.labels import labelled_documents

    web = build_web(0)
    write_to_lake(web, tmp_path / "web")
    leaked = {(p.site, p.path) for p in leaked_pages(web)}
    docs = labelled_documents(0)
    rows = [
        {"id": d["id"], "url": d["url"], "text": d["text"], "training_allowed": True} for d in docs
    ]
    (tmp_path / "docs").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "docs" / "documents.parquet")
    run_filter(
        tmp_path / "docs",
        tmp_path / "out",
        decontaminate=[tmp_path / "web" / FILE],
        reference_rows=lambda: docs,
    )
    annotated = pq.read_table(tmp_path / "out" / "annotated.parquet").to_pylist()
    marked = {r["id"] for r in annotated if r["contaminated"]}
    expected = {f"{site}{path}" for site, path in leaked}  # labelled documents' ids
    assert expected <= {d["id"] for d in docs}
    assert len(expected) == len(LANGS) and marked == expected
    assert all(r["contamination_benchmarks"] == NAME for r in annotated if r["id"] in expected)
