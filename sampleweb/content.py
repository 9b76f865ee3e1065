"""Load the hand-written prose pools (content/<lang>.yaml) and validate them with clear errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

CONTENT_DIR = Path(__file__).with_name("content")
LANGS = ("en", "de", "fr", "es", "ja", "zh")
DOC_KINDS = ("article", "reference", "forum", "product", "recipe")
CJK = ("ja", "zh")


@dataclass(frozen=True)
class Doc:
    """One hand-written document: its kind, topic, title, paragraphs and optional list items."""

    id: str
    lang: str
    kind: str
    topic: str
    title: str
    paras: tuple[str, ...]
    items: tuple[str, ...] = ()


@dataclass(frozen=True)
class LangPool:
    """Everything written for one language: documents plus material for the low-quality pages."""

    lang: str
    docs: tuple[Doc, ...]
    spam_keywords: tuple[str, ...]
    boilerplate: tuple[str, ...]
    repeated: tuple[str, ...]
    garbled: tuple[str, ...]
    pii_lines: tuple[str, ...]
    decoy_lines: tuple[str, ...]
    ui: dict[str, str] = field(default_factory=dict)


def _need(data: dict, key: str, path: Path, minimum: int = 1) -> list:
    value = data.get(key)
    if not isinstance(value, list) or len(value) < minimum:
        raise ValueError(f"{path}: field {key!r} must be a list of at least {minimum} entries")
    return value


def load_pool(lang: str, directory: Path = CONTENT_DIR) -> LangPool:
    """Parse and validate one language's content file."""
    path = directory / f"{lang}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"{path}: missing content file for language {lang!r}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    if not isinstance(data, dict) or data.get("lang") != lang:
        raise ValueError(f"{path}: top-level 'lang' must be {lang!r}")
    docs = []
    for i, raw in enumerate(_need(data, "docs", path)):
        where = f"{path}: docs[{i}]"
        if raw.get("kind") not in DOC_KINDS:
            raise ValueError(f"{where}.kind must be one of {DOC_KINDS}, got {raw.get('kind')!r}")
        paras = raw.get("paras")
        if (
            not isinstance(paras, list)
            or len(paras) < 2
            or not all(isinstance(p, str) for p in paras)
        ):
            raise ValueError(f"{where}.paras must be a list of at least 2 strings")
        for key in ("title", "topic"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise ValueError(f"{where}.{key} must be a non-empty string")
        docs.append(
            Doc(
                id=f"{lang}-{i:03d}",
                lang=lang,
                kind=raw["kind"],
                topic=raw["topic"],
                title=raw["title"].strip(),
                paras=tuple(" ".join(p.split()) for p in paras),
                items=tuple(raw.get("items") or ()),
            )
        )
    return LangPool(
        lang=lang,
        docs=tuple(docs),
        spam_keywords=tuple(_need(data, "spam_keywords", path, 12)),
        boilerplate=tuple(_need(data, "boilerplate", path, 8)),
        repeated=tuple(_need(data, "repeated", path, 2)),
        garbled=tuple(_need(data, "garbled", path, 2)),
        pii_lines=tuple(_need(data, "pii_lines", path, 2)),
        decoy_lines=tuple(_need(data, "decoy_lines", path, 2)),
        ui=dict(data.get("ui") or {}),
    )


@cache
def load_all(directory: Path = CONTENT_DIR) -> dict[str, LangPool]:
    """All language pools, cached (the files never change at run time)."""
    return {lang: load_pool(lang, directory) for lang in LANGS}


def word_count(text: str, lang: str) -> int:
    """Words for space-separated languages, characters for Chinese and Japanese."""
    if lang in CJK:
        return sum(1 for ch in text if not ch.isspace())
    return len(text.split())
