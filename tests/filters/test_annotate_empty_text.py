"""A row with no text left once its boilerplate is stripped is annotated as a row empty on input:
`und`, lang_score 0.0, no quality or safety scores (docs/schemas.md: "`und` for empty text"),
in the annotator and through both filter executors."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from filters.annotate import DocumentAnnotator
from filters.config import config_from_dict

# Real-world-shaped footers and banners, nothing else: every line is boilerplate of its language.
ONLY_BOILERPLATE = {
    "en": "\n".join(
        [
            "We use cookies to improve your experience. Accept all cookies or manage settings.",
            "Sign up for our newsletter and get the best stories in your inbox every week.",
            "Share this article on Facebook, Twitter, LinkedIn or by e-mail with your friends.",
            "Copyright 2024 Example Media Group Limited. All rights reserved.",
            "Skip to main content | Back to top | Sitemap | Privacy policy | Terms of use",
            "Download our mobile app for breaking news alerts on your phone.",
        ]
    ),
    "de": "\n".join(
        [
            "Wir verwenden Cookies, um Ihr Erlebnis auf unserer Website zu verbessern.",
            "Melden Sie sich jetzt zu unserem Newsletter an und verpassen Sie nichts mehr.",
            "Copyright 2024 Beispiel Verlag GmbH. Alle Rechte vorbehalten.",
            "Zum Inhalt springen | Nach oben | Sitemap | Datenschutzerklärung | AGB",
            "Laden Sie unsere App herunter und lesen Sie unterwegs weiter.",
        ]
    ),
}
# What a row with no text gets, whatever its text was before.
EMPTY = {
    "text": "",
    "lang": "und",
    "lang_score": 0.0,
    "quality_score": None,
    "quality_model": None,
    "toxicity_score": None,
    "nsfw_score": None,
    "safety_model": None,
    "drop_reason": "empty_text",
    "rescued": False,
}


def _row(i: int, text: str) -> dict:
    return {
        "id": f"d{i}",
        "url": f"http://news.example/{i}",
        "text": text,
        "training_allowed": True,
    }


def _empty_fields(row: dict) -> dict:
    return {k: row[k] for k in EMPTY}


@pytest.mark.parametrize("lang", sorted(ONLY_BOILERPLATE))
def test_text_left_empty_by_boilerplate_is_und_and_unscored(models_dir, lang):
    ann = DocumentAnnotator(config_from_dict({"languages": ["en", "de"]}), models_dir)
    text = ONLY_BOILERPLATE[lang]
    assert ann.language(text)[0] == lang  # the input has a language: the lines are stripped
    stripped = ann.annotate(_row(1, text))
    assert stripped["heuristic_drop"] == "boilerplate"
    assert _empty_fields(stripped) == EMPTY
    for blank in ("", "  \n\t", None):  # empty on input: the same annotation
        assert _empty_fields(ann.annotate(_row(2, blank))) == EMPTY


def test_both_executors_write_und_for_a_boilerplate_only_row(tmp_path):
    from filters.run import run_filter
    from pipelines.beam.filter import BeamExecutor

    prose = (
        "The river runs past the old mill and under the stone bridge before it reaches the sea. "
        "Farmers along its banks grow barley and keep bees in the orchards near the water."
    )
    texts = [prose, ONLY_BOILERPLATE["en"], "", prose.replace("river", "canal")]
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(
        pa.Table.from_pylist([_row(i, t) for i, t in enumerate(texts)]),
        src / "documents.parquet",
    )
    cfg = {"quality": {"use_default_models": False}, "pii": False}
    run_filter(src, tmp_path / "local", config=cfg)
    run_filter(src, tmp_path / "beam", config=cfg, executor=BeamExecutor(["--runner=DirectRunner"]))
    for out in ("local", "beam"):
        rows = {r["id"]: r for r in pq.read_table(tmp_path / out / "annotated.parquet").to_pylist()}
        assert rows["d0"]["lang"] == "en" and rows["d0"]["drop_reason"] is None, out
        assert _empty_fields(rows["d1"]) == EMPTY, out
        assert _empty_fields(rows["d2"]) == EMPTY, out
    for name in ("annotated.parquet", "documents.parquet"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "beam" / name).read_bytes()
