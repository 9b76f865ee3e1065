"""The English quality model on real pages: a dev set nobody here wrote, its AUC, and the cut.

Dev set (built at run time from mozilla/readability's `test/test-pages/*/`, read from the git
mirror, never committed): per English page (lid.176 on the gold text),

- good: the page's main content as readability's maintainers extracted it by hand
  (`expected.html`), as text;
- bad: the same page's other text (`source.html` without script/style, the lines that do not
  occur in the gold text: navigation, footers, link lists, cookie and share widgets), when it
  holds at least `--min-words` words: what a pipeline without main-content extraction keeps.

Printed per English model: ROC AUC on that dev set, the share of good and bad dev documents kept
at each `quality_score` cut, and the AUC on the synthetic `dev` split of
tests/filters/heldout_quality.py (where the default recipe was chosen; its `test` split is not
read). Models: the default set's (`filters.quality.default`) and candidates trained here from the
sample web's labelled documents: the label sources `reference`, `reference+shuffled` (the default
recipe) and `grades+shuffled` (the sample web's graded pages: `high` positive, `low` negative).

Usage: .venv/bin/python bench/ablate_quality.py [--min-words 40] [--candidates NAME ...]
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


def auc_and_cuts(rows: list[dict], scores: list[float]) -> dict:
    from common.metrics import roc_auc

    y = [r["label"] for r in rows]
    out = {"auc": round(float(roc_auc(y, scores)), 3)}
    for cut in CUTS:
        good = [s for s, t in zip(scores, y, strict=True) if t == 1]
        bad = [s for s, t in zip(scores, y, strict=True) if t == 0]
        out[f"kept@{cut}"] = (
            round(sum(s >= cut for s in good) / len(good), 3),
            round(sum(s >= cut for s in bad) / len(bad), 3),
        )
    return out


def graded(rows: list[dict]) -> list[dict]:
    """The sample web's graded pages as reference labels: quality `high` positive, `low`
    negative, `medium` left out (the default recipe takes every non-reference page, `high` ones
    too, as a negative)."""
    return [
        {**r, "is_reference": r.get("quality") == "high"}
        for r in rows
        if r.get("quality") in ("high", "low")
    ]


# candidate: (label source, rows transform) over the sample web's labelled documents
CANDIDATES = {
    "reference": ("reference", lambda rows: rows),
    "reference+shuffled": ("reference+shuffled", lambda rows: rows),  # the default recipe
    "grades+shuffled": ("reference+shuffled", graded),
}


def candidate_model(name: str, rows: list[dict], out: Path):
    """The English model of a candidate, trained on the sample web's labelled documents."""
    from filters.labels import LabelOptions, build_training_set
    from filters.quality import QualityModel, train_model

    source, transform = CANDIDATES[name]
    ts = build_training_set(transform(rows), "en", source, LabelOptions(seed=0))
    train_model(ts, out / f"en-{name}.bin", seed=0)
    return QualityModel(out / f"en-{name}.bin")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-words", type=int, default=40)
    ap.add_argument("--candidates", nargs="*", default=list(CANDIDATES), choices=list(CANDIDATES))
    args = ap.parse_args()

    from filters.quality.default import default_scorer
    from sampleweb.labels import labelled_documents
    from tests.filters.heldout_quality import auc_by_language, heldout_documents

    dev = readability_dev(args.min_words)
    texts = [r["text"] for r in dev]
    synthetic = [d for d in heldout_documents("dev") if d["lang"] == "en"]
    labelled = labelled_documents(0)
    print(
        json.dumps({"good": sum(r["label"] for r in dev), "bad": sum(1 - r["label"] for r in dev)})
    )
    scorers = {"default set": lambda t: default_scorer(labelled).score(t, "en")[0]}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.candidates:
            model = candidate_model(name, labelled, Path(tmp))
            scorers[name] = lambda t, m=model: list(m.score(t, "en"))
        for name, score in scorers.items():
            row = auc_and_cuts(dev, score(texts))
            row["synthetic dev AUC"] = round(
                auc_by_language(synthetic, lambda t, lang, s=score: s(t))["en"], 3
            )
            print(f"{name}: {json.dumps(row)}")


if __name__ == "__main__":
    main()
