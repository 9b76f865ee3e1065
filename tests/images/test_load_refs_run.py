"""`load_refs` joins image_refs.parquet with documents.parquet only when both are the outputs of
one extract run, as their manifests tell: an extract killed between its two writes left
documents from one run beside image refs from another, and `images build` then took 4 refs of
the old run for the 319 of the new one. Files without any manifest (another tool's) are read."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from common.inputs import InputError
from common.manifest import manifest_path, write_parquet
from crawlers.images import load_refs

SETTINGS = {"render_mode": "never", "favor": "balanced", "llm": False}


def _docs(ids):
    return pa.table({"id": ids, "url": [f"http://h.test/{i}" for i in ids]} | _flags(len(ids)))


def _flags(n):
    return {"training_allowed": [True] * n, "noai": [False] * n}


def _refs(ids):
    n = len(ids)
    return pa.table(
        {
            "doc_id": ids,
            "url": [f"http://h.test/{i}" for i in ids],
            "position": [0] * n,
            "src": [f"http://img.test/{i}.png" for i in ids],
            "alt": ["a"] * n,
            "surrounding_text": ["t"] * n,
            "training_allowed": [True] * n,
        }
    )


def _run(out, crawl, ids, *, only=("documents", "image_refs")):
    """What one extract run of `crawl` writes (common.manifest.write_parquet, as extract does)."""
    out.mkdir(parents=True, exist_ok=True)
    tables = {"documents": _docs(ids), "image_refs": _refs(ids)}
    for name in only:
        write_parquet(tables[name], out / f"{name}.parquet", inputs=[str(crawl)], config=SETTINGS)
    return out


def _restamp(path, written_at):
    m = manifest_path(path)
    doc = json.loads(m.read_text())
    m.write_text(json.dumps(doc | {"written_at": written_at}))


def test_one_runs_outputs_are_joined(tmp_path):
    out = _run(tmp_path / "extract", tmp_path / "crawlA", ["d1", "d2"])
    assert [r["id"] for r in load_refs(out)] == ["d1-0", "d2-0"]


def test_outputs_of_two_runs_of_other_crawls_are_refused(tmp_path):
    """The reviewer's extract dir: documents of the 460-page crawl A, refs of the 60-page crawl S."""
    out = _run(tmp_path / "extract", tmp_path / "crawlS", ["s1"])
    _run(out, tmp_path / "crawlA", ["a1", "a2", "a3"], only=("documents",))
    with pytest.raises(InputError) as err:
        load_refs(out)
    msg = str(err.value)
    assert "documents.parquet and " in msg and "image_refs.parquet" in msg and "\n" not in msg
    assert "not one extract run's outputs" in msg and "inputs differ" in msg
    assert "re-run `refinery extract`" in msg


def test_a_rerun_of_the_same_crawl_killed_between_its_writes_is_refused(tmp_path):
    """Same crawl, same settings: only the write times tell that image_refs is the older run's
    (one run writes documents first)."""
    out = _run(tmp_path / "extract", tmp_path / "crawl", ["d1", "d2"])
    _restamp(out / "image_refs.parquet", "2026-01-01T10:00:00Z")
    _restamp(out / "documents.parquet", "2026-01-01T10:05:00Z")
    with pytest.raises(InputError, match="image_refs.parquet was written at .*before documents"):
        load_refs(out)
    _restamp(out / "documents.parquet", "2026-01-01T10:00:00Z")  # the same second: one run
    assert len(load_refs(out)) == 2


def test_one_file_without_a_manifest_is_refused(tmp_path):
    """An extract that removes its old manifests first, killed after writing documents."""
    out = _run(tmp_path / "extract", tmp_path / "crawl", ["d1"])
    manifest_path(out / "image_refs.parquet").unlink()
    with pytest.raises(InputError, match="image_refs.parquet has no manifest"):
        load_refs(out)


def test_a_manifest_over_other_rows_is_refused(tmp_path):
    out = _run(tmp_path / "extract", tmp_path / "crawl", ["d1", "d2"])
    m = manifest_path(out / "documents.parquet")
    old = m.read_text()
    _run(out, tmp_path / "crawl", ["d1", "d2", "d3"], only=("documents",))
    m.write_text(old)  # the data replaced, its old manifest put back
    with pytest.raises(InputError, match="documents.parquet has 3 rows, its manifest says 2"):
        load_refs(out)


def test_settings_of_two_runs_are_refused(tmp_path):
    out = _run(tmp_path / "extract", tmp_path / "crawl", ["d1"])
    write_parquet(
        _docs(["d1"]),
        out / "documents.parquet",
        inputs=[str(tmp_path / "crawl")],
        config=SETTINGS | {"render_mode": "auto"},
    )
    with pytest.raises(InputError, match="config_sha256 differ"):
        load_refs(out)
