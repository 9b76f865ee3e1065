"""The demo end to end: every stage runs on the sample web and leaves its outputs in the lake."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from pipelines.demo import STEPS, run_demo
from pipelines.stages.train import latest_run

pytestmark = pytest.mark.slow


@pytest.mark.timeout(900)
def test_demo_runs_every_stage_into_the_lake(tmp_path):
    root = tmp_path / "lake"
    console = Console(file=(tmp_path / "demo.log").open("w"), width=200)
    results = run_demo(root, console, train_steps=(12, 6, 6))
    assert [r.name for r in results] == [name for name, _ in STEPS]

    pages = pq.read_table(root / "crawl" / "pages.parquet")
    docs = pq.read_table(root / "extract" / "documents.parquet")
    rejects = pq.read_table(root / "extract" / "rejects.parquet")
    assert docs.num_rows + rejects.num_rows == pages.num_rows
    assert any(docs.column("rendered").to_pylist()), "no JavaScript page was rendered"

    annotated = pq.read_table(root / "filter" / "annotated.parquet")
    kept = pq.read_table(root / "filter" / "documents.parquet")
    assert annotated.num_rows == docs.num_rows
    assert 0 < kept.num_rows < annotated.num_rows
    assert all(kept.column("training_allowed").to_pylist())

    manifest = json.loads((root / "mixtures" / "tiny-pretrain" / "manifest.json").read_text())
    shard = np.load(
        root / "mixtures" / "tiny-pretrain" / manifest["shards"][0]["path"], mmap_mode="r"
    )
    assert shard.dtype == np.uint32 and shard.shape[1] == manifest["seq_len"]

    for stage in ("pretrain", "cpt", "long-context"):
        summary = json.loads((latest_run(root / "runs" / stage) / "summary.json").read_text())
        assert np.isfinite(summary["final_loss"])
