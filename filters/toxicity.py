"""Toxicity and NSFW classifiers: per-language fastText models shipped in filters/toxicity_model/.

A model is `<kind>.<lang>.ftz` (kind `toxicity` or `nsfw`) listed in the directory's
`models.json`, which names what it was trained on (repository, commit, licence, sha256 of each
source file) and its held-out precision and recall; `scripts/build_toxicity_models.py` rebuilds
them. A document is scored sentence by sentence (windows of at most `WINDOW` tokens), and its
score is taken from its worst windows, never their average (`document_score`): a post or a
short comment of up to `SHORT` windows scores its worst; a longer page its second worst, and
a very long one its k-th worst, one per `PER_WINDOWS` windows. So toxic text is not averaged
away by the prose around it, and one sentence the model misreads (at the 0.9 cut, 2 in 1,000
ordinary German sentences, 27 before toxicity.de learnt from German web prose) does not make an ordinary page toxic. Languages without a model get
no score (None, NULL in Parquet, never NaN) and keep the word lists (`filters.safety`).
"""

from __future__ import annotations

import heapq
import json
import math
import re
from pathlib import Path

from filters.heuristics import tokens
from filters.safety import matching_view, strip_latin_marks

DEFAULT_MODEL_DIR = Path(__file__).with_name("toxicity_model")
KINDS = ("toxicity", "nsfw")
POS = "__label__pos"
WINDOW = 64  # tokens per scored window (the training texts are sentences and short posts)
SHORT = 3  # windows of a post or short comment, which scores its worst window
PER_WINDOWS = 20  # a longer page needs one flagged window per this many (and at least two)
# The Latin letters with marks each model's language writes: they stay in its view of a text,
# other Latin letters lose their marks ("kíll" reads "kill"). Other languages keep every mark.
NATIVE_LETTERS = {
    "en": "",
    "de": "äöüÄÖÜ",
    "fr": "àâæçéèêëîïôœùûüÿÀÂÆÇÉÈÊËÎÏÔŒÙÛÜŸ",
    "es": "áéíñóúüÁÉÍÑÓÚÜ",
    "zh": "",
}


class ClassifierModel:
    """One fastText classifier; `score_lines` gives P(positive) of tokenised lines."""

    def __init__(self, path: str | Path, lang: str):
        import fasttext

        self.path, self.lang = Path(path), lang
        if not self.path.exists():
            raise FileNotFoundError(
                f"{self.path}: safety classifier missing; rebuild it with "
                "`python scripts/build_toxicity_models.py` or set safety.classifiers: false"
            )
        fasttext.FastText.eprint = lambda *a, **k: None
        self._model = fasttext.load_model(str(self.path))

    def score_lines(self, lines: list[str]) -> list[float]:
        """P(positive) of each tokenised line (0.0 for an empty one)."""
        out = [0.0] * len(lines)
        idx = [i for i, line in enumerate(lines) if line]
        if idx:
            labels, probs = self._model.predict([lines[i] for i in idx], k=2)
            for i, labs, ps in zip(idx, labels, probs, strict=True):
                p = dict(zip(labs, ps, strict=True)).get(POS, 0.0)
                out[i] = float(min(1.0, max(0.0, p)))
        return out


# A sentence ends at one of these followed by space (or at once, for the CJK full stops).
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])")


def windows(text: str, lang: str, size: int = WINDOW) -> list[str]:
    """The text's sentences (line by line), tokenised as the models were trained and cut into
    windows of at most `size` tokens (the form `ClassifierModel.score_lines` reads). The
    models learnt from sentences and short posts: a hateful sentence inside a paragraph of
    ordinary prose is scored on its own, not averaged with its neighbours. They read the
    text's matching view (`filters.safety.matching_view`; for a language of `NATIVE_LETTERS`,
    without the marks its alphabet does not write): zero-width, full-width and look-alike
    letters do not hide a word."""
    text = matching_view(text, lang)
    if lang in NATIVE_LETTERS:
        text = strip_latin_marks(text, NATIVE_LETTERS[lang])
    out = []
    for line in text.splitlines():
        for sentence in _SENTENCE.split(line):
            toks = tokens(sentence, lang)
            for i in range(0, len(toks), size):
                out.append(" ".join(toks[i : i + size]))
    return out


def document_score(scores: list[float]) -> float:
    """A document's score from its windows': the worst of up to `SHORT` windows, else the k-th
    worst, k = max(2, ceil(windows / PER_WINDOWS)); 0.0 for none."""
    if len(scores) <= SHORT:
        return max(scores, default=0.0)
    k = max(2, math.ceil(len(scores) / PER_WINDOWS))
    return heapq.nlargest(k, scores)[-1]


class SafetyClassifiers:
    """The toxicity and NSFW models of one directory, by language."""

    def __init__(self, directory: str | Path | None = None):
        self.dir = Path(directory) if directory else DEFAULT_MODEL_DIR
        meta_path = self.dir / "models.json"
        if not meta_path.exists():
            raise FileNotFoundError(
                f"safety.models_dir {self.dir} has no models.json; point it at a directory "
                "written by `python scripts/build_toxicity_models.py` or leave it empty"
            )
        self.meta = json.loads(meta_path.read_text(encoding="utf-8"))
        self.models: dict[tuple[str, str], ClassifierModel] = {}
        self.names: dict[tuple[str, str], str] = {}
        for key, m in sorted(self.meta.get("models", {}).items()):
            if m.get("kind") not in KINDS:
                raise ValueError(f"{meta_path}: models.{key}.kind must be one of {KINDS}")
            k = (m["kind"], m["lang"])
            self.models[k] = ClassifierModel(self.dir / m["file"], m["lang"])
            self.names[k] = f"{key}:{m.get('sha256', '')[:12]}"

    def covers(self, lang: str | None) -> bool:
        """Whether every kind has a model for `lang` (then the word list is not needed)."""
        return all((kind, lang) in self.models for kind in KINDS)

    def score(self, text: str, lang: str | None) -> tuple[dict[str, float | None], list[str]]:
        """Each kind's score of a text (None where `lang` has no model) and the models used."""
        scores: dict[str, float | None] = dict.fromkeys(KINDS)
        used = [k for k in KINDS if (k, lang) in self.models]
        if not used:
            return scores, []
        lines = windows(text, lang or "")
        for kind in used:
            s = self.models[(kind, lang)].score_lines(lines)
            scores[kind] = document_score(s)
        return scores, [self.names[(k, lang)] for k in used]
