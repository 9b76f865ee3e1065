"""The English quality model on real pages: a dev set nobody here wrote, its AUC, and the cut.

Dev set (built at run time from mozilla/readability's `test/test-pages/*/`, read from the git
mirror, never committed): per English page (lid.176 on the gold text),

- good: the page's main content as readability's maintainers extracted it by hand
  (`expected.html`), as text;
- bad: the same page's other text (`source.html` without script/style, the lines that do not
  occur in the gold text: navigation, footers, link lists, cookie and share widgets), when it
  holds at least `--min-words` words: what a pipeline without main-content extraction keeps.

Printed per English model: ROC AUC on that dev set, the share of good and bad dev documents kept
at each `quality_score` cut, at the model's own calibrated cut (`threshold` in its metadata, what
the filter applies) and at the cuts that keep 90% and 80% of its calibration crawl, and the AUC
on the synthetic `dev` split of tests/filters/heldout_quality.py. Models: the default set's (`filters.quality.default`, whatever
recipe it has now) and candidates trained here from the sample web's labelled documents with the
label sources `reference`, `reference+shuffled` and `graded+shuffled` (the sample web's graded
pages: `high` positive, `low` negative; the default for English since recipe version 4), and
`graded+plain-shuffles` (the same without its in-layout shuffles). `--seed` changes the
candidates' label and training seed.

`--trafilatura-lang de`: the dev set is instead adbar/trafilatura's ~990 evaluation pages
(tests/evaldata.json, tests/eval, tests/cache; read from the git mirror) in that language: good is
the page's main content as `trafilatura.extract` gives it (not a hand extraction: its snippet F1
on these pages is 0.926), bad is the page's other text, as above; every model is that language's.

`--languages de en ...`: per language and candidate, the synthetic held-out AUC (`dev` split,
where choices are made, and `test`) and the model's own grouped held-out AUC (`metrics.auc`).

Usage: .venv/bin/python bench/ablate_quality.py [--min-words 40] [--candidates NAME ...]
       .venv/bin/python bench/ablate_quality.py --languages de en es fr ja zh
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ablate import git_dir, git_show, html_to_text  # noqa: E402

CUTS = (0.05, 0.1, 0.2, 0.3, 0.5)


def _norm(line: str) -> str:
    return " ".join(line.lower().split())


def readability_dev(min_words: int) -> list[dict]:
    """{text, label, page} rows of readability's English test pages (1 good, 0 bad)."""
    from common.langid import LanguageIdentifier

    gd = git_dir("mozilla+readability")
    import subprocess

    names = subprocess.run(
        ["git", f"--git-dir={gd}", "ls-tree", "--name-only", "HEAD", "test/test-pages/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    paths = [f"{n}/{f}" for n in names for f in ("expected.html", "source.html")]
    blobs = git_show(gd, paths)
    lid = LanguageIdentifier()
    rows = []
    for i, name in enumerate(names):
        gold = html_to_text(blobs[2 * i]) if blobs[2 * i] else ""
        source = html_to_text(blobs[2 * i + 1]) if blobs[2 * i + 1] else ""
        if len(gold.split()) < min_words or lid.predict(gold)[0] != "en":
            continue
        gold_text = _norm(gold)
        rest = [ln for ln in source.splitlines() if _norm(ln) and _norm(ln) not in gold_text]
        rows.append({"text": gold, "label": 1, "page": name})
        if sum(len(ln.split()) for ln in rest) >= min_words:
            rows.append({"text": "\n".join(rest), "label": 0, "page": name})
    return rows


def trafilatura_dev(lang: str, min_words: int) -> list[dict]:
    """{text, label, page} rows of trafilatura's evaluation pages in `lang` (1: the page's main
    content as trafilatura.extract gives it; 0: the page's other text)."""
    import trafilatura

    from bench.ablate import trafilatura_pages
    from common.langid import LanguageIdentifier

    lid = LanguageIdentifier()
    rows = []
    for url, body in trafilatura_pages(cached=True):
        gold = trafilatura.extract(body) or ""
        if len(gold.split()) < min_words or lid.predict(gold[:2000])[0] != lang:
            continue
        gold_text = _norm(gold)
        rest = [
            ln for ln in html_to_text(body).splitlines() if _norm(ln) and _norm(ln) not in gold_text
        ]
        rows.append({"text": gold, "label": 1, "page": url})
        if sum(len(ln.split()) for ln in rest) >= min_words:
            rows.append({"text": "\n".join(rest), "label": 0, "page": url})
    return rows


def auc_and_cuts(rows: list[dict], scores: list[float], own_cut: float | None = None) -> dict:
    from common.metrics import roc_auc

    y = [r["label"] for r in rows]
    good = [s for s, t in zip(scores, y, strict=True) if t == 1]
    bad = [s for s, t in zip(scores, y, strict=True) if t == 0]

    def kept(cut: float) -> tuple[float, float]:
        return (
            round(sum(s >= cut for s in good) / len(good), 3),
            round(sum(s >= cut for s in bad) / len(bad), 3),
        )

    out = {"auc": round(float(roc_auc(y, scores)), 3)}
    for cut in CUTS:
        out[f"kept@{cut}"] = kept(cut)
    if own_cut is not None:
        out["own cut"] = round(own_cut, 4)
        out["kept@own"] = kept(own_cut)
    return out


# candidates: label sources over the sample web's labelled documents, and `graded` with the
# plain shuffles only (graded+shuffled without its in-layout shuffles: the candidate before)
CANDIDATES = ("reference", "reference+shuffled", "graded+shuffled", "graded+plain-shuffles")


def candidate_model(name: str, rows: list[dict], out: Path, lang: str = "en", seed: int = 0):
    """The model of one language of a candidate, trained on the sample web's labelled documents."""
    from filters.labels import LabelOptions, build_training_set, with_shuffles
    from filters.quality import QualityModel, train_model

    opts = LabelOptions(seed=seed)
    if name == "graded+plain-shuffles":
        ts = with_shuffles(build_training_set(rows, lang, "graded", opts), lang, opts, name)
    else:
        ts = build_training_set(rows, lang, name, opts)
    train_model(ts, out / f"{lang}-{name}.bin", seed=seed)
    return QualityModel(out / f"{lang}-{name}.bin")


def per_language(langs: list[str], candidates: list[str], seed: int = 0) -> None:
    """Synthetic held-out AUCs (dev, test) and the grouped held-out AUC of each candidate."""
    from sampleweb.labels import labelled_documents
    from tests.filters.heldout_quality import auc_by_language, heldout_documents

    labelled = labelled_documents(0)
    splits = {s: heldout_documents(s) for s in ("dev", "test")}
    with tempfile.TemporaryDirectory() as tmp:
        for lang in langs:
            for name in candidates:
                m = candidate_model(name, labelled, Path(tmp), lang, seed)
                row = {"lang": lang, "candidate": name}
                for split, docs in splits.items():
                    sub = [d for d in docs if d["lang"] == lang]
                    auc = auc_by_language(sub, lambda t, lg, m=m: list(m.score(t, lg)))[lang]
                    row[f"synthetic {split} AUC"] = round(auc, 3)
                row["grouped held-out AUC"] = round(m.meta["metrics"]["auc"], 3)
                row["threshold"] = round(m.threshold, 4)
                print(json.dumps(row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-words", type=int, default=40)
    ap.add_argument("--candidates", nargs="*", default=list(CANDIDATES), choices=list(CANDIDATES))
    ap.add_argument(
        "--languages", nargs="*", default=None, help="per-language synthetic held-out AUCs instead"
    )
    ap.add_argument("--seed", type=int, default=0, help="the candidates' label and training seed")
    ap.add_argument(
        "--trafilatura-lang",
        default=None,
        help="the dev set from trafilatura's evaluation pages in this language (see above)",
    )
    args = ap.parse_args()
    if args.languages:
        per_language(args.languages, args.candidates, args.seed)
        return

    from filters.quality.default import default_scorer
    from sampleweb.labels import labelled_documents
    from tests.filters.heldout_quality import auc_by_language, heldout_documents

    lang = args.trafilatura_lang or "en"
    if args.trafilatura_lang:
        dev = trafilatura_dev(lang, args.min_words)
    else:
        dev = readability_dev(args.min_words)
    texts = [r["text"] for r in dev]
    synthetic = [d for d in heldout_documents("dev") if d["lang"] == lang]
    labelled = labelled_documents(0)
    print(
        json.dumps({"good": sum(r["label"] for r in dev), "bad": sum(1 - r["label"] for r in dev)})
    )
    default = default_scorer(labelled).model_for(lang)[0]
    models = {f"default set ({default.meta['label_source']})": default}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.candidates:
            models[name] = candidate_model(name, labelled, Path(tmp), lang, seed=args.seed)
        for name, model in models.items():
            scores = list(model.score(texts, lang))
            row = auc_and_cuts(dev, scores, model.threshold)
            for keep in (0.9, 0.8):  # other calibrated cuts: keep this share of the crawl
                cut = model.score_for_keep_rate(keep)
                row[f"kept@keep_rate {keep}"] = (
                    round(cut, 4),
                    auc_and_cuts(dev, scores, cut)["kept@own"],
                )
            row["synthetic dev AUC"] = round(
                auc_by_language(synthetic, lambda t, lg, m=model: list(m.score(t, lg)))[lang],
                3,
            )
            print(f"{name}: {json.dumps(row)}")


if __name__ == "__main__":
    main()
