"""Beam pipeline for large mixture builds: tokenize and count read units in parallel, then assemble.

Workers each read one `ReadUnit` (a Parquet file of one source) through the same consent-checked
read path as the in-process builder, tokenize it and spill a `.npz`; the driver then samples and
packs deterministically with `training.mixture.builder.assemble`, so shards are byte-identical to
an in-process build. The spill directory (`OUT/_work`) must be visible to workers and driver
(a shared filesystem for distributed runners).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions

from training.mixture.builder import assemble, prepare_tokenizer
from training.mixture.sources import DocBatch, ReadUnit, plan_units, tokenize_unit
from training.mixture.spec import load_spec
from training.tokenizer import load_tokenizer


class TokenizeUnit(beam.DoFn):
    """Read and tokenize one unit; spill it to WORK/<index>.npz and count documents and tokens."""

    def __init__(self, tokenizer_path: str, work_dir: str) -> None:
        self.tokenizer_path, self.work_dir = tokenizer_path, work_dir
        self.documents = Metrics.counter("mix", "documents")
        self.tokens = Metrics.counter("mix", "tokens")

    def setup(self) -> None:
        self.tok = load_tokenizer(self.tokenizer_path)

    def process(self, item: tuple[int, ReadUnit]) -> Iterator[tuple[str, int]]:
        index, unit = item
        batch = tokenize_unit(unit, self.tok)
        batch.save(Path(self.work_dir) / f"{index:06d}.npz")
        self.documents.inc(len(batch.lengths))
        self.tokens.inc(int(batch.lengths.sum()))
        yield unit.bucket, int(batch.lengths.sum())


def build_mixture_beam(
    spec_path: str | Path,
    out_dir: str | Path,
    *,
    pipeline_args: Sequence[str] = (),
    lake_root: Path | None = None,
) -> dict[str, Any]:
    """Build a mixture with Beam doing the tokenizing; returns the manifest (with `beam_counters`)."""
    spec_path, out_dir = Path(spec_path), Path(out_dir)
    spec = load_spec(spec_path)
    tok_path = prepare_tokenizer(spec, spec_path.parent, out_dir, lake_root)
    units = plan_units(spec, spec_path.parent, lake_root)
    work = out_dir / "_work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        pipeline = beam.Pipeline(options=PipelineOptions(list(pipeline_args)))
        _ = (
            pipeline
            | "Units" >> beam.Create(list(enumerate(units)))
            | "Spread" >> beam.Reshuffle()
            | "Tokenize" >> beam.ParDo(TokenizeUnit(str(tok_path), str(work)))
            | "TokensPerBucket" >> beam.CombinePerKey(sum)
        )
        result = pipeline.run()
        result.wait_until_finish()
        counters = {
            c.key.metric.name: c.committed
            for c in result.metrics().query(MetricsFilter().with_namespace("mix"))["counters"]
        }
        batches = [DocBatch.load(work / f"{i:06d}.npz") for i in range(len(units))]
        manifest = assemble(spec, spec_path, units, batches, out_dir, lake_root)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return manifest | {"beam_counters": counters}
