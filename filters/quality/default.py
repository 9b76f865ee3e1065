"""The default quality models: built once from the sample web's reference pages, found without flags.

`ensure_default_models(root, rows)` returns `<root>/<key>/` holding `<lang>.bin` (+ `.json`, fold
models) for every language with reference pages and `multilingual.bin`, the fallback for
languages without a model of their own. `<key>` is the first 12 hex digits of a hash of the
training data (the labelled documents, the recipe version and the fastText parameters), so a
changed sample web or recipe builds a new set beside the old one. Concurrent builders are
serialised by an exclusive lock on `<root>/.lock`; the set is built in a temporary directory
under `root` and renamed into place (atomic on one filesystem), so a reader never sees half a
set. `<root>` is `$REFINERY_QUALITY_DEFAULTS` if set, else what the caller passes (the stage
passes `<lake>/models/quality/default`).

The recipe: per language a label source (`RECIPES`, else `RECIPE`; see `filters.labels`) and
the same fastText training. `reference+shuffled`: passages of the reference pages against
passages of the crawl, plus a word-order shuffle of every reference passage as a negative, with
layout tokens. `graded+shuffled` (English since recipe version 4): pages graded `high` against
pages graded `low`, with the same shuffles and layout tokens. `graded+layout` (German since
recipe version 8): the same grades with plain shuffles, relaid positives (one sentence per
line, titled paragraphs) and junk pages of the positives' own words (`filters.labels.with_layout`):
on real German pages the reference recipe took articles, reviews and press releases for the
sample web's crawl and cut a quarter of them.

The multilingual fallback scores languages whose words it never saw, so it is trained and cut
for that case: it pools every language's examples of `fallback_recipe` (each tokenised as its
own language), its fold models leave one language out each (they are its ensemble), and its cut
keeps DEFAULT_POSITIVE_RECALL of the positive documents as scored by the model that never saw
their language (`threshold_method` `positive_recall_lolo`; `oof.auc_by_language` in its
metadata). Choices were made on the `dev` split
of `tests/filters/heldout_quality.py` (never on its `test` split) and, for English and German,
on real pages (`bench/ablate_quality.py`: readability's hand-extracted pages, and for German
trafilatura's evaluation pages, against the rest of their text; German on the half of the pages
whose file name's sha256 starts with an even byte, the other half judged only).
`quality.default_label_sources` in the filter config names other label sources per language
(`*`: every language not named); the key hashes them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from filters.config import check_default_label_sources
from filters.quality import FASTTEXT_PARAMS, QualityModel, TrainingSet, load_models, train_model

# The label source of every language's default model not named in RECIPES.
RECIPE = "reference+shuffled"
# Per language: on real English pages (bench/ablate_quality.py) graded labels separate
# hand-extracted main content from the rest of the page better than reference pages against the
# crawl, which take good crawl pages as negatives.
# German (since recipe version 8): on real pages (trafilatura's evaluation pages, their main
# content against the rest of the page; `bench/ablate_quality.py --trafilatura-lang de`, the
# dev half of the pages by file name) `reference+shuffled` ranked magazine articles, reviews and
# press releases below the sample web's crawl and its cut dropped a quarter of them (AUC 0.886,
# 76 % kept); grades with relaid positives and junk-page negatives kept 96 % at the same cut
# rule (AUC 0.945) and dropped about as much of the pages' boilerplate.
RECIPES: dict[str, str] = {"en": "graded+shuffled", "de": "graded+layout"}
# 6: layout tokens read the whole text, not its first MAX_TOKENS tokens.
# 7: the fallback trains on FALLBACK_RECIPES with leave-one-language-out folds and cut.
# 8: German trains on `graded+layout`.
RECIPE_VERSION = 8
FALLBACK_NAME = "multilingual"
# The fallback's label source per language, whatever the language's own model uses: graded
# pages where the language has >= 3 graded high and >= 3 graded low (else reference pages
# against the crawl), with relaid positives and junk-page negatives (`filters.labels.with_layout`).
FALLBACK_RECIPES = ("graded+layout", "reference+layout")
ENV_ROOT = "REFINERY_QUALITY_DEFAULTS"
COMPLETE = "build.json"


def default_root(lake_models_dir: str | Path | None = None) -> Path:
    """Where default sets live: $REFINERY_QUALITY_DEFAULTS, else `<lake models>/default`."""
    env = os.environ.get(ENV_ROOT)
    if env:
        return Path(env)
    if lake_models_dir is None:
        raise ValueError(
            f"no place for the default quality models: set ${ENV_ROOT} or pass the lake's "
            "models/quality directory"
        )
    return Path(lake_models_dir) / "default"


def recipes(label_sources: Mapping[str, str] | None = None) -> dict[str, str]:
    """The label source per language: `*` (every language not named) and the named ones; the
    built-in RECIPE and RECIPES with `label_sources` (the filter config's
    `quality.default_label_sources`) over them."""
    overrides = dict(label_sources or {})
    builtin = {"*": RECIPE, **RECIPES}
    # a built-in entry passed back (ensure_default_models hands its resolved table on) is valid
    # even where the filter config may not name its source (`graded+layout`)
    check_default_label_sources({k: v for k, v in overrides.items() if builtin.get(k) != v})
    # `*` replaces the built-in table whole (the per-language entries too)
    out = {"*": overrides["*"]} if "*" in overrides else {"*": RECIPE, **RECIPES}
    out.update({lang: source for lang, source in overrides.items() if lang != "*"})
    return out


def recipe_for(lang: str, label_sources: Mapping[str, str] | None = None) -> str:
    """The label source `lang`'s default model is trained with."""
    table = recipes(label_sources)
    return table.get(lang, table["*"])


def model_languages(rows: list[dict], label_sources: Mapping[str, str] | None = None) -> list[str]:
    """Languages with enough labelled documents for a model of their own: >= 3 reference and
    >= 3 other documents (`reference` recipes), or >= 3 graded high and >= 3 graded low
    (`graded` recipes)."""
    counts: dict[str, dict[str, int]] = {}
    for r in rows:
        lang = r.get("lang")
        if lang and (r.get("text") or "").strip():
            c = counts.setdefault(lang, {})
            kinds = ["ref" if r.get("is_reference") else "crawl", f"q:{r.get('quality')}"]
            for kind in kinds:
                c[kind] = c.get(kind, 0) + 1
    out = []
    for lang, c in counts.items():
        if recipe_for(lang, label_sources).startswith("graded"):
            enough = c.get("q:high", 0) >= 3 and c.get("q:low", 0) >= 3
        else:
            enough = c.get("ref", 0) >= 3 and c.get("crawl", 0) >= 3
        if enough:
            out.append(lang)
    return sorted(out)


def training_key(
    rows: list[dict], seed: int = 0, label_sources: Mapping[str, str] | None = None
) -> str:
    """sha256 of what a default set is trained from: recipe, parameters, seed and documents
    (with the columns the label sources read: reference flag and grade)."""
    h = hashlib.sha256()
    h.update(
        json.dumps(
            [recipes(label_sources), RECIPE_VERSION, FASTTEXT_PARAMS, seed], sort_keys=True
        ).encode()
    )
    for r in sorted(rows, key=lambda r: (str(r.get("id")), r.get("text") or "")):
        h.update(
            json.dumps(
                [
                    r.get("id"),
                    r.get("lang"),
                    bool(r.get("is_reference")),
                    r.get("quality"),
                    r.get("text"),
                ],
                ensure_ascii=False,
            ).encode()
        )
        h.update(b"\n")
    return h.hexdigest()


def fallback_recipe(rows: list[dict], lang: str) -> str:
    """The label source of `lang`'s examples in the fallback: FALLBACK_RECIPES[0] (graded) when
    `lang` has >= 3 documents graded high and >= 3 graded low, else FALLBACK_RECIPES[1]."""
    grades = [
        r.get("quality") for r in rows if r.get("lang") == lang and (r.get("text") or "").strip()
    ]
    graded = grades.count("high") >= 3 and grades.count("low") >= 3
    return FALLBACK_RECIPES[0] if graded else FALLBACK_RECIPES[1]


def multilingual_training_set(
    rows: list[dict],
    langs: Sequence[str],
    seed: int = 0,
    label_sources: Mapping[str, str] | None = None,
) -> TrainingSet:
    """Every language's fallback training set (`fallback_recipe`) pooled; each example keeps its
    language. `label_sources` choose the languages' own models, not the fallback's examples:
    in a language it cannot read the fallback learns layout, and reference pages against the
    crawl taught it that every layout but a reference page's is bad (prose under headings, one
    sentence per line, scored near 0)."""
    from filters.labels import LabelOptions, build_training_set

    texts: list[str] = []
    labels: list[int] = []
    groups: list[str] = []
    text_langs: list[str] = []
    calib: list[str] = []
    calib_langs: list[str] = []
    sources = {lang: fallback_recipe(rows, lang) for lang in langs}
    for lang in langs:
        ts = build_training_set(rows, lang, sources[lang], LabelOptions(seed=seed))
        texts += ts.texts
        labels += ts.labels
        groups += [f"{lang}:{g}" for g in ts.groups or [str(i) for i in range(len(ts.texts))]]
        text_langs += [lang] * len(ts.texts)
        calib += ts.calibration
        calib_langs += [lang] * len(ts.calibration)
    return TrainingSet(
        FALLBACK_NAME,
        texts,
        labels,
        "pooled:" + ",".join(f"{lang}={sources[lang]}" for lang in langs),
        calib,
        groups=groups,
        shape_features=True,
        text_langs=text_langs,
        calibration_langs=calib_langs,
    )


def _build_one(
    out: Path,
    rows: list[dict],
    name: str,
    langs: list[str],
    seed: int,
    label_sources: Mapping[str, str] | None = None,
) -> float:
    """Train one model of the set (a language's, or the fallback) into `out`; its seconds.
    A top-level function: the pool's worker processes run it."""
    from filters.labels import LabelOptions, build_training_set

    t = time.perf_counter()
    if name == FALLBACK_NAME:
        ts = multilingual_training_set(rows, langs, seed, label_sources)
        # its folds leave one language out each: it is cut on languages it never saw
        train_model(ts, out / f"{name}.bin", seed=seed, by_language=True)
    else:
        source = recipe_for(name, label_sources)
        ts = build_training_set(rows, name, source, LabelOptions(seed=seed))
        train_model(ts, out / f"{name}.bin", seed=seed)
    return round(time.perf_counter() - t, 2)


def build_workers() -> int:
    """Processes for a build: the CPUs this process may use, at most 4 (fastText runs each model
    on one thread, so models are built side by side; the files do not depend on it)."""
    return max(1, min(4, len(os.sched_getaffinity(0))))


def build_default_models(
    out: Path,
    rows: list[dict],
    seed: int = 0,
    log: Callable[[str], None] | None = None,
    workers: int | None = None,
    label_sources: Mapping[str, str] | None = None,
) -> dict:
    """Train the per-language models and the multilingual fallback into `out`; return build info.

    Each model is trained on one thread with a fixed seed, so the files are the same whether the
    models are built one after another (`workers=1`) or side by side in worker processes."""
    out.mkdir(parents=True, exist_ok=True)
    langs = model_languages(rows, label_sources)
    if not langs:
        raise ValueError(
            "no language has >= 3 reference and >= 3 other documents (or, for a graded recipe, "
            ">= 3 graded high and >= 3 graded low) to train a default quality model from; pass "
            "--models DIR (refinery quality train) instead"
        )
    names = [FALLBACK_NAME, *langs]  # the fallback's set is the largest: start it first
    workers = min(workers or build_workers(), len(names))
    t0 = time.perf_counter()
    seconds: dict[str, float] = {}
    if workers == 1:
        for name in names:
            seconds[name] = _build_one(out, rows, name, langs, seed, label_sources)
            if log:
                log(f"default quality model {name}: {seconds[name]:.1f} s")
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # spawn: the caller may hold threads (servers, Dagster) that fork would copy mid-state
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            futures = {
                pool.submit(_build_one, out, rows, n, langs, seed, label_sources): n for n in names
            }
            for future in as_completed(futures):
                name = futures[future]
                seconds[name] = future.result()
                if log:
                    log(f"default quality model {name}: {seconds[name]:.1f} s")
    return {
        "recipe": RECIPE,
        "recipes": {lang: recipe_for(lang, label_sources) for lang in langs},
        "recipe_version": RECIPE_VERSION,
        "languages": langs,
        "fallback": f"{FALLBACK_NAME}.bin",
        "fallback_recipes": {lang: fallback_recipe(rows, lang) for lang in langs},
        "seed": seed,
        "build_seconds": round(time.perf_counter() - t0, 2),
        "seconds": {name: seconds[name] for name in sorted(seconds)},
        "workers": workers,
    }


def ensure_default_models(
    root: str | Path,
    rows: list[dict],
    *,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
    label_sources: Mapping[str, str] | None = None,
) -> Path:
    """The default set's directory under `root`, built first if absent (locked, atomic).

    `rows` are the labelled documents (`text`, `lang`, `is_reference`, `quality`, `id`), which
    the caller supplies: the default set is `sampleweb.labels.labelled_documents(0)`. The key
    hashes them, so they are needed on every call, also when the set is already built.
    `label_sources`: per-language label sources over the built-in ones (`recipes`).
    """
    if (
        not isinstance(rows, Sequence)
        or isinstance(rows, str)
        or (rows and not isinstance(rows[0], dict))
    ):
        raise TypeError(
            f"ensure_default_models(root, rows): rows must be a list of dicts (labelled "
            f"documents, e.g. sampleweb.labels.labelled_documents(0)), got {type(rows).__name__}"
        )
    table = recipes(label_sources)  # an unknown label source fails before the lock
    key = training_key(rows, seed, table)[:12]
    root = Path(root)
    target = root / key
    if (target / COMPLETE).exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (target / COMPLETE).exists():  # another process built it while we waited
            return target
        if log:
            log(f"building the default quality models in {target} (first use)")
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=root))
        try:
            info = build_default_models(tmp, rows, seed, log, label_sources=table)
            info.update({"key": key, "training_sha256": training_key(rows, seed, table)})
            (tmp / COMPLETE).write_text(json.dumps(info, indent=2, sort_keys=True))
            if target.exists():  # a half set from a crashed build of an older version
                shutil.rmtree(target)
            os.rename(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def place_set(built: str | Path, dest_root: str | Path) -> Path:
    """`<dest_root>/<key>/`: the built set `built` (`<cache>/<key>/`) placed there, hard-linked
    file by file (copied across filesystems) into a temporary directory and renamed into place
    whole; `built` itself when it already lies there. A lake's dataset is its own directory, so
    what a stage writes beside the models (its manifest) never lands in a cache that other lakes
    share ($REFINERY_QUALITY_DEFAULTS)."""
    built, dest_root = Path(built), Path(dest_root)
    dest = dest_root / built.name
    if dest.resolve() == built.resolve() or (dest / COMPLETE).exists():
        return dest
    dest_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".place-{built.name}-", dir=dest_root))
    try:
        for f in sorted(built.iterdir()):
            if not f.is_file() or f.name == "manifest.json":
                continue
            try:
                os.link(f, tmp / f.name)
            except OSError:
                shutil.copy2(f, tmp / f.name)
        if not (tmp / COMPLETE).exists():
            raise FileNotFoundError(f"{built} has no {COMPLETE}: not a finished default set")
        try:
            os.rename(tmp, dest)
        except OSError:
            if not (dest / COMPLETE).exists():  # not another process placing the same set
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def load_fallback(directory: str | Path | None) -> QualityModel | None:
    """`multilingual.bin` of a directory, if it has one."""
    if not directory:
        return None
    path = Path(directory) / f"{FALLBACK_NAME}.bin"
    return QualityModel(path) if path.exists() else None


class QualityScorer:
    """Per-language models plus the multilingual fallback; says which scored each text.

    `models` come from one directory (the user's `--models`, or the default set); the fallback
    is that directory's `multilingual.bin`, else `fallback_dir`'s.
    """

    def __init__(
        self,
        models_dir: str | Path | None,
        languages: Sequence[str] | None = None,
        fallback_dir: str | Path | None = None,
    ):
        self.models = {k: m for k, m in load_models(models_dir, None).items() if k != FALLBACK_NAME}
        if languages is not None:
            self.models = {k: m for k, m in self.models.items() if k in languages}
        self.fallback = load_fallback(models_dir) or load_fallback(fallback_dir)
        if self.fallback is None and fallback_dir:
            raise FileNotFoundError(
                f"quality.fallback_models_dir {fallback_dir} has no {FALLBACK_NAME}.bin (on a "
                "remote worker the driver's path may not exist); put multilingual.bin with its "
                ".json and fold files into --models, or set quality.use_default_models: false"
            )

    def model_for(self, lang: str | None) -> tuple[QualityModel | None, str | None]:
        """The model that scores `lang` and its `quality_model` name (None, None: unscored)."""
        model = self.models.get(lang or "")
        if model is not None:
            return model, f"{lang}:{model.meta.get('training_set_sha256', '')[:12]}"
        if self.fallback is not None:
            sha = self.fallback.meta.get("training_set_sha256", "")[:12]
            return self.fallback, f"{FALLBACK_NAME}-fallback:{sha}"
        return None, None

    def score(
        self, texts: Sequence[str], lang: str | None
    ) -> tuple[list[float | None], str | None]:
        """Scores of texts of one language (None each when no model applies) and the model name."""
        model, name = self.model_for(lang)
        if model is None:
            return [None] * len(texts), None
        return list(model.score(texts, lang or None)), name


def default_scorer(rows: list[dict], root: str | Path | None = None) -> QualityScorer:
    """A scorer over the default set trained from `rows` (built on first use) under `root`
    (default: $REFINERY_QUALITY_DEFAULTS, else a directory in the system temp dir)."""
    if root is None:
        root = os.environ.get(ENV_ROOT) or Path(tempfile.gettempdir()) / "refinery-quality-defaults"
    return QualityScorer(ensure_default_models(root, rows))
