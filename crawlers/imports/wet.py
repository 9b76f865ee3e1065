"""Common Crawl WET files -> documents.parquet rows (the writer `import docs` shares).

Rows are spooled to disk as they are read and decided a batch at a time (repeats, then
consent), so neither import holds a corpus in memory.

WET `conversion` records hold the text Common Crawl extracted: there is no HTML, so no
extraction; `source` says `import:wet` and `extraction_method` says `cc-wet`. Every record read
is a document or a recorded skip (`warcinfo`, `missing_target_uri`, `empty_text`,
`duplicate_payload`, `malformed_record`, ...).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawlers.imports.run import BATCH_ROWS, HOSTS_SCHEMA, PROVENANCE, _key, _table, _write, expand
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


def base_language(declared: str | None) -> str | None:
    """The base code `lang_hint` holds (ISO 639-1 where one exists, as for crawled pages) of a
    WET record's WARC-Identified-Content-Language: Common Crawl's CLD2 guesses as ISO 639-3,
    most likely first ("spa,eng" -> "es"; "arg" -> "an"; "fil" stays; "und" is None). CLDR's
    language aliases (Babel) map the codes; a code they do not name is kept in lower case."""
    first = (declared or "").split(",")[0].strip().lower()
    if not first or first == "und":  # undetermined
        return None
    from babel.core import get_global

    return get_global("language_aliases").get(first, first).replace("_", "-").split("-")[0]


def documents_schema() -> pa.Schema:
    from common.schemas import DOCUMENTS

    names = set(DOCUMENTS.names)
    return pa.schema([*DOCUMENTS, *[pa.field(n, t) for n, t in EXTRA_COLUMNS if n not in names]])


def _doc_id(url: str) -> str:
    from crawlers.extract.page import doc_id

    return doc_id(url)


def iter_wet(source: str, allow_private: bool = False) -> Iterator[tuple[str, dict]]:
    """("doc", row) or ("skip", row) for every record of one WET file, as it is read (an
    http(s) file through the SSRF guard; `allow_private` lifts it)."""
    from warcio.archiveiterator import ArchiveIterator

    fh = open_source(source, allow_private)
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
                yield "skip", {**row, "skip_reason": record.rec_type, "skip_detail": "not text"}
                continue
            if not row["url"]:
                yield "skip", {**row, "skip_reason": "missing_target_uri", "skip_detail": ""}
                continue
            if len(raw) > MAX_TEXT_BYTES:
                yield "skip", {**row, "skip_reason": "too_large", "skip_detail": "text over 8 MB"}
                continue
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                yield "skip", {**row, "skip_reason": "empty_text", "skip_detail": ""}
                continue
            yield (
                "doc",
                {
                    **row,
                    "id": _doc_id(row["url"]),
                    "host": _doc_host(row["url"]),
                    "text": text,
                    "lang_hint": base_language(h.get_header("WARC-Identified-Content-Language")),
                    "extraction_method": "cc-wet",
                    "source": "import:wet",
                    "status": 200,
                    "content_sha256": hashlib.sha256(raw).hexdigest(),
                    "fetched_at": row["capture_time"],
                    "rendered": False,
                },
            )
    except Exception as exc:  # a cut file: what came before stays, the rest is one skip
        yield (
            "skip",
            {
                "source_file": source,
                "record_offset": offset,
                "skip_reason": "malformed_record",
                "skip_detail": f"{source}@{offset}: {type(exc).__name__}: {exc}"[:500],
            },
        )
    finally:
        fh.close()


class Spool:
    """The documents and skips read so far, written to `<out>/_parts/` a batch at a time (the
    import then reads them back twice, `_decide_and_write`): no file's rows wait in memory."""

    def __init__(self, out_dir: Path):
        import shutil

        from crawlers.imports.run import _Out

        self.dir = Path(out_dir) / "_parts"
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self._docs = _Out(self.dir / "docs.parquet", documents_schema())
        self._skips = _Out(self.dir / "skips.parquet", SKIPS_SCHEMA)
        self._buf: dict[str, list[dict]] = {"doc": [], "skip": []}
        self.counts = {"doc": 0, "skip": 0}

    def add(self, kind: str, row: dict) -> None:
        """One document ("doc") or recorded skip ("skip")."""
        self._buf[kind].append(row)
        self.counts[kind] += 1
        if len(self._buf[kind]) >= BATCH_ROWS:
            self._flush(kind)

    def _flush(self, kind: str) -> None:
        (self._docs if kind == "doc" else self._skips).write(self._buf[kind])
        self._buf[kind] = []

    def discard(self) -> None:
        """Drop what was spooled (the import stops with an error)."""
        import shutil

        self._docs.writer.close()
        self._skips.writer.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def close(self) -> tuple[Path, Path]:
        for kind in self._buf:
            self._flush(kind)
        self._docs.close()
        self._skips.close()
        return self._docs.path, self._skips.path


def _doc_host(url: str | None) -> str:
    """The host, as extraction's documents.parquet writes it (no port)."""
    from common.inputs import url_host

    return url_host(url)


def _repeats(docs_path: Path) -> tuple[dict[int, tuple[str, str]], list[str]]:
    """Exact repeats (the same text, or the same id: the first wins) by row of the spooled
    documents, read by their key columns only; and the URLs of the documents kept."""
    files: dict[str, int] = {}
    names: list[str] = []
    seen: dict[bytes, int] = {}
    repeats: dict[int, tuple[str, str]] = {}
    urls: list[str] = []
    cols = ["content_sha256", "id", "url", "source_file", "record_offset"]
    i = 0
    for batch in pq.ParquetFile(docs_path).iter_batches(batch_size=BATCH_ROWS * 4, columns=cols):
        for d in batch.to_pylist():
            key, ident = _key(d["content_sha256"] or ""), _key("id:" + d["id"])
            first = seen.get(key, seen.get(ident))
            if first is not None:
                reason = "duplicate_payload" if key in seen else "duplicate_id"
                where = f"{names[first >> 40]}@{first & ((1 << 40) - 1)}"
                repeats[i] = (reason, f"same as {where}")
            else:
                src = d["source_file"] or ""
                if src not in files:
                    files[src] = len(names)
                    names.append(src)
                seen[key] = seen[ident] = (files[src] << 40) | max(0, d["record_offset"] or 0)
                if d["url"]:
                    urls.append(d["url"])
            i += 1
    return repeats, urls


def _decide_and_write(
    spool: Spool,
    out_dir: Path,
    *,
    config: Any,
    offline: bool,
    files: list[str],
    kind: str,
) -> dict[str, Any]:
    import shutil

    from common.manifest import write_manifest
    from crawlers.crawl.config import CrawlConfig
    from crawlers.imports.consent import ConsentBook
    from crawlers.imports.run import _Out

    cfg = CrawlConfig.from_any(config)
    records = spool.counts["doc"] + spool.counts["skip"]
    docs_path, skips_path = spool.close()
    repeats, urls = _repeats(docs_path)
    t = time.perf_counter()
    book = ConsentBook(cfg, offline=offline)
    book.fetch(urls)
    del urls
    out_dir.mkdir(parents=True, exist_ok=True)
    kept = _Out(out_dir / "documents.parquet", documents_schema())
    skipped = _Out(out_dir / "skipped.parquet", SKIPS_SCHEMA)
    reasons: dict[str, int] = {}
    for batch in pq.ParquetFile(skips_path).iter_batches(batch_size=BATCH_ROWS):
        rows = batch.to_pylist()
        for r in rows:
            reasons[r["skip_reason"]] = reasons.get(r["skip_reason"], 0) + 1
        skipped.write(rows)
    allowed = 0
    i = 0
    for batch in pq.ParquetFile(docs_path).iter_batches(batch_size=BATCH_ROWS):
        docs, skips = [], []
        for d in batch.to_pylist():
            if i in repeats:
                reason, detail = repeats[i]
                reasons[reason] = reasons.get(reason, 0) + 1
                skips.append({**d, "skip_reason": reason, "skip_detail": detail})
            else:
                if d.get("url"):
                    book.apply(d)
                for flag in ("noai", "noimageai"):
                    d[flag] = bool(d.get(flag))
                allowed += d.get("training_allowed") is True
                docs.append(d)
            i += 1
        kept.write(docs)
        skipped.write(skips)
    kept.close()
    skipped.close()
    shutil.rmtree(spool.dir, ignore_errors=True)
    hosts = book.hosts()
    _write(_table(hosts, HOSTS_SCHEMA), out_dir / "hosts.parquet")
    summary = {
        "files": len(files),
        "records": records,
        "documents": kept.rows,
        "skipped": skipped.rows,
        "skipped_by_reason": dict(sorted(reasons.items())),
        "hosts": len(hosts),
        "hosts_unreachable": sum(1 for h in hosts if h["unreachable"]),
        "training_allowed": allowed,
        "training_not_allowed": kept.rows - allowed,
        "offline": offline,
        "consent_seconds": round(time.perf_counter() - t, 3),
    }
    if records != kept.rows + skipped.rows:
        raise RuntimeError(f"import {kind}: {records} records != {kept.rows} + {skipped.rows}")
    conf = {"agent": cfg.agent, "training_agent": cfg.training_agent, "source": kind}
    write_manifest(
        out_dir / "documents.parquet",
        rows=kept.rows,
        inputs=files[:50],
        config=conf,
        extra={"summary": summary, "sources": files},
    )
    write_manifest(out_dir / "skipped.parquet", rows=skipped.rows, inputs=files[:50], config=conf)
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
    from crawlers.crawl.config import CrawlConfig

    allow_private = CrawlConfig.from_any(config).allow_private_networks
    files = expand(patterns, allow_private)
    spool = Spool(Path(out_dir))
    for source in files:
        for kind, row in iter_wet(source, allow_private):
            spool.add(kind, row)
    log(f"import wet: {len(files)} files, {sum(spool.counts.values())} records")
    return _decide_and_write(
        spool, Path(out_dir), config=config, offline=offline, files=files, kind="wet"
    )
