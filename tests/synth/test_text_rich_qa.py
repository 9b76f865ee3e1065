"""OCR-QA of text-rich images (synth/text_rich.py): an extractive answer is verified only as whole
tokens of the OCR text (synth/textmatch.py), one image's failure is its row's status, and
qa.parquet reads as a mixture source of `kind: domain_qa` with the pairs its pair_id names.

A stub OCR engine stands in for Tesseract (tests/images/test_ocr.py runs the real one)."""

from __future__ import annotations

import hashlib
import io
import json
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from common.teacher import TeacherClient
from synth import text_rich
from synth.text_rich import QA_FILE, QAItem, found_in, make_text_rich, verify_qa
from synth.textmatch import names, tokens
from tests.synth import fake_teacher

server = fake_teacher.server  # the fake endpoint (a pytest fixture)
pytestmark = pytest.mark.timeout(60)

INVOICE = "INVOICE No. 4471\nTotal due: 12,000 EUR\nPayable to ACME Trading GmbH"


def _verify(answer: str, text: str) -> str:
    """'kept' or the reason an extractive answer was dropped."""
    kept, dropped = verify_qa([QAItem(question="q?", answer=answer, extractive=True)], text)
    return "kept" if kept else dropped[0][1]


@pytest.mark.parametrize(
    ("answer", "want"),
    [
        ("200", "answer_not_in_ocr_text"),  # inside 12,000
        ("1,200", "answer_not_in_ocr_text"),  # the digits of 12,000 regrouped
        ("000", "answer_not_in_ocr_text"),
        ("7", "answer_not_in_ocr_text"),  # inside 4471
        ("447", "answer_not_in_ocr_text"),
        ("ra", "answer_not_in_ocr_text"),  # inside Trading
        ("Trad", "answer_not_in_ocr_text"),
        ("A", "answer_too_short_to_verify"),  # a single letter is in every text
        ("12,000", "kept"),
        ("12.000 EUR", "kept"),  # another grouping of the same number
        ("12000", "kept"),
        ("4471", "kept"),
        ("acme trading", "kept"),  # case and punctuation aside
        ("ACME Tradinq GmbH", "kept"),  # one misread letter of 15
        ("ACME Trading GmbH.", "kept"),
    ],
)
def test_an_extractive_answer_is_whole_tokens_of_the_ocr_text(answer, want):
    """Spaces and punctuation were stripped and the answer looked up as a plain substring:
    '1,200', '200', '7' and 'ra' were all 'found' in this invoice and kept as verified."""
    assert _verify(answer, INVOICE) == want


def test_numbers_are_never_misread_and_scripts_without_spaces_match_by_characters():
    assert not found_in("12,001 EUR", INVOICE)  # an OCR misread is letters, never a number
    assert found_in("Café Zürich", "CAFE ZURICH\nopen daily")  # accents aside
    assert not found_in("Cafe Zurichberg", "CAFE ZURICH")
    sign = "北京市今天天气晴朗\n出口 3号"
    assert found_in("天气晴朗", sign) and found_in("北京市", sign)
    assert not found_in("天", sign)  # one character: too short to tell
    assert not found_in("上海", sign)
    assert found_in("3号", sign) and not found_in("13号", sign)
    assert found_in("3.5 %", "rate 3,5%") and not found_in("35", "rate 3,5%")
    assert tokens("Ünïcode 12,000.50 rep0rt") == ["unicode", "12000.50", "rep0rt"]
    assert names("What is the population of Oslo?", "Population (millions)")
    assert not names("What is the population of Osloby?", "Oslo")


def _stub_pairs(root, n: int = 3, shade=lambda i: (40 * i, 90, 200)) -> object:
    """`n` kept, consented pairs of one-colour PNGs (colour `shade(i)`), as `images build` writes them."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        buf = io.BytesIO()
        Image.new("RGB", (64, 48), shade(i)).save(buf, format="PNG")
        sha = hashlib.sha256(buf.getvalue()).hexdigest()
        (root / f"images/{sha}.png").write_bytes(buf.getvalue())
        rows.append(
            {
                "id": f"d{i}-0",
                "doc_id": f"d{i}",
                "url": f"http://site.test/d{i}",
                "caption": "a sign",
                "image_sha256": sha,
                "image_path": f"images/{sha}.png",
                "training_allowed": True,
                "drop_reason": None,
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), root / "pairs.parquet")
    return root


class StubEngine:
    """Every image reads as a shop sign (an OcrEngine's interface)."""

    version = "stub"

    def read(self, image):
        return SimpleNamespace(
            text="ACME Store Open 24 hours",
            language="en",
            script="Latin",
            confidence=0.95,
            text_share=0.3,
            words=[],
            rotation=0,
            skew=0.0,
            seconds=0.01,
        )


def _qa_answer(*items) -> str:
    return json.dumps({"items": [dict(question=q, answer=a, extractive=e) for q, a, e in items]})


def test_one_images_failed_answer_is_its_rows_status_not_the_end(server, tmp_path):
    """A lone surrogate in one image's answer raised UnicodeEncodeError (the cache's write), and
    anything but TeacherError from one image ended the run: qa.parquet was never written."""
    pairs = _stub_pairs(tmp_path / "pairs")
    good = _qa_answer(("What is the store called?", "ACME", True))
    bad = (
        b'{"choices":[{"index":0,"message":{"role":"assistant","content":'
        b'"{\\"items\\": [{\\"question\\": \\"q\\", \\"answer\\": \\"ACME \\ud800\\", '
        b'\\"extractive\\": false}]}"}}]}'
    )
    server["script"] = [("ok", good), ("raw", bad)]
    server["default"] = ("ok", good)
    teacher = TeacherClient(
        server["base_url"], "tiny", timeout=5, max_retries=0, cache_dir=tmp_path / "cache"
    )
    s = make_text_rich(pairs, tmp_path / "out", engine=StubEngine(), teacher=teacher)
    rows = pq.read_table(tmp_path / "out" / QA_FILE).to_pylist()
    assert len(rows) == 3 and s["qa_status"] == {"ok": 2, "teacher_error": 1}
    (failed,) = [r for r in rows if r["status"] != "ok"]
    assert "not valid Unicode" in failed["status"] and failed["qa"] == []

    class Broken:
        model = "broken"

        def chat_json(self, messages, schema, *, items=(), **params):
            if items[0]["pair_id"] == "d1-0":
                raise KeyError("choices")
            return schema.model_validate_json(good)

    s = make_text_rich(pairs, tmp_path / "out2", engine=StubEngine(), teacher=Broken())
    rows = {r["pair_id"]: r for r in pq.read_table(tmp_path / "out2" / QA_FILE).to_pylist()}
    assert rows["d1-0"]["status"].startswith("qa_error: KeyError")
    assert s["qa_status"] == {"ok": 2, "qa_error": 1}


def test_qa_parquet_reads_as_a_domain_qa_mixture_source(tmp_path):
    """docs/images.md says qa.parquet reads as a `kind: domain_qa` source with `pairs:`; it had
    no training_allowed column and the mixture refused it (SpecError)."""
    from training.mixture import sources as src
    from training.mixture.images import read_image_unit_batches
    from training.tokenizer import train_tokenizer

    pairs = _stub_pairs(tmp_path / "images" / "pairs")

    class Teacher:
        model = "stub"

        def chat_json(self, messages, schema, *, items=(), **params):
            return schema.model_validate_json(
                _qa_answer(
                    ("What is the store called?", "ACME", True),
                    ("Is it open at night?", "Yes, all day and night", False),
                )
            )

    out = tmp_path / "images" / "ocr"
    make_text_rich(pairs, out, engine=StubEngine(), teacher=Teacher())
    table = pq.read_table(out / QA_FILE)
    assert table.schema.field("training_allowed").type == pa.bool_()
    assert table.column("training_allowed").to_pylist() == [True] * 3
    assert table.column("doc_id").to_pylist() == ["d0", "d1", "d2"]
    assert table.column_names[:5] == ["pair_id", "image_path", "ocr_text", "qa", "status"]

    tok = train_tokenizer(["ACME store open all day and night"] * 20, 300, tmp_path / "tok.json")
    from tokenizers import Tokenizer

    unit = src.ReadUnit(
        "text_rich_qa",
        0,
        str(out / QA_FILE),
        None,
        "caption",
        None,
        (),
        (),
        kind="domain_qa",
        pairs=(str(pairs / "pairs.parquet"),),
        image_tokens=4,
    )
    batches = list(read_image_unit_batches(unit, Tokenizer.from_file(str(tok)), 7))
    docs = sum(len(b.lengths) for b in batches)
    assert docs == 3 and not [r for b in batches for r in b.rejects]
    images = [im for b in batches for im in b.images]
    originals = {r["image_sha256"] for r in pq.read_table(pairs / "pairs.parquet").to_pylist()}
    assert {im["sha256"] for im in images} == originals  # the pairs' own images, by pair_id
    assert text_rich.QA_SCHEMA.names[-2:] == ["doc_id", "training_allowed"]
