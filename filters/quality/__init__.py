"""Per-language fastText quality classifiers: training, evaluation, metadata and scoring.

A model is `<name>.bin` with `<name>.json` beside it (language, label source, training-set
hash, threshold, held-out metrics and score quantiles on the unlabelled crawl used to map a
target keep-rate to a score) and, when out-of-fold training was possible, its OOF_FOLDS fold
models `<name>.fold<k>.ftz`, whose mean is the score. `quality_score` is P(high quality) in
[0, 1]. Thresholds are set on out-of-fold scores (see `filters.quality.train`).

Modules, each importing only those above it:
- `features`: the tokenised fastText line a document becomes, and its layout tokens;
- `metrics`: ROC AUC, precision and recall;
- `scorer`: `QualityModel` (a model and its metadata), `score_mixed`, `load_models`;
- `dataset`: `TrainingSet`, the labelled texts and calibration crawl of one model;
- `fit`: fastText parameters and the training of one model;
- `folds`: grouped folds, the held-out split and out-of-fold scores;
- `train`: `train_model` (cut rules and the metadata it writes).

The default models, found without flags, are in `filters.quality.default`.
"""

from filters.quality.dataset import TrainingSet
from filters.quality.features import MAX_TOKENS, NEG, POS, fasttext_line, shape_tokens
from filters.quality.fit import FASTTEXT_PARAMS, QUANTIZE_CUTOFF
from filters.quality.folds import GROUP_LINE_CHARS, MIN_PER_CLASS, OOF_FOLDS, out_of_fold_scores
from filters.quality.metrics import precision_recall, roc_auc
from filters.quality.scorer import QualityModel, load_models, metadata_path, score_mixed
from filters.quality.train import (
    DEFAULT_KEEP_RATE,
    DEFAULT_POSITIVE_RECALL,
    MIN_CALIBRATION,
    _cut_for_recall,
    train_model,
)

__all__ = [
    "DEFAULT_KEEP_RATE",
    "DEFAULT_POSITIVE_RECALL",
    "FASTTEXT_PARAMS",
    "GROUP_LINE_CHARS",
    "MAX_TOKENS",
    "MIN_CALIBRATION",
    "MIN_PER_CLASS",
    "NEG",
    "OOF_FOLDS",
    "POS",
    "QUANTIZE_CUTOFF",
    "QualityModel",
    "TrainingSet",
    "_cut_for_recall",
    "fasttext_line",
    "load_models",
    "metadata_path",
    "out_of_fold_scores",
    "precision_recall",
    "roc_auc",
    "score_mixed",
    "shape_tokens",
    "train_model",
]
