"""Common Crawl WET files -> documents.parquet rows (the writer `import docs` shares).

WET `conversion` records hold the text Common Crawl extracted: there is no HTML, so no
extraction; `source` says `import:wet` and `extraction_method` says `cc-wet`. Every record read
is a document or a recorded skip (`warcinfo`, `missing_target_uri`, `empty_text`,
`duplicate_payload`, `malformed_record`, ...).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from crawlers.imports.run import HOSTS_SCHEMA, PROVENANCE, _table, _write, expand
from crawlers.imports.warc import open_source

EXTRA_COLUMNS = [
    ("source", pa.string()),
    ("license", pa.string()),
    *PROVENANCE,
    ("consent_source", pa.string()),
    ("robots_fetched_at", pa.string()),
    ("robots_sha256", pa.string()),
]
SKIPS_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("skip_reason", pa.string()),
        ("skip_detail", pa.string()),
        *PROVENANCE,
    ]
)
MAX_TEXT_BYTES = 8_000_000


def documents_schema() -> pa.Schema:
    from common.schemas import DOCUMENTS

    names = set(DOCUMENTS.names)
    return pa.schema([*DOCUMENTS, *[pa.field(n, t) for n, t in EXTRA_COLUMNS if n not in names]])


def _doc_id(url: str) -> str:
    from crawlers.extract.page import doc_id

    return doc_id(url)


def scan_wet(source: str) -> tuple[list[dict], list[dict]]:
    """Documents and skips of one WET file."""
    from warcio.archiveiterator import ArchiveIterator

    docs: list[dict] = []
    skips: list[dict] = []
    fh = open_source(source)
    it = ArchiveIterator(fh)
    offset = 0
    try:
        for record in it:
            h = record.rec_headers
            row = {
                "source_file": source,
                "record_type": record.rec_type,
                "warc_record_id": h.get_header("WARC-Record-ID"),
                "capture_time": h.get_header("WARC-Date"),
                "import_mode": "text",
                "url": h.get_header("WARC-Target-URI"),
            }
            raw = record.raw_stream.read(MAX_TEXT_BYTES + 1)
            row["record_offset"] = offset = it.get_record_offset()
            row["record_length"] = it.get_record_length()
            offset += row["record_length"] or 0
            if record.rec_type != "conversion":
                skips.append({**row, "skip_reason": record.rec_type, "skip_detail": "not text"})
                continue
            if not row["url"]:
                skips.append({**row, "skip_reason": "missing_target_uri", "skip_detail": ""})
                continue
            if len(raw) > MAX_TEXT_BYTES:
                skips.append({**row, "skip_reason": "too_large", "skip_detail": "text over 8 MB"})
                continue
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                skips.append({**row, "skip_reason": "empty_text", "skip_detail": ""})
                continue
            docs.append(
                {
                    **row,
                    "id": _doc_id(row["url"]),
                    "host": _doc_host(row["url"]),
                    "text": text,
                    "lang_hint": h.get_header("WARC-Identified-Content-Language"),
                    "extraction_method": "cc-wet",
                    "source": "import:wet",
                    "status": 200,
                    "content_sha256": hashlib.sha256(raw).hexdigest(),
                    "fetched_at": row["capture_time"],
                    "rendered": False,
                }
            )
    except Exception as exc:  # a cut file: what came before stays, the rest is one skip
        skips.append(
            {
                "source_file": source,
                "record_offset": offset,
                "skip_reason": "malformed_record",
                "skip_detail": f"{source}@{offset}: {type(exc).__name__}: {exc}"[:500],
            }
        )
    finally:
        fh.close()
    return docs, skips


def _doc_host(url: str | None) -> str:
    """The host, as extraction's documents.parquet writes it (no port)."""
    from common.inputs import url_host

    return url_host(url)


def _decide_and_write(
    docs: list[dict],
    skips: list[dict],
    out_dir: Path,
    *,
    config: Any,
    offline: bool,
    records: int,
    files: list[str],
    kind: str,
) -> dict[str, Any]:
    from common.manifest import write_manifest
    from crawlers.crawl.config import CrawlConfig
    from crawlers.imports.consent import consent_rows

    cfg = CrawlConfig.from_any(config)
    seen: dict[str, str] = {}
    kept = []
    for d in docs:  # exact repeats: the same text (or the same id) once
        key = d["content_sha256"]
        first = seen.get(key) or seen.get("id:" + d["id"])
        if first:
            reason = "duplicate_payload" if key in seen else "duplicate_id"
            skips.append({**d, "skip_reason": reason, "skip_detail": f"same as {first}"})
            continue
        seen[key] = seen["id:" + d["id"]] = f"{d.get('source_file')}@{d.get('record_offset')}"
        kept.append(d)
    t = time.perf_counter()
    with_url = [d for d in kept if d.get("url")]
    hosts = consent_rows(with_url, config=cfg, offline=offline)
    for d in kept:
        d.setdefault("noai", False)
        d.setdefault("noimageai", False)
    out_dir.mkdir(parents=True, exist_ok=True)
    _write(_table(kept, documents_schema()), out_dir / "documents.parquet")
    _write(_table(skips, SKIPS_SCHEMA), out_dir / "skipped.parquet")
    _write(_table(hosts, HOSTS_SCHEMA), out_dir / "hosts.parquet")
    reasons: dict[str, int] = {}
    for s in skips:
        reasons[s["skip_reason"]] = reasons.get(s["skip_reason"], 0) + 1
    allowed = sum(1 for d in kept if d.get("training_allowed") is True)
    summary = {
        "files": len(files),
        "records": records,
        "documents": len(kept),
        "skipped": len(skips),
        "skipped_by_reason": dict(sorted(reasons.items())),
        "hosts": len(hosts),
        "hosts_unreachable": sum(1 for h in hosts if h["unreachable"]),
        "training_allowed": allowed,
        "training_not_allowed": len(kept) - allowed,
        "offline": offline,
        "consent_seconds": round(time.perf_counter() - t, 3),
    }
    if records != len(kept) + len(skips):
        raise RuntimeError(f"import {kind}: {records} records != {len(kept)} + {len(skips)}")
    conf = {"agent": cfg.agent, "training_agent": cfg.training_agent, "source": kind}
    write_manifest(
        out_dir / "documents.parquet",
        rows=len(kept),
        inputs=files[:50],
        config=conf,
        extra={"summary": summary, "sources": files},
    )
    write_manifest(out_dir / "skipped.parquet", rows=len(skips), inputs=files[:50], config=conf)
    return summary


def import_wet(
    patterns: Iterable[str],
    out_dir: str | Path,
    *,
    config: Any = None,
    offline: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> dict[str, Any]:
    """Common Crawl WET files -> `out_dir/documents.parquet` (+ skipped, hosts)."""
    files = expand(patterns)
    docs: list[dict] = []
    skips: list[dict] = []
    for source in files:
        d, s = scan_wet(source)
        docs += d
        skips += s
    records = len(docs) + len(skips)
    log(f"import wet: {len(files)} files, {records} records")
    return _decide_and_write(
        docs,
        skips,
        Path(out_dir),
        config=config,
        offline=offline,
        records=records,
        files=files,
        kind="wet",
    )
