"""Beam pipeline of the extraction stage: WARC shards in, five Parquet datasets out.

Each element is one (pages file, WARC file) shard; a worker reads that shard's records, joins
the rendered DOM of pages the render stage handled, calls `crawlers.extract.extract_page`, and
writes each dataset's rows as Parquet part files itself (through `fs`, at most PART_ROWS rows
each), merged and sorted by the stage into one file each. Configuration reaches workers as
constructor arguments, and the pipeline is Create, Reshuffle and ParDo only (no Beam file sink,
whose side inputs the DaskRunner lacks), so it runs on Direct, Portable, Dask, Flink, Spark and
Dataflow runners.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from common.schemas import OUTPUTS
from pipelines.beam import fs

CHILD_TAGS = ("image_refs", "tables", "interleaved", "rejects")
PART_ROWS = 2000  # rows of one dataset a worker holds before writing them as a part


class ExtractFn(beam.DoFn):
    """Join the render stage's output, run extract_page, and fan results out to tagged outputs."""

    def __init__(self, rendered_path: str | None, config_json: str, teacher_json: str | None):
        self.rendered_path = rendered_path
        self.config_json = config_json
        self.teacher_json = teacher_json

    def setup(self) -> None:
        from crawlers.extract import ExtractConfig

        self.rendered: dict[str, dict] = {}
        if self.rendered_path:
            import pyarrow.parquet as pq

            cols = ["url", "rendered", "render_reason", "html", "error"]
            for row in pq.read_table(self.rendered_path, columns=cols).to_pylist():
                self.rendered[row["url"]] = row
        llm = None
        if self.teacher_json:
            from common.consent import Consent
            from common.teacher import TeacherClient
            from crawlers.extract.llm import LLMExtractor

            t = json.loads(self.teacher_json)
            # the one consent rule: the page's flag, then the lake's consent ledger
            consent = Consent.load(None, files=t.get("ledger") or [])
            client = TeacherClient(
                t["base_url"],
                t["model"],
                t.get("api_key"),
                t.get("timeout", 60.0),
                consent=consent,
            )
            llm = LLMExtractor(client, t["hosts"], consent=consent)
        self.config = ExtractConfig(**json.loads(self.config_json), llm=llm)

    def process(self, record):
        from crawlers.extract import extract_page

        r = self.rendered.get(record["url"])
        if r is not None:
            record["rendered"] = bool(r["rendered"] and r["html"])
            record["render_reason"] = r["render_reason"]
            record["render_error"] = r["error"]
            if record["rendered"]:
                record["rendered_html"] = r["html"]
        result = extract_page(record, self.config)
        if result.reject is not None:
            yield beam.pvalue.TaggedOutput("rejects", result.reject)
            return
        yield result.document
        for ref in result.image_refs:
            yield beam.pvalue.TaggedOutput("image_refs", ref)
        for table in result.tables:
            yield beam.pvalue.TaggedOutput("tables", table)
        yield beam.pvalue.TaggedOutput("interleaved", result.interleaved)


class ExtractShardFn(ExtractFn):
    """Extract one (pages file, WARC file) shard and write every dataset's rows as part files
    `parts_dir/<dataset>/part-<shard key>-<n>.parquet`; yield (shard key, rows per dataset).
    The names depend only on the shard, so a retried shard overwrites its own parts."""

    def __init__(
        self,
        rendered_path: str | None,
        config_json: str,
        teacher_json: str | None,
        parts_dir: str,
    ):
        super().__init__(rendered_path, config_json, teacher_json)
        self.parts_dir = parts_dir

    def process(self, shard):
        from crawlers.extract.crawl_io import iter_shard_records

        key = hashlib.sha256(json.dumps([str(s) for s in shard]).encode()).hexdigest()[:16]
        rows: dict[str, list[dict]] = {name: [] for name in ("documents", *CHILD_TAGS)}
        written = dict.fromkeys(rows, 0)
        parts = dict.fromkeys(rows, 0)

        def flush(name: str) -> None:
            if not rows[name]:
                return
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pylist(rows[name], schema=OUTPUTS[name])
            folder = fs.join(self.parts_dir, name)
            fs.mkdirs(folder)
            with fs.open_write(fs.join(folder, f"part-{key}-{parts[name]:05d}.parquet")) as f:
                pq.write_table(table, f)
            parts[name] += 1
            written[name] += table.num_rows
            rows[name] = []

        for record in iter_shard_records(*shard):
            for out in super().process(record):
                name, row = (
                    (out.tag, out.value)
                    if isinstance(out, beam.pvalue.TaggedOutput)
                    else ("documents", out)
                )
                rows[name].append(row)
                if len(rows[name]) >= PART_ROWS:
                    flush(name)
        for name in rows:
            flush(name)
        yield key, written


def run_pipeline(
    shards: list[tuple[str, str]],
    parts_dir: Path,
    *,
    rendered_path: str | None = None,
    config: dict | None = None,
    teacher: dict | None = None,
    pipeline_args: list[str] | None = None,
) -> None:
    """Run extraction over the shards; write `parts_dir/<dataset>/part-*.parquet`.

    Short runner names (`DaskRunner`) and the Dask defaults come from `fs.runner_args`;
    `fs.run` closes the Dask client and names a job service that went away."""
    options = PipelineOptions(fs.runner_args(pipeline_args or ["--runner=DirectRunner"]))
    p = beam.Pipeline(options=options)
    _ = (
        p
        | "Shards" >> beam.Create([list(s) for s in shards])
        | "Spread" >> beam.Reshuffle()  # one shard per worker rather than all on one
        | "Extract"
        >> beam.ParDo(
            ExtractShardFn(
                rendered_path,
                json.dumps(config or {}),
                json.dumps(teacher) if teacher else None,
                str(parts_dir),
            )
        )
    )
    fs.run(p)
