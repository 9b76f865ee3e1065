"""Knowledge-domain selection: alt-text keywords first, then CLIP similarity to the domain's
category prompts against a margin over the other domains, with the evidence for each decision.

The spec is YAML (filters/images/domains.yaml is an example):

    margin: 0.02            # optional; else DomainSelectConfig.margin
    min_similarity: 0.2     # optional; else DomainSelectConfig.min_similarity
    domains:
      maps:
        keywords: {en: [map, atlas, "street map*"], de: [Karte, Stadtplan], ja: [地図]}
        prompts: ["a map", "a street map of a city"]
        margin: 0.03        # optional, this domain only

Keywords are matched case-insensitively on the caption (else the alt text): whole words for
scripts with spaces (a trailing `*` allows any word ending: `chart*` matches "charts"), and as
substrings for Han, kana and Hangul, which are written without spaces. Each image is scored once
against every prompt of every domain by the `similarity(image_paths, prompts) -> array (images x
prompts)` callable (a CLIP model); a domain's similarity is the maximum over its prompts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from common import yamlio
from filters.config import ConfigError
from filters.images.config import DomainSelectConfig

Similarity = Callable[[Sequence[str], Sequence[str]], np.ndarray]

DOMAIN_IMAGES = pa.schema(
    [
        ("id", pa.string()),
        ("domain", pa.string()),
        ("keyword_hits", pa.list_(pa.string())),
        ("clip_similarity", pa.float64()),
        ("selected", pa.bool_()),
        ("reason", pa.string()),
    ]
)
# Reason codes; the reason string starts with one of them, followed by ": " and the figures.
REASONS = ("selected", "keyword_only", "no_image", "low_similarity", "within_margin")

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DomainSpec(_Strict):
    """One domain: keywords per language code, CLIP prompts, optional own thresholds."""

    keywords: dict[str, list[str]] = Field(min_length=1)
    prompts: list[str] = Field(min_length=1)
    margin: float | None = Field(None, ge=0)
    min_similarity: float | None = Field(None, ge=-1, le=1)

    @field_validator("keywords")
    @classmethod
    def _keywords(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for lang, words in v.items():
            if not words or any(not isinstance(w, str) or not w.strip(" *") for w in words):
                raise ValueError(f"keywords.{lang}: give a non-empty list of non-empty keywords")
        return v

    @field_validator("prompts")
    @classmethod
    def _prompts(cls, v: list[str]) -> list[str]:
        if any(not p.strip() for p in v):
            raise ValueError("prompts: every prompt must be non-empty text")
        return v


class DomainsSpec(_Strict):
    """The whole YAML spec."""

    domains: dict[str, DomainSpec] = Field(min_length=1)
    margin: float | None = Field(None, ge=0)
    min_similarity: float | None = Field(None, ge=-1, le=1)


def load_domain_spec(path: str | Path) -> DomainsSpec:
    """Load and validate a domain spec; errors name the file and each bad field."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: domain spec not found")
    try:
        data = yamlio.load_file(path)
    except yamlio.YamlFileError as exc:
        raise ConfigError(str(exc)) from None
    return domain_spec_from_dict(data, str(path))


def domain_spec_from_dict(data: object, source: str = "<domains>") -> DomainsSpec:
    """Validate a spec mapping (see the module docstring for its shape)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping with `domains:`")
    try:
        return DomainsSpec.model_validate(data)
    except ValidationError as exc:
        from common.errors import validation_problems

        raise ConfigError(
            f"{source}: invalid domain spec: {validation_problems(exc, model=DomainsSpec)}"
        ) from exc


def _keyword_pattern(keyword: str) -> re.Pattern[str]:
    word = keyword.strip().casefold()
    prefix = word.endswith("*")
    word = word.rstrip("*").strip()
    body = r"\s+".join(re.escape(part) for part in word.split())
    if _CJK.search(word):
        return re.compile(body)
    tail = r"[^\W_]*" if prefix else ""
    return re.compile(rf"(?<![^\W_]){body}{tail}(?![^\W_])")


class KeywordMatcher:
    """Compiled keywords of every domain of a spec."""

    def __init__(self, spec: DomainsSpec):
        self.patterns: dict[str, list[tuple[str, re.Pattern[str]]]] = {
            name: [(kw, _keyword_pattern(kw)) for words in d.keywords.values() for kw in words]
            for name, d in spec.domains.items()
        }

    def hits(self, text: str | None) -> dict[str, list[str]]:
        """Domain -> the spec's keywords found in `text` (domains without a hit are absent)."""
        folded = (text or "").casefold()
        out: dict[str, list[str]] = {}
        if not folded:
            return out
        for name, patterns in self.patterns.items():
            found = list(dict.fromkeys(kw for kw, pat in patterns if pat.search(folded)))
            if found:
                out[name] = found
        return out


def _domain_scores(
    spec: DomainsSpec, paths: list[str], similarity: Similarity, batch_size: int
) -> dict[str, dict[str, float]]:
    """Image path -> domain -> max similarity over the domain's prompts."""
    names = list(spec.domains)
    prompts = [p for n in names for p in spec.domains[n].prompts]
    owner = np.array([i for i, n in enumerate(names) for _ in spec.domains[n].prompts])
    out: dict[str, dict[str, float]] = {}
    for start in range(0, len(paths), batch_size):
        chunk = paths[start : start + batch_size]
        sims = np.asarray(similarity(chunk, prompts), dtype=np.float64)
        if sims.shape != (len(chunk), len(prompts)):
            raise ValueError(
                f"similarity scorer returned shape {sims.shape} for {len(chunk)} images x "
                f"{len(prompts)} prompts; it must return one row per image, one column per prompt"
            )
        for path, row in zip(chunk, sims, strict=True):
            out[path] = {n: float(row[owner == i].max()) for i, n in enumerate(names)}
    return out


def select_domains(
    rows: Iterable[Mapping],
    spec: DomainsSpec,
    similarity: Similarity | None,
    image_root: str | Path = ".",
    cfg: DomainSelectConfig | None = None,
) -> list[dict]:
    """Pairs rows (`id`, `caption` or `alt`, `image_path` relative to `image_root`, optional
    `drop_reason`) to DOMAIN_IMAGES rows: one per (kept pair, domain whose keywords its caption
    hits). Rows with a `drop_reason` are skipped.

    With a scorer, a row is selected for its domain when the domain's similarity is at least
    `min_similarity` and beats the best OTHER domain of the spec (keyword hit or not) by more
    than `margin`; `clip_similarity` is the domain's similarity. Without one (None), every
    keyword hit is selected with reason `keyword_only` and a null similarity. A row without an
    image file is not selected (`no_image`)."""
    cfg = cfg or DomainSelectConfig()
    matcher = KeywordMatcher(spec)
    candidates: list[tuple[Mapping, str, list[str]]] = []
    for row in rows:
        if row.get("drop_reason") is not None:
            continue
        text = row.get("caption") if row.get("caption") is not None else row.get("alt")
        for domain, hits in matcher.hits(text).items():
            candidates.append((row, domain, hits))
    root = Path(image_root)
    scores: dict[str, dict[str, float]] = {}
    if similarity is not None:
        paths = list(
            dict.fromkeys(
                str(root / r["image_path"]) for r, _, _ in candidates if r.get("image_path")
            )
        )
        scores = _domain_scores(spec, paths, similarity, cfg.batch_size)
    out = []
    for row, domain, hits in candidates:
        d = spec.domains[domain]
        margin = next(m for m in (d.margin, spec.margin, cfg.margin) if m is not None)
        floor = next(
            m for m in (d.min_similarity, spec.min_similarity, cfg.min_similarity) if m is not None
        )
        sim = None
        if not row.get("image_path"):
            selected, reason = False, "no_image: the pair has no stored image"
        elif similarity is None:
            selected, reason = True, f"keyword_only: {', '.join(hits)}"
        else:
            by_domain = scores[str(root / row["image_path"])]
            sim = by_domain[domain]
            others = {n: s for n, s in by_domain.items() if n != domain}
            rival, rival_sim = max(others.items(), key=lambda kv: kv[1], default=(None, -math.inf))
            versus = f"{rival} {rival_sim:.3f}" if rival else "no other domain"
            if sim < floor:
                selected, reason = False, f"low_similarity: {sim:.3f} < {floor:.3f}"
            elif sim - rival_sim <= margin:
                selected = False
                reason = f"within_margin: {sim:.3f} vs {versus} (margin {margin:.3f})"
            else:
                selected = True
                reason = f"selected: {sim:.3f} >= {floor:.3f}; vs {versus} (margin {margin:.3f})"
        out.append(
            {
                "id": row["id"],
                "domain": domain,
                "keyword_hits": hits,
                "clip_similarity": sim,
                "selected": selected,
                "reason": reason,
            }
        )
    return out


def domain_table(rows: list[dict]) -> pa.Table:
    """Rows of select_domains as an Arrow table of DOMAIN_IMAGES's schema."""
    return pa.Table.from_pylist(rows, schema=DOMAIN_IMAGES)
