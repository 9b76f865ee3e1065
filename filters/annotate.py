"""The per-document filter step: language, PII scrub, heuristics, safety and quality score.

`DocumentAnnotator.annotate(row)` returns the row with `lang`, `lang_score`, `quality_score`,
`quality_model`, `pii_found`, `drop_reason` and the scrubbed, boilerplate-stripped `text`.
The first failing rule names the drop reason; all scores are computed regardless, so a
later selection can change its mind without recomputing (annotate, then select).
"""

from __future__ import annotations

import math
from pathlib import Path

from filters import heuristics, pii
from filters.config import FilterConfig
from filters.langid import LanguageIdentifier
from filters.quality import QualityModel, load_models
from filters.safety import SafetyFilter

# Output columns the filter adds to every row (besides replacing `text`).
ADDED_COLUMNS = (
    "lang",
    "lang_score",
    "quality_score",
    "quality_model",
    "pii_found",
    "drop_reason",
    "duplicate_of",
)


class DocumentAnnotator:
    """Loads every model once (langid, quality per language, word lists) and annotates rows."""

    def __init__(self, cfg: FilterConfig, models_dir: str | Path | None = None):
        self.cfg = cfg
        self.langid = LanguageIdentifier()
        self.safety = SafetyFilter(cfg.safety)
        self.models: dict[str, QualityModel] = load_models(models_dir, cfg.languages)
        self.thresholds = {lang: self._threshold(lang, m) for lang, m in self.models.items()}

    def _threshold(self, lang: str, model: QualityModel) -> float:
        t = self.cfg.quality.thresholds.get(lang)
        if t is None:
            return model.threshold
        if t.score is not None:
            return t.score
        if t.keep_rate is not None:
            return model.score_for_keep_rate(t.keep_rate)
        return model.score_for_positive_recall(t.positive_recall)

    def annotate(self, row: dict) -> dict:
        """Annotate one document row (a dict with at least id, url, text, training_allowed)."""
        out = dict(row)
        text = row.get("text") or ""
        lang, lang_score = self.langid.predict(text)
        out["lang"], out["lang_score"] = lang, lang_score
        if self.cfg.pii:
            text, counts = pii.scrub(text, lang)
            out["pii_found"] = sum(counts.values())
        else:
            out["pii_found"] = 0
        hcfg = self.cfg.heuristics_for(lang)
        text, heuristic_reason = heuristics.check(text, lang, hcfg)
        out["text"] = text
        model = self.models.get(lang)
        if model is not None:
            out["quality_score"] = model.score([text])[0]
            out["quality_model"] = f"{lang}:{model.meta.get('training_set_sha256', '')[:12]}"
        else:
            # Documented fallback: no model for this language -> unscored (NaN), never dropped on it.
            out["quality_score"] = math.nan
            out["quality_model"] = None
        out["drop_reason"] = self._reason(
            row, lang, lang_score, text, heuristic_reason, out["quality_score"]
        )
        out["duplicate_of"] = None
        return out

    def _reason(
        self, row: dict, lang: str, lang_score: float, text: str, heuristic: str | None, q: float
    ) -> str | None:
        if not row.get("training_allowed"):
            return "training_not_allowed"
        if not text.strip():
            return "empty_text"
        if lang not in self.cfg.languages:
            return "unsupported_language"
        if lang_score < self.cfg.min_lang_score:
            return "low_lang_score"
        if heuristic:
            return heuristic
        unsafe = self.safety.check(text, lang)
        if unsafe:
            return unsafe
        if lang in self.thresholds and not math.isnan(q) and q < self.thresholds[lang]:
            return "low_quality"
        return None
