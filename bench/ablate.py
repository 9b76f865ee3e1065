"""Ablation bench: which data makes the better proxy model, from the same real pages?

Three arms from trafilatura's evaluation pages (`tests/eval/*.html` of adbar/trafilatura, read
from the git mirror at run time, never committed), written to one WARC:

- raw: every page's HTML to text (script/style dropped, lxml text_content), no main-content
  extraction, no filter: what a naive pipeline trains on;
- fineweb: datatrove's FineWeb recipe (URL filter, Trafilatura, English LID, Gopher repetition
  and quality, C4, FineWeb quality, MinHash dedup) in the throwaway bench/.venvs/datatrove;
- refinery: our defaults end to end: `import warc` (offline), `extract_page` (no browser),
  `filters.run` (defaults, in process), the default pretraining mixture's text buckets
  (training/mixtures/pretrain.yaml: English web, multilingual split by language).

Each arm becomes a mixture with its own byte-level BPE tokenizer trained on its data (4096
entries), and `refinery ablate` trains the proxy config (training/configs/proxy.yaml) on each
with the same token budget and seeds. Evaluation texts: lingua-py's language-testdata sentences
(disjoint from the pages; checked by the ablation's 13-gram overlap refusal) in en, de, fr, es,
zh, ja: bits per byte per language, continuation, cloze and word_order tasks, 95% t intervals
and paired differences.

Usage: .venv/bin/python bench/ablate.py [--pages N] [--tokens T] [--seeds 0 1 2] [--out DIR]
       [--eval-per-lang N] [--no-fineweb] [--reuse] [--flat-arm] [--quality-cuts CUT ...]
       [--multilingual-shares SHARE ...] [--files-tokenizer]

RESULTS (2026-11-28, second run, `bench/ablate.py --tokens 600000 --eval-per-lang 300 --reuse
--multilingual-shares 0.176 --files-tokenizer`, proxy config, seeds 0 1 2, 884 pages; CPU, shared
2-core machine, ablation 1057 s with raw and fineweb included): documents raw 854 (8.9M chars),
fineweb 110 (0.75M chars), refinery 664 (3.56M chars: en 903k, de 2.37M, es 159k, fr 111k, ja 8k,
zh 3k). The refinery arm is the default mixture as changed in this run: web and multilingual in
equal parts (was 0.70 / 0.15) and its tokenizer sampled at the mixture's shares (was: the files
as they come). Mean ± 95% t half-width over seeds; differences paired by seed, * where the
interval excludes 0 (bpb: lower is better; acc: chance 0.25):

    metric          raw            fineweb        refinery       refinery-raw     refinery-fineweb
    bpb (all)       4.783 ± 0.371  9.226 ± 0.337  3.788 ± 0.117  -0.994 ± 0.266*  -5.438 ± 0.342*
    bpb/de          2.916 ± 0.121  3.153 ± 0.099  3.037 ± 0.061  +0.121 ± 0.160   -0.116 ± 0.039*
    bpb/en          3.427 ± 0.218  2.810 ± 0.071  2.885 ± 0.064  -0.543 ± 0.240*  +0.075 ± 0.021*
    bpb/es          3.702 ± 0.190  4.134 ± 0.057  3.384 ± 0.061  -0.318 ± 0.203*  -0.750 ± 0.094*
    bpb/fr          3.866 ± 0.203  4.291 ± 0.073  3.607 ± 0.133  -0.259 ± 0.257*  -0.684 ± 0.106*
    bpb/ja          8.753 ± 2.114  19.42 ± 1.51   4.286 ± 0.116  -4.468 ± 2.023*  -15.13 ± 1.45*
    bpb/zh          5.421 ± 0.343  18.81 ± 0.43   5.218 ± 0.289  -0.203 ± 0.365   -13.59 ± 0.37*
    continuation    0.242 ± 0.006  0.244 ± 0.013  0.252 ± 0.003  +0.010 ± 0.008*  +0.008 ± 0.011
    cloze           0.245 ± 0.009  0.282 ± 0.076  0.279 ± 0.003  +0.034 ± 0.011*  -0.003 ± 0.073
    word_order      0.360 ± 0.038  0.346 ± 0.018  0.408 ± 0.056  +0.048 ± 0.044*  +0.062 ± 0.059*

The knobs, refinery minus each (paired; ml0.176 = the weights before, tokfiles = the tokenizer
sampled from the files as before):

    metric       refinery-ml0.176   refinery-tokfiles
    bpb (all)    -0.518 ± 0.177*    -0.151 ± 0.219
    bpb/de       -0.396 ± 0.109*    +0.120 ± 0.088*
    bpb/en       +0.138 ± 0.019*    -0.142 ± 0.117*
    bpb/es       -0.307 ± 0.126*    -0.107 ± 0.355
    bpb/fr       -0.321 ± 0.071*    -0.077 ± 0.294
    bpb/ja       -1.110 ± 0.386*    -0.226 ± 0.241
    bpb/zh       -0.949 ± 0.734*    -0.419 ± 0.502

Refinery beats both overall, in es, fr and ja and on word_order outside the intervals; FineWeb
also in de and zh (ties raw), raw also in en (FineWeb's English, two thirds of its tokens, wins
by 0.075). At the weights before English beats FineWeb (-0.063 ± 0.011) and German loses to raw
(+0.516 ± 0.261): no split of 600k tokens wins both. The Chinese filter cut drops 2 of the 4
real zh pages (restored: -0.68 zh, one seed; docs/ablate.md). The first run's table (before this
change, with --flat-arm and --quality-cuts): git show b9be933:bench/ablate.py.
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


def trafilatura_pages(
    limit: int | None = None, *, cached: bool = False, gd: Path | None = None
) -> list[tuple[str, bytes]]:
    """(url, html) of trafilatura's evaluation pages (evaldata.json names each page's URL): those
    in tests/eval, and with `cached` also those in tests/cache. `gd`: the mirror's git directory
    (default: the `fetch` tool's)."""
    gd = gd or git_dir("adbar+trafilatura")
    evaldata = json.loads(git_show(gd, ["tests/evaldata.json"])[0])
    items = sorted((v["file"], url) for url, v in evaldata.items() if v.get("file"))[:limit]
    bodies = git_show(gd, [f"tests/eval/{f}" for f, _ in items])
    if cached:
        missing = [i for i, body in enumerate(bodies) if not body]
        found = git_show(gd, [f"tests/cache/{items[i][0]}" for i in missing])
        for i, body in zip(missing, found, strict=True):
            bodies[i] = body
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
    that no arm has) are dropped and the remaining weights renormalised; the tokenizer's text is
    sampled as the default samples it (`tokenizer.train.sample`). `quality_cut` replaces
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
    spec = mixture_spec("refinery", source, tokens)
    # the default's way of sampling the tokenizer's text; the size stays the bench's (4096)
    sample = (default.get("tokenizer") or {}).get("train", {}).get("sample")
    if sample:
        spec["tokenizer"]["train"]["sample"] = sample
    return {**spec, "buckets": buckets}


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
        help="add refinery-q<cut>: the default mixture cut at quality_score >= <cut> (0: none)",
    )
    ap.add_argument(
        "--flat-arm",
        action="store_true",
        help="add refinery-flat: Refinery's documents in one bucket at their natural shares",
    )
    ap.add_argument(
        "--multilingual-shares",
        type=float,
        nargs="*",
        default=[],
        help="add refinery-ml<share>: the default mixture with the multilingual bucket at <share> "
        "of the web text (0.176: the weights before, 0.15 against 0.70)",
    )
    ap.add_argument(
        "--files-tokenizer",
        action="store_true",
        help="add refinery-tokfiles: the default mixture, its tokenizer sampled from the "
        "documents as they come (sample: files, the default before)",
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
    for share in args.multilingual_shares:
        sources[f"refinery-ml{share:g}"] = work / "filter"
    if args.files_tokenizer:
        sources["refinery-tokfiles"] = work / "filter"
    arms = {}
    counts = {}
    for name, d in sources.items():
        docs = d / "documents.parquet"
        if name == "refinery" or name.startswith("refinery-q"):
            cut = float(name[len("refinery-q") :]) if name != "refinery" else None
            spec = refinery_mixture_spec(docs, args.tokens, cut)
        elif name.startswith("refinery-ml"):
            share = float(name[len("refinery-ml") :])
            spec = refinery_mixture_spec(docs, args.tokens)
            spec["buckets"]["web"]["weight"] = 1 - share
            spec["buckets"]["multilingual"]["weight"] = share
        elif name == "refinery-tokfiles":
            spec = refinery_mixture_spec(docs, args.tokens)
            spec["tokenizer"]["train"]["sample"] = "files"
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
