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

import json
import sys
import time

from _datatrove_recipe import filter_then_dedup, local_lid, runner
from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature
from datatrove.pipeline.filters import GopherQualityFilter, LanguageFilter
from datatrove.pipeline.readers import ParquetReader

corpus, work, lid_path = sys.argv[1:4]
mode = sys.argv[4] if len(sys.argv) > 4 else "fineweb"
run = runner(work)

lang_filter = LanguageFilter(languages=None, language_threshold=0.5)
lang_filter.model = local_lid(lid_path)
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
from datatrove.pipeline.filters import URLFilter  # noqa: E402

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
n = filter_then_dedup(run, work, [reader, url_filter, lang_filter])
print(json.dumps({"documents": n, "seconds": time.perf_counter() - t0}))
