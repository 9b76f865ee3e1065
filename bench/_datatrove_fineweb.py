"""datatrove's FineWeb recipe over WARC files: URL filter, Trafilatura, English LID, Gopher
repetition + quality, C4, FineWeb quality filters, then MinHash dedup (signatures, buckets,
clusters, filter), as in datatrove's examples/fineweb.py, one task each (the bucket stage: one per bucket).

Executed inside bench/.venvs/datatrove by bench/ablate.py; prints one JSON line:
{"documents": n, "seconds": s}. Usage: python _datatrove_fineweb.py WARC_DIR WORK_DIR LID_MODEL
"""

import glob
import json
import sys
import time

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup import (
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.dedup.minhash import MinhashConfig
from datatrove.pipeline.extractors import Trafilatura
from datatrove.pipeline.filters import (
    C4QualityFilter,
    FineWebQualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
    LanguageFilter,
    URLFilter,
)
from datatrove.pipeline.readers import JsonlReader, WarcReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.lid import FT176LID

warc_dir, work, lid_path = sys.argv[1:4]


class LocalFT176(FT176LID):
    """lid.176 from the local file Refinery uses (no download)."""

    @property
    def model(self):
        if self._model is None:
            from fasttext.FastText import _FastText

            self._model = _FastText(lid_path)
        return self._model


def run(pipeline, name, tasks=1):
    LocalPipelineExecutor(
        pipeline=pipeline, tasks=tasks, workers=1, logging_dir=f"{work}/logs/{name}"
    ).run()


lang = LanguageFilter()  # FineWeb: English only, score >= 0.65
lang.model = LocalFT176(None)
start = time.perf_counter()
run(
    [
        WarcReader(warc_dir, glob_pattern="*.warc.gz"),
        URLFilter(),
        Trafilatura(favour_precision=True, timeout=10.0),
        lang,
        GopherRepetitionFilter(),
        GopherQualityFilter(),
        C4QualityFilter(filter_no_terminal_punct=False),
        FineWebQualityFilter(),
        JsonlWriter(f"{work}/filtered", compression=None),
    ],
    "filter",
)
config = MinhashConfig()
run([JsonlReader(f"{work}/filtered"), MinhashDedupSignature(f"{work}/sigs", config=config)], "sig")
# one task per bucket, as datatrove requires (each task reads its bucket's signatures)
run(
    [MinhashDedupBuckets(f"{work}/sigs", f"{work}/buckets", config=config)],
    "buckets",
    tasks=config.num_buckets,
)
run([MinhashDedupCluster(f"{work}/buckets", f"{work}/remove_ids", config=config)], "cluster")
run(
    [
        JsonlReader(f"{work}/filtered"),
        MinhashDedupFilter(f"{work}/remove_ids"),
        JsonlWriter(f"{work}/output", compression=None),
    ],
    "dedup",
)
seconds = time.perf_counter() - start
n = sum(sum(1 for _ in open(p)) for p in glob.glob(f"{work}/output/*.jsonl"))
print(json.dumps({"documents": n, "seconds": round(seconds, 3)}))
