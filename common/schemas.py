"""Arrow schemas of the extraction outputs (documents, image_refs, tables, interleaved, rejects):
the lake's contract between extract (and the importers) and the stages that read documents."""

from __future__ import annotations

import pyarrow as pa

_S = pa.string()

DOCUMENTS = pa.schema(
    [
        ("id", _S),
        ("url", _S),
        ("host", _S),
        ("text", _S),
        ("markdown", _S),
        ("comments", _S),
        ("title", _S),
        ("author", _S),
        ("date", _S),
        ("sitename", _S),
        ("canonical_url", _S),
        ("lang_hint", _S),
        ("rendered", pa.bool_()),
        ("render_reason", _S),
        ("render_error", _S),
        ("extraction_method", _S),
        ("llm_error", _S),
        ("training_allowed", pa.bool_()),
        ("crawl_allowed", pa.bool_()),
        ("robots_crawl", _S),
        ("robots_training", _S),
        ("noindex", pa.bool_()),
        ("nofollow", pa.bool_()),
        ("noai", pa.bool_()),
        ("noimageai", pa.bool_()),
        ("status", pa.int32()),
        ("content_sha256", _S),
        ("fetched_at", _S),
        # provenance: the archive record the document came from (a crawl's own WARC, or the
        # imported file), its offset there, its WARC-Record-ID and capture time (WARC-Date)
        ("source_file", _S),
        ("record_offset", pa.int64()),
        ("warc_record_id", _S),
        ("capture_time", _S),
    ]
)
PROVENANCE = ("source_file", "record_offset", "warc_record_id", "capture_time")

IMAGE_REFS = pa.schema(
    [
        ("doc_id", _S),
        ("url", _S),
        ("position", pa.int32()),
        ("src", _S),
        ("alt", _S),
        ("surrounding_text", _S),
        ("training_allowed", pa.bool_()),
    ]
)

TABLES = pa.schema(
    [
        ("doc_id", _S),
        ("url", _S),
        ("table_index", pa.int32()),
        ("markdown", _S),
        ("header", pa.list_(_S)),
        ("cells", pa.list_(pa.list_(_S))),
        ("n_rows", pa.int32()),
        ("n_cols", pa.int32()),
        ("training_allowed", pa.bool_()),
    ]
)

BLOCK = pa.struct([("kind", _S), ("text", _S), ("src", _S), ("alt", _S)])
INTERLEAVED = pa.schema(
    [("doc_id", _S), ("url", _S), ("blocks", pa.list_(BLOCK)), ("training_allowed", pa.bool_())]
)

REJECTS = pa.schema(
    [
        ("id", _S),
        ("url", _S),
        ("reason", _S),
        ("detail", _S),
        ("status", pa.int32()),
        ("training_allowed", pa.bool_()),
    ]
)

OUTPUTS = {
    "documents": DOCUMENTS,
    "image_refs": IMAGE_REFS,
    "tables": TABLES,
    "interleaved": INTERLEAVED,
    "rejects": REJECTS,
}
# Sort keys that make every output independent of worker scheduling.
SORT_KEYS = {
    "documents": [("id", "ascending")],
    "image_refs": [("doc_id", "ascending"), ("position", "ascending")],
    "tables": [("doc_id", "ascending"), ("table_index", "ascending")],
    "interleaved": [("doc_id", "ascending")],
    "rejects": [("id", "ascending")],
}
