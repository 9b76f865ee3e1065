"""A page's own charset declaration against a wrong HTTP header charset (`decode.choose_encoding`).

Real sentences in their legacy encodings: a header `charset=UTF-8` (PHP's default) that the bytes
do not fit, or a server's default `charset=ISO-8859-1` on a page whose `<meta charset>` names its
real encoding, yields the page's text, not mojibake; a right header keeps its precedence.
"""

from __future__ import annotations

import pytest

from crawlers.extract import extract_page
from crawlers.extract.decode import choose_encoding, decode_html

# (language, encoding, sentences): characters where the encoding differs from its neighbours
# (iso-8859-2 š ž against windows-1250, iso-8859-9 ş ğ ı against iso-8859-10 and windows-1252).
TEXTS = [
    (
        "cs",
        "iso-8859-2",
        [
            "Zájem o účast projevili například borci z řad Angolanů, Beninců, Číňanů a "
            "Ukrajinců, s nimiž chtějí změřit síly zástupci německé, italské, slovenské, "
            "romské, židovské a arabské menšiny.",
            "Jako proběhla schůzka s našimi hlavasi na tábory?",
            "Přeprava se děje na účet prodávajícího tehdy, když je realizována v rámci jeho "
            "rozvozů vlastní přepravou.",
        ],
    ),
    (
        "tr",
        "iso-8859-9",
        [
            "14 Şubat'ta Ankara'da TMMOB Olağanüstü Genel Kurulu'nda buluşuyoruz!",
            "1996 yılında Marmara Üniversitesi Atatürk Eğitim Fakültesi Anaokulu "
            "Öğretmenliğinde lisan eğitimini tamamladı.",
            "1. Çek-senet ve banka kartlarını düzenler ve çıktılarını alır.",
        ],
    ),
    (
        "ru",
        "windows-1251",
        [
            "Разница по вопросам обороны между Бушем и Гором имеет значение не только для "
            "экономики США, но и для безопасности всего мира.",
            "Этим обращением он сделал все, что было в его человеческих силах.",
            "Даже гулять он выводил пса не на бульвар, а на глухие пустыри и на задворки.",
        ],
    ),
    (
        "ja",
        "shift_jis",
        [
            "なお、2016年度において反競争的行為に該当するとして法的措置を受けた事実はありません。",
            "三者三様の作品群ですが、全てに共通するのは生命に対する大いなる敬意とたゆまぬ好奇心です。",
            "一般的な美容液に比べると非常にシンプルです。",
        ],
    ),
    (
        "zh",
        "gbk",
        [
            "北京是中华人民共和国的首都，也是全国的政治、文化和国际交往中心。",
            "这座城市有三千多年的建城史，保存着大量的古代建筑和历史遗迹。",
            "每年都有成千上万的游客来到这里参观故宫、长城和天坛。",
        ],
    ),
]
IDS = [f"{lang}-{enc}" for lang, enc, _ in TEXTS]


def _page(sentences: list[str], meta: str) -> str:
    paras = "".join(f"<p>{s}</p>" for s in sentences)
    return (
        f"<!DOCTYPE html><html><head><title>T</title>{meta}</head><body>"
        "<nav><a href='/'>Home</a> <a href='/a'>About</a></nav>"
        f"<article><h1>Heading</h1>{paras}</article><footer>(c) 2024</footer></body></html>"
    )


def _holds(text: str, sentences: list[str]) -> bool:
    return all(s in " ".join(text.split()) for s in sentences)


@pytest.mark.parametrize("lang,enc,sentences", TEXTS, ids=IDS)
@pytest.mark.parametrize(
    "header",
    ["text/html; charset=UTF-8", "text/html; charset=ISO-8859-1", "text/html; charset=us-ascii"],
)
def test_page_charset_beats_a_wrong_or_default_header(lang, enc, sentences, header) -> None:
    body = _page(sentences, f'<meta charset="{enc}">').encode(enc)
    assert _holds(decode_html(body, header), sentences)
    assert choose_encoding(body, header)[1].startswith("page over header")
    doc = extract_page(
        {"url": f"http://127.0.0.1/{lang}", "status": 200, "body": body, "content_type": header}
    ).document
    assert doc is not None and _holds(doc["text"], sentences)


@pytest.mark.parametrize("lang,enc,sentences", TEXTS, ids=IDS)
def test_http_equiv_declaration_beats_php_default_header(lang, enc, sentences) -> None:
    meta = f'<meta http-equiv="Content-Type" content="text/html; charset={enc}">'
    body = _page(sentences, meta).encode(enc)
    assert _holds(decode_html(body, "text/html; charset=utf-8"), sentences)


@pytest.mark.parametrize("lang,enc,sentences", TEXTS, ids=IDS)
def test_a_right_header_keeps_its_precedence(lang, enc, sentences) -> None:
    body = _page(sentences, f'<meta charset="{enc}">').encode(enc)
    header = f"text/html; charset={enc}"
    codec, source = choose_encoding(body, header)
    assert source == "header"
    assert _holds(decode_html(body, header), sentences)
    # a stale meta naming another charset does not overrule a right, non-default header
    stale = _page(sentences, '<meta charset="iso-8859-15">').encode(enc)
    assert choose_encoding(stale, header) == (codec, "header")
    assert _holds(decode_html(stale, header), sentences)


def test_a_latin1_page_with_a_stale_utf8_meta_keeps_the_header() -> None:
    """A server's default header that fits the bytes at least as well as the page's own
    declaration stays: two Latin-1 letters are not UTF-8 with two stray bytes."""
    text = "Größe und Gewicht bleiben gleich."
    body = _page([text], '<meta charset="utf-8">').encode("cp1252")
    assert choose_encoding(body, "text/html; charset=ISO-8859-1") == ("cp1252", "header")
    assert text in decode_html(body, "text/html; charset=ISO-8859-1")


def test_a_utf8_page_with_a_stray_byte_keeps_its_utf8_header() -> None:
    """A UTF-8 header that fits but for a cut character is not overruled by a template's stale
    `<meta charset=iso-8859-1>`."""
    text = "Ein Straßenfest für Groß und Klein, mit Würstchen und Musik."
    body = _page([text], '<meta charset="iso-8859-1">').encode() + b"\xc3"
    assert choose_encoding(body, "text/html; charset=utf-8") == ("utf-8", "header")
    assert text in decode_html(body, "text/html; charset=utf-8")


@pytest.mark.parametrize(
    "label,enc,sentence",
    [
        ("iso-8859-8-i", "iso-8859-8", "שלום לכולם, היום נדבר על ההיסטוריה של העיר."),
        ("windows-874", "cp874", "ประเทศไทยมีประวัติศาสตร์ยาวนานและวัฒนธรรมที่หลากหลาย"),
    ],
)
def test_whatwg_labels_python_lacks(label, enc, sentence) -> None:
    body = _page([sentence], f'<meta charset="{label}">').encode(enc)
    assert choose_encoding(body)[1] == "page"
    assert sentence in decode_html(body, "text/html; charset=ISO-8859-1")


def test_shift_jis_wave_dash_reads_as_a_browser_reads_it():
    # Python's cp932 gives 0x8160 as FULLWIDTH TILDE; the WHATWG decoder (browsers) as WAVE DASH.
    page = (
        "<html><head><meta charset=shift_jis></head><body><p>営業時間 10時〜18時</p></body></html>"
    )
    body = page.encode("cp932")
    assert b"\x81\x60" in body
    for content_type in ("text/html; charset=shift_jis", "text/html", None):
        text = decode_html(body, content_type)
        assert "10時\u301c18時" in text and "\uff5e" not in text
