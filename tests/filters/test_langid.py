"""Language ID (`common.langid`): short texts read whole, long ones in windows over their length."""

import pytest

from common.langid import MAX_WINDOWS, LanguageIdentifier, combine, windows

EN = (
    "The committee met on Tuesday to review the budget for the coming year. After a long "
    "discussion about roads, schools and the new library, the members agreed to postpone the "
    "final vote until the next meeting in the spring. "
)
RU = (
    "Вчера вечером мы долго гуляли по старому парку и разговаривали о книгах и о том, как "
    "быстро меняется город. Потом зашли в небольшое кафе возле реки, заказали горячий чай с "
    "пирогами и смотрели, как зажигаются фонари на набережной. "
)


@pytest.fixture(scope="module")
def lid() -> LanguageIdentifier:
    return LanguageIdentifier()


def _repeat(paragraph: str, chars: int) -> str:
    return (paragraph * (chars // len(paragraph) + 1))[:chars]


def test_a_long_text_is_named_by_its_body_not_its_preface(lid):
    doc = _repeat(EN, 4_100) + "\n" + _repeat(RU, 38_000)
    lang, score = lid.predict(doc)
    assert lang == "ru"
    assert 0.5 < score < lid.predict(_repeat(RU, 38_000))[1]  # the preface lowers it


def test_an_even_mix_of_two_languages_falls_under_the_default_cut(lid):
    from filters.config import FilterConfig

    doc = _repeat(EN, 21_000) + "\n" + _repeat(RU, 21_000)
    lang, score = lid.predict(doc)
    assert lang in ("en", "ru") and score < FilterConfig().min_lang_score


def test_short_texts_read_exactly_as_one_model_call(lid):
    texts = [EN, RU, _repeat(EN, 4_000), "Das ist ein kurzer deutscher Satz.", "  \n "]
    for text in texts:
        cleaned = " ".join(text.split())
        if not cleaned:
            assert lid.predict(text) == ("und", 0.0)
            continue
        labels, scores = lid._model.predict(cleaned, k=1)
        assert lid.predict(text) == (labels[0].removeprefix("__label__"), min(1.0, scores[0]))


def test_a_batch_gives_each_text_what_it_gives_alone(lid):
    texts = [EN, _repeat(EN, 5_000) + _repeat(RU, 30_000), "", RU, _repeat(RU, 9_000)]
    assert lid.predict_batch(texts) == [lid.predict(t) for t in texts]
    assert lid.predict_batch(texts) == lid.predict_batch(texts)


def test_windows_span_the_text_from_start_to_end():
    text = "".join(chr(ord("a") + i % 26) for i in range(42_000))
    got = windows(text, 4_000)
    assert len(got) == MAX_WINDOWS and all(len(w) == 4_000 for w in got)
    assert got[0] == text[:4_000] and got[-1] == text[-4_000:]
    assert windows(text[:4_000], 4_000) == [text[:4_000]]
    # an even number: neither half of a text gets one more window than the other
    assert [len(windows(text[:n], 4_000)) for n in (4_001, 8_000, 8_001, 16_001)] == [2, 2, 4, 6]


def test_windows_that_disagree_lower_the_score():
    assert combine([[("en", 0.9)]] * 3) == ("en", pytest.approx(0.9))
    ru = [("ru", 0.99), ("uk", 0.01)]
    assert combine([[("en", 0.9)], ru, ru]) == ("ru", pytest.approx(0.66))
    # a window on the border of two languages counts for both
    assert combine([[("en", 0.9)], [("ru", 0.5), ("en", 0.5)]]) == ("en", pytest.approx(0.7))
    assert combine([[("en", 0.8)], [("ru", 0.8)]]) == ("en", pytest.approx(0.4))  # first on a tie
    assert combine([[], [("de", 0.9)]]) == ("de", pytest.approx(0.9))  # a blank window
    assert combine([[], []]) == ("und", 0.0)
