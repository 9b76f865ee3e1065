"""A teacher's reply is checked before it is scored (synth/captions.py `teacher_caption_problem`):
JSON or a code fence, a refusal, the prompt echoed back, or a reply too short for its level is
a row with status `bad_teacher_caption: <why>: <the reply>` and no caption, counted in the
summary's rejects, even with a CLIP cut that keeps everything (`min_score=-1`)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from synth.captions import PROMPTS, make_captions, teacher_caption_problem
from tests.synth.test_captions import PaletteClip
from tests.synth.test_coca import make_pairs_dir

GOOD = "A red circle sits on the left. A blue square is on the right of a pale background."
REPLIES = {
    "p000": "{}",
    "p001": '```json\n{"caption": "a red circle"}\n```',
    "p002": "I'm sorry, but I can't help with identifying this image.",
    "p003": "As an AI, I do not have the ability to see images.",
    "p004": "Lo siento, no puedo describir esta imagen.",
    "p005": PROMPTS["detailed"],
    "p006": "A circle.",
    "p007": "一只猫",
    "p008": GOOD,
    "p009": "一只红色的圆形在图片的左边，右边有一个蓝色的正方形。",
}


class ScriptedTeacher:
    """A teacher that answers each pair with its scripted reply."""

    model = "scripted-vlm"

    def chat(self, messages, *, items=(), **params):
        return REPLIES[items[0]["pair_id"]]


@pytest.mark.parametrize("min_score", [None, -1.0])
def test_bad_teacher_replies_are_rejects_with_their_reason(tmp_path, min_score):
    pairs = make_pairs_dir(tmp_path / "pairs", len(REPLIES), seed=7)
    out = tmp_path / f"out{min_score}"
    s = make_captions(
        [pairs],
        out,
        ["detailed"],
        clip=PaletteClip(),
        teacher=ScriptedTeacher(),
        min_score=min_score,
        workers=2,
    )
    rows = {r["pair_id"]: r for r in pq.read_table(out / "captions.parquet").to_pylist()}
    assert {pid for pid, r in rows.items() if r["status"] == "ok"} == {"p008", "p009"}
    why = {pid: r["status"].split(": ")[1] for pid, r in rows.items() if r["status"] != "ok"}
    assert why == {
        "p000": "json_or_code",
        "p001": "json_or_code",
        "p002": "refusal",
        "p003": "refusal",
        "p004": "refusal",
        "p005": "echoes_the_prompt",
        "p006": "too_short",
        "p007": "too_short",
    }
    for pid in why:
        r = rows[pid]
        assert r["status"].startswith("bad_teacher_caption: ")
        assert r["caption"] is None and r["clip_score"] is None
    assert repr(REPLIES["p000"]) in rows["p000"]["status"]  # the reply is recorded
    assert s["rejects"] == {"bad_teacher_caption": 8}
    assert s["ok"] + s["rejected"] == s["rows"] == len(REPLIES)


@pytest.mark.parametrize(
    "text, level",
    [
        ("A cat on a mat", "brief"),
        ("red, circle", "keywords"),
        ("Sorry we are closed sign on a shop door", "brief"),  # "sorry" that is no refusal
        ("빨간 소파 위에 앉은 고양이", "brief"),  # Korean: spaced words
        ("一只黑色的猫坐在红色的沙发上。", "detailed"),  # Chinese: two characters a word
        ("", "detailed"),  # empty: the existing `empty_caption`
    ],
)
def test_a_real_caption_is_no_bad_teacher_caption(text, level):
    assert teacher_caption_problem(text, level) is None
