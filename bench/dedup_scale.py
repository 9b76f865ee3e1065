"""Dedup scaling run: time and driver peak RSS of the filter's de-duplication at two corpus sizes.

A generated corpus (deterministic for a seed) of already-annotated documents: random texts over
a synthetic vocabulary, a quarter of them in clusters of 5,000 near-copies (one word edited per
copy), ~5 % exact copies and ~5 % same-URL pages. Each size runs, in a fresh driver subprocess,
the filter's dedup as the stage runs it: row ranges read and featurised on workers, the sharded
dedup steps (`filters.dedup_shards`, one GroupByKey per step over shard batches: `DedupShards`),
the cluster-part writes and a single-task counts step. The driver's peak RSS is its VmHWM.

Runner: DaskRunner on a local `dask.distributed` cluster (scheduler and 2 worker processes,
separate from the driver: the driver builds and submits the graph and reads back only counts),
`--runner direct` (DirectRunner, in the driver process: there the driver *is* the worker, so its
RSS grows with the data) or `--runner inprocess` (the in-process executor, likewise).

Goals (issue 12): time 20k -> 200k at most 11x; driver peak RSS within 1.5x.

Usage: .venv/bin/python bench/dedup_scale.py [--sizes 20000 200000]
       [--runner dask|direct|inprocess] [--workers 2] [--partitions 4]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLUSTER = 5000
VOCAB = [f"w{i}" for i in range(20000)]


def build_corpus(n: int, path: Path, seed: int = 0) -> dict:
    """Write n annotated rows to path; return the planted structure."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    n_clusters = n // (4 * CLUSTER)
    rows = []
    for c in range(n_clusters):
        base = [rng.choice(VOCAB) for _ in range(150)]
        for j in range(CLUSTER):
            words = list(base)
            words[rng.randrange(len(words))] = rng.choice(VOCAB)
            rows.append((f"near{c:02d}-{j:05d}", " ".join(words), f"http://n{c}.test/{j}"))
    while len(rows) < n:
        i = len(rows)
        r = rng.random()
        if r < 0.05 and i > n_clusters * CLUSTER:
            _, text, _ = rows[rng.randrange(n_clusters * CLUSTER, i)]  # exact copy
            rows.append((f"doc-{i:07d}", text, f"http://copy.test/{i}"))
        elif r < 0.10 and i > n_clusters * CLUSTER:
            _, _, url = rows[rng.randrange(n_clusters * CLUSTER, i)]  # same URL
            text = " ".join(rng.choice(VOCAB) for _ in range(120))
            rows.append((f"doc-{i:07d}", text, url))
        else:
            text = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(80, 200)))
            rows.append((f"doc-{i:07d}", text, f"http://site{i % 301}.test/{i}"))
    rng.shuffle(rows)
    table = pa.table(
        {
            "id": [r[0] for r in rows],
            "url": [r[2] for r in rows],
            "text": [r[1] for r in rows],
            "lang": ["en"] * len(rows),
            "quality_score": [rng.random() for _ in rows],
            "drop_reason": pa.nulls(len(rows), pa.string()),
        }
    )
    pq.write_table(table, path, row_group_size=10_000)
    return {"docs": n, "near_clusters": n_clusters}


def _peak_mib() -> float:
    """This process's peak RSS: VmHWM, which starts afresh at exec.

    Not `getrusage(RUSAGE_SELF).ru_maxrss`: Linux carries the parent's peak into a child across
    fork and exec, so the driver would report the corpus generator's memory as its own.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# The driver's peak RSS after each phase: where it grows, if it does.
PHASES: dict[str, float] = {}


class _Chunks:
    """Reads a chunk of the (already annotated) corpus and returns its dedup features."""

    def __init__(self, dedup_cfg):
        self.dedup_cfg = dedup_cfg

    def __call__(self, chunk):
        from filters.dedup_shards import chunk_features
        from filters.pipeline import read_chunk
        from pipelines.beam import fs

        return chunk[0], chunk_features(read_chunk(chunk, fs), self.dedup_cfg, chunk[0])


def driver(corpus: str, work: str, args: list[str]) -> None:
    """The measured driver: build the dedup pipeline, run it, read back the counts."""
    from filters.config import FilterConfig
    from filters.dedup_shards import run_in_memory
    from filters.pipeline import dedup_outputs, plan_chunks, shard_count

    t0 = time.perf_counter()
    cfg = FilterConfig()
    chunks = plan_chunks(corpus)
    if args == ["--runner=InProcess"]:
        batches = [_Chunks(cfg.dedup)(c) for c in chunks]
        results = run_in_memory(batches, cfg.dedup, shard_count(chunks))
        descs, _ = dedup_outputs(results, work)
        counts = _counts(descs)
    else:
        counts = _beam(chunks, cfg, work, args)
    wall = time.perf_counter() - t0
    out = {"seconds": wall, "driver_peak_rss_mib": _peak_mib(), **counts}
    print(json.dumps(out | {"driver_peak_rss_mib_by_phase": PHASES}))


def _counts(descs: list) -> dict:
    return {
        "cluster_rows": sum(d[2]["rows"] for d in descs if d[0] == "clusters"),
        "clusters": sum(d[2]["clusters"] for d in descs if d[0] == "clusters"),
        "leftover_edges": sum(d[2][0] for d in descs if d[0] == "leftover"),
    }


def _beam(chunks: list, cfg, work: str, args: list[str]) -> dict:
    """The filter's Beam dedup (`DedupShards`) and cluster-part writes, then one counts task."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from filters.pipeline import shard_count
    from pipelines.beam import fs
    from pipelines.beam.filter import DedupShards, WriteClusterPartFn

    class CountsFn(beam.DoFn):
        def process(self, item):
            _, descs = item
            fs.write_json(fs.join(work, "counts.json"), _counts(list(descs)))
            yield 0

    p = beam.Pipeline(options=PipelineOptions(fs.runner_args(args)))
    batches = (
        p
        | "Chunks" >> beam.Create(chunks)
        | "Spread" >> beam.Reshuffle()
        | "Features" >> beam.Map(_Chunks(cfg.dedup))
    )
    results = batches | "Dedup" >> DedupShards(cfg, shard_count(chunks))
    parts = (
        results
        | "ClusterBatches" >> beam.Filter(lambda o: o[0] == "clusters")
        | "WriteClusterParts" >> beam.ParDo(WriteClusterPartFn(work))
    )
    leftover = (
        results
        | "Leftover" >> beam.Filter(lambda o: o[0] == "leftover")
        | "KeyLeftover" >> beam.Map(lambda o: (None, o))
    )
    start = p | "Start" >> beam.Create([(None, ("plan", 0, {}))])
    _ = (
        (start, parts, leftover)
        | "Descriptors" >> beam.Flatten()
        | "OneTask" >> beam.GroupByKey()
        | "Counts" >> beam.ParDo(CountsFn())
    )
    PHASES["built"] = _peak_mib()
    result = p.run()
    PHASES["submitted"] = _peak_mib()
    try:
        result.wait_until_finish()
        PHASES["finished"] = _peak_mib()
    finally:
        client = getattr(result, "client", None)
        if client is not None:
            client.close()
    PHASES["closed"] = _peak_mib()
    return fs.read_json(fs.join(work, "counts.json"))


def run_size(n: int, tmp: Path, runner_args: list[str]) -> dict:
    corpus = tmp / f"corpus-{n}.parquet"
    planted = build_corpus(n, corpus)
    work = tmp / f"work-{n}"
    work.mkdir()
    out = subprocess.run(
        [sys.executable, __file__, "--driver", str(corpus), str(work), "--", *runner_args],
        check=True,
        capture_output=True,
        text=True,
    )
    res = json.loads(out.stdout.strip().splitlines()[-1])
    expected_min = planted["near_clusters"] * CLUSTER
    if res["cluster_rows"] < expected_min:
        raise RuntimeError(
            f"{n}: only {res['cluster_rows']} clustered rows, planted {expected_min}"
        )
    return {**planted, **res}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000])
    ap.add_argument("--runner", choices=["dask", "direct", "inprocess"], default="dask")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--driver", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.driver:
        driver(args.driver[0], args.driver[1], args.rest)
        return
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-dedup-") as tmp:
        if args.runner == "dask":
            from pipelines.beam.dask_cluster import local_dask_cluster

            with local_dask_cluster(n_workers=args.workers) as address:
                beam_args = [
                    "--runner=DaskRunner",
                    f"--dask_client_address={address}",
                    f"--dask_npartitions={args.partitions}",
                ]
                for n in args.sizes:
                    results.append(run_size(n, Path(tmp), beam_args))
                    print(json.dumps(results[-1]), flush=True)
        else:
            runner = "DirectRunner" if args.runner == "direct" else "InProcess"
            for n in args.sizes:
                results.append(run_size(n, Path(tmp), [f"--runner={runner}"]))
                print(json.dumps(results[-1]), flush=True)
    print("\n| docs | 5k-clusters | clustered rows | clusters | seconds | driver peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['docs']} | {r['near_clusters']} | {r['cluster_rows']} | {r['clusters']} | "
            f"{r['seconds']:.1f} | {r['driver_peak_rss_mib']:.0f} |"
        )
    if len(results) >= 2:
        a, b = results[0], results[-1]
        t, m = b["seconds"] / a["seconds"], b["driver_peak_rss_mib"] / a["driver_peak_rss_mib"]
        print(
            f"\n{a['docs']} -> {b['docs']} docs: time x{t:.2f} (goal <= 11), "
            f"driver peak RSS x{m:.2f} (goal <= 1.5)"
        )
        print(json.dumps({"runner": args.runner, "time_ratio": t, "rss_ratio": m, "runs": results}))


if __name__ == "__main__":
    main()
