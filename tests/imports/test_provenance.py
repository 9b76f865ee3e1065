"""Provenance: every document keeps the archive record it came from (source file, record offset,
WARC-Record-ID, capture time), crawled or imported, through extraction, and a mixture's manifest
lists the archives it drew from."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from warcio.archiveiterator import ArchiveIterator

from common.schemas import PROVENANCE
from crawlers.crawl.fetcher import Hop
from crawlers.crawl.output import PAGES_SCHEMA
from crawlers.crawl.warc import WarcStore
from crawlers.imports.run import import_warc
from tests.imports.archives import ALLOW, TEST_CONFIG, base, page, response
from tests.imports.archives import write_warc as write_archive

CRAWLED_AT = "2026-01-02T03:04:05Z"


def _crawl(out: Path, urls: list[str]) -> Path:
    """A crawl shard as `refinery crawl` writes it: the crawler's WarcStore and pages rows."""
    store = WarcStore(out)
    rows = []
    for url in urls:
        headers = [("Content-Type", "text/html; charset=utf-8")]
        hop = Hop(url, 200, "OK", response_headers=headers, raw_body=page(url.rsplit("/", 1)[1]))
        loc = store.write([hop], CRAWLED_AT)
        rows.append(
            {
                "url": url,
                "status": 200,
                "fetched_at": CRAWLED_AT,
                "crawl_allowed": True,
                "training_allowed": True,
                "robots_crawl": "allowed",
                "robots_training": "allowed",
                "content_type": "text/html",
                "warc_file": loc.file,
                "warc_offset": loc.offset,
                "warc_length": loc.length,
            }
        )
    store.close()
    pq.write_table(pa.Table.from_pylist(rows, schema=PAGES_SCHEMA), out / "pages.parquet")
    return out


def _record_at(path: str, offset: int):
    with open(path, "rb") as fh:
        fh.seek(offset)
        record = next(iter(ArchiveIterator(fh)))
        return record.rec_type, dict(record.rec_headers.headers)


def test_documents_keep_their_archive_record_and_the_mixture_lists_its_archives(tmp_path, robots):
    from pipelines.stages.extract import run_extract
    from training.mixture.builder import build_mixture
    from training.tokenizer import train_tokenizer

    a = base(ALLOW, robots.port)
    crawl_root = tmp_path / "crawl"
    _crawl(crawl_root / "shard=0", [f"{a}/crawled-{i}" for i in range(3)])

    def fill(w):
        for i in range(4):
            response(w, f"{a}/imported-{i}", page(f"imported {i}"))

    archive = write_archive(tmp_path / "cc.warc.gz", fill)
    import_warc([str(archive)], crawl_root / "shard=import", config=TEST_CONFIG)

    out = tmp_path / "extract"
    run_extract(crawl_root, out, "never")
    docs = pq.read_table(out / "documents.parquet").to_pylist()
    assert len(docs) == 7
    for doc in docs:
        assert all(doc[k] is not None for k in PROVENANCE), doc
        kind, headers = _record_at(doc["source_file"], doc["record_offset"])
        assert kind == "response" and headers["WARC-Target-URI"] == doc["url"]
        assert headers["WARC-Record-ID"] == doc["warc_record_id"]
        assert headers["WARC-Date"] == doc["capture_time"]
    crawled = [d for d in docs if "/crawled-" in d["url"]]
    imported = [d for d in docs if "/imported-" in d["url"]]
    warc_dir = (crawl_root / "shard=0" / "warc").resolve()
    assert {Path(d["source_file"]).parent for d in crawled} == {warc_dir}
    assert {d["capture_time"] for d in crawled} == {CRAWLED_AT}
    assert {d["source_file"] for d in imported} == {str(archive.resolve())}
    assert len({d["warc_record_id"] for d in docs}) == 7
    # the filter writes every input column: the provenance goes on to annotated/documents
    from filters.pipeline import output_schema

    assert set(PROVENANCE) <= set(output_schema(pq.read_schema(out / "documents.parquet")).names)

    # the mixture manifest lists the archives, in process and on Beam alike
    train_tokenizer([d["text"] for d in docs], 300, tmp_path / "tok" / "tokenizer.json")
    spec = {
        "name": "archives",
        "seq_len": 32,
        "total_tokens": 100_000,  # more than there is: every document once (max_epochs 1)
        "seed": 1,
        "tokenizer": str(tmp_path / "tok" / "tokenizer.json"),
        "shard_sequences": 16,
        "allow_shortfall": True,
        "buckets": {
            "web": {
                "weight": 1.0,
                "max_epochs": 1,
                "sources": [{"path": str(out / "documents.parquet")}],
            }
        },
        "eval": {"sequences_per_group": 1, "max_fraction": 0.2},
    }
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(spec))
    manifest = build_mixture(spec_path, tmp_path / "mix")
    archives = {a["source_file"]: a for a in manifest["archives"]}
    crawl_warc = crawled[0]["source_file"]
    assert set(archives) == {crawl_warc, str(archive.resolve())}
    assert sum(a["tokens"] for a in archives.values()) == manifest["tokens"]
    for name, docs_of in ((crawl_warc, crawled), (str(archive.resolve()), imported)):
        assert archives[name]["documents"] + archives[name]["heldout_documents"] == len(docs_of)
    on_disk = json.loads((tmp_path / "mix" / "manifest.json").read_text())
    assert on_disk["archives"] == manifest["archives"]

    from pipelines.beam.mix import build_mixture_beam

    beam = build_mixture_beam(spec_path, tmp_path / "beam", pipeline_args=["--runner=DirectRunner"])
    assert beam["archives"] == manifest["archives"]
