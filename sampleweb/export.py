"""The labels as an Arrow table, and writing the whole sample web to a directory of files."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .evals import write_eval_set
from .model import MARKER, SampleWeb

IMAGE = pa.struct(
    [
        ("src", pa.string()),
        ("alt", pa.string()),
        ("alt_matches", pa.bool_()),
        ("scene", pa.string()),
        ("domain", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("kind", pa.string()),
        ("copy_of", pa.string()),
        ("expect_drop", pa.string()),
    ]
)
TABLE = pa.struct([("header", pa.list_(pa.string())), ("rows", pa.int32()), ("cols", pa.int32())])
TYPED_VALUE = pa.struct([("type", pa.string()), ("value", pa.string())])
SCHEMA = pa.schema(
    [
        ("site", pa.string()),
        ("path", pa.string()),
        ("url", pa.string()),
        ("status", pa.int32()),
        ("content_type", pa.string()),
        ("lang", pa.string()),
        ("page_type", pa.string()),
        ("topic", pa.string()),
        ("quality", pa.string()),
        ("is_reference", pa.bool_()),
        ("is_content", pa.bool_()),
        ("dup_cluster", pa.string()),
        ("title", pa.string()),
        ("main_text", pa.string()),
        ("js_only_text", pa.list_(pa.string())),
        ("js_mechanism", pa.string()),
        ("resources", pa.list_(pa.string())),
        ("expect_crawl_allowed", pa.bool_()),
        ("expect_training_allowed", pa.bool_()),
        ("noindex", pa.bool_()),
        ("nofollow", pa.bool_()),
        ("noai", pa.bool_()),
        ("noimageai", pa.bool_()),
        ("images", pa.list_(IMAGE)),
        ("tables", pa.list_(TABLE)),
        ("pii", pa.list_(TYPED_VALUE)),
        ("pii_decoys", pa.list_(TYPED_VALUE)),
        ("redirect_to", pa.string()),
    ]
)


def default_base_url(site: str) -> str:
    """Base URL used when the web is not being served (the reserved .test TLD)."""
    return f"http://{site}.sampleweb.test"


def labels_table(web: SampleWeb, base_url_for: Callable[[str], str] | None = None) -> pa.Table:
    """One row per page (content or not; filter on is_content) with its ground-truth labels."""
    base = base_url_for or default_base_url
    rows = []
    for (site, path), page in web.pages.items():
        lab = page.labels
        row = {k: lab[k] for k in SCHEMA.names if k in lab}
        redirect = lab["redirect_to"]
        if redirect:
            redirect = MARKER.sub(
                lambda m: base(m.group(1).decode()).encode(), redirect.encode()
            ).decode()
        row.update(
            site=site,
            path=path,
            url=base(site) + path,
            status=page.status,
            content_type=page.content_type,
            redirect_to=redirect,
        )
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _file_path(root: Path, site: str, path: str) -> Path:
    """Map a URL path to a file under root/site/<site>/ (directories get index.html, queries are kept safely)."""
    rel = path.lstrip("/")
    if not rel or rel.endswith("/"):
        rel += "index.html"
    rel = re.sub(r"[?&=]", "_", rel)
    target = (root / "site" / site / rel).resolve()
    if not str(target).startswith(str((root / "site" / site).resolve())):
        raise ValueError(f"page path {path!r} of {site} escapes the output directory")
    return target


def write_to_lake(
    web: SampleWeb, out_dir: str | Path, *, base_url_for: Callable[[str], str] | None = None
) -> dict:
    """Write every page's body, labels.parquet, sites.json and the benchmark that leaked into the
    web (evals/sampleweb-reading.jsonl, `sampleweb.evals`) under out_dir; return a summary."""
    root = Path(out_dir)
    base = base_url_for or default_base_url
    root.mkdir(parents=True, exist_ok=True)
    for (site, path), page in web.pages.items():
        target = _file_path(root, site, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(MARKER.sub(lambda m: base(m.group(1).decode()).encode(), page.body))
    table = labels_table(web, base)
    pq.write_table(table, root / "labels.parquet")
    sites = [dict(s.to_dict(), base_url=base(s.name)) for s in web.sites]
    (root / "sites.json").write_text(
        json.dumps({"seed": web.seed, "sites": sites}, indent=2, ensure_ascii=False)
    )
    evals = write_eval_set(web, root)
    content = web.content_pages()
    return {
        "sites": len(web.sites),
        "pages": len(web.pages),
        "content_pages": len(content),
        "images": sum(1 for p in web.pages.values() if p.content_type.startswith("image/")),
        "languages": sorted({p.labels["lang"] for p in content}),
        "labels": str(root / "labels.parquet"),
        "evals": str(evals),
        "out_dir": str(root),
    }
