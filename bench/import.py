"""Benchmark `import warc` + extraction against datatrove (WarcReader + Trafilatura) on the
same WARC files in the same run.

    .venv/bin/python bench/import.py [--files 2] [--scale 10] [--pages-per-file 100]
        [--favor balanced|precision|recall] [--real FILE_OR_GLOB...] [--no-datatrove]
    .venv/bin/python bench/import.py --read-scaling 5 20 80 --pages-per-file 50

The WARC files hold the sample web's content pages (real HTML with ground-truth main text),
served for the robots.txt fetches on loopback (each site its own 127.0.0.N, its own
robots.txt, with the sample web's training opt-outs). Each page appears once per copy k with
URL `?copy=k` and an HTML comment, so repeats are not deduplicated away. For N files and
SCALE*N files:

- Refinery: `crawlers.imports.run.import_warc` (scan in this process, consent on: robots.txt for
  every origin through the Downloader) then `extract_page` on every imported page (one process,
  one core; `--favor` is `refinery extract --favor`), documents/s end to end, and where the
  time went: the import (scan, dedup, consent, write), reading the records back, extraction;
- datatrove in bench/.venvs/datatrove-warc (created on first use: `datatrove[io]`, warcio,
  trafilatura, lxml_html_clean): WarcReader -> Trafilatura(favour_precision=True) ->
  JsonlWriter, tasks=1, workers=1;

then documents/s of both and the ratio, how time grows from N to SCALE*N files, extraction
agreement (token F1 between the two texts of a URL) and each one's token F1 against the sample
web's main text. `--real` adds real archives (offline: no robots.txt asked of real hosts), e.g.
warcio's test data and Common Crawl's whirlwind WARC, extracted at run time from their
repositories (`git --git-dir=<mirror> show HEAD:test/data/example.warc.gz > /tmp/x.warc.gz`):
Refinery's record accounting, each tool's documents (datatrove one run per file: a file its
reader refuses ends its run) and their agreement. Real archives are never committed; everything
is written under a temp dir.

Measured 2026-11-28 (2-core machine shared with other jobs, load average 12-19, so absolute
figures are noisy; both sides ran in the same run; `--files 2 --scale 10 --pages-per-file 100`,
datatrove 0.10.1, trafilatura 2.3.1). Seconds of Refinery: total = import + read + extract.

    favor      files pages  ref docs  s      docs/s  import read   extract  dt docs  s     docs/s  ratio
    balanced   2     200    194       12.2   15.9    0.61   0.34   11.28    200      10.6  18.9    0.84
    balanced   20    2000   1934      158.4  12.2    5.89   11.17  141.36   2000     78.1  25.6    0.48
    precision  2     200    194       11.5   16.8    0.87   1.39   9.27     200      14.2  14.1    1.20
    precision  20    2000   1934      75.2   25.7    6.17   7.88   61.19    2000     47.3  42.3    0.61

(The previous record, 0.59 and 0.37, measured an earlier extraction under another load.)
Again after fc5bfd6 (extraction: one parse per page), load ~12:

    balanced   2     200    194       9.6    20.3    0.32   0.35   8.90     200      5.0   40.1    0.51
    balanced   20    2000   1934      71.5   27.0    2.12   6.44   62.94    2000     42.4  47.2    0.57
    precision  2     200    194       7.1    27.5    0.24   0.45   6.36     200      7.2   27.8    0.99
    precision  20    2000   1934      52.6   36.7    1.94   6.33   44.37    2000     35.9  55.6    0.66

At 10N (precision): extraction 84%, reading the records back 12%, the import 4% (consent 0.2 s). Agreement with datatrove: F1 0.969 / 0.981
(balanced), 1.000 (precision: the same trafilatura mode on the same bytes); F1 against the
sample web's main text: Refinery 0.892 / 0.909 balanced, 0.923 / 0.928 precision; datatrove
0.924 / 0.929. Refinery makes 66 fewer documents of 2000: their paths (/private/, /members/,
/cart/) are disallowed for the crawl token by today's robots.txt; 216 of its 1934 are not
training-allowed (robots.txt training opt-outs, noai). Time N -> 10N: Refinery x13.0 / x6.5,
datatrove x7.4 / x3.3 (its run carries a fixed start of several seconds).

Where Refinery's time goes at 10N (precision): extraction 81% (`extract_page`: two trafilatura
runs a page, text and images, plus metadata, tables, markdown and interleaved blocks), reading
the records back 10% (`crawlers/extract/crawl_io.py::iter_shard_records` reads the whole
pages.parquet and its URL column for each (pages, WARC) shard, and an import has one shard per
source file: 0.34 s for 2 files, 11.2 s for 20), the import 8% (scan 4.7 s, consent for 18
origins 0.7 s, dedup 0.1 s, write 0.7 s; ~1 ms a page on a quiet core). The goal, datatrove's
documents/s per core with consent on, is met at N with the same trafilatura mode (1.20), not
at 10N (0.61) nor with the default balanced mode (0.84 / 0.48); what is left is extraction and
the per-shard read, not the import or the consent check.

Reading the records back, since fc9195a (`--read-scaling 5 20 80 --pages-per-file 50`, offline
import, every shard read; the reader before it beside today's, best of 3 interleaved, load ~10;
the records are asserted equal): the old reader read the whole pages.parquet per (pages, WARC)
shard, so its cost a record grew with the file count; today's indexes the pages file once and
reads each shard's own row groups, so it stays flat.

    files  records  ms/record before  now    before/now
    5      250      1.009             0.471  2.14
    20     1000     2.601             0.251  10.37
    80     4000     6.636             0.176  37.71

Real archives (`--real` over warcio's test/data and whirlwind.warc.gz; 17 files, 68 records,
after 15153da): Refinery 3 pages, 65 recorded skips (request 20, warcinfo 19, duplicate_url 6,
no_http_headers 3, not_html 3, not_http 3, revisit 3, digest_mismatch 2, duplicate_payload 2,
metadata 2, http_status 1, revisit_missing_original 1); datatrove 4 documents, and it stops on
example-bad.warc.gz.bad (a whole-file gzip: warcio asks for `warcio recompress`), which
Refinery reads by decompressing the stream. example-space-in-url.arc's record (12 bytes shorter
than its ARC length, its HTTP body whole) is now a page here too, then a duplicate_payload of
example.com's page in example.arc, so the one document only datatrove makes is that repeat
(datatrove does not de-duplicate). example-wrong-chunks.warc.gz (a record's body in a second
gzip member) is read as one stream: its block digest is wrong (digest_mismatch), where before
it was short_record + malformed_record. Agreement on the 3 shared: F1 0.945 (balanced).
datatrove runs with `deduplicate=False`: with its default, trafilatura's LRU text cache dropped
739 of the 2000 page copies (37%) as repeats, which is no extraction.

Since b43dda6 each row also has both sides' CPU seconds and `ratio_cpu` (documents per CPU
second, Refinery / datatrove: the per-core figure, which the shared machine's load, changing
between the two sides' runs, moves far less than the wall-clock `ratio`; at load 7-11 Refinery's
process got 40-60% of a core). Extraction without its duplicated work (22897f0 -> fe15448, the
same outputs; bench/extract.py RESULTS), this bench at both commits, same command as above:

    favor      files  ratio_cpu before  after   ratio (wall) before  after
    balanced   2      0.59             0.67    0.63                 0.90
    balanced   20     0.53             0.53    0.57                 0.50
    precision  2      0.83             0.90    0.85                 0.86
    precision  20     0.77             0.74    0.86                 0.75

On these pages (the sample web's: small, few images and comment sections) the saving is small:
in precision mode trafilatura's main run is 2/3 of extract_page's time and page metadata
(title, author, date, sitename: no peer column) a sixth; the goal (1x) is not met. At 10N
Refinery spends 88-90% of its wall time in extraction, 6-7% reading the records back.

The justext stop list (72451e8), same command, side by side in each run (load 2-8): py-spy
(`--no-datatrove --files 20 --scale 1`) put a quarter of Refinery's CPU on one line, justext's
`classify_paragraphs` looking up trafilatura's all-language stop list (a tuple of ~154,000
words its lru_cache hashed and compared on every call, 11 ms a page, in balanced mode's justext
fallback); handed over as a frozenset (the same words), extraction's outputs are unchanged:

    favor      files  ratio_cpu before  after   ratio (wall) after  F1 vs truth  agreement
    balanced   2      0.59             1.08    1.14                0.892        0.969
    balanced   20     0.64             1.03    1.11                0.909        0.981
    precision  2      -                1.08    1.10                0.923        1.000
    precision  20     -                0.96    0.93                0.928        1.000

(precision runs no justext: its change since the table above is other extraction work and the
load.) The goal, datatrove's documents per CPU second with consent on, is met in balanced mode
at N and 10N, and in precision mode at N. At 10N (balanced) extraction is 85% of Refinery's CPU
(trafilatura's own runs, readability, page metadata), reading records back 7%, the import 7%.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._peers import peer_python  # noqa: E402
from crawlers.extract.evaluate import token_prf  # noqa: E402

DATATROVE_WARC = (  # datatrove's Trafilatura extractor needs lxml_html_clean with lxml >= 5.2
    ["datatrove[io]", "warcio", "trafilatura", "lxml_html_clean"],
    "import datatrove, warcio, trafilatura, lxml_html_clean",
)


def write_warcs(served, pages, out: Path, n_files: int, per_file: int) -> dict[str, str]:
    """n_files WARC files of per_file pages each; returns url -> ground-truth main text."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out.mkdir(parents=True, exist_ok=True)
    truth: dict[str, str] = {}
    k = 0
    for f in range(n_files):
        with open(out / f"bench-{f:04d}.warc.gz", "wb") as fh:
            w = WARCWriter(fh, gzip=True)
            for _ in range(per_file):
                page = pages[k % len(pages)]
                copy = k // len(pages)
                k += 1
                url = served.url(page.site, page.path) + (f"?copy={copy}" if copy else "")
                body = page.body + f"<!-- copy {copy} -->".encode()
                http = StatusAndHeaders(
                    "200 OK", [("Content-Type", page.content_type)], protocol="HTTP/1.1"
                )
                rec = w.create_warc_record(
                    url, "response", payload=io.BytesIO(body), http_headers=http
                )
                w.write_record(rec)
                truth[url] = page.labels.get("main_text") or ""
    return truth


def run_refinery(
    patterns: list[str], work: Path, favor: str = "balanced", offline: bool = False
) -> tuple[dict[str, str], float, dict]:
    """`import warc` (consent on unless offline) then `extract_page` on every page, in this
    process; the summary adds where the time went: import (scan, dedup, consent, write),
    reading the records back, extraction."""
    from crawlers.extract.crawl_io import iter_crawl_records
    from crawlers.extract.page import ExtractConfig, extract_page
    from crawlers.imports.run import import_warc

    config = ExtractConfig(favor=favor)
    start, cpu_start = time.perf_counter(), time.process_time()
    summary = import_warc(
        patterns,
        work,
        config={"allow_private_networks": True, "delay": 0.0},
        offline=offline,
    )
    imported = time.perf_counter() - start
    texts: dict[str, str] = {}
    read_s = extract_s = 0.0
    records = iter(iter_crawl_records(work))
    while True:
        t0 = time.perf_counter()
        record = next(records, None)
        t1 = time.perf_counter()
        read_s += t1 - t0
        if record is None:
            break
        result = extract_page(record, config)
        extract_s += time.perf_counter() - t1
        if result.document is not None:
            texts[record["url"]] = result.document["text"]
    seconds = time.perf_counter() - start
    phases = {
        "cpu_seconds": round(time.process_time() - cpu_start, 3),
        "import_seconds": round(imported, 3),
        "read_seconds": round(read_s, 3),
        "extract_seconds": round(extract_s, 3),
    }
    return texts, seconds, {**summary, **phases}


def run_datatrove(
    py: Path, warc_dir: Path, work: Path, pattern: str = "*.warc.gz"
) -> tuple[dict[str, str], float, int, float]:
    """datatrove's documents by URL, its seconds, its document count and its CPU seconds."""
    script = Path(__file__).with_name("_datatrove_warc.py")
    res = subprocess.run(
        [str(py), str(script), str(warc_dir), pattern, str(work)],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise RuntimeError(f"datatrove failed:\n{res.stderr[-3000:]}")
    line = json.loads(res.stdout.strip().splitlines()[-1])
    texts: dict[str, str] = {}
    for path in work.glob("*.jsonl"):
        for raw in path.read_text().splitlines():
            doc = json.loads(raw)
            url = (doc.get("metadata") or {}).get("url") or doc.get("id")
            texts[url] = doc.get("text") or ""
    return texts, float(line["seconds"]), int(line["documents"]), float(line["cpu_seconds"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--pages-per-file", type=int, default=100)
    ap.add_argument("--no-datatrove", action="store_true")
    ap.add_argument(
        "--favor",
        default="balanced",
        choices=("balanced", "precision", "recall"),
        help="Refinery's trafilatura mode (`refinery extract --favor`); datatrove runs with "
        "favour_precision=True",
    )
    ap.add_argument(
        "--real",
        nargs="*",
        default=[],
        help="real WARC/ARC files (paths or globs) imported and extracted by both tools too",
    )
    ap.add_argument(
        "--read-scaling",
        nargs="*",
        type=int,
        metavar="FILES",
        help="only time reading an import's records back (crawl_io) at these file counts of "
        "--pages-per-file pages, the per-shard whole-file reader of before fc9195a beside "
        "today's, in the same run (e.g. --read-scaling 5 20 80 --pages-per-file 50)",
    )
    args = ap.parse_args()
    if args.read_scaling:
        for n in args.read_scaling:
            print(json.dumps(run_read_scaling(n, args.pages_per_file)))
        return

    from sampleweb import build_web
    from sampleweb.server import serve

    py = None
    if not args.no_datatrove:
        try:
            py = peer_python("datatrove-warc", *DATATROVE_WARC)
        except Exception as exc:  # no network, no wheel: say so, bench Refinery alone
            print(f"datatrove: could not install ({exc}); Refinery alone")
    web = build_web(0)
    pages = [
        p
        for p in web.content_pages()
        if p.status == 200 and "html" in p.content_type and not p.labels.get("js_only_text")
    ]
    results = {}
    with serve(web) as served, tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm"  # imports and first-use costs of both sides, not timed
        write_warcs(served, pages, warm, 1, 5)
        run_refinery([str(warm / "*.warc.gz")], Path(tmp) / "warm-refinery", args.favor)
        if py is not None:
            run_datatrove(py, warm, Path(tmp) / "warm-datatrove")
        for n in (args.files, args.files * args.scale):
            warcs = Path(tmp) / f"warc-{n}"
            truth = write_warcs(served, pages, warcs, n, args.pages_per_file)
            ref_texts, ref_s, summary = run_refinery(
                [str(warcs / "*.warc.gz")], Path(tmp) / f"refinery-{n}", args.favor
            )
            row = {
                "files": n,
                "pages": len(truth),
                "refinery_documents": len(ref_texts),
                "refinery_seconds": round(ref_s, 3),
                "refinery_docs_per_s": round(len(ref_texts) / ref_s, 1),
                "refinery_cpu_seconds": summary["cpu_seconds"],
                "refinery_favor": args.favor,
                "refinery_import_seconds": summary["import_seconds"],
                "refinery_import_phases": {
                    k: summary[k]
                    for k in ("scan_seconds", "dedup_seconds", "consent_seconds", "write_seconds")
                },
                "refinery_read_seconds": summary["read_seconds"],
                "refinery_extract_seconds": summary["extract_seconds"],
                "consented": summary["training_allowed"],
                "hosts": summary["hosts"],
                "refinery_f1_vs_truth": round(
                    statistics.mean(token_prf(t, truth[u])[2] for u, t in ref_texts.items()), 3
                ),
            }
            if py is not None:
                dt_texts, dt_s, dt_n, dt_cpu = run_datatrove(
                    py, warcs, Path(tmp) / f"datatrove-{n}"
                )
                common = sorted(set(ref_texts) & set(dt_texts))
                row.update(
                    datatrove_documents=dt_n,  # as its writer counted them
                    datatrove_urls=len(dt_texts),
                    datatrove_seconds=round(dt_s, 3),
                    datatrove_docs_per_s=round(dt_n / dt_s, 1),
                    ratio=round((len(ref_texts) / ref_s) / (dt_n / dt_s), 2),
                    datatrove_cpu_seconds=round(dt_cpu, 3),
                    # documents per CPU second, ours / datatrove's: the per-core ratio, which a
                    # change in the shared machine's load during one side's run does not move
                    ratio_cpu=round((len(ref_texts) / summary["cpu_seconds"]) / (dt_n / dt_cpu), 2),
                    agreement_f1=round(
                        statistics.mean(token_prf(ref_texts[u], dt_texts[u])[2] for u in common),
                        3,
                    )
                    if common
                    else None,
                    datatrove_f1_vs_truth=round(
                        statistics.mean(
                            token_prf(t, truth.get(u, ""))[2] for u, t in dt_texts.items()
                        ),
                        3,
                    ),
                )
            results[n] = row
            print(json.dumps(row))
    small, big = results[args.files], results[args.files * args.scale]
    growth = {"refinery": round(big["refinery_seconds"] / small["refinery_seconds"], 2)}
    if "datatrove_seconds" in big:
        growth["datatrove"] = round(big["datatrove_seconds"] / small["datatrove_seconds"], 2)
    print(json.dumps({"time_growth_N_to_scaleN": growth, "scale": args.scale}))
    if args.real:
        print(json.dumps(run_real(args.real, py, args.favor)))


def _whole_file_records(pages_file: str, warc_file: str):
    """The shard reader before fc9195a: the whole pages file and its URL column read and
    converted for every shard, then the same record reading as today's."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from crawlers.extract.crawl_io import _record
    from crawlers.extract.warc import MAX_DECOMPRESSED_BYTES

    table = pq.read_table(pages_file)
    first_row: dict = {}
    for i, url in enumerate(table.column("url").to_pylist()):
        first_row.setdefault(url, i)
    mask = pc.equal(pc.fill_null(table.column("warc_file"), ""), warc_file)
    indices = [i for i, keep in enumerate(mask.to_pylist()) if keep]
    rows = table.take(pa.array(indices, type=pa.int64())).to_pylist()
    for i, row in zip(indices, rows, strict=True):
        yield _record(row, i, first_row[row["url"]], pages_file, warc_file, MAX_DECOMPRESSED_BYTES)


def run_read_scaling(n_files: int, per_file: int, rounds: int = 3) -> dict:
    """Reading an offline import of n_files archives back, every shard (one per source file):
    ms per record for the reader before fc9195a and today's (a fresh process cache each
    round), best of `rounds`, interleaved; the records must be the same."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from crawlers.extract import crawl_io
    from crawlers.imports.run import import_warc

    with tempfile.TemporaryDirectory() as tmp:
        for f in range(n_files):
            with open(Path(tmp) / f"r-{f:04d}.warc.gz", "wb") as fh:
                w = WARCWriter(fh, gzip=True)
                for k in range(per_file):
                    body = f"<html><body><p>file {f} page {k}</p></body></html>".encode()
                    http = StatusAndHeaders(
                        "200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"
                    )
                    w.write_record(
                        w.create_warc_record(
                            f"http://127.0.0.2/f{f}/p{k}",
                            "response",
                            payload=io.BytesIO(body),
                            http_headers=http,
                        )
                    )
        crawl = Path(tmp) / "crawl"
        import_warc([str(Path(tmp) / "*.warc.gz")], crawl, offline=True)
        shards = crawl_io.crawl_shards(crawl)
        best = {"before": float("inf"), "now": float("inf")}
        got = {}
        for _ in range(rounds):
            for name, read in (
                ("before", _whole_file_records),
                ("now", crawl_io.iter_shard_records),
            ):
                crawl_io._cache.clear()
                t0 = time.perf_counter()
                got[name] = [r for shard in shards for r in read(*shard)]
                best[name] = min(best[name], time.perf_counter() - t0)
        assert got["before"] == got["now"], "the two readers disagree"
        records = len(got["now"])
    return {
        "files": n_files,
        "records": records,
        "ms_per_record_before": round(1000 * best["before"] / records, 3),
        "ms_per_record_now": round(1000 * best["now"] / records, 3),
        "ratio_before_over_now": round(best["before"] / best["now"], 2),
    }


def run_real(patterns: list[str], py: Path | None, favor: str) -> dict:
    """Real archives (e.g. warcio's test data, Common Crawl's whirlwind WARC) through both
    tools: Refinery's record accounting, and the documents each makes and their agreement.
    Offline: real hosts are not asked for robots.txt from the bench."""
    import shutil

    from crawlers.imports.run import expand

    files = expand(patterns)
    with tempfile.TemporaryDirectory() as tmp:
        texts, seconds, s = run_refinery(files, Path(tmp) / "refinery", favor, offline=True)
        out = {
            "real_files": len(files),
            "records": s["records"],
            "pages": s["pages"],
            "skipped_by_reason": s["skipped_by_reason"],
            "refinery_documents": len(texts),
        }
        if py is not None:  # one datatrove run per file: a file its reader refuses ends its run
            dt_texts: dict[str, str] = {}
            failed: dict[str, str] = {}
            for i, f in enumerate(files):
                src = Path(tmp) / f"real-{i}"
                src.mkdir()
                shutil.copy(f, src / Path(f).name)
                try:
                    got, _, _, _ = run_datatrove(py, src, Path(tmp) / f"datatrove-{i}", "*")
                except RuntimeError as exc:
                    failed[Path(f).name] = str(exc).strip().splitlines()[-1][:200]
                else:
                    dt_texts.update(got)
            common = sorted(set(texts) & set(dt_texts))
            out.update(
                datatrove_documents=len(dt_texts),
                datatrove_failed_files=failed,
                both=len(common),
                only_refinery=sorted(set(texts) - set(dt_texts)),
                only_datatrove=sorted(set(dt_texts) - set(texts)),
                agreement_f1=round(
                    statistics.mean(token_prf(texts[u], dt_texts[u])[2] for u in common), 3
                )
                if common
                else None,
            )
    return out


if __name__ == "__main__":
    main()
