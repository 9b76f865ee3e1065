"""Benchmark: tokenize-and-pack throughput of `refinery mix build` vs datatrove's DocumentTokenizer.

Both run on the same deterministic synthetic multilingual corpus (>= 100 MB of text; 10 MB with
--quick) with the same tokenizer.json, each in its own subprocess so peak memory (max RSS) is
measured per side. Refinery's side reads Parquet, tokenizes, samples, shuffles, packs into
(seq_len) uint32 shards and writes them; datatrove's side reads Parquet, tokenizes, shuffles and
writes its token files (it packs later, at load time). datatrove lives in bench/.venvs/datatrove.

Usage: .venv/bin/python bench/mix.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _peers import DATATROVE, peer_python

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "mix"
LANGS = {
    "en": "th st an er in re nd on en at ou ed ha",
    "de": "ch sch ei ie en er un de ge ng st au",
    "fr": "ou ai eu on an en es le re qu oi ui",
    "es": "os as es el la ci on ad ue ar ra do",
}


def make_corpus(path: Path, megabytes: int, seed: int = 0) -> int:
    """Write a deterministic synthetic multilingual corpus (Zipf words from per-language syllables)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    vocab = {}
    for lang, syl in LANGS.items():
        s = np.array(syl.split() + list("aeiou"))
        vocab[lang] = np.array(["".join(rng.choice(s, rng.integers(1, 5))) for _ in range(20_000)])
    texts, langs, size, i = [], [], 0, 0
    while size < megabytes * 1_000_000:
        lang = list(LANGS)[i % len(LANGS)]
        idx = np.minimum(rng.zipf(1.2, rng.integers(100, 600)) - 1, 19_999)
        words = vocab[lang][idx]
        words[rng.random(len(words)) < 0.05] = rng.integers(0, 10_000, 1).astype(str)[0]
        text = " ".join(words).replace(" a ", ". A ") + "."
        texts.append(text)
        langs.append(lang)
        size += len(text)
        i += 1
    table = pa.table(
        {
            "id": [f"d{j}" for j in range(len(texts))],
            "text": texts,
            "lang": langs,
            "training_allowed": [True] * len(texts),
            "quality_score": rng.random(len(texts)),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=2048)  # real corpora: many row groups
    return size


REFINERY_CHILD = """
import json, sys, time
from pathlib import Path
from training.mixture.builder import CorpusWriter, assemble_corpus
from training.mixture.read import tokenize_unit_batches
from training.mixture.sources import plan_units
from training.mixture.spec import parse_spec
from training.tokenizer import load_tokenizer
corpus, tok_path, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
t0 = time.perf_counter()
spec = parse_spec({"name": "bench", "seq_len": 2048, "total_tokens": 1, "seed": 0, "tokenizer": tok_path,
    "shard_sequences": 4096, "eval": {"sequences_per_group": 0},
    "buckets": {"all": {"weight": 1.0, "sources": [{"path": corpus}]}}})
out.mkdir(parents=True, exist_ok=True)
Path(out / "tokenizer.json").write_bytes(Path(tok_path).read_bytes())
tok = load_tokenizer(tok_path)
writer = CorpusWriter(out / "_corpus")  # the disk-backed token store build_mixture uses
for u in plan_units(spec, Path(".")):
    for b in tokenize_unit_batches(u, tok):
        writer.add(u, b)
c = writer.finish()
total = int(c.store.lengths.sum())
spec = spec.model_copy(update={"total_tokens": total})  # one epoch of everything; tokens below include EOS like datatrove
m = assemble_corpus(spec, Path("bench"), c, out)
print(json.dumps({"tokens": m["tokens"] + m["boundary_tokens"], "seconds": time.perf_counter() - t0, "sequences": m["num_sequences"]}))
"""

DATATROVE_CHILD = """
import json, sys, time
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import ParquetReader
from datatrove.pipeline.tokens import DocumentTokenizer
import os
corpus, tok_path, out = sys.argv[1], sys.argv[2], sys.argv[3]
t0 = time.perf_counter()
reader = ParquetReader(os.path.dirname(corpus), glob_pattern=os.path.basename(corpus))
ex = LocalPipelineExecutor(pipeline=[reader, DocumentTokenizer(out + "/tokens", tokenizer_name_or_path=tok_path,
    eos_token="<|endoftext|>", local_working_dir=out + "/work", seed=0)],
    tasks=1, workers=1, logging_dir=out + "/logs", skip_completed=False)
stats = json.loads(ex.run().to_json())
step = [s for s in stats if "tokens" in s.get("stats", {})][0]["stats"]
docs = step.get("documents", {}).get("total", 0) if isinstance(step.get("documents"), dict) else 0
tokens = step["tokens"]["total"]
print(json.dumps({"tokens": tokens, "seconds": time.perf_counter() - t0}))
"""


def run_child(python: str, code: str, args: list[str], env: dict | None = None) -> dict:
    """Run a measurement subprocess; return its JSON line plus its own peak RSS (os.wait4)."""
    proc = subprocess.Popen(
        [python, "-c", code, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{python} child failed ({proc.returncode}):\n{err.decode()[-3000:]}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    result["peak_rss_mb"] = usage.ru_maxrss / 1024
    result["cpu_seconds"] = usage.ru_utime + usage.ru_stime  # user+sys of the child and its threads
    return result


def corpus_and_tokenizer(mb: int) -> tuple[Path, Path]:
    """The deterministic corpus of `mb` MB and the bench tokenizer (made on first use)."""
    corpus = RESULTS / f"corpus_{mb}mb.parquet"
    if not corpus.exists():
        t0 = time.perf_counter()
        size = make_corpus(corpus, mb)
        print(
            f"corpus: {size / 1e6:.1f} MB of text generated in {time.perf_counter() - t0:.1f} s -> {corpus}"
        )
    tok_path = RESULTS / "tokenizer.json"
    if not tok_path.exists():
        sys.path.insert(0, str(ROOT))
        from training.tokenizer import sample_texts, train_tokenizer

        train_tokenizer(sample_texts([corpus], 1_000_000, seed=0), 8192, tok_path)
    return corpus, tok_path


def scaling() -> None:
    """Time and driver peak RSS of the whole build at 10 MB and 100 MB: cost growth for 10x input."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = {}
    for mb in (10, 100):
        corpus, tok_path = corpus_and_tokenizer(mb)
        out = RESULTS / f"scaling_{mb}"
        shutil.rmtree(out, ignore_errors=True)
        res[mb] = run_child(
            sys.executable, REFINERY_CHILD, [str(corpus), str(tok_path), str(out)], env
        )
        shutil.rmtree(out, ignore_errors=True)
        r = res[mb]
        print(
            f"{mb:>4} MB: {r['tokens']:>12,} tokens {r['seconds']:>7.1f} s {r['tokens'] / r['seconds']:>10,.0f} tokens/s"
            f"  peak RSS {r['peak_rss_mb']:>6.0f} MB"
        )
    print(
        f"10x input: time x{res[100]['seconds'] / res[10]['seconds']:.2f}, "
        f"peak RSS x{res[100]['peak_rss_mb'] / res[10]['peak_rss_mb']:.2f} (goal <= 1.5x)"
    )
    (RESULTS / "scaling.json").write_text(json.dumps(res, indent=2))


def ensure_datatrove() -> str:
    """The shared datatrove venv (bench/_peers.py)."""
    return str(peer_python("datatrove", *DATATROVE))


def main() -> None:
    """Generate the corpus and tokenizer if needed, run both sides, print the table and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10 MB corpus instead of 100 MB")
    ap.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="runs per side, the median run reported (default 2 quick, 1 full)",
    )
    ap.add_argument(
        "--scaling",
        action="store_true",
        help="Refinery alone on 10 MB and 100 MB corpora: time and peak RSS growth for 10x the input",
    )
    args = ap.parse_args()
    if args.scaling:
        scaling()
        return
    args.repeat = args.repeat or (2 if args.quick else 1)
    corpus, tok_path = corpus_and_tokenizer(10 if args.quick else 100)
    dt_python = ensure_datatrove()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runs: dict[str, list[dict]] = {"refinery": [], "datatrove": []}
    for rnd in range(args.repeat):  # alternate the order so machine noise hits both sides alike
        order = ["refinery", "datatrove"] if rnd % 2 == 0 else ["datatrove", "refinery"]
        for side in order:
            out = RESULTS / f"{side}_out"
            shutil.rmtree(out, ignore_errors=True)
            if side == "refinery":
                runs[side].append(
                    run_child(
                        sys.executable, REFINERY_CHILD, [str(corpus), str(tok_path), str(out)], env
                    )
                )
            else:
                runs[side].append(
                    run_child(dt_python, DATATROVE_CHILD, [str(corpus), str(tok_path), str(out)])
                )
    # the median run by tokens/s (the lower one of the middle two for an even count): machine noise
    # on a shared box makes the best run flatter whichever side got a quiet moment
    median = {
        k: sorted(v, key=lambda r: r["tokens"] / r["seconds"])[(len(v) - 1) // 2]
        for k, v in runs.items()
    }
    ours, theirs = median["refinery"], median["datatrove"]
    text_mb = corpus.stat().st_size / 1e6
    rows = [
        ("refinery mix (tokenize+sample+shuffle+pack+shard)", ours),
        ("datatrove DocumentTokenizer", theirs),
    ]
    print(
        f"\ncorpus {corpus.name} ({text_mb:.1f} MB parquet), tokenizer vocab 8192, {os.cpu_count()} cores (shared)"
    )
    print(
        f"{'tool':<52} {'tokens':>12} {'seconds':>9} {'tokens/s':>12} {'CPU s':>8} {'peak RSS MB':>12}"
    )
    for name, r in rows:
        print(
            f"{name:<52} {r['tokens']:>12,} {r['seconds']:>9.1f} {r['tokens'] / r['seconds']:>12,.0f}"
            f" {r['cpu_seconds']:>8.1f} {r['peak_rss_mb']:>12.0f}"
        )
    ratio = (
        (ours["tokens"] / ours["seconds"]) / (theirs["tokens"] / theirs["seconds"])
        if theirs["tokens"]
        else float("nan")
    )
    for side, rs in runs.items():
        print(
            f"{side} runs tokens/s: " + ", ".join(f"{r['tokens'] / r['seconds']:,.0f}" for r in rs)
        )
    print(f"\nratio refinery / datatrove tokens/s (median runs): {ratio:.2f}x")
    (RESULTS / "last_run.json").write_text(json.dumps({"runs": runs, "ratio": ratio}, indent=2))


if __name__ == "__main__":
    main()
