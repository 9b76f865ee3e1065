"""Alt text cleaning: normalisation, rejections with their detail in several scripts, decoys that
must pass, and lid.176 language labels."""

from __future__ import annotations

import pytest

from filters.images.captions import (
    BAD_CAPTION,
    DETAILS,
    caption_rows,
    clean_caption,
    clean_captions,
    normalise_alt,
)
from filters.images.config import CaptionConfig


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  two\n red\tcircles  ", "two red circles"),
        ("Fish &amp; chips", "Fish & chips"),
        ("Fish &amp;amp; chips", "Fish & chips"),  # double-escaped by a CMS
        ("zero\u200bwidth\u00adsoft", "zerowidthsoft"),
        ("bidi\u202emark\x00nul\x07bell", "bidimarknulbell"),
        ("non\u00a0breaking", "non breaking"),
        ("Cafe\u0301 au lait", "Café au lait"),  # combining accent composed (NFC)
        ("\ufeffBOM first", "BOM first"),
        (None, ""),
    ],
)
def test_normalise_alt(raw, expected):
    assert normalise_alt(raw) == expected


def test_normalise_alt_is_nfc():
    out = normalise_alt("Cafe\u0301")
    assert out == "Caf\u00e9" and len(out) == 4


@pytest.mark.parametrize(
    ("alt", "detail"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        (None, "empty"),
        # camera and CMS filenames
        ("IMG_0423.png", "filename"),
        ("DSC_0001.JPG", "filename"),
        ("photo-1.webp", "filename"),
        ("header-bg@2x.jpg", "filename"),
        ("IMG_20230101_120000", "filename"),
        ("PXL_20240512_093011123", "filename"),
        ("DSC00123", "filename"),
        ("Screenshot 2024-03-02 at 10.15.22", "filename"),
        ("3f2a9c0de1b24c7a9e0f11aa22bb33cc", "filename"),
        ("Bildschirmfoto.png", "filename"),
        ("写真.jpg", "filename"),
        # URLs
        ("https://cdn.example.com/a/b.png", "url"),
        ("www.example.org", "url"),
        ("//static.example.net/logo", "url"),
        ("data:image/gif;base64,R0lGODlhAQABAAAAACw=", "url"),
        ("see http://example.com", "url"),
        # generic words, alone or with fillers and numbers, in several languages
        ("image", "generic"),
        ("Image", "generic"),
        ("logo", "generic"),
        ("LOGO", "generic"),
        ("icon", "generic"),
        ("photo", "generic"),
        ("banner", "generic"),
        ("Company logo", "generic"),
        ("our logo", "generic"),
        ("the image", "generic"),
        ("Image 3", "generic"),
        ("thumbnail image", "generic"),
        ("Bild", "generic"),
        ("Foto 2", "generic"),
        ("Abbildung", "generic"),
        ("unser Logo", "generic"),
        ("l'image", "generic"),
        ("Icône", "generic"),
        ("notre logo", "generic"),
        ("imagen", "generic"),
        ("Logotipo de la empresa", "generic"),
        ("画像", "generic"),
        ("写真", "generic"),
        ("ロゴ", "generic"),
        ("会社のロゴ", "generic"),
        ("画像1", "generic"),
        ("图片", "generic"),
        ("圖片", "generic"),
        ("公司标志", "generic"),
        ("图标", "generic"),
        ("이미지", "generic"),
        ("Immagine", "generic"),
        ("Imagem 2", "generic"),
        ("Логотип компании", "generic"),
        ("Фото", "generic"),
        # placeholders
        ("placeholder", "placeholder"),
        ("Untitled", "placeholder"),
        ("alt", "placeholder"),
        ("alt text", "placeholder"),
        ("spacer", "placeholder"),
        ("1x1", "placeholder"),
        ("300 x 250", "placeholder"),
        ("undefined", "placeholder"),
        ("n/a", "placeholder"),
        ("Unbenannt", "placeholder"),
        ("sans titre", "placeholder"),
        ("sin título", "placeholder"),
        ("無題", "placeholder"),
        ("占位符", "placeholder"),
        # boilerplate
        ("click here", "boilerplate"),
        ("Click Here!", "boilerplate"),
        ("Read more…", "boilerplate"),
        ("Share on Facebook", "boilerplate"),
        ("Follow us on Instagram", "boilerplate"),
        ("Click to enlarge", "boilerplate"),
        ("advertisement", "boilerplate"),
        ("Hier klicken", "boilerplate"),
        ("Weiterlesen", "boilerplate"),
        ("Cliquez ici", "boilerplate"),
        ("Lire la suite", "boilerplate"),
        ("Haga clic aquí", "boilerplate"),
        ("Leer más", "boilerplate"),
        ("ここをクリック", "boilerplate"),
        ("続きを読む", "boilerplate"),
        ("点击这里", "boilerplate"),
        ("阅读更多", "boilerplate"),
        ("广告", "boilerplate"),
        # no letters, lengths
        ("12345", "no_letters"),
        ("★★★★☆", "no_letters"),
        ("--->", "no_letters"),
        ("cat", "too_short"),
        ("ab", "too_short"),
        ("猫", "too_short"),
        ("word " * 100, "too_long"),
        ("x" * 401, "too_long"),
    ],
)
def test_rejections_carry_reason_and_detail(alt, detail):
    verdict = clean_caption(alt)
    assert verdict.caption is None, alt
    assert verdict.drop_reason == BAD_CAPTION
    assert verdict.detail == detail, f"{alt!r}: {verdict.detail} != {detail}"
    assert verdict.detail in DETAILS


@pytest.mark.parametrize(
    "alt",
    [
        # decoys: real captions that mention a generic word
        "The Apple logo on a store front",
        "A hand-painted logo on a brick wall in Brooklyn",
        "Icon of Saint George, 15th century tempera on wood",
        "Photo of the Eiffel Tower at dusk",
        "Image of a cell dividing under a microscope",
        "Das Logo von Apple an einer Ladenfront",
        "Foto eines Hundes am Strand",
        "Le logo de la marque sur une vitrine parisienne",
        "Imagen de un perro corriendo en la playa",
        "会社のロゴが入った青いトラック",
        "东京塔的夜景照片",
        "Figure 3: wheat yields in France, 1950–2020",
        # plain captions in several scripts
        "two red circles on the left",
        "A black cat asleep on a red sofa",
        "Zwei rote Kreise auf der linken Seite",
        "Deux cercles rouges à gauche",
        "Dos círculos rojos a la izquierda",
        "東京タワーの夜景",
        "一只猫在沙发上睡觉",
        "Собака бежит по пляжу",
        "Логотип компании на фасаде здания в Москве",
        "Immagine del Colosseo al tramonto",
        "قطة سوداء نائمة على أريكة",
        "खेत में काम करता किसान",
        "고양이가 소파에서 자고 있다",
        "Crowd at Image Comics booth, San Diego 2019",
    ],
)
def test_real_captions_pass(alt):
    verdict = clean_caption(alt)
    assert verdict.drop_reason is None, f"{alt!r} rejected as {verdict.detail}"
    assert verdict.caption == normalise_alt(alt)


def test_config_moves_thresholds_and_adds_words():
    cfg = CaptionConfig(min_chars=2, extra_generic_words=["Aufnahme"])
    assert clean_caption("cat", cfg).caption == "cat"
    assert clean_caption("Aufnahme", cfg).detail == "generic"
    assert clean_caption("Aufnahme", CaptionConfig()).drop_reason is None
    cfg = CaptionConfig(extra_boilerplate_patterns=[r"^sponsored by \w+$"])
    assert clean_caption("Sponsored by Acme", cfg).detail == "boilerplate"
    assert clean_caption("A long caption of a dog", CaptionConfig(max_words=4)).detail == "too_long"


def test_languages_from_lid176():
    from common.langid import LanguageIdentifier

    alts = [
        "A black cat sleeping on a red sofa in the living room",
        "Eine schwarze Katze schläft auf einem roten Sofa im Wohnzimmer",
        "Un chat noir dort sur un canapé rouge dans le salon",
        "Un gato negro duerme en un sofá rojo en la sala de estar",
        "リビングの赤いソファで黒い猫が寝ている",
        "IMG_0423.png",
    ]
    verdicts = clean_captions(alts, lang_id=LanguageIdentifier())
    assert [v.lang for v in verdicts] == ["en", "de", "fr", "es", "ja", "und"]
    assert all(v.lang_score > 0.5 for v in verdicts[:5])
    assert verdicts[-1].lang_score == 0.0


def test_caption_rows_keep_columns_and_earlier_reasons():
    rows = [
        {"id": "a", "alt": " Two  red circles ", "surrounding_text": "before after"},
        {"id": "b", "alt": "logo", "surrounding_text": "x"},
        {"id": "c", "alt": "A dog on a beach", "drop_reason": "robots_denied"},
        {"id": "d", "alt": "logo", "drop_reason": "noai"},
    ]
    out = caption_rows(rows)
    assert [r["caption"] for r in out] == ["Two red circles", None, "A dog on a beach", None]
    assert [r["drop_reason"] for r in out] == [None, "bad_caption", "robots_denied", "noai"]
    assert [r["caption_detail"] for r in out] == [None, "generic", None, "generic"]
    assert out[0]["surrounding_text"] == "before after"
    assert rows[0]["alt"] == " Two  red circles "  # inputs are not mutated
    assert "caption" not in rows[0]
