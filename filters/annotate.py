"""The per-document filter step: URL filter, language, PII scrub, heuristics, decontamination,
safety and quality score.

`DocumentAnnotator.annotate(row)` returns the row with `lang`, `lang_score`, `quality_score`,
`quality_model`, `pii_found`, `drop_reason`, `heuristic_drop`, `rescued`, `consent_reason`,
`url_block`, `contaminated`, `contamination_benchmarks`, `contamination_ngrams`,
`toxicity_score`, `nsfw_score`, `safety_model` and the scrubbed, boilerplate-stripped `text`. The first failing rule names the drop reason (consent,
then the URL filter's `url_blocked:<category>`, then the rest); all scores are computed
regardless, so a later selection can change its mind without recomputing (annotate, then
select).

Consent (`common.consent.flag_true`): only a `training_allowed` that is the boolean true is
consent. Any other value (the string "false" or "true", 1, None, NaN) drops the row as
`training_not_allowed`; the row goes out with `training_allowed = false` (a real boolean column
whatever the input's type) and `consent_reason` saying what the flag was. So does a row the
consent ledger opts out (`cfg.consent_ledger`, by its id or URL), with the ledger's reason: it
is out before de-duplication, so an allowed copy of its text is kept in its place.

Quality: the language's own model, else the multilingual fallback (`quality_model` says which:
`de:<sha12>` or `multilingual-fallback:<sha12>`). A row no model can score has
`quality_score = None` (NULL in Parquet), never NaN: SQL engines order NaN above every number,
so `quality_score >= 0.5` would be true for it. A row with no text left (empty on input, or
only boilerplate once stripped) drops as `empty_text` with `lang = "und"`, `lang_score = 0.0`
and no scores: quality, model and safety are null.

Safety: the toxicity and NSFW classifiers (`filters.toxicity`) score every row whose language
has a model (null otherwise, never NaN); a row is dropped as `toxic` or `nsfw` only when
`safety.max_toxicity` / `safety.max_nsfw` is set and reached. The word lists (`unsafe_content`)
judge the languages the classifiers do not fully cover (`safety.wordlists`).

Rescue (the report's "model signals instead of aggressive rules"): when a relaxed heuristic in
`quality.rescue_reasons` fires but the quality score is at least the language's rescue score,
the row is kept; `heuristic_drop` records the rule that fired (on every row where one fired)
and `rescued` is true.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from common.consent import FLAG, Consent, describe_flag, flag_true
from common.langid import LanguageIdentifier
from filters import heuristics, pii
from filters.config import FilterConfig
from filters.decontam import Decontaminator
from filters.quality import QualityModel
from filters.quality.default import QualityScorer
from filters.safety import SafetyFilter
from filters.toxicity import SafetyClassifiers
from filters.urls import UrlFilter, is_url_reason

# Output columns the filter adds to every row (besides replacing `text`), with their types:
# the one definition (`filters.pipeline.output_schema` builds the output schema from it).
ADDED_COLUMNS: dict[str, pa.DataType] = {
    "lang": pa.string(),
    "lang_score": pa.float64(),
    "quality_score": pa.float64(),
    "quality_model": pa.string(),
    "pii_found": pa.int64(),
    "drop_reason": pa.string(),
    "duplicate_of": pa.string(),
    "heuristic_drop": pa.string(),  # relaxed rule that fired (kept if `rescued`)
    "rescued": pa.bool_(),
    # Why the row's own flag is not consent ("training_allowed is 'false' (str), not the boolean
    # true", "... is NaN", ...); null when it is the boolean true (common.consent).
    "consent_reason": pa.string(),
    # What put the URL on a blocklist or banned it (filters.urls: "domain d", "url u",
    # "banned_word w", ...); null when it passed.
    "url_block": pa.string(),
    # Benchmark decontamination (filters.decontam): false, null and 0 when no eval set is given.
    "contaminated": pa.bool_(),
    "contamination_benchmarks": pa.string(),  # the eval sets, comma-joined
    "contamination_ngrams": pa.int64(),  # distinct n-grams of the text found in eval sets
    # Safety classifiers (filters.toxicity): P(toxic) and P(obscene) of the text, scored by
    # window: the worst of up to 3 windows, a longer text's k-th worst (k = max(2,
    # ceil(windows / 20)), `toxicity.document_score`); null where the language has no model.
    # `safety_model` names what judged the row ("toxicity.en:<sha12>,nsfw.en:<sha12>",
    # "wordlist:ja", ...); null when nothing did.
    "toxicity_score": pa.float64(),
    "nsfw_score": pa.float64(),
    "safety_model": pa.string(),
}
# Input columns the filter rewrites with its own type: `text` (scrubbed, a string) and
# `training_allowed` (the boolean the consent rule read: true only for the boolean true).
REWRITTEN_COLUMNS: dict[str, pa.DataType] = {"text": pa.string(), FLAG: pa.bool_()}


# Drop reasons checked before the heuristics (a rescue cannot change them); url_blocked:* too.
_BEFORE_HEURISTICS = frozenset(
    {"training_not_allowed", "empty_text", "unsupported_language", "low_lang_score", "contaminated"}
)


class DocumentAnnotator:
    """Loads every model once (langid, quality per language, word lists) and annotates rows."""

    def __init__(
        self,
        cfg: FilterConfig,
        models_dir: str | Path | None = None,
        fallback_dir: str | Path | None = None,
    ):
        self.cfg = cfg
        # The consent ledger's opt-outs (cfg.consent_ledger), read once per annotator.
        self.consent = Consent.load(None, cfg.consent_ledger) if cfg.consent_ledger else None
        self.langid = LanguageIdentifier()
        self._last_lang: tuple[str, tuple[str, float]] | None = None
        self.safety = SafetyFilter(cfg.safety)
        self.classifiers = (
            SafetyClassifiers(cfg.safety.models_dir or None) if cfg.safety.classifiers else None
        )
        self.urls = UrlFilter(cfg.urls) if cfg.urls.enabled else None
        self.decontam = Decontaminator(cfg.decontamination) if cfg.decontamination.evals else None
        self.scorer = QualityScorer(
            models_dir, cfg.languages, fallback_dir or cfg.quality.fallback_models_dir or None
        )
        self.models: dict[str, QualityModel] = self.scorer.models
        self.thresholds = {lang: self._threshold(lang, m) for lang, m in self.models.items()}
        # Configured languages without a model of their own are cut on the fallback's scale.
        if self.scorer.fallback is not None:
            for lang in cfg.languages:
                if lang not in self.thresholds:
                    self.thresholds[lang] = self._threshold(lang, self.scorer.fallback)

    def language(self, text: str) -> tuple[str, float]:
        """The language ID of `text`; the last text's is kept, because the line
        de-duplication asks again for a text it just asked about (`linededup.annotate_row`)."""
        last = self._last_lang
        if last is not None and (last[0] is text or last[0] == text):
            return last[1]
        found = self.langid.predict(text)
        self._last_lang = (text, found)
        return found

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
        # Consent: only the boolean true is (common.consent); "false", 1, None, NaN are no. The
        # row goes out with a real boolean and, when it is not consent, the reason.
        flag = row.get(FLAG)
        out[FLAG] = flag_true(flag)
        out["consent_reason"] = None if out[FLAG] else describe_flag(flag)
        if out[FLAG] and self.consent is not None:  # the ledger can only take a row out
            why = self.consent.why_not(row)
            if why is not None:
                out[FLAG], out["consent_reason"] = False, why
        blocked = self.urls.check(row.get("url")) if self.urls is not None else None
        out["url_block"] = blocked[1] if blocked else None
        text = row.get("text") or ""
        lang, lang_score = self.language(text)
        out["lang"], out["lang_score"] = lang, lang_score
        if self.cfg.pii:
            text, counts = pii.scrub(text, lang, regions=self.cfg.pii_regions)
            out["pii_found"] = sum(counts.values())
        else:
            out["pii_found"] = 0
        hcfg = self.cfg.heuristics_for(lang)
        text, heuristic_reason = heuristics.check(text, lang, hcfg)
        out["text"] = text
        empty = not text.strip()
        if empty:
            # Empty on input or once its boilerplate is gone: what is left has no language and
            # nothing to score (`und` and 0.0, as language ID says of empty text).
            lang, lang_score = "und", 0.0
            out["lang"], out["lang_score"] = lang, lang_score
        # No model at all (no own model, no fallback): unscored, NULL, never dropped on quality.
        scores, name = ([None], None) if empty else self.scorer.score([text], lang)
        out["quality_score"], out["quality_model"] = scores[0], name
        out["contaminated"], out["contamination_benchmarks"], out["contamination_ngrams"] = (
            self.decontam.check(text) if self.decontam is not None else (False, None, 0)
        )
        safety, used = (
            self.classifiers.score(text, lang)
            if self.classifiers is not None and not empty
            else ({}, [])
        )
        out["toxicity_score"] = safety.get("toxicity")
        out["nsfw_score"] = safety.get("nsfw")
        wordlist = self._wordlist_applies(lang)
        if wordlist:
            used.append(f"wordlist:{lang}")
        out["safety_model"] = ",".join(used) or None
        out["heuristic_drop"] = heuristic_reason
        out["rescued"] = False
        if heuristic_reason and self._rescues(lang, heuristic_reason, scores[0]):
            out["rescued"] = True
            heuristic_reason = None
        out["drop_reason"] = self._reason(
            out,
            lang,
            lang_score,
            text,
            heuristic_reason,
            out["quality_score"],
            blocked[0] if blocked else None,
            out["contaminated"] and self.cfg.decontamination.drop,
            (out["toxicity_score"], out["nsfw_score"], wordlist),
        )
        if out["rescued"] and (
            out["drop_reason"] in _BEFORE_HEURISTICS or is_url_reason(out["drop_reason"])
        ):
            out["rescued"] = False  # dropped before the heuristics counted: nothing was rescued
        out["duplicate_of"] = None
        return out

    def rescue_score(self, lang: str) -> float | None:
        """The score at or above which a rescuable heuristic drop of `lang` is overridden."""
        q = self.cfg.quality
        return q.rescue_by_lang[lang] if lang in q.rescue_by_lang else q.rescue_score

    def _rescues(self, lang: str, reason: str, q: float | None) -> bool:
        cut = self.rescue_score(lang)
        return (
            cut is not None
            and q is not None
            and reason in self.cfg.quality.rescue_reasons
            and q >= cut
        )

    def _reason(
        self,
        row: dict,
        lang: str,
        lang_score: float,
        text: str,
        heuristic: str | None,
        q: float | None,
        url_blocked: str | None = None,
        contaminated: bool = False,
        safety: tuple[float | None, float | None, bool] = (None, None, True),
    ) -> str | None:
        if not flag_true(row.get(FLAG)):
            return "training_not_allowed"
        if url_blocked:
            return url_blocked
        if not text.strip():
            return "empty_text"
        if lang not in self.cfg.languages:
            return "unsupported_language"
        if lang_score < self.cfg.min_lang_score:
            return "low_lang_score"
        if contaminated:
            return "contaminated"
        if heuristic:
            return heuristic
        unsafe = self._unsafe(text, lang, *safety)
        if unsafe:
            return unsafe
        if heuristics.no_sentences(text, lang, self.cfg.heuristics_for(lang)):
            return "no_sentences"
        if lang in self.thresholds and q is not None and q < self.thresholds[lang]:
            return "low_quality"
        return None

    def _wordlist_applies(self, lang: str) -> bool:
        """Whether the word lists judge `lang` (safety.wordlists: fallback, always or off).
        In `fallback` they step aside only where classifiers of every kind score the language
        and both cuts are set, that is where the classifiers decide instead."""
        s = self.cfg.safety
        if s.wordlists == "off":
            return False
        covered = (
            self.classifiers is not None
            and self.classifiers.covers(lang)
            and s.max_toxicity is not None
            and s.max_nsfw is not None
        )
        return (s.wordlists == "always" or not covered) and self.safety.has_list(lang)

    def _unsafe(
        self, text: str, lang: str, tox: float | None, nsfw: float | None, wordlist: bool
    ) -> str | None:
        """`toxic` or `nsfw` past the configured cut, else the word lists' `unsafe_content`."""
        s = self.cfg.safety
        if s.max_toxicity is not None and tox is not None and tox >= s.max_toxicity:
            return "toxic"
        if s.max_nsfw is not None and nsfw is not None and nsfw >= s.max_nsfw:
            return "nsfw"
        return self.safety.check(text, lang) if wordlist else None
