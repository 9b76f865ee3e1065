"""Beam pipeline of the filter stage: annotate every row, then exact/URL/MinHash de-duplication.

Models and configs reach workers as constructor arguments (paths and a JSON string) loaded in
`setup()`, never through global state, so the same pipeline runs on Direct, Portable, Flink,
Spark and Dataflow. LSH banding is a GroupByKey on (band, band-hash); candidate pairs are
verified by estimated Jaccard after joining signatures back by id; union-find over the
(much smaller) edge set runs in one task.
"""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
from apache_beam.options.pipeline_options import PipelineOptions

from filters import dedup
from filters.config import FilterConfig

NEAR = "near"


class AnnotateFn(beam.DoFn):
    """Language, PII, heuristics, safety and quality for each row."""

    def __init__(self, config_json: str, models_dir: str | None):
        self.config_json = config_json
        self.models_dir = models_dir

    def setup(self) -> None:
        from filters.annotate import DocumentAnnotator

        self.annotator = DocumentAnnotator(
            FilterConfig.model_validate_json(self.config_json), self.models_dir
        )

    def process(self, row):
        yield self.annotator.annotate(row)


class DedupFeaturesFn(beam.DoFn):
    """Per kept document: node info, exact/URL keys, MinHash signature and band keys."""

    def __init__(self, config_json: str):
        self.config_json = config_json

    def setup(self) -> None:
        self.cfg = FilterConfig.model_validate_json(self.config_json).dedup

    def process(self, row):
        doc_id = row["id"]
        h, u = dedup.text_hash(row["text"]), dedup.canonical_url(row.get("url") or "")
        q = row["quality_score"]
        yield beam.pvalue.TaggedOutput(
            "nodes", (doc_id, {"quality_score": q, "text_hash": h, "canonical_url": u})
        )
        if self.cfg.exact:
            yield beam.pvalue.TaggedOutput("groups", (("exact", h), doc_id))
        if self.cfg.url and row.get("url"):
            yield beam.pvalue.TaggedOutput("groups", (("url", u), doc_id))
        if self.cfg.near:
            sig = dedup.signature(row["text"], row["lang"], self.cfg)
            yield beam.pvalue.TaggedOutput("sigs", (doc_id, sig.tobytes()))
            for band, bh in dedup.band_keys(sig, self.cfg):
                yield beam.pvalue.TaggedOutput("groups", ((NEAR, f"{band}:{bh}"), doc_id))


def _bucket_edges(item):
    (kind, _), ids = item
    ids = sorted(set(ids))
    if len(ids) < 2:
        return
    if kind == NEAR:
        yield from dedup.candidate_pairs(ids)
    else:
        for x in ids[1:]:
            yield (ids[0], x, kind)


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


def _resolve(edges, nodes):
    return dedup.resolve_clusters(edges, nodes)


def _finalise(item):
    _, grouped = item
    row = grouped["row"][0]
    clusters = grouped["cluster"]
    if clusters and clusters[0]["duplicate_of"] is not None and row["drop_reason"] is None:
        row["duplicate_of"] = clusters[0]["duplicate_of"]
        row["drop_reason"] = f"{clusters[0]['match']}_duplicate"
    return row


CLUSTER_SCHEMA = pa.schema(
    [
        ("cluster_id", pa.string()),
        ("id", pa.string()),
        ("duplicate_of", pa.string()),
        ("match", pa.string()),
        ("cluster_size", pa.int64()),
    ]
)


def build_and_run(
    docs_path: str,
    work_dir: str,
    schema: pa.Schema,
    cfg: FilterConfig,
    models_dir: str | None,
    beam_args: list[str],
) -> None:
    """Run the filter pipeline; writes annotated-*.parquet and clusters-*.parquet shards to work_dir."""
    config_json = cfg.model_dump_json()
    dcfg = cfg.dedup
    options = PipelineOptions(beam_args)
    with beam.Pipeline(options=options) as p:
        annotated = (
            p
            | "Read" >> beam.io.ReadFromParquet(docs_path)
            | "Annotate" >> beam.ParDo(AnnotateFn(config_json, models_dir))
        )
        feats = (
            annotated
            | "Candidates" >> beam.Filter(lambda r: r["drop_reason"] is None)
            | "Features"
            >> beam.ParDo(DedupFeaturesFn(config_json)).with_outputs("nodes", "groups", "sigs")
        )
        grouped = (
            feats.groups
            | "GroupKeys" >> beam.GroupByKey()
            | "BucketEdges" >> beam.FlatMap(_bucket_edges)
        )
        typed_edges = grouped | "TypedEdges" >> beam.Filter(lambda e: len(e) == 3)
        pairs = (
            grouped
            | "Pairs" >> beam.Filter(lambda e: len(e) == 2)
            | "DistinctPairs" >> beam.Distinct()
        )
        by_a = pairs | "KeyA" >> beam.Map(lambda ab: (ab[0], (ab[1], [])))
        with_a = (
            {"pairs": by_a, "sig": feats.sigs}
            | "JoinA" >> beam.CoGroupByKey()
            | "AttachA" >> beam.FlatMap(_attach_sig)
        )
        near_edges = (
            {"pairs": with_a, "sig": feats.sigs}
            | "JoinB" >> beam.CoGroupByKey()
            | "Verify" >> beam.FlatMap(_verify, threshold=dcfg.jaccard_threshold)
        )
        edges = (typed_edges, near_edges) | "AllEdges" >> beam.Flatten()
        clusters = (
            edges
            | "EdgeList" >> beam.combiners.ToList()
            | "UnionFind" >> beam.FlatMap(_resolve, nodes=beam.pvalue.AsDict(feats.nodes))
        )
        final = (
            {
                "row": annotated | "KeyRows" >> beam.Map(lambda r: (r["id"], r)),
                "cluster": clusters | "KeyClusters" >> beam.Map(lambda c: (c["id"], c)),
            }
            | "JoinClusters" >> beam.CoGroupByKey()
            | "Finalise" >> beam.Map(_finalise)
        )
        final | "WriteAnnotated" >> beam.io.WriteToParquet(
            str(Path(work_dir) / "annotated"), schema, file_name_suffix=".parquet"
        )
        clusters | "WriteClusters" >> beam.io.WriteToParquet(
            str(Path(work_dir) / "clusters"), CLUSTER_SCHEMA, file_name_suffix=".parquet"
        )


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
