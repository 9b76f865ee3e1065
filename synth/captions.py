"""Captions at three levels of detail for the kept image pairs, each scored with the project's CLIP.

Levels (the report: "ranging from a list of key words to a paragraph-level comprehensive
description"):

- `brief`: a short caption from the CoCa captioner trained here (`training.coca`), greedy decoding.
  Without a captioner, the teacher writes it (one sentence).
- `keywords`: the content words of that brief caption, in order, de-duplicated, joined by ", "
  (stop words such as "a", "of", "the", "on" dropped). They are the captioner's words, nothing
  more: no zero-shot guess over a vocabulary is added, because the project's tiny CLIP scores
  single words it never saw alone in training no better than chance. Without a captioner, the
  teacher lists them.
- `detailed`: a paragraph, from the teacher only (a vision model on an OpenAI-compatible
  endpoint, images sent as data URLs). With `dense=True`, the report's dense-caption recipe: the
  image is cut into a grid (2x2 quadrants or 3x3), each region is captioned separately by the
  teacher, and the teacher then summarises the region captions with their positions into the
  paragraph. An image too small for the grid (a cell under MIN_REGION_SIDE pixels on a side) is
  described whole, as without `dense`, and counted in the summary's `dense_whole_image`.
  Without a teacher the level is absent (no rows) and the summary says why.

Every caption is scored with the project's CLIP: the cosine of the image and the caption (for a
paragraph, the mean over its sentences, since CLIP reads a few dozen tokens). A caption below
`min_score` keeps its row with status `low_clip_score`; an empty caption (`empty_caption`), an
undecodable image (`undecodable_image`) or a teacher failure also keeps its row with that reason
(`teacher_error: ...`; any other failure of one row's request, `caption_error: <type>: ...`): one
row's failure never ends the run. A teacher's reply is checked before it is scored
(`teacher_caption_problem`): JSON or a code fence, a refusal ("I'm sorry", "As an AI", ...), the
prompt echoed, or fewer words than the level needs (`MIN_WORDS`; two characters of Chinese or
Japanese count as a word) is `bad_teacher_caption: <why>: <the reply, cut>`, with no caption. Only pairs
with drop_reason null and training_allowed true are captioned; an opted-out pair is counted and
never read, let alone sent (the teacher client refuses it too: every request names its pair in
`items=`).

Output `DIR/captions.parquet`: pair_id, level, caption, clip_score, source, status (`ok` or the
reason: `low_clip_score`, `empty_caption`, `undecodable_image`, `bad_teacher_caption: ...`,
`teacher_error: ...`, `caption_error: ...`), then image_sha256 and image_path (relative to DIR),
and its manifest, whose summary counts the rejects by reason (the part before the first colon).
Plain Python: never imports Dagster or Beam.
"""

from __future__ import annotations

import io
import os
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa

from common.inputs import (
    MAX_IMAGE_BYTES,
    BadImagePath,
    read_regular_file,
    read_schema,
    resolve_image,
)

LEVELS = ("keywords", "brief", "detailed")
COLUMNS = (
    "pair_id",
    "level",
    "caption",
    "clip_score",
    "source",
    "status",
    "image_sha256",
    "image_path",
)
SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("level", pa.string()),
        ("caption", pa.string()),
        ("clip_score", pa.float64()),
        ("source", pa.string()),
        ("status", pa.string()),
        ("image_sha256", pa.string()),
        ("image_path", pa.string()),
    ]
)
OUTPUT_FILE = "captions.parquet"
NO_TEACHER = (
    "no teacher configured (--teacher-url/--teacher-model): the paragraph level needs a vision "
    "teacher and is left absent rather than faked"
)
STOP_WORDS = frozenset(
    "a an the of on at in and or with to for from by its it is are this that there some".split()
)
GRIDS = {
    2: ("top-left", "top-right", "bottom-left", "bottom-right"),
    3: (
        "top-left",
        "top",
        "top-right",
        "left",
        "center",
        "right",
        "bottom-left",
        "bottom",
        "bottom-right",
    ),
}
PROMPTS = {
    "detailed": (
        "Describe this image in one paragraph of three to six sentences: every object you see, "
        "its colour, how many there are, where it is in the image, and the background or "
        "setting. Describe only what is visible; do not guess at anything else."
    ),
    "brief": "Caption this image in one short sentence: what is in it, with colours, counts "
    "and positions. Answer with the caption only.",
    "keywords": "List five to ten keywords for what is visible in this image (objects, "
    "colours, counts, positions), comma-separated, nothing else.",
    "region": (
        "This is the {position} region of a larger image. Caption what is in this region in one "
        "sentence (objects, colours, counts). If it shows only background, answer 'empty'."
    ),
    "summary": (
        "These are captions of the regions of one image, by position:\n{regions}\n\nWrite one "
        "paragraph of three to six sentences describing the whole image: what is where. Use "
        "only what the region captions say; leave out regions that are empty."
    ),
}
TEACHER_PARAMS = {"temperature": 0.0, "max_tokens": 400}
# The fewest words a teacher's caption of each level has (the prompts ask for five keywords, a
# sentence, a paragraph); a reply shorter than that is no caption (`teacher_caption_problem`).
MIN_WORDS = {"keywords": 1, "brief": 3, "detailed": 5}
# A reply that declines: at its start, in the languages of the project's crawl, or "as an AI"
# anywhere.
REFUSAL = re.compile(
    r"^\W*(?:i'?m sorry|i am sorry|sorry,? (?:but )?i\b|i apologi[sz]e|i can'?t\b|i cannot\b|i'?m unable|"
    r"i am unable|i'?m not able|i am not able|unfortunately,? i\b|as an ai\b|"
    r"lo siento|no puedo|désolée?|je ne peux pas|je suis désolée?|es tut mir leid|"
    r"leider kann ich|ich kann (?:das|dieses|kein)|mi dispiace|non posso|desculpe|não posso|"
    r"het spijt me|przepraszam|извините|к сожалению|я не могу|抱歉|对不起|我无法|我不能|"
    r"申し訳|すみません|죄송)|\bas an ai\b|\bas a (?:large )?language model\b",
    re.IGNORECASE,
)
MIN_REGION_SIDE = 8  # pixels: a dense-caption cell smaller than this is no region to describe


class CaptionsError(ValueError):
    """An input or option of `make_captions` is unusable; the message names the fix."""


# ----------------------------------------------------------------------------- inputs


def read_pairs(
    pairs_dirs: str | os.PathLike | Iterable[str | os.PathLike], consent: Any = None
) -> tuple[list, int]:
    """(kept, training-allowed pairs as dicts; how many kept pairs were opted out).

    Training-allowed is the one consent rule (common.consent): the pair's training_allowed is the
    boolean true and `consent` (a Consent with the lake's ledger; None: the flags only) has not
    opted out its document (doc_id) or the pair (id)."""

    from common.consent import NO_LEDGER
    from common.pairs import pairs_files, settled_rows

    rule = consent or NO_LEDGER

    kept, opted_out = [], 0
    for f in pairs_files(pairs_dirs):
        names = set(read_schema(f, "pass an `images build` output").names)
        need = {"id", "image_path", "drop_reason", "training_allowed"}
        if need - names:
            raise CaptionsError(
                f"{f}: columns {sorted(need - names)} missing; pass an `images build` output"
            )
    # drop_reason as readers take it: a duplicate whose kept copy is opted out takes its place,
    # and an image kept in two shards is captioned once (common.pairs.settle)
    need = {"id": "string", "image_path": "string", "drop_reason": "string"}
    for f, rows in settled_rows(pairs_dirs, rule, required=need):
        for r in rows:
            if r["drop_reason"] is not None or not r["image_path"]:
                continue
            if not rule.allows(r):
                opted_out += 1  # never read, never captioned, never sent
                continue
            try:  # inside the pairs' directory: no local file outside it goes to a teacher
                image_file = resolve_image(r["image_path"], f.parent)
            except BadImagePath:
                image_file = ""  # unreadable: the pair is kept with no image (undecodable)
            kept.append(
                {
                    "pair_id": r["id"],
                    "doc_id": r.get("doc_id"),  # the client's ledger check reads it too
                    "training_allowed": True,
                    "image_sha256": r.get("image_sha256"),
                    "image_file": image_file,
                }
            )
    return kept, opted_out


def _words(text: str) -> list[str]:
    """The words of a text in any script: runs of letters, their combining marks and digits,
    hyphenated parts kept together ("x-ray"). Scripts written without spaces (Chinese, Japanese)
    are not segmented: each run between punctuation is one word."""
    kept = "".join(ch if ch == "-" or unicodedata.category(ch)[0] in "LMN" else " " for ch in text)
    return [w for token in kept.split() for w in re.split(r"-{2,}", token.strip("-")) if w]


def keywords_of(caption: str) -> str:
    """The content words of a caption, in order, de-duplicated, joined by ', '."""
    words = _words(caption.lower())
    seen: list[str] = []
    for w in words:
        if w not in STOP_WORDS and w not in seen:
            seen.append(w)
    return ", ".join(seen)


def sentences_of(text: str) -> list[str]:
    """A paragraph's sentences (what CLIP scores one at a time)."""
    # "." "!" "?" and Arabic "؟" end a sentence before a space; the full-width "。" "！" "？" of
    # Chinese and Japanese end one with no space after them.
    parts = [s.strip() for s in re.split(r"(?<=[.!?\u061f])\s+|(?<=[。！？])", text.strip())]
    return [s for s in parts if s] or [text.strip()]


def _png(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _rgb(data: bytes):
    """The image as every reader of pairs sees it (common.pairs.open_image: RGB, 16-bit grey
    scaled, transparency on white); ValueError when it does not decode."""
    from common.pairs import open_image

    im = open_image(data)
    if im is None:
        raise ValueError("the image does not decode")
    return im


def _teacher_bytes(data: bytes) -> bytes:
    """The image as stored when a vision model reads its format, else re-encoded as PNG."""
    from common.teacher import image_mime

    try:
        image_mime(data)
        return data
    except ValueError:
        return _png(_rgb(data))


def grid_fits(data: bytes, grid: int) -> bool:
    """Whether every cell of a grid x grid cut of the image is at least MIN_REGION_SIDE pixels."""
    from PIL import Image

    try:  # the header's size (a turn by EXIF orientation keeps the smaller side)
        with Image.open(io.BytesIO(data)) as im:
            w, h = im.size
    except Exception:  # noqa: BLE001 - Pillow raises many kinds on a bad file
        return False
    return min(w, h) >= grid * MIN_REGION_SIDE


def regions(data: bytes, grid: int) -> list[tuple[str, bytes]]:
    """(position, PNG bytes) of each cell of a grid x grid cut of the image, row by row; none
    for an image too small for the grid (`grid_fits`)."""
    if grid not in GRIDS:
        raise CaptionsError(f"dense grid {grid}: use 2 (quadrants) or 3 (3x3)")
    im = _rgb(data)
    w, h = im.size
    if min(w, h) < grid * MIN_REGION_SIDE:
        return []
    out = []
    for i, name in enumerate(GRIDS[grid]):
        r, c = divmod(i, grid)
        box = (c * w // grid, r * h // grid, (c + 1) * w // grid, (r + 1) * h // grid)
        out.append((name, _png(im.crop(box))))
    return out


# ----------------------------------------------------------------------------- teacher


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _folded(text: str) -> str:
    """Case folded, punctuation dropped, spaces collapsed: how an echo of a prompt is found."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def _prompt_sentences() -> list[str]:
    """The prompts' fixed sentences of four words or more, folded (their slots left out)."""
    out = []
    for prompt in PROMPTS.values():
        for sentence in sentences_of(re.sub(r"\{\w+\}", " ", prompt)):
            folded = _folded(sentence)
            if len(folded.split()) >= 4:
                out.append(folded)
    return out


def caption_words(text: str) -> int:
    """How many words a caption has: a run of a script written without spaces (Chinese,
    Japanese, Thai) counts a word for every two characters."""
    from synth.textmatch import tokens

    n = 0
    for word in _words(text):
        parts = len(tokens(word))
        unspaced = len(word) > 1 and parts == len(word) and word.isalpha()  # a token a letter
        n += (parts + 1) // 2 if unspaced else parts
    return n


def teacher_caption_problem(text: str, level: str) -> str | None:
    """Why a teacher's reply is no caption of `level`, or None (an empty one: `empty_caption`):
    JSON or a code fence, a refusal, an echo of the prompt, or too few words (`MIN_WORDS`)."""
    body = text.strip().replace("\u2019", "'")
    if not body:
        return None
    if "```" in body or (body[0] in "{[" and body[-1] in "}]"):
        return "json_or_code"
    if REFUSAL.search(body):
        return "refusal"
    folded = _folded(body)
    prompts = [_folded(p) for p in PROMPTS.values()]
    if any(s in folded for s in _prompt_sentences()) or (
        len(folded.split()) >= 3 and any(folded in p for p in prompts)
    ):
        return "echoes_the_prompt"
    if caption_words(body) < MIN_WORDS[level]:
        return f"too_short: under {MIN_WORDS[level]} words"
    return None


def teacher_caption(teacher, pair: dict, data: bytes, level: str, *, dense: int | None) -> str:
    """One caption of `level` by the teacher (dense: regions first, then their summary; an image
    too small for the grid is described whole)."""
    from common.teacher import user_message

    items = [pair]  # the client refuses a pair whose training_allowed is not true
    image = _teacher_bytes(data)
    cells = regions(data, dense) if level == "detailed" and dense else []
    if not cells:
        msg = user_message(PROMPTS[level], [image])
        return _one_line(teacher.chat([msg], items=items, **TEACHER_PARAMS))
    lines = []
    for position, crop in cells:
        prompt = PROMPTS["region"].format(position=position)
        text = _one_line(
            teacher.chat([user_message(prompt, [crop])], items=items, **TEACHER_PARAMS)
        )
        lines.append(f"- {position}: {text}")
    prompt = PROMPTS["summary"].format(regions="\n".join(lines))
    return _one_line(teacher.chat([user_message(prompt)], items=items, **TEACHER_PARAMS))


# ----------------------------------------------------------------------------- the stage


def make_captions(
    pairs_dirs: str | os.PathLike | Iterable[str | os.PathLike],
    out: str | os.PathLike,
    levels: Sequence[str] = LEVELS,
    captioner: Any = None,
    clip: Any = None,
    min_score: float | None = None,
    teacher: Any = None,
    *,
    dense: int | None = None,
    workers: int = 4,
    device: str | None = None,
    inputs: Sequence[str] = (),
    on_progress: Callable[[str], None] | None = None,
    consent: Any = None,
) -> dict[str, Any]:
    """Caption every kept, training-allowed pair at `levels`; write DIR/captions.parquet.

    consent: the one consent rule (common.consent.Consent with the lake's ledger; None: the
    pairs' own flags only): a pair it refuses is never read, captioned or sent.

    captioner: a `training.coca.Captioner` or its directory (keywords, brief); clip: a
    `training.clip.ClipScorer` or a CLIP model spec (required: every caption is scored); teacher:
    a `common.teacher.TeacherClient` or None (detailed; keywords and brief too when there is no
    captioner); dense: 2 or 3 for the dense-caption recipe of the detailed level. Returns the
    summary (also in the manifest): rows in = rows ok + rejects, by reason; absent levels and why.
    """
    from common.manifest import write_parquet

    started = time.perf_counter()
    log = on_progress or (lambda msg: None)
    levels = list(dict.fromkeys(levels))
    unknown = [lv for lv in levels if lv not in LEVELS]
    if unknown or not levels:
        raise CaptionsError(f"--levels {','.join(levels)}: use some of {','.join(LEVELS)}")
    if dense is not None and dense not in GRIDS:
        raise CaptionsError(f"--dense {dense}: use 2 (quadrants) or 3 (a 3x3 grid)")
    if clip is None:
        raise CaptionsError(
            "--clip: every caption is scored with the project's CLIP; train one with "
            "`refinery clip train` and pass its directory"
        )
    if isinstance(captioner, str | os.PathLike):
        from training.coca import load_captioner

        captioner = load_captioner(captioner, device)
    if isinstance(clip, str | os.PathLike):
        from training.clip import ClipScorer

        clip = ClipScorer(clip, device)
    absent: dict[str, str] = {}
    plan: list[tuple[str, str]] = []  # (level, "captioner" | "teacher")
    for level in levels:
        if level == "detailed":
            if teacher is None:
                absent[level] = NO_TEACHER
            else:
                plan.append((level, "teacher"))
        elif captioner is not None:
            plan.append((level, "captioner"))
        elif teacher is not None:
            plan.append((level, "teacher"))
        else:
            raise CaptionsError(
                f"level {level}: needs the captioner (--captioner, `refinery captioner train` "
                "makes one) or a teacher (--teacher-url/--teacher-model)"
            )

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pairs, opted_out = read_pairs(pairs_dirs, consent)
    log(f"captions: {len(pairs)} kept pairs ({opted_out} opted out, skipped), levels {levels}")
    data: list[bytes | None] = []
    decodable: list[bool] = []
    from common.pairs import open_image

    for p in pairs:
        # a regular file of at most MAX_IMAGE_BYTES: a FIFO or /dev/zero would never end
        blob = read_regular_file(p["image_file"], MAX_IMAGE_BYTES) if p["image_file"] else None
        data.append(blob)
        decodable.append(blob is not None and open_image(blob) is not None)

    # captioner levels: one brief caption per image; keywords are its content words
    brief: list[str] = [""] * len(pairs)
    if any(src == "captioner" for _, src in plan):
        ok_idx = [i for i, d in enumerate(decodable) if d]
        generated = captioner.generate([data[i] for i in ok_idx])
        for i, text in zip(ok_idx, generated, strict=True):
            # U+FFFD is byte-level BPE's mark of a character cut in half (a CJK character is
            # 2-3 tokens, and the context ends where it ends): never caption text.
            brief[i] = text.replace("\ufffd", "").strip()

    # teacher levels, in a thread pool (the client rate-limits and caches)
    teacher_levels = [lv for lv, src in plan if src == "teacher"]
    answers: dict[tuple[int, str], tuple[str | None, str]] = {}
    teacher_name = getattr(teacher, "model", None) or "teacher"

    def ask(job: tuple[int, str]) -> tuple[tuple[int, str], tuple[str | None, str]]:
        i, level = job
        from common.teacher import TeacherError

        try:
            text = teacher_caption(
                teacher, pairs[i], data[i], level, dense=dense if level == "detailed" else None
            )
        except TeacherError as exc:
            return job, (None, f"teacher_error: {_one_line(str(exc))[:300]}")
        except Exception as exc:  # noqa: BLE001 - one row's failure is that row's status
            why = _one_line(f"{type(exc).__name__}: {exc}")[:300]
            return job, (None, f"caption_error: {why}")
        problem = teacher_caption_problem(text, level)
        if problem:  # recorded with the reply, never scored nor kept as a caption
            return job, (None, f"bad_teacher_caption: {problem}: {text.strip()[:80]!r}")
        return job, (text, "ok")

    whole = 0  # images the dense grid does not fit: described whole
    if dense and "detailed" in teacher_levels:
        whole = sum(1 for i, d in enumerate(decodable) if d and not grid_fits(data[i], dense))
    if teacher_levels:
        jobs = [(i, lv) for i in range(len(pairs)) if decodable[i] for lv in teacher_levels]
        with ThreadPoolExecutor(max(1, workers)) as pool:
            for job, answer in pool.map(ask, jobs):
                answers[job] = answer
        log(f"captions: {len(jobs)} teacher captions asked")

    rows: list[dict[str, Any]] = []
    for i, p in enumerate(pairs):
        # a pair whose image path was refused has no file: it is an undecodable row
        rel = os.path.relpath(p["image_file"], out) if p["image_file"] else None
        for level, src in plan:
            source = captioner.name if src == "captioner" else teacher_name
            status, caption = "ok", None
            if not decodable[i]:
                status = "undecodable_image"
            elif src == "captioner":
                caption = brief[i] if level == "brief" else keywords_of(brief[i])
            else:
                caption, status = answers[(i, level)]
            if status == "ok" and not (caption or "").strip():
                status, caption = "empty_caption", None
            rows.append(
                {
                    "pair_id": p["pair_id"],
                    "level": level,
                    "caption": caption,
                    "clip_score": None,
                    "source": source,
                    "status": status,
                    "image_sha256": p["image_sha256"],
                    "image_path": rel,
                }
            )

    _score(rows, pairs, clip)
    for r in rows:
        if r["status"] == "ok" and min_score is not None and r["clip_score"] < min_score:
            r["status"] = "low_clip_score"

    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    summary = _summary(rows, pairs, opted_out, plan, absent, min_score, dense, teacher, captioner)
    summary["dense_whole_image"] = whole
    summary["seconds"] = round(time.perf_counter() - started, 3)
    summary["captions_per_s"] = round(len(rows) / summary["seconds"], 2) if rows else 0.0
    write_parquet(
        table,
        out / OUTPUT_FILE,
        inputs=list(inputs),
        config={"levels": levels, "min_score": min_score, "dense": dense},
        extra={"summary": summary},
    )
    summary["outputs"] = {"synthetic_captions": str(out / OUTPUT_FILE)}
    return summary


def _score(rows: list[dict], pairs: list[dict], clip) -> None:
    """clip_score of every row with a caption: cosine of image and caption (paragraphs: the
    mean over sentences)."""
    import numpy as np

    by_pair = {p["pair_id"]: i for i, p in enumerate(pairs)}
    todo = [r for r in rows if r["caption"]]
    if not todo:
        return
    image_idx = sorted({by_pair[r["pair_id"]] for r in todo})
    image_feats, ok = clip.encode_images([pairs[i]["image_file"] for i in image_idx])
    feat_of = {pairs[i]["pair_id"]: (image_feats[k], ok[k]) for k, i in enumerate(image_idx)}
    texts = {
        id(r): sentences_of(r["caption"]) if r["level"] == "detailed" else [r["caption"]]
        for r in todo
    }
    unique = sorted({t for ts in texts.values() for t in ts})
    text_feats = clip.encode_texts(unique)
    where = {t: k for k, t in enumerate(unique)}
    for r in todo:
        feat, good = feat_of[r["pair_id"]]
        if not good:
            r["status"] = "undecodable_image"
            continue
        sims = [float(feat @ text_feats[where[t]]) for t in texts[id(r)]]
        r["clip_score"] = float(np.mean(sims))


def _summary(rows, pairs, opted_out, plan, absent, min_score, dense, teacher, captioner) -> dict:
    status = Counter(r["status"] for r in rows)
    reasons = Counter(r["status"].split(":", 1)[0] for r in rows if r["status"] != "ok")
    per_level: dict[str, dict[str, Any]] = {}
    for level, src in plan:
        lv = [r for r in rows if r["level"] == level]
        scores = [r["clip_score"] for r in lv if r["clip_score"] is not None]
        per_level[level] = {
            "source": src,
            "rows": len(lv),
            "ok": sum(r["status"] == "ok" for r in lv),
            "mean_clip_score": round(sum(scores) / len(scores), 4) if scores else None,
        }
    out: dict[str, Any] = {
        "pairs": len(pairs),
        "opted_out_skipped": opted_out,
        "rows": len(rows),
        "ok": status.get("ok", 0),
        "rejected": sum(reasons.values()),
        "rejects": dict(sorted(reasons.items())),
        "levels": per_level,
        "absent_levels": absent,
        "min_score": min_score,
        "dense": dense,
        "captioner": getattr(captioner, "name", None),
        "captioner_card": getattr(captioner, "card", {}).get("description"),
        "teacher": getattr(teacher, "model", None),
    }
    if teacher is not None and hasattr(teacher, "usage"):
        out["teacher_usage"] = teacher.usage()
    return out
