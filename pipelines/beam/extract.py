"""Beam pipeline of the extraction stage: WARC shards in, five Parquet datasets out.

Each element is one (pages file, WARC file) shard; a worker reads that shard's records, joins
the rendered DOM of pages the render stage handled, and calls `crawlers.extract.extract_page`.
Configuration reaches workers as constructor arguments, so the same pipeline runs on Direct,
Portable, Flink, Spark and Dataflow runners. Outputs are Parquet part files per dataset,
merged and sorted by the stage into one file each.
"""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from common.schemas import OUTPUTS

CHILD_TAGS = ("image_refs", "tables", "interleaved", "rejects")


class ReadShardFn(beam.DoFn):
    """Yield the crawl records of one (pages file, WARC file) shard."""

    def process(self, shard):
        from crawlers.extract.crawl_io import iter_shard_records

        yield from iter_shard_records(*shard)


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


def run_pipeline(
    shards: list[tuple[str, str]],
    parts_dir: Path,
    *,
    rendered_path: str | None = None,
    config: dict | None = None,
    teacher: dict | None = None,
    pipeline_args: list[str] | None = None,
) -> None:
    """Run extraction over the shards; write `parts_dir/<dataset>/part-*.parquet`."""
    options = PipelineOptions(pipeline_args or ["--runner=DirectRunner"])
    with beam.Pipeline(options=options) as p:
        results = (
            p
            | "Shards" >> beam.Create(shards)
            | "Spread" >> beam.Reshuffle()  # one shard per worker rather than all on one
            | "ReadShard" >> beam.ParDo(ReadShardFn())
            | "Extract"
            >> beam.ParDo(
                ExtractFn(
                    rendered_path,
                    json.dumps(config or {}),
                    json.dumps(teacher) if teacher else None,
                )
            ).with_outputs(*CHILD_TAGS, main="documents")
        )
        for name in ("documents", *CHILD_TAGS):
            _ = results[name] | f"Write_{name}" >> beam.io.WriteToParquet(
                str(parts_dir / name / "part"),
                OUTPUTS[name],
                file_name_suffix=".parquet",
            )
