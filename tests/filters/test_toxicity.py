"""The toxicity and NSFW classifiers: shipped models, their held-out and adversarial figures,
the score columns, configured drops and the word-list fallback."""

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from filters.annotate import DocumentAnnotator
from filters.config import ConfigError, FilterConfig, config_from_dict
from filters.toxicity import DEFAULT_MODEL_DIR, SafetyClassifiers, document_score, windows
from tests.filters.toxicity_cases import ADVERSARIAL, ADVERSARIAL_JA, NSFW, TOXIC, TOXIC_JA

CUT = 0.5


@pytest.fixture(scope="module")
def classifiers() -> SafetyClassifiers:
    return SafetyClassifiers()


@pytest.fixture(scope="module")
def meta() -> dict:
    return json.loads((DEFAULT_MODEL_DIR / "models.json").read_text())


def _prf(pos: list[float], neg: list[float], cut: float = CUT) -> tuple[float, float]:
    tp = sum(s >= cut for s in pos)
    fp = sum(s >= cut for s in neg)
    return (tp / (tp + fp) if tp + fp else 0.0), tp / len(pos)


def _scores(classifiers, cases, kind) -> list[float]:
    out = []
    for lang, text in cases:
        s = classifiers.score(text, lang)[0][kind]
        if s is not None:
            out.append(s)
    return out


def test_shipped_models_are_the_files_models_json_describes(meta):
    for key, m in meta["models"].items():
        data = (DEFAULT_MODEL_DIR / m["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == m["sha256"], key
        assert len(data) < 1_000_000, key  # quantised: the repository stays small
        for src in m["trained_on"]:
            assert meta["sources"][src]["licence"], (key, src)
    for name in ("hatecheck", "mhc", "davidson", "germeval2018"):
        src = meta["sources"][name]
        assert src["repo"] and len(src["commit"]) == 40 and src["licence"]


# Held-out (precision, recall) floors per labelled source at CUT. HateCheck and Multilingual
# HateCheck are functional tests (short, unambiguous statements); Davidson's and GermEval 2018's
# tweets are annotated social-media posts, where insult against no group and sarcasm make a
# bag-of-words model miss more.
FLOORS = {
    "hatecheck": (0.7, 0.7),
    "mhc": (0.7, 0.7),
    "davidson": (0.65, 0.45),
    "germeval2018": (0.65, 0.45),
}


def test_heldout_precision_and_recall_floors(meta):
    """The figures the build measured on its held-out fifth (never trained on)."""
    for key, m in meta["models"].items():
        at = m["heldout"][str(CUT)]
        web = at["sampleweb"]  # ordinary web prose
        assert web["false_positives"] <= 0.02 * web["negatives"], (key, web)
        if m["kind"] == "nsfw":
            assert at["all"]["precision"] >= 0.9 and at["all"]["recall"] >= 0.9, (key, at)
            continue
        assert at["all"]["precision"] >= 0.7, (key, at["all"])
        for src, fig in at.items():
            if src in FLOORS and fig["positives"]:
                p, r = FLOORS[src]
                assert fig["precision"] >= p and fig["recall"] >= r, (key, src, fig)


def test_german_model_learnt_from_germeval_and_catches_written_hate(classifiers, meta):
    """German: Multilingual HateCheck alone (the first model) caught none of the hateful German
    statements written here; with GermEval 2018's tweets it catches them, and still passes the
    hard clean German cases (counter-speech quoting hate, a quoted insult in a court report,
    sex education, drug counselling, reclaimed words)."""
    de = meta["models"]["toxicity.de"]
    assert "germeval2018" in de["trained_on"]
    mhc = de["heldout"][str(CUT)]["mhc"]
    assert mhc["precision"] >= 0.85 and mhc["recall"] >= 0.85, mhc
    pos = _scores(classifiers, [c for c in TOXIC if c[0] == "de"], "toxicity")
    neg = _scores(classifiers, [c for c in ADVERSARIAL if c[0] == "de"], "toxicity")
    assert len(pos) == 7 and len(neg) == 10
    assert sum(s >= CUT for s in pos) >= 6, pos
    assert sum(s >= CUT for s in neg) <= 1, neg


def test_japanese_has_no_classifier_and_its_word_list_keeps_hard_clean_text():
    """No Japanese toxicity data large enough to train on is available here (see
    filters/toxicity_model/README.md): Japanese rows get no score, and the word-list fallback
    must not drop sex education, drug overdose news, a hate-crime court report or
    counter-speech."""
    a = _annotator(max_toxicity=0.5, max_nsfw=0.5)
    for i, (lang, text) in enumerate(ADVERSARIAL_JA + TOXIC_JA):
        row = a.annotate(_row(JA_PROSE + text, i))  # a kanji-only line alone reads as zh
        assert row["lang"] == lang and row["toxicity_score"] is None, row
        assert row["safety_model"] == "wordlist:ja"
    for i, (_, text) in enumerate(ADVERSARIAL_JA):
        assert a.annotate(_row(JA_PROSE + text, i))["drop_reason"] is None, text


def test_written_toxic_cases_are_caught_and_adversarial_ones_are_not(classifiers):
    """Cases written here, in five languages: hateful statements against medical and
    educational text about sex and drugs, reclaimed words and slurs quoted in news reports."""
    pos = _scores(classifiers, TOXIC, "toxicity")
    neg = _scores(classifiers, ADVERSARIAL, "toxicity")
    assert len(pos) == len(TOXIC) and len(neg) == len(ADVERSARIAL)
    precision, recall = _prf(pos, neg)
    assert precision >= 0.85 and recall >= 0.5, (precision, recall)
    assert sum(s >= CUT for s in neg) <= 2, neg


def test_written_obscene_cases_are_caught_and_adversarial_ones_are_not(classifiers):
    pos = _scores(classifiers, NSFW, "nsfw")
    neg = _scores(classifiers, ADVERSARIAL + TOXIC, "nsfw")  # hateful is not obscene
    assert len(pos) == len(NSFW) and neg
    precision, recall = _prf(pos, neg)
    assert precision >= 0.8 and recall >= 0.8, (precision, recall)
    medical = [s for (lang, t), s in zip(ADVERSARIAL, neg, strict=False) if "Condom" in t]
    assert medical and max(medical) < CUT


def test_a_toxic_paragraph_is_not_averaged_away_in_a_long_page(classifiers):
    prose = "The museum opens at nine and the guided tour of the new wing takes an hour. " * 30
    clean = classifiers.score(prose, "en")[0]["toxicity"]
    paragraph = f"{TOXIC[0][1]} {TOXIC[3][1]}"
    mixed = classifiers.score(prose + "\n" + paragraph, "en")[0]["toxicity"]
    assert clean < CUT <= mixed
    # A post or a short comment is its worst sentence.
    post = classifiers.score(f"Hi all. {TOXIC[3][1]} See you.", "en")[0]["toxicity"]
    assert post >= CUT


# An ordinary German sentence the German model misreads (1.0 alone; 2 in 1,000 real German
# sentences score 0.9 or more since toxicity.de learnt from web prose).
MISREAD_DE = "So schlimm ist er auch wieder nicht."


def test_one_misread_sentence_does_not_make_an_ordinary_page_toxic(classifiers):
    """At the documented cut (0.9), a page used to take its single worst sentence's score:
    one misread sentence dropped an ordinary page (80 of 200 German pages of 20 real
    sentences). A page of more than three windows now needs two flagged ones."""
    assert classifiers.score(MISREAD_DE, "de")[0]["toxicity"] >= 0.9
    page = DE_PROSE + " " + MISREAD_DE
    assert classifiers.score(page, "de")[0]["toxicity"] < 0.5
    row = _annotator(max_toxicity=0.9, max_nsfw=0.9).annotate(_row(page))
    assert row["lang"] == "de" and row["drop_reason"] is None, row


def test_document_score_is_the_worst_of_a_post_and_a_share_of_a_page():
    assert document_score([]) == 0.0
    assert document_score([0.1, 0.95, 0.2]) == 0.95  # up to 3 windows: the worst
    assert document_score([0.1] * 10 + [0.95]) == 0.1  # one flagged window in a page
    assert document_score([0.1] * 10 + [0.95, 0.92]) == 0.92  # two
    # A long page needs one flagged window per 20: 2 of 60 are not enough, 3 are.
    assert document_score([0.1] * 58 + [0.99, 0.97]) == 0.1
    assert document_score([0.1] * 57 + [0.99, 0.97, 0.93]) == 0.93


def test_hidden_and_look_alike_letters_do_not_hide_toxic_words(classifiers):
    """The classifiers read the matching view (`filters.safety.matching_view`): zero-width
    characters and soft hyphens inside words, full-width letters, Cyrillic look-alikes and
    stray accents read as the plain words (each scored 0.008 or less before)."""
    plain = "You are a fucking bitch, kill yourself."
    variants = [
        "You are a fu\u200bcking bi\u00adtch, kill\u200d yourself.",
        "You are a ｆｕｃｋｉｎｇ ｂｉｔｃｈ, ｋｉｌｌ yourself.",
        "Yоu \u0430re a fu\u0441king bitсh, kіll yоurself.",  # Cyrillic о а с і
        "You are a fu\u0301cking bi\u0301tch, ki\u0301ll yourself.",
    ]
    want = windows(plain, "en")
    assert classifiers.score(plain, "en")[0]["toxicity"] >= 0.9
    for v in variants:
        assert windows(v, "en") == want, v
        scores = classifiers.score(v, "en")[0]
        assert scores["toxicity"] >= 0.9 and scores["nsfw"] >= 0.9, v
    # A language's own letters keep their marks; words of one other script are left alone.
    assert windows("Die Größe der Bäume.", "de") == ["die größe der bäume"]
    assert windows("Она сказала: всё хорошо.", "ru") == ["она сказала всё хорошо"]


def test_windows_are_sentences_cut_into_bounded_token_runs():
    w = windows("one two three four five\n\nsix. Seven eight! 3.5 nine", "en", size=2)
    assert w == ["one two", "three four", "five", "six", "seven eight", "3 5", "nine"]
    assert windows("今天天气很好。你好", "zh", size=4) == ["今 天 天 气", "很 好", "你 好"]


def _row(text: str, i: int = 0) -> dict:
    return {"id": f"d{i}", "url": f"http://127.0.0.1/{i}", "text": text, "training_allowed": True}


def _annotator(**safety) -> DocumentAnnotator:
    cfg = config_from_dict({"quality": {"use_default_models": False}, "safety": safety})
    return DocumentAnnotator(cfg)


PROSE = (
    "The city council met on Tuesday evening to discuss the budget for the new library, the "
    "opening hours of the swimming pool and the repairs to the bridge over the river. "
)
DE_PROSE = (
    "Der Stadtrat hat am Dienstagabend über den Haushalt der neuen Bibliothek beraten. Die "
    "Öffnungszeiten des Schwimmbads sollen im Sommer verlängert werden, und die Brücke über "
    "den Fluss wird ab März repariert. Anwohner können ihre Fragen bis Ende des Monats per Post "
    "oder im Rathaus einreichen; die Verwaltung beantwortet sie in der nächsten Sitzung."
)
JA_PROSE = "今日は市議会が図書館の予算と橋の修理について話し合いました。" * 3
HATE = "I hate all immigrants, they are filthy vermin and should be thrown out of this country. "
OBSCENE = "that bitch sucked my dick last night lmao wanna see my pussy? dm me for nudes "


def test_scores_are_columns_null_where_no_model_applies():
    a = _annotator()
    en = a.annotate(_row(PROSE * 3))
    assert 0 <= en["toxicity_score"] < CUT and 0 <= en["nsfw_score"] < CUT
    assert en["safety_model"].startswith("toxicity.en:") and "nsfw.en:" in en["safety_model"]
    assert "wordlist:en" in en["safety_model"]  # no cut set: the word list still judges
    de = a.annotate(_row("Der Stadtrat hat am Dienstag über den Haushalt gesprochen. " * 8))
    assert de["lang"] == "de" and de["toxicity_score"] is not None and de["nsfw_score"] is None
    ja = a.annotate(_row("今日は市議会が図書館の予算と橋の修理について話し合いました。" * 8))
    assert ja["lang"] == "ja" and ja["toxicity_score"] is None and ja["nsfw_score"] is None
    assert ja["safety_model"] == "wordlist:ja"


def test_without_a_cut_the_scores_annotate_and_drop_nothing():
    row = _annotator().annotate(_row(PROSE + HATE + PROSE))
    assert row["toxicity_score"] >= CUT and row["drop_reason"] is None


def test_a_configured_cut_drops_with_its_reason():
    a = _annotator(max_toxicity=0.5, max_nsfw=0.5)
    toxic = a.annotate(_row(PROSE + HATE + PROSE))
    assert toxic["drop_reason"] == "toxic"
    obscene = a.annotate(_row(PROSE + OBSCENE + PROSE, 1))
    assert obscene["drop_reason"] in ("toxic", "nsfw") and obscene["nsfw_score"] >= 0.5
    assert a.annotate(_row(PROSE * 3, 2))["drop_reason"] is None
    only_nsfw = _annotator(max_nsfw=0.5).annotate(_row(PROSE + OBSCENE + PROSE, 1))
    assert only_nsfw["drop_reason"] == "nsfw"


def test_word_lists_judge_only_where_the_classifiers_do_not_decide():
    dense = PROSE + "fuck shit porn xxx fuck shit porn " + PROSE
    decided = _annotator(max_toxicity=0.99, max_nsfw=0.99)
    row = decided.annotate(_row(dense))
    assert "wordlist" not in row["safety_model"] and row["drop_reason"] != "unsafe_content"
    # Japanese has no classifier: its word list still drops.
    ja = (
        "今日は市議会が図書館の予算について話し合いました。" * 6
        + "エロ動画 アダルト 無修正 エロ動画 アダルト"
    )
    assert decided.annotate(_row(ja, 1))["drop_reason"] == "unsafe_content"
    assert _annotator(max_toxicity=0.99, max_nsfw=0.99, wordlists="always").annotate(_row(dense))[
        "drop_reason"
    ] in ("unsafe_content", "nsfw", "toxic")
    assert _annotator(wordlists="off").annotate(_row(dense))["drop_reason"] is None
    assert _annotator().annotate(_row(dense))["drop_reason"] == "unsafe_content"


def test_bad_safety_config_names_the_field(tmp_path):
    with pytest.raises(ConfigError, match="safety.max_toxicity"):
        config_from_dict({"safety": {"max_toxicity": 1.5}})
    with pytest.raises(ConfigError, match="safety.wordlists"):
        config_from_dict({"safety": {"wordlists": "sometimes"}})
    with pytest.raises(FileNotFoundError, match="models_dir"):
        SafetyClassifiers(tmp_path)
    assert FilterConfig().safety.classifiers and FilterConfig().safety.max_toxicity is None


@pytest.mark.slow
def test_beam_and_in_process_give_the_same_scores_and_drops(tmp_path):
    from pipelines.stages.filter import run_filter

    texts = [PROSE * 3, PROSE + HATE + PROSE, PROSE + OBSCENE + PROSE]
    texts += [DE_PROSE]
    texts += ["今日は市議会が図書館の予算と橋の修理について話し合いました。" * 8]
    pq.write_table(
        pa.Table.from_pylist([_row(t, i) for i, t in enumerate(texts)]),
        tmp_path / "documents.parquet",
    )
    cfg = {
        "quality": {"use_default_models": False},
        "safety": {"max_toxicity": 0.5, "max_nsfw": 0.5},
    }
    run_filter(tmp_path, tmp_path / "beam", config=cfg)
    run_filter(tmp_path, tmp_path / "local", config=cfg, beam_args=["--runner=InProcess"])
    beam = pq.read_table(tmp_path / "beam" / "annotated.parquet").to_pylist()
    local = pq.read_table(tmp_path / "local" / "annotated.parquet").to_pylist()
    assert beam == local
    assert [r["drop_reason"] for r in local] == [None, "toxic", "toxic", None, None]
    assert local[2]["nsfw_score"] >= 0.5 and local[4]["toxicity_score"] is None


def test_the_shipped_drop_config_sets_both_cuts():
    from filters.config import load_config

    cfg = load_config(DEFAULT_MODEL_DIR / "drop_unsafe.yaml")
    assert cfg.safety.max_toxicity == cfg.safety.max_nsfw == 0.9
    assert cfg.model_dump(exclude={"safety"}) == FilterConfig().model_dump(exclude={"safety"})
