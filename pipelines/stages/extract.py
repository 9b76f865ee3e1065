"""Stage entry points: `run_render` (headless rendering) and `run_extract` (Beam extraction)."""

from __future__ import annotations

import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pipelines import lake

RENDERED_FILE = "rendered.parquet"
OUTPUT_NAMES = ("documents", "image_refs", "tables", "interleaved", "rejects")


def _rendered_schema():
    import pyarrow as pa

    blocked = pa.list_(pa.struct([("url", pa.string()), ("reason", pa.string())]))
    subresources = pa.list_(
        pa.struct(
            [
                ("url", pa.string()),
                ("status", pa.int32()),
                ("resource_type", pa.string()),
                ("robots_training", pa.string()),
            ]
        )
    )
    return pa.schema(
        [
            ("url", pa.string()),
            ("rendered", pa.bool_()),
            ("render_reason", pa.string()),
            ("html", pa.string()),
            ("error", pa.string()),
            ("render_ms", pa.int32()),
            ("blocked_requests", blocked),
            ("media_blocked", pa.int32()),
            ("interactions", pa.int32()),
            ("subresources", subresources),
            ("warc_file", pa.string()),
            ("warc_offset", pa.int64()),
            ("warc_length", pa.int64()),
        ]
    )


def _crawl_settings(crawl_dir: str | Path) -> dict[str, Any]:
    """The crawl's configuration (its frontier's `config`), read-only; {} when there is none."""
    import json
    import sqlite3

    from crawlers.extract.warc import find_pages_files

    for pages in find_pages_files(crawl_dir)[:1]:
        db = pages.parent / "frontier.sqlite"
        if not db.exists():
            return {}
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                row = con.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
            finally:
                con.close()
            return dict(json.loads(row[0])) if row else {}
        except (sqlite3.Error, ValueError, TypeError):
            return {}  # not a crawl this version wrote: the defaults apply
    return {}


def run_render(
    crawl_dir: str | Path,
    out_dir: str | Path,
    mode: str = "auto",
    *,
    pages_in_flight: int = 4,
    page_timeout_s: float = 20.0,
    chromium: str | None = None,
    block_media: bool = True,
    robots_token: str | None = None,
    training_token: str | None = None,
    user_agent: str | None = None,
    allow_private_networks: bool = False,
    delay: float | None = None,
    sandbox: str = "auto",
    archive: bool = True,
) -> dict[str, Any]:
    """Render the crawl's pages that need it; write out_dir/rendered.parquet and return a summary.

    Sub-requests go through the crawl's downloader (robots for both tokens, SSRF guard,
    politeness); with `archive`, every response a page used is written to
    out_dir/render-*.warc.gz and located by the warc_* columns. Tokens, User-Agent and delay
    left as None are the crawl's own (from its frontier.sqlite), else the crawl defaults.
    Private networks are never inherited: pass `allow_private_networks` to lift the guard.
    """
    import pyarrow as pa

    from crawlers.render import RenderConfig
    from crawlers.render.crawl import render_crawl

    out_dir = Path(out_dir)
    crawl_cfg = _crawl_settings(crawl_dir)
    robots_token = robots_token or crawl_cfg.get("agent") or "RefineryBot"
    training_token = training_token or crawl_cfg.get("training_agent") or "RefineryBot-Extended"
    if user_agent is None and robots_token == crawl_cfg.get("agent"):
        user_agent = crawl_cfg.get("user_agent")  # the template, {agent} filled in later
    if delay is None:
        delay = float(crawl_cfg.get("delay", 1.0))
    config = RenderConfig(
        chromium=chromium,
        pages_in_flight=pages_in_flight,
        page_timeout_s=page_timeout_s,
        block_media=block_media,
        robots_token=robots_token,
        training_token=training_token,
        user_agent=user_agent,
        allow_private_networks=allow_private_networks,
        delay=delay,
        sandbox=sandbox,
        archive_dir=out_dir if archive else None,
    )
    start = time.monotonic()
    rows = render_crawl(crawl_dir, mode, config)
    elapsed = time.monotonic() - start
    path = out_dir / RENDERED_FILE
    settings = {
        "mode": mode,
        "pages_in_flight": pages_in_flight,
        "page_timeout_s": page_timeout_s,
        "block_media": block_media,
        "robots_token": robots_token,
        "training_token": training_token,
        "user_agent": config.crawl_config().user_agent_header(),
        "allow_private_networks": allow_private_networks,
        "delay": delay,
        "sandbox": sandbox,
        "archive": archive,
    }
    lake.write_parquet(
        pa.Table.from_pylist(rows, schema=_rendered_schema()),
        path,
        inputs=[str(crawl_dir)],
        config=settings,
    )
    rendered = [r for r in rows if r["rendered"]]
    return {
        "path": str(path),
        "candidates": len(rows),
        "rendered": len(rendered),
        "render_errors": sum(1 for r in rendered if r["error"]),
        "blocked_requests": sum(len(r["blocked_requests"]) for r in rendered),
        "subresources": sum(len(r["subresources"]) for r in rendered),
        "seconds": round(elapsed, 2),
        "pages_per_s": round(len(rendered) / elapsed, 3) if rendered and elapsed > 0 else 0.0,
    }


def _merge_parts(
    parts_dir: Path, name: str, out_path: Path, inputs: list[str], config: dict
) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from crawlers.extract.schema import OUTPUTS, SORT_KEYS

    files = sorted((parts_dir / name).glob("part*.parquet"))
    tables = [pq.read_table(f, schema=OUTPUTS[name]) for f in files]
    table = pa.concat_tables(tables) if tables else OUTPUTS[name].empty_table()
    table = table.sort_by(SORT_KEYS[name])  # deterministic regardless of worker scheduling
    lake.write_parquet(table, out_path, inputs=inputs, config=config)
    return table.num_rows


def run_extract(
    crawl_dir: str | Path,
    out_dir: str | Path,
    render_mode: str = "auto",
    *,
    rendered_dir: str | Path | None = None,
    pipeline_args: list[str] | None = None,
    favor: str = "balanced",
    teacher: dict | None = None,
    **render_kwargs: Any,
) -> dict[str, Any]:
    """Extract documents from a crawl with Beam; render first (into out_dir/rendered) unless given."""
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
    from pipelines.beam.extract import run_pipeline

    config = {"favor": favor}
    run_pipeline(
        shards,
        parts,
        rendered_path=str(rendered_path) if rendered_path else None,
        config=config,
        teacher=teacher,
        pipeline_args=pipeline_args,
    )
    elapsed = time.monotonic() - start
    inputs = [str(crawl_dir)] + ([str(rendered_path)] if rendered_path else [])
    settings = {"render_mode": render_mode, "favor": favor, "llm": bool(teacher)}
    counts = {
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
    return {
        "pages": pages_in,
        **counts,
        "rendered": n_rendered,
        "rendered_fraction": round(n_rendered / counts["documents"], 4)
        if counts["documents"]
        else 0.0,
        "rejects_by_reason": dict(sorted(Counter(rejects.to_pylist()).items())),
        "seconds": round(elapsed, 2),
        "docs_per_s": round(counts["documents"] / elapsed, 2) if elapsed > 0 else 0.0,
        "render": render_summary,
        "out_dir": str(out_dir),
    }
