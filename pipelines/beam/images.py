"""CLIP scoring as a Beam transform: a batched DoFn that loads the model once per worker.

`ScoreWithClip` takes batches of (pair id, image path, caption), loads the CLIP model in
`setup()` (a model directory on `gs://`/`s3://` is staged locally first), reads the images
through Beam's `FileSystems` and emits (pair id, cosine score; NaN when the image cannot be
decoded). `score_pairs_beam` runs it and hands the scores back through part files written by the
workers (no Beam metrics, no shared state), so it runs on Direct, Portable, Dask, Flink, Spark and
Dataflow alike; `training.clip.ClipScorer` is the same scorer in process.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Sequence

import apache_beam as beam
import numpy as np
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.beam import fs

BATCH = 64


class ScoreWithClip(beam.DoFn):
    """(batch index, [(id, image path, caption), ...]) -> part file of {id: score} under `out`."""

    def __init__(self, model: str, out: str, batch_size: int = BATCH) -> None:
        self.model, self.out, self.batch_size = model, out, batch_size
        self.scorer = None

    def setup(self) -> None:
        from training.clip import ClipScorer

        local = self.model if fs.is_local(self.model) else fs.stage_locally(self.model)
        self.scorer = ClipScorer(local, batch_size=self.batch_size)

    def process(self, element):
        index, batch = element
        images = []
        for _, path, _ in batch:
            try:
                images.append(fs.read_bytes(path))
            except OSError:
                images.append(b"")  # scores NaN, like an undecodable image
        scores = self.scorer.score(images, [caption for _, _, caption in batch])
        doc = {
            pid: (None if math.isnan(s) else float(s))
            for (pid, _, _), s in zip(batch, scores, strict=True)
        }
        fs.write_json(fs.join(self.out, f"scores-{index:06d}.json"), doc)
        yield index


def score_pairs_beam(
    items: Sequence[tuple[str, str, str]],
    model: str,
    pipeline_args: Sequence[str],
    *,
    work_dir: str | None = None,
    batch_size: int = BATCH,
) -> dict[str, float]:
    """CLIP scores of (id, image path, caption) items on a Beam runner: id -> score (NaN for an
    image that cannot be read or decoded). `work_dir` (any FileSystems path the workers can
    write; default a local temporary directory) holds the part files."""
    work = work_dir or tempfile.mkdtemp(prefix="refinery-clip-scores-")
    fs.mkdirs(work)
    batches = [
        (i // batch_size, list(items[i : i + batch_size])) for i in range(0, len(items), batch_size)
    ]
    options = PipelineOptions(fs.runner_args(list(pipeline_args)))
    pipeline = beam.Pipeline(options=options)
    _ = (
        pipeline
        | "Batches" >> beam.Create(batches)
        | "Score" >> beam.ParDo(ScoreWithClip(model, work, batch_size))
    )
    fs.run(pipeline)
    scores: dict[str, float] = {}
    for part in fs.list_files(fs.join(work, "scores-*.json")):
        for pid, s in fs.read_json(part).items():
            scores[pid] = np.nan if s is None else s
    missing = [pid for pid, _, _ in items if pid not in scores]
    if missing:
        raise RuntimeError(f"CLIP scoring on Beam lost {len(missing)} pairs, e.g. {missing[0]}")
    if work_dir is None:
        fs.delete_tree(work)
    return scores


def beam_scorer(model: str, pipeline_args: Sequence[str]):
    """A `filters.images.pairs.build_pairs` scorer that runs on Beam; its args are checked
    (`fs.check_args`) when it is made, before any image is fetched."""
    fs.check_args(pipeline_args)

    def score(paths: Sequence[str], captions: Sequence[str]) -> np.ndarray:
        items = [(str(i), p, c) for i, (p, c) in enumerate(zip(paths, captions, strict=True))]
        got = score_pairs_beam(items, model, pipeline_args)
        return np.array([got[str(i)] for i in range(len(items))], dtype=np.float64)

    return score
