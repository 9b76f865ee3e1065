"""`crawlers.extract.run.run_extract` returns a typed result (`ExtractResult`), and the extract
stage adapts it unchanged: the summary's figures, and the details it prints, keep their keys
and order."""

from __future__ import annotations

import json

from crawlers.extract.run import ExtractResult, run_extract
from pipelines.stage import Lake
from tests.extract.conftest import write_crawl
from tests.extract.test_unfinished_runs import _pages, in_process

DETAILS = [
    "pages",
    "documents",
    "image_refs",
    "tables",
    "interleaved",
    "rejects",
    "rendered",
    "rendered_fraction",
    "rejects_by_reason",
    "seconds",
    "docs_per_s",
    "render",
    "out_dir",
]


def test_the_driver_returns_a_typed_result(tmp_path):
    crawl = write_crawl(tmp_path / "crawl", _pages("127.0.0.1", ["a", "b", "c"]))
    s = run_extract(crawl, tmp_path / "out", "never", execute=in_process)
    assert isinstance(s, ExtractResult)
    assert (s.pages, s.documents, s.rejects, s.image_refs) == (3, 3, 0, 3)
    assert s.render is None and s.rendered == 0 and s.out_dir == str(tmp_path / "out")


def test_the_stage_adapts_the_result_with_the_same_figures_and_details(tmp_path, monkeypatch):
    from pipelines.stages import extract as stage

    def on_this_process(crawl_dir, out_dir, render_mode, *, pipeline_args=None, **kwargs):
        return run_extract(crawl_dir, out_dir, render_mode, execute=in_process, **kwargs)

    monkeypatch.setattr(stage, "run_extract", on_this_process)
    crawl = write_crawl(tmp_path / "crawl", _pages("127.0.0.1", ["a", "b"]))
    params = stage.ExtractParams(crawl=crawl, out=tmp_path / "out", render="never")
    summary = stage.extract(params, Lake(root=tmp_path / "lake"))
    assert list(summary.details) == DETAILS
    assert summary.pages == summary.documents == 2 and summary.rejects == 0
    assert summary.outputs == {"documents": str(tmp_path / "out")}
    assert json.loads(summary.text())["documents"] == 2
    assert summary.metadata()["rejects_table"].startswith("| reason | rows |")
