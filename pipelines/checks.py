"""Asset-check logic over lake datasets: the promises each stage's output must keep.

Plain functions (no Dagster): each reads a stage's output directory and returns a `CheckOutcome`
(passed, a one-line verdict with figures, and the figures as metadata). The Dagster layer wraps
them in asset checks; `BLOCKING` names those whose failure must stop the graph.

A missing or malformed dataset is not a failed check but an error: it raises, naming the file, the
field and the fix.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from common.consent import flag_true

Figure = int | float | str | bool

# The robots decisions the crawler records (crawlers.crawl.robots_policy); "allowed" alone
# permits a fetch.
ROBOTS_DECISIONS = ("allowed", "disallowed", "unreachable")

# Checks whose failure must stop downstream assets (consent, accounting and integrity promises).
# The mixture's share check and the training-loss check report; they do not block.
BLOCKING = frozenset(
    {
        "crawl_robots_respected",
        "crawl_robots_decisions_recorded",
        "extract_pages_accounted",
        "filter_rows_accounted",
        "filter_no_duplicate_kept",
        "mixture_no_opted_out_rows",
        "mixture_checksums_match",
    }
)


@dataclass(frozen=True)
class CheckOutcome:
    """The verdict of one check: passed, one line with the figures, and the figures."""

    passed: bool
    description: str
    metadata: dict[str, Figure] = field(default_factory=dict)


def _require(path: Path, columns: list[str], fix: str) -> None:
    """A clear error naming the file, the missing column(s) and the fix."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file; {fix}")
    names = pq.read_schema(path).names
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {', '.join(missing)}; {fix} (this check reads "
            f"{', '.join(columns)})"
        )


def _read_columns(path: Path, columns: list[str], fix: str) -> pa.Table:
    """Read `columns` of a Parquet file, after `_require`."""
    _require(path, columns, fix)
    return pq.read_table(path, columns=columns)


def _first(values: list[Any]) -> str:
    return str(values[0]) if values else ""


# --- crawl -----------------------------------------------------------------------------------

_CRAWL_FIX = "point the check at the directory `refinery crawl --out` wrote"


def _crawl_tables(crawl_dir: Path, columns: list[str]) -> Iterator[tuple[Path, pa.Table]]:
    from crawlers.extract.warc import find_pages_files

    for pages in find_pages_files(crawl_dir):
        yield pages, _read_columns(pages, columns, _CRAWL_FIX)


def crawl_robots_respected(crawl_dir: Path) -> CheckOutcome:
    """No page was requested unless robots.txt allowed it for the crawl token.

    A page counts as fetched when the crawl recorded any trace of a request for it: a status, a
    fetch time or a stored response. Every fetched page must carry robots_crawl = "allowed";
    "disallowed", "unreachable" or no decision at all is a violation. All shards are read.
    """
    crawl_dir = Path(crawl_dir)
    cols = ["url", "status", "fetched_at", "warc_file", "robots_crawl"]
    pages = fetched = 0
    by_decision: Counter[str] = Counter()
    offending: list[str] = []
    shards = 0
    for _, t in _crawl_tables(crawl_dir, cols):
        shards += 1
        pages += t.num_rows
        was_fetched = pc.or_kleene(
            pc.or_kleene(pc.is_valid(t["status"]), pc.is_valid(t["fetched_at"])),
            pc.is_valid(t["warc_file"]),
        )
        f = t.filter(was_fetched)
        fetched += f.num_rows
        decision = pc.fill_null(f["robots_crawl"], "none").to_pylist()
        bad = [d != "allowed" for d in decision]
        by_decision.update(d for d, b in zip(decision, bad, strict=True) if b)
        offending += [u for u, b in zip(f["url"].to_pylist(), bad, strict=True) if b]
    violations = len(offending)
    meta: dict[str, Figure] = {
        "pages": pages,
        "shards": shards,
        "fetched": fetched,
        "fetched_not_allowed": violations,
        "fetched_disallowed": by_decision["disallowed"],
        "fetched_unreachable": by_decision["unreachable"],
        "fetched_no_decision": by_decision["none"],
        "first_offending_url": _first(offending),
    }
    verdict = (
        "0 fetched without an 'allowed' decision"
        if not violations
        else f"{violations} fetched without an 'allowed' decision (disallowed "
        f"{by_decision['disallowed']}, unreachable {by_decision['unreachable']}, none "
        f"{by_decision['none']}; first {offending[0]})"
    )
    return CheckOutcome(
        not violations,
        f"crawl {crawl_dir}: {fetched} of {pages} pages fetched over {shards} shard(s); "
        f"robots for the crawl token: {verdict}",
        meta,
    )


def crawl_robots_decisions_recorded(crawl_dir: Path) -> CheckOutcome:
    """Every page carries both robots decisions (crawl token and training token), each a known
    value, and no page is marked training_allowed while its training-token decision is not
    "allowed"."""
    crawl_dir = Path(crawl_dir)
    cols = ["url", "robots_crawl", "robots_training", "training_allowed"]
    pages = shards = 0
    missing_crawl = missing_training = unknown = consent_leaks = 0
    counts: Counter[str] = Counter()
    offending: list[str] = []
    for _, t in _crawl_tables(crawl_dir, cols):
        shards += 1
        pages += t.num_rows
        for url, rc, rt, ok in zip(
            t["url"].to_pylist(),
            t["robots_crawl"].to_pylist(),
            t["robots_training"].to_pylist(),
            t["training_allowed"].to_pylist(),
            strict=True,
        ):
            counts[f"crawl_{rc}"] += 1
            counts[f"training_{rt}"] += 1
            bad = False
            if rc is None:
                missing_crawl += 1
                bad = True
            if rt is None:
                missing_training += 1
                bad = True
            if (rc is not None and rc not in ROBOTS_DECISIONS) or (
                rt is not None and rt not in ROBOTS_DECISIONS
            ):
                unknown += 1
                bad = True
            if flag_true(ok) and rt != "allowed":
                consent_leaks += 1
                bad = True
            if bad:
                offending.append(url)
    meta: dict[str, Figure] = {
        "pages": pages,
        "shards": shards,
        "missing_crawl_decision": missing_crawl,
        "missing_training_decision": missing_training,
        "unknown_decision_value": unknown,
        "training_allowed_without_training_robots": consent_leaks,
        "first_offending_url": _first(offending),
    }
    for d in ROBOTS_DECISIONS:
        meta[f"crawl_{d}"] = counts[f"crawl_{d}"]
        meta[f"training_{d}"] = counts[f"training_{d}"]
    passed = not offending
    verdict = (
        "every page has both decisions"
        if passed
        else f"{len(offending)} page(s) wrong: no crawl decision {missing_crawl}, no training "
        f"decision {missing_training}, unknown value {unknown}, training_allowed without an "
        f"'allowed' training decision {consent_leaks} (first {offending[0]})"
    )
    return CheckOutcome(
        passed, f"crawl {crawl_dir}: {pages} pages over {shards} shard(s); {verdict}", meta
    )


# --- extract ---------------------------------------------------------------------------------

_EXTRACT_FIX = "run `refinery extract` into this directory first"


def extract_pages_accounted(crawl_dir: Path, extract_dir: Path) -> CheckOutcome:
    """Pages in = documents + rejects, as counts and as URLs (each crawl row is one output row)."""
    from crawlers.extract.warc import find_pages_files

    crawl_dir, extract_dir = Path(crawl_dir), Path(extract_dir)
    page_urls: Counter[str] = Counter()
    for pages in find_pages_files(crawl_dir):
        page_urls.update(_read_columns(pages, ["url"], _CRAWL_FIX)["url"].to_pylist())
    docs = _read_columns(extract_dir / "documents.parquet", ["url"], _EXTRACT_FIX)
    rejects = _read_columns(extract_dir / "rejects.parquet", ["url"], _EXTRACT_FIX)
    out_urls = Counter(docs["url"].to_pylist()) + Counter(rejects["url"].to_pylist())
    pages_in = sum(page_urls.values())
    missing = page_urls - out_urls
    extra = out_urls - page_urls
    n_missing, n_extra = sum(missing.values()), sum(extra.values())
    counted = docs.num_rows + rejects.num_rows
    passed = counted == pages_in and not n_missing and not n_extra
    meta: dict[str, Figure] = {
        "pages_in": pages_in,
        "documents": docs.num_rows,
        "rejects": rejects.num_rows,
        "unaccounted": pages_in - counted,
        "pages_without_output": n_missing,
        "outputs_without_page": n_extra,
        "first_missing_url": _first(sorted(missing)),
        "first_extra_url": _first(sorted(extra)),
    }
    verdict = (
        "every page accounted"
        if passed
        else f"{n_missing} page(s) without an output row, {n_extra} output row(s) without a page"
    )
    return CheckOutcome(
        passed,
        f"extract {extract_dir}: {pages_in} pages in, {docs.num_rows} documents + "
        f"{rejects.num_rows} rejects = {counted}; {verdict}",
        meta,
    )


# --- filter ----------------------------------------------------------------------------------

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


# --- mixture ---------------------------------------------------------------------------------


def _mix_manifest(mix_dir: Path) -> dict[str, Any]:
    from training.loader import read_manifest

    return read_manifest(mix_dir)


def mixture_checksums_match(mix_dir: Path) -> CheckOutcome:
    """Every shard the manifest lists exists, hashes to its recorded sha256 and has the recorded
    shape (num_sequences × seq_len). The eval arrays carry no checksum in the manifest."""
    mix_dir = Path(mix_dir)
    manifest = _mix_manifest(mix_dir)
    seq_len = int(manifest["seq_len"])
    missing, mismatched, misshapen = [], [], []
    total_bytes = 0
    for i, s in enumerate(manifest["shards"]):
        if "sha256" not in s:
            raise ValueError(
                f"{mix_dir / 'manifest.json'}: shards[{i}] has no sha256; rebuild the mixture "
                "with `refinery mix build`"
            )
        path = mix_dir / s["path"]
        if not path.exists():
            missing.append(s["path"])
            continue
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda f=f: f.read(1 << 20), b""):
                h.update(chunk)
                total_bytes += len(chunk)
        if h.hexdigest() != s["sha256"]:
            mismatched.append(s["path"])
            continue
        arr = np.load(path, mmap_mode="r")
        if arr.shape != (int(s["num_sequences"]), seq_len):
            misshapen.append(s["path"])
    bad = missing + mismatched + misshapen
    meta: dict[str, Figure] = {
        "shards": len(manifest["shards"]),
        "bytes": total_bytes,
        "missing": len(missing),
        "checksum_mismatch": len(mismatched),
        "shape_mismatch": len(misshapen),
        "first_bad_shard": _first(bad),
    }
    verdict = (
        "every checksum matches"
        if not bad
        else f"{len(missing)} missing, {len(mismatched)} with a different sha256, "
        f"{len(misshapen)} with another shape (first {bad[0]})"
    )
    return CheckOutcome(
        not bad,
        f"mixture {mix_dir}: {len(manifest['shards'])} shard(s), {total_bytes} bytes; {verdict}",
        meta,
    )


def mixture_shares_within_tolerance(mix_dir: Path) -> CheckOutcome:
    """Realised token shares (buckets, groups, weighted sources) within the spec's tolerance of
    their targets, recomputed from the manifest's token counts (not its stored verdicts); the bucket
    token counts must also add up to the manifest's document tokens."""
    from training.mixture.report import accounting_checks

    mix_dir = Path(mix_dir)
    manifest = _mix_manifest(mix_dir)
    tol = float(manifest.get("tolerance", 0.01))
    checks = accounting_checks(manifest)
    # A shortfall the spec allows (allow_shortfall, recorded in the manifest) is excused: that
    # bucket is not held to its share, and the others are judged by their share of the targets
    # (as groups and sources are), which the missing tokens do not skew.
    excused = sorted({s["bucket"] for s in manifest.get("shortfalls", [])})
    if excused and (manifest.get("spec") or {}).get("allow_shortfall"):
        total = sum(b["target_tokens"] for b in manifest["buckets"].values())
        for c in checks:
            if c["level"] == "bucket" and c["name"] not in excused:
                b = manifest["buckets"][c["name"]]
                c["share"] = b["tokens"] / total
                c["deviation"] = c["share"] - c["target_share"]
                c["ok"] = abs(c["deviation"]) <= tol
        checks = [c for c in checks if c["name"].split(".")[0].split("[")[0] not in excused]
    else:
        excused = []
    placed = sum(int(b["tokens"]) for b in manifest["buckets"].values())
    tokens_agree = placed == int(manifest["tokens"])
    off = [c for c in checks if not c["ok"]]
    worst = max(checks, key=lambda c: abs(c["deviation"]), default=None)
    meta: dict[str, Figure] = {
        "tolerance": tol,
        "checked": len(checks),
        "off_target": len(off),
        "max_abs_deviation": abs(worst["deviation"]) if worst else 0.0,
        "worst": f"{worst['level']} {worst['name']}" if worst else "",
        "bucket_tokens": placed,
        "manifest_tokens": int(manifest["tokens"]),
        "excused_shortfalls": ",".join(excused),
    }
    for c in checks:
        if c["level"] == "bucket":
            meta[f"share.{c['name']}"] = round(c["share"], 6)
            meta[f"target_share.{c['name']}"] = round(c["target_share"], 6)
    passed = bool(checks) and not off and tokens_agree
    if not checks:
        verdict = "no tokens placed: nothing to compare"
    elif off:
        verdict = "off target: " + ", ".join(
            f"{c['level']} {c['name']} {c['share']:.4f} vs {c['target_share']:.4f}" for c in off
        )
    else:
        verdict = f"all within (max deviation {meta['max_abs_deviation']:.4f})"
    if not tokens_agree:
        verdict += f"; bucket tokens {placed} != manifest tokens {manifest['tokens']}"
    if excused:
        verdict += f"; allowed shortfall (not judged): {', '.join(excused)}"
    return CheckOutcome(
        passed,
        f"mixture {mix_dir}: {len(checks)} share(s) against tolerance {tol:g}; {verdict}",
        meta,
    )


# Opted-out documents are recognised in the packed streams by their opening. A candidate is a
# document-copy start whose first PROBE_TOKENS tokens (or, for a shorter document, all of it and its
# boundary) equal an opted-out row's; each candidate is then compared over up to VERIFY_TOKENS
# tokens, with the opted-out row and with every allowed row that opens the same way.
PROBE_TOKENS = 32
VERIFY_TOKENS = 2048
_FILL = np.uint32(0xFFFFFFFF)  # never a token id: marks key positions after the boundary
_MULT = np.random.default_rng(20240613).integers(1, 2**63, size=PROBE_TOKENS, dtype=np.uint64) | 1
READ_ROWS = 65536  # source rows read at a time: bounds the text held in memory


def _normalise_keys(windows: np.ndarray, boundary: int) -> np.ndarray:
    """Blank (with _FILL) every position after a row's first boundary token."""
    is_b = windows == boundary
    after = (np.cumsum(is_b, axis=1) - is_b) > 0
    windows[after] = _FILL
    return windows


def _hash_keys(keys: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (keys.astype(np.uint64) * _MULT[None, : keys.shape[1]]).sum(axis=1, dtype=np.uint64)


def _doc_keys(tokens: np.ndarray, lengths: np.ndarray, boundary: int) -> np.ndarray:
    """Key of each document: its first PROBE_TOKENS tokens followed by the boundary, cut to size."""
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    keys = np.full((len(lengths), PROBE_TOKENS), _FILL, dtype=np.uint32)
    for i, (a, n) in enumerate(zip(offsets[:-1].tolist(), lengths.tolist(), strict=True)):
        m = min(n, PROBE_TOKENS)
        keys[i, :m] = tokens[a : a + m]
        if m < PROBE_TOKENS:
            keys[i, m] = boundary
    return _normalise_keys(keys, boundary)


def _copy_starts(
    pieces: list[np.ndarray], boundary: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(buffer, copy start positions in it) over one packed stream given in pieces (its shards).

    A copy starts at the stream's beginning and after every boundary token (a virtual boundary
    in front of the stream makes the first position one such start). Copies may cross pieces:
    every start yielded has its next VERIFY_TOKENS positions in the buffer, unless the stream ends.
    """
    buf = np.array([boundary], dtype=np.uint32)
    first = 1  # index in buf of the first position not yet looked at
    for k, piece in enumerate(pieces):
        buf = np.concatenate([buf, np.asarray(piece, dtype=np.uint32).ravel()])
        last = k == len(pieces) - 1
        end = len(buf) if last else max(len(buf) - VERIFY_TOKENS + 1, first)
        if end > first:
            yield buf, np.flatnonzero(buf[first - 1 : end - 1] == boundary) + first
        keep = end - 1
        buf, first = buf[keep:], end - keep


def _windows(buf: np.ndarray, starts: np.ndarray, width: int, boundary: int) -> np.ndarray:
    """Normalised windows of `width` tokens at `starts` (_FILL past the buffer's end)."""
    idx = starts[:, None] + np.arange(width)[None, :]
    outside = idx >= len(buf)
    windows = buf[np.minimum(idx, len(buf) - 1)]
    windows[outside] = _FILL
    return _normalise_keys(windows, boundary)


def _copy_prefix(window: np.ndarray, boundary: int) -> np.ndarray:
    """A copy's tokens within its window: up to its boundary, the stream's end or the window's."""
    stop = np.flatnonzero((window == boundary) | (window == _FILL))
    return window[: stop[0]] if len(stop) else window


def _source_files(manifest: dict[str, Any], mix_dir: Path, lake_root: Path | None):
    """(file, text column, image ReadUnit or None) of every source the mixture's spec read, sorted.

    Image sources (a `kind` other than text) carry the ReadUnit the builder read them with, so
    their documents are rebuilt exactly as the builder builds them (training/mixture/images.py)."""
    import glob

    from training.mixture.spec import resolve_path

    inputs = manifest.get("inputs") or []
    spec_dir = Path(inputs[0]).parent if inputs else None
    out: set[tuple[str, str, Any]] = set()
    for name, bucket in manifest["spec"]["buckets"].items():
        for i, src in enumerate(bucket["sources"]):
            kind = src.get("kind") or "text"
            path = src["path"]
            is_lake = path == "lake" or path.startswith("lake/")
            if not is_lake and not Path(path).is_absolute() and spec_dir is None:
                raise ValueError(
                    f"{mix_dir / 'manifest.json'}: spec.buckets.{name}.sources[{i}].path {path!r} "
                    "is relative and the manifest names no spec (`inputs`); build the mixture "
                    "with `refinery mix build` or use absolute or lake/ paths"
                )
            pattern = resolve_path(path, spec_dir or mix_dir, lake_root)
            for f in sorted(glob.glob(str(pattern))):
                unit = None
                if kind != "text":
                    from training.mixture.sources import ReadUnit, _pairs_files

                    pairs = _pairs_files(src.get("pairs"), spec_dir or mix_dir, lake_root)
                    unit = ReadUnit(
                        name,
                        i,
                        f,
                        src.get("where"),
                        src.get("text_column") or "text",
                        None,
                        (),
                        kind=kind,
                        pairs=pairs,
                        image_tokens=int(manifest.get("image_tokens") or 0),
                    )
                out.add((f, src.get("text_column") or "text", unit))
    return sorted(out, key=lambda e: (e[0], e[1], repr(e[2])))


def flag_mask(flag: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """`common.consent.flag_true` over a column: true where the value is the boolean true. A
    column of another type ("false", 1, NaN, as other tools write) is all false: opted out."""
    if not pa.types.is_boolean(flag.type):
        return np.zeros(len(flag), dtype=bool)
    return np.asarray(pc.fill_null(flag, False).to_numpy(zero_copy_only=False), dtype=bool)


def _source_docs(
    files: list[tuple[str, str]], tok, *, allowed: bool, ledger: tuple = ((), set(), set())
) -> Iterator[tuple[list[str], np.ndarray, np.ndarray]]:
    """The sources' opted-out rows (training_allowed not true, as the builder's consent rule reads
    it) or allowed rows, tokenized a batch at a time: (refs "file#row", tokens, lengths).

    `ledger` = (consent ledger files the mixture honoured, their opted-out URLs, document ids):
    a row the ledger opted out (by doc_id, else url, as the builder matches) is opted out too."""
    from training.tokenizer import encode_texts

    ledger_files, out_urls, out_ids = ledger
    for f, text_col, unit in files:
        if unit is not None:  # an image source: the builder's own documents (allowed or not)
            from dataclasses import replace

            from training.mixture.images import read_image_unit_batches

            if ledger_files:
                unit = replace(unit, consent=tuple(str(p) for p in ledger_files))
            image_id = tok.token_to_id("<|image|>")
            for b in read_image_unit_batches(unit, tok, image_id, opted_out=not allowed):
                yield [f"{f}#{r}" for r in b.rows.tolist()], b.tokens, b.lengths
            continue
        cols = [text_col, "training_allowed"]
        _require(Path(f), cols, "every mixture source carries its text_column and training_allowed")
        names = pq.read_schema(f).names if ledger_files else []
        key = "doc_id" if "doc_id" in names else "url" if "url" in names else None
        opted = pa.array(sorted(out_ids if key == "doc_id" else out_urls), pa.string())
        first_row = 0
        for batch in pq.ParquetFile(f).iter_batches(
            batch_size=READ_ROWS, columns=cols + ([key] if key else [])
        ):
            ok = flag_mask(batch.column(1))
            if key:  # the consent ledger's later opt-outs
                ok = ok & ~pc.is_in(batch.column(2), value_set=opted).to_numpy(zero_copy_only=False)
            rows = np.flatnonzero(ok == allowed)
            base, first_row = first_row, first_row + batch.num_rows
            if not len(rows):
                continue
            texts = pc.fill_null(batch.column(0).take(pa.array(rows)), "").to_pylist()
            tokens, lengths = encode_texts(tok, texts)
            yield [f"{f}#{base + r}" for r in rows.tolist()], tokens, lengths


def _prefixes(tokens: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """Each document's first VERIFY_TOKENS tokens."""
    starts = (np.cumsum(lengths) - lengths).tolist()
    return [
        tokens[a : a + min(n, VERIFY_TOKENS)] for a, n in zip(starts, lengths.tolist(), strict=True)
    ]


def _streams(mix_dir: Path, manifest: dict[str, Any]) -> Iterator[list[np.ndarray]]:
    """Each packed stream: a stage's shards in order, then every eval array on its own."""
    by_stage: dict[str, list[str]] = {}
    for s in manifest["shards"]:
        by_stage.setdefault(str(s.get("stage", "")), []).append(s["path"])
    # With images, padding also sits before an image block moved to the next row: drop it, so the
    # stream is again copies and boundaries only.
    pad = int(manifest["special_tokens"]["pad"]) if manifest.get("image_tokens") else None

    def load(p: str) -> np.ndarray:
        arr = np.load(mix_dir / p, mmap_mode="r")
        return arr if pad is None else np.asarray(arr)[np.asarray(arr) != pad]

    for paths in by_stage.values():
        yield [load(p) for p in paths]
    for e in manifest.get("eval", []):
        yield [load(e["path"])]


def mixture_no_opted_out_rows(mix_dir: Path, lake_root: Path) -> CheckOutcome:
    """No document whose row says training_allowed is not true reached the shards or eval sets.

    The shards carry no per-row provenance (the builder keeps row numbers only while tokenizing and
    writes none to the manifest), so this is proven by content: every opted-out row of every file
    the spec's sources read is tokenized with the mixture's tokenizer and looked for at every
    document-copy start of the packed streams (see PROBE_TOKENS / VERIFY_TOKENS). A copy that
    agrees with an opted-out row over its first VERIFY_TOKENS tokens (or all of its tokens, when
    shorter) is found; if an allowed row of the same sources agrees as far, the copy may be that
    row's and counts as `ambiguous`, not found. Copies the sampler cut shorter than PROBE_TOKENS
    are not recognised. Opted-out rows with no tokens contribute nothing and are only counted.
    """
    from training.tokenizer import load_tokenizer

    mix_dir = Path(mix_dir)
    manifest = _mix_manifest(mix_dir)
    boundary = int(manifest["special_tokens"]["boundary"])
    tok = load_tokenizer(mix_dir / "tokenizer.json")
    files = _source_files(manifest, mix_dir, Path(lake_root))
    from common.consent import honoured_files, opted_out

    honoured = honoured_files(lake_root, manifest.get("consent_ledger"))
    ledger = (honoured, *opted_out(honoured))
    refs: list[str] = []
    key_parts: list[np.ndarray] = []
    empty = 0
    for batch_refs, tokens, lengths in _source_docs(files, tok, allowed=False, ledger=ledger):
        nonempty = lengths > 0
        empty += int((~nonempty).sum())
        key_parts.append(_doc_keys(tokens, lengths, boundary)[nonempty])
        refs += [r for r, keep in zip(batch_refs, nonempty.tolist(), strict=True) if keep]
    keys = np.concatenate(key_parts) if key_parts else np.zeros((0, PROBE_TOKENS), np.uint32)
    by_hash: dict[int, list[int]] = {}
    for i, h in enumerate(_hash_keys(keys).tolist()):
        by_hash.setdefault(h, []).append(i)
    probe = np.array(sorted(by_hash), dtype=np.uint64)

    # Candidates: opted-out row -> the copies (up to VERIFY_TOKENS tokens) that open like it.
    candidates: dict[int, list[np.ndarray]] = {}
    copies = streams = 0
    for pieces in _streams(mix_dir, manifest):
        streams += 1
        for buf, starts in _copy_starts(pieces, boundary):
            copies += len(starts)
            if not len(probe) or not len(starts):
                continue
            opening = _windows(buf, starts, PROBE_TOKENS, boundary)
            h = _hash_keys(opening)
            hits = np.flatnonzero(np.isin(h, probe))
            if not len(hits):
                continue
            wide = _windows(buf, starts[hits], VERIFY_TOKENS, boundary)
            for j, row in enumerate(hits.tolist()):
                for i in by_hash[int(h[row])]:
                    if np.array_equal(keys[i], opening[row]):
                        candidates.setdefault(i, []).append(_copy_prefix(wide[j], boundary))

    found: set[int] = set()
    ambiguous: set[int] = set()
    if candidates:
        wanted = {refs[i]: i for i in candidates}
        docs: dict[int, np.ndarray] = {}
        for batch_refs, tokens, lengths in _source_docs(files, tok, allowed=False, ledger=ledger):
            for r, prefix in zip(batch_refs, _prefixes(tokens, lengths), strict=True):
                if r in wanted:
                    docs[wanted[r]] = prefix
        openings = {keys[i].tobytes() for i in candidates}
        allowed: list[np.ndarray] = []
        for _, tokens, lengths in _source_docs(files, tok, allowed=True, ledger=ledger):
            k = _doc_keys(tokens, lengths, boundary)
            for key, prefix in zip(k, _prefixes(tokens, lengths), strict=True):
                if key.tobytes() in openings:
                    allowed.append(prefix)
        for i, copies_of in candidates.items():
            for p in copies_of:
                if not np.array_equal(docs[i][: len(p)], p):
                    continue  # opens like the opted-out row but goes on otherwise
                if any(np.array_equal(a[: len(p)], p) for a in allowed):
                    ambiguous.add(i)
                else:
                    found.add(i)
    ambiguous -= found
    leaked = sorted(found)
    meta: dict[str, Figure] = {
        "source_files": len({f for f, _, _ in files}),
        "opted_out_rows": len(refs) + empty,
        "opted_out_probed": len(refs),
        "opted_out_empty": empty,
        "streams": streams,
        "copies_scanned": copies,
        "opted_out_found": len(leaked),
        "ambiguous": len(ambiguous),
        "probe_tokens": PROBE_TOKENS,
        "verify_tokens": VERIFY_TOKENS,
        "first_found": refs[leaked[0]] if leaked else "",
        "first_ambiguous": refs[min(ambiguous)] if ambiguous else "",
    }
    verdict = (
        "0 opted-out rows in the shards"
        if not leaked
        else f"{len(leaked)} opted-out row(s) found in the shards (first {refs[leaked[0]]})"
    )
    if ambiguous:
        verdict += (
            f"; {len(ambiguous)} opted-out row(s) indistinguishable from allowed rows over the "
            f"copy found (ambiguous, first {refs[min(ambiguous)]})"
        )
    return CheckOutcome(
        not leaked,
        f"mixture {mix_dir}: {len(refs)} opted-out row(s) of {meta['source_files']} source "
        f"file(s) looked for in {copies} document copies; {verdict}",
        meta,
    )


# --- training --------------------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file; run `refinery train` into this directory")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _within_warmup(run_dir: Path) -> str | None:
    """'N <= W steps' when the run's total steps do not pass its warm-up (run.json), else None."""
    try:
        run = json.loads((run_dir / "run.json").read_text())
        stage = run["config"]["stages"][run["stage"]]
        total, warmup = int(run["total_steps"]), int(stage.get("warmup_steps") or 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return f"{total} <= {warmup} steps" if total <= warmup else None


MIN_WINDOW = 3  # logged steps per window at the least: fewer and one batch's noise decides


def training_loss_finite_and_falling(run_dir: Path) -> CheckOutcome:
    """Every logged loss is finite, and the loss fell over the run.

    Finite: every training loss in metrics.jsonl, every eval loss in eval.jsonl (None is allowed
    there: a group without sequences) and summary.json's losses are finite numbers.
    Falling is judged on evidence that does not hinge on one batch:
    - the held-out loss, where the run has one: the same held-out sequences scored before the
      first step and after the last (summary.json `eval_mean_before` -> `eval_mean`); it must
      end lower;
    - else the training loss in windows: the mean of the first quarter of logged steps against
      the mean of the last quarter, each window at least MIN_WINDOW logged steps (a run that
      logs fewer than 2 * MIN_WINDOW steps and has no held-out loss fails: log more often).
    A run that ends within its warm-up (run.json: total steps <= warmup_steps) is not judged on
    falling, and says so.
    """
    run_dir = Path(run_dir)
    metrics = sorted(_jsonl(run_dir / "metrics.jsonl"), key=lambda r: r["step"])
    evals = _jsonl(run_dir / "eval.jsonl") if (run_dir / "eval.jsonl").exists() else []
    losses = [r.get("loss") for r in metrics]
    bad_train = sum(1 for v in losses if not _finite(v))
    bad_eval = sum(1 for r in evals if r.get("loss") is not None and not _finite(r["loss"]))
    bad_summary = 0
    summary: dict[str, Any] = {}
    if (run_dir / "summary.json").exists():
        summary = json.loads((run_dir / "summary.json").read_text())
        vals = [
            summary.get("final_loss"),
            summary.get("eval_mean"),
            summary.get("eval_mean_before"),
        ]
        vals += list((summary.get("eval") or {}).values())
        vals += list((summary.get("eval_before") or {}).values())
        bad_summary = sum(1 for v in vals if v is not None and not _finite(v))
    finite = not (bad_train or bad_eval or bad_summary)
    n = len(metrics)
    window = max(MIN_WINDOW, n // 4)
    first = last = float("nan")
    falling = False
    basis = "train"
    within_warmup = _within_warmup(run_dir)
    held_out = _finite(summary.get("eval_mean_before")) and _finite(summary.get("eval_mean"))
    if within_warmup is not None:
        # Still warming up when it stopped: the learning rate never reached its peak, and the
        # loss of a continued run may rise first on its new mixture. Not judged; said so.
        basis = "within_warmup"
        falling = True
    elif held_out:
        basis = "held-out"
        first, last = float(summary["eval_mean_before"]), float(summary["eval_mean"])
        falling = last < first
    elif n >= 2 * window and not bad_train:
        first = sum(losses[:window]) / window
        last = sum(losses[-window:]) / window
        falling = last < first
    meta: dict[str, Figure] = {
        "steps_logged": n,
        "first_step": int(metrics[0]["step"]) if metrics else 0,
        "last_step": int(metrics[-1]["step"]) if metrics else 0,
        "window": window,
        "loss_first_mean": first,
        "loss_last_mean": last,
        "loss_drop": first - last,
        "nonfinite_train_losses": bad_train,
        "nonfinite_eval_losses": bad_eval,
        "nonfinite_summary_losses": bad_summary,
        "finite": finite,
        "falling": falling,
        "judged_on": basis,
    }
    if not finite:
        verdict = (
            f"non-finite losses: {bad_train} train, {bad_eval} eval, {bad_summary} in summary.json"
        )
    elif basis == "within_warmup":
        verdict = f"not judged: the run ended within its warm-up ({within_warmup})"
    elif basis == "held-out":
        word = "falling" if falling else "not falling"
        verdict = f"{n} logged step(s); held-out loss {word}: {first:.4f} -> {last:.4f}"
    elif n < 2 * window:
        verdict = (
            f"{n} logged step(s) and no held-out loss: too few for two windows of {window} "
            "steps; log more often (train.log_every) or evaluate (train.eval_every)"
        )
    elif not falling:
        verdict = f"not falling: last {window} step(s) mean {last:.4f} >= first {first:.4f}"
    else:
        verdict = f"falling: first {window} step(s) mean {first:.4f} -> last {last:.4f}"
    return CheckOutcome(
        finite and falling,
        f"training {run_dir}: {n} logged step(s), all losses finite: {finite}; {verdict}",
        meta,
    )


# --- images --------------------------------------------------------------------------------

OPT_OUT_REASONS = ("robots_denied", "training_opt_out", "noai")


def image_pairs_consent(pairs_dir: Path) -> CheckOutcome:
    """No opted-out image is stored or kept: a row the training token may not use (robots,
    X-Robots-Tag, the page's noai) has no stored file and is not kept, and every stored file
    belongs to a row the training token may use."""
    pairs_dir = Path(pairs_dir)
    path = pairs_dir / "pairs.parquet"
    table = _read_columns(
        path,
        ["id", "image_path", "image_sha256", "training_allowed", "drop_reason"],
        "run `refinery images build` to write it",
    )
    rows = table.to_pylist()
    stored_rows = [r for r in rows if r["image_path"]]
    leaked = [
        r["id"]
        for r in rows
        if (not flag_true(r["training_allowed"]) or r["drop_reason"] in OPT_OUT_REASONS)
        and (r["image_path"] or r["drop_reason"] is None)
    ]
    files = (
        {p.name.split(".")[0] for p in (pairs_dir / "images").rglob("*.*")}
        if (pairs_dir / "images").exists()
        else set()
    )
    allowed = {r["image_sha256"] for r in stored_rows if flag_true(r["training_allowed"])}
    orphans = sorted(files - allowed)
    passed = not leaked and not orphans
    verdict = "no opted-out image stored or kept"
    if leaked:
        verdict = f"opted-out rows stored or kept: {_first(leaked)}"
    if orphans:
        verdict += f"; stored files of no allowed row: {_first(orphans)}"
    return CheckOutcome(
        passed,
        f"pairs {path}: {len(rows)} rows, {len(files)} stored files; {verdict}",
        {
            "rows": len(rows),
            "stored_files": len(files),
            "opted_out_rows": sum(1 for r in rows if not flag_true(r["training_allowed"])),
            "leaked_rows": len(leaked),
            "orphan_files": len(orphans),
        },
    )
