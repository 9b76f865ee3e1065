"""A licensed JSONL/Parquet corpus -> documents.parquet rows (`refinery import docs`).

The corpus maps its own fields: `text_field`, `id_field`, `url_field`. A document without a URL
carries the licence given and is consented by it (`consent_source: licence: <x>`); one without a
URL and without a licence is not consented. A document with a URL goes through the same consent
check as an imported page (today's robots.txt for both tokens, `crawlers.imports.consent`).
Every row read is a document or a recorded skip (`malformed_row`, `empty_text`,
`duplicate_payload`, `duplicate_id`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from crawlers.imports.run import expand
from crawlers.imports.warc import open_source
from crawlers.imports.wet import Spool, _decide_and_write, _doc_host, _doc_id


def _corpus_rows(source: str) -> Iterable[tuple[int, dict | None, str | None]]:
    """(row number, row or None, why it is unreadable) of a JSONL or Parquet corpus."""
    name = source.lower()
    if name.endswith(".parquet"):
        with open_source(source) as fh:
            for i, row in enumerate(pq.read_table(fh).to_pylist()):
                yield i, row, None
        return
    import gzip

    with open_source(source) as raw:
        fh = gzip.open(raw) if name.endswith(".gz") else raw
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                yield i, None, f"line {i + 1}: not JSON ({exc})"
                continue
            if not isinstance(row, dict):
                yield i, None, f"line {i + 1}: a JSON {type(row).__name__}, not an object"
                continue
            yield i, row, None


def import_docs(
    patterns: Iterable[str],
    out_dir: str | Path,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    url_field: str | None = None,
    license: str | None = None,
    config: Any = None,
    offline: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> dict[str, Any]:
    """A JSONL/Parquet corpus -> `out_dir/documents.parquet`, fields mapped by the flags."""
    files = expand(patterns)
    spool = Spool(Path(out_dir))
    for source in files:
        found_text = False
        for i, row, bad in _corpus_rows(source):
            base = {"source_file": source, "record_offset": i, "record_type": "corpus_row"}
            base["import_mode"] = "text"
            if row is None:
                spool.add("skip", {**base, "skip_reason": "malformed_row", "skip_detail": bad})
                continue
            text = row.get(text_field)
            found_text |= text_field in row
            url = row.get(url_field) if url_field else None
            url = str(url).strip() if url not in (None, "") else None
            if not isinstance(text, str) or not text.strip():
                what = "missing" if text_field not in row else f"a {type(text).__name__}"
                spool.add(
                    "skip",
                    {
                        **base,
                        "url": url,
                        "skip_reason": "empty_text",
                        "skip_detail": f"field {text_field!r} is {what} (--text-field)",
                    },
                )
                continue
            ident = row.get(id_field) if id_field else None
            if ident in (None, ""):
                ident = _doc_id(url) if url else hashlib.sha256(text.encode()).hexdigest()[:16]
            doc = {
                **base,
                "id": str(ident),
                "url": url,
                "host": _doc_host(url) if url else None,
                "text": text.strip(),
                "title": row.get("title") if isinstance(row.get("title"), str) else None,
                "extraction_method": "corpus",
                "source": f"import:docs:{os.path.basename(source)}",
                "license": license,
                "content_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "rendered": False,
            }
            if url is None:
                if license:
                    doc.update(training_allowed=True, consent_source=f"licence: {license}")
                else:
                    doc.update(
                        training_allowed=False,
                        consent_source="no URL and no licence (--license): no consent",
                    )
            spool.add("doc", doc)
        if not found_text and spool.counts["doc"] == 0 and spool.counts["skip"]:
            spool.discard()
            raise KeyError(
                f"{source}: no row has the field {text_field!r}; name the text field with "
                "--text-field"
            )
    log(f"import docs: {len(files)} files, {sum(spool.counts.values())} rows")
    return _decide_and_write(
        spool, Path(out_dir), config=config, offline=offline, files=files, kind="docs"
    )
