"""datatrove's side of bench/filter.py, one task each, on the bench corpus (documents.parquet).

`fineweb` (the default): datatrove's FineWeb recipe (examples/fineweb.py) after extraction:
URLFilter (the same lists and banned words as Refinery's default URL filter, from LISTS_JSON,
not its shipped UT1 lists), LanguageFilter (every language, as Refinery keeps six), Gopher
repetition, Gopher quality, C4 quality and FineWeb quality filters, then the whole MinHash
de-duplication (signatures, buckets, clusters, filter), as Refinery's filter de-duplicates.
`lite`: LanguageFilter + GopherQualityFilter + MinhashDedupSignature (the earlier comparison).

Executed inside bench/.venvs/datatrove by bench/filter.py; prints one JSON line.
Usage: python _datatrove_filter.py CORPUS_DIR WORK_DIR LID_MODEL_PATH [fineweb|lite [LISTS_JSON]]
"""

import glob
import json
import sys
import time

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.minhash import (
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.filters import GopherQualityFilter, LanguageFilter
from datatrove.pipeline.readers import JsonlReader, ParquetReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.lid import FT176LID

corpus, work, lid_path = sys.argv[1:4]
mode = sys.argv[4] if len(sys.argv) > 4 else "fineweb"


class LocalFT176(FT176LID):
    """datatrove's lid.176 wrapper pointed at the same local file Refinery uses (no download)."""

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


lang_filter = LanguageFilter(languages=None, language_threshold=0.5)
lang_filter.model = LocalFT176(None)
reader = ParquetReader(corpus, glob_pattern="documents.parquet", text_key="text", id_key="id")
t0 = time.perf_counter()
if mode == "lite":
    pipeline = [
        reader,
        lang_filter,
        GopherQualityFilter(),
        MinhashDedupSignature(output_folder=f"{work}/signatures", config=MinhashConfig()),
    ]
    run(pipeline, "lite")
    print(json.dumps({"seconds": time.perf_counter() - t0}))
    sys.exit(0)

import tldextract  # noqa: E402
from datatrove.pipeline.filters import (  # noqa: E402
    C4QualityFilter,
    FineWebQualityFilter,
    GopherRepetitionFilter,
    URLFilter,
)

lists = json.load(open(sys.argv[5]))
url_filter = URLFilter(
    extra_domains=lists["domains"],
    extra_urls=lists["urls"],
    banned_words=lists["hard"],
    soft_banned_words=lists["soft"],
    banned_subwords=lists["subword"],
    use_integrated_lists=False,
)
url_filter.tldextractor = tldextract.TLDExtract(suffix_list_urls=())  # bundled list, no network
run(
    [
        reader,
        url_filter,
        lang_filter,
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
n = sum(sum(1 for _ in open(p)) for p in glob.glob(f"{work}/output/*.jsonl"))
print(json.dumps({"documents": n, "seconds": time.perf_counter() - t0}))
