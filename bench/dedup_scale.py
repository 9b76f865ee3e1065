"""Dedup scaling run: time and driver peak RSS of the Beam de-duplication at two corpus sizes.

A generated corpus (deterministic for a seed) of already-annotated documents: random texts over
a synthetic vocabulary, a quarter of them in clusters of 5,000 near-copies (one word edited per
copy), ~5 % exact copies and ~5 % same-URL pages. Each size runs the filter's `Dedup` transform
(star edges, label-propagation components) plus the workers' cluster-part writes and the
single-task counts step, in a fresh driver subprocess, so its peak RSS is the driver's own.

Runner: DaskRunner on a local `dask.distributed` cluster (scheduler and 2 worker processes,
separate from the driver: the driver builds and submits the graph and reads back only counts),
or `--runner direct` (DirectRunner, in the driver process: there the driver *is* the worker,
so its RSS grows with the data).

Goals (issue 12): time 20k -> 200k at most 11x; driver peak RSS within 1.5x.

Usage: .venv/bin/python bench/dedup_scale.py [--sizes 20000 200000] [--runner dask|direct]
       [--workers 2] [--partitions 4]
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


def driver(corpus: str, work: str, args: list[str]) -> None:
    """The measured driver: build the dedup pipeline, run it, read back the counts."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from filters.config import FilterConfig
    from pipelines.beam import fs
    from pipelines.beam.filter import (
        Dedup,
        ReadChunkFn,
        WriteClusterPartFn,
        _partition,
        plan_chunks,
    )

    class CountsFn(beam.DoFn):
        def process(self, item):
            _, descs = item
            descs = [d for d in descs if d[0] != "plan"]
            counts = {
                "cluster_rows": sum(d[2]["rows"] for d in descs if d[0] == "clusters"),
                "clusters": sum(d[2]["clusters"] for d in descs if d[0] == "clusters"),
                "leftover_edges": sum(d[1] for d in descs if d[0] == "leftover"),
            }
            fs.write_json(fs.join(work, "counts.json"), counts)
            yield counts

    t0 = time.perf_counter()
    chunks = plan_chunks(corpus)
    p = beam.Pipeline(options=PipelineOptions(fs.runner_args(args)))
    rows = p | "Chunks" >> beam.Create(chunks) | "Read" >> beam.ParDo(ReadChunkFn())
    clusters, leftover = rows | "Dedup" >> Dedup(FilterConfig())
    parts = (
        clusters
        | "KeyPartition" >> beam.Map(lambda c: (_partition(c["cluster_id"], 16), c))
        | "GroupPartition" >> beam.GroupByKey()
        | "WriteClusterParts" >> beam.ParDo(WriteClusterPartFn(work))
    )
    start = p | "Start" >> beam.Create([(None, ("plan", 0, {}))])
    _ = (
        (start, parts, leftover)
        | "Descriptors" >> beam.Flatten()
        | "OneTask" >> beam.GroupByKey()
        | "Counts" >> beam.ParDo(CountsFn())
    )
    fs.run(p)
    counts = fs.read_json(fs.join(work, "counts.json"))
    wall = time.perf_counter() - t0
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": wall, "driver_peak_rss_mib": rss_mib, **counts}))


def run_size(n: int, tmp: Path, runner_args: list[str]) -> dict:
    corpus = tmp / f"corpus-{n}.parquet"
    planted = build_corpus(n, corpus)
    work = tmp / f"work-{n}"
    work.mkdir()
    out = subprocess.run(
        [sys.executable, __file__, "--driver", str(corpus), str(work), "--", *runner_args],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
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
    ap.add_argument("--runner", choices=["dask", "direct"], default="dask")
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
                beam_args = ["--runner=DaskRunner", f"--dask_client_address={address}",
                             f"--dask_npartitions={args.partitions}"]  # fmt: skip
                for n in args.sizes:
                    results.append(run_size(n, Path(tmp), beam_args))
                    print(json.dumps(results[-1]), flush=True)
        else:
            for n in args.sizes:
                results.append(run_size(n, Path(tmp), ["--runner=DirectRunner"]))
                print(json.dumps(results[-1]), flush=True)
    print("\n| docs | 5k-clusters | clustered rows | clusters | seconds | driver peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['docs']} | {r['near_clusters']} | {r['cluster_rows']} | {r['clusters']} | "
              f"{r['seconds']:.1f} | {r['driver_peak_rss_mib']:.0f} |")  # fmt: skip
    if len(results) >= 2:
        a, b = results[0], results[-1]
        t, m = b["seconds"] / a["seconds"], b["driver_peak_rss_mib"] / a["driver_peak_rss_mib"]
        print(f"\n{a['docs']} -> {b['docs']} docs: time x{t:.2f} (goal <= 11), "
              f"driver peak RSS x{m:.2f} (goal <= 1.5)")  # fmt: skip
        print(json.dumps({"runner": args.runner, "time_ratio": t, "rss_ratio": m, "runs": results}))


if __name__ == "__main__":
    main()
