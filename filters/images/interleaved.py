"""Interleaved documents filtered in place: dropped images leave the document (the text blocks
and the order of what remains stay as they were), kept image blocks carry their pair id and
CLIP score, and document-level rules (number of images, text length, images per text) drop
whole documents with a reason.

Input rows have extract's `interleaved.parquet` shape (common/schemas.py INTERLEAVED:
`doc_id, url, blocks: list<{kind, text, src, alt}>, training_allowed`). Image blocks are matched
to `pairs.parquet` rows by document and block position when the pairs carry `position`
(image_refs does: it is the block's index), else by the k-th occurrence of the same `src` in the
same document (pairs keep image_refs' order, which is block order).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from common.consent import FLAG, NO_LEDGER, flag_true
from common.schemas import BLOCK, INTERLEAVED
from filters.images.config import InterleavedConfig

# extract's block plus the pair id and CLIP score of kept image blocks (null on text blocks).
BLOCK_OUT = pa.struct(list(BLOCK) + [("pair_id", pa.string()), ("clip_score", pa.float64())])
INTERLEAVED_OUT = pa.schema(
    [f if f.name != "blocks" else pa.field("blocks", pa.list_(BLOCK_OUT)) for f in INTERLEAVED]
)
# One row per input document: what the rules saw and why the document went (null = kept).
DOC_REPORT = pa.schema(
    [
        ("doc_id", pa.string()),
        ("n_images_in", pa.int32()),
        ("n_images_kept", pa.int32()),
        ("n_text_chars", pa.int64()),
        ("drop_reason", pa.string()),
    ]
)
DOC_DROP_REASONS = (
    "too_few_images",
    "too_many_images",
    "too_little_text",
    "too_many_images_per_text",
)


@dataclass(frozen=True)
class PairIndex:
    """Pairs rows of many documents, found by (doc_id, position) or (doc_id, src, occurrence)."""

    by_position: Mapping[tuple[str, int], dict]
    by_src: Mapping[tuple[str, str], list[dict]]

    @classmethod
    def build(cls, pairs: Iterable[Mapping]) -> PairIndex:
        """Index pairs rows (`id`, `doc_id`, `src`, `drop_reason`, `clip_score`, optional
        `position`), in their order (image_refs order, which is block order per document)."""
        by_position: dict[tuple[str, int], dict] = {}
        by_src: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for row in pairs:
            row = dict(row)
            if row.get("position") is not None:
                by_position[(row["doc_id"], int(row["position"]))] = row
            by_src[(row["doc_id"], row.get("src") or "")].append(row)
        return cls(by_position, dict(by_src))

    def for_document(self, doc_id: str, blocks: list[Mapping]) -> dict[int, dict]:
        """Block index -> pairs row, for the image blocks of one document that have one."""
        out: dict[int, dict] = {}
        seen: dict[str, int] = defaultdict(int)
        for i, block in enumerate(blocks):
            if block.get("kind") != "image":
                continue
            src = block.get("src") or ""
            row = self.by_position.get((doc_id, i))
            if row is None:
                rows = self.by_src.get((doc_id, src), [])
                k = seen[src]
                row = rows[k] if k < len(rows) else None
            seen[src] += 1
            if row is not None:
                out[i] = row
        return out


def filter_document(
    doc: Mapping,
    pairs: Mapping[int, Mapping],
    cfg: InterleavedConfig | None = None,
    consent: Any = None,
) -> tuple[dict, dict]:
    """One interleaved document to (document with kept blocks, report row).

    An image block stays when its pairs row (`pairs[block_index]`) has no `drop_reason` and the
    one consent rule allows it (`consent`, with the lake's ledger; None: the flags alone):
    `training_allowed` the boolean true (a row without the flag is no consent); it then
    gets the row's `id` as `pair_id` and its `clip_score`. An image block without a pairs row is
    dropped (it was never fetched). Text blocks and the order of all kept blocks are unchanged.
    The report's `drop_reason` is the first document rule that fails, or None."""
    cfg = cfg or InterleavedConfig()
    rule = consent if consent is not None else NO_LEDGER
    blocks_in = list(doc.get("blocks") or [])
    kept_blocks: list[dict] = []
    n_images_in = 0
    for i, block in enumerate(blocks_in):
        out = {k: block.get(k) for k in ("kind", "text", "src", "alt")}
        out["pair_id"] = None
        out["clip_score"] = None
        if block.get("kind") == "image":
            n_images_in += 1
            row = pairs.get(i)
            if row is None or row.get("drop_reason") is not None:
                continue
            if not rule.allows(row):  # a pair the consent rule (or the ledger) refuses
                continue
            out["pair_id"] = row["id"]
            score = row.get("clip_score")
            out["clip_score"] = float(score) if score is not None else None
        kept_blocks.append(out)
    n_images = sum(b["kind"] == "image" for b in kept_blocks)
    n_chars = sum(len(b["text"] or "") for b in kept_blocks if b["kind"] == "text")
    reason = None
    if n_images < cfg.min_images:
        reason = "too_few_images"
    elif n_images > cfg.max_images:
        reason = "too_many_images"
    elif n_chars < cfg.min_text_chars:
        reason = "too_little_text"
    elif n_images > cfg.max_images_per_1k_chars * n_chars / 1000:
        reason = "too_many_images_per_text"
    document = {k: doc.get(k) for k in INTERLEAVED.names}
    document["blocks"] = kept_blocks
    document[FLAG] = flag_true(doc.get(FLAG))  # a real boolean: only the boolean true is consent
    report = {
        "doc_id": doc.get("doc_id"),
        "n_images_in": n_images_in,
        "n_images_kept": n_images,
        "n_text_chars": n_chars,
        "drop_reason": reason,
    }
    return document, report


def filter_documents(
    docs: Iterable[Mapping],
    pairs: Iterable[Mapping],
    cfg: InterleavedConfig | None = None,
    consent: Any = None,
) -> tuple[list[dict], list[dict]]:
    """Interleaved rows and pairs rows to (kept documents, one report row per input document);
    `consent`: the consent rule with the lake's ledger (`filter_document`).

    Kept documents have INTERLEAVED_OUT's shape, in input order; the report has DOC_REPORT's."""
    index = PairIndex.build(pairs)
    kept: list[dict] = []
    report: list[dict] = []
    for doc in docs:
        blocks = list(doc.get("blocks") or [])
        pairs_of = index.for_document(doc["doc_id"], blocks)
        document, row = filter_document(doc, pairs_of, cfg, consent)
        report.append(row)
        if row["drop_reason"] is None:
            kept.append(document)
    return kept, report


def documents_table(rows: list[dict]) -> pa.Table:
    """Kept documents as an Arrow table of INTERLEAVED_OUT's schema."""
    return pa.Table.from_pylist(rows, schema=INTERLEAVED_OUT)


def report_table(rows: list[dict]) -> pa.Table:
    """Report rows as an Arrow table of DOC_REPORT's schema."""
    return pa.Table.from_pylist(rows, schema=DOC_REPORT)


PAIRS_COLUMNS = {"doc_id": "string", "src": "string", "position": "int", "drop_reason": "string"}
INTERLEAVED_COLUMNS = {"doc_id": "string", "blocks": "list"}


def check_interleaved_source(docs: Path) -> None:
    """The extract output's interleaved.parquet is there, readable and has the columns the
    filter reads (one line naming the file otherwise): checked before a long image fetch whose
    run ends by filtering it."""
    from common.inputs import check_columns, read_schema

    source = Path(docs) / "interleaved.parquet"
    if not source.exists():
        raise FileNotFoundError(f"{source}: no interleaved documents (run `refinery extract`)")
    fix = "re-run `refinery extract` (it writes interleaved.parquet)"
    check_columns(source, read_schema(source, fix), INTERLEAVED_COLUMNS, fix=fix)


def write_interleaved(
    docs: Path, pair_files: list[Path], out: Path, cfg: Any, consent: Any = None
) -> int:
    """extract's interleaved.parquet, filtered by the pairs: out/interleaved.parquet (with a
    `text` column, `<|image|>` at each kept image) and out/interleaved_report.parquet. The
    pairs' drop_reason is taken as every reader takes it (`common.pairs.settled_rows` under
    `consent`, the one consent rule with the lake's ledger; None: the flags only): a duplicate
    whose kept copy is opted out takes its place."""
    from common.inputs import check_columns, read_rows, read_schema
    from common.manifest import write_parquet
    from common.pairs import settled_rows
    from filters.images import filter_documents
    from filters.images.pairs import interleaved_text

    source = Path(docs) / "interleaved.parquet"
    if not source.exists():
        raise FileNotFoundError(f"{source}: no interleaved documents (run `refinery extract`)")
    fix = "re-run `refinery images build` (pairs) or `refinery extract` (interleaved)"
    for f in pair_files:
        check_columns(f, read_schema(f, fix), PAIRS_COLUMNS, fix=fix)
    need = {"id": "string", **PAIRS_COLUMNS}
    pairs = [r for _, rows in settled_rows(pair_files, consent, required=need) for r in rows]
    docs_rows = read_rows(source, required=INTERLEAVED_COLUMNS, fix=fix)
    kept, report = filter_documents(docs_rows, pairs, cfg.interleaved, consent)
    table = documents_table(kept)
    table = table.append_column(
        "text", pa.array([interleaved_text(d["blocks"]) for d in kept], pa.string())
    )
    inputs = [str(source), *map(str, pair_files)]
    write_parquet(table, out / "interleaved.parquet", inputs=inputs)
    write_parquet(report_table(report), out / "interleaved_report.parquet", inputs=inputs)
    return table.num_rows
