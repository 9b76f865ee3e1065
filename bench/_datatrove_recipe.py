"""What bench/_datatrove_filter.py and bench/_datatrove_fineweb.py share, run inside
bench/.venvs/datatrove (imports datatrove only): datatrove's lid.176 wrapper on the local model
file, a one-task executor, FineWeb's quality steps, and its whole MinHash de-duplication, as in
datatrove's examples/fineweb.py."""

import glob

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.minhash import (
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.filters import (
    C4QualityFilter,
    FineWebQualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
)
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.lid import FT176LID


def local_lid(lid_path: str) -> FT176LID:
    """datatrove's lid.176 wrapper pointed at the same local file Refinery uses (no download)."""

    class LocalFT176(FT176LID):
        @property
        def model(self):
            if self._model is None:
                from fasttext.FastText import _FastText

                self._model = _FastText(lid_path)
            return self._model

    return LocalFT176(None)


def runner(work: str):
    """run(pipeline, name, tasks=1): one LocalPipelineExecutor, one worker, logs under work."""

    def run(pipeline, name, tasks=1):
        LocalPipelineExecutor(
            pipeline=pipeline, tasks=tasks, workers=1, logging_dir=f"{work}/logs/{name}"
        ).run()

    return run


def quality_steps() -> list:
    """FineWeb's quality filters after language ID."""
    return [
        GopherRepetitionFilter(),
        GopherQualityFilter(),
        C4QualityFilter(filter_no_terminal_punct=False),
        FineWebQualityFilter(),
    ]


def filter_then_dedup(run, work: str, head: list) -> int:
    """Run `head` + the quality steps into work/filtered, then MinHash de-duplication (one task
    per bucket, as datatrove requires) into work/output; return the documents kept."""
    run([*head, *quality_steps(), JsonlWriter(f"{work}/filtered", compression=None)], "filter")
    config = MinhashConfig()
    run(
        [JsonlReader(f"{work}/filtered"), MinhashDedupSignature(f"{work}/sigs", config=config)],
        "sig",
    )
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
    return sum(sum(1 for _ in open(p)) for p in glob.glob(f"{work}/output/*.jsonl"))
