"""The lake: one root directory holding every stage's output as plain files.

Default root is ./lake, overridden by REFINERY_HOME. Every dataset (a Parquet file, a WARC
directory, a shard directory, a model) gets a small JSON manifest beside it:
`<name>.manifest.json` for a file, `manifest.json` inside a directory that has none of its own.
"""

from __future__ import annotations

from pathlib import Path

from common.manifest import (  # noqa: F401  (the lake's manifest API, re-exported)
    SCHEMA_VERSION,
    config_hash,
    manifest_path,
    read_manifest,
    write_manifest,
    write_parquet,
)

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
    "image_pairs": "images/pairs",
    "interleaved_documents": "images/interleaved/interleaved.parquet",
    "clip_model": "models/clip",
    "domain_images": "images/domain/domain_images.parquet",
    "synthetic_charts": "synth/charts/charts.parquet",
    "table_pairs": "synth/tables/table_pairs.parquet",
    "domain_qa": "synth/domain_qa/domain_qa.parquet",
    "captioner_model": "models/captioner",
    "synthetic_captions": "synth/captions/captions.parquet",
    "text_rich_images": "images/ocr/pairs.parquet",
    # mixtures: the default (tiny) specs' names; training runs: the newest finished run
    "pretrain_mixture": "mixtures/tiny-pretrain",
    "cpt_mixture": "mixtures/tiny-cpt",
    "long_context_mixture": "mixtures/tiny-long-context",
    "multimodal_mixture": "mixtures/tiny-multimodal",
    "pretrained_model": "runs/pretrain",
    "cpt_model": "runs/cpt",
    "multimodal_model": "runs/multimodal",
    "long_context_model": "runs/long-context",
}


def lake_root() -> Path:
    """Return the lake root: $REFINERY_HOME if set, else ./lake. A file where the lake's
    directory (or one above it) should be is an error naming REFINERY_HOME and the fix."""
    import os

    home = os.environ.get("REFINERY_HOME")
    root = Path(home or "lake").resolve()
    try:  # the lake's manifests and Parquet files name their paths in UTF-8
        str(root).encode("utf-8")
    except UnicodeEncodeError:
        where = (
            f"REFINERY_HOME={_escaped(home)}" if home else f"the lake root {_escaped(str(root))}"
        )
        raise ValueError(f"{where}: not a UTF-8 path; rename it") from None
    blocker = file_in_the_way(root)
    if blocker is not None:
        where = f"REFINERY_HOME={home}" if home else f"the lake root {root} (no REFINERY_HOME)"
        raise NotADirectoryError(
            f"{where}: {blocker} is a file, not a directory; set REFINERY_HOME to a directory "
            "for the lake (created if missing), e.g. REFINERY_HOME=$PWD/lake"
        )
    return root


def file_in_the_way(path: Path) -> Path | None:
    """The file (not a directory) at `path` or at the nearest existing directory above it, which
    would stop `path` being made as a directory; None when there is none."""
    blocker = next((q for q in (path, *path.absolute().parents) if q.exists()), None)
    return blocker if blocker is not None and not blocker.is_dir() else None


def check_directory(path: Path, flag: str) -> None:
    """Refuse a file where the output directory `path` (or one above it) is to be, naming `flag`
    (e.g. `--out`, `--lake`), before anything is written."""
    blocker = file_in_the_way(path)
    if blocker is not None:
        what = "is a file" if blocker == path else f"{blocker} is a file"
        raise NotADirectoryError(f"{flag} {path}: {what}; give a directory")


def check_writable(path: Path, flag: str) -> None:
    """Refuse an output directory `path` that cannot be written (a read-only file system, no
    permission on it or on the nearest existing directory above it), naming `flag`, before
    anything is written."""
    import os

    existing = next((q for q in (path, *path.absolute().parents) if q.exists()), None)
    if existing is None or not existing.is_dir() or os.access(existing, os.W_OK):
        return
    readonly = os.statvfs(existing).f_flag & os.ST_RDONLY
    why = "a read-only file system" if readonly else "no permission to write there"
    where = "it" if existing == path else str(existing)
    raise PermissionError(
        f"{flag} {path}: {where} is not writable ({why}); choose a writable directory"
    )


def _escaped(text: str) -> str:
    """`text` with the bytes of a non-UTF-8 file name written as \\xff escapes."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def stage_dir(stage: str, root: Path | None = None) -> Path:
    """Return (and create) the standard directory of a stage inside the lake."""
    if stage not in STAGE_DIRS:
        raise KeyError(f"unknown lake stage {stage!r}; known: {', '.join(sorted(STAGE_DIRS))}")
    path = (root or lake_root()) / STAGE_DIRS[stage]
    path.mkdir(parents=True, exist_ok=True)
    return path
