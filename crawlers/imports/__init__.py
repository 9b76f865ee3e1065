"""Bring existing archives into Refinery: WARC/ARC files, Common Crawl WET files and licensed
JSONL/Parquet corpora, with today's opt-outs applied (`crawlers.imports.consent`).

- `warc`: one WARC/ARC file -> page rows (the crawl's pages.parquet contract) and recorded skips.
- `wet`, `docs`: text records / corpus rows -> documents.parquet rows.
- `consent`: robots.txt fetched today for both tokens plus the archived X-Robots-Tag and meta
  robots decide `training_allowed`; `consent_source` says which evidence decided.
- `run`: the whole import over many files (resumable: finished files are not redone).

Plain Python: no Dagster, no Beam (pipelines/stages/imports.py and pipelines/beam/imports.py
drive it).
"""
