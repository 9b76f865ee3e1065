"""`refinery images ocr` (asset text_rich_images): the OCR of the kept image pairs, the text-rich
selection with its transcription pairs and teacher QA pairs, and the synthetic captions flagged
where they disagree with the images' text (synth/text_rich.py, crawlers/images/ocr.py)."""

from __future__ import annotations

from pathlib import Path

from pipelines.stage import Check, Lake, Stage, param
from pipelines.stages.synth import TeacherFigures, TeacherOptions, input_consent, teacher_figures


class OcrParams(TeacherOptions):
    pairs: list[Path] = param(
        [],
        input="image_pairs",
        help="An `images build` output (repeatable); default: lake images/pairs.",
    )
    captions: Path | None = param(
        None,
        input="synthetic_captions",
        help="A `synth captions` output (captions.parquet) whose captions are checked against "
        "the images' text; default: lake synth/captions/captions.parquet when it is there.",
    )
    out: Path | None = param(
        None,
        output=True,
        help="Output directory (ocr.parquet, pairs.parquet, qa.parquet, caption_flags.parquet); "
        "default: lake images/ocr.",
    )
    min_text_share: float = param(
        0.04, help="Text-rich: at least this share of the image under words."
    )
    min_confidence: float = param(
        0.7, help="Text-rich: at least this character-weighted OCR confidence (0..1)."
    )
    languages: list[str] = param(
        [],
        help="A Tesseract model to read with (repeatable; in order: a page is read in the "
        "first of its script's, else in each until one is sure): any installed traineddata, "
        "such as Latin, eng, deu, chi_sim, chi_tra, jpn, kor, ara, Cyrillic, Greek, hin; "
        "default: Latin chi_sim ara jpn kor Cyrillic Greek. Fewer read images without text "
        "faster; a missing model is named with the Debian package that ships it.",
    )
    vertical: bool = param(
        True,
        flag="--vertical/--no-vertical",
        help="Also read text written in columns (Japanese and Chinese posters, signs, covers: "
        "jpn_vert, chi_sim_vert) where no horizontal reading is sure.",
    )
    traditional: bool = param(
        True,
        flag="--traditional/--no-traditional",
        help="Tell Traditional Chinese pages from Simplified ones: a sure chi_sim reading is "
        "read again in chi_tra, kept where the characters the two give in different forms are "
        "more confident in it (about 1.5x the CPU of a Chinese page).",
    )
    questions: int = param(3, min=1, help="QA pairs asked of the teacher per text-rich image.")
    workers: int = param(2, min=1, help="Images read at once (one Tesseract per thread).")


class OcrSummary(TeacherFigures):
    pairs: int
    opted_out_skipped: int
    text_rich: int
    not_text_rich: dict[str, int]
    languages: dict[str, int]
    qa_items: int
    qa_verified: int
    qa_rejected: int
    qa_status: dict[str, int]
    captions_checked: int | None = None
    captions_flagged: dict[str, int] | None = None
    ocr_ms_per_image: float
    models: list[str] = []  # the Tesseract models read with (--languages)
    vertical_models: list[str] = []  # and those of text written in columns (--vertical)
    traditional_model: str | None = None  # and of Traditional Chinese (--traditional)
    resumed_images: int = 0  # readings a killed earlier run left in its journal, not read again
    seconds: float


def ocr(p: OcrParams, lake: Lake) -> OcrSummary:
    """OCR the kept image pairs; select text-rich images; transcription and QA pairs; flag
    synthetic captions that disagree with the images' text."""
    from common.pairs import pairs_files
    from synth.text_rich import Selection, make_text_rich

    engine = ocr_engine(p)  # refuses at once, in one line, without Tesseract's data
    pairs = [Path(x) for x in p.pairs] or [lake.root / "images" / "pairs"]
    files = pairs_files(pairs)
    out = Path(p.out) if p.out else lake.root / "images" / "ocr"
    out.mkdir(parents=True, exist_ok=True)
    captions = Path(p.captions) if p.captions else None
    default = lake.root / "synth" / "captions" / "captions.parquet"
    if captions is None and default.is_file():
        captions = default
    if captions is not None and captions.is_dir():
        captions = captions / "captions.parquet"
    if captions is not None and not captions.is_file():
        raise FileNotFoundError(
            f"--captions {captions}: no captions.parquet there; run `refinery synth captions`"
        )
    consent = input_consent(lake, *files)
    teacher = p.teacher(out / "_teacher", consent)
    s = make_text_rich(
        files,
        out,
        engine=engine,
        selection=Selection(min_text_share=p.min_text_share, min_confidence=p.min_confidence),
        teacher=teacher,
        questions=p.questions,
        captions=captions,
        consent=consent,
        workers=p.workers,
        inputs=[*map(str, files), *([str(captions)] if captions else [])],
        on_progress=lake.log,
    )
    figures = {k: v for k, v in s.items() if k in OcrSummary.model_fields}
    figures.update(teacher_figures(teacher))
    lake.log(
        f"ocr {out}: {s['text_rich']} text-rich of {s['pairs']} pairs, "
        f"{s['ocr_ms_per_image']} ms per image"
    )
    return OcrSummary(**figures)


def ocr_engine(p: OcrParams):
    """The engine of `--languages`, `--vertical` and `--traditional` (OcrConfig's defaults where
    not given); a model that is not installed is refused in one line naming the flag and the
    Debian package that ships it."""
    from crawlers.images.ocr import OcrConfig, OcrEngine, OcrUnavailable

    config = OcrConfig(
        **({"languages": tuple(dict.fromkeys(p.languages))} if p.languages else {}),
        **({} if p.vertical else {"vertical_languages": ()}),
        **({} if p.traditional else {"traditional": None}),
    )
    try:
        return OcrEngine(config)
    except OcrUnavailable as exc:
        if not p.languages:
            raise
        raise OcrUnavailable(f"--languages {' '.join(p.languages)}: {exc}") from None


def _rows(summary: OcrSummary, name: str) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(Path(summary.outputs["text_rich_images"]).parent / name).to_pylist()


def _ocr_consent(summary: OcrSummary, lake: Lake):
    """Every OCR row is of a kept pair the one consent rule allows, as the run read it."""
    from common.checks import CheckOutcome
    from common.inputs import read_rows
    from common.manifest import read_manifest

    path = Path(summary.outputs["text_rich_images"])
    files = [f for f in read_manifest(path)["inputs"] if f.endswith("pairs.parquet")]
    rule = input_consent(lake, *map(Path, files))
    allowed = {
        r["id"] for f in files for r in read_rows(f) if r["drop_reason"] is None and rule.allows(r)
    }
    rows = _rows(summary, "ocr.parquet")
    bad = sorted({r["pair_id"] for r in rows} - allowed)
    qa = {r["pair_id"] for r in _rows(summary, "qa.parquet")}
    bad += sorted(qa - allowed)
    return CheckOutcome(
        not bad and len(rows) == len(allowed),
        f"{len(rows)} OCR rows for {len(allowed)} kept, consented pairs; "
        f"{len(bad)} not allowed" + (f" (first: {bad[0]})" if bad else ""),
        {"not_allowed": len(bad), "opted_out_skipped": summary.opted_out_skipped},
    )


def _text_rich_selection(summary: OcrSummary, lake: Lake):
    """Text-rich rows pass the thresholds; each has one transcription pair, with its text."""
    from common.checks import CheckOutcome

    rows = _rows(summary, "ocr.parquet")
    rich = {r["pair_id"]: r for r in rows if r["text_rich"]}
    pairs = _rows(summary, "pairs.parquet")
    bad = [
        p["pair_id"]
        for p in pairs
        if p["pair_id"] not in rich or p["caption"] != rich[p["pair_id"]]["ocr"]["text"]
    ]
    unexplained = [r["pair_id"] for r in rows if not r["text_rich"] and not r["drop_reason"]]
    ok = not bad and not unexplained and len(pairs) == len(rich) == summary.text_rich
    return CheckOutcome(
        ok,
        f"{len(rich)} text-rich images, {len(pairs)} transcription pairs; "
        f"{len(rows) - len(rich)} others each with their reason",
        {"text_rich": len(rich), "transcriptions": len(pairs), "mismatched": len(bad)},
    )


OCR = Stage(
    name="images ocr",
    params=OcrParams,
    run=ocr,
    description=ocr.__doc__,
    outputs=("text_rich_images",),
    inputs=("image_pairs", "synthetic_captions"),
    group="images",
    checks=(
        Check(
            "only_consented_images_read",
            "text_rich_images",
            _ocr_consent,
            "Only kept pairs the consent rule allows are OCR'd (or sent to a teacher), each once.",
        ),
        Check(
            "text_rich_selection",
            "text_rich_images",
            _text_rich_selection,
            "Text-rich images pass the thresholds and each has its transcription pair; every "
            "other image says why it is not text-rich.",
        ),
    ),
    output_descriptions={
        "text_rich_images": "The text-rich selection's transcription pairs (image -> its OCR "
        "text in reading order; pairs.parquet, what a mixture's text_rich bucket reads), beside "
        "the OCR of every kept image pair (ocr.parquet: Tesseract text, language, word boxes "
        "with confidences, text share), the teacher's QA pairs and synthetic captions flagged "
        "against the images' text (lake images/ocr)."
    },
)
