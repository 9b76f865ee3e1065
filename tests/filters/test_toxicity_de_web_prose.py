"""The German toxicity model reads ordinary German prose as clean: it learnt from the German
pages of trafilatura's extraction benchmark as well as from GermEval 2018's tweets and
Multilingual HateCheck (scripts/build_toxicity_models.py, filters/toxicity_model/README.md)."""

import json

import pytest

from filters.toxicity import DEFAULT_MODEL_DIR, SafetyClassifiers
from scripts import build_toxicity_models as build

# Written for this test (not lingua-py's sentences, which measure the model, nor the benchmark's
# pages, which train it). The model trained without web prose scored the refugees sentence
# 0.92 and the women's team 0.86.
ORDINARY_DE = [
    "Viele Flüchtlinge aus der Ukraine haben in der Stadt eine Wohnung gefunden.",
    "Die Frauen-Nationalmannschaft hat das Halbfinale gewonnen.",
    "Die Muslime der Gemeinde feiern das Ende des Ramadan mit einem Fest im Park.",
    "Ich glaube, er hat heute keine Zeit, aber morgen kommt er bestimmt vorbei.",
    "Er hat sich wirklich Mühe gegeben, auch wenn das Ergebnis nicht perfekt ist.",
    "Die Regierung will die Steuern für kleine Betriebe senken, sagte die Ministerin am Montag.",
    "Die Partei hat auf ihrem Parteitag ein neues Programm beschlossen.",
    "Was meint ihr, sollen wir heute Abend Pizza bestellen oder selbst kochen?",
    "Bitte vergessen Sie nicht, Ihren Ausweis zum Termin mitzubringen.",
    "Der Zug nach Berlin fällt heute wegen eines Streiks aus.",
]


@pytest.fixture(scope="module")
def meta() -> dict:
    return json.loads((DEFAULT_MODEL_DIR / "models.json").read_text())


def test_ordinary_german_sentences_score_under_one_half():
    classifiers = SafetyClassifiers()
    scores = {s: classifiers.score(s, "de")[0]["toxicity"] for s in ORDINARY_DE}
    assert all(v is not None and v < 0.5 for v in scores.values()), scores


def test_german_model_records_the_web_prose_it_learnt_from(meta):
    src = meta["sources"]["webpages"]
    assert src["repo"] == "adbar/trafilatura" and len(src["commit"]) == 40
    assert src["licence"] == "Apache 2.0" and src["extracted_with"].startswith("trafilatura ")
    files = meta["source_files_sha256"]
    assert len(files["trafilatura/tests/evaldata.json"]) == 64
    assert any(k.startswith("trafilatura/tests/{eval,cache}/") for k in files)
    de = meta["models"]["toxicity.de"]
    assert "webpages" in de["trained_on"]
    # Held-out pages' sentences (never trained on): the earlier model flagged 130 of 2,992.
    web = de["heldout"]["0.5"]["webpages"]
    assert web["negatives"] > 1000 and web["false_positives"] <= 0.01 * web["negatives"], web
    # ... while the labelled sets keep their figures (cut 0.5; 0.87/0.87 and 0.70/0.50 before).
    at = de["heldout"]["0.5"]
    assert at["mhc"]["precision"] >= 0.85 and at["mhc"]["recall"] >= 0.85, at["mhc"]
    assert at["germeval2018"]["precision"] >= 0.7 and at["germeval2018"]["recall"] >= 0.45


def _page(body: str, lang: str) -> str:
    paras = "".join(f"<p>{p}</p>" for p in body.split("\n"))
    return f'<html lang="{lang}"><head><title>t</title></head><body><article>{paras}</article></body></html>'


DE_PAGE = (
    "Der Verein lädt am Sonntag zum Sommerfest auf dem Sportplatz ein. Für Kinder gibt es eine "
    "Hüpfburg und Kinderschminken. Der Eintritt ist frei, um Spenden wird gebeten.\n"
    "Die Feuerwehr zeigt ihre neuen Fahrzeuge und erklärt, wie man einen Brand richtig meldet. "
    "Am Abend spielt eine Band aus dem Nachbarort. Ja.\n"
    "Wer mithelfen möchte, meldet sich bitte bis Freitag bei der Vorsitzenden des Vereins."
)
EN_PAGE = (
    "The club invites everyone to its summer party on the sports ground on Sunday. Children "
    "can enjoy a bouncy castle and face painting. Entry is free and donations are welcome.\n"
    "The fire brigade shows its new engines and explains how to report a fire properly."
)


def test_webpage_examples_read_german_pages_only_a_few_sentences_each(tmp_path, monkeypatch):
    root = tmp_path / "trafilatura" / "tests"
    (root / "eval").mkdir(parents=True)
    (root / "cache").mkdir()
    (root / "eval" / "verein.html").write_text(_page(DE_PAGE, "de"), encoding="utf-8")
    (root / "cache" / "club.html").write_text(_page(EN_PAGE, "en"), encoding="utf-8")
    listing = {
        "https://a.example/": {"file": "verein.html"},
        "https://b.example/": {"file": "club.html"},
    }
    (root / "evaldata.json").write_text(json.dumps(listing), encoding="utf-8")
    monkeypatch.setattr(build, "WEBPAGE_SENTENCES", 4)
    out = build.webpage_examples(tmp_path, "de")
    assert len(out) == 4 and {e.group for e in out} == {"webpages:tests/eval/verein.html"}
    assert all(e.label == 0 and e.source == "webpages" for e in out)
    assert all(len(e.text.split()) >= build.WEBPAGE_MIN_WORDS for e in out)  # "Ja." is not one
    assert all(e.text in DE_PAGE for e in out)
    assert build.webpage_examples(tmp_path, "de") == out  # the same sentences every run
    (root / "cache" / "club.html").unlink()
    with pytest.raises(FileNotFoundError, match="club.html: missing"):
        build.webpage_files(tmp_path)


def test_only_trains_the_named_models_and_refuses_an_unknown_name(tmp_path):
    with pytest.raises(ValueError, match="--only toxicity.xx: no such model"):
        build.build(tmp_path, tmp_path, only={"toxicity.xx"})
    assert build.main(["--sources", str(tmp_path), "--out", str(tmp_path), "--only", "x.y"]) == 2
