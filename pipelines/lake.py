"""The lake: one root directory holding every stage's output as plain files.

Default root is ./lake, overridden by REFINERY_HOME. Every dataset (a Parquet file, a WARC
directory, a shard directory, a model) gets a small JSON manifest beside it:
`<name>.manifest.json` for a file, `manifest.json` inside a directory that has none of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1

# Standard locations of each stage's output, relative to the lake root.
STAGE_DIRS = {
    "sampleweb": "sampleweb",
    "crawl": "crawl",
    "rendered": "rendered",
    "extract": "extract",
    "filter": "filter",
    "quality_models": "models/quality",
    "tokenizer": "tokenizer",
    "mixtures": "mixtures",
    "runs": "runs",
    "reports": "reports",
}


# Where each asset's dataset lives when a stage ran with the lake's defaults (the CLI without
# --out, or an earlier materialization): the IO manager falls back to it when no handle exists.
DATASETS = {
    "sample_web": "sampleweb",
    "raw_pages": "crawl",
    "rendered_pages": "rendered",
    "documents": "extract",
    "quality_models": "models/quality/default",
    "filtered_documents": "filter/annotated.parquet",
    "deduplicated_documents": "filter/documents.parquet",
    "tokenizer": "tokenizer/tokenizer.json",
    "retrieval_documents": "synth/long/retrieval.parquet",
}


def lake_root() -> Path:
    """Return the lake root: $REFINERY_HOME if set, else ./lake."""
    return Path(os.environ.get("REFINERY_HOME") or "lake").resolve()


def stage_dir(stage: str, root: Path | None = None) -> Path:
    """Return (and create) the standard directory of a stage inside the lake."""
    if stage not in STAGE_DIRS:
        raise KeyError(f"unknown lake stage {stage!r}; known: {', '.join(sorted(STAGE_DIRS))}")
    path = (root or lake_root()) / STAGE_DIRS[stage]
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_hash(config: Any) -> str:
    """Stable sha256 of a JSON-serialisable configuration."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def manifest_path(dataset: Path) -> Path:
    """Where the manifest of a dataset (file or directory) lives."""
    dataset = Path(dataset)
    if dataset.is_dir():
        return dataset / "manifest.json"
    return dataset.with_name(dataset.name + ".manifest.json")


def write_manifest(
    dataset: Path,
    *,
    rows: int | None,
    inputs: Iterable[str | Path] = (),
    config: Any = None,
    schema_version: int = SCHEMA_VERSION,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write the small manifest every lake dataset carries (schema version, rows, inputs, config hash)."""
    doc = {
        "dataset": Path(dataset).name,
        "schema_version": schema_version,
        "rows": rows,
        "inputs": [str(p) for p in inputs],
        "config_sha256": config_hash(config) if config is not None else None,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if extra:
        doc.update(extra)
    path = manifest_path(dataset)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str))
    os.replace(tmp, path)
    return path


def read_manifest(dataset: Path) -> dict[str, Any]:
    """Read a dataset's manifest; a clear error if it has none."""
    path = manifest_path(dataset)
    if not path.exists():
        raise FileNotFoundError(
            f"{dataset}: no manifest at {path}; was it written by a Refinery stage?"
        )
    return json.loads(path.read_text())


def write_parquet(table, path: Path, **manifest_kwargs: Any) -> Path:
    """Write a pyarrow Table atomically and its manifest beside it."""
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    write_manifest(path, rows=table.num_rows, **manifest_kwargs)
    return path
