"""Phones after a label, whatever the region's plan says; catalogue numbers, register codes and
municipality keys are not phones; a phone does not run on into a date's day (session 33 review,
lingua's test sentences)."""

import pytest

from filters.pii import find_pii, scrub


def _phones(text: str, lang: str) -> list[str]:
    return [s.value for s in find_pii(text, lang) if s.type == "phone"]


@pytest.mark.parametrize(
    ("text", "lang", "phone"),
    [
        ("Kan besigtiges efter aftale på tlf. 57641686 For more information", "da", "57641686"),
        ("ring på tlf 50459989 Bemærk", "da", "50459989"),
        ("ved leder Kjell Forbord, tlf. 73977033 eller Arnfinn", "no", "73977033"),
        ("vai zvanot pa tālruni 67085445.", "lv", "67085445"),
        ("pacientu pieteikšana – tālr. 64202543, mob.", "lv", "64202543"),
        ("Šiauliai, tel. 8 (41) 523 575, el. paštas", "lt", "8 (41) 523 575"),
        ("eviduje Arcidiecézní charita (telefon: 068/5229380).", "cs", "068/5229380"),
        ("doporučuje předem telefonicky (606/262590), nebo", "cs", "606/262590"),
        ("TARTU E-R 8.30-17.30 TEL 655 8244 ASUKOHT", "et", "655 8244"),
        ("Maaseutukeskus, puh. 316 8611 tai suoraan", "fi", "316 8611"),
        ("al recapito telefonico 0549/882165.", "it", "0549/882165"),
        ("sector 6, tel: 4029167, fax: 4029587.", "ro", "4029167"),
        ("Tlf.nr. 57641686", "da", "57641686"),
        ("Phone No: 5556 5800", "en", "5556 5800"),
    ],
)
def test_a_number_right_after_a_phone_label_is_a_phone(text: str, lang: str, phone: str) -> None:
    assert phone in _phones(text, lang)
    assert phone not in scrub(text, lang)[0]


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("Мемлекет ішінде бекітілген ресми коды — 03 2 56 001. Муниципалитеттің басшысы", "kk"),
        ("Der Gemeindeschlüssel lautet 03 2 56 001 und der Kreis", "de"),
        ("Amtlicher Regionalschlüssel 05 3 15 0000 000.", "de"),
        ("се споменува и како ESO 85-87, AM 0526-634, IRAS 05264-6347.", "mk"),
        ("NGC 7823 се споменува и како ESO 111-12, IRAS 00022-6220.", "mk"),
        ("ปัจจุบัน : รับทราบแล้วตามหนังสือ ศธ 0506(2)/15546 ลว.", "th"),
        ("ประชุมพัฒนาโครงการ PPA 60 เวลา 09-.00-16.30ณ รร.", "th"),
        ("Ref: 030 1234567", "de"),
        ("ID 0123 456789", "en"),
    ],
)
def test_codes_and_catalogue_numbers_are_not_phones(text: str, lang: str) -> None:
    assert _phones(text, lang) == []


def test_a_phone_does_not_take_the_day_of_a_date_after_it() -> None:
    text = "สินค้าพรีเมี่ยม โทร 0875975877 25 มี.ค. 2560"
    assert _phones(text, "th") == ["0875975877"]
    assert scrub(text, "th")[0] == "สินค้าพรีเมี่ยม โทร <PHONE> 25 มี.ค. 2560"
    assert _phones("tlf. 57641686 25. mai", "no") == ["57641686"]
    # lingua's sentence, cut after the month's first letters: the day stays out all the same
    assert _phones("สินค้าพรีเมี่ยม โทร 0875975877 25 มี.", "th") == ["0875975877"]


def test_a_phone_span_has_no_white_space_at_its_ends() -> None:
    text = "Rơi giấy tờ mang tên Ngô Khánh Du ( 0984.119.455 ) Tôi đánh rơi ví"
    assert _phones(text, "vi") == ["0984.119.455"]


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("Hotel 12345678 guests", "en"),
        ("iPhone 12345678 sold", "en"),
        ("Mobility 12345678 index", "en"),
        ("Tel Aviv 1234567 people", "en"),
        ("phone 2019 2020 2021", "en"),
        ("cell 1 2 3 4 5 6 7 8", "en"),
        ("Phone: 1.234.567,89 EUR", "en"),
        ("Fon 1.234.567 TL", "tr"),
        ("En dual-band telefon GSM 900/1800 med", "sv"),
        ("Tel. 12.03.2014 geschlossen", "de"),
    ],
)
def test_label_look_alikes_and_amounts_stay(text: str, lang: str) -> None:
    assert _phones(text, lang) == []


@pytest.mark.parametrize(
    ("text", "lang", "phone"),
    [
        ("CALL US 0800 123 4567", "en", "0800 123 4567"),
        ("Call us: UK 020 7946 0958", "en", "020 7946 0958"),
        ("Springfield, IL (217) 555-0123", "en", "(217) 555-0123"),
        ("TEL 030 1234567", "de", "030 1234567"),
    ],
)
def test_capitals_before_a_called_number_do_not_hide_it(text: str, lang: str, phone: str) -> None:
    assert _phones(text, lang) == [phone]
