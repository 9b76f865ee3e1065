"""The filter stage on Beam: the steps of `filters.pipeline` and `filters.dedup_shards`, wired
into transforms every runner translates (Create, ParDo, GroupByKey, Flatten), with one sink at
the end, no side inputs, no Beam metrics and no Beam file sinks (Direct, Portable, Dask, Flink,
Spark, Dataflow).

1. `Create` of the input's row ranges. The line de-duplication counts first (`LineCounts`):
   each range's (line, document) keys go to the shards of their lines (one GroupByKey) and each
   shard sends every range the repeated lines it has. A worker then reads its range through
   Beam's `FileSystems`, removes those lines, annotates it, writes it as a part and emits its
   dedup candidates' features as one element.
2. The dedup steps, each one GroupByKey over shards (`DedupShards`): every shuffle moves at
   most shards x shards batches, not an element per document or per LSH band.
3. Each chunk's part is finalised with its duplicates, each shard's cluster rows written; the
   last step (one task) streams the parts into the outputs and writes counts.json.

`BeamExecutor(args)` is the stage's Beam executor for `filters.run.run_filter`; the stage picks
it, or `filters.run.InProcess` (the same steps in this process, identical outputs and counts).
This module knows where the steps run, never what they do.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import apache_beam as beam
import pyarrow as pa
from apache_beam.options.pipeline_options import PipelineOptions

from filters import dedup_shards, linededup
from filters import pipeline as steps
from filters.config import FilterConfig
from filters.dedup_shards import ROUNDS
from filters.pipeline import plan_chunks
from pipelines.beam import fs


class AnnotateChunkFn(beam.DoFn):
    """Read and annotate one row range, write it as a part; yield (chunk, dedup features)."""

    def __init__(self, config_json: str, models_dir: str | None, parts_dir: str, schema: pa.Schema):
        self.config_json, self.models_dir = config_json, models_dir
        self.parts_dir, self.schema = parts_dir, schema

    def setup(self) -> None:
        self.cfg = FilterConfig.model_validate_json(self.config_json)
        self.annotator = steps.make_annotator(self.cfg, self.models_dir, fs.stage_locally)

    def process(self, item):
        chunk, repeated = linededup.chunk_repeated(item[1])
        yield steps.annotate_chunk(
            chunk, self.annotator, self.parts_dir, self.schema, self.cfg, fs, repeated
        )


class LineCounts(beam.PTransform):
    """Chunks -> (chunk, repeated line keys) for the chunks that have any: one GroupByKey over
    the shards of the line keys (`filters.linededup`)."""

    def __init__(self, shards: int, threshold: int):
        super().__init__()
        self.shards, self.threshold = shards, threshold

    def expand(self, chunks):
        return (
            chunks
            | "LinePairs" >> beam.Map(steps.chunk_line_pairs, files=fs)
            | "RouteLines" >> beam.FlatMap(linededup.route, shards=self.shards)
            | "GroupLines" >> beam.GroupByKey()
            | "RepeatedLines"
            >> beam.FlatMapTuple(partial(linededup.repeated_lines, threshold=self.threshold))
        )


class DedupShards(beam.PTransform):
    """(chunk, features) batches -> `dedup_shards.components` outputs: one GroupByKey per step."""

    def __init__(self, cfg: FilterConfig, shards: int, rounds: int = ROUNDS):
        super().__init__()
        self.dedup_cfg, self.shards, self.rounds = cfg.dedup, shards, rounds

    def expand(self, batches):
        messages = batches | "Route" >> beam.FlatMap(dedup_shards.route, shards=self.shards)
        for i, step in enumerate(
            dedup_shards.dedup_steps(self.dedup_cfg, self.shards, self.rounds)
        ):
            name = step.func.__name__
            messages = (
                messages
                | f"Group{i}-{name}" >> beam.GroupByKey()
                | f"Step{i}-{name}" >> beam.FlatMapTuple(step)
            )
        return (
            messages
            | "GroupComponents" >> beam.GroupByKey()
            | "Components" >> beam.FlatMapTuple(dedup_shards.components)
        )


class WriteClusterPartFn(beam.DoFn):
    """Write one shard's cluster rows; yield its descriptor keyed for the last step."""

    def __init__(self, parts_dir: str):
        self.parts_dir = parts_dir

    def process(self, item):
        _, shard, rows = item
        yield None, steps.write_cluster_part(shard, rows, self.parts_dir, fs)


class FinaliseChunkFn(beam.DoFn):
    """Mark one chunk's duplicates and write its annotated and documents parts."""

    def __init__(self, parts_dir: str, schema: pa.Schema):
        self.parts_dir, self.schema = parts_dir, schema

    def process(self, item):
        chunk, dups = item
        dups = [d for batch in dups for d in batch]
        yield None, steps.finalise_chunk(chunk, dups, self.parts_dir, self.schema, fs)


class MergeOutputsFn(beam.DoFn):
    """The last step, one task: stream the parts into the output files and write counts.json."""

    def __init__(self, parts_dir: str, out_dir: str, schema: pa.Schema, chunks: int):
        self.parts_dir, self.out_dir = parts_dir, out_dir
        self.schema, self.chunks = schema, chunks

    def process(self, item):
        _, descriptors = item
        counts = steps.merge_outputs(
            descriptors, self.parts_dir, self.out_dir, self.schema, self.chunks, fs
        )
        yield counts["rows"]


def direct_workers(args: list[str]) -> int:
    """Workers of the DirectRunner in these args (`--direct_num_workers`, 0: one per CPU)."""
    import os

    n = 1
    args = fs.runner_args(args)
    for i, a in enumerate(args):
        if a.startswith("--direct_num_workers="):
            n = int(a.split("=", 1)[1])
        elif a == "--direct_num_workers" and i + 1 < len(args):
            n = int(args[i + 1])
    return n if n > 0 else (os.cpu_count() or 1)


class BeamExecutor:
    """`filters.run.Executor` on a Beam runner: the args are Beam's (`--runner=...` first).

    The args are checked when the executor is built (`fs.check_args`: option values, the
    runner's name, a job service or Dask scheduler that answers), which the stage does before
    `filters.run.run_filter` clears the previous run's outputs. `own_runners`: the stage's
    runner names besides Beam's, named when a runner is unknown."""

    def __init__(self, beam_args: list[str], own_runners: Sequence[str] = ()):
        fs.check_args(beam_args, own_runners)
        self.beam_args = list(beam_args)
        self.workers = direct_workers(self.beam_args)

    def prepare(self) -> None:
        # Beam imports its runner when the pipeline runs: resident before a memory budget's fit
        import apache_beam.runners.portability.fn_api_runner  # noqa: F401

    def run(self, docs_path, out_dir, work_dir, schema, cfg, models_dir, max_rows) -> dict:
        return build_and_run(
            docs_path, out_dir, work_dir, schema, cfg, models_dir, self.beam_args, max_rows=max_rows
        )


def build_and_run(
    docs_path: str,
    out_dir: str,
    parts_dir: str,
    schema: pa.Schema,
    cfg: FilterConfig,
    models_dir: str | None,
    beam_args: list[str],
    rounds: int = ROUNDS,
    max_rows: int | None = None,
) -> dict:
    """Run the filter pipeline; workers write out_dir/{annotated,documents,dup_clusters}.parquet.

    Returns the counts the workers wrote to parts_dir/counts.json (the driver reads nothing else).
    `max_rows` caps the rows a worker holds at once: each element of the Annotate step is one
    chunk of at most that many rows (Beam's Python runners take no bundle-size option; a
    bundle of chunk elements is processed one element at a time, each written out as a part).
    """
    chunks = plan_chunks(docs_path, fs, max_rows)
    p = beam.Pipeline(options=PipelineOptions(fs.runner_args(beam_args)))
    planned = p | "Chunks" >> beam.Create(chunks) | "Spread" >> beam.Reshuffle()
    tagged = [planned | "TagChunk" >> beam.Map(lambda c: (c[0], ("chunk", c)))]
    if cfg.line_dedup.enabled:
        threshold = steps.line_threshold(chunks, cfg)
        repeated = planned | "LineDedup" >> LineCounts(steps.shard_count(chunks), threshold)
        tagged.append(repeated | "TagLines" >> beam.Map(lambda o: (o[0], ("lines", o[1]))))
    batches = (
        tuple(tagged)
        | "ChunkLines" >> beam.Flatten()
        | "GroupChunkLines" >> beam.GroupByKey()
        | "Annotate"
        >> beam.ParDo(AnnotateChunkFn(cfg.model_dump_json(), models_dir, parts_dir, schema))
    )
    results = batches | "Dedup" >> DedupShards(cfg, steps.shard_count(chunks), rounds)
    cluster_descs = (
        results
        | "ClusterBatches" >> beam.Filter(lambda o: o[0] == "clusters")
        | "WriteClusterParts" >> beam.ParDo(WriteClusterPartFn(parts_dir))
    )
    leftover = (
        results
        | "Leftover" >> beam.Filter(lambda o: o[0] == "leftover")
        | "KeyLeftover" >> beam.Map(lambda o: (None, o))
    )
    dups = results | "Dups" >> beam.Filter(lambda o: o[0] == "dups")
    row_descs = (
        (
            batches | "EveryChunk" >> beam.Map(lambda b: (b[0], [])),
            dups | "DupsByChunk" >> beam.Map(lambda o: (o[1], o[2])),
        )
        | "ChunkParts" >> beam.Flatten()
        | "GroupChunk" >> beam.GroupByKey()
        | "Finalise" >> beam.ParDo(FinaliseChunkFn(parts_dir, schema))
    )
    start = p | "Plan" >> beam.Create([(None, ("plan", len(chunks), {}))])
    _ = (
        (start, row_descs, cluster_descs, leftover)
        | "Descriptors" >> beam.Flatten()
        | "OneTask" >> beam.GroupByKey()
        | "Merge" >> beam.ParDo(MergeOutputsFn(parts_dir, out_dir, schema, len(chunks)))
    )
    fs.run(p)
    return fs.read_json(fs.join(parts_dir, "counts.json"))
