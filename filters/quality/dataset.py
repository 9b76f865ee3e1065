"""`TrainingSet`: the labelled texts of one model and the unlabelled crawl it is calibrated on."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class TrainingSet:
    """Labelled texts of one language plus the unlabelled crawl sample used for calibration."""

    lang: str
    texts: list[str]
    labels: list[int]
    source: str
    calibration: list[str]
    # Optional group key per labelled text (e.g. the source document or near-duplicate cluster);
    # examples of one group always share an OOF fold. Without it groups are inferred (see
    # `filters.quality.folds._oof_groups`).
    groups: list[str] | None = None
    # Append layout tokens (`filters.quality.features.shape_tokens`) to every example; stored as `shape_features`.
    shape_features: bool = False
    # Per-example language for tokenising (a multilingual set mixes scripts); default `lang`.
    text_langs: list[str] | None = None

    # Per-calibration-document language (multilingual sets); default `lang`.
    calibration_langs: list[str] | None = None
    # Rows a label source could not label ({'id', 'url', 'reason'}: a grader answer without a
    # grade); recorded in the model's meta, not in the training set or its sha256.
    ungraded: list[dict] = field(default_factory=list)

    def lang_of(self, i: int) -> str:
        """The language example `i` is tokenised as."""
        return self.text_langs[i] if self.text_langs is not None else self.lang

    def calibration_lang(self, j: int) -> str:
        """The language calibration document `j` is tokenised as."""
        return self.calibration_langs[j] if self.calibration_langs is not None else self.lang

    def subset(self, idx: Sequence[int]) -> TrainingSet:
        """The labelled examples `idx` (same calibration crawl and settings)."""
        pick = list(idx)
        return TrainingSet(
            self.lang,
            [self.texts[i] for i in pick],
            [self.labels[i] for i in pick],
            self.source,
            self.calibration,
            groups=[self.groups[i] for i in pick] if self.groups is not None else None,
            shape_features=self.shape_features,
            text_langs=[self.text_langs[i] for i in pick] if self.text_langs is not None else None,
            calibration_langs=self.calibration_langs,
        )

    def sha256(self) -> str:
        """Content hash of the labelled examples (order-independent)."""
        h = hashlib.sha256()
        for line in sorted(f"{y}\t{t}" for t, y in zip(self.texts, self.labels, strict=True)):
            h.update(line.encode())
            h.update(b"\n")
        return h.hexdigest()
