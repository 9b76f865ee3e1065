"""Lake dataset manifests: the small JSON file every dataset carries beside it.

`<name>.manifest.json` beside a file, `manifest.json` inside a directory that has none of its
own: schema version, rows, the inputs it was made from, a hash of its configuration, when.
Domain code (a mixture build) and the pipelines layer write and read them through this module.
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


def config_hash(config: Any) -> str:
    """Stable sha256 of a JSON-serialisable configuration."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def lake_fields(
    dataset: Path, *, rows: int | None, inputs: Iterable[str | Path] = (), config_sha256: str | None
) -> dict[str, Any]:
    """The fields every lake manifest has (a mixture's manifest.json adds them to its own)."""
    return {
        "dataset": Path(dataset).name,
        "schema_version": SCHEMA_VERSION,
        "rows": rows,
        "inputs": [str(p) for p in inputs],
        "config_sha256": config_sha256,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


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
    doc = lake_fields(
        dataset,
        rows=rows,
        inputs=inputs,
        config_sha256=config_hash(config) if config is not None else None,
    )
    doc["schema_version"] = schema_version
    if extra:
        doc.update(extra)
    path = manifest_path(dataset)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str))
    os.replace(tmp, path)
    return path


class Manifest(dict):
    """A manifest's JSON object; a missing field is a KeyError naming the file and the fix (a
    bare `KeyError: 'buckets'` would leave the user to guess which file lacks it)."""

    def __init__(self, data: Mapping[str, Any], path: Path, fix: str) -> None:
        super().__init__(data)
        self.path, self.fix = path, fix

    def __missing__(self, key: str) -> Any:
        raise KeyError(f"{self.path}: no {key!r} field; {self.fix}")


def read_manifest(
    dataset: str | Path, fix: str = "was it written by a Refinery stage?"
) -> dict[str, Any]:
    """Read a dataset's manifest (a JSON object); a missing, unreadable or malformed one is an
    error naming the path and the fix, and so is a field the caller needs that it lacks."""
    path = manifest_path(Path(dataset))
    if not path.exists():
        raise FileNotFoundError(f"{dataset}: no manifest at {path}; {fix}")
    try:
        doc = json.loads(path.read_bytes())
    except ValueError as exc:  # not JSON, or not UTF-8
        raise ValueError(f"{path}: not a JSON manifest ({exc}); {fix}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: a manifest is a JSON object, this is a {_json_kind(doc)}; {fix}")
    return Manifest(doc, path, fix)


def _json_kind(value: Any) -> str:
    kinds = {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def write_parquet(table, path: Path, **manifest_kwargs: Any) -> Path:
    """Write a pyarrow Table atomically and its manifest beside it."""
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # The old manifest goes first and the new one comes last: killed in between, the dataset has
    # no manifest (not valid) rather than an old manifest over new rows.
    manifest_path(path).unlink(missing_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    write_manifest(path, rows=table.num_rows, **manifest_kwargs)
    return path
