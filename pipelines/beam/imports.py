"""Beam pipeline of `import warc`: one WARC/ARC file per element.

Each worker scans its file with `crawlers.imports.run.scan_to_part` into
`parts/<key>.parquet` and then writes the file's done marker, so a killed job resumes at the
files it had not finished (the stage skips files whose marker matches). Dedup across files and
the consent check run after the job, in the stage, over the parts.
"""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


class ScanFileFn(beam.DoFn):
    """Scan one source file into its part; yield the file's counts."""

    def __init__(self, out_dir: str, opts_json: str):
        self.out_dir = out_dir
        self.opts_json = opts_json

    def process(self, source: str):
        from crawlers.imports.run import scan_to_part

        yield scan_to_part(source, self.out_dir, json.loads(self.opts_json))


def run_pipeline(
    files: list[str],
    out_dir: Path,
    opts: dict,
    *,
    pipeline_args: list[str] | None = None,
) -> None:
    """Scan `files` into `out_dir/parts/`, one file per element."""
    options = PipelineOptions(pipeline_args or ["--runner=DirectRunner"])
    with beam.Pipeline(options=options) as p:
        _ = (
            p
            | "Files" >> beam.Create(list(files))
            | "Spread" >> beam.Reshuffle()  # one file per worker rather than all on one
            | "Scan" >> beam.ParDo(ScanFileFn(str(out_dir), json.dumps(opts)))
        )
