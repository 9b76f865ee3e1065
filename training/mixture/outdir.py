"""The directory a mixture build writes: which one it may take, its clean start and its finish.

A build empties a mixture directory of the previous build's outputs (shards, eval sets, the image
store), so it takes OUT only when nothing else lives there: OUT is new or empty, or a mixture
directory already (its manifest.json is a mixture's, or it holds `IN_PROGRESS`, the marker a build
writes before anything else and removes after its manifest), and neither the lake root nor an
input of the build (a source, pairs or tokenizer file) lies in it.

A build then writes the marker, removes the old manifest.json and every output of a previous build
before writing any of its own: a build killed half-way leaves a directory without a manifest
(`training.loader` refuses it, naming the fix) that the next build takes again. The manifest
comes last and the marker goes after it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from training.mixture.spec import MixtureSpec, SpecError, TokenizerTrain, resolve_path

MANIFEST = "manifest.json"
IN_PROGRESS = "build-in-progress.json"
# What a previous build left that this one replaces (the tokenizer is overwritten in place).
STALE_DIRS = ("images", "_corpus")
STALE_FILES = ("manifest.json.tmp", "images.parquet", "rejects.parquet", "report.png")
ARRAY_DIRS = ("shards", "eval")


def is_mixture_dir(path: Path) -> bool:
    """Whether `path` is a mixture directory: a build's marker, or a mixture's manifest.json."""
    path = Path(path)
    if (path / IN_PROGRESS).is_file():
        return True
    try:
        doc = json.loads((path / MANIFEST).read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and "spec_sha256" in doc and isinstance(doc.get("shards"), list)


def build_inputs(
    spec: MixtureSpec, spec_dir: Path, lake_root: Path | None
) -> list[tuple[str, Path]]:
    """(spec field, file) of every file a build reads: sources, pairs, the tokenizer or its
    training sources."""
    import glob

    from training.mixture.sources import _pairs_files, source_files

    out: list[tuple[str, Path]] = []
    for name, bucket in spec.buckets.items():
        for i, src in enumerate(bucket.sources):
            field = f"buckets.{name}.sources[{i}]"
            out += [
                (f"{field}.path", Path(f)) for f in source_files(spec, name, i, spec_dir, lake_root)
            ]
            out += [
                (f"{field}.pairs", Path(f)) for f in _pairs_files(src.pairs, spec_dir, lake_root)
            ]
    if isinstance(spec.tokenizer, TokenizerTrain):
        for p in spec.tokenizer.train.sources or []:
            pattern = str(resolve_path(p, spec_dir, lake_root))
            out += [
                ("tokenizer.train.sources", Path(f))
                for f in sorted(glob.glob(pattern, recursive=True))
            ]
    else:
        out.append(("tokenizer", resolve_path(spec.tokenizer, spec_dir, lake_root)))
    return out


def check_out_dir(
    spec: MixtureSpec, spec_dir: Path, out_dir: Path, lake_root: Path | None = None
) -> None:
    """SpecError (one line naming OUT and the fix) when a build may not take `out_dir`."""
    from common.lake import lake_root as default_lake_root

    out = Path(out_dir).resolve()
    root = Path(lake_root or default_lake_root()).resolve()
    own = f"give the mixture a directory of its own, e.g. {root / 'mixtures' / spec.name}"
    if out == root or out in root.parents:
        raise SpecError(
            f"{out_dir}: is (or holds) the lake root {root}; a build replaces the shards/, eval/ "
            f"and images/ of its directory; {own}"
        )
    for field, f in build_inputs(spec, spec_dir, lake_root):
        full = f.resolve()
        if field == "tokenizer" and full == out / "tokenizer.json":
            continue  # the mixture's own tokenizer, rebuilt in place: it is not copied
        if full == out or out in full.parents:
            raise SpecError(
                f"{out_dir}: holds {f}, an input of the build ({field}); a build replaces the "
                f"shards/, eval/ and images/ of its directory; {own}"
            )
    if out.exists() and not out.is_dir():
        raise SpecError(f"{out_dir}: is a file, not a directory; {own}")
    if out.is_dir() and any(out.iterdir()) and not is_mixture_dir(out):
        names = ", ".join(sorted(p.name for p in out.iterdir())[:5])
        raise SpecError(
            f"{out_dir}: not empty ({names}) and not a mixture directory (no mixture "
            f"manifest.json, no {IN_PROGRESS}); a build replaces the shards/, eval/ and images/ "
            f"of its directory; {own}, or empty this one"
        )


def start_build(
    spec: MixtureSpec, spec_dir: Path, out_dir: Path, lake_root: Path | None = None
) -> None:
    """Take `out_dir` for a build (`check_out_dir`), mark it in progress and remove the previous
    build's manifest and outputs, before anything of the new build is written."""
    check_out_dir(spec, spec_dir, out_dir, lake_root)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    marker = out_dir / IN_PROGRESS
    marker.write_text(json.dumps({"name": spec.name, "spec_sha256": spec.sha256()}) + "\n")
    (out_dir / MANIFEST).unlink(missing_ok=True)
    for name in STALE_FILES:
        (out_dir / name).unlink(missing_ok=True)
    for name in STALE_DIRS:
        shutil.rmtree(out_dir / name, ignore_errors=True)
    for name in ARRAY_DIRS:
        for f in [*(out_dir / name).glob("*.npy"), *(out_dir / name).glob("*.npz")]:
            f.unlink()


def finish_build(out_dir: Path) -> None:
    """The build's manifest is written: the directory is no longer in progress."""
    (Path(out_dir) / IN_PROGRESS).unlink(missing_ok=True)
