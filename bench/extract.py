"""Benchmark extraction quality and speed, and rendering throughput by pages in flight.

    .venv/bin/python bench/extract.py [--quick]

Serves the sample web on loopback, crawls it, then measures in the same run:
  1. static extraction: token precision/recall/F1 against the sample web's `main_text` and
     docs/s for Refinery's `extract_page`, plain `trafilatura.extract` defaults and a naive
     lxml `text_content()` baseline, with ratios;
  2. rendering: pages/s of the JS pages at 1, 2, 4, 8 pages in flight, with peak memory
     (PSS of Chromium processes + this Python process, sampled every 100 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlers.extract import extract_page  # noqa: E402
from crawlers.extract.crawl_io import iter_crawl_records  # noqa: E402
from crawlers.extract.decode import BadPage, decode_html  # noqa: E402
from crawlers.extract.evaluate import token_prf  # noqa: E402
from crawlers.render import RenderConfig, RenderJob, needs_render, render_pages  # noqa: E402
from crawlers.render.procs import browser_descendants  # noqa: E402


def _pss_kib(pid: int) -> int:
    # PSS splits shared pages between processes, so summing it over Chromium's many processes
    # does not count the shared renderer code once per process as RSS would.
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class PeakMemory:
    """Sample PSS of this process plus its Chromium descendants in a background thread."""

    def __init__(self, interval_s: float = 0.1):
        self.interval_s = interval_s
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import os

        while not self._stop.is_set():
            total = _pss_kib(os.getpid()) + sum(_pss_kib(p) for p in browser_descendants())
            self.peak_kib = max(self.peak_kib, total)
            self._stop.wait(self.interval_s)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def naive_text(html: str) -> str:
    """Baseline: all text of <body> without scripts and styles (lxml)."""
    from lxml import html as lxml_html

    tree = lxml_html.fromstring(html)
    for bad in tree.xpath("//script|//style|//noscript"):
        bad.drop_tree()
    body = tree.find(".//body")
    return (body if body is not None else tree).text_content()


def trafilatura_default(html: str) -> str:
    """Peer: trafilatura.extract with its defaults."""
    import trafilatura

    return trafilatura.extract(html) or ""


def crawl_sampleweb(out: Path):
    """Serve + crawl the sample web; return (ServedWeb context, labels by url)."""
    from crawlers.crawl import crawl
    from sampleweb import build_web
    from sampleweb.server import serve

    sw = serve(build_web(seed=0))
    sw.__enter__()
    cfg = {"delay": 0.0, "allow_private_networks": True, "concurrency": 16}
    asyncio.run(crawl(sw.seeds(), out, cfg))
    labels = {lab["url"]: lab for lab in sw.labels_table().to_pylist()}
    return sw, labels


def bench_static(records: list[dict], labels: dict, repeats: int) -> list[tuple]:
    """Quality and docs/s of the three extractors over static, non-JS content pages."""
    pages = []
    for rec in records:
        lab = labels.get(rec["url"])
        if not lab or not lab["is_content"] or lab["js_only_text"] or rec.get("status") != 200:
            continue
        try:
            html = decode_html(rec["body"], rec.get("content_type"))
        except BadPage:
            continue
        pages.append((rec, html, lab["main_text"]))

    systems = {
        "refinery extract_page": lambda rec, html: (extract_page(rec).document or {}).get(
            "text", ""
        ),
        "trafilatura.extract (defaults)": lambda rec, html: trafilatura_default(html),
        "naive lxml text_content": lambda rec, html: naive_text(html),
    }
    rows = []
    for name, fn in systems.items():
        outputs = [fn(rec, html) for rec, html, _ in pages]  # warm-up pass also yields the outputs
        start = time.perf_counter()
        for _ in range(repeats):
            for rec, html, _ in pages:
                fn(rec, html)
        elapsed = time.perf_counter() - start
        scores = [token_prf(out, gold) for out, (_, _, gold) in zip(outputs, pages, strict=True)]
        mean = [statistics.mean(s[i] for s in scores) for i in range(3)]
        rows.append((name, len(pages), *mean, repeats * len(pages) / elapsed))
    return rows


def bench_render(records: list[dict], in_flight: list[int], copies: int) -> list[tuple]:
    """Pages/s and peak memory when rendering the pages `needs_render` selects."""
    jobs = []
    for rec in records:
        if rec.get("status") != 200 or rec.get("body") is None:
            continue
        try:
            html = decode_html(rec["body"], rec.get("content_type"))
        except BadPage:
            continue
        if needs_render(html).render:
            jobs.append(RenderJob(rec["url"], html))
    jobs = jobs * copies
    rows = []
    for n in in_flight:
        with PeakMemory() as mem:
            start = time.perf_counter()
            outs = render_pages(jobs, RenderConfig(pages_in_flight=n, page_timeout_s=30))
            elapsed = time.perf_counter() - start
        errors = sum(1 for o in outs if o.error)
        rows.append((n, len(jobs), errors, len(jobs) / elapsed, mem.peak_kib / 1024))
    return rows


def main() -> None:
    """Run the benchmark and print its tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and concurrency levels")
    args = ap.parse_args()
    repeats = 1 if args.quick else 3
    in_flight = [1, 4] if args.quick else [1, 2, 4, 8]
    copies = 1 if args.quick else 3

    with tempfile.TemporaryDirectory(prefix="refinery-bench-extract-") as tmp:
        sw, labels = crawl_sampleweb(Path(tmp) / "crawl")
        try:
            records = list(iter_crawl_records(Path(tmp) / "crawl"))
            static = bench_static(records, labels, repeats)
            render = bench_render(records, in_flight, copies)
        finally:
            sw.__exit__(None, None, None)

    print("\nStatic extraction on the sample web (content pages without JS-only text)")
    print(f"{'system':32} {'docs':>5} {'precision':>9} {'recall':>7} {'F1':>6} {'docs/s':>8}")
    for name, n, p, r, f, dps in static:
        print(f"{name:32} {n:5d} {p:9.3f} {r:7.3f} {f:6.3f} {dps:8.1f}")
    ours = static[0]
    for peer in static[1:]:
        print(
            f"ratio refinery / {peer[0]}: F1 x{ours[4] / peer[4]:.2f}, docs/s x{ours[5] / peer[5]:.2f}"
        )

    print("\nRendering (pages selected by needs_render, Chromium headless)")
    print(f"{'in flight':>9} {'pages':>5} {'errors':>6} {'pages/s':>8} {'peak PSS MiB':>12}")
    for n, pages, errors, pps, mib in render:
        print(f"{n:9d} {pages:5d} {errors:6d} {pps:8.2f} {mib:12.0f}")
    base = render[0][3]
    print("speed-up vs 1 in flight: " + ", ".join(f"{r[0]}: x{r[3] / base:.2f}" for r in render))


if __name__ == "__main__":
    main()
