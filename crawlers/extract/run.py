"""The extract stage's driver: a crawl (pages.parquet + WARC) in, documents, image_refs, tables,
interleaved and rejects out (pages in = documents + rejects), rendering first where asked."""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import lake
from crawlers.render.run import RENDERED_FILE, run_render

OUTPUT_NAMES = ("documents", "image_refs", "tables", "interleaved", "rejects")


@dataclass(frozen=True)
class ExtractResult:
    """What `run_extract` returns: pages in, the rows of each output (pages in = documents +
    rejects), how many documents came from a rendered DOM, and the render's own summary."""

    pages: int
    documents: int
    image_refs: int
    tables: int
    interleaved: int
    rejects: int
    rendered: int
    rendered_fraction: float
    rejects_by_reason: dict[str, int]
    seconds: float
    docs_per_s: float
    render: dict[str, Any] | None  # `run_render`'s summary; None when reusing a render or off
    out_dir: str


def _merge_parts(
    parts_dir: Path, name: str, out_path: Path, inputs: list[str], config: dict
) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from common.schemas import OUTPUTS, SORT_KEYS

    files = sorted((parts_dir / name).glob("part*.parquet"))
    tables = [pq.read_table(f, schema=OUTPUTS[name]) for f in files]
    table = pa.concat_tables(tables) if tables else OUTPUTS[name].empty_table()
    table = table.sort_by(SORT_KEYS[name])  # deterministic regardless of worker scheduling
    lake.write_parquet(table, out_path, inputs=inputs, config=config)
    return table.num_rows


def clear_previous_outputs(out_dir: Path) -> None:
    """Before the merge writes its first output: remove the previous run's five outputs, their
    manifests first, and the temporary files of writes a kill cut short. Killed while it merges,
    the out dir then holds only this run's outputs (each without its manifest until it is
    whole), never an old manifest over the previous run's rows beside new ones, nor an old
    image_refs.parquet beside new documents that a reader would take as one run's
    (crawlers/images/fetch.py load_refs). The parts (`_parts/`) are this run's and stay."""
    from common.manifest import manifest_path

    paths = [out_dir / f"{name}.parquet" for name in OUTPUT_NAMES]
    for path in paths:
        manifest_path(path).unlink(missing_ok=True)
    for path in paths:
        path.unlink(missing_ok=True)
        path.with_name(path.name + ".tmp").unlink(missing_ok=True)


def run_extract(
    crawl_dir: str | Path,
    out_dir: str | Path,
    render_mode: str = "auto",
    *,
    rendered_dir: str | Path | None = None,
    execute: Callable[..., None],
    favor: str = "balanced",
    teacher: dict | None = None,
    **render_kwargs: Any,
) -> ExtractResult:
    """Extract documents from a crawl with `execute` (the extract steps over the crawl's shards,
    writing parts: the stage passes Beam's `pipelines.beam.extract.run_pipeline`); render first
    (into out_dir/rendered) unless given. Outputs are sorted, so any executor writes the same."""
    import pyarrow.parquet as pq

    from crawlers.extract.crawl_io import count_pages, crawl_shards

    crawl_dir, out_dir = Path(crawl_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    render_summary = None
    rendered_path = None
    if rendered_dir is not None:
        rendered_path = Path(rendered_dir) / RENDERED_FILE
        if not rendered_path.exists():
            raise FileNotFoundError(
                f"{rendered_path}: no render output; run the render stage first"
            )
    elif render_mode != "never":
        render_summary = run_render(crawl_dir, out_dir / "rendered", render_mode, **render_kwargs)
        rendered_path = Path(render_summary["path"])
    pages_in = count_pages(crawl_dir)
    shards = crawl_shards(crawl_dir)
    parts = out_dir / "_parts"
    shutil.rmtree(parts, ignore_errors=True)
    start = time.monotonic()
    config = {"favor": favor}
    execute(
        shards,
        parts,
        rendered_path=str(rendered_path) if rendered_path else None,
        config=config,
        teacher=teacher,
    )
    elapsed = time.monotonic() - start
    inputs = [str(crawl_dir)] + ([str(rendered_path)] if rendered_path else [])
    settings = {"render_mode": render_mode, "favor": favor, "llm": bool(teacher)}
    clear_previous_outputs(out_dir)
    counts = {  # documents first: a reader of image_refs checks it against documents' manifest
        name: _merge_parts(parts, name, out_dir / f"{name}.parquet", inputs, settings)
        for name in OUTPUT_NAMES
    }
    shutil.rmtree(parts, ignore_errors=True)
    if counts["documents"] + counts["rejects"] != pages_in:
        raise RuntimeError(
            f"extraction lost rows: {pages_in} pages in, {counts['documents']} documents + "
            f"{counts['rejects']} rejects out; see {out_dir}"
        )
    docs = pq.read_table(out_dir / "documents.parquet", columns=["rendered"]).column("rendered")
    rejects = pq.read_table(out_dir / "rejects.parquet", columns=["reason"]).column("reason")
    n_rendered = sum(1 for v in docs.to_pylist() if v)
    return ExtractResult(
        pages=pages_in,
        **counts,
        rendered=n_rendered,
        rendered_fraction=round(n_rendered / counts["documents"], 4)
        if counts["documents"]
        else 0.0,
        rejects_by_reason=dict(sorted(Counter(rejects.to_pylist()).items())),
        seconds=round(elapsed, 2),
        docs_per_s=round(counts["documents"] / elapsed, 2) if elapsed > 0 else 0.0,
        render=render_summary,
        out_dir=str(out_dir),
    )
