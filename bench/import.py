"""Benchmark `import warc` + extraction against datatrove (WarcReader + Trafilatura) on the
same WARC files in the same run.

    .venv/bin/python bench/import.py [--files 2] [--scale 10] [--pages-per-file 100]
        [--no-datatrove]

The WARC files hold the sample web's content pages (real HTML with ground-truth main text),
served for the robots.txt fetches on loopback (each site its own 127.0.0.N, its own
robots.txt, with the sample web's training opt-outs). Each page appears once per copy k with
URL `?copy=k` and an HTML comment, so repeats are not deduplicated away. For N files and
SCALE*N files:

- Refinery: `crawlers.imports.run.import_warc` (scan in this process, consent on: robots.txt for
  every origin through the Downloader) then `extract_page` on every imported page (one process,
  one core), documents/s end to end;
- datatrove in bench/.venvs/datatrove-warc (created on first use: `datatrove[io]`, warcio,
  trafilatura, lxml_html_clean): WarcReader -> Trafilatura -> JsonlWriter, tasks=1, workers=1;

then documents/s of both and the ratio, how time grows from N to SCALE*N files, extraction
agreement (token F1 between the two texts of a URL) and each one's token F1 against the sample
web's main text. Real archives are never committed; everything is written under a temp dir.

Measured (2-core machine shared with other jobs, load average ~12, so absolute figures are
noisy; both sides ran in the same run; `--files 2 --scale 10 --pages-per-file 100`, datatrove
0.10.1, trafilatura 2.3.1):

    files  pages  refinery docs  s      docs/s  (import s)  datatrove docs  s      docs/s  ratio
    2      200    194            11.8   16.5    0.25        200             7.1    28.0    0.59
    20     2000   1934           92.7   20.9    2.93        2000            35.1   57.0    0.37

Agreement (token F1 of the two texts of a URL): 1.000 (identical: both run trafilatura on the
same bytes); F1 against the sample web's main text: Refinery 0.928, datatrove 0.929. Refinery
makes 66 fewer documents of 2000: their paths (/private/, /members/, /cart/) are disallowed for
the crawl token by today's robots.txt, and 216 of its 1934 are not training-allowed (robots.txt
training opt-outs, noai). Time N -> 10N files: Refinery x7.9, datatrove x4.9. The import itself
(scan, dedup, robots.txt for 18 origins) is 2.9 s of Refinery's 92.7 s (~680 pages/s); the rest
is `extract_page` (cProfile on 200 pages: 88% of the time, trafilatura run 342 times for 194
documents, plus metadata, tables and interleaved blocks), so the goal of datatrove's
documents/s is not met by the extraction, not by the import. datatrove runs with
`deduplicate=False`: with its default, trafilatura's LRU text cache dropped 739 of the 2000
page copies (37%) as repeats, which is no extraction.
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


def run_refinery(warc_dir: Path, work: Path) -> tuple[dict[str, str], float, dict]:
    from crawlers.extract.crawl_io import iter_crawl_records
    from crawlers.extract.page import extract_page
    from crawlers.imports.run import import_warc

    start = time.perf_counter()
    summary = import_warc(
        [str(warc_dir / "*.warc.gz")],
        work,
        config={"allow_private_networks": True, "delay": 0.0},
    )
    imported = time.perf_counter() - start
    texts: dict[str, str] = {}
    for record in iter_crawl_records(work):
        result = extract_page(record)
        if result.document is not None:
            texts[record["url"]] = result.document["text"]
    seconds = time.perf_counter() - start
    return texts, seconds, {**summary, "import_seconds": round(imported, 3)}


def run_datatrove(py: Path, warc_dir: Path, work: Path) -> tuple[dict[str, str], float, int]:
    script = Path(__file__).with_name("_datatrove_warc.py")
    res = subprocess.run(
        [str(py), str(script), str(warc_dir), "*.warc.gz", str(work)],
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
    return texts, float(line["seconds"]), int(line["documents"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--pages-per-file", type=int, default=100)
    ap.add_argument("--no-datatrove", action="store_true")
    args = ap.parse_args()

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
        run_refinery(warm, Path(tmp) / "warm-refinery")
        if py is not None:
            run_datatrove(py, warm, Path(tmp) / "warm-datatrove")
        for n in (args.files, args.files * args.scale):
            warcs = Path(tmp) / f"warc-{n}"
            truth = write_warcs(served, pages, warcs, n, args.pages_per_file)
            ref_texts, ref_s, summary = run_refinery(warcs, Path(tmp) / f"refinery-{n}")
            row = {
                "files": n,
                "pages": len(truth),
                "refinery_documents": len(ref_texts),
                "refinery_seconds": round(ref_s, 3),
                "refinery_docs_per_s": round(len(ref_texts) / ref_s, 1),
                "refinery_import_seconds": summary["import_seconds"],
                "consented": summary["training_allowed"],
                "hosts": summary["hosts"],
                "refinery_f1_vs_truth": round(
                    statistics.mean(token_prf(t, truth[u])[2] for u, t in ref_texts.items()), 3
                ),
            }
            if py is not None:
                dt_texts, dt_s, dt_n = run_datatrove(py, warcs, Path(tmp) / f"datatrove-{n}")
                common = sorted(set(ref_texts) & set(dt_texts))
                row.update(
                    datatrove_documents=dt_n,  # as its writer counted them
                    datatrove_urls=len(dt_texts),
                    datatrove_seconds=round(dt_s, 3),
                    datatrove_docs_per_s=round(dt_n / dt_s, 1),
                    ratio=round((len(ref_texts) / ref_s) / (dt_n / dt_s), 2),
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


if __name__ == "__main__":
    main()
