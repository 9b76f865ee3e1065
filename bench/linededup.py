"""Line de-duplication's cost and effect: the whole filter with and without it, side by side.

Corpus: `bench/filter.py`'s recombined sample-web paragraphs, made web-shaped. Its paragraphs
are drawn with replacement from ~150 per language, so each recurs in ~1 % of the documents,
which line de-duplication rightly removes; here every paragraph gets one word (CJK: one
character) swapped for another of its text, so prose is unique again, and each page gets what
sites add: its host's footer, a cookie banner on 70 % of pages (per language), "related
articles" lines shared by a host's pages. Then the filter runs in process (one worker, quality
models trained on the sample web) with `line_dedup` on and off; reported: documents per CPU
second, the ratio, characters removed, documents dropped as `repeated_boilerplate`, and the
line passes alone (pairs, count, rewrite) per 10,000 documents.

Usage: .venv/bin/python bench/linededup.py [--docs 10000] [--demo-docs DIR]
(`--demo-docs`: also the effect on an extract output, e.g. a demo lake's extract/.)
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from filters import linededup  # noqa: E402
from filters.config import CHAR_LANGS, LineDedupConfig, config_from_dict  # noqa: E402

BANNERS = {
    "en": "We and our partners store and access information on your device for measurement.",
    "de": "Wir und unsere Partner speichern Informationen auf Ihrem Gerät für Messungen.",
    "fr": "Nos partenaires et nous stockons des informations sur votre appareil pour la mesure.",
    "es": "Nosotros y nuestros socios almacenamos información en su dispositivo para medición.",
    "ja": "当サイトとパートナーは計測のためにお使いの端末に情報を保存します。",
    "zh": "我们和合作伙伴会在您的设备上存储信息以进行统计。",
}


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _perturb(para: str, lang: str, rng: random.Random) -> str:
    """One word (CJK: one character) swapped for another of the paragraph: unique prose."""
    if lang in CHAR_LANGS:
        chars = list(para)
        i, j = rng.randrange(len(chars)), rng.randrange(len(chars))
        chars[i], chars[j] = chars[j], chars[i]
        return "".join(chars) + "".join(rng.choice(para) for _ in range(2))
    words = para.split(" ")
    words[rng.randrange(len(words))] = rng.choice(words) + rng.choice(words)
    return " ".join(words)


def web_corpus(n: int, seed: int = 0) -> list[dict]:
    """bench/filter.py's corpus with unique paragraphs and per-site boilerplate."""
    from filter import build_corpus

    from common.langid import LanguageIdentifier
    from sampleweb.labels import labelled_documents

    rng = random.Random(seed)
    lid = LanguageIdentifier()
    docs = build_corpus(labelled_documents(0), n, seed)
    letters = "bcdfghjklmnpqrstvwxz"
    for d in docs:
        lang = lid.predict(d["text"])[0]
        host = d["url"].split("/")[2]
        name = "".join(letters[int(c) % 20] for c in host if c.isdigit()) or "x"
        paras = [_perturb(p, lang, rng) if p.strip() else p for p in d["text"].split("\n")]
        lines = [f"Related on {name}: more stories from the {name} desk"]
        if rng.random() < 0.7:
            lines.insert(0, BANNERS.get(lang, BANNERS["en"]))
        d["text"] = "\n".join(
            [*lines[:1], *paras, *lines[1:], f"{name.title()} Media, editorial team"]
        )
    return docs


def line_passes(texts: list[str], cfg: LineDedupConfig, chunk_rows: int = 1250) -> dict:
    """The line de-duplication's own passes in this process: CPU seconds and what they find."""
    c0 = _cpu()
    batches = [
        (c, linededup.line_pairs(texts[a : a + chunk_rows]))
        for c, a in enumerate(range(0, len(texts), chunk_rows))
    ]
    c1 = _cpu()
    threshold = linededup.threshold(cfg, len(texts))
    found = linededup.run_in_memory(batches, 16, threshold)
    c2 = _cpu()
    repeated = {k for keys in found.values() for k in keys.tolist()}
    removed = sum(linededup.strip_repeated(t, repeated)[1] for t in texts)
    c3 = _cpu()
    return {
        "threshold": threshold,
        "repeated_lines": len(repeated),
        "chars_removed_share": removed / max(1, sum(len(t) for t in texts)),
        "cpu_pairs": c1 - c0,
        "cpu_count": c2 - c1,
        "cpu_rewrite": c3 - c2,
    }


def filter_run(docs_dir: Path, out: Path, models: Path, on: bool) -> dict:
    from pipelines.stages.filter import run_filter

    cfg = config_from_dict({"line_dedup": {"enabled": on}})
    c0, t0 = _cpu(), time.perf_counter()
    s = run_filter(docs_dir, out, models_dir=models, config=cfg, beam_args=["--runner=InProcess"])
    return {
        "cpu": _cpu() - c0,
        "wall": time.perf_counter() - t0,
        "kept": s["rows_kept"],
        "repeated_boilerplate": s["dropped"].get(linededup.REASON, 0),
        "chars_removed": pq.read_table(
            out / "annotated.parquet", columns=["repeated_chars_removed"]
        )["repeated_chars_removed"]
        .to_numpy()
        .sum(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=10000)
    ap.add_argument("--demo-docs", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=2, help="runs of each arm, interleaved")
    args = ap.parse_args()
    from filter import train_models

    from sampleweb.labels import labelled_documents

    n = args.docs
    corpus = web_corpus(n)
    passes = line_passes([d["text"] for d in corpus], LineDedupConfig())
    per10k = 10000 / n
    print(f"corpus: {n} web-shaped documents; threshold {passes['threshold']} documents")
    print(
        f"line passes alone, CPU s per 10k docs: pairs {passes['cpu_pairs'] * per10k:.2f}, "
        f"count {passes['cpu_count'] * per10k:.2f}, rewrite {passes['cpu_rewrite'] * per10k:.2f}; "
        f"{passes['repeated_lines']} repeated lines, {passes['chars_removed_share']:.1%} of characters"
    )
    with tempfile.TemporaryDirectory(prefix="bench-linededup-") as tmp:
        work = Path(tmp)
        models = train_models(labelled_documents(0), work / "models")
        (work / "in").mkdir()
        pq.write_table(pa.Table.from_pylist(corpus), work / "in" / "documents.parquet")
        runs = {}
        for on in (False, True) * args.repeat:  # interleaved: load drifts on a shared machine
            r = filter_run(work / "in", work / f"out-{on}-{len(runs)}", models, on)
            runs.setdefault(on, []).append(r)
        print(
            "\n| filter (in process, 1 worker) | CPU s | docs/s per core | kept | repeated_boilerplate | chars removed |"
        )
        print("|---|---|---|---|---|---|")
        for on in (False, True):
            cpu = min(r["cpu"] for r in runs[on])
            r = runs[on][0]
            print(
                f"| line_dedup {'on' if on else 'off'} | {cpu:.1f} | {n / cpu:.0f} | {r['kept']} "
                f"| {r['repeated_boilerplate']} | {r['chars_removed']} |"
            )
        off, on_ = min(r["cpu"] for r in runs[False]), min(r["cpu"] for r in runs[True])
        print(
            f"\nline de-duplication costs {on_ / off - 1:+.1%} of the filter's CPU time "
            f"({(on_ - off) * per10k:+.1f} CPU s per 10k documents; best of {args.repeat} runs each)"
        )
        if args.demo_docs:
            table = pq.read_table(args.demo_docs / "documents.parquet", columns=["text"])
            demo = line_passes([t or "" for t in table["text"].to_pylist()], LineDedupConfig())
            print(
                f"\n{args.demo_docs}: {table.num_rows} documents, threshold {demo['threshold']}, "
                f"{demo['repeated_lines']} repeated lines, {demo['chars_removed_share']:.2%} of characters removed"
            )


if __name__ == "__main__":
    main()
