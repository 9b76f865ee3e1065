"""24-hour time ranges written HHMM ("0900-1730", opening hours) are no phone numbers; a number
of that shape after a phone's label, or continued by more digits, still is."""

import pytest

from filters import pii


@pytest.mark.parametrize(
    ("lang", "text"),
    [
        ("no", "Innlevering mandag-fredag i kontortiden mellom 0900-1530 i NIF-huset."),
        ("en", "The office is open 0900-1730 Monday to Friday."),
        ("de", "Öffnungszeiten: Mo-Fr 0800-1800 Uhr, Sa 0900-1300 Uhr."),
        ("en", "Quiet hours run 2200 – 0600; the desk is staffed 0000-2400."),
    ],
)
def test_hhmm_time_ranges_are_kept(lang, text):
    out, counts = pii.scrub(text, lang)
    assert out == text and not sum(counts.values())


@pytest.mark.parametrize(
    ("lang", "text", "scrubbed"),
    [
        ("de", "Telefon: 0211-1530", "Telefon: <PHONE>"),
        ("de", "Tel. 0800-1234", "Tel. <PHONE>"),
        ("ja", "電話：0120-1234", "電話：<PHONE>"),
        ("en", "Call 0800-1234 567 now", "Call <PHONE> now"),
        ("en", "Open 0900-1730, tel 0800-1234", "Open 0900-1730, tel <PHONE>"),
        ("en", "Call 07700 900058 today", "Call <PHONE> today"),
    ],
)
def test_phones_of_that_shape_are_still_found(lang, text, scrubbed):
    assert pii.scrub(text, lang)[0] == scrubbed
