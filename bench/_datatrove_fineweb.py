"""datatrove's FineWeb recipe over WARC files: URL filter, Trafilatura, English LID, Gopher
repetition + quality, C4, FineWeb quality filters, then MinHash dedup (signatures, buckets,
clusters, filter), as in datatrove's examples/fineweb.py, one task each (the bucket stage: one per bucket).

Executed inside bench/.venvs/datatrove by bench/ablate.py; prints one JSON line:
{"documents": n, "seconds": s}. Usage: python _datatrove_fineweb.py WARC_DIR WORK_DIR LID_MODEL
"""

import json
import sys
import time

from _datatrove_recipe import filter_then_dedup, local_lid, runner
from datatrove.pipeline.extractors import Trafilatura
from datatrove.pipeline.filters import LanguageFilter, URLFilter
from datatrove.pipeline.readers import WarcReader

warc_dir, work, lid_path = sys.argv[1:4]
run = runner(work)
lang = LanguageFilter()  # FineWeb: English only, score >= 0.65
lang.model = local_lid(lid_path)
start = time.perf_counter()
n = filter_then_dedup(
    run,
    work,
    [
        WarcReader(warc_dir, glob_pattern="*.warc.gz"),
        URLFilter(),
        Trafilatura(favour_precision=True, timeout=10.0),
        lang,
    ],
)
seconds = time.perf_counter() - start
print(json.dumps({"documents": n, "seconds": round(seconds, 3)}))
