"""Beam pipeline of the filter stage: annotate every row, then exact/URL/MinHash de-duplication.

Built from the transforms every runner translates (Create, ParDo, GroupByKey, Flatten), with
one sink at the end, no side inputs, no Beam metrics and no Beam file sinks, so the same
pipeline runs on Direct, Portable, Dask, Flink, Spark and Dataflow:

1. `Create` of row ranges of documents.parquet; workers read their range through Beam's
   `FileSystems` (no shared disk) and annotate it. Models are copied from `models_dir` (any
   FileSystems path) in `setup()`; the config arrives as a JSON constructor argument.
2. Dedup keys per kept row; each key group (exact hash, canonical URL, LSH bucket) links its
   members to its smallest id (linear); LSH links are verified by estimated Jaccard after
   joining signatures by id.
3. Connected components by min-label propagation: `ROUNDS` rounds, each one GroupByKey over
   the nodes that have edges (a node's state carries its label, neighbours and node info; it
   sends its label to its neighbours and keeps the smallest it receives). A node's label is
   the best `rank_key` it has seen, so a finished component's label is its representative.
   Edges whose ends still disagree afterwards (components wider than ROUNDS hops) are merged
   in one task; only those go there, and their number is reported (`dedup_leftover_edges`).
4. Workers write the outputs: one part per row range (sorted by input position) and per
   cluster partition (sorted by cluster_id, id); the last step streams the parts into
   annotated.parquet, documents.parquet and dup_clusters.parquet (one row group at a time)
   and writes the counts the driver needs (funnel, hosts, summary) as a small JSON file.
"""

from __future__ import annotations

import heapq
import json
import math
import zlib
from collections import Counter
from urllib.parse import urlsplit

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.options.pipeline_options import PipelineOptions

from filters import dedup
from filters.config import FilterConfig
from pipelines.beam import fs

NEAR = "near"
ROUNDS = 4  # label-propagation rounds before leftover edges are merged in one task
MAX_CHUNKS = 16  # row ranges per input file (Dask: partitions)
MIN_CHUNK_ROWS = 50
POS, CHUNK = "_pos", "_chunk"  # input position and row range, carried through, never written

CLUSTER_SCHEMA = pa.schema(
    [
        ("cluster_id", pa.string()),
        ("id", pa.string()),
        ("duplicate_of", pa.string()),
        ("match", pa.string()),
        ("cluster_size", pa.int64()),
    ]
)


def plan_chunks(docs_path: str) -> list[tuple[int, str, int, int]]:
    """(chunk, path, first row, end row) ranges of the input; reads only the Parquet footer."""
    with fs.open_read(docs_path) as f:
        n = pq.ParquetFile(f).metadata.num_rows
    size = max(MIN_CHUNK_ROWS, math.ceil(n / MAX_CHUNKS))
    return [(i, docs_path, a, min(n, a + size)) for i, a in enumerate(range(0, n, size))]


class ReadChunkFn(beam.DoFn):
    """Rows [start, stop) of a Parquet file, with their input position and chunk."""

    def process(self, chunk):
        index, path, start, stop = chunk
        with fs.open_read(path) as f:
            pf = pq.ParquetFile(f)
            base = 0
            for rg in range(pf.metadata.num_row_groups):
                n = pf.metadata.row_group(rg).num_rows
                if base < stop and base + n > start:
                    offset = base
                    for batch in pf.iter_batches(batch_size=512, row_groups=[rg]):
                        lo, hi = offset, offset + batch.num_rows
                        offset = hi
                        if hi <= start:
                            continue
                        first = max(lo, start)
                        part = batch.slice(first - lo, min(hi, stop) - first)
                        for i, row in enumerate(part.to_pylist()):
                            row[POS], row[CHUNK] = first + i, index
                            yield row
                        if hi >= stop:
                            break
                base += n


class AnnotateFn(beam.DoFn):
    """Language, PII, heuristics, safety and quality for each row."""

    def __init__(self, config_json: str, models_dir: str | None):
        self.config_json = config_json
        self.models_dir = models_dir

    def setup(self) -> None:
        from filters.annotate import DocumentAnnotator

        cfg = FilterConfig.model_validate_json(self.config_json)
        fallback = getattr(cfg.quality, "fallback_models_dir", None)
        if fallback and not fs.is_local(fallback):
            cfg.quality.fallback_models_dir = fs.stage_locally(fallback)
        self.annotator = DocumentAnnotator(cfg, fs.stage_locally(self.models_dir))

    def process(self, row):
        yield self.annotator.annotate(row)


class DedupFeaturesFn(beam.DoFn):
    """Per kept document: (id, node info, key groups, MinHash signature bytes or None).

    One output: Beam's Dask translation mixes the tagged outputs of a multi-output ParDo, so
    the three streams are split by plain Maps downstream.
    """

    def __init__(self, config_json: str):
        self.config_json = config_json

    def setup(self) -> None:
        self.cfg = FilterConfig.model_validate_json(self.config_json).dedup

    def process(self, row):
        doc_id = row["id"]
        h, u = dedup.text_hash(row["text"]), dedup.canonical_url(row.get("url") or "")
        label = dedup.label_of(row["quality_score"], doc_id)
        groups, sig = [], None
        if self.cfg.exact:
            groups.append(("exact", h))
        if self.cfg.url and row.get("url"):
            groups.append(("url", u))
        if self.cfg.near:
            s = dedup.signature(row["text"], row["lang"], self.cfg)
            sig = s.tobytes()
            groups += [(NEAR, f"{band}:{bh}") for band, bh in dedup.band_keys(s, self.cfg)]
        yield doc_id, (list(label), h, u), groups, sig


def _bucket_edges(item):
    (kind, _), ids = item
    for a, b in dedup.star_pairs(ids):
        yield (a, b) if kind == NEAR else (a, b, kind)


def _attach_sig(item):
    # Join step: (id, {pairs: [...], sig: [bytes]}) -> pairs carrying the signature of `id`.
    doc_id, grouped = item
    sigs = grouped["sig"]
    for other, carried in grouped["pairs"]:
        yield (other, (doc_id, carried + [sigs[0]] if sigs else carried))


def _verify(item, threshold: float):
    doc_id, grouped = item
    if not grouped["pairs"]:
        return
    import numpy as np

    sig = np.frombuffer(grouped["sig"][0], dtype=np.uint32)
    for other, carried in grouped["pairs"]:
        other_sig = np.frombuffer(carried[0], dtype=np.uint32)
        if dedup.estimated_jaccard(sig, other_sig) >= threshold:
            a, b = sorted((doc_id, other))
            yield (a, b, NEAR)


def _label(x) -> tuple[float, str]:
    # Labels cross the wire as tuples or lists; one canonical form (and no -0.0) for keys.
    return (float(x[0]) + 0.0, str(x[1]))


def _node_state(item):
    # (v, [("node", label, hash, url) | ("nbr", u), ...]) -> (v, (label, nbrs, hash, url)),
    # for documents with at least one edge.
    v, parts = item
    node = next((x for x in parts if x[0] == "node"), None)
    nbrs = sorted({x[1] for x in parts if x[0] == "nbr"})
    if node is not None and nbrs:
        yield v, (_label(node[1]), nbrs, node[2], node[3])


def _send(item):
    # One propagation round: a node keeps its state and sends its label to its neighbours.
    v, state = item
    yield v, ("state", state)
    for u in state[1]:
        yield u, ("label", state[0])


def _receive(item):
    v, parts = item
    state = next(x[1] for x in parts if x[0] == "state")
    best = min([_label(state[0])] + [_label(x[1]) for x in parts if x[0] == "label"])
    return v, (best, state[1], state[2], state[3])


def _check(item):
    # After the last round: a neighbour label that differs marks an edge not yet converged.
    v, parts = item
    state = next(x[1] for x in parts if x[0] == "state")
    own = _label(state[0])
    yield "member", (own, (v, state[2], state[3]))
    for other in {_label(x[1]) for x in parts if x[0] == "label"} - {own}:
        yield "leftover", (own, other)


def _merge_leftover(item):
    _, pairs = item
    pairs = list(pairs)
    yield "count", len(pairs)
    yield from (("map", kv) for kv in dedup.merge_label_pairs(pairs).items())


def _relabel(item):
    # Key: a label; members carrying it, and (at most one) new label for it from the merge.
    _, g = item
    new = g["map"][0] if g["map"] else None
    for label, member in g["members"]:
        yield (_label(new) if new else _label(label))[1], member


def _cluster_rows(item):
    rep, members = item
    yield from dedup.cluster_rows(rep, members)


def _finalise(item):
    _, grouped = item
    row = grouped["row"][0]
    clusters = grouped["cluster"]
    if clusters and clusters[0]["duplicate_of"] is not None and row["drop_reason"] is None:
        row["duplicate_of"] = clusters[0]["duplicate_of"]
        row["drop_reason"] = f"{clusters[0]['match']}_duplicate"
    return row


def partial_counts(rows: list[dict]) -> dict:
    """Counts of annotated rows the stage's reports need; `merge_counts` adds them up."""
    from filters.heuristics import tokens

    funnel: Counter = Counter()
    hosts: Counter = Counter()
    scored: Counter = Counter()
    tokens_kept = 0
    for r in rows:
        lang, reason = r["lang"], r["drop_reason"]
        funnel[(lang or "und", reason or "kept")] += 1
        hosts[((urlsplit(r["url"] or "").hostname or ""), lang or "und")] += 1
        q = r["quality_score"]
        scored[(lang, q is not None and not math.isnan(q))] += 1
        if reason is None:
            tokens_kept += len(tokens(r["text"], lang or ""))
    return {
        "rows": len(rows),
        "funnel": [[k[0], k[1], n] for k, n in funnel.items()],
        "hosts": [[k[0], k[1], n] for k, n in hosts.items()],
        "scored": [[k[0], k[1], n] for k, n in scored.items()],
        "tokens_kept": tokens_kept,
    }


def merge_counts(parts: list[dict]) -> dict:
    """Sum partial counts (deterministic order of keys)."""
    out: dict = {"rows": 0, "tokens_kept": 0}
    for key in ("funnel", "hosts", "scored"):
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
    return out


class WritePartFn(beam.DoFn):
    """Write one chunk's annotated and kept rows (input order) as Parquet parts; yield a descriptor."""

    def __init__(self, parts_dir: str, schema: pa.Schema):
        self.parts_dir, self.schema = parts_dir, schema

    def process(self, item):
        chunk, rows = item
        rows = sorted(rows, key=lambda r: r[POS])
        table = pa.Table.from_pylist(rows, schema=self.schema)
        kept = [r for r in rows if r["drop_reason"] is None]
        for name, t in (
            ("annotated", table),
            ("documents", pa.Table.from_pylist(kept, schema=self.schema)),
        ):
            with fs.open_write(fs.join(self.parts_dir, f"{name}-{chunk:06d}.parquet")) as f:
                pq.write_table(t, f)
        yield None, ("rows", chunk, partial_counts(rows))


class WriteClusterPartFn(beam.DoFn):
    """Write one partition of cluster rows sorted by (cluster_id, id)."""

    def __init__(self, parts_dir: str):
        self.parts_dir = parts_dir

    def process(self, item):
        part, rows = item
        rows = sorted(rows, key=lambda r: (r["cluster_id"], r["id"]))
        with fs.open_write(fs.join(self.parts_dir, f"clusters-{part:06d}.parquet")) as f:
            pq.write_table(pa.Table.from_pylist(rows, schema=CLUSTER_SCHEMA), f)
        reps = sum(r["duplicate_of"] is None for r in rows)
        yield None, ("clusters", part, {"rows": len(rows), "clusters": reps})


class MergeOutputsFn(beam.DoFn):
    """The last step, one task: stream the parts into the output files and write counts.json."""

    def __init__(self, parts_dir: str, out_dir: str, schema: pa.Schema, chunks: int):
        self.parts_dir, self.out_dir = parts_dir, out_dir
        self.schema, self.chunks = schema, chunks

    def process(self, item):
        _, descriptors = item
        rows = sorted((d[1], d[2]) for d in descriptors if d[0] == "rows")
        cluster_parts = sorted((d[1], d[2]) for d in descriptors if d[0] == "clusters")
        leftover = sum(d[1] for d in descriptors if d[0] == "leftover")
        if [c for c, _ in rows] != list(range(self.chunks)):
            raise RuntimeError(
                f"filter lost row ranges: wrote {len(rows)} of {self.chunks} annotated parts"
            )
        names = {"annotated": "annotated", "documents": "documents"}
        for prefix, name in names.items():
            paths = [fs.join(self.parts_dir, f"{prefix}-{c:06d}.parquet") for c, _ in rows]
            self._concat(paths, fs.join(self.out_dir, f"{name}.parquet"), self.schema)
        self._merge_clusters(
            [fs.join(self.parts_dir, f"clusters-{p:06d}.parquet") for p, _ in cluster_parts],
            fs.join(self.out_dir, "dup_clusters.parquet"),
        )
        counts = merge_counts([c for _, c in rows])
        counts["kept"] = sum(n for _, reason, n in counts["funnel"] if reason == "kept")
        counts["cluster_rows"] = sum(c["rows"] for _, c in cluster_parts)
        counts["clusters"] = sum(c["clusters"] for _, c in cluster_parts)
        counts["dedup_leftover_edges"] = leftover
        fs.write_json(fs.join(self.parts_dir, "counts.json"), counts)
        yield counts["rows"]

    @staticmethod
    def _write(dest: str, schema: pa.Schema, batches) -> None:
        tmp = dest + ".tmp"
        with fs.open_write(tmp) as f:
            with pq.ParquetWriter(f, schema) as writer:
                for b in batches:
                    writer.write_table(b)
        fs.rename(tmp, dest)

    def _concat(self, paths: list[str], dest: str, schema: pa.Schema) -> None:
        def batches():
            for p in paths:
                with fs.open_read(p) as f:
                    pf = pq.ParquetFile(f)
                    for rg in range(pf.metadata.num_row_groups):
                        yield pf.read_row_group(rg).cast(schema)

        self._write(dest, schema, batches())

    def _merge_clusters(self, paths: list[str], dest: str, block: int = 65536) -> None:
        def rows(p):
            with fs.open_read(p) as f:
                for b in pq.ParquetFile(f).iter_batches(batch_size=4096):
                    yield from b.to_pylist()

        def batches():
            merged = heapq.merge(
                *(rows(p) for p in paths), key=lambda r: (r["cluster_id"], r["id"])
            )
            buf: list[dict] = []
            for r in merged:
                buf.append(r)
                if len(buf) >= block:
                    yield pa.Table.from_pylist(buf, schema=CLUSTER_SCHEMA)
                    buf = []
            yield pa.Table.from_pylist(buf, schema=CLUSTER_SCHEMA)

        self._write(dest, CLUSTER_SCHEMA, batches())


class Dedup(beam.PTransform):
    """Annotated rows -> (cluster rows, leftover-count descriptors): exact, URL and near dedup.

    Rows whose `drop_reason` is set are not candidates. Cluster rows match
    `filters.dedup.cluster` on the same candidates (same components, representatives, matches).
    """

    def __init__(self, cfg: FilterConfig, rounds: int = ROUNDS):
        super().__init__()
        self.config_json = cfg.model_dump_json()
        self.threshold = cfg.dedup.jaccard_threshold
        self.rounds = rounds

    def expand(self, annotated):
        feats = (
            annotated
            | "Candidates" >> beam.Filter(lambda r: r["drop_reason"] is None)
            | "Features" >> beam.ParDo(DedupFeaturesFn(self.config_json))
        )
        nodes = feats | "Nodes" >> beam.Map(lambda f: (f[0], f[1]))
        groups = feats | "Groups" >> beam.FlatMap(lambda f: [(g, f[0]) for g in f[2]])
        sigs = feats | "Sigs" >> beam.FlatMap(lambda f: [(f[0], f[3])] if f[3] is not None else [])
        grouped = (
            groups | "GroupKeys" >> beam.GroupByKey() | "BucketEdges" >> beam.FlatMap(_bucket_edges)
        )
        typed_edges = grouped | "TypedEdges" >> beam.Filter(lambda e: len(e) == 3)
        pairs = (
            grouped
            | "Pairs" >> beam.Filter(lambda e: len(e) == 2)
            | "DistinctPairs" >> beam.Distinct()
        )
        by_a = pairs | "KeyA" >> beam.Map(lambda ab: (ab[0], (ab[1], [])))
        with_a = (
            {"pairs": by_a, "sig": sigs}
            | "JoinA" >> beam.CoGroupByKey()
            | "AttachA" >> beam.FlatMap(_attach_sig)
        )
        near_edges = (
            {"pairs": with_a, "sig": sigs}
            | "JoinB" >> beam.CoGroupByKey()
            | "Verify" >> beam.FlatMap(_verify, threshold=self.threshold)
        )
        edges = (typed_edges, near_edges) | "AllEdges" >> beam.Flatten()
        # Connected components: min-label propagation. Each round is one GroupByKey over the nodes
        # that have edges (their state carries label, neighbours and node info), so the graph keeps
        # its partitions on every runner; no join per round.
        state = (
            (
                nodes | "NodeParts" >> beam.MapTuple(lambda v, n: (v, ("node", n[0], n[1], n[2]))),
                edges
                | "EdgeParts"
                >> beam.FlatMap(lambda e: [(e[0], ("nbr", e[1])), (e[1], ("nbr", e[0]))]),
            )
            | "StateParts" >> beam.Flatten()
            | "GroupState" >> beam.GroupByKey()
            | "NodeState" >> beam.FlatMap(_node_state)
        )
        for r in range(self.rounds):
            state = (
                state
                | f"Send{r}" >> beam.FlatMap(_send)
                | f"Receive{r}" >> beam.GroupByKey()
                | f"MinLabel{r}" >> beam.Map(_receive)
            )
        checked = (
            state
            | "SendCheck" >> beam.FlatMap(_send)
            | "ReceiveCheck" >> beam.GroupByKey()
            | "Check" >> beam.FlatMap(_check)
        )
        merged = (
            checked
            | "Leftover" >> beam.Filter(lambda kv: kv[0] == "leftover")
            | "LeftoverOneTask" >> beam.GroupByKey()
            | "MergeLeftover" >> beam.FlatMap(_merge_leftover)
        )
        leftover = (
            merged
            | "LeftoverCount" >> beam.Filter(lambda kv: kv[0] == "count")
            | "LeftoverDescriptor" >> beam.Map(lambda kv: (None, ("leftover", kv[1], {})))
        )
        clusters = (
            {
                "members": checked
                | "Members" >> beam.Filter(lambda kv: kv[0] == "member")
                | "ByLabel" >> beam.Map(lambda kv: (kv[1][0], kv[1])),
                "map": merged
                | "Mapping" >> beam.Filter(lambda kv: kv[0] == "map")
                | "MapByLabel" >> beam.Map(lambda kv: kv[1]),
            }
            | "JoinMapping" >> beam.CoGroupByKey()
            | "Relabel" >> beam.FlatMap(_relabel)
            | "Components" >> beam.GroupByKey()
            | "ClusterRows" >> beam.FlatMap(_cluster_rows)
        )
        return clusters, leftover


def _partition(cluster_id: str, parts: int) -> int:
    return zlib.crc32(cluster_id.encode()) % parts


def build_and_run(
    docs_path: str,
    out_dir: str,
    parts_dir: str,
    schema: pa.Schema,
    cfg: FilterConfig,
    models_dir: str | None,
    beam_args: list[str],
    rounds: int = ROUNDS,
) -> dict:
    """Run the filter pipeline; workers write out_dir/{annotated,documents,dup_clusters}.parquet.

    Returns the counts the workers wrote to parts_dir/counts.json (the driver reads nothing else).
    """
    config_json = cfg.model_dump_json()
    chunks = plan_chunks(docs_path)
    cluster_parts = max(1, len(chunks))
    args = fs.runner_args(beam_args)
    p = beam.Pipeline(options=PipelineOptions(args))
    annotated = (
        p
        | "Chunks" >> beam.Create(chunks)
        | "Spread" >> beam.Reshuffle()
        | "Read" >> beam.ParDo(ReadChunkFn())
        | "Annotate" >> beam.ParDo(AnnotateFn(config_json, models_dir))
    )
    clusters, leftover = annotated | "Dedup" >> Dedup(cfg, rounds)
    final = (
        {
            "row": annotated | "KeyRows" >> beam.Map(lambda r: (r["id"], r)),
            "cluster": clusters | "KeyClusters" >> beam.Map(lambda c: (c["id"], c)),
        }
        | "JoinClusters" >> beam.CoGroupByKey()
        | "Finalise" >> beam.Map(_finalise)
    )
    row_parts = (
        final
        | "KeyChunk" >> beam.Map(lambda r: (r[CHUNK], r))
        | "GroupChunk" >> beam.GroupByKey()
        | "WriteParts" >> beam.ParDo(WritePartFn(parts_dir, schema))
    )
    cluster_descs = (
        clusters
        | "KeyPartition" >> beam.Map(lambda c: (_partition(c["cluster_id"], cluster_parts), c))
        | "GroupPartition" >> beam.GroupByKey()
        | "WriteClusterParts" >> beam.ParDo(WriteClusterPartFn(parts_dir))
    )
    start = p | "Plan" >> beam.Create([(None, ("plan", len(chunks), {}))])
    _ = (
        (start, row_parts, cluster_descs, leftover)
        | "Descriptors" >> beam.Flatten()
        | "OneTask" >> beam.GroupByKey()
        | "Merge" >> beam.ParDo(MergeOutputsFn(parts_dir, out_dir, schema, len(chunks)))
    )
    fs.run(p)
    return fs.read_json(fs.join(parts_dir, "counts.json"))


def output_schema(input_schema: pa.Schema) -> pa.Schema:
    """Input columns (text as string) plus the filter's columns."""
    added = {
        "lang": pa.string(),
        "lang_score": pa.float64(),
        "quality_score": pa.float64(),
        "quality_model": pa.string(),
        "pii_found": pa.int64(),
        "drop_reason": pa.string(),
        "duplicate_of": pa.string(),
        "heuristic_drop": pa.string(),  # relaxed rule that fired (kept if `rescued`)
        "rescued": pa.bool_(),
    }
    fields = [f for f in input_schema if f.name not in added]
    fields = [pa.field("text", pa.string()) if f.name == "text" else f for f in fields]
    return pa.schema(fields + [pa.field(k, v) for k, v in added.items()])


def config_json_for_manifest(cfg: FilterConfig) -> dict:
    """The config as plain data for manifests."""
    return json.loads(cfg.model_dump_json())
