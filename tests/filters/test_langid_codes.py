"""Language ID's codes and scores (`common.langid`): decomposed accents read as composed ones,
one language under several lid.176 labels scores as one, labels are BCP-47 codes, and
`refinery inspect --lang` refuses a code the filter never writes."""

import unicodedata

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.langid import LANGUAGE_ALIASES, LanguageIdentifier, combine
from filters import inspect
from filters.config import FilterConfig

CS = (
    "Včera večer jsme se dlouho procházeli starým parkem a povídali si o knihách. Potom jsme "
    "zašli do malé kavárny u řeky, objednali si horký čaj s koláčem a dívali se, jak se na "
    "nábřeží rozsvěcují lampy. Příští týden chceme jet na hory, pokud bude hezké počasí."
)
VI = (
    "Hôm qua chúng tôi đi dạo rất lâu trong công viên cũ và nói chuyện về những cuốn sách. Sau "
    "đó chúng tôi ghé vào một quán cà phê nhỏ bên bờ sông, gọi trà nóng và ngắm đèn đường dần "
    "sáng lên dọc bờ kè. Tuần sau chúng tôi muốn lên núi nếu thời tiết đẹp."
)
KO = (
    "어제 저녁 우리는 오래된 공원을 오랫동안 산책하며 책에 대해 이야기를 나누었다. 그 후 강가의 "
    "작은 카페에 들러 따뜻한 차를 주문하고 강둑을 따라 가로등이 켜지는 모습을 바라보았다."
)
SH = (
    "Policija je uhapsila dvojicu muškaraca osumnjičenih za krađu automobila. Prema riječima "
    "portparola, vozila su pronađena u napuštenom skladištu na periferiji grada."
)


@pytest.fixture(scope="module")
def lid() -> LanguageIdentifier:
    return LanguageIdentifier()


@pytest.mark.parametrize(("text", "lang"), [(CS, "cs"), (VI, "vi"), (KO, "ko")])
def test_decomposed_accents_read_as_the_composed_text(lid, text, lang):
    nfd = unicodedata.normalize("NFD", text)
    assert nfd != text
    assert lid.predict(nfd) == lid.predict(text)
    assert lid.predict(nfd)[0] == lang and lid.predict(nfd)[1] >= FilterConfig().min_lang_score


def test_a_long_decomposed_text_reads_as_the_composed_one(lid):
    text = (VI + " ") * 60  # several windows
    assert lid.predict(unicodedata.normalize("NFD", text)) == lid.predict(text)


def test_a_serbo_croatian_page_scores_as_one_language(lid):
    lang, score = lid.predict(SH)
    assert lang == "hr" and score >= FilterConfig().min_lang_score
    labels, probs = lid._model.predict(SH, k=5)
    raw = dict(zip((lab.removeprefix("__label__") for lab in labels), probs, strict=True))
    assert raw["hr"] < FilterConfig().min_lang_score  # lid.176 splits it across hr, sh, sr, bs
    assert score == pytest.approx(sum(raw.get(x, 0.0) for x in ("hr", "sr", "bs", "sh")))


def test_a_group_adds_up_but_never_outvotes_another_language():
    split = [("hr", 0.46), ("sh", 0.25), ("sr", 0.13), ("bs", 0.09), ("sl", 0.03)]
    assert combine([split]) == ("hr", pytest.approx(0.93))
    # the umbrella `sh` gives way to the likeliest standard, and is `hbs` alone
    assert combine([[("sh", 0.5), ("sr", 0.1), ("hr", 0.3)]]) == ("hr", pytest.approx(0.9))
    assert combine([[("sh", 0.6), ("sl", 0.2)]]) == ("hbs", pytest.approx(0.6))
    # Slovenian stays Slovenian however much of the rest is Serbo-Croatian
    assert combine([[("sl", 0.4), ("hr", 0.3), ("sh", 0.3)]]) == ("sl", pytest.approx(0.4))
    # Norwegian's two labels add up; Danish and Malay/Indonesian are languages of their own
    assert combine([[("nn", 0.45), ("no", 0.3), ("da", 0.2)]]) == ("nn", pytest.approx(0.75))
    assert combine([[("no", 0.45), ("da", 0.4)]]) == ("no", pytest.approx(0.45))
    assert combine([[("id", 0.45), ("ms", 0.4)]]) == ("id", pytest.approx(0.45))
    # across windows: hr in one, its umbrella in the other
    assert combine([[("hr", 0.8)], [("sh", 0.6), ("hr", 0.3)]]) == ("hr", pytest.approx(0.85))


def test_labels_are_bcp47_codes(lid):
    labels = lid.labels()
    assert {"gsw", "hbs", "no", "nn", "hr", "sr", "bs", "war", "ceb"} <= labels
    assert not {"als", "sh"} & labels  # Tosk Albanian in ISO 639-3; retired ISO 639-1
    assert combine([[("als", 0.9)]]) == ("gsw", pytest.approx(0.9))
    # what other tools call a language names the code it has here
    for other, ours in LANGUAGE_ALIASES.items():
        assert other not in labels and ours in labels, other


def _out(tmp_path):
    rows = [
        {"id": "a", "lang": "no", "drop_reason": None, "text": "Dette er en norsk tekst."},
        {"id": "b", "lang": "en", "drop_reason": "too_short", "text": "tiny"},
        {"id": "c", "lang": "sh", "drop_reason": None, "text": "written before the codes"},
        {"id": "d", "lang": "und", "drop_reason": "empty_text", "text": ""},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "annotated.parquet")
    return tmp_path


def test_inspect_refuses_a_language_code_the_filter_never_writes(tmp_path):
    out = _out(tmp_path)
    with pytest.raises(
        ValueError, match=r"--lang 'nb': .*annotated.parquet.* names that language 'no'"
    ):
        inspect.sample(out, lang="nb")
    with pytest.raises(ValueError, match="--lang 'xx'"):
        inspect.outcome_counts(out, lang="xx")
    assert inspect.outcome_counts(out, lang="no") == {"kept": 1}
    assert inspect.outcome_counts(out, lang="sh") == {"kept": 1}  # an older run's code
    assert inspect.outcome_counts(out, lang="und") == {"empty_text": 1}
    assert inspect.outcome_counts(out, lang="de") == {}  # a code it gives, of no row here
