"""Ablation bench: which data makes the better proxy model, from the same real pages?

Three arms from trafilatura's evaluation pages (`tests/eval/*.html` of adbar/trafilatura, read
from the git mirror at run time, never committed), written to one WARC:

- raw: every page's HTML to text (script/style dropped, lxml text_content), no main-content
  extraction, no filter: what a naive pipeline trains on;
- fineweb: datatrove's FineWeb recipe (URL filter, Trafilatura, English LID, Gopher repetition
  and quality, C4, FineWeb quality, MinHash dedup) in the throwaway bench/.venvs/datatrove;
- refinery: our defaults end to end: `import warc` (offline), `extract_page` (no browser),
  `filters.run` (defaults, in process).

Each arm becomes a mixture with its own byte-level BPE tokenizer trained on its data (4096
entries), and `refinery ablate` trains the proxy config (training/configs/proxy.yaml) on each
with the same token budget and seeds. Evaluation texts: lingua-py's language-testdata sentences
(disjoint from the pages; checked by the ablation's 13-gram overlap refusal) in en, de, fr, es,
zh, ja: bits per byte per language, continuation and cloze tasks, 95% t intervals and paired
differences.

Usage: .venv/bin/python bench/ablate.py [--pages N] [--tokens T] [--seeds 0 1 2] [--out DIR]
       [--no-fineweb] [--reuse]

RESULTS (2026-11-28, `bench/ablate.py --tokens 100000`, proxy config, 3 seeds, 884 pages; CPU,
loaded 2-core machine): documents raw 854 (8.9M chars), fineweb 110 (0.75M chars, English only),
refinery 665 (3.6M chars: de 485, en 121, es 34, fr 21, ja 2, zh 2). Bits per byte on lingua's
sentences (mean ± 95% t half-width; paired differences by seed):

    metric      raw            fineweb         refinery       refinery-raw     refinery-fineweb
    bpb (all)   7.383 ± 0.306  9.093 ± 0.412   5.251 ± 0.768  -2.132 ± 0.497   -3.842 ± 0.370
    bpb de      3.226 ± 0.015  3.650 ± 0.113   3.295 ± 0.129  +0.069 ± 0.129   -0.356 ± 0.229
    bpb en      3.992 ± 0.024  3.154 ± 0.044   3.562 ± 0.096  -0.430 ± 0.081   +0.407 ± 0.110
    bpb es      4.563 ± 0.006  4.614 ± 0.026   3.943 ± 0.188  -0.619 ± 0.184   -0.671 ± 0.207
    bpb fr      4.448 ± 0.019  4.810 ± 0.021   4.292 ± 0.098  -0.155 ± 0.083   -0.518 ± 0.118
    bpb ja      12.44 ± 0.93   17.87 ± 1.27    7.91 ± 2.12    -4.53 ± 1.33     -9.96 ± 0.85
    bpb zh      13.67 ± 0.72   17.52 ± 0.98    7.64 ± 2.29    -6.04 ± 1.69     -9.88 ± 1.31
    cloze acc_norm         0.254 ± 0.017  0.272 ± 0.025  0.266 ± 0.035  (all at chance 0.25)
    continuation acc_norm  0.258 ± 0.007  0.249 ± 0.032  0.249 ± 0.014  (all at chance 0.25)

Refinery beats both overall and in es, fr, ja, zh outside the intervals; FineWeb's English-only
data wins English, raw ties German (its pages are mostly German). At 100k tokens per run no arm
leaves chance on the zero-shot tasks: they need a larger proxy and budget (bench/gpu.py runs one
arm at d512 x 8 layers, 2M tokens per seed).
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import yaml  # noqa: E402

from bench._peers import DATATROVE, peer_python  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the shared datatrove venv plus what its WarcReader and Trafilatura extractor need
FINEWEB = (
    DATATROVE[0] + ["warcio", "faust-cchardet", "python-magic", "lxml_html_clean", "orjson"],
    DATATROVE[1] + ", warcio, cchardet, magic, lxml_html_clean, orjson",
)
MIRROR = Path("/work/.mirror")
EVAL_LANGS = ("en", "de", "fr", "es", "zh", "ja")


def git_dir(name: str) -> Path:
    """The bare git directory of a mirrored repository (owner+name[*]/repo or the dir itself)."""
    for cand in sorted(glob.glob(str(MIRROR / f"{name}*"))):
        for d in (Path(cand) / "repo", Path(cand)):
            if (d / "HEAD").exists():
                return d
    raise SystemExit(f"{MIRROR}/{name}*: no git mirror; fetch github:{name.replace('+', '/')}")


def git_show(gd: Path, paths: list[str]) -> list[bytes]:
    """Blobs at HEAD, in one `git cat-file --batch` process."""
    proc = subprocess.run(
        ["git", f"--git-dir={gd}", "cat-file", "--batch"],
        input="".join(f"HEAD:{p}\n" for p in paths).encode(),
        capture_output=True,
        check=True,
    )
    out, data, pos = [], proc.stdout, 0
    for _ in paths:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split()
        if header[-1] == b"missing":
            out.append(b"")
            pos = nl + 1
            continue
        size = int(header[2])
        out.append(data[nl + 1 : nl + 1 + size])
        pos = nl + 1 + size + 1
    return out


def trafilatura_pages(limit: int) -> list[tuple[str, bytes]]:
    """(url, html) of trafilatura's evaluation pages (evaldata.json names each page's URL)."""
    gd = git_dir("adbar+trafilatura")
    evaldata = json.loads(git_show(gd, ["tests/evaldata.json"])[0])
    items = sorted((v["file"], url) for url, v in evaldata.items() if v.get("file"))[:limit]
    bodies = git_show(gd, [f"tests/eval/{f}" for f, _ in items])
    return [(url, body) for (_, url), body in zip(items, bodies, strict=True) if body]


def eval_sentences(per_lang: int) -> list[dict]:
    """lingua-py's language-testdata sentences: text, lang."""
    gd = git_dir("pemistahl+lingua-py")
    rows = []
    for lang, blob in zip(
        EVAL_LANGS,
        git_show(gd, [f"language-testdata/sentences/{lang}.txt" for lang in EVAL_LANGS]),
        strict=True,
    ):
        lines = [ln.strip() for ln in blob.decode("utf-8").splitlines() if ln.strip()]
        rows += [{"text": t, "lang": lang} for t in lines[:per_lang]]
    return rows


def write_warc(pages: list[tuple[str, bytes]], out: Path) -> Path:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out.mkdir(parents=True, exist_ok=True)
    path = out / "pages.warc.gz"
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for url, body in pages:
            http = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            w.write_record(
                w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http)
            )
    return path


def html_to_text(body: bytes) -> str:
    """The whole page's text: no main-content extraction (scripts and styles dropped)."""
    import lxml.html

    try:
        tree = lxml.html.fromstring(body)
    except Exception:  # an unparsable page is text nobody extracted
        return ""
    for bad in tree.xpath("//script|//style|//noscript"):
        bad.drop_tree()
    lines = (" ".join(ln.split()) for ln in tree.text_content().splitlines())
    return "\n".join(ln for ln in lines if ln)


def write_docs(rows: list[dict], path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "id": [r["id"] for r in rows],
                "url": [r["url"] for r in rows],
                "text": [r["text"] for r in rows],
                "training_allowed": [r["training_allowed"] is True for r in rows],
            }
        ),
        path,
    )
    return len(rows)


def refinery_and_raw(warc: Path, work: Path) -> dict[str, float]:
    """The crawl both arms read (`import warc`), the raw arm's documents, and Refinery's:
    extract_page then the filter with its defaults."""
    from crawlers.extract.crawl_io import iter_crawl_records
    from crawlers.extract.page import ExtractConfig, extract_page
    from crawlers.imports.run import import_warc
    from pipelines.stages.filter import IN_PROCESS, run_filter

    t0 = time.perf_counter()
    import_warc([str(warc)], work / "crawl", config={"delay": 0.0}, offline=True)
    raw, extracted = [], []
    config = ExtractConfig()
    for rec in iter_crawl_records(work / "crawl"):
        # Offline, `import warc` asks no robots.txt and leaves consent unknown (not true): the
        # bench's pages are a published test collection, allowed in every arm alike.
        allowed = True
        raw.append(
            {
                "id": rec["url"],
                "url": rec["url"],
                "text": html_to_text(rec["body"]),
                "training_allowed": allowed,
            }
        )
        doc = extract_page(rec, config).document
        if doc is not None:
            extracted.append({**doc, "training_allowed": True})
    write_docs([r for r in raw if r["text"]], work / "raw" / "documents.parquet")
    t1 = time.perf_counter()
    (work / "extract").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(extracted), work / "extract" / "documents.parquet")
    # the default quality models: built once in the lake ($REFINERY_HOME or ./lake), then reused
    run_filter(work / "extract", work / "filter", beam_args=[f"--runner={IN_PROCESS}"])
    return {
        "import_and_raw_s": round(t1 - t0, 1),
        "extract_and_filter_s": round(time.perf_counter() - t1, 1),
    }


def fineweb(warc: Path, work: Path) -> float:
    """datatrove's FineWeb recipe in its venv; its output as documents.parquet."""
    from common.langid import lid176_path

    py = peer_python("datatrove", *FINEWEB)
    script = ROOT / "bench" / "_datatrove_fineweb.py"
    res = subprocess.run(
        [str(py), str(script), str(warc.parent), str(work / "datatrove"), str(lid176_path())],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise RuntimeError(f"datatrove failed:\n{res.stderr[-3000:]}")
    line = json.loads(res.stdout.strip().splitlines()[-1])
    rows = []
    for path in sorted((work / "datatrove" / "output").glob("*.jsonl")):
        for raw in path.read_text().splitlines():
            doc = json.loads(raw)
            url = (doc.get("metadata") or {}).get("url") or doc["id"]
            rows.append(
                {"id": doc["id"], "url": url, "text": doc["text"], "training_allowed": True}
            )
    write_docs(rows, work / "fineweb" / "documents.parquet")
    return float(line["seconds"])


def mixture_spec(name: str, source: Path, tokens: int) -> dict:
    return {
        "name": f"bench-{name}",
        "seq_len": 128,
        "total_tokens": tokens,
        "seed": 1234,
        "tokenizer": {"train": {"vocab_size": 4096, "sample_tokens": 2_000_000}},
        "shard_sequences": 512,
        "allow_shortfall": True,
        "buckets": {"web": {"weight": 1.0, "sources": [{"path": str(source)}]}},
        "eval": {"sequences_per_group": 0},
    }


def refinery_mixture_spec(source: Path, tokens: int, quality_cut: float | None = None) -> dict:
    """Refinery's default pretraining mixture (training/mixtures/pretrain.yaml) over the arm's
    documents: the buckets that read the filter's documents keep their weights, language split,
    temperature, epoch cap, quality predicates and repetition; code and math (licensed sources
    that no arm has) are dropped and the remaining weights renormalised. `quality_cut` replaces
    the sources' `quality_score >= X` cut (0: none)."""
    default = yaml.safe_load((ROOT / "training" / "mixtures" / "pretrain.yaml").read_text())
    buckets = {
        name: b
        for name, b in default["buckets"].items()
        if all(src["path"] == "lake/filter/documents.parquet" for src in b["sources"])
    }
    total = sum(b["weight"] for b in buckets.values())
    for b in buckets.values():
        b["weight"] = b["weight"] / total
        for src in b["sources"]:
            src["path"] = str(source)
            if quality_cut is not None:
                where = re.sub(r" AND quality_score >= [0-9.]+", "", src["where"])
                cut = f" AND quality_score >= {quality_cut:g}" if quality_cut > 0 else ""
                src["where"] = where + cut
    return {**mixture_spec("refinery", source, tokens), "buckets": buckets}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=2000, help="trafilatura eval pages (all: ~880)")
    ap.add_argument("--tokens", type=int, default=200_000, help="training tokens per run")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--eval-per-lang", type=int, default=150)
    ap.add_argument("--config", default="proxy")
    ap.add_argument("--out", type=Path, default=Path("/tmp/refinery-bench-ablate"))
    ap.add_argument("--no-fineweb", action="store_true", help="skip the datatrove arm")
    ap.add_argument("--reuse", action="store_true", help="keep the arms' documents in --out")
    ap.add_argument(
        "--quality-cuts",
        type=float,
        nargs="*",
        default=[],
        help="add refinery-q<cut>: the default mixture with its quality_score cut at <cut> (0: none)",
    )
    ap.add_argument(
        "--flat-arm",
        action="store_true",
        help="add refinery-flat: Refinery's documents in one bucket at their natural shares",
    )
    args = ap.parse_args()

    from training.ablate.report import rich_table
    from training.ablate.run import run_ablation

    work = args.out / "data"
    pages = trafilatura_pages(args.pages)
    warc = write_warc(pages, work / "warc")
    done = all((work / d / "documents.parquet").exists() for d in ("raw", "filter", "extract"))
    times = {} if args.reuse and done else refinery_and_raw(warc, work)
    sources = {"raw": work / "raw", "refinery": work / "filter"}
    if not args.no_fineweb:
        if not (args.reuse and (work / "fineweb" / "documents.parquet").exists()):
            times["fineweb_s"] = round(fineweb(warc, work), 1)
        sources = {"raw": work / "raw", "fineweb": work / "fineweb", "refinery": work / "filter"}
    evals = eval_sentences(args.eval_per_lang)
    pq.write_table(pa.Table.from_pylist(evals), work / "eval.parquet")
    if args.flat_arm:
        sources["refinery-flat"] = work / "filter"
    for cut in args.quality_cuts:
        sources[f"refinery-q{cut:g}"] = work / "filter"
    arms = {}
    counts = {}
    for name, d in sources.items():
        docs = d / "documents.parquet"
        if name == "refinery" or name.startswith("refinery-q"):
            cut = float(name[len("refinery-q") :]) if name != "refinery" else None
            spec = refinery_mixture_spec(docs, args.tokens, cut)
        else:
            spec = mixture_spec(name, docs, args.tokens)
        (work / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        arms[name] = {"mixture_spec": f"{name}.yaml"}
        t = pq.read_table(d / "documents.parquet", columns=["text"]).column("text").to_pylist()
        counts[name] = {"documents": len(t), "chars": sum(map(len, t))}
    spec = {
        "name": "bench",
        "config": args.config,
        "tokens": args.tokens,
        "seeds": args.seeds,
        "arms": arms,
        "eval_sets": [{"name": "lingua", "path": "eval.parquet"}],
        "tasks": {
            "context_words": 8,
            "continuation_words": 4,
            "items_per_text": 1,
            "kinds": ["continuation", "cloze", "word_order"],
        },
    }
    (work / "ablation.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    t0 = time.perf_counter()
    results = run_ablation(work / "ablation.yaml", args.out / "ablation", log=print)
    times["ablation_s"] = round(time.perf_counter() - t0, 1)
    from rich.console import Console

    Console(width=200).print(rich_table(results))
    print(json.dumps({"pages": len(pages), "arms": counts, "seconds": times}))
    print(f"report: {results['report']}")


if __name__ == "__main__":
    main()
