"""Synthetic data in other scripts: Chinese and Japanese (no spaces between words), Arabic and
Hebrew (right to left, combining vowel marks, bidi marks).

- Domain QA (synth.domain_qa) against the fake OpenAI-compatible teacher on loopback
  (tests/synth/fake_teacher.py), which answers in raw UTF-8 (not \\u escapes): the QA rows keep
  every question and answer exactly (no mojibake, nothing cut), duplicates are still found, a
  refusal worded in Chinese, Japanese, Arabic or Hebrew is read as one (flagged `refused` or
  not) and kept as a refusal (with the fixed REFUSAL_ANSWER), a rerun from the cache gives the
  same rows, and an unanswerable question is never kept as an answerable item.
- Captions (synth.captions): `keywords` derived from a caption in any script are its words, not
  nothing or fragments of them; a paragraph's sentences end at "。" and "؟" too; a captioner
  caption cut inside a multi-byte character (open_clip's byte-level BPE over CoCa's 24-token
  context) loses the half character rather than carrying U+FFFD.
"""

from __future__ import annotations

import hashlib
import io
import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from common.teacher import TeacherClient
from synth.captions import keywords_of, make_captions, sentences_of
from synth.domain_qa import OUTPUT_NAME, REFUSAL_ANSWER, REJECTS_NAME, make_domain_qa
from tests.synth import fake_teacher
from tests.synth.fake_teacher import completion, request_text

server = fake_teacher.server  # the fake endpoint (a pytest fixture)
pytestmark = pytest.mark.timeout(60)

RLM = "\u200f"  # RIGHT-TO-LEFT MARK, not whitespace: str.strip() must leave it

# language -> the domain it is asked in, its QA (question, answer, kind), its unanswerable
# question, and how it refuses
LANGS = {
    "zh": {
        "domain": "food",
        "qa": [
            ("图中的食物是什么？", "一碗豚骨拉面", "identify"),
            ("碗里有几个鸡蛋？", "两个", "count"),
            ("图中的食物是什么？", "拉面", "identify"),  # the same question again
        ],
        "unanswerable": "这道菜是哪家餐厅做的？",
        "refusal": "图像中无法看出这一点。",
    },
    "ja": {
        "domain": "microscopy",
        "qa": [
            ("この画像に写っている細胞は何ですか？", "赤血球", "identify"),
            ("細胞は何色ですか？", "赤色（中央がやや淡い）", "attribute"),
        ],
        "unanswerable": "この標本はいつ採取されましたか？",
        "refusal": "画像からは分かりません。",
    },
    "ar": {
        "domain": "medical_imaging",
        "qa": [
            ("ما العضو الظاهر في الصورة؟", "الرِّئَتان", "identify"),
            ("كم عدد الأضلاع الظاهرة؟", "١٢ ضلعًا في CT رقم 42", "count"),
        ],
        "unanswerable": "ما اسم المريض؟",
        "refusal": f"{RLM}لا تُظهر الصورة ذلك.",
    },
    "he": {
        "domain": "animals",
        "qa": [
            ("איזה בעל חיים מופיע בתמונה?", "חָתוּל", "identify"),
            ("באיזה צבע הפרווה?", f"כתום{RLM}", "attribute"),
        ],
        "unanswerable": "מה שם הבעלים של החתול?",
        "refusal": "התמונה אינה מראה זאת.",
    },
}
BY_DOMAIN = {v["domain"].replace("_", " "): k for k, v in LANGS.items()}
# refusals said in words while `refused` is false
WORDED_REFUSALS = {
    "zh": "无法从图像中确定。",
    "ja": "この画像からは判断できません。",
    "ar": "لا يمكن تحديد ذلك من الصورة.",
    "he": "אי אפשר לדעת זאת מהתמונה.",
}


def _png(colour) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 12), colour).save(buf, format="PNG")
    return buf.getvalue()


def _utf8(content: dict | str) -> tuple[str, bytes]:
    """A fake-teacher step answering `content` as raw UTF-8 JSON (no \\u escapes)."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return ("raw", json.dumps(completion(text), ensure_ascii=False).encode("utf-8"))


@pytest.fixture
def lake(tmp_path):
    """domain_images.parquet and pairs.parquet: one selected image per language."""
    pairs_dir = tmp_path / "images" / "pairs" / "shard=0"
    pairs, domains = [], []
    for k, (lang, spec) in enumerate(LANGS.items()):
        data = _png((40 * k, 200 - 40 * k, 90))
        sha = hashlib.sha256(data).hexdigest()
        rel = f"images/{sha[:2]}/{sha}.png"
        (pairs_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (pairs_dir / rel).write_bytes(data)
        pairs.append({"id": lang, "image_path": rel, "image_sha256": sha, "training_allowed": True})
        domains.append(
            {"id": lang, "domain": spec["domain"], "selected": True, "training_allowed": True}
        )
    pq.write_table(pa.Table.from_pylist(pairs), pairs_dir / "pairs.parquet")
    (tmp_path / "images" / "domain").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(domains), tmp_path / "images" / "domain" / "domain_images.parquet"
    )
    return {"domains": tmp_path / "images" / "domain", "pairs": tmp_path / "images" / "pairs"}


def _responder(worded: bool = False):
    """Answers each image in its language; probes refused (or, with worded, answered with a
    refusal in words while `refused` is false)."""

    def respond(body):
        text = request_text(body)
        lang = BY_DOMAIN[re.search(r"knowledge domain ([a-z ]+)\.", text).group(1)]
        spec = LANGS[lang]
        if "Answer each numbered question" in text:
            answers = [
                {
                    "index": int(n),
                    "refused": not worded,
                    "answer": WORDED_REFUSALS[lang] if worded else spec["refusal"],
                }
                for n in re.findall(r"^(\d+)\. ", text, re.M)
            ]
            return _utf8({"answers": answers})
        qa = [{"question": q, "answer": f" {a} ", "kind": k} for q, a, k in spec["qa"]]
        return _utf8({"qa": qa, "unanswerable_questions": [spec["unanswerable"]]})

    return respond


def _run(server, lake, out, cache):
    teacher = TeacherClient(server["base_url"], "tiny-vlm", cache_dir=cache, timeout=5)
    summary = make_domain_qa(lake["domains"], [lake["pairs"]], out, teacher, templates=1)
    rows = {r["pair_id"]: r for r in pq.read_table(out / OUTPUT_NAME).to_pylist()}
    return summary, rows, pq.read_table(out / REJECTS_NAME).to_pylist()


def test_domain_qa_keeps_cjk_and_rtl_text_intact(server, lake, tmp_path):
    server["responder"] = _responder()
    summary, rows, rejects = _run(server, lake, tmp_path / "out", tmp_path / "cache")
    assert summary["status"] == {"ok": 4} and len(server["requests"]) == 8
    for lang, spec in LANGS.items():
        row = rows[lang]
        assert row["status"] == "ok" and row["domain"] == spec["domain"]
        answerable = [(q["question"], q["answer"], q["kind"]) for q in row["qa"] if q["answerable"]]
        # exactly what the teacher wrote: whitespace stripped, marks and bidi marks kept
        want = [(q, a.strip(), k) for q, a, k in spec["qa"]][:2]
        assert answerable == want
        refusals = [q for q in row["qa"] if q["kind"] == "refusal"]
        assert len(refusals) == 2 and all(q["answerable"] is False for q in refusals)
        assert all(q["answer"] == REFUSAL_ANSWER for q in refusals)  # not the teacher's words
        assert refusals[0]["question"] == spec["unanswerable"]
        assert refusals[0]["verified"] is False and refusals[1]["verified"] is True
    assert rows["ar"]["qa"][2]["kind"] == "refusal"  # read as one behind its bidi mark
    assert rows["he"]["qa"][1]["answer"] == f"כתום{RLM}"
    assert rows["ar"]["qa"][0]["answer"] == "الرِّئَتان"  # combining vowel marks intact
    # a repeated question without spaces is still a duplicate, dropped with its reason
    assert [(r["pair_id"], r["question"], r["reason"]) for r in rejects] == [
        ("zh", "图中的食物是什么？", "duplicate_question")
    ]
    # the probe sent the teacher's own question back byte for byte
    probes = [request_text(r["body"]) for r in server["requests"]]
    assert all(any(LANGS[k]["unanswerable"] in t for t in probes) for k in LANGS)
    assert not any("\ufffd" in json.dumps(r, ensure_ascii=False) for r in rows.values())

    # a rerun from the cache (stored as UTF-8 JSON) sends nothing and gives the same rows
    again, rows2, _ = _run(server, lake, tmp_path / "out2", tmp_path / "cache")
    assert len(server["requests"]) == 8 and again["teacher_usage"]["cache_hits"] == 8
    assert {k: r["qa"] for k, r in rows2.items()} == {k: r["qa"] for k, r in rows.items()}


def test_refusals_worded_in_other_languages_are_kept_as_refusals(server, lake, tmp_path):
    """A refusal said only in words, with `refused` false, is read from its text in Chinese,
    Japanese, Arabic and Hebrew too (domain_qa.reads_as_refusal) and kept as a refusal; an
    unanswerable question never becomes an answerable QA item."""
    server["responder"] = _responder(worded=True)
    _, rows, rejects = _run(server, lake, tmp_path / "out", tmp_path / "cache")
    for lang, spec in LANGS.items():
        row = rows[lang]
        assert row["status"] == "ok"  # its answerable QA is kept
        answered = {q["question"] for q in row["qa"] if q["answerable"]}
        assert spec["unanswerable"] not in answered
        refused = {q["question"]: q["answer"] for q in row["qa"] if q["kind"] == "refusal"}
        assert refused.get(spec["unanswerable"]) == REFUSAL_ANSWER, (lang, refused)
        assert not [r for r in rejects if r["pair_id"] == lang and r["kind"] == "refusal"]


# ----------------------------------------------------------------------------- captions


def test_keywords_are_words_in_any_script():
    cases = {
        "一只红色的猫，坐在木桌子上。": "一只红色的猫, 坐在木桌子上",  # not segmented: phrases
        "赤い猫が、木の机の上に座っている": "赤い猫が, 木の机の上に座っている",
        "قِطَّةٌ حَمْرَاءُ على طاولة": "قِطَّةٌ, حَمْرَاءُ, على, طاولة",
        f"{RLM}חָתוּל אדום, חתול אדום": "חָתוּל, אדום, חתול",
        "café crème on a naïve plate": "café, crème, naïve, plate",
        "एक लाल बिल्ली": "एक, लाल, बिल्ली",  # vowel signs are marks, not word breaks
        "a red X-ray of the left hand -- on white": "red, x-ray, left, hand, white",
    }
    for caption, want in cases.items():
        got = keywords_of(caption)
        assert got == want, caption
        assert all(w and w in caption.lower() for w in got.split(", "))


def test_sentences_end_at_cjk_and_arabic_marks():
    assert sentences_of("图中有一只猫。猫是红色的！背景是白色的？") == [
        "图中有一只猫。",
        "猫是红色的！",
        "背景是白色的？",
    ]
    assert sentences_of("هل هذه قطة؟ نعم. إنها حمراء") == ["هل هذه قطة؟", "نعم.", "إنها حمراء"]
    assert sentences_of("A cat. It is red! Is it? Yes") == ["A cat.", "It is red!", "Is it?", "Yes"]


class RecordingClip:
    """ClipScorer's interface: every image and text scores 1; the texts scored are recorded."""

    def __init__(self):
        self.texts: list[str] = []

    def encode_images(self, images):
        return np.ones((len(images), 1), dtype=np.float32), np.ones(len(images), dtype=bool)

    def encode_texts(self, texts):
        self.texts += texts
        return np.ones((len(texts), 1), dtype=np.float32)


class MemorisingCaptioner:
    """A CoCa captioner that says its training caption back, through the real tokenizer:
    open_clip's byte-level BPE mapped by training.coca.CompactTokenizer, over CoCa's 24-token
    context (what the demo's captioner does for most training images)."""

    name = "memorising-captioner"
    card = {"description": "test double"}

    def __init__(self, by_sha: dict[str, str]):
        from training.coca import MODEL_CONFIGS, CompactTokenizer

        ctx = MODEL_CONFIGS["refinery-coca-tiny"]["text_cfg"]["context_length"]
        self.by_sha = by_sha
        self.tokenizer = CompactTokenizer.build(by_sha.values(), ctx)

    def generate(self, images):
        out = []
        for data in images:
            caption = self.by_sha[hashlib.sha256(data).hexdigest()]
            out.append(self.tokenizer.decode(self.tokenizer(caption)[0]))
        return out


def test_captions_in_other_scripts(server, tmp_path):
    alt = {
        "zh": "一只红色的猫坐在木桌子上，旁边有两个蓝色的杯子和一盘水果",
        "ja": "赤い猫が木の机の上に座っている",
        "ar": "قطة حمراء تجلس على طاولة",
        "he": "חתול אדום על שולחן",
    }
    root = tmp_path / "pairs"
    rows, by_sha = [], {}
    for k, (pid, caption) in enumerate(alt.items()):
        data = _png((60 * k, 30, 200 - 40 * k))
        sha = hashlib.sha256(data).hexdigest()
        (root / "images").mkdir(parents=True, exist_ok=True)
        (root / "images" / f"{sha}.png").write_bytes(data)
        by_sha[sha] = caption
        rows.append(
            {
                "id": pid,
                "image_path": f"images/{sha}.png",
                "image_sha256": sha,
                "drop_reason": None,
                "training_allowed": True,
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), root / "pairs.parquet")
    captioner = MemorisingCaptioner(by_sha)
    raw = captioner.generate([(root / r["image_path"]).read_bytes() for r in rows])
    assert raw[0].endswith("\ufffd")  # the long Chinese caption is cut inside a character
    paragraph = "图中有一只红色的猫。它坐在木桌子上！旁边有两个蓝色的杯子？"
    server["responder"] = lambda body: _utf8(paragraph)
    teacher = TeacherClient(server["base_url"], "tiny-vlm", cache_dir=tmp_path / "cache")
    clip = RecordingClip()
    summary = make_captions(root, tmp_path / "out", captioner=captioner, clip=clip, teacher=teacher)
    assert summary["rows"] == 12 and summary["ok"] == 12, summary["rejects"]
    got = {
        (r["pair_id"], r["level"]): r["caption"]
        for r in pq.read_table(tmp_path / "out" / "captions.parquet").to_pylist()
    }
    for pid, caption in alt.items():
        brief, keywords = got[(pid, "brief")], got[(pid, "keywords")]
        assert "\ufffd" not in brief + keywords
        assert caption.replace(" ", "").startswith(brief.replace(" ", "")) and brief
        assert keywords and all(w in brief for w in keywords.split(", "))
        assert got[(pid, "detailed")] == paragraph
    assert got[("zh", "brief")] == raw[0].rstrip("\ufffd").strip()
    # the paragraph was scored sentence by sentence
    assert {"图中有一只红色的猫。", "它坐在木桌子上！", "旁边有两个蓝色的杯子？"} <= set(clip.texts)
