"""Loading and applying trained models: `QualityModel`, its metadata file and `load_models`.

A model is `<name>.bin` with `<name>.json` beside it; when the metadata lists an `ensemble`
(the fold models `<name>.fold<k>.ftz`), the score is their mean, else the .bin's own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from filters.quality.features import POS, fasttext_line


def metadata_path(model_path: str | Path) -> Path:
    """Where a model's JSON metadata lives: beside the .bin."""
    return Path(model_path).with_suffix(".json")


class QualityModel:
    """A trained classifier and its metadata; `score` gives P(high quality)."""

    def __init__(self, path: str | Path):
        import fasttext

        self.path = Path(path)
        meta = metadata_path(self.path)
        if not self.path.exists() or not meta.exists():
            raise FileNotFoundError(
                f"quality model {self.path} needs both the .bin and {meta.name}"
            )
        self.meta = json.loads(meta.read_text())
        fasttext.FastText.eprint = lambda *a, **k: None
        self._model = fasttext.load_model(str(self.path))
        self.lang = self.meta["lang"]
        # The scorer: the out-of-fold models listed in the metadata (bagged: the cut was set
        # on their out-of-fold scores, so it is on their scale), else the single model.
        self._members = []
        for name in self.meta.get("ensemble") or []:
            member = self.path.parent / name
            if not member.exists():
                raise FileNotFoundError(
                    f"{meta}: ensemble member {name} is missing beside {self.path.name}; "
                    "copy the whole model directory or retrain the model"
                )
            self._members.append(fasttext.load_model(str(member)))

    @property
    def threshold(self) -> float:
        """The score cut stored with the model."""
        return float(self.meta["threshold"])

    def score_for_keep_rate(self, keep_rate: float) -> float:
        """Score cut that keeps `keep_rate` of the calibration crawl (from stored quantiles)."""
        q = self.meta["calibration_quantiles"]
        return float(np.interp(1.0 - keep_rate, np.linspace(0, 1, len(q)), q))

    def score_for_positive_recall(self, recall: float) -> float:
        """Score cut that keeps `recall` of the positive class, from its stored OOF quantiles."""
        q = self.meta.get("positive_quantiles")
        if not q:
            raise ValueError(
                f"{metadata_path(self.path)}: no `positive_quantiles` (model trained without "
                "out-of-fold scores); set quality.thresholds.<lang>.score or keep_rate, or retrain"
            )
        return float(np.interp(1.0 - recall, np.linspace(0, 1, len(q)), q))

    @property
    def shape(self) -> bool:
        """Whether the model reads layout tokens (`shape_tokens`) after the words."""
        return bool(self.meta.get("shape_features"))

    def score(self, texts: Sequence[str], lang: str | None = None) -> list[float]:
        """P(high quality) for each text: the mean over the ensemble members (or the one model).

        `lang` tokenises the texts as that language (the multilingual fallback model scores
        languages other than its own `lang`); default: the model's language.
        """
        tok_lang = lang or self.lang
        lines = [fasttext_line(t, tok_lang, self.shape) for t in texts]
        out = [0.0] * len(lines)  # an empty text has no evidence of quality: lowest score
        idx = [i for i, line in enumerate(lines) if line]
        if idx:
            models = self._members or [self._model]
            batch = [lines[i] for i in idx]
            total = np.zeros(len(idx))
            for model in models:
                labels, probs = model.predict(batch, k=2)
                total += [
                    dict(zip(labs, ps, strict=True)).get(POS, 0.0)
                    for labs, ps in zip(labels, probs, strict=True)
                ]
            for i, p in zip(idx, total / len(models), strict=True):
                out[i] = float(min(1.0, max(0.0, p)))
        return out


def score_mixed(model: QualityModel, texts: Sequence[str], langs: Sequence[str]) -> list[float]:
    """Scores of texts each tokenised as its own language (one batch per language)."""
    out = [0.0] * len(texts)
    for lang in sorted(set(langs)):
        idx = [i for i, x in enumerate(langs) if x == lang]
        for i, s in zip(idx, model.score([texts[i] for i in idx], lang), strict=True):
            out[i] = s
    return out


def load_models(
    models_dir: str | Path | None, languages: Sequence[str] | None = None
) -> dict[str, QualityModel]:
    """Load `<lang>.bin` models from a directory (missing languages are simply absent)."""
    if not models_dir:
        return {}
    d = Path(models_dir)
    if not d.is_dir():
        raise FileNotFoundError(f"--models {d} is not a directory of <lang>.bin quality models")
    out = {}
    for path in sorted(d.glob("*.bin")):
        if languages is None or path.stem in languages:
            out[path.stem] = QualityModel(path)
    return out
