"""Checks of the filter's outputs: rows in = annotated rows; no kept duplicate."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from common.checks import CheckOutcome, Figure, _first, _read_columns, _require

_EXTRACT_FIX = "run `refinery extract` into this directory first"
READ_ROWS = 65536  # rows read at a time: bounds the text held in memory
_FILTER_FIX = "run `refinery filter` into this directory first"


def filter_rows_accounted(extract_dir: Path, filter_dir: Path) -> CheckOutcome:
    """Rows in = annotated rows (the same ids, once each), and the kept documents are exactly
    the annotated rows without a drop_reason."""
    extract_dir, filter_dir = Path(extract_dir), Path(filter_dir)
    ids_in = _read_columns(extract_dir / "documents.parquet", ["id"], _EXTRACT_FIX)["id"]
    ann = _read_columns(filter_dir / "annotated.parquet", ["id", "drop_reason"], _FILTER_FIX)
    kept = _read_columns(filter_dir / "documents.parquet", ["id"], _FILTER_FIX)["id"]
    c_in, c_ann = Counter(ids_in.to_pylist()), Counter(ann["id"].to_pylist())
    missing, extra = c_in - c_ann, c_ann - c_in
    ann_kept = Counter(ann.filter(pc.is_null(ann["drop_reason"]))["id"].to_pylist())
    c_kept = Counter(kept.to_pylist())
    kept_mismatch = sum(((c_kept - ann_kept) + (ann_kept - c_kept)).values())
    dropped = ann.num_rows - sum(ann_kept.values())
    n_missing, n_extra = sum(missing.values()), sum(extra.values())
    passed = len(ids_in) == ann.num_rows and not n_missing and not n_extra and not kept_mismatch
    meta: dict[str, Figure] = {
        "rows_in": len(ids_in),
        "annotated": ann.num_rows,
        "kept": len(kept),
        "dropped": dropped,
        "ids_not_annotated": n_missing,
        "annotated_ids_not_in_input": n_extra,
        "kept_rows_not_matching_annotated": kept_mismatch,
        "first_missing_id": _first(sorted(missing)),
        "first_extra_id": _first(sorted(extra)),
    }
    verdict = (
        "every row accounted"
        if passed
        else f"{n_missing} input id(s) not annotated, {n_extra} annotated id(s) not in the "
        f"input, {kept_mismatch} kept row(s) disagreeing with annotated drop_reason"
    )
    return CheckOutcome(
        passed,
        f"filter {filter_dir}: {len(ids_in)} rows in, {ann.num_rows} annotated "
        f"({len(kept)} kept + {dropped} dropped); {verdict}",
        meta,
    )


def filter_no_duplicate_kept(filter_dir: Path) -> CheckOutcome:
    """No duplicate survives into the kept documents.

    Read four ways: a kept row has no duplicate_of (nor drop_reason); kept ids are unique; each
    dup_clusters cluster has at most one kept member; and no two kept rows have the same
    normalised text (the exact-duplicate key, `filters.dedup.text_hash`).
    """
    from filters.dedup import text_hash

    filter_dir = Path(filter_dir)
    cols = ["id", "drop_reason", "duplicate_of"]
    docs = filter_dir / "documents.parquet"
    _require(docs, cols + ["text"], _FILTER_FIX)
    kept = pq.read_table(docs, columns=cols)
    clusters = _read_columns(
        filter_dir / "dup_clusters.parquet", ["cluster_id", "id", "duplicate_of"], _FILTER_FIX
    )
    ids = kept["id"].to_pylist()
    marked = kept.filter(
        pc.or_kleene(pc.is_valid(kept["duplicate_of"]), pc.is_valid(kept["drop_reason"]))
    )
    repeated_ids = sum(n - 1 for n in Counter(ids).values() if n > 1)
    kept_set = set(ids)
    members = zip(clusters["cluster_id"].to_pylist(), clusters["id"].to_pylist(), strict=True)
    per_cluster: Counter[str] = Counter(c for c, i in members if i in kept_set)
    extra_cluster_members = sum(n - 1 for n in per_cluster.values() if n > 1)
    hashes: Counter[str] = Counter()
    for batch in pq.ParquetFile(docs).iter_batches(batch_size=READ_ROWS, columns=["text"]):
        hashes.update(text_hash(t or "") for t in batch.column(0).to_pylist())
    same_text = sum(n - 1 for n in hashes.values() if n > 1)
    offenders = (
        marked["id"].to_pylist()
        + [i for i, n in Counter(ids).items() if n > 1]
        + [c for c, n in per_cluster.items() if n > 1]
    )
    passed = not (marked.num_rows or repeated_ids or extra_cluster_members or same_text)
    meta: dict[str, Figure] = {
        "kept": kept.num_rows,
        "clusters": len(set(clusters["cluster_id"].to_pylist())),
        "cluster_rows": clusters.num_rows,
        "kept_marked_duplicate": marked.num_rows,
        "kept_repeated_ids": repeated_ids,
        "kept_extra_cluster_members": extra_cluster_members,
        "kept_same_normalised_text": same_text,
        "first_offender": _first(offenders),
    }
    verdict = (
        "no duplicate kept"
        if passed
        else f"duplicates kept: {marked.num_rows} row(s) with duplicate_of/drop_reason, "
        f"{repeated_ids} repeated id(s), {extra_cluster_members} extra member(s) of a "
        f"cluster, {same_text} repeated normalised text(s) (first {_first(offenders)})"
    )
    return CheckOutcome(
        passed,
        f"filter {filter_dir}: {kept.num_rows} kept, {meta['clusters']} duplicate cluster(s); "
        f"{verdict}",
        meta,
    )
