"""The quality classifier reads a decomposed (NFD) text as the composed one it was trained on."""

from __future__ import annotations

import unicodedata

from filters.quality.features import fasttext_line


def test_a_decomposed_text_is_the_composed_one_to_the_classifier():
    text = "Včera večer jsme šli do města. Tiếng Việt là ngôn ngữ chính thức."
    nfd = unicodedata.normalize("NFD", text)
    assert nfd != text
    for lang in ("cs", "vi"):
        assert fasttext_line(nfd, lang) == fasttext_line(text, lang)
        assert fasttext_line(nfd, lang, shape=True) == fasttext_line(text, lang, shape=True)
