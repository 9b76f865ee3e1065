"""verify_lake: each dataset against its manifest (what the kill -9 test relies on)."""

import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from common.lakecheck import leftovers, verify_lake
from common.manifest import write_manifest, write_parquet


def _lake(tmp_path):
    rows = [{"id": f"d{i}", "text": "x" * i} for i in range(50)]
    write_parquet(pa.Table.from_pylist(rows), tmp_path / "extract" / "documents.parquet")
    mix = tmp_path / "mixtures" / "m"
    (mix / "shards").mkdir(parents=True)
    arr = np.arange(20, dtype=np.uint32).reshape(4, 5)
    np.save(mix / "shards" / "00000.npy", arr)
    import hashlib

    sha = hashlib.sha256((mix / "shards" / "00000.npy").read_bytes()).hexdigest()
    doc = {"shards": [{"path": "shards/00000.npy", "num_sequences": 4, "sha256": sha}]}
    (mix / "manifest.json").write_text(json.dumps(doc))
    warc = tmp_path / "crawl" / "warc"
    warc.mkdir(parents=True)
    with gzip.open(warc / "a.warc.gz", "wb") as f:
        f.write(b"WARC/1.1\r\n" * 1000)
    write_manifest(warc, rows=1)
    return tmp_path


def test_a_whole_lake_has_no_problems(tmp_path):
    assert verify_lake(_lake(tmp_path)) == [] and leftovers(tmp_path) == []


def test_truncated_files_are_found(tmp_path):
    root = _lake(tmp_path)
    docs = root / "extract" / "documents.parquet"
    docs.write_bytes(docs.read_bytes()[:-40])
    warc = root / "crawl" / "warc" / "a.warc.gz"
    warc.write_bytes(warc.read_bytes()[:-10])
    problems = verify_lake(root)
    assert any("documents.parquet: does not read as Parquet" in p for p in problems)
    assert any("a.warc.gz: truncated or corrupt gzip" in p for p in problems)


def test_row_counts_duplicates_and_missing_datasets(tmp_path):
    root = _lake(tmp_path)
    docs = root / "extract" / "documents.parquet"
    table = pq.read_table(docs)
    pq.write_table(
        pa.concat_tables([table, table.slice(0, 3)]), docs
    )  # a resumed append gone wrong
    (root / "mixtures" / "m" / "shards" / "00000.npy").unlink()
    write_manifest(root / "extract" / "gone.parquet", rows=1)
    problems = verify_lake(root)
    assert any("53 rows, its manifest says 50" in p for p in problems)
    assert any("3 rows repeat a key id" in p for p in problems)
    assert any("duplicate rows" in p for p in problems)
    assert any("00000.npy: named by the mixture manifest but missing" in p for p in problems)
    assert any("gone.parquet is missing" in p for p in problems)


def test_changed_shard_and_leftovers(tmp_path):
    root = _lake(tmp_path)
    np.save(root / "mixtures" / "m" / "shards" / "00000.npy", np.zeros((4, 5), np.uint32))
    (root / "extract" / "documents.parquet.tmp").write_bytes(b"PAR1")
    assert any("sha256 differs" in p for p in verify_lake(root))
    assert leftovers(root) == [root / "extract" / "documents.parquet.tmp"]


def test_malformed_mixture_manifests_are_problems_not_crashes_or_passes(tmp_path):
    """A manifest that is not an object, a shard without path or sha256, and a path out of the
    mixture's directory (a copy of /etc/hostname would pass for a shard) are each reported."""
    root = _lake(tmp_path)
    outside = tmp_path / "outside.npy"
    np.save(outside, np.zeros((1, 5), np.uint32))
    cases = {
        "listed": [1, 2],
        "nopath": {"shards": [{"sha256": "x"}, "shards/00000.npy"]},
        "nosha": {"shards": [{"path": "shards/00000.npy", "num_sequences": 4}]},
        "escape": {"shards": [{"path": "../../outside.npy", "sha256": "x"}]},
        "absolute": {"shards": [{"path": str(outside), "sha256": "x"}]},
        "evalout": {"shards": [], "eval": [{"path": "../../outside.npy"}]},
        "notalist": {"shards": {"path": "x"}},
    }
    for name, doc in cases.items():
        (root / "mixtures" / name / "shards").mkdir(parents=True)
        np.save(root / "mixtures" / name / "shards" / "00000.npy", np.zeros((4, 5), np.uint32))
        (root / "mixtures" / name / "manifest.json").write_text(json.dumps(doc))
    problems = verify_lake(root)

    def said(name: str) -> list[str]:
        return [p for p in problems if f"/mixtures/{name}/manifest.json" in p]

    assert said("listed") == [
        f"{root}/mixtures/listed/manifest.json: a manifest is a JSON object, this is a list; "
        "re-run the stage that writes the dataset"
    ]
    assert [p.split(": ", 1)[1] for p in said("nopath")] == [
        "shards[0] has no path; rebuild the mixture",
        "shards[1] has no path; rebuild the mixture",
    ]
    assert said("nosha") == [
        f"{root}/mixtures/nosha/manifest.json: shards[0] (shards/00000.npy) has no sha256; "
        "rebuild the mixture"
    ]
    for name in ("escape", "absolute", "evalout"):
        (problem,) = said(name)
        assert "is outside the mixture" in problem, problem
    assert "shards is not a list" in said("notalist")[0]
    assert not [p for p in problems if "/mixtures/m/" in p]  # the whole mixture stays whole
