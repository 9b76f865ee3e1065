"""What the URL filter and benchmark decontamination cost per 10k documents, beside the rest of
the per-document annotation measured in the same run (CPU seconds of this process).

Corpus: bench/filter.py's recombined sample-web documents (URLs on 97 hosts). URL filter:
generated UT1 lists of `--domains` domains and a tenth as many URLs in three categories, plus
the default banned words. Decontamination: three generated eval sets of `--items` items each
(random words from the corpus, disjoint from its texts; then with a fifth of the items cut
from the corpus's own paragraphs: nearly every recombined document is hit, the worst case).

datatrove's URLFilter (bench/.venvs/datatrove-warc, with tldextract, pyahocorasick, fasteners)
is timed on the same URLs, lists and words when that venv exists.

Usage: .venv/bin/python bench/filter_steps.py [--docs 10000] [--domains 100000] [--items 5000]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from filter import build_corpus  # noqa: E402

from common.urlblock import DEFAULT_WORDS, load_blocklist, write_lists  # noqa: E402
from filters.annotate import DocumentAnnotator  # noqa: E402
from filters.config import DecontamConfig, FilterConfig, UrlFilterConfig  # noqa: E402
from filters.decontam import Decontaminator  # noqa: E402
from filters.urls import UrlFilter  # noqa: E402
from sampleweb.labels import labelled_documents  # noqa: E402

# The shared datatrove venv (datatrove[processing] brings its URLFilter's tldextract, pyahocorasick).
PEER_VENV = "datatrove"


def cpu() -> float:
    return time.process_time()


def make_lists(root: Path, n: int, rng: random.Random) -> Path:
    cats = {}
    for c, cat in enumerate(("adult", "malware", "phishing")):
        doms = [f"h{rng.randrange(10**9)}-{i}.c{c}.test" for i in range(n // 3)]
        urls = [f"u{i}.c{c}.test/p/{rng.randrange(10**6)}" for i in range(n // 30)]
        cats[cat] = {"domains": doms, "urls": urls}
    cats["adult"]["domains"].append("site5.bench.test")  # one of the corpus's 97 hosts
    return write_lists(root, cats)


def datatrove_url(tmp: Path, corpus: list[dict], lists: Path) -> dict | None:
    """datatrove's URLFilter on the same URLs, lists and words (None without its venv)."""
    py = ROOT / "bench" / ".venvs" / PEER_VENV / "bin" / "python"
    if not py.exists():
        print(f"(no {py}: datatrove's URLFilter not timed)")
        return None
    (tmp / "urls.json").write_text(json.dumps([d["url"] for d in corpus]))
    (tmp / "words.json").write_text(json.dumps({k: list(v) for k, v in DEFAULT_WORDS.items()}))
    out = subprocess.run(
        [str(py), str(ROOT / "bench" / "_datatrove_url.py"), str(tmp / "urls.json"), str(lists)]
        + [str(tmp / "words.json")],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        print(f"(datatrove's URLFilter failed: {out.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def make_evals(
    root: Path, corpus: list[dict], items: int, rng: random.Random, cut_every: int = 5
) -> list[str]:
    paras = [p for d in corpus[:2000] for p in d["text"].split("\n") if len(p.split()) > 20]
    # ASCII whitespace-split words (a CJK paragraph has no spaces: one "word" would be all of it)
    words = [w for d in corpus[:200] for w in d["text"].split() if len(w) <= 12 and w.isascii()]
    paths = []
    for k in range(3):
        path = root / f"eval{k}-{cut_every}.jsonl"
        with open(path, "w") as f:
            for i in range(items):
                if cut_every and i % cut_every == 0 and paras:
                    q = rng.choice(paras)
                else:
                    q = " ".join(rng.choice(words) for _ in range(rng.randint(20, 60)))
                item = {"question": q, "answer": rng.choice(words), "choices": ["a", "b"]}
                f.write(json.dumps(item, ensure_ascii=False) + "\n")
        paths.append(str(path))
    return paths


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--domains", type=int, default=100_000)
    ap.add_argument("--items", type=int, default=5_000)
    ap.add_argument("--baseline-docs", type=int, default=2_000, help="docs for the annotate timing")
    args = ap.parse_args()
    rng = random.Random(0)
    corpus = build_corpus(labelled_documents(0), args.docs)
    per = 10_000 / len(corpus)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        lists = make_lists(tmp / "lists", args.domains, rng)
        c0 = cpu()
        load_blocklist(lists)
        rows.append(("URL lists: load (once per run)", cpu() - c0, None))
        f = UrlFilter(UrlFilterConfig(blocklist_dir=str(lists)))
        c0 = cpu()
        blocked = sum(f.check(d["url"]) is not None for d in corpus)
        rows.append(("URL filter: check", (cpu() - c0) * per, blocked))
        peer = datatrove_url(tmp, corpus, lists)
        if peer is not None:
            rows.append(("datatrove URLFilter: load (same lists)", peer["load"], None))
            rows.append(("datatrove URLFilter: check", peer["check"] * per, peer["blocked"]))

        for cut_every, what in ((0, "disjoint eval sets"), (5, "a fifth cut from the corpus")):
            evals = make_evals(tmp, corpus, args.items, rng, cut_every)
            c0 = cpu()
            d = Decontaminator(DecontamConfig(evals=evals))
            rows.append((f"decontamination: index ({what})", cpu() - c0, None))
            c0 = cpu()
            hits = sum(d.check(doc["text"])[0] for doc in corpus)
            rows.append((f"decontamination: check ({what})", (cpu() - c0) * per, hits))

        cfg = FilterConfig(urls=UrlFilterConfig(enabled=False))
        cfg.quality.use_default_models = False
        ann = DocumentAnnotator(cfg)
        sample = corpus[: args.baseline_docs]
        ann.annotate(sample[0])
        c0 = cpu()
        for doc in sample:
            ann.annotate(doc)
        base = (cpu() - c0) * 10_000 / len(sample)
    print(
        f"{len(corpus)} documents; lists {args.domains:,} domains + {args.domains // 10:,} URLs; "
        f"3 eval sets of {args.items:,} items"
    )
    print(f"{'step':56s} {'CPU s / 10k docs':>17s} {'vs annotate':>12s} {'hits':>7s}")
    print(f"{'annotate (langid, PII, heuristics, safety)':56s} {base:17.2f} {'1.000':>12s}")
    for name, secs, n in rows:
        ratio = f"{secs / base:.3f}" if n is not None else ""
        hits = "" if n is None else str(n)
        print(f"{name:56s} {secs:17.2f} {ratio:>12s} {hits:>7s}")


if __name__ == "__main__":
    main()
