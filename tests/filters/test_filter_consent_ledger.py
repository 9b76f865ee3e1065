"""The filter applies the consent ledger before de-duplication: a page the ledger opted out is
`training_not_allowed` (with the ledger's reason), so an allowed copy of its text is kept in its
place. Before, the filter judged only the row's own flag: the opted-out copy stayed the
cluster's representative, every mixture then removed it through the ledger, and the allowed
copy, dropped as its duplicate, reached no mixture, whatever was re-run."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.consent import append_ledger

pytestmark = pytest.mark.timeout(120)


def _opt_out(lake, url, ids):
    append_ledger(
        lake,
        [
            {
                "checked_at": "2026-01-01T00:00:00Z",
                "host": "127.0.0.1",
                "url": url,
                "doc_ids": ids,
                "training_allowed": False,
                "previous": True,
                "agent": "RefineryBot-Extended",
                "rule": "Disallow: /",
            }
        ],
    )


def test_an_allowed_copy_is_kept_in_place_of_the_one_the_ledger_opted_out(tmp_path, labelled_docs):
    from filters.run import InProcess, run_filter

    doc = next(
        d
        for d in labelled_docs
        if d["lang"] == "en"
        and d["quality"] in ("high", "medium")
        and d["dup_cluster"] is None
        and not d["pii"]
        and len(d["text"]) > 600
    )
    lake = tmp_path / "lake"
    docs = lake / "extract"
    docs.mkdir(parents=True)
    rows = [
        {"id": i, "url": f"http://127.0.0.1/{i}", "text": doc["text"], "training_allowed": True}
        for i in ("a", "b")
    ]
    pq.write_table(pa.Table.from_pylist(rows), docs / "documents.parquet")
    cfg = {"languages": ["en"], "quality": {"use_default_models": False}}

    def run(out):
        run_filter(docs, lake / out, config=cfg, executor=InProcess(), lake_root=lake)
        ann = {r["id"]: r for r in pq.read_table(lake / out / "annotated.parquet").to_pylist()}
        kept = pq.read_table(lake / out / "documents.parquet").column("id").to_pylist()
        return ann, kept

    ann, kept = run("f0")
    assert len(kept) == 1, ann
    first = kept[0]
    other = ({"a", "b"} - {first}).pop()
    assert ann[other]["duplicate_of"] == first
    _opt_out(lake, f"http://127.0.0.1/{first}", [first])
    ann, kept = run("f1")
    assert kept == [other]
    assert ann[first]["drop_reason"] == "training_not_allowed"
    assert ann[first]["training_allowed"] is False
    assert "consent ledger" in ann[first]["consent_reason"]
    manifest = json.loads((lake / "f1" / "annotated.parquet.manifest.json").read_text())
    assert manifest["consent_ledger"]["files"] == 1
