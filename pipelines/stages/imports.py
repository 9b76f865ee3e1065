"""Import existing archives: `refinery import warc|wet|docs` and the `imported_pages` asset.

`import warc` writes the crawl's output contract (pages.parquet referring to WARC records by
file and offset), so `refinery extract --crawl DIR` runs on it unchanged. Without --out it
writes `<lake>/crawl/shard=import/` (`--shard K/N`, or Dagster partition K: the files whose name
hashes to K, into `shard=import-K/`), one more shard of the lake's crawl: the `documents` asset
(extract over the lake's crawl) reads it with the crawled shards, and the graph shows
`imported_pages -> documents`. Scanning runs as a Beam job, one file (or one byte range of a
large gzip-per-record file) per element (`pipelines/beam/imports.py`); consent (today's
robots.txt for both tokens plus the archived X-Robots-Tag and meta robots) is decided for every
origin (`crawlers.imports.consent`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crawlers.crawl.config import CrawlConfig
from pipelines.stage import Lake, Params, Stage, Summary, param

IMPORT_SHARD = "shard=import"
# imported_pages partitions: the files of partition k are those whose name hashes to k
# (`crawlers.imports.run.shard_of`), imported into crawl/shard=import-<k>/ with their own resume
# markers; a file added later moves no other file to another partition
IMPORT_SHARDS = 4
# A record body over this is skipped as too_large unless --max-record-bytes says otherwise
# (`crawlers.imports.warc.ScanOptions`: the crawl's cap on a decompressed body).
MAX_RECORD_BYTES: int = CrawlConfig.model_fields["max_decompressed_bytes"].default


def _mib(n: int) -> str:
    return f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n} bytes"


class ImportOptions(Params):
    """What every import shares: tokens, robots.txt fetch settings, --offline."""

    agent: str = param("RefineryBot", help="Crawl product token asked for in robots.txt.")
    training_agent: str = param(
        "RefineryBot-Extended", help="Training product token asked for in robots.txt."
    )
    delay: float = param(1.0, min=0, help="Seconds between robots.txt requests to one server.")
    allow_private_networks: bool = param(
        False,
        help="Allow loopback/private addresses: robots.txt fetches, http(s) archives and globs, "
        "and fsspec schemes the guard cannot check (ftp://, sftp://, chained URLs).",
    )
    offline: bool = param(
        False,
        help="Fetch no robots.txt: every row with a URL is marked not consented, saying so.",
    )
    concurrency: int = param(64, min=1, help="robots.txt requests in flight at once.")
    politeness_key: str = param(
        "ip",
        help="What one politeness slot covers: ip (resolved address; many hosts behind one CDN "
        "address are asked one after another), domain or host.",
    )

    def config(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "training_agent": self.training_agent,
            "delay": self.delay,
            "allow_private_networks": self.allow_private_networks,
            "concurrency": self.concurrency,
            "politeness_key": self.politeness_key,
        }


class ImportWarcParams(ImportOptions):
    files: list[str] = param(
        [],
        argument=True,
        help="WARC/ARC/WACZ files or globs (local paths or fsspec URLs; gzip per record or "
        "whole, zstd); or none, with --files-from.",
    )
    out: Path | None = param(
        None, output=True, help="Output directory (default: the lake's crawl/shard=import)."
    )
    max_record_bytes: int | None = param(
        None,
        help="Skip (as too_large) a record whose body is over this many bytes (default: "
        f"{_mib(MAX_RECORD_BYTES)}, the crawl's max_decompressed_bytes).",
    )
    files_from: Path | None = param(
        None,
        help="A text file (or .gz) listing more files, one path or URL a line (e.g. Common "
        "Crawl's warc.paths.gz with --files-prefix https://data.commoncrawl.org/).",
    )
    files_prefix: str = param(
        "", help="Put in front of each relative line of --files-from (a directory or a URL)."
    )
    shard: str = param(
        "0/1",
        asset=False,
        help="K/N: import only the files of shard K of N (a hash of each file's name), into "
        "crawl/shard=import-K (Dagster: one partition each).",
    )
    split_bytes: int = param(
        256 << 20,
        min=0,
        help="Read a gzip-per-record WARC larger than this (local, or remote where the server "
        "answers byte ranges) as byte ranges of about this size, one Beam element each (0: one "
        "element per file).",
    )
    runner: str = param(
        "DirectRunner", resource="beam.runner", help="Beam runner; unknown options go to Beam."
    )
    beam_args: list[str] = param([], extra_args=True, resource="beam.options")


class ImportSummary(Summary):
    files: int = 0
    records: int = 0
    pages: int | None = None
    documents: int | None = None
    skipped: int = 0
    hosts: int = 0
    hosts_unreachable: int = 0
    training_allowed: int = 0
    training_not_allowed: int = 0
    offline: bool = False
    seconds: float = 0.0
    details: dict[str, Any] = {}

    def text(self) -> str:
        return json.dumps(self.details, indent=2, default=str)


def _summary(s: dict[str, Any], outputs: dict[str, str], seconds: float) -> ImportSummary:
    figures = {k: s[k] for k in ImportSummary.model_fields if k in s and k != "outputs"}
    return ImportSummary(
        outputs=outputs, seconds=round(seconds, 2), details={**s, "out": outputs}, **figures
    )


def _shard(p: ImportWarcParams, lake: Lake) -> tuple[int, int]:
    if lake.partition is not None:
        return int(lake.partition), IMPORT_SHARDS
    try:
        k, n = (int(x) for x in p.shard.split("/"))
    except ValueError:
        raise ValueError(f"--shard {p.shard!r}: expected K/N, e.g. 0/4") from None
    if not 0 <= k < n:
        raise ValueError(f"--shard {p.shard!r}: K must be 0..N-1, e.g. 0/4")
    return k, n


def listed_files(path: Path, prefix: str = "") -> list[str]:
    """The lines of a file list (gzip or plain), blank lines and # comments left out; a line
    that is neither absolute nor a URL gets `prefix` in front."""
    import gzip

    raw = Path(path).read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if prefix and "://" not in line and not line.startswith("/"):
            line = prefix.rstrip("/") + "/" + line
        out.append(line)
    if not out:
        raise ValueError(f"--files-from {path}: lists no file; give one path or URL a line")
    return out


def import_warc(p: ImportWarcParams, lake: Lake) -> ImportSummary:
    """Import WARC/ARC files as a crawl (pages.parquet + records by file and offset), with
    today's opt-outs applied; archived noai opt-outs are appended to the lake's consent ledger,
    so they hold across import shards."""
    import time

    from crawlers.imports.run import import_warc as run_import

    files = list(p.files) + (listed_files(p.files_from, p.files_prefix) if p.files_from else [])
    if not files and lake.interactive:
        raise ValueError(
            "FILE_OR_GLOB: name at least one WARC/ARC file or glob (or a list: --files-from)"
        )
    # Dagster with no `files` configured: an empty import (0 pages), so "Materialize all" works
    k, n = _shard(p, lake)
    where = IMPORT_SHARD if n == 1 else f"{IMPORT_SHARD}-{k}"
    out = Path(p.out) if p.out else lake.root / "crawl" / where
    args = [f"--runner={p.runner}", *p.beam_args]
    if p.runner != "DirectRunner" or p.beam_args:
        from pipelines.beam import fs

        fs.check_args(args)  # one line before the import removes its previous outputs

    def scanner(units: list, out_dir: Path, opts: dict[str, Any]) -> None:
        if len(units) == 1 and p.runner == "DirectRunner" and not p.beam_args:
            from crawlers.imports.run import scan_in_process

            scan_in_process(units, out_dir, opts)  # one element: Beam would only add its start
            return
        from pipelines.beam.imports import run_pipeline

        run_pipeline(units, out_dir, opts, pipeline_args=args)

    started = time.perf_counter()
    s = run_import(
        files,
        out,
        config=p.config(),
        offline=p.offline,
        max_record_bytes=p.max_record_bytes,
        scanner=scanner,
        split_bytes=p.split_bytes or None,
        shard=(k, n),
        # archived noai opt-outs go to the lake's consent ledger: a shard's copy of a URL another
        # shard's capture opted out is refused wherever consent is asked
        lake_root=lake.root if (n > 1 or not p.out) else None,
        log=lake.log,
    )
    return _summary(s, {"imported_pages": str(out)}, time.perf_counter() - started)


class ImportWetParams(ImportOptions):
    files: list[str] = param(argument=True, help="Common Crawl WET files or globs.")
    out: Path | None = param(
        None, output=True, help="Output directory (default: the lake's imports/wet)."
    )


def import_wet(p: ImportWetParams, lake: Lake) -> ImportSummary:
    """Import Common Crawl WET text records straight into documents.parquet (no extraction)."""
    import time

    from crawlers.imports.wet import import_wet as run_import

    out = Path(p.out) if p.out else lake.root / "imports" / "wet"
    started = time.perf_counter()
    s = run_import(p.files, out, config=p.config(), offline=p.offline, log=lake.log)
    return _summary(s, {"wet_documents": str(out)}, time.perf_counter() - started)


class ImportDocsParams(ImportOptions):
    files: list[str] = param(
        argument=True,
        help="JSONL (.jsonl, .jsonl.gz) or Parquet corpora, globs or directories (read "
        "recursively, _SUCCESS, hidden and empty files passed over).",
    )
    out: Path | None = param(
        None, output=True, help="Output directory (default: the lake's imports/docs)."
    )
    text_field: str = param(
        "text", help="The field holding the document text (a dotted path reaches into objects)."
    )
    id_field: str | None = param(None, help="The field holding a document id (default: derived).")
    url_field: str | None = param(
        None,
        help="The field holding the URL, e.g. metadata.url (rows with one get the robots.txt "
        "check; default: the first of url, metadata.url, meta.url, ... a row has).",
    )
    license: str | None = param(
        None, help="The corpus licence: documents without a URL are consented by it."
    )
    max_record_bytes: int | None = param(
        None,
        help="Skip (as too_large) a document whose text is over this many bytes of UTF-8 "
        "(default: 8 MB, as import wet).",
    )


def import_docs(p: ImportDocsParams, lake: Lake) -> ImportSummary:
    """Import a JSONL/Parquet corpus into documents.parquet, fields mapped by the flags."""
    import time

    from crawlers.imports.docs import import_docs as run_import

    out = Path(p.out) if p.out else lake.root / "imports" / "docs"
    started = time.perf_counter()
    s = run_import(
        p.files,
        out,
        text_field=p.text_field,
        id_field=p.id_field,
        url_field=p.url_field,
        license=p.license,
        max_record_bytes=p.max_record_bytes,
        config=p.config(),
        offline=p.offline,
        log=lake.log,
    )
    return _summary(s, {"corpus_documents": str(out)}, time.perf_counter() - started)


IMPORT_WARC = Stage(
    name="import warc",
    params=ImportWarcParams,
    run=import_warc,
    beam_job=True,
    description=" ".join(import_warc.__doc__.split()),
    outputs=("imported_pages",),
    group="crawl",
    partitions=[str(k) for k in range(IMPORT_SHARDS)],
    asset_defaults={"files": []},
    output_descriptions={
        "imported_pages": "Pages imported from WARC/ARC archives (config: files, globs, or "
        "files_from, a file list), with today's robots.txt and the archived opt-outs applied. "
        "Partition k imports the files whose name hashes to k into lake crawl/shard=import-<k>/ "
        "(one more shard of the crawl that `documents` extracts); a re-run resumes at the files "
        "(and byte ranges) it had not finished."
    },
)
IMPORT_WET = Stage(
    name="import wet",
    params=ImportWetParams,
    run=import_wet,
    description=import_wet.__doc__.splitlines()[0],
)
IMPORT_DOCS = Stage(
    name="import docs",
    params=ImportDocsParams,
    run=import_docs,
    description=import_docs.__doc__.splitlines()[0],
)
