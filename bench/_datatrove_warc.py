"""Run datatrove's WarcReader + Trafilatura extractor + JsonlWriter over WARC files, one task.

Executed inside bench/.venvs/datatrove-warc by bench/import.py; prints one JSON line:
{"documents": n, "seconds": s, "cpu_seconds": c} (the pipeline run, imports excluded; CPU of
this process and of the children it waited for: the extractor's sandbox process).
Usage: python _datatrove_warc.py WARC_DIR GLOB OUT_DIR
"""

import json
import resource
import sys
import time

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.extractors import Trafilatura
from datatrove.pipeline.readers import WarcReader
from datatrove.pipeline.writers import JsonlWriter

warc_dir, pattern, out_dir = sys.argv[1:4]
executor = LocalPipelineExecutor(
    pipeline=[
        WarcReader(warc_dir, glob_pattern=pattern),
        # deduplicate=False: trafilatura's own LRU text dedup would drop the bench's page copies
        # (each page appears once per copy k), which Refinery keeps as distinct documents
        Trafilatura(favour_precision=True, timeout=10.0, deduplicate=False),
        JsonlWriter(out_dir, compression=None),
    ],
    tasks=1,
    workers=1,
    logging_dir=out_dir + "/logs",
)


def _cpu() -> float:
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


start, cpu_start = time.perf_counter(), _cpu()
executor.run()
seconds, cpu_seconds = time.perf_counter() - start, _cpu() - cpu_start
n = 0
import glob  # noqa: E402

for path in glob.glob(out_dir + "/*.jsonl"):
    with open(path) as fh:
        n += sum(1 for _ in fh)
print(
    json.dumps({"documents": n, "seconds": round(seconds, 3), "cpu_seconds": round(cpu_seconds, 3)})
)
