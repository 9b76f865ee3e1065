"""Beam pipeline for large mixture builds: tokenize and count read units in parallel, then assemble.

Workers each read one `ReadUnit` (a Parquet file of one source) through the same consent-checked
read path as the in-process builder, tokenize it and spill a `.npz`; the driver then samples and
packs deterministically with `training.mixture.builder.assemble`, so shards are byte-identical to
an in-process build.

Workers need no shared disk with the driver: the tokenizer, source files and spills go through
Beam's `FileSystems`. The spill directory is `OUT/_work` by default, or
`--temp_location`/`_work-<id>` when that option names a shared location (e.g. `gs://bucket/tmp`)
for runners whose workers cannot see OUT. Document and token counts travel as data (a counts
file written by the pipeline's last step), not as Beam metrics, which the DaskRunner lacks.
"""

from __future__ import annotations

import io
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import GoogleCloudOptions, PipelineOptions

from pipelines.beam import fs
from training.mixture.builder import assemble, prepare_tokenizer
from training.mixture.read import tokenize_unit
from training.mixture.sources import DocBatch, ReadUnit, plan_units
from training.mixture.spec import load_spec
from training.tokenizer import load_tokenizer


def _local_copy(path: str, suffix: str) -> str:
    """`path` itself when local, else a temporary local copy read through FileSystems."""
    if fs.is_local(path):
        return path
    fd, local = tempfile.mkstemp(prefix="refinery-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(fs.read_bytes(path))
    return local


class TokenizeUnit(beam.DoFn):
    """Read and tokenize one unit; spill it to WORK/<index>.npz; yield its document and token counts."""

    def __init__(self, tokenizer_path: str, work_dir: str) -> None:
        self.tokenizer_path, self.work_dir = tokenizer_path, work_dir

    def setup(self) -> None:
        self.tok = load_tokenizer(_local_copy(self.tokenizer_path, ".json"))

    def process(self, item: tuple[int, ReadUnit]) -> Iterator[tuple[None, tuple[int, int, int]]]:
        index, unit = item
        local = _local_copy(unit.file, ".parquet")
        try:
            batch = tokenize_unit(
                replace(unit, file=local) if local != unit.file else unit, self.tok
            )
        finally:
            if local != unit.file:
                os.unlink(local)
        buf = io.BytesIO()
        batch.save(buf)
        fs.write_bytes(fs.join(self.work_dir, f"{index:06d}.npz"), buf.getvalue())
        yield None, (index, len(batch.lengths), int(batch.lengths.sum()))


class WriteCounts(beam.DoFn):
    """The last step (one task): check every unit was spilled and write the counts file."""

    def __init__(self, work_dir: str, units: int) -> None:
        self.work_dir, self.units = work_dir, units

    def process(self, item):
        _, rows = item
        rows = sorted(r for r in rows if r is not None)
        if [r[0] for r in rows] != list(range(self.units)):
            raise RuntimeError(f"mix: {len(rows)} of {self.units} read units were tokenized")
        counts = {"documents": sum(r[1] for r in rows), "tokens": sum(r[2] for r in rows)}
        fs.write_json(fs.join(self.work_dir, "counts.json"), counts)
        yield counts


def _work_dir(out_dir: Path, args: Sequence[str]) -> str:
    temp = PipelineOptions(list(args)).view_as(GoogleCloudOptions).temp_location
    if temp and not fs.is_local(temp):
        return fs.join(temp, f"_work-{uuid.uuid4().hex[:12]}")
    return str(out_dir.resolve() / "_work")


def build_mixture_beam(
    spec_path: str | Path,
    out_dir: str | Path,
    *,
    pipeline_args: Sequence[str] = (),
    lake_root: Path | None = None,
) -> dict[str, Any]:
    """Build a mixture with Beam doing the tokenizing; returns the manifest (with `beam_counters`)."""
    args = fs.check_args(pipeline_args)  # one line before anything under out_dir is touched
    spec_path, out_dir = Path(spec_path), Path(out_dir)
    spec = load_spec(spec_path)
    tok_path = prepare_tokenizer(spec, spec_path.parent, out_dir, lake_root)
    units = plan_units(spec, spec_path.parent, lake_root)
    work = _work_dir(out_dir, args)
    fs.delete_tree(work)
    fs.mkdirs(work)
    try:
        pipeline = beam.Pipeline(options=PipelineOptions(args))
        tokenized = (
            pipeline
            | "Units" >> beam.Create(list(enumerate(units)))
            | "Spread" >> beam.Reshuffle()
            | "Tokenize" >> beam.ParDo(TokenizeUnit(str(tok_path.resolve()), work))
        )
        # A None row makes the last step run even for a spec without units.
        start = pipeline | "Start" >> beam.Create([(None, None)])
        _ = (
            (start, tokenized)
            | "All" >> beam.Flatten()
            | "OneTask" >> beam.GroupByKey()
            | "Counts" >> beam.ParDo(WriteCounts(work, len(units)))
        )
        fs.run(pipeline)
        counters = fs.read_json(fs.join(work, "counts.json"))
        batches = (
            DocBatch.load(io.BytesIO(fs.read_bytes(fs.join(work, f"{i:06d}.npz"))))
            for i in range(len(units))
        )
        manifest = assemble(spec, spec_path, units, batches, out_dir, lake_root)
    finally:
        fs.delete_tree(work)
    return manifest | {"beam_counters": counters}
