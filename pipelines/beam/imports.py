"""Beam pipeline of `import warc`: one scan unit per element.

A unit is a whole WARC/ARC file, or a byte range of a large gzip-per-record file
(`crawlers.imports.run.plan`: each range reads the records that begin in it, so the ranges of a
file together read each record once). Each worker scans its unit with
`crawlers.imports.run.scan_to_part` into `parts/<key>.parquet` and then writes the unit's done
marker, so a killed job resumes at the units it had not finished (the stage skips units whose
marker matches). Dedup across files and the consent check run after the job, in the stage, over
the parts.
"""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.beam import fs


class ScanFileFn(beam.DoFn):
    """Scan one unit (a file, or [file, start, end]) into its part; yield the unit's counts."""

    def __init__(self, out_dir: str, opts_json: str):
        self.out_dir = out_dir
        self.opts_json = opts_json

    def process(self, unit):
        from crawlers.imports.run import scan_to_part

        source, start, end = (unit, 0, None) if isinstance(unit, str) else unit
        yield scan_to_part(source, self.out_dir, json.loads(self.opts_json), start, end)


def run_pipeline(
    units: list,
    out_dir: Path,
    opts: dict,
    *,
    pipeline_args: list[str] | None = None,
) -> None:
    """Scan `units` (files or (file, start, end) ranges) into `out_dir/parts/`, one per element.

    Short runner names (`DaskRunner`) and the Dask defaults come from `fs.runner_args`;
    `fs.run` closes the Dask client and names a job service that went away."""
    options = PipelineOptions(fs.runner_args(pipeline_args or ["--runner=DirectRunner"]))
    elements = [u if isinstance(u, str) else list(u) for u in units]
    p = beam.Pipeline(options=options)
    _ = (
        p
        | "Units" >> beam.Create(elements)
        | "Spread" >> beam.Reshuffle()  # one unit per worker rather than all on one
        | "Scan" >> beam.ParDo(ScanFileFn(str(out_dir), json.dumps(opts)))
    )
    fs.run(p)
