"""Domain QA: a teacher's question-answer pairs about knowledge-domain images, with adversarial
questions the image cannot answer, whose refusals are kept as `refusal` items.

Input: `domain_images.parquet` (the `images domains` stage: `id` is the pair's id, `domain`,
`selected`, `training_allowed`) and the image pairs it was built from (`pairs.parquet`: `id`,
`image_path` relative to that file's directory, `image_sha256`, `training_allowed`, and the ids
and URLs the consent ledger matches, `common.consent.LEDGER_ID_KEYS` and `LEDGER_URL_KEYS`, where
the file has them: an image opted out by its own URL, `src`, is never sent).

Every selected domain image is one output row (rows in = rows out); a row that got no QA says
why in `status`:
- `opted_out` / `no_consent_evidence`: the domain row or its pair has `training_allowed` false /
  missing. The image is never sent to any endpoint, nor copied.
- `no_pair`, `no_image`, `unsupported_image`: the image cannot be found or read (not a regular
  file of at most MAX_IMAGE_BYTES, or not decodable by `common.pairs.open_image`: a
  decompression bomb included).
- `no_teacher`: domain QA needs a teacher; without one every other image gets this status and
  empty `qa` (nothing is made up).
- `teacher_error: ...`, `no_qa: ...`: the teacher failed, or every item it wrote was dropped.

With a teacher (an OpenAI-compatible vision model, `common.teacher.TeacherClient`):
1. QA request: the image as a data URL, the domain named in the prompt. The teacher writes up to
   `questions` question-answer pairs answerable from the image (kind one of ANSWER_KINDS) and up
   to `adversarial` questions about the image that it cannot answer.
2. Probe request, a fresh conversation with the image: the teacher-written unanswerable questions
   and `templates` fixed ones (TEMPLATES: who made the image, when, where, ...; unanswerable by
   construction) are asked, with the instruction to refuse what the image does not show. A
   refusal is kept only when the answer's text reads as one (`reads_as_refusal`: "cannot be
   determined", "the image does not show this", "Unknown.", "N/A", and their like in German,
   French, Spanish, Russian, Chinese, Japanese, Arabic and Hebrew), whatever the `refused`
   flag says: kind `refusal`, `answerable=False`, and as its answer the fixed REFUSAL_ANSWER,
   not the teacher's words, which may carry an invented fact beside the refusal ("I cannot
   tell; it was made in 2019"). `verified=True` for a template question, whose
   unanswerability is known; False for a teacher-written one. A probe answered with anything
   else is dropped: `refused_but_answered` when the flag says refused, else
   `answered_unanswerable`.
Answerable items are `verified=False`: nothing in the image's data can recompute them; one whose
answer reads as a refusal ("Sorry, I don't know.") is dropped as `answerable_question_refused`.
Dropped items go to `domain_qa_rejects.parquet` with their reason. Both requests are structured
output (`chat_json`: JSON schema, validation, one repair retry) and cached by the client, so a
rerun sends nothing.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import random
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, Field

from common.consent import LEDGER_ID_KEYS, LEDGER_URL_KEYS
from common.inputs import (
    MAX_IMAGE_BYTES,
    BadImagePath,
    read_parquet,
    read_regular_file,
    read_schema,
    resolve_image,
)
from common.pairs import open_image, pairs_files
from synth.textmatch import fold

log = logging.getLogger("synth.domain_qa")

OUTPUT_NAME = "domain_qa.parquet"
REJECTS_NAME = "domain_qa_rejects.parquet"
DOMAINS_NAME = "domain_images.parquet"
IMAGES_DIR = "images"
REFUSAL = "refusal"
ANSWER_KINDS = ("identify", "attribute", "count", "position", "text", "reasoning")
NO_TEACHER = "no_teacher: domain QA needs a teacher (--teacher-url and --teacher-model)"

QA_STRUCT = pa.struct(
    [
        ("question", pa.string()),
        ("answer", pa.string()),
        ("kind", pa.string()),
        ("verified", pa.bool_()),
        ("answerable", pa.bool_()),
    ]
)
DOMAIN_QA = pa.schema(
    [
        ("id", pa.string()),
        ("pair_id", pa.string()),
        ("domain", pa.string()),
        ("image_path", pa.string()),
        ("qa", pa.list_(QA_STRUCT)),
        ("training_allowed", pa.bool_()),
        ("status", pa.string()),
        ("teacher", pa.string()),
    ]
)
REJECTS = pa.schema(
    [
        ("id", pa.string()),  # "<row id>#r<k>": the k-th item dropped for that row
        ("row_id", pa.string()),  # the domain_qa row
        ("pair_id", pa.string()),
        ("domain", pa.string()),
        ("question", pa.string()),
        ("answer", pa.string()),
        ("kind", pa.string()),
        ("reason", pa.string()),
    ]
)

# Questions no image answers from its pixels: who made it, when, where, what came after.
TEMPLATES = (
    "What is the full name of the person who made this image?",
    "On what exact date and at what time was this image made?",
    "What are the GPS coordinates of the place where this image was made?",
    "What happened in the minute after this image was made?",
    "What did the camera or device that made this image cost, in euros?",
    "What is the name of the organisation that owns this image?",
)

# The answer kept for every refusal (see the module docstring: the teacher's own words may carry
# an invented fact beside the refusal).
REFUSAL_ANSWER = "The image does not show this."

# A refusal said in words, matched on the folded answer (synth.textmatch.fold: case and accents
# aside). Phrases that refuse wherever they stand; narrow on purpose: "the X-ray does not show a
# fracture" is an answer, not a refusal.
_REFUSAL_PHRASES = (
    # English
    r"\b(cannot|can ?not|can't|could not|couldn't|unable to|impossible to|not possible to|"
    r"no way to)( be)? (determined?|tell|told|know|known|say|said|answer(ed)?|infer(red)?|"
    r"identif(y|ied)|see|seen|read|judged?|establish(ed)?|confirm(ed)?|verif(y|ied)|assess(ed)?)\b",
    r"\b(i |we )?(don't|do not) know\b",
    r"\b(can't|cannot|can not|won't|will not|unable to) (help|assist)\b",
    r"\b(image|picture|photo(graph)?|scan)( itself)? (does not|doesn't|do not) (show|say|reveal|"
    r"indicate|contain|tell)( this| that| it)?[ .,;:]*($|which|what|who|when|where|whether|how)",
    r"\bnot (visible|shown|stated|given|indicated|provided|specified|determinable|discernible|"
    r"identifiable|legible|readable) (in|from|on) (the|this) (image|picture|photo(graph)?|scan)\b",
    r"\bno (information|indication|way to (tell|know))\b",
    r"\bnot (enough|sufficient) (information|detail|evidence)\b",
    # German
    r"\bnicht (zu )?(erkennen|bestimmen|sagen|beurteilen|feststellen|beantworten)\b",
    r"\bnicht (erkennbar|ersichtlich|bestimmbar|feststellbar|beurteilbar)\b",
    r"\blässt sich nicht\b",
    r"\bweiß (ich )?(es |das )?nicht\b",
    r"\b(das )?bild zeigt (das|dies|es) nicht\b",
    r"\bkeine (angaben?|informationen?)\b",
    # French
    r"\bimpossible (de|d'|à) ?(dire|déterminer|savoir|identifier|préciser|établir)\b",
    r"\b(ne|n') ?(peut|peux|pouvons|permet) pas (d'|de )?(être )?(dire|déterminer|déterminée?|"
    r"savoir|identifier|préciser|établir)\b",
    r"\bl'image ne (montre|permet|dit|indique|précise) pas\b",
    r"\bje ne sais pas\b",
    r"\baucune (information|indication)\b",
    # Spanish
    r"\bno (se )?(puede|es posible|podemos|puedo) (determinar|saber|decir|identificar|precisar)\b",
    r"\bimposible (de )?(determinar|saber|decir|identificar)\b",
    r"\bla imagen no (muestra|indica|permite|dice)\b",
    r"\bno lo sé\b",
    r"\bno hay (información|indicación)\b",
    # Russian
    r"\bневозможно (определить|сказать|установить|понять)\b",
    r"\bне (могу|можем|удаётся|удается) (сказать|определить|установить|понять)\b",
    r"\bна (изображении|снимке|фото) не (видно|показано|указано)\b",
    # Chinese, Japanese (no word boundaries)
    r"(无法|不能|无从).{0,8}?(确定|判断|得知|知道|识别|看出|回答|确认|辨认|判定)",
    r"不知道|看不出",
    r"(图片|图像|照片|图中)(中)?(没有|未|并未)(显示|提供|标明|说明)",
    r"(わかりません|分かりません|わからない|分からない|読み取れません)",
    r"(判断|特定|確認|判別)(でき|出来)ません",
    # Arabic, Hebrew
    r"لا يمكن (تحديد|معرفة|الجزم|التأكد)",
    r"لا أعرف|الصورة لا (تظهر|توضح|تبين)|لا (تظهر|توضح|تبين) الصورة",
    r"(אי אפשר|לא ניתן) (לדעת|לקבוע|לזהות|לומר)",
    r"התמונה (אינה|לא) (מראה|מציגה)",
)
# Short answers that refuse only as the whole answer ("an unknown mass" is an answer).
_REFUSAL_WHOLE = (
    r"(it is |it's |this is |that is )?(unknown|unclear|uncertain|undetermined|indeterminate|"
    r"not (known|shown|visible|stated|given|indicated|clear|determinable|available|applicable)|"
    r"n/a|n\.a|none given|no idea|(i )?cannot (say|tell)|(i )?can't (say|tell))"
    r"( (in|from|on) (the|this) (image|picture|photo))?"
    r"|unbekannt|unklar|k\. ?a|inconnue?|non (connue?|visible|indiquée?|précisée?)"
    r"|desconocid[oa]|no visible|неизвестно|неясно|не видно|未知|不详|不明|不确定"
    r"|غير (معروف|واضح|محدد)|לא ידוע"
)
_REFUSAL_TEXT = re.compile("|".join(f"(?:{fold(p)})" for p in _REFUSAL_PHRASES))
_REFUSAL_ONLY = re.compile(fold(_REFUSAL_WHOLE))


def reads_as_refusal(answer: str) -> bool:
    """Whether an answer's text itself says the image does not answer the question."""
    text = fold(answer.replace("\u2019", "'")).strip()
    if _REFUSAL_TEXT.search(text):
        return True
    return _REFUSAL_ONLY.fullmatch(text.strip(" .!?。！？…")) is not None


# --------------------------------------------------------------------------------------------
# teacher schemas and prompts


class AnswerableQA(BaseModel):
    question: str = Field(description="a question about what the image shows")
    answer: str = Field(description="a short answer taken from the image")
    kind: Literal["identify", "attribute", "count", "position", "text", "reasoning"] = Field(
        description="identify: what something is; attribute: colour, shape, size; count: how "
        "many; position: where; text: text shown; reasoning: an inference from what is shown"
    )


class DomainQAResponse(BaseModel):
    qa: list[AnswerableQA]
    unanswerable_questions: list[str] = Field(
        description="questions about this image that the image itself cannot answer"
    )


class ProbeAnswer(BaseModel):
    index: int = Field(description="the question's number, as listed")
    refused: bool = Field(description="true if the image does not answer the question")
    answer: str = Field(description="the answer, or why the image cannot answer it")


class ProbeResponse(BaseModel):
    answers: list[ProbeAnswer]


QA_PROMPT = (
    "This image comes from the knowledge domain {domain}. As an expert in {domain}, write up to "
    "{n} question-answer pairs about it that the image itself answers: every answer must be "
    "visible or directly inferable from the image, short, and correct. Give each a kind "
    "(identify, attribute, count, position, text, reasoning). Then write up to {m} questions "
    "about this image, in the same domain, that the image cannot answer (details it does not "
    "show), as unanswerable_questions."
)
PROBE_PROMPT = (
    "This image comes from the knowledge domain {domain}. Answer each numbered question from "
    "the image alone. Where the image does not show the answer, do not guess: set refused to "
    "true and say in the answer that the image does not show it. Give one answer per question, "
    "with the question's number as index.\n\n{questions}"
)


# --------------------------------------------------------------------------------------------
# inputs


def _parquet(path: str | os.PathLike, name: str, what: str) -> Path:
    p = Path(path)
    f = p if p.is_file() else p / name
    if not f.is_file():
        raise FileNotFoundError(f"{f} does not exist; pass {what} (the directory holding {name})")
    return f


def read_domain_images(domains: str | os.PathLike) -> tuple[Path, list[dict[str, Any]]]:
    """The selected rows of domain_images.parquet (a file or the directory holding it)."""
    f = _parquet(domains, DOMAINS_NAME, "an `images domains` output")
    table = read_parquet(f, fix="rebuild it with `refinery images domains`")
    missing = [c for c in ("id", "domain", "selected") if c not in table.column_names]
    if missing:
        raise ValueError(
            f"{f} lacks column(s) {', '.join(missing)}; it must be the `images domains` stage's "
            "domain_images.parquet"
        )
    rows = [r for r in table.to_pylist() if r["selected"] is True]
    seen: set[tuple[str, str]] = set()
    for r in rows:
        key = (r["id"], r["domain"])
        if key in seen:
            raise ValueError(
                f"{f}: pair {r['id']!r} is selected twice for domain {r['domain']!r}; each "
                "(id, domain) must be one row: rebuild it with `refinery images domains`"
            )
        seen.add(key)
    return f, rows


def read_pairs(pairs_dirs: Iterable[str | os.PathLike]) -> dict[str, dict[str, Any]]:
    """Pair id -> {image (absolute path or None), image_sha256, training_allowed, and every id
    and URL column the consent ledger matches that the file has (doc_id, url, src, ...)}."""
    out: dict[str, dict[str, Any]] = {}
    for d in pairs_dirs:
        for f in pairs_files(d):
            cols = ["id", "image_path", "image_sha256", "training_allowed"]
            names = read_schema(f, "pass an `images build` output").names
            missing = [c for c in cols if c not in names]
            if missing:
                raise ValueError(
                    f"{f} lacks column(s) {', '.join(missing)}; it must be an `images build` "
                    "pairs.parquet"
                )
            # the pair's document and its own URLs, which the consent ledger names (the image's
            # src included: a ledger row may opt out the image by its URL alone)
            cols += [c for c in (*LEDGER_ID_KEYS, *LEDGER_URL_KEYS) if c in names and c not in cols]
            for r in read_parquet(f, cols, fix="pass an `images build` output").to_pylist():
                try:  # inside the pairs' directory: no local file outside it goes to a teacher
                    image = resolve_image(r["image_path"], f.parent)
                except BadImagePath:
                    image = None  # recorded per row as no_image
                rec = {**r, "image": image}
                out[r["id"]] = _merge_pair(out[r["id"]], rec) if r["id"] in out else rec
    return out


def _merge_pair(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """One pair id recorded twice (two image-stage runs, two shards), as the mixture merges it
    (training/mixture/images.py `_merge`): allowed only when every record allows it (an opt-out
    anywhere wins: the record whose flag is not the boolean true gives the flag), whatever order
    the files come in; the image is the record with the smallest (sha256, path) of those that
    have one; every record's ids and URLs stay for the consent ledger (`also`)."""
    from common.consent import flag_true

    def rank(p: dict[str, Any]) -> tuple:
        return (p["image"] is None, p.get("image_sha256") or "", str(p["image"] or ""))

    first, second = sorted((a, b), key=rank)
    merged = {**first, "also": [*first.get("also", ()), second, *second.get("also", ())]}
    flags = [first.get("training_allowed"), second.get("training_allowed")]
    # False before any other non-true value (None, "true"), so the reason names an opt-out
    refused = sorted((f for f in flags if not flag_true(f)), key=lambda f: f is not False)
    if refused:
        merged["training_allowed"] = refused[0]
    return merged


def _image_for_teacher(path: Path) -> tuple[bytes, str]:
    """The image bytes and extension; formats a vision model may not take go as PNG (as every
    reader of pairs sees the image: common.pairs.open_image). ValueError (the row's
    unsupported_image) for anything but a regular file of at most MAX_IMAGE_BYTES that decodes."""
    from common.teacher import image_mime

    data = read_regular_file(path, MAX_IMAGE_BYTES)  # a FIFO or /dev/zero would never end
    if data is None:
        raise ValueError(f"not a regular file of at most {MAX_IMAGE_BYTES} bytes")
    image = open_image(data)  # the pixel cap too: a decompression bomb does not decode
    if image is None:
        raise ValueError("the image does not decode (corrupt, unknown format or too many pixels)")
    try:
        mime = image_mime(data)
        return data, {"image/jpeg": "jpg"}.get(mime, mime.split("/")[1])
    except ValueError:
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return buf.getvalue(), "png"


def _store(out: Path, data: bytes, ext: str) -> str:
    """Write the image content-addressed under out/images/; return its path relative to out."""
    sha = hashlib.sha256(data).hexdigest()
    rel = f"{IMAGES_DIR}/{sha[:2]}/{sha}.{ext}"
    dest = out / rel
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, dest)
    return rel


# --------------------------------------------------------------------------------------------
# the teacher


def _templates(row_id: str, seed: int, k: int) -> list[str]:
    rng = random.Random(hashlib.sha256(f"{seed}\0{row_id}".encode()).digest())
    return rng.sample(list(TEMPLATES), min(k, len(TEMPLATES)))


def _norm(q: str) -> str:
    return " ".join(q.lower().split())


def ask_teacher(
    teacher: Any,
    row: dict[str, Any],
    image: bytes,
    *,
    questions: int,
    adversarial: int,
    templates: Sequence[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(kept QA items, dropped items with their reason) for one consented domain image."""
    from common.teacher import user_message

    domain = row["domain"].replace("_", " ")
    # the pair as the consent ledger knows it: its id, document and URLs (the image's src too)
    item = {k: row[k] for k in (*LEDGER_ID_KEYS, *LEDGER_URL_KEYS) if row.get(k) is not None}
    item.update(id=row["pair_id"], pair_id=row["pair_id"], training_allowed=row["training_allowed"])
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []

    def drop(question: str, answer: str | None, kind: str, reason: str) -> None:
        dropped.append({"question": question, "answer": answer, "kind": kind, "reason": reason})

    prompt = QA_PROMPT.format(domain=domain, n=questions, m=adversarial)
    first = teacher.chat_json(
        [user_message(prompt, [image])], DomainQAResponse, items=[item], temperature=0
    )
    seen: set[str] = set()
    for n, qa in enumerate(first.qa):
        q, a = qa.question.strip(), qa.answer.strip()
        if n >= questions:
            drop(q, a, qa.kind, "beyond_questions_asked")
        elif not q or not a:
            drop(q, a, qa.kind, "empty_question_or_answer")
        elif _norm(q) in seen:
            drop(q, a, qa.kind, "duplicate_question")
        elif reads_as_refusal(a):
            drop(q, a, qa.kind, "answerable_question_refused")
        else:
            seen.add(_norm(q))
            kept.append(
                {"question": q, "answer": a, "kind": qa.kind, "verified": False, "answerable": True}
            )

    probes: list[tuple[str, bool]] = []  # (question, by construction)
    for n, q in enumerate(first.unanswerable_questions):
        q = q.strip()
        if n >= adversarial:
            drop(q, None, REFUSAL, "beyond_adversarial_asked")
        elif not q:
            drop(q, None, REFUSAL, "empty_question_or_answer")
        elif _norm(q) in seen:
            drop(q, None, REFUSAL, "duplicate_question")
        else:
            seen.add(_norm(q))
            probes.append((q, False))
    for q in templates:
        if _norm(q) not in seen:
            seen.add(_norm(q))
            probes.append((q, True))
    if not probes:
        return kept, dropped
    listed = "\n".join(f"{i}. {q}" for i, (q, _) in enumerate(probes, 1))
    prompt = PROBE_PROMPT.format(domain=domain, questions=listed)
    second = teacher.chat_json(
        [user_message(prompt, [image])], ProbeResponse, items=[item], temperature=0
    )
    answers: dict[int, ProbeAnswer] = {}
    for ans in second.answers:
        answers.setdefault(ans.index, ans)
    for i, (q, constructed) in enumerate(probes, 1):
        ans = answers.get(i)
        if ans is None:
            drop(q, None, REFUSAL, "probe_not_answered")
        elif reads_as_refusal(ans.answer):  # the text decides, not the flag
            kept.append(
                {
                    "question": q,
                    "answer": REFUSAL_ANSWER,
                    "kind": REFUSAL,
                    "verified": constructed,
                    "answerable": False,
                }
            )
        elif ans.refused:  # "refused", with an answer that does not read as a refusal
            drop(q, ans.answer, REFUSAL, "refused_but_answered")
        else:
            drop(q, ans.answer, REFUSAL, "answered_unanswerable")
    return kept, dropped


# --------------------------------------------------------------------------------------------
# the stage


def _consent(row: dict[str, Any], pair: dict[str, Any] | None, rule: Any = None) -> str | None:
    """Why this image may not go to a teacher, or None: the one consent rule (common.consent)
    over the domain row and its pair (each flag the boolean true), then the consent ledger
    (`rule`) over the pair's document."""
    from common.consent import NO_LEDGER, flag_true

    flags = {"domain_images": row.get("training_allowed")}
    if pair is not None:
        flags["pairs"] = pair.get("training_allowed")
    false = [k for k, v in flags.items() if v is not None and not flag_true(v) and not v]
    if false:
        where = ", ".join(false)
        return f"opted_out: training_allowed is false in {where}; not sent to the teacher"
    other = [f"{k} ({v!r})" for k, v in flags.items() if v is not None and not flag_true(v)]
    if other:  # "true", 1, ...: only the boolean true is consent
        where = ", ".join(other)
        return (
            f"opted_out: training_allowed is not the boolean true in {where}; not sent to the "
            "teacher"
        )
    if any(v is None for v in flags.values()):
        where = ", ".join(k for k, v in flags.items() if v is None)
        return (
            f"no_consent_evidence: training_allowed is missing in {where}; not sent to the "
            "teacher (carry the source's consent through `images build`)"
        )
    also = pair.get("also", ()) if pair is not None else ()
    for what in (row, pair, *also):  # every record of the pair id (`_merge_pair`)
        why = (rule or NO_LEDGER).why_not(what) if what is not None else None
        if why is not None:
            return f"opted_out: {why}; not sent to the teacher"
    return None


def make_domain_qa(
    domains_dir: str | os.PathLike,
    pairs_dirs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    teacher: Any = None,
    *,
    questions: int = 4,
    adversarial: int = 2,
    templates: int = 1,
    seed: int = 0,
    workers: int = 4,
    consent: Any = None,
) -> dict[str, Any]:
    """Write `out/domain_qa.parquet` (DOMAIN_QA) and `out/domain_qa_rejects.parquet` (REJECTS);
    return the summary (images_in, rows, status counts, QA counts, dropped reasons, teacher usage).

    `consent`: the one consent rule with the lake's ledger (common.consent.Consent; None: the
    flags only). An image it refuses is never sent or copied and its row says training_allowed
    false with status `opted_out: ...`.

    An existing domain_qa.parquet is not overwritten (FileExistsError)."""
    for name, v, lo in (("questions", questions, 1), ("adversarial", adversarial, 0)):
        if v < lo:
            raise ValueError(f"make_domain_qa {name}={v} must be >= {lo}")
    if not 0 <= templates <= len(TEMPLATES):
        raise ValueError(f"make_domain_qa templates={templates} must be in 0..{len(TEMPLATES)}")
    if workers < 1:
        raise ValueError(f"make_domain_qa workers={workers} must be >= 1")
    t0 = time.monotonic()
    out = Path(out)
    target = out / OUTPUT_NAME
    if target.exists():
        raise FileExistsError(f"{target} already exists; choose a new --out directory")
    source, selected = read_domain_images(domains_dir)
    pairs = read_pairs(pairs_dirs)
    out.mkdir(parents=True, exist_ok=True)
    teacher_name = str(teacher.model) if teacher is not None else None

    records: list[dict[str, Any]] = []
    jobs: list[tuple[dict[str, Any], dict[str, Any], bytes]] = []
    for r in sorted(selected, key=lambda r: (r["id"], r["domain"])):
        pair = pairs.get(r["id"])
        rec = {
            "id": f"{r['id']}#{r['domain']}",
            "pair_id": r["id"],
            "domain": r["domain"],
            "image_path": None,
            "qa": [],
            "training_allowed": False,
            "status": "ok",
            "teacher": None,
        }
        records.append(rec)
        refused = _consent(r, pair, consent)
        if refused is not None:
            rec["status"] = refused
            continue
        rec["training_allowed"] = pair is not None
        if pair is None:
            rec["status"] = (
                f"no_pair: pair {r['id']!r} is in none of the --pairs files; pass the "
                "`images build` output that domain_images was selected from"
            )
            continue
        path = Path(pair["image"]) if pair["image"] else None
        if path is None or not path.is_file():
            rec["status"] = f"no_image: the pair's image {path} is not stored"
            continue
        try:
            data, ext = _image_for_teacher(path)
        except Exception as exc:  # noqa: BLE001 - Pillow raises many kinds: the row's status
            rec["status"] = f"unsupported_image: {path}: {str(exc)[:200]}"
            continue
        rec["image_path"] = _store(out, data, ext)
        if teacher is None:
            rec["status"] = NO_TEACHER
            continue
        keys = {k: pair[k] for k in (*LEDGER_ID_KEYS, *LEDGER_URL_KEYS) if k in pair and k != "id"}
        jobs.append((rec, keys, data))

    dropped_rows: list[dict[str, Any]] = []

    def one(job: tuple[dict[str, Any], dict[str, Any], bytes]) -> None:
        rec, keys, data = job  # keys: the pair's ids and URLs, which the client checks too
        rec["teacher"] = teacher_name
        try:
            kept, dropped = ask_teacher(
                teacher,
                {**keys, **rec},
                data,
                questions=questions,
                adversarial=adversarial,
                templates=_templates(rec["id"], seed, templates),
            )
        except Exception as exc:  # noqa: BLE001 - one image's failure is its status
            rec["status"] = f"teacher_error: {type(exc).__name__}: {str(exc)[:300]}"
            log.warning("teacher failed on %s: %s", rec["id"], rec["status"])
            return
        rec["qa"] = kept
        for k, d in enumerate(dropped):
            dropped_rows.append(
                {
                    "id": f"{rec['id']}#r{k}",
                    "row_id": rec["id"],
                    "pair_id": rec["pair_id"],
                    "domain": rec["domain"],
                    **d,
                }
            )
        if not any(q["answerable"] for q in kept):
            reasons = Counter(d["reason"] for d in dropped)
            rec["status"] = "no_qa: the teacher gave no kept answerable question" + (
                f" (dropped: {dict(reasons)})" if reasons else ""
            )

    if jobs:
        with ThreadPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            list(pool.map(one, jobs))

    dropped_rows.sort(key=lambda d: (d["row_id"], int(d["id"].rsplit("#r", 1)[1])))
    tmp = out / f".{REJECTS_NAME}.tmp"
    pq.write_table(pa.Table.from_pylist(dropped_rows, schema=REJECTS), tmp)
    tmp.replace(out / REJECTS_NAME)
    tmp = out / f".{OUTPUT_NAME}.tmp"
    pq.write_table(pa.Table.from_pylist(records, schema=DOMAIN_QA), tmp)
    tmp.replace(target)

    status = Counter(r["status"].split(":")[0] for r in records)
    items = [q for r in records for q in r["qa"]]
    kinds = Counter(q["kind"] for q in items)
    reasons = Counter(d["reason"] for d in dropped_rows)
    probes = kinds.get(REFUSAL, 0) + reasons.get("answered_unanswerable", 0)
    seconds = time.monotonic() - t0
    summary: dict[str, Any] = {
        "out_path": str(target),
        "source": str(source),
        "images_in": len(selected),
        "rows": len(records),
        "status": dict(sorted(status.items())),
        "sent": len(jobs),
        "not_sent_consent": status.get("opted_out", 0) + status.get("no_consent_evidence", 0),
        "qa": len(items),
        "qa_by_kind": dict(sorted(kinds.items())),
        "refusals": kinds.get(REFUSAL, 0),
        "refusal_rate": round(kinds.get(REFUSAL, 0) / probes, 4) if probes else None,
        "verified_share": round(sum(q["verified"] for q in items) / len(items), 4)
        if items
        else 0.0,
        "dropped_qa_reasons": dict(sorted(reasons.items())),
        "teacher": teacher_name,
        "teacher_usage": teacher.usage() if hasattr(teacher, "usage") else None,
        "seconds": round(seconds, 3),
        "images_per_s": round(len(records) / seconds, 2) if seconds > 0 else 0.0,
    }
    if teacher is None:
        summary["note"] = (
            "no teacher: domain QA needs one; every selected image is a row with status "
            "no_teacher (or why it could not be sent) and empty qa, and nothing is made up"
        )
    return summary


__all__: Sequence[str] = (
    "DOMAIN_QA",
    "QA_STRUCT",
    "REJECTS",
    "TEMPLATES",
    "ask_teacher",
    "make_domain_qa",
    "read_domain_images",
    "read_pairs",
)
