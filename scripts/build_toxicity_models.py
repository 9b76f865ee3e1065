"""Rebuild the shipped toxicity and NSFW classifiers (`filters/toxicity_model/*.ftz`).

    python scripts/build_toxicity_models.py --sources DIR [--out filters/toxicity_model]

DIR holds plain checkouts of five public repositories (not shipped here; SOURCES names the
commit each model was built from, and `models.json` records every file's sha256):

- `hatecheck-data/` (paul-rottger/hatecheck-data, CC BY 4.0): HateCheck, 3,728 English test
  cases labelled hateful / non-hateful, including counter-speech that quotes hate, reclaimed
  slurs and non-hateful profanity;
- `multilingual-hatecheck/` (rewire-online/multilingual-hatecheck, CC BY 4.0): Multilingual
  HateCheck, the same functional tests written natively in German, French, Spanish, Mandarin
  and six more languages;
- `hate-speech-and-offensive-language/` (t-davidson/..., MIT): Davidson et al. (2017), 24,783
  English tweets labelled hate speech / offensive language / neither by CrowdFlower majority;
- `GermEval-2018-Data/` (uds-lsv/GermEval-2018-Data, CC BY 4.0): GermEval 2018, 8,541 German
  tweets labelled OFFENSE (ABUSE, INSULT, PROFANITY) / OTHER by the task's annotators;
- `trafilatura/` (adbar/trafilatura, Apache 2.0): the web pages of trafilatura's extraction
  benchmark (`tests/evaldata.json`, pages in `tests/eval/` and `tests/cache/`), news, blogs,
  associations' and shops' pages; only German (de) reads them.

Plus the sample web's own hand-written prose (`sampleweb/content/<lang>.yaml`) as ordinary
web text, the negatives a classifier of short social-media posts otherwise never sees. German
also reads the main text of the benchmark's German pages (`trafilatura.extract`; the pages the
language identifier reads as German), cut into sentences: real web prose, which GermEval's
tweets and the hand-written sample web are too few and too alike to stand for.

Labels. toxicity: HateCheck/MHC `hateful` and Davidson `hate speech` are positive; HateCheck
`non-hateful` (counter-speech, reclaimed slurs, neutral mentions of groups, profanity aimed at
no one), Davidson `neither` and sample-web passages are negative. GermEval 2018 (de): ABUSE
and INSULT positive, OTHER negative, PROFANITY (swearing aimed at no one) left out. nsfw (obscene/vulgar
language; English only, as Dolma uses Jigsaw's `obscene` label): Davidson `offensive
language` is positive; Davidson `neither` and sample-web passages negative.

Held-out split: a fifth of the groups (a HateCheck template, a tweet, a sample-web document)
chosen by hash, never trained on; the shipped models are trained on the other four fifths, so
the figures in `models.json` describe exactly the files shipped.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import html
import json
import random
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filters.quality.features import fasttext_line

OUT_DIR = Path(__file__).resolve().parent.parent / "filters" / "toxicity_model"
RECIPE_VERSION = 5
SOURCES = {
    "hatecheck": {
        "repo": "paul-rottger/hatecheck-data",
        "commit": "d84302298ceeb34f4b0dde2d8a1f4932c2caa612",
        "licence": "CC BY 4.0",
        "dir": "hatecheck-data",
        "cite": "Röttger et al. (2021), HateCheck: Functional Tests for Hate Speech Detection Models",
    },
    "mhc": {
        "repo": "rewire-online/multilingual-hatecheck",
        "commit": "a03f2caf2023a402d85064bda243e46d280408f0",
        "licence": "CC BY 4.0",
        "dir": "multilingual-hatecheck",
        "cite": "Röttger et al. (2022), Multilingual HateCheck",
    },
    "davidson": {
        "repo": "t-davidson/hate-speech-and-offensive-language",
        "commit": "cb50f7e9eb855a99abc51423bf40df0e26d6fe30",
        "licence": "MIT",
        "dir": "hate-speech-and-offensive-language",
        "cite": "Davidson et al. (2017), Automated Hate Speech Detection and the Problem of "
        "Offensive Language",
    },
    "germeval2018": {
        "repo": "uds-lsv/GermEval-2018-Data",
        "commit": "9877472d39523effd54cd079b4c61157ed141508",
        "licence": "CC BY 4.0",
        "dir": "GermEval-2018-Data",
        "cite": "Wiegand, Siegel, Ruppenhofer (2018), Overview of the GermEval 2018 Shared Task "
        "on the Identification of Offensive Language",
    },
    "webpages": {
        "repo": "adbar/trafilatura",
        "commit": "e90b0ef51ab026fdb905fb6c5b3c84dd3d784fd5",
        "licence": "Apache 2.0",
        "dir": "trafilatura",
        "cite": "Barbaresi (2021), Trafilatura: A Web Scraping Library and Command-Line Tool for "
        "Text Discovery and Extraction; the web pages of its extraction benchmark",
    },
    "sampleweb": {
        "repo": "this repository",
        "licence": "the project's own",
        "dir": "sampleweb/content",
        "cite": "hand-written prose of the sample web",
    },
}
MHC_FILES = {
    "de": "german",
    "fr": "french",
    "es": "spanish",
    "zh": "mandarin",
}
# One model per (kind, language) with labelled data and ordinary web prose for its negatives.
MODELS = [("toxicity", lang) for lang in ("en", *MHC_FILES)] + [("nsfw", "en")]
GERMEVAL_FILES = ("germeval2018.training.txt", "germeval2018.test.txt")
# HateCheck's non-hateful cases that are negatives for NSFW too (its profanity cases are not).
NSFW_NEGATIVE_FUNCTIONALITIES = frozenset(
    {
        "slur_reclaimed_nh",
        "slur_homonym_nh",
        "counter_quote_nh",
        "counter_ref_nh",
        "ident_neutral_nh",
        "ident_pos_nh",
        "negate_neg_nh",
    }
)
POS, NEG = "__label__pos", "__label__neg"
PARAMS = {
    "dim": 16,
    "epoch": 5,
    "lr": 0.2,
    "wordNgrams": 2,
    "minCount": 1,
    # No character n-grams: with minn 3, maxn 5 the filter's annotate step cost 0.8 ms more per
    # document (bench/filter.py's corpus), with 0 it costs 0.2 ms; held-out figures moved by a
    # few points either way (docs/filters.md).
    "minn": 0,
    "maxn": 0,
    "bucket": 2_000_000,
    "thread": 1,
    "loss": "softmax",
}
QUANTIZE_CUTOFF = 20_000
HELDOUT_SHARE = 5  # one group in five is held out
CUTS = (0.5, 0.8, 0.9)  # score cuts the held-out figures are given at
# Ordinary web prose is the rarer negative in the training set and the commonest input at run
# time: each sample-web example is repeated so the classes it shares words with are not learnt
# as toxic from the short social-media posts alone.
SAMPLEWEB_WEIGHT = 3
# German adds GermEval 2018's ~8,000 tweets, so its prose is rarer still: at weight 3, 3 of the
# 89 held-out sample-web passages (a paragraph on thunderstorms, one on lime trees) scored
# >= 0.5; at 6, none did.
SAMPLEWEB_WEIGHT_BY_LANG = {"de": 6}
# Languages that also learn from the benchmark pages' prose ("webpages"), and how much of it: up
# to this many sentences of each page (the first by sha256 of the text, stable across runs).
# German only: trained on tweets and functional tests, its model scored 36 of 1,000 ordinary
# German sentences (lingua-py's test sentences, never trained on) 0.5 or more, the other
# languages' models none. With 8 sentences a page 6-11 of them did (seeds 0-2), with 24 3.
WEBPAGE_LANGS = ("de",)
WEBPAGE_SENTENCES = 24
WEBPAGE_MIN_WORDS = 3
# Each positive example is repeated this many times (negatives are repeated to balance the
# classes only where they are the fewer). German's web prose makes its negatives outnumber its
# positives about 4 to 1: at 1, Multilingual HateCheck's held-out recall fell from 0.87 to 0.82
# and GermEval's from 0.50 to 0.42; at 3 they are 0.85 and 0.46 (cut 0.5).
POSITIVE_WEIGHT_BY_LANG = {"de": 3}


@dataclass(frozen=True)
class Example:
    """One labelled text, its group (a template, a tweet, a document) and where it came from."""

    text: str
    label: int
    group: str
    source: str
    detail: str = ""  # a HateCheck functionality, a Davidson class


def heldout(group: str) -> bool:
    """Whether a group belongs to the held-out fifth (by hash, stable across runs)."""
    return int(hashlib.sha256(group.encode()).hexdigest()[:8], 16) % HELDOUT_SHARE == 0


def _read_csv(path: Path) -> list[dict]:
    if not path.exists():
        raise FileNotFoundError(f"{path}: missing; check out the source named in SOURCES")
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def hatecheck_examples(sources: Path, lang: str) -> list[Example]:
    """HateCheck (en) or Multilingual HateCheck cases: hateful 1, non-hateful 0."""
    if lang == "en":
        rows = _read_csv(sources / SOURCES["hatecheck"]["dir"] / "test_suite_cases.csv")
        name = "hatecheck"
    else:
        path = (
            sources
            / SOURCES["mhc"]["dir"]
            / "MHC Final Cases"
            / f"hatecheck_cases_final_{MHC_FILES[lang]}.csv"
        )
        rows = _read_csv(path)
        name = "mhc"
    out = []
    for r in rows:
        text = (r.get("test_case") or "").strip()
        if text and r.get("label_gold") in ("hateful", "non-hateful"):
            out.append(
                Example(
                    text,
                    int(r["label_gold"] == "hateful"),
                    f"{name}:{lang}:{r['functionality']}:{r['templ_id']}",
                    name,
                    r["functionality"],
                )
            )
    return out


_MENTION = re.compile(r"(?:\bRT\s+)?@\w+:?|https?://\S+|#")


def clean_tweet(text: str) -> str:
    """A tweet without retweet marks, mentions, links and HTML entities."""
    return " ".join(_MENTION.sub(" ", html.unescape(text)).split()).strip(" !:")


def davidson_examples(sources: Path) -> list[tuple[str, int, str]]:
    """(text, class, id) of every tweet: class 0 hate speech, 1 offensive, 2 neither."""
    rows = _read_csv(sources / SOURCES["davidson"]["dir"] / "data" / "labeled_data.csv")
    out = []
    for r in rows:
        text = clean_tweet(r["tweet"])
        if len(text.split()) >= 3:
            out.append((text, int(r["class"]), r[""]))
    return out


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


# The filter scores scrubbed text: the sample web's PII placeholders as `filters.pii` writes them.
_PLACEHOLDERS = {"email": "<EMAIL>", "phone": "<PHONE>", "ipv4": "<IP>", "iban": "<IBAN>"}


def _fill(line: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: _PLACEHOLDERS.get(m[1], "2024"), line)


def sampleweb_examples(lang: str) -> list[Example]:
    """Ordinary web text as negatives: every paragraph and every sentence of the sample web's
    hand-written documents (grouped by document), and its short lines (cookie banners, contact
    and order lines with PII placeholders, spam keywords; each its own group)."""
    from sampleweb.content import load_pool

    pool = load_pool(lang)
    out = []
    short = (*pool.boilerplate, *pool.pii_lines, *pool.decoy_lines, *pool.spam_keywords)
    for i, line in enumerate(short):
        out.append(Example(_fill(line), 0, f"sampleweb:{lang}:line{i}", "sampleweb", "line"))
    for doc in pool.docs:
        group = f"sampleweb:{lang}:{doc.id}"
        for para in (doc.title, *doc.paras, *doc.items):
            out.append(Example(para, 0, group, "sampleweb", "paragraph"))
            parts = [s for s in _SENTENCE.split(para) if s.strip()]
            if len(parts) > 1:
                out += [Example(s, 0, group, "sampleweb", "sentence") for s in parts]
    return out


def webpage_files(sources: Path) -> list[Path]:
    """The benchmark's pages, each listed once in `tests/evaldata.json` (sorted by name)."""
    root = sources / SOURCES["webpages"]["dir"] / "tests"
    listing = root / "evaldata.json"
    if not listing.exists():
        raise FileNotFoundError(f"{listing}: missing; check out the source named in SOURCES")
    out = []
    for name in sorted({page["file"] for page in json.loads(listing.read_text("utf-8")).values()}):
        path = next(
            (root / d / name for d in ("eval", "cache") if (root / d / name).exists()), None
        )
        if path is None:
            raise FileNotFoundError(
                f"{root}/eval/{name}: missing (nor in tests/cache/); check out the source named "
                "in SOURCES"
            )
        out.append(path)
    return out


def webpage_texts(sources: Path, lang: str) -> dict[Path, str]:
    """The main text (`trafilatura.extract`, comments and tables left out) of each benchmark
    page the language identifier reads as `lang`, by file."""
    import trafilatura

    from common.langid import LanguageIdentifier

    lid = LanguageIdentifier()
    out = {}
    for path in webpage_files(sources):
        text = trafilatura.extract(
            path.read_bytes(), include_comments=False, include_tables=False, deduplicate=False
        )
        if text and lid.predict(text)[0] == lang:
            out[path] = text
    return out


def webpage_examples(sources: Path, lang: str) -> list[Example]:
    """Real web prose as negatives: up to WEBPAGE_SENTENCES sentences (of at least
    WEBPAGE_MIN_WORDS words) of each benchmark page in `lang`, grouped by page."""
    out = []
    root = sources / SOURCES["webpages"]["dir"]
    for path, text in webpage_texts(sources, lang).items():
        sentences = {
            s.strip()
            for line in text.splitlines()
            for s in _SENTENCE.split(line)
            if len(s.split()) >= WEBPAGE_MIN_WORDS
        }
        picked = sorted(sentences, key=lambda s: hashlib.sha256(s.encode()).hexdigest())
        group = f"webpages:{path.relative_to(root)}"
        out += [Example(s, 0, group, "webpages", "sentence") for s in picked[:WEBPAGE_SENTENCES]]
    return out


def germeval_examples(sources: Path) -> list[Example]:
    """GermEval 2018 tweets: ABUSE and INSULT 1, OTHER 0 (PROFANITY, swearing aimed at no one,
    is neither; HateCheck likewise counts such profanity as non-hateful, not as clean)."""
    out = []
    for name in GERMEVAL_FILES:
        path = sources / SOURCES["germeval2018"]["dir"] / name
        if not path.exists():
            raise FileNotFoundError(f"{path}: missing; check out the source named in SOURCES")
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            text, coarse, fine = line.rsplit("\t", 2)
            text = clean_tweet(text.replace("|LBR|", " "))
            if fine == "PROFANITY" or len(text.split()) < 3:
                continue
            label = int(coarse == "OFFENSE")
            out.append(Example(text, label, f"germeval2018:{name}:{i}", "germeval2018", fine))
    return out


def examples(sources: Path, kind: str, lang: str) -> list[Example]:
    """The labelled set of one model."""
    out = sampleweb_examples(lang)
    if kind == "toxicity":
        out += hatecheck_examples(sources, lang)
        if lang == "de":
            out += germeval_examples(sources)
        if lang in WEBPAGE_LANGS:
            out += webpage_examples(sources, lang)
        if lang == "en":
            for text, cls, tid in davidson_examples(sources):
                if cls != 1:  # offensive-only tweets are neither hate nor clean
                    out.append(
                        Example(text, int(cls == 0), f"davidson:{tid}", "davidson", str(cls))
                    )
    else:
        for text, cls, tid in davidson_examples(sources):
            if cls != 0:
                out.append(Example(text, int(cls == 1), f"davidson:{tid}", "davidson", str(cls)))
        # Identity words in ordinary, reclaimed, quoted or counter-speech use are not obscene.
        out += [
            e
            for e in hatecheck_examples(sources, lang)
            if not e.label and e.detail in NSFW_NEGATIVE_FUNCTIONALITIES
        ]
    return out


def _train(train: list[Example], lang: str, seed: int, out: Path):
    import fasttext

    fasttext.FastText.eprint = lambda *a, **k: None
    web = SAMPLEWEB_WEIGHT_BY_LANG.get(lang, SAMPLEWEB_WEIGHT)
    pos_weight = POSITIVE_WEIGHT_BY_LANG.get(lang, 1)
    weight = {e: web if e.source == "sampleweb" else pos_weight if e.label else 1 for e in train}
    pos = sum(w for e, w in weight.items() if e.label)
    neg = sum(w for e, w in weight.items() if not e.label)
    # Classes balanced (negatives repeated): the prior of a text the model knows nothing about
    # is then even, not the share of hateful cases in HateCheck (two thirds).
    neg_times = max(1, round(pos / max(neg, 1)))
    lines = []
    for e, w in weight.items():
        line = fasttext_line(e.text, lang)
        if line:
            lines += [f"{POS if e.label else NEG} {line}\n"] * (w if e.label else w * neg_times)
    random.Random(seed).shuffle(lines)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        path.write_text("".join(lines), encoding="utf-8")
        model = fasttext.train_supervised(input=str(path), seed=seed, verbose=0, **PARAMS)
        model.quantize(
            input=str(path),
            qnorm=True,
            retrain=True,
            cutoff=QUANTIZE_CUTOFF,
            epoch=PARAMS["epoch"],
            lr=PARAMS["lr"],
            thread=1,
            verbose=0,
        )
    model.save_model(str(out))
    return model


def prf(scores: list[float], labels: list[int], cut: float) -> dict:
    """Precision, recall and counts of `score >= cut` against the labels."""
    tp = sum(s >= cut and y for s, y in zip(scores, labels, strict=True))
    fp = sum(s >= cut and not y for s, y in zip(scores, labels, strict=True))
    fn = sum(s < cut and y for s, y in zip(scores, labels, strict=True))
    return {
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "positives": tp + fn,
        "negatives": len(labels) - tp - fn,
        "false_positives": fp,
    }


def evaluate(path: Path, test: list[Example], lang: str) -> dict:
    """Held-out figures at each of CUTS: overall and per source."""
    from filters.toxicity import ClassifierModel

    model = ClassifierModel(path, lang)
    scores = model.score_lines([fasttext_line(e.text, lang) for e in test])
    out = {}
    for cut in CUTS:
        at = out[str(cut)] = {"all": prf(scores, [e.label for e in test], cut)}
        for src in sorted({e.source for e in test}):
            idx = [i for i, e in enumerate(test) if e.source == src]
            at[src] = prf([scores[i] for i in idx], [test[i].label for i in idx], cut)
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_files(sources: Path) -> dict[str, str]:
    """sha256 of every source file read, by path relative to the sources directory; the
    benchmark's pages (990) as one entry: the sha256 of their `sha256sum` listing (lines
    `<sha256>  <path>`, sorted by path)."""
    files = [
        sources / SOURCES["hatecheck"]["dir"] / "test_suite_cases.csv",
        sources / SOURCES["davidson"]["dir"] / "data" / "labeled_data.csv",
        *(
            sources / SOURCES["mhc"]["dir"] / "MHC Final Cases" / f"hatecheck_cases_final_{n}.csv"
            for n in MHC_FILES.values()
        ),
        *(sources / SOURCES["germeval2018"]["dir"] / n for n in GERMEVAL_FILES),
        sources / SOURCES["webpages"]["dir"] / "tests" / "evaldata.json",
    ]
    out = {str(f.relative_to(sources)): _sha256(f) for f in files}
    pages = sorted(str(f.relative_to(sources)) for f in webpage_files(sources))
    listing = "".join(f"{_sha256(sources / f)}  {f}\n" for f in pages)
    key = f"{SOURCES['webpages']['dir']}/tests/{{eval,cache}}/*.html ({len(pages)} pages, listing)"
    out[key] = hashlib.sha256(listing.encode()).hexdigest()
    return out


def build(
    sources: Path, out: Path, seed: int = 0, train: bool = True, only: set[str] | None = None
) -> dict:
    """Train every model of MODELS into `out` (`train=False`: evaluate the files already
    there) and write `models.json`; return it. `only` (names such as `toxicity.de`): train and
    measure those alone, and keep the other models' entries of `out/models.json` as they are."""
    import trafilatura

    out.mkdir(parents=True, exist_ok=True)
    names = {f"{kind}.{lang}" for kind, lang in MODELS}
    if only is not None and not only <= names:
        raise ValueError(
            f"--only {','.join(sorted(only - names))}: no such model; use one of "
            f"{', '.join(sorted(names))}"
        )
    kept = {}
    if only is not None:
        path = out / "models.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: missing; --only keeps the other models' entries")
        kept = json.loads(path.read_text(encoding="utf-8"))["models"]
    sources_meta = {k: {x: y for x, y in v.items() if x != "dir"} for k, v in SOURCES.items()}
    sources_meta["webpages"]["extracted_with"] = f"trafilatura {trafilatura.__version__}"
    meta: dict = {
        "recipe_version": RECIPE_VERSION,
        "sources": sources_meta,
        "source_files_sha256": source_files(sources),
        "fasttext_params": PARAMS,
        "quantize_cutoff": QUANTIZE_CUTOFF,
        "seed": seed,
        "heldout": f"groups with sha256(group) % {HELDOUT_SHARE} == 0",
        "models": {},
    }
    for kind, lang in MODELS:
        if only is not None and f"{kind}.{lang}" not in only:
            meta["models"][f"{kind}.{lang}"] = kept[f"{kind}.{lang}"]
            continue
        data = examples(sources, kind, lang)
        fit = [e for e in data if not heldout(e.group)]
        test = [e for e in data if heldout(e.group)]
        name = f"{kind}.{lang}.ftz"
        if train:
            _train(fit, lang, seed, out / name)
        meta["models"][f"{kind}.{lang}"] = {
            "file": name,
            "sha256": _sha256(out / name),
            "kind": kind,
            "lang": lang,
            "trained_on": sorted({e.source for e in fit}),
            "train": {"positives": sum(e.label for e in fit), "examples": len(fit)},
            "heldout": evaluate(out / name, test, lang),
        }
        print(name, json.dumps(meta["models"][f"{kind}.{lang}"]["heldout"]), flush=True)
    (out / "models.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return meta


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--sources", required=True, type=Path, help="directory of the checkouts")
    p.add_argument("--out", type=Path, default=OUT_DIR)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--evaluate-only", action="store_true", help="re-measure the files in --out")
    p.add_argument(
        "--only",
        help="comma-separated models to train (e.g. toxicity.de); the others keep their files "
        "and their entries in models.json",
    )
    args = p.parse_args(argv)
    if not args.sources.is_dir():
        print(f"--sources {args.sources}: not a directory of the checkouts", file=sys.stderr)
        return 2
    try:
        only = set(args.only.split(",")) if args.only else None
        build(args.sources, args.out, args.seed, train=not args.evaluate_only, only=only)
    except (FileNotFoundError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
