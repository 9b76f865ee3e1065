"""Text-rich images: the OCR of the kept image pairs, the text-rich selection, transcription pairs,
question-answer pairs from a teacher that sees the image and its OCR text, and OCR as a filter on
synthetic captions.

`make_text_rich(pairs, out, ...)` writes into `out`:
- `ocr.parquet`: one row per kept, consented pair (rows in = rows out), with its `ocr`
  annotation (text in reading order, language (lid.176 on a text-rich image's text of 20 letters
  or more, else the script's), script, confidence, text share, word boxes with confidences) and its `modality`: `text_rich` when the text share and the confidence pass the
  thresholds, else `image`, with the reason in `drop_reason` (no_text, repetitive_text: a row of
  like shapes read as one letter, low_text_share, low_ocr_confidence, undecodable_image,
  no_image: no path or no file there, image_path_outside / image_path_invalid: a path that
  leaves the pairs file's directory or is not a path, never opened).
- `pairs.parquet`: transcription pairs in the `images build` pairs format (id, caption, image_path
  relative to it, training_allowed, drop_reason), so every reader of pairs takes them: each
  text-rich image with its text as the caption; the image copied under `images/`.
- `qa.parquet`: with a teacher, one row per text-rich image: the question-answer items it wrote
  from the image and its OCR text (status ok, no_teacher, teacher_error: ..., qa_error: ...,
  no_qa: ...), with the pair's `doc_id` and `training_allowed`; an extractive answer is `verified`
  when it is a run of whole tokens of the OCR text (`found_in`, synth/textmatch.py: never inside
  another word or number), else dropped to `qa_rejects.parquet` (answer_not_in_ocr_text, or
  answer_too_short_to_verify for a single letter). Without a teacher every row says `no_teacher`
  and holds no items (nothing is made up). It reads as a mixture source of `kind: domain_qa`
  with `pairs:` the `images build` pairs its `pair_id` names.
- `caption_flags.parquet` (with `captions`): every synthetic caption of an OCR'd pair with
  `ocr_flag`: null, or why the caption and the image's text disagree: `claims_absent_text`
  (a quoted or named text the image does not contain: "a sign that reads X", "titled X", "with
  the word X"; "a woman reads a book" names none), `claims_text_but_none_found`, or
  `ignores_dominant_text` (the image is mostly text, the caption names neither the text nor
  any of its content words: a function word such as "the", "over", "die", in the text's or the
  caption's language, names nothing).

Consent: opted-out pairs (the one rule, `common.consent`: flag, then ledger) are never read,
never OCR'd and never sent to a teacher; the teacher client refuses them too (`items=`).

Resume: each image's reading is committed to `ocr_journal.sqlite` in `out` as it is read (keyed
by the sha256 of the file's bytes, under a fingerprint of the engine: its code, Tesseract's
version and models, its configuration); a run killed part way is continued by running it again,
which reads only the images not journaled and writes what a clean run writes. The teacher's
answers are cached on disk (`out/_teacher`), so its QA pairs are not asked for twice.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import sqlite3
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, Field

from common.inputs import BadImagePath, check_columns, read_rows, read_schema, resolve_image
from common.manifest import write_parquet
from common.pairs import open_image, pairs_files, settled_rows

OCR_FILE, PAIRS_FILE, QA_FILE, QA_REJECTS_FILE = (
    "ocr.parquet",
    "pairs.parquet",
    "qa.parquet",
    "qa_rejects.parquet",
)
FLAGS_FILE = "caption_flags.parquet"
# The OCR's resume journal (crawlers.images.journal's tables): each image's reading, committed as
# it is read, keyed by the sha256 of the file's bytes; removed once the outputs are written.
OCR_JOURNAL = "ocr_journal.sqlite"
NO_TEACHER = "no_teacher: QA pairs need a teacher (--teacher-url and --teacher-model)"
TEXT_WORDS = re.compile(
    r"\b(text|texts|reads?|reading|says?|saying|written|writing|words?|letters?|lettering|"
    r"labell?ed|labels?|titled?|caption(ed)?|sign|signs|headline|inscription|document|"
    r"poster|chart|table|menu|page)\b|文字|写着|标题|مكتوب|نص",
    re.IGNORECASE,
)
# Words that name an image's text itself (not a thing that may bear text: a table, a page, a
# sign): a caption of a mostly-text image that has none of them, nor any word of its text,
# ignores the text (`ignores_dominant_text`).
TEXT_ITSELF = re.compile(
    r"\b(text|texts|words?|written|writing|handwritten|handwriting|lettering|letters|"
    r"caption(ed)?|titled?|quotes?|quoted|quotation|inscription|inscribed|headlines?|"
    r"paragraphs?|transcript|typed|typewritten|printed text)\b|文字|写着|标题|مكتوب|نص",
    re.IGNORECASE,
)
QUOTED = re.compile(r"[\"“”«»„「『]([^\"“”«»„」』]{2,80})[\"“”«»」』]")
# A named text (`_claims`): what follows a verb of reading, taken as a claim only where the verb
# follows a thing that bears text ("a sign that reads", "a poster says"; "a woman reads a book"
# names no text), or where it is quoted or capitalised ("reading STOP"); what follows "titled" or
# "labelled" always; what follows "the word(s)", "the text" or "lettering" when capitalised.
_CLAIM = r"\s*:?\s+(?P<claim>['\"‘’“”]?[^,.;:!?\n]{1,80})"
_SPEECH = r"(?:reads?|reading|says?|saying|states?|stating)"
_TEXT_BEARER = (
    r"(?:signs?|signboards?|signposts?|posters?|labels?|banners?|plaques?|boards?|billboards?|"
    r"placards?|notices?|shirts?|t-shirts?|cards?|notes?|screens?|displays?|stickers?|covers?|"
    r"pages?|headlines?|captions?|text|writing|inscriptions?|messages?|menus?|graffiti|logos?|"
    r"stamps?|tags?|mugs?|caps?|flags?)"
)
NAMED_BY_BEARER = re.compile(
    rf"\b{_TEXT_BEARER}(?:\s+[\w'-]+){{0,4}}?\s+{_SPEECH}{_CLAIM}", re.IGNORECASE
)
NAMED_BY_TITLE = re.compile(rf"\b(?:labell?ed|titled|captioned|inscribed){_CLAIM}", re.IGNORECASE)
NAMED_BY_SPEECH = re.compile(rf"\b{_SPEECH}{_CLAIM}", re.IGNORECASE)
NAMED_AS_TEXT = re.compile(
    rf"\b(?:(?:the|a)\s+)?(?:words?|text|lettering|inscription|writing){_CLAIM}", re.IGNORECASE
)
# A claim ends before these (lowercase): what comes after says where the text is, not what
# ("a red sign reading STOP at an intersection", "a poster says the museum is closed on
# Mondays": STOP, the museum is closed).
_CLAIM_END = frozenset(
    "at on in under near beside by with above below behind over next from for while during "
    "against along across outside inside into onto through around beneath between among "
    "and but as where which who".split()
)
# Words of a paraphrased claim that say nothing of the text's own words.
_CLAIM_STOP = frozenset(
    "the a an is are was were be been its it this that these those there their his her our "
    "your my of to no not yes very just only".split()
)
_QUOTES = "'\"‘’“”"
# Function words of the project's languages (crawl's target languages, and Arabic, which OCR
# reads): an OCR word among them ("the", "over", "with") is no sign that a caption names the
# image's text (`ignores_dominant_text`). Chinese and Japanese are written without spaces and
# keep their runs whole; Korean's particles are written onto their words.
FUNCTION_WORDS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split())
    for lang, words in {
        "en": "a an the and or but nor so yet of to in on at by for from with without into onto "
        "over under above below near beside besides between among through across along around "
        "about after before behind beyond during until upon within off out up down than as is "
        "are was were be been being am do does did done have has had having will would shall "
        "should can could may might must it its this that these those there here their theirs "
        "his her hers him he she they them we us our ours you your yours my me mine what which "
        "who whom whose when where why how all any both each every some such no not only own "
        "same too very just also more most other another if then else because while again "
        "once yes one ones",
        "de": "der die das den dem des ein eine einer eines einem einen und oder aber doch "
        "sondern denn von vom zu zum zur im in an am auf aus bei beim mit nach seit vor für "
        "gegen ohne um über unter neben zwischen durch bis ist sind war waren sein bin bist "
        "wird werden wurde hat haben hatte es er sie wir ihr ich du man sich nicht kein keine "
        "auch noch nur sehr so wie als wenn dass ob was wer wo hier dort dieser diese dieses "
        "jener alle alles",
        "fr": "le la les un une des du de au aux et ou mais donc car ni que qui quoi dont où ce "
        "cet cette ces son sa ses leur leurs mon ma mes ton ta tes notre nos votre vos il elle "
        "ils elles on nous vous je tu se en dans sur sous par pour avec sans chez entre vers "
        "est sont était être ont avoir ne pas plus très aussi comme si tout tous toute toutes",
        "es": "el la los las un una unos unas lo de del al y e o u pero sino que quien cual "
        "como cuando donde en con sin por para sobre entre hacia hasta desde es son está están "
        "era fue ser estar ha han se su sus mi mis tu tus nuestro nuestra este esta estos estas "
        "ese esa no muy más también ya",
        "it": "il lo la i gli le un uno una di del della dei degli delle da dal dalla in nel "
        "nella con su sul sulla per tra fra e ed o ma che chi cui come quando dove è sono era "
        "essere ha hanno si suo sua suoi sue non più molto anche questo questa quello quella",
        "pt": "o a os as um uma uns umas de do da dos das em no na nos nas por pelo pela para "
        "com sem sobre entre e ou mas que quem como quando onde é são era ser estar está foi "
        "tem se seu sua seus suas não muito mais também este esta esse essa isso ao aos à às",
        "nl": "de het een en of maar van in op aan met voor naar bij uit over onder door tot om "
        "te is zijn was waren wordt worden heeft hebben dit dat deze die er hij zij ze we wij "
        "ik je u niet geen ook nog wel als dan zo",
        "pl": "i w we z ze na do od o u za po przez dla przy pod nad przed między bez a ale lub "
        "oraz albo że czy jak gdy gdzie kto co to jest są był była było być się nie tak też "
        "już ten ta te tego tej jego jej ich",
        "ru": "и в во на с со к ко по о об от до из за для без под над при через у а но или "
        "что как когда где кто это этот эта эти то тот та те он она оно они мы вы я ты его её "
        "их не ни же бы ли есть был была было были быть также уже очень",
        "ko": "이 그 저 및 등 또는 그리고 하지만 그러나 것 수 있는 있다 없는 그것 이것 저것",
        "ar": "في من على إلى الى عن مع و أو ثم لا ما هذا هذه ذلك تلك التي الذي هو هي هم أن إن "
        "كان قد",
    }.items()
}
_ALL_FUNCTION_WORDS = frozenset().union(*FUNCTION_WORDS.values())

BOX = pa.struct(
    [
        ("text", pa.string()),
        ("conf", pa.float32()),
        ("x0", pa.int32()),
        ("y0", pa.int32()),
        ("x1", pa.int32()),
        ("y1", pa.int32()),
    ]
)
OCR_STRUCT = pa.struct(
    [
        ("text", pa.string()),
        ("language", pa.string()),
        ("script", pa.string()),
        ("confidence", pa.float32()),
        ("text_share", pa.float32()),
        ("words", pa.int32()),
        ("boxes", pa.list_(BOX)),
        ("rotation", pa.int32()),
        ("skew", pa.float32()),
        ("engine", pa.string()),
    ]
)
OCR_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("doc_id", pa.string()),
        ("image_sha256", pa.string()),
        ("image_path", pa.string()),  # as the pairs file names it, relative to that file
        ("pairs_file", pa.string()),
        ("ocr", OCR_STRUCT),
        ("modality", pa.string()),
        ("text_rich", pa.bool_()),
        ("drop_reason", pa.string()),
        ("seconds", pa.float32()),
    ]
)
PAIRS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("pair_id", pa.string()),
        ("doc_id", pa.string()),
        ("caption", pa.string()),
        ("language", pa.string()),
        ("modality", pa.string()),
        ("image_sha256", pa.string()),
        ("stored_sha256", pa.string()),  # the file's hash (faces blurred: not image_sha256)
        ("image_path", pa.string()),
        ("training_allowed", pa.bool_()),
        ("drop_reason", pa.string()),
    ]
)
QA_ITEM = pa.struct(
    [
        ("question", pa.string()),
        ("answer", pa.string()),
        ("extractive", pa.bool_()),
        ("verified", pa.bool_()),
    ]
)
QA_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("image_path", pa.string()),  # relative to qa.parquet (the copy under images/)
        ("ocr_text", pa.string()),
        ("qa", pa.list_(QA_ITEM)),
        ("status", pa.string()),
        # added: the pair's document and consent, so a mixture's `kind: domain_qa` source (with
        # `pairs:` the pairs its pair_id names) reads it under the one consent rule
        ("doc_id", pa.string()),
        ("training_allowed", pa.bool_()),
    ]
)
QA_REJECTS_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("question", pa.string()),
        ("answer", pa.string()),
        ("reason", pa.string()),
    ]
)
FLAGS_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("level", pa.string()),
        ("caption", pa.string()),
        ("ocr_text", pa.string()),
        ("text_share", pa.float32()),
        ("ocr_flag", pa.string()),
    ]
)


class Selection(BaseModel):
    """When an image is text-rich, and when its text dominates it."""

    min_text_share: float = Field(0.04, ge=0, le=1, description="share of the area under words")
    min_confidence: float = Field(0.7, ge=0, le=1, description="character-weighted confidence")
    min_letters: int = Field(
        4, ge=1, description="letters read (digits and signs alone are what shapes read as)"
    )
    min_distinct_letters: int = Field(
        4, ge=1, description="distinct letters read (a row of like shapes reads as one)"
    )
    dominant_share: float = Field(
        0.15, ge=0, le=1, description="text share from which a caption must mention the text"
    )


class QAItem(BaseModel):
    question: str
    answer: str
    extractive: bool = Field(
        description="true when the answer is copied from the text in the image"
    )


class QAAnswer(BaseModel):
    items: list[QAItem] = Field(default_factory=list, max_length=8)


# ----------------------------------------------------------------------------- reading pairs


def read_pairs(pairs: Any, consent: Any = None) -> tuple[list[dict], int]:
    """(kept, consented pairs with their image file; how many kept pairs were opted out)."""
    from common.consent import LEDGER_URL_KEYS, NO_LEDGER

    rule = consent if consent is not None else NO_LEDGER
    need = {"id": "string", "image_path": "string", "drop_reason": "string"}
    fix = "pass an `images build` output"
    kept, opted_out = [], 0
    for f in pairs_files(pairs):  # the columns this reader needs, named per file
        check_columns(f, read_schema(f, fix), need, fix=fix)
    # drop_reason as readers take it: a duplicate whose kept copy is opted out takes its place,
    # and an image kept in two shards is read once (common.pairs.settle)
    for f, rows in settled_rows(pairs, rule, required=need):
        for r in rows:
            if r["drop_reason"] is not None:
                continue
            if not rule.allows(r):
                opted_out += 1  # never read, never OCR'd, never sent
                continue
            image_error = None  # why the pair has no image file to read
            try:
                image_file = resolve_image(r["image_path"], f.parent)
            except BadImagePath as exc:  # its own reason: image_path_outside, image_path_invalid
                image_file, image_error = None, f"{exc.reason}: {exc.detail}"[:300]
            kept.append(
                {
                    "pair_id": r["id"],
                    "doc_id": r.get("doc_id"),
                    "url": r.get("url"),
                    # the ledger's other URL keys (the image's src): the client checks them too
                    **{k: r[k] for k in LEDGER_URL_KEYS if k != "url" and r.get(k) is not None},
                    "training_allowed": r.get("training_allowed"),  # the boolean true: allowed
                    "image_sha256": r.get("image_sha256"),
                    "stored_sha256": r.get("stored_sha256") or r.get("image_sha256"),
                    "image_path": r["image_path"],
                    "pairs_file": str(f),
                    "image_file": image_file,
                    "image_error": image_error,
                }
            )
    return kept, opted_out


# ----------------------------------------------------------------------------- selection


def select(ocr: dict | None, sel: Selection) -> str | None:
    """None when the OCR result makes the image text-rich, else the reason it does not."""
    if ocr is None:
        return "undecodable_image"
    if letters(ocr["text"]) < sel.min_letters:
        return "no_text"
    if repetitive(ocr["text"], sel.min_distinct_letters):
        return "repetitive_text"
    if ocr["text_share"] < sel.min_text_share:
        return "low_text_share"
    if ocr["confidence"] < sel.min_confidence:
        return "low_ocr_confidence"
    return None


def name_languages(ocrs: list[dict], min_letters: int = 20, min_score: float = 0.5) -> None:
    """The language of each reading of at least `min_letters` letters by lid.176 (the project's
    language identifier), where it is sure; a shorter one keeps its script's language (Latin:
    en, the language Tesseract read it in)."""
    todo = [o for o in ocrs if letters(o["text"]) >= min_letters]
    if not todo:
        return
    from common.langid import LanguageIdentifier

    for o, (lang, score) in zip(
        todo, LanguageIdentifier().predict_batch([o["text"] for o in todo]), strict=True
    ):
        if score >= min_score:
            o["language"] = lang


def _ocr_row(result, engine_name: str) -> dict:
    return {
        "text": result.text,
        "language": result.language,
        "script": result.script,
        "confidence": result.confidence,
        "text_share": result.text_share,
        "words": len(result.words),
        "boxes": [
            {
                "text": w.text,
                "conf": w.conf,
                **dict(zip(("x0", "y0", "x1", "y1"), w.box, strict=True)),
            }
            for w in result.words
        ],
        "rotation": result.rotation,
        "skew": result.skew,
        "engine": engine_name,
    }


# ----------------------------------------------------------------------------- verification


def letters(text: str) -> int:
    """How many letters (any script) a text has."""
    return sum(unicodedata.category(ch)[0] == "L" for ch in text)


def repetitive(text: str, min_distinct: int = 4) -> bool:
    """Whether a reading is a row of the same shapes (houses read as "会会会会", circles as
    "AAAAA"): fewer distinct letters than `min_distinct`, or one word making half of 3 or more."""
    distinct = {ch.casefold() for ch in text if unicodedata.category(ch)[0] == "L"}
    if len(distinct) < min_distinct:
        return True
    words = [normalise(w) for w in text.split() if normalise(w)]
    return len(words) >= 3 and Counter(words).most_common(1)[0][1] * 2 >= len(words)


def normalise(text: str) -> str:
    """Text compared across OCR and answers: NFKC, case folded, letters and digits only."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if unicodedata.category(ch)[0] in "LN")


def found_in(needle: str, haystack: str, tolerance: float = 0.15) -> bool:
    """Whether `needle` is a run of whole tokens of `haystack` (synth.textmatch: case, accents and
    punctuation aside; never inside another word or number), allowing OCR's misread characters:
    an edit distance of at most `tolerance` of its characters, numbers exact. A needle of one
    letter (or one character of a script without spaces) is never found."""
    from synth.textmatch import occurs

    return occurs(needle, haystack, tolerance)


def verify_qa(items: list[QAItem], ocr_text: str) -> tuple[list[dict], list[tuple[QAItem, str]]]:
    """(kept items with `verified`, [(dropped item, reason)]): an extractive answer must be found
    in the OCR text on whole tokens (`found_in`); one too short to tell (a single letter) is
    dropped as such; an abstractive one is kept unverified; an exact repeat counts once."""
    from synth.textmatch import too_short

    kept, dropped, seen = [], [], set()
    for it in items:
        key = (it.question.strip(), it.answer.strip(), it.extractive)
        if key in seen:  # the same item written twice is one item
            continue
        seen.add(key)
        if not it.question.strip() or not it.answer.strip():
            dropped.append((it, "empty_question_or_answer"))
        elif it.extractive and too_short(it.answer):
            dropped.append((it, "answer_too_short_to_verify"))
        elif it.extractive and not found_in(it.answer, ocr_text):
            dropped.append((it, "answer_not_in_ocr_text"))
        else:
            kept.append(
                {
                    "question": it.question.strip(),
                    "answer": it.answer.strip(),
                    "extractive": it.extractive,
                    "verified": bool(it.extractive),
                }
            )
    return kept, dropped


def _capitalised(token: str) -> bool:
    """Whether a caption's token reads as a text's own word: it starts with a capital, a digit or
    a letter of a script without case (a name, "STOP", "2024", "出口")."""
    ch = next((c for c in token if c.isalnum()), "")
    return bool(ch) and (
        ch.isupper() or ch.isdigit() or (ch.isalpha() and ch.lower() == ch.upper())
    )


def _claim(span: str, any_case: bool) -> tuple[str, bool] | None:
    """(claim, verbatim) from the words after a verb of reading or "the words": a quoted span
    (verbatim); else its leading capitalised tokens (verbatim: "STOP at an intersection" ->
    STOP); else, where `any_case`, its words up to the first that says where the text is
    (`_CLAIM_END`; a paraphrase: "the museum is closed on Mondays" -> the museum is closed);
    else None (no claim: "reads a book in a park")."""
    span = span.strip()
    if span[:1] in _QUOTES:
        inner = span[1:]
        end = min((inner.find(q) for q in _QUOTES if q in inner), default=-1)
        return (inner[:end].strip(), True) if end > 0 else (inner.strip(), True)
    tokens = span.split()
    caps = []
    for t in tokens:
        if not _capitalised(t):
            break
        caps.append(t)
    if caps:
        return " ".join(caps), True
    if not any_case:
        return None
    kept = []
    for t in tokens:
        if t.casefold() in _CLAIM_END:
            break
        kept.append(t)
    return (" ".join(kept), False) if kept else None


def _claims(caption: str) -> list[tuple[str, bool]]:
    """The texts a caption says the image holds, each (claim, verbatim): quoted spans, and the
    words a reading verb or "the words" names (see `NAMED_BY_BEARER` and `_claim`)."""
    out: dict[int, tuple[str, bool]] = {}  # by where the claim starts: one reading of each
    for m in QUOTED.finditer(caption):
        out[m.start(1) - 1] = (m.group(1), True)
    patterns = (
        (NAMED_BY_BEARER, True),  # a sign that reads ...: any words
        (NAMED_BY_TITLE, True),  # titled ...: any words
        (NAMED_BY_SPEECH, False),  # reads ...: quoted or capitalised only
        (NAMED_AS_TEXT, False),  # with the words ...: quoted or capitalised only
    )
    for pattern, any_case in patterns:
        for m in pattern.finditer(caption):
            start = m.start("claim")
            if start in out:
                continue
            got = _claim(m.group("claim"), any_case)
            if got is not None:
                out[start] = got
    return [(c.strip(), v) for c, v in out.values() if len(normalise(c)) >= 2]


def _claim_found(claim: str, verbatim: bool, text: str) -> bool:
    """Whether the image's text holds a claim: a verbatim one as a run of its tokens (OCR's
    misread characters allowed); a paraphrase where half or more of its first four words that
    say something (`_CLAIM_STOP` left out) are words of the text."""
    if found_in(claim, text, tolerance=0.25):
        return True
    if verbatim:
        return False
    words = [w for w in claim.split() if len(normalise(w)) >= 3]
    words = [w for w in words if normalise(w) not in _CLAIM_STOP][:4]
    if not words:
        return True  # nothing of the text's own words said
    return 2 * sum(found_in(w, text, tolerance=0.25) for w in words) >= len(words)


def _caption_language(caption: str) -> str | None:
    """The language whose function words a caption uses most (ties: the first of
    FUNCTION_WORDS), or None when it uses none."""
    words = [normalise(w) for w in caption.split()]
    hits = {lang: sum(w in fw for w in words) for lang, fw in FUNCTION_WORDS.items()}
    best = max(hits, key=lambda lang: hits[lang])
    return best if hits[best] else None


def _content_words(text: str, language: str | None, caption: str) -> list[str]:
    """The words of an image's text whose presence in a caption names that text: not function
    words of the text's language (every project language's when it is not one of them) nor
    of the caption's; words of 3 letters or more, numbers of 2 digits or more, and proper
    tokens of 2 ("UK", "A4"). A run of a script without spaces (Chinese, Japanese) is one word,
    kept whole when it has 3 characters or more."""
    stop = set(_CLAIM_STOP) | FUNCTION_WORDS.get(language or "", _ALL_FUNCTION_WORDS)
    stop |= FUNCTION_WORDS.get(_caption_language(caption) or "", frozenset())
    out = []
    for w in re.split(r"\s+", text):
        n = normalise(w)
        if n in stop or len(n) < 2:
            continue
        core = "".join(ch for ch in w if ch.isalnum())  # 2 characters: a number or "UK", "A4"
        if len(n) >= 3 or not core.isalpha() or core.isupper():
            out.append(w)
    return out


def caption_flag(caption: str, ocr: dict | None, sel: Selection) -> str | None:
    """Why a caption and the image's OCR text disagree, or None: a text it names that the image
    does not hold (`_claims`: quoted, or named after "a sign that reads", "titled", "with the
    words"; "a woman reads a book" names none), or an image mostly of text whose caption names
    neither the text (`TEXT_ITSELF`: text, words, lettering...; not a table or a page, which
    may be furniture or bear no text) nor any of its content words (`_content_words`)."""
    if ocr is None or not caption:
        return None
    text = ocr["text"]
    has_text = (
        letters(text) >= sel.min_letters
        and ocr["confidence"] >= sel.min_confidence
        and not repetitive(text, sel.min_distinct_letters)
    )
    claims = _claims(caption)
    for claim, verbatim in claims:
        if not _claim_found(claim, verbatim, text):
            return f"claims_absent_text: {claim[:80]!r} is not in the image's text"
    if not has_text and TEXT_WORDS.search(caption) and claims:
        return "claims_text_but_none_found"
    if has_text and ocr["text_share"] >= sel.dominant_share and not claims:
        words = _content_words(text, ocr.get("language"), caption)
        if not TEXT_ITSELF.search(caption) and not any(found_in(w, caption, 0) for w in words):
            return (
                f"ignores_dominant_text: text covers {ocr['text_share']:.0%} of the image "
                "and the caption names neither it nor any of its words"
            )
    return None


# ----------------------------------------------------------------------------- teacher

QA_PROMPT = (
    "This image contains text. Its OCR reading, in reading order, is:\n---\n{text}\n---\n"
    "Write up to {n} question-answer pairs about the image that a reader of its text can "
    "answer. For questions whose answer is copied from the text, copy it exactly as the OCR "
    "reading has it and set extractive to true; for questions that need reasoning over the "
    "text or the picture, set extractive to false. Answer in the language of the text."
)


def teacher_qa(teacher, pair: dict, data: bytes, text: str, n: int) -> list[QAItem]:
    """The teacher's QA items for one image, which it sees with its OCR text."""
    from common.teacher import user_message

    msg = user_message(QA_PROMPT.format(text=text[:4000], n=n), [data])
    answer = teacher.chat_json([msg], QAAnswer, items=[pair], temperature=0.0, max_tokens=800)
    return list(answer.items)[:n]


# ----------------------------------------------------------------------------- the run


def make_text_rich(
    pairs: Any,
    out: Path,
    *,
    engine: Any = None,
    selection: Selection | None = None,
    teacher: Any = None,
    questions: int = 3,
    captions: Path | None = None,
    consent: Any = None,
    workers: int = 2,
    inputs: Iterable[str] = (),
    on_progress: Callable[[str], None] = lambda msg: None,
) -> dict[str, Any]:
    """OCR every kept, consented pair of `pairs`, select the text-rich ones, write their
    transcription and QA pairs and, given `captions`, flag the captions that disagree with the
    images' text. Returns the summary (figures and `outputs`)."""
    from common.consent import flag_true
    from crawlers.images.ocr import OcrEngine

    started = time.perf_counter()
    sel = selection or Selection()
    engine = engine or OcrEngine()
    engine_name = f"tesseract {getattr(engine, 'version', '')}".strip()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    kept, opted_out = read_pairs(pairs, consent)
    on_progress(f"ocr: {len(kept)} kept pairs ({opted_out} opted out, never read)")
    results, resumed = _read_all(kept, engine, engine_name, out, workers, on_progress)

    rows, transcriptions, images_dir = [], [], out / "images"
    shutil.rmtree(images_dir, ignore_errors=True)
    for p, (ocr, seconds, why) in zip(kept, results, strict=True):
        reason = why or select(ocr, sel)
        if reason == "no_text":  # too few letters to be text: no language (docs: `und`)
            ocr["language"], ocr["script"] = "und", ""
        rel = None
        if reason is None:
            try:  # the transcription and QA pairs name the copy, inside this dataset
                rel = _copy_image(p, images_dir)
            except OSError as exc:  # gone since it was read
                reason = f"no_image: {' '.join(str(exc).split())[:200]}"
        rows.append(
            {
                "pair_id": p["pair_id"],
                "doc_id": p["doc_id"],
                "image_sha256": p["image_sha256"],
                "image_path": p["image_path"],
                "pairs_file": p["pairs_file"],
                "ocr": ocr,
                "modality": "text_rich" if reason is None else "image",
                "text_rich": reason is None,
                "drop_reason": reason,
                "seconds": seconds,
            }
        )
        if reason is None:
            transcriptions.append(
                {
                    "id": f"{p['pair_id']}:ocr",
                    "pair_id": p["pair_id"],
                    "doc_id": p["doc_id"],
                    "caption": ocr["text"],
                    "language": ocr["language"],
                    "modality": "text_rich",
                    "image_sha256": p["image_sha256"],
                    "stored_sha256": p["stored_sha256"],
                    "image_path": rel,
                    "training_allowed": flag_true(p["training_allowed"]),
                    "drop_reason": None,
                }
            )
    name_languages([r["ocr"] for r in rows if r["text_rich"]])
    language = {r["pair_id"]: r["ocr"]["language"] for r in rows if r["text_rich"]}
    for t in transcriptions:
        t["language"] = language[t["pair_id"]]
    config = {"selection": sel.model_dump(), "questions": questions, "engine": engine_name}
    # the Tesseract models it read with (an engine without a config, as tests pass: none)
    models = engine.config.models() if hasattr(getattr(engine, "config", None), "models") else {}
    config.update(models)
    extra = {"ocr_models": models} if models else None
    inputs = list(inputs)
    write_parquet(
        pa.Table.from_pylist(rows, schema=OCR_SCHEMA),
        out / OCR_FILE,
        inputs=inputs,
        config=config,
        extra=extra,
    )
    write_parquet(
        pa.Table.from_pylist(transcriptions, schema=PAIRS_SCHEMA),
        out / PAIRS_FILE,
        inputs=inputs,
        config=config,
        extra=extra,
    )
    qa_rows, rejects = _qa(kept, rows, teacher, questions, out)
    write_parquet(pa.Table.from_pylist(qa_rows, schema=QA_SCHEMA), out / QA_FILE, inputs=inputs)
    write_parquet(pa.Table.from_pylist(rejects, schema=QA_REJECTS_SCHEMA), out / QA_REJECTS_FILE)
    # The asset is the text-rich selection's transcription pairs, what a mixture's text_rich
    # bucket reads; ocr.parquet, qa.parquet and caption_flags.parquet lie beside it.
    outputs = {"text_rich_images": str(out / PAIRS_FILE)}
    flags_summary: dict[str, Any] = {}
    if captions is None:  # a flags file of an earlier run would no longer match ocr.parquet
        from common.manifest import manifest_path

        manifest_path(out / FLAGS_FILE).unlink(missing_ok=True)
        (out / FLAGS_FILE).unlink(missing_ok=True)
    else:
        flags = flag_captions(captions, rows, sel)
        write_parquet(
            pa.Table.from_pylist(flags, schema=FLAGS_SCHEMA),
            out / FLAGS_FILE,
            inputs=[str(captions)],
            config=config,
        )
        flags_summary = {
            "captions_checked": len(flags),
            "captions_flagged": Counter(
                (f["ocr_flag"] or "").split(":")[0] for f in flags if f["ocr_flag"]
            ),
        }
    _remove_journal(out)  # every output is written: a rerun reads afresh
    reasons = Counter(r["drop_reason"].split(":")[0] for r in rows if r["drop_reason"])
    secs = [r["seconds"] for r in rows if r["seconds"] is not None]
    status = Counter(q["status"].split(":")[0] for q in qa_rows)
    return {
        "pairs": len(kept),
        "opted_out_skipped": opted_out,
        "text_rich": len(transcriptions),
        "not_text_rich": dict(reasons),
        "languages": dict(Counter(r["ocr"]["language"] for r in rows if r["text_rich"])),
        "qa_items": sum(len(q["qa"]) for q in qa_rows),
        "qa_verified": sum(i["verified"] for q in qa_rows for i in q["qa"]),
        "qa_rejected": len(rejects),
        "qa_status": dict(status),
        **{k: dict(v) if isinstance(v, Counter) else v for k, v in flags_summary.items()},
        "ocr_ms_per_image": round(1000 * sum(secs) / len(secs), 1) if secs else 0.0,
        "models": models.get("languages", []),
        "vertical_models": models.get("vertical_languages", []),
        "traditional_model": models.get("traditional"),
        "resumed_images": resumed,
        "seconds": round(time.perf_counter() - started, 3),
        "outputs": outputs,
    }


def _read_all(
    kept: list[dict], engine: Any, engine_name: str, out: Path, workers: int, on_progress
) -> tuple[list[tuple[dict | None, float | None, str | None]], int]:
    """(each kept pair's (ocr annotation, seconds, reason it has none), in input order; how many
    readings were taken from the journal of a killed earlier run). Each new reading is committed
    to the journal as it completes, so a kill loses at most the images being read."""
    journal = _open_journal(out, _engine_fingerprint(engine), on_progress)
    done = journal.rows()  # sha256 of the file's bytes -> {"ocr", "seconds"}
    journaled = set(done)
    if done:
        on_progress(f"ocr: {len(done)} readings of a killed run taken from {OCR_JOURNAL}")

    def read_one(p: dict):
        if p.get("image_error"):
            return None, None, None, p["image_error"]
        if not p["image_file"]:
            return None, None, None, "no_image: the pair names no image_path"
        if not Path(p["image_file"]).is_file():  # a file not there is no image, not a bad one
            why = f"no_image: {p['image_path']!r} is not a file beside {p['pairs_file']}"
            return None, None, None, why
        try:
            data = Path(p["image_file"]).read_bytes()
        except OSError:
            return None, None, None, "undecodable_image"
        key = hashlib.sha256(data).hexdigest()
        if key in done:
            return key, done[key]["ocr"], done[key]["seconds"], None
        image = open_image(data)
        if image is None:
            return None, None, None, "undecodable_image"
        try:
            res = engine.read(image)
        except Exception as exc:  # noqa: BLE001 - one image's failure is its row's reason
            why = f"ocr_error: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
            return None, None, None, why  # not journaled: a resumed run tries it again
        return key, _ocr_row(res, engine_name), round(res.seconds, 4), None

    results: list = [None] * len(kept)
    resumed = 0
    pool = ThreadPoolExecutor(max(1, workers))
    try:
        futures = {pool.submit(read_one, p): i for i, p in enumerate(kept)}
        for future in as_completed(futures):
            key, ocr, seconds, why = future.result()
            results[futures[future]] = (ocr, seconds, why)
            if key is None:
                continue
            if key in done:  # a killed run's reading (or an image met twice in this run)
                resumed += key in journaled
                continue
            done[key] = {"id": key, "ocr": ocr, "seconds": seconds}
            journal.add(done[key])
            journal.commit()
    finally:  # interrupted: the images not started are not waited for
        pool.shutdown(wait=True, cancel_futures=True)
        journal.close()
    # each row its own annotation, as the journal gives a reading back: a resumed run's values
    # are a clean run's, and rows of one image share no dict (a row's language is set later)
    return [(json.loads(json.dumps(o)) if o else o, s, w) for o, s, w in results], resumed


def _engine_fingerprint(engine: Any) -> str:
    """What a journaled reading must share with the run that takes it: the engine's class and the
    source of its modules (crawlers/images/ocr*.py), Tesseract's version, the configuration, the
    model files (names, sizes, times) and Pillow's version."""
    import PIL

    cls = type(engine)
    parts = [f"{cls.__module__}.{cls.__qualname__}", str(getattr(engine, "version", ""))]
    source = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if source:
        stem = Path(source).stem
        for f in sorted(Path(source).parent.glob(f"{stem}*.py")):
            parts.append(f"{f.name}:{hashlib.sha256(f.read_bytes()).hexdigest()}")
    config = getattr(engine, "config", None)
    parts.append(config.model_dump_json() if hasattr(config, "model_dump_json") else repr(config))
    tessdata = getattr(engine, "tessdata", None)
    if tessdata and Path(tessdata).is_dir():
        for f in sorted(Path(tessdata).glob("*.traineddata")):
            st = f.stat()
            parts.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
    parts.append(f"PIL {PIL.__version__}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _open_journal(out: Path, fingerprint: str, on_progress):
    """The OCR's resume journal in `out` (`crawlers.images.journal.Journal`), holding readings
    of this engine only: those of another (or an unreadable journal) are dropped."""
    from crawlers.images.journal import Journal

    path = out / OCR_JOURNAL
    try:
        journal = Journal(path)
        stored = journal.get_meta("fingerprint")
    except sqlite3.DatabaseError as exc:
        on_progress(f"ocr: {path} is unreadable ({exc}); reading every image again")
        _remove_journal(out)
        journal, stored = Journal(path), None
    if stored != fingerprint:
        if stored is not None:
            on_progress(f"ocr: {path} holds another engine's readings; reading every image again")
        journal.con.execute("DELETE FROM rows")
        journal.set_meta("fingerprint", fingerprint)
    return journal


def _remove_journal(out: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        (out / f"{OCR_JOURNAL}{suffix}").unlink(missing_ok=True)


def _copy_image(pair: dict, images_dir: Path) -> str:
    """The pair's image copied into the output (transcription and QA files name it there)."""
    images_dir.mkdir(parents=True, exist_ok=True)
    name = _image_name(pair)
    shutil.copyfile(pair["image_file"], images_dir / name)
    return f"images/{name}"


def _qa(kept, rows, teacher, questions, out) -> tuple[list[dict], list[dict]]:
    """One QA row per text-rich image (no_teacher rows without a teacher), and the rejects. One
    image's failure (the teacher's, or any other) is its row's status, never the run's end."""
    from common.consent import flag_true
    from common.teacher import TeacherError

    todo = [(p, r) for p, r in zip(kept, rows, strict=True) if r["text_rich"]]
    qa_rows, rejects = [], []

    def ask(job):
        p, r = job
        if teacher is None:
            return [], [], NO_TEACHER
        try:
            data = (out / "images" / _image_name(p)).read_bytes()  # the copy the pairs name
            items = teacher_qa(teacher, p, _teacher_bytes(data), r["ocr"]["text"], questions)
            good, bad = verify_qa(items, r["ocr"]["text"])
        except TeacherError as exc:
            return [], [], f"teacher_error: {' '.join(str(exc).split())[:300]}"
        except Exception as exc:  # noqa: BLE001 - one image's failure is its row's status
            return [], [], f"qa_error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        status = "ok" if good else f"no_qa: all {len(items)} items dropped"
        return good, bad, status

    with ThreadPoolExecutor(4 if teacher is not None else 1) as pool:
        answers = list(pool.map(ask, todo))
    for (p, r), (good, bad, status) in zip(todo, answers, strict=True):
        rel = f"images/{_image_name(p)}"
        qa_rows.append(
            {
                "pair_id": p["pair_id"],
                "image_path": rel,
                "ocr_text": r["ocr"]["text"],
                "qa": good,
                "status": status,
                "doc_id": p["doc_id"],
                "training_allowed": flag_true(p["training_allowed"]),
            }
        )
        rejects += [
            {"pair_id": p["pair_id"], "question": it.question, "answer": it.answer, "reason": why}
            for it, why in bad
        ]
    return qa_rows, rejects


def _image_name(pair: dict) -> str:
    name = f"{pair['image_sha256'] or pair['pair_id']}{Path(pair['image_file']).suffix}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def _teacher_bytes(data: bytes) -> bytes:
    """The image as stored when a vision model reads its format, else re-encoded as PNG (as
    every reader of pairs sees it: common.pairs.open_image)."""
    from common.teacher import image_mime

    try:
        image_mime(data)
        return data
    except ValueError:
        im = open_image(data)
        if im is None:
            raise ValueError("the image copied for QA does not decode") from None
        buf = io.BytesIO()
        im.save(buf, format="PNG")
        return buf.getvalue()


def flag_captions(captions: Path, rows: list[dict], sel: Selection) -> list[dict]:
    """Every caption of an OCR'd pair with its `ocr_flag` (null: no disagreement found)."""
    by_pair = {r["pair_id"]: r["ocr"] for r in rows}
    need = {"pair_id": "string", "level": "string", "caption": "string"}
    out = []
    for c in read_rows(captions, required=need, fix="pass a `synth captions` output"):
        if c["pair_id"] not in by_pair or not c["caption"]:
            continue  # a pair not OCR'd here (opted out, dropped) or a caption not made
        ocr = by_pair[c["pair_id"]]
        out.append(
            {
                "pair_id": c["pair_id"],
                "level": c["level"],
                "caption": c["caption"],
                "ocr_text": ocr["text"] if ocr else None,
                "text_share": ocr["text_share"] if ocr else None,
                "ocr_flag": caption_flag(c["caption"], ocr, sel),
            }
        )
    return out
