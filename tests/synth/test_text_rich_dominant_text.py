"""`ignores_dominant_text` (synth/text_rich.py `caption_flag`): a caption of an image mostly of
text names that text only through a content word of it (or a number, or a proper token such as
"UK"); a function word the caption shares with the text ("the", "over", "with"; "die", "dans",
"para" in the text's or the caption's language) names nothing. Text in a script without spaces
keeps its runs whole."""

from __future__ import annotations

import pytest

from synth.text_rich import Selection, caption_flag

# tesseract's phototest.tif as OCR reads it (a third of the image is text)
PHOTOTEST = (
    "This is a lot of 12 point text to test the\nocr code and see if it works on all types\n"
    "of file format.\nThe quick brown dog jumped over the\nlazy fox. The quick brown dog jumped\n"
    "over the lazy fox."
)


def _ocr(text: str, language: str | None, share: float = 0.32) -> dict:
    return {"text": text, "language": language, "confidence": 0.93, "text_share": share}


@pytest.mark.parametrize(
    "caption, ocr",
    [
        # before: "the", "over", "with" of the text counted as naming it
        ("A sunset near the ocean", _ocr(PHOTOTEST, "en")),
        ("A sunset over an ocean", _ocr(PHOTOTEST, "en")),
        ("A sunset near an ocean, with the sky", _ocr(PHOTOTEST, "en")),
        ("A sunset near the ocean", _ocr(PHOTOTEST, None)),  # language unknown: every list
        # the text's language: German "die", French "dans", Spanish "para"
        (
            "Ein Sonnenuntergang über dem Meer, die Wellen",
            _ocr("Die Bibliothek ist von Montag bis Freitag geöffnet", "de"),
        ),
        ("Un chat qui dort dans la maison", _ocr("Le menu du jour est servi dans la salle", "fr")),
        ("Un perro esperando para cruzar la calle", _ocr("Horario para visitas del museo", "es")),
        # the caption's language: "die" is an English word of the text, a German one here
        ("Eine Katze auf dem Sofa, die schläft", _ocr("Do not let the batteries die", "en")),
        ("海辺の夕日", _ocr("東京タワーの夜景", "ja")),
    ],
)
def test_a_caption_sharing_only_function_words_with_the_text_is_flagged(caption, ocr):
    got = caption_flag(caption, ocr, Selection())
    assert got is not None and got.startswith("ignores_dominant_text"), got


@pytest.mark.parametrize(
    "caption, ocr",
    [
        ("A dog running on grass", _ocr(PHOTOTEST, "en")),  # "dog" is a word of the text
        ("A lazy fox", _ocr(PHOTOTEST, "en")),
        ("Ein Plakat der Bibliothek", _ocr("Die Bibliothek ist von Montag bis Freitag", "de")),
        ("A 2024 wall planner", _ocr("Kalender 2024\nJanuar Februar März", "de")),
        ("A map of the UK", _ocr("UK EU NY\n12 45 78", "en")),  # a proper token of two
        ("東京タワーの夜景の写真", _ocr("東京タワーの夜景", "ja")),  # a run without spaces
        ("A page of printed text", _ocr(PHOTOTEST, "en")),  # names the text itself
    ],
)
def test_a_caption_naming_a_content_word_of_the_text_is_not_flagged(caption, ocr):
    assert caption_flag(caption, ocr, Selection()) is None
