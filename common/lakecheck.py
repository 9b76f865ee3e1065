"""Is a lake whole? Every dataset against its manifest, after a crash or a copy.

`verify_lake(root)` walks every manifest under the lake (training runs aside: they have their own
resumable checkpoints) and checks the dataset it describes:

- a Parquet file exists, reads completely (every row group decodes), has the manifest's row
  count, and holds no duplicate rows (no repeated key -- `id`, or the dataset's own in `KEYS` --
  and no two identical rows at all);
- a directory with `shards` (a mixture) has every shard and eval file, with the manifest's
  sha256 and sequence count; every shard entry has a path and a sha256, and every path stays
  inside the mixture's directory;
- a directory of WARC files decompresses to its end, file by file;
- any other file named by a manifest exists.

It returns the problems as sentences naming the file and what is wrong (empty: the lake is
whole), and `leftovers(root)` lists temporary files a killed writer left behind (never read as
data: writers write `<name>.tmp` and rename it into place, and write the manifest last).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from pathlib import Path

SKIP_DIRS = {"runs", "_handles"}
# The key of a dataset's rows where it is not `id` alone (one row per image and candidate domain;
# crawled pages by URL).
KEYS = {
    "domain_images.parquet": ("id", "domain"),
    "pages.parquet": ("url",),
    "captions.parquet": ("pair_id", "level"),
}
TMP_MARKERS = (".tmp", ".partial", ".incomplete")


def _manifests(root: Path):
    for path in sorted(root.rglob("*manifest.json")):
        rel = path.relative_to(root)
        if rel.parts and rel.parts[0] in SKIP_DIRS:
            continue
        if path.name == "manifest.json" or path.name.endswith(".manifest.json"):
            yield path


def _dataset_of(manifest: Path) -> Path:
    if manifest.name == "manifest.json":
        return manifest.parent
    return manifest.with_name(manifest.name[: -len(".manifest.json")])


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _check_parquet(path: Path, rows: int | None) -> list[str]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - any decode failure is the finding
        return [f"{path}: does not read as Parquet ({type(exc).__name__}: {exc})"]
    problems = []
    if rows is not None and table.num_rows != rows:
        problems.append(f"{path}: {table.num_rows} rows, its manifest says {rows}")
    key = KEYS.get(path.name, ("id",))
    if table.num_rows and all(k in table.column_names for k in key):
        distinct = table.group_by(list(key)).aggregate([]).num_rows
        if distinct != table.num_rows:
            dup = table.num_rows - distinct
            problems.append(f"{path}: {dup} rows repeat a key {'+'.join(key)} already present")
    seen: set[bytes] = set()
    for row in table.to_pylist():
        key = hashlib.sha1(json.dumps(row, sort_keys=True, default=repr).encode()).digest()
        if key in seen:
            problems.append(f"{path}: duplicate rows (e.g. {str(row)[:120]})")
            break
        seen.add(key)
    return problems


def _check_npy(path: Path, sha: str | None, sequences: int | None) -> list[str]:
    import numpy as np

    if not path.exists():
        return [f"{path}: named by the mixture manifest but missing"]
    if sha and _sha256(path) != sha:
        return [f"{path}: sha256 differs from the mixture manifest's"]
    if sequences is not None:
        try:
            arr = np.load(path, mmap_mode="r")
        except Exception as exc:  # noqa: BLE001
            return [f"{path}: does not load as .npy ({exc})"]
        if arr.shape[0] != sequences:
            return [f"{path}: {arr.shape[0]} sequences, the manifest says {sequences}"]
    return []


def _inside(root: Path, rel: str) -> Path | None:
    """`root / rel` when the manifest's path stays inside `root` (no `..` out of it, not
    absolute), else None. Links the lake's owner made inside the mixture are followed."""
    path = root / rel
    base = os.path.normpath(os.path.abspath(root))
    return path if os.path.normpath(os.path.abspath(path)).startswith(base + os.sep) else None


def _check_mixture(root: Path, doc: dict, manifest: Path) -> list[str]:
    shards = doc["shards"]
    if not isinstance(shards, list):
        return [f"{manifest}: shards is not a list of shard entries; rebuild the mixture"]
    problems = []
    for i, entry in enumerate(shards):
        where = f"{manifest}: shards[{i}]"
        if not isinstance(entry, dict) or not entry.get("path"):
            problems.append(f"{where} has no path; rebuild the mixture")
            continue
        if not entry.get("sha256"):  # nothing to tell a changed shard from the one written
            problems.append(f"{where} ({entry['path']}) has no sha256; rebuild the mixture")
        problems += _check_entry(root, entry, where)
    evals = doc.get("eval", [])
    if isinstance(evals, dict):
        evals = evals.get("files", evals.get("sets", []))
    for i, entry in enumerate(evals if isinstance(evals, list) else []):
        if isinstance(entry, dict) and "path" in entry:
            problems += _check_entry(root, entry, f"{manifest}: eval[{i}]")
    return problems


def _check_entry(root: Path, entry: dict, where: str) -> list[str]:
    """One shard or eval file of a mixture: inside the mixture's directory, then as .npy."""
    path = _inside(root, str(entry["path"]))
    if path is None:
        return [
            f"{where}: path {entry['path']!r} is outside the mixture {root}; a mixture names "
            "only its own files (rebuild it)"
        ]
    return _check_npy(path, entry.get("sha256"), entry.get("num_sequences"))


def _check_warc_dir(root: Path) -> list[str]:
    problems = []
    for path in sorted(root.glob("*.warc.gz")):
        try:
            with gzip.open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
        except (OSError, EOFError, zlib.error) as exc:
            problems.append(f"{path}: truncated or corrupt gzip ({exc})")
    return problems


def verify_lake(root: str | Path) -> list[str]:
    """Every problem found between the lake's datasets and their manifests (empty: whole)."""
    root = Path(root)
    problems: list[str] = []
    for manifest in _manifests(root):
        try:
            doc = json.loads(manifest.read_bytes())
        except (OSError, ValueError) as exc:
            problems.append(f"{manifest}: unreadable manifest ({exc})")
            continue
        if not isinstance(doc, dict):
            problems.append(
                f"{manifest}: a manifest is a JSON object, this is a {type(doc).__name__}; "
                "re-run the stage that writes the dataset"
            )
            continue
        dataset = _dataset_of(manifest)
        if not dataset.exists():
            problems.append(f"{manifest}: its dataset {dataset} is missing")
        elif dataset.is_dir():
            if "shards" in doc:
                problems += _check_mixture(dataset, doc, manifest)
            elif any(dataset.glob("*.warc.gz")):
                problems += _check_warc_dir(dataset)
        elif dataset.suffix == ".parquet":
            problems += _check_parquet(dataset, doc.get("rows"))
    return problems


def leftovers(root: str | Path) -> list[Path]:
    """Temporary files a killed writer left (never read as data)."""
    root = Path(root)
    return sorted(
        p for p in root.rglob("*") if p.is_file() and any(m in p.name for m in TMP_MARKERS)
    )
