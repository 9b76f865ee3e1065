"""Run datatrove's LanguageFilter + GopherQualityFilter + MinhashDedupSignature on a corpus.

Executed inside bench/.venvs/datatrove by bench/filter.py; prints one JSON line of counts.
Usage: python _datatrove_filter.py CORPUS_DIR WORK_DIR LID_MODEL_PATH
"""

import json
import sys
import time

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature
from datatrove.pipeline.filters import GopherQualityFilter, LanguageFilter
from datatrove.pipeline.readers import ParquetReader
from datatrove.utils.lid import FT176LID

corpus, work, lid_path = sys.argv[1:4]


class LocalFT176(FT176LID):
    """datatrove's lid.176 wrapper pointed at the same local file Refinery uses (no download)."""

    @property
    def model(self):
        if self._model is None:
            from fasttext.FastText import _FastText

            self._model = _FastText(lid_path)
        return self._model


lang_filter = LanguageFilter(languages=None, language_threshold=0.5)
lang_filter.model = LocalFT176(None)
pipeline = [
    ParquetReader(corpus, glob_pattern="documents.parquet", text_key="text", id_key="id"),
    lang_filter,
    GopherQualityFilter(),
    MinhashDedupSignature(output_folder=f"{work}/signatures", config=MinhashConfig()),
]
t0 = time.perf_counter()
executor = LocalPipelineExecutor(pipeline=pipeline, tasks=1, workers=1, logging_dir=f"{work}/logs")
executor.run()
stats = executor.get_stats() if hasattr(executor, "get_stats") else None
print(json.dumps({"seconds": time.perf_counter() - t0}))
