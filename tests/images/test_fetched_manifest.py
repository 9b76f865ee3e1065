"""`fetched.parquet` carries a manifest like every lake dataset (docs/schemas.md): rows, the
inputs the caller names, the fetch config's hash; a resumed run writes both again, the manifest
last, so it always describes the rows beside it."""

from __future__ import annotations

import pyarrow.parquet as pq

from common.manifest import config_hash, read_manifest
from crawlers.images import FETCHED, ImageFetchConfig, fetch_images

CFG = {"delay": 0.0}


def _refs(n: int) -> list[dict]:
    # page opt-outs: recorded rows, nothing requested (the address is never asked)
    return [
        {
            "id": f"d-{i}",
            "doc_id": "d",
            "src": f"http://127.0.0.9:9/{i}.png",
            "alt": "",
            "training_allowed": False,
        }
        for i in range(n)
    ]


def test_fetched_parquet_has_a_manifest_naming_rows_inputs_and_config(tmp_path):
    refs = _refs(3)
    src = str(tmp_path / "extract" / "image_refs.parquet")
    fetch_images(refs, tmp_path / "out", CFG, inputs=[src])
    man = read_manifest(tmp_path / "out" / FETCHED)
    assert man["rows"] == pq.ParquetFile(tmp_path / "out" / FETCHED).metadata.num_rows == 3
    assert man["inputs"] == [src]
    assert man["config_sha256"] == config_hash(ImageFetchConfig(**CFG).model_dump(mode="json"))
    assert man["written_at"] and man["schema_version"] == 1
    assert not (tmp_path / "out" / (FETCHED + ".tmp")).exists()


def test_a_resumed_fetch_writes_the_manifest_again(tmp_path):
    refs = _refs(2)
    fetch_images(refs, tmp_path, CFG)
    (tmp_path / (FETCHED + ".manifest.json")).unlink()  # as if killed before the manifest
    summary = fetch_images(refs, tmp_path, CFG, resume=True)
    assert summary["resumed_rows"] == 2
    assert read_manifest(tmp_path / FETCHED)["rows"] == 2
    assert read_manifest(tmp_path / FETCHED)["inputs"] == []
