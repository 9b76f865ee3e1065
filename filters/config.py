"""Filter configuration: one YAML file validated by pydantic, with per-language overrides.

Errors name the offending field (pydantic's location path), so a bad YAML is fixed in one go.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from common import yamlio

# Languages written without spaces between words: lengths and shingles count characters.
CHAR_LANGS = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo", "wuu", "yue"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HeuristicsConfig(_Strict):
    """Relaxed Gopher-style rules; each produces its own drop reason."""

    min_words: int = Field(30, ge=0)
    max_words: int = Field(200_000, ge=1)
    min_chars_cjk: int = Field(80, ge=0)
    max_symbol_ratio: float = Field(0.25, ge=0, le=1)
    max_dup_line_frac: float = Field(0.4, ge=0, le=1)
    max_dup_ngram_frac: float = Field(0.25, ge=0, le=1)
    dup_ngram_n: int = Field(3, ge=1, le=10)
    # Share of characters in mojibake sequences (UTF-8 read as Latin-1/cp1252: "Ã©", "â€™") or
    # U+FFFD replacement characters; above it the document is dropped as `encoding_errors`.
    max_mojibake_ratio: float = Field(0.01, ge=0, le=1)
    max_boilerplate_line_frac: float = Field(0.6, ge=0, le=1)
    # A document of at least this many lines (Markdown table rows not counted) none of which ends
    # a sentence (., !, ?, 。, ！, ？, ।, ؟, ... or a closing quote or bracket after one) is a
    # keyword list, not text: dropped as `no_sentences` (FineWeb's line-punctuation rule, at its
    # most lenient). Checked after the safety step. 0: off.
    min_lines_no_sentences: int = Field(3, ge=0)
    # Languages whose sentences end without punctuation (Thai, Lao, Khmer): never checked.
    no_sentences_exempt: list[str] = Field(default_factory=lambda: ["th", "lo", "km"])
    # Per-language line lexicons (`<lang>.txt`, one regex per line, case-insensitive) applied on
    # top of `boilerplate_patterns`; empty = the shipped filters/boilerplate/ directory.
    boilerplate_lexicon: bool = True
    boilerplate_lexicon_dir: str = ""
    boilerplate_patterns: list[str] = Field(
        default_factory=lambda: [
            r"(?i)\b(we use cookies|this (web)?site uses cookies|cookie (policy|settings|preferences|consent)|accept all( cookies)?)\b",
            r"(?i)\ball rights reserved\b",
            r"(?i)^(home|menu|login|log in|sign in|sign up|subscribe|share|next|previous|back to top)$",
            r"(?i)\b(privacy policy|terms of (use|service))\b",
            r"^©",
        ]
    )


class SafetyConfig(_Strict):
    """Toxicity and NSFW classifiers (`filters.toxicity`: scores in `toxicity_score` and
    `nsfw_score`, drops only past a configured cut) and the per-language word lists
    (filters/wordlists/<lang>.txt unless wordlist_dir is set)."""

    # Score every row whose language has a shipped (or models_dir) classifier.
    classifiers: bool = True
    models_dir: str = ""  # empty: the shipped filters/toxicity_model/
    # Drop as `toxic` / `nsfw` when the score is at least this; null: annotate only.
    max_toxicity: float | None = Field(None, ge=0, le=1)
    max_nsfw: float | None = Field(None, ge=0, le=1)
    # fallback: the word lists judge languages the classifiers do not cover for every kind;
    # always: every language with a list; off: never.
    wordlists: Literal["fallback", "always", "off"] = "fallback"
    wordlist_dir: str = ""
    max_flagged_ratio: float = Field(0.01, ge=0, le=1)
    min_flagged: int = Field(3, ge=1)


class Threshold(_Strict):
    """A language's quality cut: a score; a target keep-rate of the crawl, mapped through the
    model's out-of-fold crawl quantiles; or a target recall of the positive (reference) class,
    mapped through the model's out-of-fold positive quantiles."""

    score: float | None = Field(None, ge=0, le=1)
    keep_rate: float | None = Field(None, gt=0, le=1)
    positive_recall: float | None = Field(None, gt=0, le=1)

    @model_validator(mode="after")
    def _one_of(self) -> Threshold:
        if sum(v is not None for v in (self.score, self.keep_rate, self.positive_recall)) != 1:
            raise ValueError("set exactly one of `score`, `keep_rate` or `positive_recall`")
        return self


# Relaxed-heuristic drops a confident quality score may override by default (the report's
# lesson: model signals rescue good pages that rules drop). Not by default:
# - repeated_lines, repeated_ngrams: fastText scores the MEAN of a text's embeddings, which is
#   the same for a sentence and that sentence repeated six times, so its score is no evidence
#   against repetition (on the sample web, rescuing them kept 3,576 tokens of repeated-sentence
#   pages and no good page: bench/filter.py --selection-only, session 3);
# - boilerplate (the page is mostly chrome), encoding_errors (damaged text), too_long.
# Any of them may be listed in quality.rescue_reasons.
RESCUABLE_REASONS = ("too_short", "symbol_ratio")
HEURISTIC_REASONS = frozenset(
    {
        *RESCUABLE_REASONS,
        "repeated_lines",
        "repeated_ngrams",
        "boilerplate",
        "encoding_errors",
        "too_long",
    }
)
# Default rescue score: chosen on the dev split of tests/filters/heldout_quality.py (see
# docs/filters.md), never on the benchmark that judges it.
DEFAULT_RESCUE_SCORE = 0.5


# Label sources a default quality set may use (those that need nothing but the labelled rows).
DEFAULT_SET_SOURCES = ("reference", "reference+shuffled", "graded", "graded+shuffled")


def check_default_label_sources(label_sources: dict[str, str]) -> None:
    """ValueError naming the key of the first label source a default set cannot use."""
    for lang, source in label_sources.items():
        if source not in DEFAULT_SET_SOURCES:
            raise ValueError(
                f"quality.default_label_sources.{lang}: {source!r} is not a label source of "
                f"the default set; use one of {', '.join(DEFAULT_SET_SOURCES)}"
            )


class QualityConfig(_Strict):
    """Quality classifiers: per-language cuts (default: the model's own), the default models
    and the multilingual fallback, and the rescue of heuristic drops by confident scores."""

    thresholds: dict[str, Threshold] = Field(default_factory=dict)
    # Without --models: the default set (sample-web reference pages, built on first use under
    # <lake>/models/quality/default). False: no default models (rows are unscored, NULL).
    use_default_models: bool = True
    # The default set's label source per language over its built-in recipe
    # (`filters.quality.default.RECIPES`: en graded+shuffled, the others reference+shuffled);
    # `*` names every language not named. A changed table builds its own set (the key hashes it).
    default_label_sources: dict[str, str] = Field(default_factory=dict)
    # Where `multilingual.bin` is read when the models directory has none; empty: the stage
    # fills in the default set's directory.
    fallback_models_dir: str = ""
    # A rescuable heuristic drop is overridden when quality_score >= this; null: never.
    rescue_score: float | None = Field(DEFAULT_RESCUE_SCORE, ge=0, le=1)
    rescue_by_lang: dict[str, float | None] = Field(default_factory=dict)
    rescue_reasons: list[str] = Field(default_factory=lambda: list(RESCUABLE_REASONS))

    @model_validator(mode="after")
    def _known_reasons(self) -> QualityConfig:
        check_default_label_sources(self.default_label_sources)
        unknown = sorted(set(self.rescue_reasons) - HEURISTIC_REASONS)
        if unknown:
            raise ValueError(
                f"rescue_reasons: unknown heuristic reason(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(HEURISTIC_REASONS))}"
            )
        for lang, v in self.rescue_by_lang.items():
            if v is not None and not 0 <= v <= 1:
                raise ValueError(f"rescue_by_lang.{lang}: must be in [0, 1] or null, got {v}")
        return self


class DedupConfig(_Strict):
    """Exact, URL and MinHash near-duplicate settings."""

    exact: bool = True
    url: bool = True
    near: bool = True
    num_perm: int = Field(128, ge=16, le=1024)
    # 32 bands x 4 rows puts the LSH S-curve near J = 0.45: syndicated copies that drop a
    # paragraph of four share about half their shingles and must still meet.
    bands: int = Field(32, ge=1)
    rows: int = Field(4, ge=1)
    word_ngram: int = Field(5, ge=1, le=20)
    char_ngram: int = Field(5, ge=1, le=20)
    jaccard_threshold: float = Field(0.5, gt=0, le=1)
    seed: int = 1

    @model_validator(mode="after")
    def _bands_fit(self) -> DedupConfig:
        if self.bands * self.rows > self.num_perm:
            raise ValueError(
                f"bands*rows = {self.bands * self.rows} exceeds num_perm = {self.num_perm}"
            )
        return self


class UrlFilterConfig(_Strict):
    """The URL filter, first of the steps (`filters.urls`): blocklists in the UT1 layout and
    FineWeb's banned words on the URL. Lists are read at run start (cached by file mtime)."""

    enabled: bool = True
    # A directory of category directories holding `domains` / `urls` files (the UT1 layout);
    # empty: the generated default lists (reserved names only, `common.urlblock.default_entries`)
    # when `default_lists` is on.
    blocklist_dir: str = ""
    default_lists: bool = True
    categories: list[str] | None = None  # only these categories of blocklist_dir; null: all
    banned_words: bool = True
    # hard.txt, soft.txt, subword.txt (one word a line); empty: common.urlblock.DEFAULT_WORDS
    words_dir: str = ""
    soft_word_threshold: int = Field(2, ge=1)


class EvalSet(_Strict):
    """One evaluation set to decontaminate against: a JSONL or Parquet file."""

    path: str = Field(min_length=1)
    name: str = ""  # empty: the file name without extensions
    fields: list[str] | None = None  # empty: decontamination.fields


class DecontamConfig(_Strict):
    """Benchmark decontamination (`filters.decontam`): n-gram overlap with eval sets. Off until
    eval sets are given (here or `refinery filter --decontaminate FILE`)."""

    evals: list[EvalSet] = Field(default_factory=list)
    # The item fields whose text is indexed, joined in this order (a list of strings counts as
    # its items): question, answer and context under the names the common benchmarks use.
    fields: list[str] = Field(
        default_factory=lambda: [
            "question",
            "answer",
            "context",
            "passage",
            "choices",
            "text",
        ],
        min_length=1,
    )
    ngram: int = Field(13, ge=3, le=64)  # tokens per n-gram of a text mostly of words
    ngram_chars: int = Field(13, ge=3, le=64)  # ... of a text mostly of CJK/Thai characters
    min_ngrams: int = Field(1, ge=1)  # matching n-grams of one eval set that mark a document
    drop: bool = False  # drop marked documents (reason `contaminated`); default: annotate only

    @model_validator(mode="before")
    @classmethod
    def _paths(cls, data):
        if isinstance(data, dict) and isinstance(data.get("evals"), list):
            data = dict(data)
            data["evals"] = [{"path": e} if isinstance(e, str) else e for e in data["evals"]]
        return data


class LineDedupConfig(_Strict):
    """Line de-duplication across documents (`filters.linededup`): a line (paragraph) that at
    least `threshold` distinct documents contain is removed from all of them. The threshold is
    `min_doc_share` of the input's documents, at least `min_docs` and at most `max_docs`
    (null: no cap). The floor spares what a handful of pages share in a small corpus (on the
    sample web, syndicated copies share paragraphs with up to 3 others); the share raises it as
    the corpus grows, so a story syndicated to dozens of sites is left to the MinHash
    de-duplication, which keeps one copy; the cap keeps a site's footer on its few hundred pages
    removable in a corpus of millions."""

    enabled: bool = True
    min_docs: int = Field(10, ge=2)
    min_doc_share: float = Field(0.005, ge=0, le=1)
    max_docs: int | None = Field(100, ge=2)


class FilterConfig(_Strict):
    """The whole filter stage configuration."""

    languages: list[str] = Field(default_factory=lambda: ["en", "de", "fr", "es", "zh", "ja"])
    min_lang_score: float = Field(0.5, ge=0, le=1)
    pii: bool = True
    # Regions (ISO 3166 alpha-2) whose national phone formats are read after those of the
    # document's language and scripts; None keeps filters.pii.DEFAULT_REGIONS.
    pii_regions: list[str] | None = None
    heuristics: HeuristicsConfig = Field(default_factory=HeuristicsConfig)
    # Per language: the fields to change from `heuristics`; the others are `heuristics`' own
    # (merged when the config is read, `_inherit_heuristics`).
    heuristics_by_lang: dict[str, HeuristicsConfig] = Field(default_factory=dict)
    safety: SafetyConfig = Field(default_factory=SafetyConfig)
    quality: QualityConfig = Field(default_factory=QualityConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    line_dedup: LineDedupConfig = Field(default_factory=LineDedupConfig)
    urls: UrlFilterConfig = Field(default_factory=UrlFilterConfig)
    decontamination: DecontamConfig = Field(default_factory=DecontamConfig)
    # The consent ledger files whose opt-outs the filter applies (common.consent.Consent): a
    # row they opt out is `training_not_allowed` before de-duplication, so an allowed copy of
    # its text is kept instead. run_filter adds the run's lake's and the input's lake's.
    consent_ledger: list[str] = Field(default_factory=list)

    @field_validator("pii_regions")
    @classmethod
    def _regions(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        import phonenumbers

        bad = [r for r in v if r.upper() not in phonenumbers.SUPPORTED_REGIONS]
        if bad:
            raise ValueError(f"unknown region code(s) {bad}; use ISO 3166 alpha-2 codes like 'JP'")
        return [r.upper() for r in v]

    @model_validator(mode="after")
    def _inherit_heuristics(self) -> FilterConfig:
        """Each `heuristics_by_lang` override becomes `heuristics` with only the fields the
        override sets replaced, so `de: {min_words: 40}` keeps the user's other rules, not the
        built-in defaults. A merged override sets every field, so reading a dumped config
        again (the Beam workers do) gives the same config."""
        self.heuristics_by_lang = {
            lang: self.heuristics.model_copy(
                update={f: getattr(o, f) for f in o.model_fields_set}, deep=True
            )
            for lang, o in self.heuristics_by_lang.items()
        }
        return self

    def heuristics_for(self, lang: str) -> HeuristicsConfig:
        """The heuristics of one language: its override (merged over `heuristics`), else
        `heuristics`."""
        return self.heuristics_by_lang.get(lang, self.heuristics)

    def language_fields(self) -> list[tuple[str, str, str]]:
        """Every language code the config names, as (field path, code, what a wrong code costs):
        `languages` and each per-language key or list (`heuristics.no_sentences_exempt`,
        `heuristics_by_lang` and an override's own exempt list, `quality.thresholds`,
        `quality.rescue_by_lang`, `quality.default_label_sources` but its `*`). The filter
        checks them against the language identifier's codes (`filters.run.check_languages`)."""
        kept, never = "no document would be kept in it", "the setting would never apply"
        out = [(f"languages.{i}", lang, kept) for i, lang in enumerate(self.languages)]
        base = self.heuristics.no_sentences_exempt
        out += [(f"heuristics.no_sentences_exempt.{i}", x, never) for i, x in enumerate(base)]
        for key, h in self.heuristics_by_lang.items():
            out.append((f"heuristics_by_lang.{key}", key, never))
            out += [
                (f"heuristics_by_lang.{key}.no_sentences_exempt.{i}", x, never)
                for i, x in enumerate(h.no_sentences_exempt)
                if x not in base  # the inherited ones are checked above
            ]
        q = self.quality
        out += [(f"quality.thresholds.{key}", key, never) for key in q.thresholds]
        out += [(f"quality.rescue_by_lang.{key}", key, never) for key in q.rescue_by_lang]
        out += [
            (f"quality.default_label_sources.{key}", key, never)
            for key in q.default_label_sources
            if key != "*"
        ]
        return out


class ConfigError(ValueError):
    """A configuration file that does not validate; the message names each bad field."""


def load_config(path: str | Path | None = None) -> FilterConfig:
    """Load and validate a YAML filter config; None gives the defaults."""
    if path is None:
        return FilterConfig()
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: filter config not found")
    try:
        data = yamlio.load_file(path) or {}
    except yamlio.YamlFileError as exc:
        raise ConfigError(str(exc)) from None
    return config_from_dict(data, source=str(path))


def config_from_dict(data: dict, source: str = "<config>") -> FilterConfig:
    """Validate a config mapping; errors list `field.path: message` for every problem."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping, got {type(data).__name__}")
    try:
        return FilterConfig.model_validate(data)
    except ValidationError as exc:
        from common.errors import validation_problems

        raise ConfigError(
            f"{source}: invalid filter config: {validation_problems(exc, model=FilterConfig)}"
        ) from exc
