"""The caption filter of synth/text_rich.py (`caption_flag`): a text a caption names is a claim
only where it is named as a text (a sign that reads it, titled it, with the words, quoted or
capitalised), cut where the caption goes on to say where the text is; "reads" and "says" in their
everyday sense name none; an image mostly of text needs a caption naming the text itself or its
words. Also each missing or refused image path gets its own reason in ocr.parquet."""

from __future__ import annotations

import hashlib
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from synth.text_rich import Selection, caption_flag, make_text_rich


def _ocr(text: str, share: float = 0.3, conf: float = 0.95) -> dict:
    return {"text": text, "confidence": conf if text else 0.0, "text_share": share if text else 0.0}


NONE = _ocr("")


@pytest.mark.parametrize(
    "caption, ocr",
    [
        # before: reads/says in the everyday sense took "a book in a park" as a claimed text
        ("A woman reads a book in a park.", NONE),
        ("A man reading a newspaper on a bench", NONE),
        ("A child says goodbye to her grandmother at the station", NONE),
        ("A boy reading quietly under a tree", NONE),
        # before: the claim ran on past the text ("STOP at an intersection")
        ("A red sign reading STOP at an intersection", _ocr("STOP", share=0.2)),
        ("A poster says the museum is closed on Mondays", _ocr("MUSEUM CLOSED\nMONDAYS")),
        ("A book cover titled The Hobbit by J.R.R. Tolkien", _ocr("THE HOBBIT\nJ.R.R. TOLKIEN")),
        ("A sign that reads OPEN 24 HOURS", _ocr("OPEN 24 HOURS")),
        ("Ein Schild mit der Aufschrift „Ausgang“", _ocr("AUSGANG")),
        ("招牌上写着“欢迎光临”", _ocr("欢迎光临")),
        ("A sign reads 'Café Noir'", _ocr("CAFE NOIR")),
        ("A page of handwritten text", _ocr("Dear Anna\nthank you for the lovely gift", 0.5)),
    ],
)
def test_a_right_caption_is_not_flagged(caption, ocr):
    assert caption_flag(caption, ocr, Selection()) is None


@pytest.mark.parametrize(
    "caption, ocr, reason",
    [
        # before: no "with the word(s) X" form: not flagged
        ("A stop sign with the word YIELD on it", _ocr("STOP", 0.2), "claims_absent_text"),
        (
            "A banner with the words Happy Birthday Anna",
            _ocr("GRAND OPENING\nSALE"),
            "claims_absent_text",
        ),
        ("A sign that reads 'CLOSED'", _ocr("OPEN 24 HOURS"), "claims_absent_text"),
        ("A sign that reads 2024", _ocr("OPEN SINCE 1998"), "claims_absent_text"),
        ("A poster says the concert is cancelled", _ocr("GRAND OPENING\nSALE"), "claims_absent"),
        ('A sign reading "Exit to Lyon"', _ocr("Platform 3 to Geneva"), "claims_absent_text"),
        # before: "table" counted as naming the text
        (
            "A bowl of fruit on a table",
            _ocr("Quarterly report\nRevenue grew 12 percent\nin the third quarter", 0.5),
            "ignores_dominant_text",
        ),
        ("A sunset over the sea", _ocr("Квартальный отчёт\nВыручка выросла", 0.5), "ignores"),
    ],
)
def test_a_wrong_caption_is_flagged(caption, ocr, reason):
    got = caption_flag(caption, ocr, Selection())
    assert got is not None and got.startswith(reason), got


def _pairs(root, rows):
    root.mkdir(parents=True)
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), "white").save(buf, format="PNG")
    (root / "blank.png").write_bytes(buf.getvalue())
    table = [
        {
            "id": pid,
            "doc_id": f"d-{pid}",
            "caption": "x",
            "image_sha256": hashlib.sha256(pid.encode()).hexdigest(),
            "image_path": path,
            "training_allowed": True,
            "drop_reason": None,
        }
        for pid, path in rows
    ]
    pq.write_table(pa.Table.from_pylist(table), root / "pairs.parquet")
    return root


class _Blank:
    """An engine that must never be handed an image these pairs lack."""

    version = "test"

    def read(self, image):
        from crawlers.images.ocr import OcrResult

        return OcrResult("", "und", "", "", 0.0, 0.0)


def test_each_missing_or_refused_image_has_its_own_reason(tmp_path):
    pairs = _pairs(
        tmp_path / "pairs",
        [
            ("ok", "blank.png"),
            ("gone", "images/nope.png"),
            ("outside", "../../../../etc/hostname"),
            ("absolute", "/etc/hostname"),
            ("none", None),
        ],
    )
    s = make_text_rich([pairs], tmp_path / "out", engine=_Blank(), workers=1)
    rows = {r["pair_id"]: r for r in pq.read_table(tmp_path / "out" / "ocr.parquet").to_pylist()}
    assert len(rows) == 5 and s["pairs"] == 5  # rows in = rows out
    reason = {k: r["drop_reason"] for k, r in rows.items()}
    assert reason["ok"] == "no_text"
    # before: a missing file was undecodable_image, a path out of the dataset no_image
    assert reason["gone"].startswith("no_image: ") and "images/nope.png" in reason["gone"]
    assert reason["outside"].startswith("image_path_outside: ")
    assert reason["absolute"].startswith("image_path_outside: ")
    assert reason["none"].startswith("no_image")
    assert s["not_text_rich"]["image_path_outside"] == 2 and s["not_text_rich"]["no_image"] == 2


class _FewLetters:
    """A reading with a couple of Arabic letters and a number: too little to be text."""

    version = "test"

    def read(self, image):
        from crawlers.images.ocr import OcrResult

        return OcrResult('يه"\n12', "ar", "Arabic", "ara", 0.4, 0.001)


def test_a_no_text_row_has_no_language(tmp_path):
    # docs/images.md: `language` is `und` without text, whatever the model that read the marks
    pairs = _pairs(tmp_path / "pairs", [("ok", "blank.png")])
    make_text_rich([pairs], tmp_path / "out", engine=_FewLetters(), workers=1)
    (row,) = pq.read_table(tmp_path / "out" / "ocr.parquet").to_pylist()
    assert row["drop_reason"] == "no_text"
    assert (row["ocr"]["language"], row["ocr"]["script"]) == ("und", "")
