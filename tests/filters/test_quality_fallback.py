"""The multilingual fallback in languages it never saw: trained and cut leave-one-language-out.

Its cut used to come from documents of the languages it was trained on (1e-5: it dropped no
keyword spam in Russian or Korean, and dropped prose under a heading); now it is read off scores
of languages each fold model never saw, which is the fallback's whole use.
"""

import json
import random
import re

import pytest

from filters.labels import LabelOptions, build_training_set
from filters.quality import TrainingSet, roc_auc
from filters.quality.default import FALLBACK_NAME, fallback_recipe, load_fallback
from filters.quality.folds import language_folds
from tests.filters.heldout_quality import FALLBACK_GOOD

GOAL = 0.85


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text) if len(w) > 2]


def _layouts(paragraphs: list[str]) -> list[str]:
    """Good pages of one language: as written, one sentence per line, under headings."""
    sentences = [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+", p) if s]
    titled = [x for p in paragraphs for x in (" ".join(p.split()[:3]).rstrip(",."), p)]
    return [*paragraphs, "\n".join(paragraphs), "\n".join(sentences), "\n".join(titled)]


def _junk(paragraphs: list[str], rng: random.Random) -> list[str]:
    """Bad pages from the same words: keyword-stuffed sentences, a bare keyword list and a
    menu dump (none of them is how the fallback's training builds its junk)."""
    words = sorted(set(_words(" ".join(paragraphs))))
    out = []
    for _ in range(3):
        kw = rng.sample(words, 12)
        out.append(
            "\n".join(
                f"{a} {b} {c} best {a} cheap {b} {c} online {a}."
                for a, b, c in zip(kw, kw[1:], kw[2:], strict=False)
            )
        )
        few = rng.sample(words, 5)
        out.append("\n".join(", ".join(rng.choice(few) for _ in range(9)) for _ in range(7)))
        menu = [w.capitalize() for w in rng.sample(words, 10)]
        out.append("\n".join([*menu, " · ".join(menu[:6]), *menu[::-1]]))
    return out


@pytest.fixture(scope="module")
def fallback(models_dir):
    return load_fallback(models_dir)


def test_the_fallback_is_cut_on_languages_it_never_saw(models_dir, fallback):
    meta = json.loads((models_dir / f"{FALLBACK_NAME}.json").read_text())
    langs = sorted(json.loads((models_dir / "build.json").read_text())["languages"])
    assert meta["threshold_method"] == "positive_recall_lolo"
    assert meta["oof"]["folds_by"] == "language"
    # one fold model per language, each trained without it: the ensemble is those models
    assert sorted(x for fold in meta["oof"]["fold_languages"] for x in fold) == langs
    assert all(len(fold) == 1 for fold in meta["oof"]["fold_languages"])
    assert len(meta["ensemble"]) == len(langs)
    low = {k: v for k, v in meta["oof"]["auc_by_language"].items() if v is None or v < GOAL}
    assert not low, f"leave-one-language-out AUC below {GOAL}: {low}"
    # a cut that drops something: the old in-language keep-rate cut was 1e-5
    assert 0.01 < fallback.threshold < 0.9


@pytest.mark.parametrize("lang", sorted(FALLBACK_GOOD))
def test_unseen_language_prose_is_kept_and_junk_dropped(fallback, lang):
    good = _layouts(FALLBACK_GOOD[lang])
    bad = _junk(FALLBACK_GOOD[lang], random.Random(lang))
    sg, sb = fallback.score(good, lang), fallback.score(bad, lang)
    assert roc_auc([1] * len(sg) + [0] * len(sb), sg + sb) >= GOAL
    cut = fallback.threshold
    assert [round(s, 3) for s in sg if s < cut] == [], f"good {lang} pages dropped at {cut:.3g}"
    assert [round(s, 3) for s in sb if s >= cut] == [], f"{lang} junk kept at {cut:.3g}"


def test_language_folds_hold_out_whole_languages():
    ts = TrainingSet(
        "multilingual",
        ["a", "b", "c", "d", "e", "f"],
        [1, 0, 1, 0, 1, 0],
        "x",
        ["p", "q", "r"],
        text_langs=["de", "de", "fr", "fr", "ja", "ja"],
        calibration_langs=["ja", "de", "fr"],
    )
    tfold, cfold = language_folds(ts, 3)
    assert tfold[0] == tfold[1] and tfold[2] == tfold[3] and tfold[4] == tfold[5]
    assert len({tfold[0], tfold[2], tfold[4]}) == 3
    assert cfold == [tfold[4], tfold[0], tfold[2]]


def test_fallback_recipe_relaid_positives_and_layout_junk(labelled_docs):
    assert fallback_recipe(labelled_docs, "de") == "graded+layout"
    assert fallback_recipe([r for r in labelled_docs if r["quality"] != "low"], "de") == (
        "reference+layout"
    )
    for lang in ("de", "ja"):
        ts = build_training_set(labelled_docs, lang, "graded+layout", LabelOptions(seed=0))
        again = build_training_set(labelled_docs, lang, "graded+layout", LabelOptions(seed=0))
        assert ts.texts == again.texts and ts.shape_features
        base = build_training_set(labelled_docs, lang, "graded", LabelOptions(seed=0))
        n_pos = sum(base.labels)
        relaid = [i for i, g in enumerate(ts.groups) if g.endswith("|layout")]
        # relaid passages are positives in their own group (one recall unit per document)
        assert relaid and all(ts.labels[i] == 1 for i in relaid)
        assert sum(ts.labels) == n_pos + len(relaid)
        # each positive passage: a shuffle and (when long enough) a keyword list and a menu
        assert len(ts.texts) - len(base.texts) - len(relaid) >= 2 * n_pos
