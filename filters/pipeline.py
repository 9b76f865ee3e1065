"""The filter stage's steps over records, and the in-process executor `run_local`.

The steps know nothing of how they are run; two executors run the same steps and write
byte-identical outputs with the same counts:

- `run_local` (here): one process, chunk after chunk, the dedup shuffle in a dict;
- the Beam pipeline (`pipelines/beam/filter.py`): chunks and shards on workers, one
  GroupByKey per dedup step.

Flow: the input's row ranges (`plan_chunks`) first give their lines' keys to the line
de-duplication's count (`chunk_line_pairs`, `filters.linededup`), then are read (`read_chunk`),
stripped of their repeated lines, annotated (`filters.annotate.DocumentAnnotator`) and written as
`pre-<chunk>` parts; the dedup candidates' features (`filters.dedup_shards.chunk_features`) go
through the sharded dedup steps; each chunk's part is then finalised with its duplicates (`finalise_chunk`: annotated and documents parts), each
shard's cluster rows written (`write_cluster_part`), and `merge_outputs` streams the parts into
annotated.parquet, documents.parquet and dup_clusters.parquet (one row group at a time) and writes
the counts the stage needs (funnel, hosts, summary) to counts.json.

File access goes through a `files` object (`LOCAL_FILES` here; the Beam pipeline passes its
`FileSystems` wrapper, so workers need no shared disk).
"""

from __future__ import annotations

import heapq
import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq

from common.inputs import url_host, utf8_replaced
from filters import dedup_shards, linededup
from filters.annotate import ADDED_COLUMNS, REWRITTEN_COLUMNS
from filters.config import FilterConfig

MAX_CHUNKS = 16  # row ranges per input file (and dedup shards)
MIN_CHUNK_ROWS = 50

CLUSTER_SCHEMA = pa.schema(
    [
        ("cluster_id", pa.string()),
        ("id", pa.string()),
        ("duplicate_of", pa.string()),
        ("match", pa.string()),
        ("cluster_size", pa.int64()),
    ]
)

Chunk = tuple[int, str, int, int]  # (index, path, first row, end row)


def _local_write_bytes(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _local_read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


LOCAL_FILES = SimpleNamespace(
    open_read=lambda path: open(path, "rb"),  # noqa: SIM115 - the caller closes it
    open_write=lambda path: open(path, "wb"),  # noqa: SIM115 - the caller closes it
    join=os.path.join,
    rename=os.replace,
    read_json=lambda path: json.loads(_local_read_bytes(path)),
    write_json=lambda path, doc: _local_write_bytes(path, json.dumps(doc, sort_keys=True).encode()),
)


def output_schema(input_schema: pa.Schema) -> pa.Schema:
    """Input columns (text as string, training_allowed as boolean: `annotate.REWRITTEN_COLUMNS`)
    plus the filter's columns (`annotate.ADDED_COLUMNS`)."""
    added = {**ADDED_COLUMNS, **linededup.COLUMNS}
    fields = [f for f in input_schema if f.name not in added]
    fields = [
        pa.field(f.name, REWRITTEN_COLUMNS[f.name]) if f.name in REWRITTEN_COLUMNS else f
        for f in fields
    ]
    return pa.schema(fields + [pa.field(k, v) for k, v in added.items()])


def plan_chunks(docs_path: str, files=LOCAL_FILES, max_rows: int | None = None) -> list[Chunk]:
    """(chunk, path, first row, end row) ranges of the input; reads only the Parquet footer.

    A chunk is the rows a worker holds at once; `max_rows` (from a memory budget,
    `rows_for_budget`) caps it, so a budget gives more, smaller chunks.
    """
    with files.open_read(docs_path) as f:
        n = pq.ParquetFile(f).metadata.num_rows
    size = max(MIN_CHUNK_ROWS, math.ceil(n / MAX_CHUNKS))
    if max_rows is not None:
        size = max(1, min(size, max_rows))
    return [(i, docs_path, a, min(n, a + size)) for i, a in enumerate(range(0, n, size))]


def shard_count(chunks: list[Chunk]) -> int:
    """Dedup shards of a run: one per chunk (at least one, at most MAX_CHUNKS). The clusters do
    not depend on the number of shards (`filters.dedup_shards`)."""
    return max(1, min(len(chunks), MAX_CHUNKS))


# Memory of the filter, for `memory_budget_mib` (see common.budget). Measured with
# common.memory.PeakMemory around `pipelines.stages.filter.run_filter` (no quality models) on 300
# rows of sample-web texts joined into ~85 KB rows, each run in a fresh process with Beam
# imported: in process, 8 rows at once grew 56 MiB over the resident set and all 300 at once
# 92 MiB, so a row held costs ~1.5 times its uncompressed Parquet size (the row as Python
# objects, its annotated copy, the Arrow table of the part); on the DirectRunner 8 rows at once
# grew 75 MiB; on the demo lake's extract output (432 rows, its quality models) in a fresh
# process the DirectRunner grew 90 MiB over what was resident when the budget was read.
# FILTER_FIXED_MIB covers that fixed part (language ID, PII, MinHash, Beam's in-memory runner,
# the parts' buffers) and FILTER_ROW_FACTOR doubles the per-row figure; the quality models'
# files (loaded whole) and the language-ID model come on top.
FILTER_ROW_FACTOR = 3.0
FILTER_FIXED_MIB = 112.0
FILTER_MIN_ROW_MIB = 0.01  # a row's Python objects and annotations however short its text


def _row_bytes(docs_path: str, files=LOCAL_FILES) -> float:
    """Mean uncompressed Parquet bytes of a row of the input (its footer's row groups)."""
    with files.open_read(docs_path) as f:
        meta = pq.ParquetFile(f).metadata
    rows = meta.num_rows
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return size / rows if rows else 0.0


def _model_mib(*dirs: str | Path | None) -> float:
    """Size of the quality models (`*.bin`, loaded whole) in the given directories, in MiB."""
    total = 0
    for d in dirs:
        if d and Path(d).is_dir():
            total += sum(p.stat().st_size for p in Path(d).glob("*.bin"))
    return total / 2**20


def rows_for_budget(
    docs_path: str,
    budget_mib: float,
    cfg: FilterConfig,
    models_dir: str | Path | None,
    workers: int = 1,
    files=LOCAL_FILES,
):
    """The chunk size (`common.budget.Fit`; `units` = rows held at once per worker) that keeps
    the filter under `budget_mib` with `workers` workers in this process."""
    from common.budget import fit
    from common.langid import lid176_path

    row_mib = max(FILTER_MIN_ROW_MIB, FILTER_ROW_FACTOR * _row_bytes(docs_path, files) / 2**20)
    lid = lid176_path()
    fixed = FILTER_FIXED_MIB + (lid.stat().st_size / 2**20 if lid.exists() else 0.0)
    fixed += _model_mib(models_dir, cfg.quality.fallback_models_dir)
    return fit(
        budget_mib,
        stage="filter",
        unit="row held at once",
        unit_mib=row_mib * max(1, workers),
        fixed_mib=fixed,
    )


def read_chunk(chunk: Chunk, files=LOCAL_FILES, columns: list[str] | None = None) -> Iterator[dict]:
    """Rows [start, stop) of a Parquet file, in input order (only `columns` if given). Text that
    is not UTF-8 is read with U+FFFD for its bad bytes: the run recorded those rows as
    `invalid_utf8` rejects (`input_rejects`), and one such row never ends the run."""
    _, path, start, stop = chunk
    with files.open_read(path) as f:
        pf = pq.ParquetFile(f)
        base = 0
        for rg in range(pf.metadata.num_row_groups):
            n = pf.metadata.row_group(rg).num_rows
            if base < stop and base + n > start:
                offset = base
                for batch in pf.iter_batches(batch_size=512, row_groups=[rg], columns=columns):
                    lo, hi = offset, offset + batch.num_rows
                    offset = hi
                    if hi <= start:
                        continue
                    first = max(lo, start)
                    part = utf8_replaced(batch.slice(first - lo, min(hi, stop) - first))
                    yield from part.to_pylist()
                    if hi >= stop:
                        break
            base += n


def make_annotator(cfg: FilterConfig, models_dir: str | None, stage: Callable = lambda p: p):
    """The row annotator; `stage` makes a model directory local (fastText loads local files)."""
    from filters.annotate import DocumentAnnotator

    fallback = cfg.quality.fallback_models_dir
    staged = stage(fallback) if fallback else fallback
    if staged != fallback:
        cfg = cfg.model_copy(deep=True)
        cfg.quality.fallback_models_dir = staged
    return DocumentAnnotator(cfg, stage(models_dir))


def _part(parts_dir: str, name: str, index: int, files) -> str:
    return files.join(parts_dir, f"{name}-{index:06d}.parquet")


def _write_table(path: str, table: pa.Table, files) -> None:
    with files.open_write(path) as f:
        pq.write_table(table, f)


def chunk_line_pairs(chunk: Chunk, files=LOCAL_FILES) -> tuple[int, object]:
    """A chunk's (line key, document key) pairs for the line de-duplication's count."""
    texts = (r["text"] for r in read_chunk(chunk, files, columns=["text"]))
    return chunk[0], linededup.line_pairs(texts)


# Rows the filter cannot treat as documents, found in the input before any step runs
# (`filters.run.input_rejects`): each is annotated, its `drop_reason` this reason.
INPUT_REJECTS = ("invalid_utf8", "null_id", "duplicate_id")


def _rejects_part(parts_dir: str, index: int, files) -> str:
    return files.join(parts_dir, f"rejects-{index:06d}.json")


def write_input_rejects(
    rejects: dict[int, str], chunks: list[Chunk], parts_dir: str, files=LOCAL_FILES
) -> None:
    """Write each chunk's input rejects (row within the chunk -> reason) to the work dir, where
    `annotate_chunk` reads them (any executor: the work dir is theirs)."""
    from bisect import bisect_right

    starts = [c[2] for c in chunks]
    by_chunk: dict[int, dict[str, str]] = {}
    for row, why in sorted(rejects.items()):
        index, _, start, _ = chunks[bisect_right(starts, row) - 1]
        by_chunk.setdefault(index, {})[str(row - start)] = why
    for index, mine in by_chunk.items():
        files.write_json(_rejects_part(parts_dir, index, files), mine)


def _input_rejects(chunk: Chunk, parts_dir: str, files) -> dict[int, str]:
    try:
        found = files.read_json(_rejects_part(parts_dir, chunk[0], files))
    except OSError:  # none written: the chunk has no input rejects
        return {}
    return {int(k): v for k, v in found.items()}


def annotate_chunk(
    chunk: Chunk,
    annotator,
    parts_dir: str,
    schema: pa.Schema,
    cfg: FilterConfig,
    files=LOCAL_FILES,
    repeated: set[int] | frozenset = frozenset(),
) -> tuple[int, list[tuple]]:
    """Read a chunk, remove its `repeated` lines and annotate it (`linededup.annotate_row`),
    mark its input rejects (`write_input_rejects`), write it as the `pre` part; return its
    dedup features (never of a reject)."""
    rejects = _input_rejects(chunk, parts_dir, files)
    rows = [linededup.annotate_row(r, annotator, repeated) for r in read_chunk(chunk, files)]
    for i, reason in rejects.items():
        rows[i]["drop_reason"], rows[i]["rescued"] = reason, False
    _write_table(
        _part(parts_dir, "pre", chunk[0], files), pa.Table.from_pylist(rows, schema), files
    )
    return chunk[0], dedup_shards.chunk_features(rows, cfg.dedup, chunk[0])


def finalise_rows(rows: list[dict], dups: Iterable[tuple[str, str, str]]) -> list[dict]:
    """Mark duplicates: `duplicate_of` and `<match>_duplicate` on rows no other filter dropped."""
    by_id = {d[0]: d for d in dups}
    for row in rows:
        d = by_id.get(row["id"])
        if d is not None and row["drop_reason"] is None:
            row["duplicate_of"], row["drop_reason"] = d[1], f"{d[2]}_duplicate"
    return rows


def finalise_chunk(
    chunk: int,
    dups: Iterable[tuple[str, str, str]],
    parts_dir: str,
    schema: pa.Schema,
    files=LOCAL_FILES,
) -> tuple[str, int, dict]:
    """A chunk's `pre` part with its duplicates marked -> annotated and documents parts.

    Returns the chunk's descriptor for `merge_outputs`: ("rows", chunk, partial counts).
    """
    with files.open_read(_part(parts_dir, "pre", chunk, files)) as f:
        rows = finalise_rows(pq.read_table(f).to_pylist(), dups)
    kept = [r for r in rows if r["drop_reason"] is None]
    for name, part in (("annotated", rows), ("documents", kept)):
        _write_table(
            _part(parts_dir, name, chunk, files), pa.Table.from_pylist(part, schema), files
        )
    return "rows", chunk, partial_counts(rows)


def write_cluster_part(
    shard: int, rows: list[dict], parts_dir: str, files=LOCAL_FILES
) -> tuple[str, int, dict]:
    """Write one shard's cluster rows sorted by (cluster_id, id); return its descriptor."""
    rows = sorted(rows, key=lambda r: (r["cluster_id"], r["id"]))
    _write_table(
        _part(parts_dir, "clusters", shard, files),
        pa.Table.from_pylist(rows, schema=CLUSTER_SCHEMA),
        files,
    )
    reps = sum(r["duplicate_of"] is None for r in rows)
    return "clusters", shard, {"rows": len(rows), "clusters": reps}


def partial_counts(rows: list[dict]) -> dict:
    """Counts of annotated rows the stage's reports need; `merge_counts` adds them up."""
    from filters.report import count_tokens

    funnel: Counter = Counter()
    hosts: Counter = Counter()
    scored: Counter = Counter()
    contamination: Counter = Counter()  # (eval set, lang) -> documents it marked
    kept: list[tuple[str, str]] = []  # (text, lang) of the kept rows: tokens_kept
    for r in rows:
        lang, reason = r["lang"], r["drop_reason"]
        funnel[(lang or "und", reason or "kept")] += 1
        hosts[(url_host(r["url"]), lang or "und")] += 1  # '' when it does not parse
        q = r["quality_score"]
        scored[(lang, q is not None and not math.isnan(q))] += 1
        if reason is None:
            kept.append((r["text"] or "", lang or "und"))
        for name in (r["contamination_benchmarks"] or "").split(",") if r["contaminated"] else ():
            contamination[(name, lang or "und")] += 1
    return {
        "rows": len(rows),
        "funnel": [[k[0], k[1], n] for k, n in funnel.items()],
        "hosts": [[k[0], k[1], n] for k, n in hosts.items()],
        "scored": [[k[0], k[1], n] for k, n in scored.items()],
        "contamination": [[k[0], k[1], n] for k, n in contamination.items()],
        "contaminated_docs": sum(bool(r["contaminated"]) for r in rows),
        # The rule of stats.json's steps, so the dedup step's "tokens out" in funnel.md is this.
        "tokens_kept": count_tokens([t for t, _ in kept], [lang for _, lang in kept]),
    }


def merge_counts(parts: list[dict]) -> dict:
    """Sum partial counts (deterministic order of keys)."""
    out: dict = {"rows": 0, "tokens_kept": 0, "contaminated_docs": 0}
    for key in ("funnel", "hosts", "scored", "contamination"):
        c: Counter = Counter()
        for p in parts:
            for a, b, n in p[key]:
                c[(a, b)] += n
        out[key] = sorted(
            ([a, b, n] for (a, b), n in c.items()), key=lambda x: (str(x[0]), str(x[1]))
        )
    for p in parts:
        out["rows"] += p["rows"]
        out["tokens_kept"] += p["tokens_kept"]
        out["contaminated_docs"] += p["contaminated_docs"]
    return out


def _write_parquet(dest: str, schema: pa.Schema, tables, files) -> None:
    tmp = dest + ".tmp"
    with files.open_write(tmp) as f:
        with pq.ParquetWriter(f, schema) as writer:
            for t in tables:
                writer.write_table(t)
    files.rename(tmp, dest)


def _concat(paths: list[str], dest: str, schema: pa.Schema, files) -> None:
    def tables():
        for p in paths:
            with files.open_read(p) as f:
                pf = pq.ParquetFile(f)
                for rg in range(pf.metadata.num_row_groups):
                    yield pf.read_row_group(rg).cast(schema)

    _write_parquet(dest, schema, tables(), files)


def _merge_clusters(paths: list[str], dest: str, files, block: int = 65536) -> None:
    def rows(p):
        with files.open_read(p) as f:
            for b in pq.ParquetFile(f).iter_batches(batch_size=4096):
                yield from b.to_pylist()

    def tables():
        merged = heapq.merge(*(rows(p) for p in paths), key=lambda r: (r["cluster_id"], r["id"]))
        buf: list[dict] = []
        for r in merged:
            buf.append(r)
            if len(buf) >= block:
                yield pa.Table.from_pylist(buf, schema=CLUSTER_SCHEMA)
                buf = []
        yield pa.Table.from_pylist(buf, schema=CLUSTER_SCHEMA)

    _write_parquet(dest, CLUSTER_SCHEMA, tables(), files)


def merge_outputs(
    descriptors: Iterable[tuple],
    parts_dir: str,
    out_dir: str,
    schema: pa.Schema,
    chunks: int,
    files=LOCAL_FILES,
) -> dict:
    """The last step: stream the parts into the output files; write and return the counts.

    `descriptors`: ("rows", chunk, counts) from `finalise_chunk`, ("clusters", shard, counts)
    from `write_cluster_part`, ("leftover", 0, [n]) from the dedup; others are ignored.
    """
    descriptors = list(descriptors)
    rows = sorted((d[1], d[2]) for d in descriptors if d[0] == "rows")
    cluster_parts = sorted((d[1], d[2]) for d in descriptors if d[0] == "clusters")
    leftover = sum(d[2][0] for d in descriptors if d[0] == "leftover")
    if [c for c, _ in rows] != list(range(chunks)):
        raise RuntimeError(
            f"filter lost row ranges: wrote {len(rows)} of {chunks} annotated parts in {parts_dir}"
        )
    for name in ("annotated", "documents"):
        paths = [_part(parts_dir, name, c, files) for c, _ in rows]
        _concat(paths, files.join(out_dir, f"{name}.parquet"), schema, files)
    _merge_clusters(
        [_part(parts_dir, "clusters", p, files) for p, _ in cluster_parts],
        files.join(out_dir, "dup_clusters.parquet"),
        files,
    )
    counts = merge_counts([c for _, c in rows])
    counts["kept"] = sum(n for _, reason, n in counts["funnel"] if reason == "kept")
    counts["cluster_rows"] = sum(c["rows"] for _, c in cluster_parts)
    counts["clusters"] = sum(c["clusters"] for _, c in cluster_parts)
    counts["dedup_leftover_edges"] = leftover
    files.write_json(files.join(parts_dir, "counts.json"), counts)
    return counts


def dedup_outputs(
    results: Iterable[tuple[str, int, list]], parts_dir: str, files=LOCAL_FILES
) -> tuple[list[tuple], dict[int, list]]:
    """`dedup_shards.components` outputs -> (cluster-part and leftover descriptors, dups by chunk)."""
    descriptors: list[tuple] = []
    dups: dict[int, list] = {}
    for kind, key, data in results:
        if kind == "clusters":
            descriptors.append(write_cluster_part(key, data, parts_dir, files))
        elif kind == "dups":
            dups.setdefault(key, []).extend(data)
        else:
            descriptors.append((kind, key, data))
    return descriptors, dups


def line_threshold(chunks: list[Chunk], cfg: FilterConfig) -> int:
    """Documents a line must be in to be removed, for this input's size."""
    return linededup.threshold(cfg.line_dedup, sum(c[3] - c[2] for c in chunks))


def repeated_by_chunk(chunks: list[Chunk], cfg: FilterConfig, files=LOCAL_FILES) -> dict:
    """The line de-duplication's count in this process: chunk -> its repeated line keys."""
    if not cfg.line_dedup.enabled:
        return {}
    pairs = [chunk_line_pairs(c, files) for c in chunks]
    found = linededup.run_in_memory(pairs, shard_count(chunks), line_threshold(chunks, cfg))
    return {c: set(keys.tolist()) for c, keys in found.items()}


def run_local(
    docs_path: str | Path,
    out_dir: str | Path,
    work_dir: str | Path,
    schema: pa.Schema,
    cfg: FilterConfig,
    models_dir: str | Path | None,
    *,
    rounds: int = dedup_shards.ROUNDS,
    files=LOCAL_FILES,
    max_rows: int | None = None,
) -> dict:
    """The in-process executor: out_dir/{annotated,documents,dup_clusters}.parquet in this process.

    Parts go to `work_dir` (which must exist); returns the counts (also in work_dir/counts.json),
    the same as the Beam pipeline's for the same input and config. `max_rows` caps the rows
    held at once (`plan_chunks`).
    """
    docs_path, out_dir, work_dir = str(docs_path), str(out_dir), str(work_dir)
    chunks = plan_chunks(docs_path, files, max_rows)
    annotator = make_annotator(cfg, str(models_dir) if models_dir else None)
    repeated = repeated_by_chunk(chunks, cfg, files)
    batches = [
        annotate_chunk(c, annotator, work_dir, schema, cfg, files, repeated.get(c[0], frozenset()))
        for c in chunks
    ]
    results = dedup_shards.run_in_memory(batches, cfg.dedup, shard_count(chunks), rounds)
    del batches
    descriptors, dups = dedup_outputs(results, work_dir, files)
    descriptors += [
        finalise_chunk(c[0], dups.get(c[0], []), work_dir, schema, files) for c in chunks
    ]
    return merge_outputs(descriptors, work_dir, out_dir, schema, len(chunks), files)
