"""The stage table: every stage of Refinery, declared once (see `pipelines.stage`).

The CLI (`pipelines.cli`) and the Dagster graph (`pipelines.graph`) are both derived from it.
"""

from __future__ import annotations

import dataclasses

from pipelines.stage import Stage
from pipelines.stages.ablate import ABLATE
from pipelines.stages.captions import CAPTIONER_TRAIN, CAPTIONS
from pipelines.stages.crawl import CRAWL
from pipelines.stages.extract import EXTRACT, RENDER
from pipelines.stages.filter import FILTER
from pipelines.stages.images import CLIP_TRAIN, DOMAINS, IMAGES_BUILD, INTERLEAVED
from pipelines.stages.imports import IMPORT_DOCS, IMPORT_WARC, IMPORT_WET
from pipelines.stages.inspect import INSPECT
from pipelines.stages.mix import MIX_BUILD, MIX_REPORT, MIX_VALIDATE, MIXTURES, TOKENIZER
from pipelines.stages.mix_export import MIX_EXPORT
from pipelines.stages.ocr import OCR
from pipelines.stages.ops import CONSENT_RECHECK, RECRAWL
from pipelines.stages.quality import QUALITY_MODELS, QUALITY_TRAIN
from pipelines.stages.sampleweb import SAMPLE_WEB, SERVE
from pipelines.stages.synth import CHARTS, DOMAIN_QA, TABLES
from pipelines.stages.train import RETRIEVAL_DATA, RETRIEVAL_EVAL, TRAIN
from pipelines.stages.upcycle import UPCYCLE

# `documents` extracts the lake's crawl, whose shard=import-<k>/ are what `imported_pages` wrote: a
# Dagster dependency without a data handle (the crawl directory holds both), so lineage shows
# imported_pages -> documents and a run that imports can be followed by one that extracts.
EXTRACT = dataclasses.replace(EXTRACT, partitions_follow="imported_pages")

STAGES: list[Stage] = [
    SAMPLE_WEB,
    SERVE,
    CRAWL,
    IMPORT_WARC,
    IMPORT_WET,
    IMPORT_DOCS,
    RENDER,
    EXTRACT,
    QUALITY_MODELS,
    QUALITY_TRAIN,
    FILTER,
    INSPECT,
    IMAGES_BUILD,
    INTERLEAVED,
    CLIP_TRAIN,
    DOMAINS,
    CHARTS,
    TABLES,
    CAPTIONER_TRAIN,
    CAPTIONS,
    OCR,
    DOMAIN_QA,
    TOKENIZER,
    MIX_VALIDATE,
    MIX_BUILD,
    MIX_REPORT,
    MIX_EXPORT,
    *MIXTURES,
    RETRIEVAL_DATA,
    *TRAIN,
    RETRIEVAL_EVAL,
    UPCYCLE,
    ABLATE,
    CONSENT_RECHECK,
    RECRAWL,
]

# Help of the CLI's command groups.
GROUPS = {
    "mix": "Mixtures: validate a spec, build shards, report token accounting.",
    "tokenizer": "The byte-level BPE tokenizer.",
    "train": "Train the model: pretrain, cpt, multimodal, long-context (with its retrieval "
    "data and eval); upcycle a dense checkpoint to MoE.",
    "quality": "Per-language quality classifiers (fastText).",
    "images": "Image-text pairs, interleaved documents, knowledge-domain images.",
    "synth": "Synthetic data: charts from sandboxed code, tables, domain QA, with verified QA.",
    "captioner": "A CoCa captioner trained here with open_clip on the kept image-text pairs.",
    "clip": "A CLIP model trained here with open_clip on the kept image-text pairs.",
    "consent": "Consent: re-check robots.txt for the lake's hosts into the consent ledger.",
    "sampleweb": "The bundled sample web: serve it on loopback or write it to the lake.",
    "import": "Import archives: WARC/ARC as a crawl, Common Crawl WET and JSONL/Parquet corpora "
    "as documents, with today's robots.txt opt-outs applied.",
}
