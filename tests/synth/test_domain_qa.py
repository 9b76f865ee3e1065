"""Domain QA (synth.domain_qa, `refinery synth domain-qa`) against a fake OpenAI-compatible vision
teacher on loopback (tests/synth/fake_teacher.py), which recognises each image by its data URL:
good answers, adversarial refusals, a hallucinated answer to an unanswerable question (dropped
with its reason), malformed JSON (repaired, or rejected with the reason), 429/500 (retried),
opted-out images never sent, a rerun sends nothing, the no-teacher path and the CLI."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from common.lakecheck import verify_lake
from common.teacher import TeacherClient
from synth.domain_qa import (
    DOMAIN_QA,
    NO_TEACHER,
    OUTPUT_NAME,
    REJECTS_NAME,
    TEMPLATES,
    make_domain_qa,
)
from tests.synth import fake_teacher
from tests.synth.fake_teacher import request_images, request_text

server = fake_teacher.server  # the fake endpoint (a pytest fixture)
pytestmark = pytest.mark.timeout(120)

COLUMNS = ["id", "pair_id", "domain", "image_path", "qa", "training_allowed", "status", "teacher"]
HALLUCINATION = "The X-ray was taken by Dr. Jane Smith on 3 March 2021."

# pair id -> (domain, selected, domain row consent, pair consent, colour, format or None)
PAIRS = {
    "p1": ("medical_imaging", True, True, True, (200, 20, 20), "PNG"),
    "p2": ("food", True, True, True, (20, 200, 20), "JPEG"),
    "p3": ("maps", True, False, True, (20, 20, 200), "PNG"),  # opted out in domain_images
    "p4": ("animals", True, True, None, (200, 200, 20), "PNG"),  # pair without consent evidence
    "p5": ("maps", False, True, True, (20, 200, 200), "PNG"),  # not selected
    "p6": ("microscopy", True, True, True, (90, 90, 90), None),  # image not stored
    "p7": ("microscopy", True, True, True, (200, 20, 200), "BMP"),  # sent as PNG
}


def _image(colour, fmt) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (12, 10), colour).save(buf, format=fmt)
    return buf.getvalue()


@pytest.fixture
def inputs(tmp_path):
    """A domain_images.parquet and a pairs.parquet with images, laid out as in the lake."""
    pairs_dir = tmp_path / "lake" / "images" / "pairs" / "shard=0"
    pairs, domains, images = [], [], {}
    for pid, (domain, selected, ok_domain, ok_pair, colour, fmt) in PAIRS.items():
        rel = None
        if fmt is not None:
            data = _image(colour, fmt)
            sha = hashlib.sha256(data).hexdigest()
            rel = f"images/{sha[:2]}/{sha}.{fmt.lower()}"
            (pairs_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (pairs_dir / rel).write_bytes(data)
            images[pid] = data
        else:
            sha = "0" * 64
            rel = f"images/00/{sha}.png"  # named, but never stored
        pairs.append(
            {"id": pid, "image_path": rel, "image_sha256": sha, "training_allowed": ok_pair}
        )
        domains.append(
            {
                "id": pid,
                "domain": domain,
                "selected": selected,
                "caption": f"{domain} {pid}",
                "training_allowed": ok_domain,
            }
        )
    pq.write_table(pa.Table.from_pylist(pairs), pairs_dir / "pairs.parquet")
    domain_dir = tmp_path / "lake" / "images" / "domain"
    domain_dir.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(domains), domain_dir / "domain_images.parquet")
    return {
        "lake": tmp_path / "lake",
        "domains": domain_dir,
        "pairs": tmp_path / "lake" / "images" / "pairs",
        "images": images,
    }


def _who(body: dict, inputs) -> str:
    """Which pair's image a request carries (by the bytes in its data URL)."""
    (url,) = request_images(body)
    data = base64.b64decode(url.split(",", 1)[1])
    for pid, img in inputs["images"].items():
        if img == data:
            return pid
    png = Image.open(io.BytesIO(data))
    assert png.format == "PNG"  # the converted BMP
    return "p7"


def _qa_answer(pid: str) -> dict:
    return {
        "qa": [
            {
                "question": f"What colour is the square in {pid}?",
                "answer": "red",
                "kind": "attribute",
            },
            {"question": "How many squares are shown?", "answer": "one", "kind": "count"},
            {"question": "How many squares are shown?", "answer": "1", "kind": "count"},
            {
                "question": "What is the label?",
                "answer": "It cannot be determined.",
                "kind": "text",
            },
        ],
        "unanswerable_questions": [f"Who is the patient in {pid}?"],
    }


def _probe_answer(pid: str, text: str) -> dict:
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", text, re.M)]
    answers = []
    for i in numbers:
        if pid == "p2" and i == 1:  # the teacher-written question: a hallucination
            answers.append({"index": i, "refused": False, "answer": HALLUCINATION})
        else:
            answers.append({"index": i, "refused": True, "answer": "The image does not show it."})
    return {"answers": answers}


def _responder(inputs):
    def respond(body):
        pid = _who(body, inputs)
        text = request_text(body)
        if "Answer each numbered question" in text:
            return ("ok", json.dumps(_probe_answer(pid, text)))
        return ("ok", json.dumps(_qa_answer(pid)))

    return respond


def _teacher(server, cache, **kw) -> TeacherClient:
    kw.setdefault("timeout", 5)
    kw.setdefault("backoff_s", 0.01)
    return TeacherClient(server["base_url"], "tiny-vlm", cache_dir=cache, **kw)


def _rows(out) -> dict[str, dict]:
    table = pq.read_table(out / OUTPUT_NAME)
    assert table.column_names == COLUMNS and table.schema.equals(DOMAIN_QA)
    return {r["pair_id"]: r for r in table.to_pylist()}


def test_teacher_qa_refusals_hallucination_dropped_and_opted_out_never_sent(
    server, inputs, tmp_path
):
    server["responder"] = _responder(inputs)
    server["script"] = [429, 500, ("ok", '{"qa": [{"question": "broken')]  # p1's first request
    teacher = _teacher(server, tmp_path / "cache")
    s = make_domain_qa(
        inputs["domains"], [inputs["pairs"]], tmp_path / "out", teacher, workers=1, templates=2
    )
    rows = _rows(tmp_path / "out")
    assert set(rows) == {"p1", "p2", "p3", "p4", "p6", "p7"}  # every selected image is a row
    assert s["images_in"] == s["rows"] == 6

    # never sent: opted out, no consent evidence, not selected, not stored
    sent = [r["body"] for r in server["requests"]]
    assert {_who(b, inputs) for b in sent} == {"p1", "p2", "p7"}
    everything = json.dumps(sent)
    for pid in ("p3", "p4", "p5"):
        assert base64.b64encode(inputs["images"][pid]).decode() not in everything
    assert rows["p3"]["status"].startswith("opted_out: training_allowed is false in domain_images")
    assert rows["p4"]["status"].startswith("no_consent_evidence: training_allowed is missing")
    assert rows["p6"]["status"].startswith("no_image:")
    for pid in ("p3", "p4", "p6"):
        assert rows[pid]["qa"] == [] and rows[pid]["teacher"] is None
        assert rows[pid]["image_path"] is None
    assert not rows["p3"]["training_allowed"] and not rows["p4"]["training_allowed"]
    assert s["not_sent_consent"] == 2 and s["sent"] == 3

    # the domain is in the prompt, the image is a data URL, structured output asked for
    first = sent[0]
    assert "medical imaging" in request_text(first)
    assert request_images(first)[0].startswith("data:image/png;base64,")
    assert first["response_format"]["type"] == "json_schema"
    assert request_images(sent[-1])[0].startswith("data:image/png;base64,")  # p7: BMP -> PNG
    assert any(request_images(b)[0].startswith("data:image/jpeg;base64,") for b in sent)

    # 429 and 500 were retried, the broken JSON repaired once
    u = teacher.usage()
    assert u["repairs"] == 1 and u["failures"] == 0
    assert len(sent) == 3 + 1 + 5  # p1 QA (429, 500, broken), its repair, 5 more

    p1 = rows["p1"]
    assert p1["status"] == "ok" and p1["teacher"] == "tiny-vlm" and p1["training_allowed"]
    answerable = [q for q in p1["qa"] if q["answerable"]]
    assert [q["kind"] for q in answerable] == ["attribute", "count"]  # duplicate, refusal dropped
    assert not any(q["verified"] for q in answerable)
    refusals = [q for q in p1["qa"] if q["kind"] == "refusal"]
    assert len(refusals) == 3 and not any(q["answerable"] for q in refusals)
    by_q = {q["question"]: q for q in refusals}
    assert not by_q["Who is the patient in p1?"]["verified"]  # teacher-written
    assert sum(q["question"] in TEMPLATES and q["verified"] for q in refusals) == 2
    assert (tmp_path / "out" / p1["image_path"]).read_bytes() == inputs["images"]["p1"]

    p2 = rows["p2"]
    assert p2["status"] == "ok"
    assert all(q["answer"] != HALLUCINATION for q in p2["qa"])
    assert [q["kind"] for q in p2["qa"]].count("refusal") == 2  # the templates only
    rejects = pq.read_table(tmp_path / "out" / REJECTS_NAME).to_pylist()
    hallucinated = [r for r in rejects if r["reason"] == "answered_unanswerable"]
    assert [(r["pair_id"], r["question"], r["answer"]) for r in hallucinated] == [
        ("p2", "Who is the patient in p2?", HALLUCINATION)
    ]
    assert [r["id"] for r in rejects if r["pair_id"] == "p1"] == [
        "p1#medical_imaging#r0",
        "p1#medical_imaging#r1",
    ]
    assert s["dropped_qa_reasons"] == {
        "answerable_question_refused": 3,
        "answered_unanswerable": 1,
        "duplicate_question": 3,
    }
    assert s["refusals"] == 8 and s["refusal_rate"] == pytest.approx(8 / 9, abs=1e-4)
    assert s["teacher_usage"]["requests"] == 7 and s["teacher_usage"]["cost"] == 0

    # a rerun (new output, same cache) sends nothing and writes the same rows
    before = len(server["requests"])
    again = _teacher(server, tmp_path / "cache")
    make_domain_qa(
        inputs["domains"], [inputs["pairs"]], tmp_path / "out2", again, workers=3, templates=2
    )
    assert len(server["requests"]) == before
    assert _rows(tmp_path / "out2") == rows
    assert again.usage()["requests"] == 0 and again.usage()["cache_hits"] == 7


def test_malformed_json_twice_is_the_row_status(server, inputs, tmp_path):
    good = _responder(inputs)

    def respond(body):
        if _who(body, inputs) == "p2":
            return ("ok", "Sure! Here are some questions: 1. What is it?")
        return good(body)

    server["responder"] = respond
    s = make_domain_qa(
        inputs["domains"], [inputs["pairs"]], tmp_path / "out", _teacher(server, None)
    )
    rows = _rows(tmp_path / "out")
    assert rows["p2"]["status"].startswith("teacher_error: TeacherSchemaError:")
    assert rows["p2"]["qa"] == [] and rows["p2"]["teacher"] == "tiny-vlm"
    assert rows["p1"]["status"] == "ok" and rows["p7"]["status"] == "ok"
    assert s["status"]["teacher_error"] == 1
    p2_requests = [r for r in server["requests"] if _who(r["body"], inputs) == "p2"]
    assert len(p2_requests) == 2  # the request and its one repair retry


def test_no_teacher_writes_every_selected_image_with_its_status(inputs, tmp_path):
    s = make_domain_qa(inputs["domains"], [inputs["pairs"]], tmp_path / "out")
    rows = _rows(tmp_path / "out")
    assert s["images_in"] == s["rows"] == len(rows) == 6
    assert all(r["qa"] == [] and r["teacher"] is None for r in rows.values())
    assert {p for p, r in rows.items() if r["status"] == NO_TEACHER} == {"p1", "p2", "p7"}
    assert rows["p3"]["status"].startswith("opted_out") and rows["p6"]["status"].startswith(
        "no_image"
    )
    assert s["qa"] == 0 and s["teacher"] is None and "needs one" in s["note"]
    assert pq.read_table(tmp_path / "out" / REJECTS_NAME).num_rows == 0
    with pytest.raises(FileExistsError, match="already exists"):
        make_domain_qa(inputs["domains"], [inputs["pairs"]], tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="images domains"):
        make_domain_qa(tmp_path / "nowhere", [inputs["pairs"]], tmp_path / "out3")


def test_cli_defaults_to_the_lake_and_a_rerun_sends_nothing(server, inputs, monkeypatch):
    from pipelines.cli import app

    server["responder"] = _responder(inputs)
    monkeypatch.setenv("REFINERY_HOME", str(inputs["lake"]))
    monkeypatch.delenv("REFINERY_TEACHER_API_KEY", raising=False)
    args = [
        "synth",
        "domain-qa",
        "--teacher-url",
        server["base_url"],
        "--teacher-model",
        "tiny-vlm",
        "--teacher-price-prompt",
        "1.0",
        "--teacher-price-completion",
        "2.0",
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "images_in=6" in res.output and "teacher_requests=6" in res.output
    assert "teacher_cost=0.15" in res.output  # 6 x 11 prompt, 6 x 7 completion tokens at 1, 2/1k
    out = inputs["lake"] / "synth" / "domain_qa"
    rows = _rows(out)
    assert rows["p1"]["status"] == "ok" and rows["p1"]["qa"]
    manifest = json.loads((out / f"{OUTPUT_NAME}.manifest.json").read_text())
    assert manifest["rows"] == 6
    sent = len(server["requests"])
    again = CliRunner().invoke(app, args)  # the lake's dataset is rewritten, from the cache
    assert again.exit_code == 0, again.output
    assert len(server["requests"]) == sent and "teacher_cache_hits=6" in again.output
    assert _rows(out) == rows
    assert verify_lake(inputs["lake"]) == []  # ids unique, rows as the manifests say
    bad = CliRunner().invoke(app, [*args[:6], "--teacher-price-prompt", "1"])
    assert bad.exit_code == 2 and "give both or neither" in bad.output


def test_dagster_asset_reads_the_lake_and_says_no_teacher(inputs):
    from pipelines.graph import lineage_gaps, materialize_selection
    from pipelines.stage import Dataset

    # the upstream handles, as the demo leaves them (image_pairs: one per crawl shard)
    handles = inputs["lake"] / "_handles"
    (handles / "image_pairs").mkdir(parents=True)
    shard = str(inputs["pairs"] / "shard=0")
    (handles / "image_pairs" / "0.json").write_text(Dataset("image_pairs", shard, "0").to_json())
    domains = str(inputs["domains"] / "domain_images.parquet")
    (handles / "domain_images.json").write_text(Dataset("domain_images", domains).to_json())
    res = materialize_selection(["domain_qa"], inputs["lake"])
    assert res.success
    (event,) = res.get_asset_materialization_events()
    meta = {k: getattr(v, "value", v) for k, v in event.materialization.metadata.items()}
    assert meta["rows"] == meta["images_in"] == 6 and meta["status"]["no_teacher"] == 3
    assert meta["teacher"] == "none" and meta["teacher_requests"] == 0
    assert meta["teacher_cost"] == 0 and "needs one" in meta["note"]
    assert len(_rows(inputs["lake"] / "synth" / "domain_qa")) == 6
    checks = {c.check_name: c.passed for c in res.get_asset_check_evaluations()}
    assert checks == {"no_opted_out_sent": True, "images_accounted": True}
    assert "domain_qa" not in lineage_gaps(inputs["lake"])  # its manifest names both inputs


def test_checks_catch_a_sent_opted_out_image_and_a_lost_row(inputs, tmp_path):
    from common import lake as lake_mod
    from pipelines.stage import Lake
    from pipelines.stages.synth import (
        DomainQASummary,
        _domain_qa_accounted,
        _domain_qa_consent,
    )

    out = tmp_path / "out"
    make_domain_qa(inputs["domains"], [inputs["pairs"]], out)
    lake_mod.write_manifest(
        out / OUTPUT_NAME, rows=6, inputs=[str(inputs["domains"] / "domain_images.parquet")]
    )
    summary = DomainQASummary.model_construct(outputs={"domain_qa": str(out / OUTPUT_NAME)})
    lake = Lake(root=tmp_path)
    assert _domain_qa_consent(summary, lake).passed and _domain_qa_accounted(summary, lake).passed
    rows = pq.read_table(out / OUTPUT_NAME).to_pylist()
    for r in rows:
        if r["pair_id"] == "p3":  # opted out, yet with a teacher's QA
            r["teacher"] = "tiny-vlm"
            r["qa"] = [
                {
                    "question": "q",
                    "answer": "a",
                    "kind": "count",
                    "verified": False,
                    "answerable": True,
                }
            ]
    pq.write_table(pa.Table.from_pylist(rows[1:], schema=DOMAIN_QA), out / OUTPUT_NAME)
    consent = _domain_qa_consent(summary, lake)
    assert not consent.passed and "p3#maps" in consent.description
    accounted = _domain_qa_accounted(summary, lake)
    assert (
        not accounted.passed
        and "6 selected domain images in, 5 domain_qa rows out" in accounted.description
    )


@pytest.mark.slow  # over 10 s on a quiet 2-core machine
def test_every_synth_summary_carries_teacher_accounting(server, tmp_path):
    """The tables stage (as charts and domain-qa) reports the teacher's requests, tokens and cost
    (0 without a teacher: the Dagster test above)."""
    from pipelines.cli import app
    from tests.synth.test_tables import _rows as table_rows
    from tests.synth.test_tables import _write as write_tables

    server["default"] = ("ok", json.dumps({"items": []}))
    src = write_tables(tmp_path, table_rows(opted_out=("cities", "league")))
    teacher = ["--teacher-url", server["base_url"], "--teacher-model", "tiny"]
    prices = ["--teacher-price-prompt", "3", "--teacher-price-completion", "5"]
    args = ["synth", "tables", "--tables", src]
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "t1"), *teacher, *prices])
    assert res.exit_code == 0, res.output
    assert "teacher_requests=2" in res.output and "teacher_tokens=36" in res.output
    assert "teacher_cost=0.136" in res.output  # 22 prompt x 3/1k + 14 completion x 5/1k


def test_every_dropped_item_keeps_its_reason():
    """ask_teacher alone, on a scripted teacher object: limits, duplicates, unanswered probes."""
    from synth.domain_qa import ask_teacher

    class Scripted:
        model = "scripted"

        def __init__(self, *answers):
            self.answers, self.sent = list(answers), []

        def chat_json(self, messages, schema, *, items, **params):
            assert [i["training_allowed"] for i in items] == [True]
            self.sent.append(messages)
            return schema.model_validate(self.answers.pop(0))

    first = {
        "qa": [
            {"question": "What organ is shown?", "answer": "a lung", "kind": "identify"},
            {"question": "What side?", "answer": "left", "kind": "position"},
            {"question": "How many ribs?", "answer": "12", "kind": "count"},
        ],
        "unanswerable_questions": ["what organ is  shown?", "  ", "Who is the patient?", "Age?"],
    }
    probe = {"answers": [{"index": 2, "refused": False, "answer": "I cannot tell from this."}]}
    teacher = Scripted(first, probe)
    row = {"pair_id": "p", "domain": "medical_imaging", "training_allowed": True}
    kept, dropped = ask_teacher(
        teacher, row, _image((1, 2, 3), "PNG"), questions=2, adversarial=3, templates=[TEMPLATES[0]]
    )
    assert [(d["question"], d["reason"]) for d in dropped] == [
        ("How many ribs?", "beyond_questions_asked"),
        ("what organ is  shown?", "duplicate_question"),
        ("", "empty_question_or_answer"),
        ("Age?", "beyond_adversarial_asked"),
        ("Who is the patient?", "probe_not_answered"),  # the teacher skipped question 1
    ]
    assert [q["kind"] for q in kept] == ["identify", "position", "refusal"]
    refusal = kept[-1]
    assert refusal["question"] == TEMPLATES[0] and refusal["verified"] and not refusal["answerable"]
    probe_text = teacher.sent[1][0]["content"][0]["text"]
    assert "1. Who is the patient?\n2. " + TEMPLATES[0] in probe_text


# ------------------------------------------------------------------ consent by the image's URL


def test_an_image_the_ledger_opted_out_by_its_own_url_is_never_sent(server, tmp_path):
    """read_pairs read only id, image_path, image_sha256, training_allowed, doc_id and url: a
    ledger row naming the image's `src` (empty doc_ids, as a recheck of an image URL writes it)
    was never seen, and the image went to the teacher."""
    from common.consent import Consent, append_ledger
    from common.teacher import TeacherError
    from synth.domain_qa import ask_teacher

    lake = tmp_path / "lake"
    pairs_dir = lake / "images" / "pairs" / "shard=0"
    rows = []
    for pid, colour in (("d1-0", (200, 20, 20)), ("d2-0", (20, 20, 200))):
        data = _image(colour, "PNG")
        (pairs_dir / "images").mkdir(parents=True, exist_ok=True)
        (pairs_dir / f"images/{pid}.png").write_bytes(data)
        rows.append(
            {
                "id": pid,
                "doc_id": pid.split("-")[0],
                "url": f"http://site.test/{pid.split('-')[0]}",
                "src": f"http://cdn.test/img/{pid}.png",
                "image_path": f"images/{pid}.png",
                "image_sha256": hashlib.sha256(data).hexdigest(),
                "training_allowed": True,
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), pairs_dir / "pairs.parquet")
    domain_dir = lake / "images" / "domain"
    domain_dir.mkdir(parents=True)
    domains = [
        {"id": r["id"], "domain": "medicine", "selected": True, "training_allowed": True}
        for r in rows
    ]
    pq.write_table(pa.Table.from_pylist(domains), domain_dir / "domain_images.parquet")
    append_ledger(
        lake,
        [
            {
                "checked_at": "2025-01-01T00:00:00Z",
                "host": "cdn.test",
                "url": "http://cdn.test/img/d1-0.png",
                "doc_ids": [],
                "training_allowed": False,
                "previous": True,
                "agent": "refinery",
            }
        ],
    )
    consent = Consent.load(lake)
    server["responder"] = lambda body: (
        "ok",
        json.dumps({"answers": []})
        if "Answer each numbered question" in request_text(body)
        else json.dumps({"qa": [], "unanswerable_questions": []}),
    )
    teacher = _teacher(server, None, consent=consent, max_retries=0)
    s = make_domain_qa(
        domain_dir,
        [lake / "images" / "pairs"],
        tmp_path / "out",
        teacher,
        consent=consent,
        templates=0,
    )
    out = _rows(tmp_path / "out")
    assert out["d1-0"]["status"].startswith("opted_out: ") and "src=" in out["d1-0"]["status"]
    assert not out["d1-0"]["training_allowed"] and out["d1-0"]["image_path"] is None
    assert s["sent"] == 1 and s["not_sent_consent"] == 1
    sent = json.dumps([r["body"] for r in server["requests"]])
    b64 = {
        p: base64.b64encode((pairs_dir / f"images/{p}.png").read_bytes()).decode()
        for p in ("d1-0", "d2-0")
    }
    assert b64["d1-0"] not in sent and b64["d2-0"] in sent

    # the item handed to the client names the image's src too: the client refuses it as well
    before = len(server["requests"])
    row = {"pair_id": "d1-0", "domain": "medicine", "training_allowed": True, **rows[0]}
    with pytest.raises(TeacherError, match="refused to send.*src="):
        ask_teacher(
            teacher, row, _image((1, 2, 3), "PNG"), questions=1, adversarial=0, templates=[]
        )
    assert len(server["requests"]) == before


# ------------------------------------------------------------------ refusals read from the text


@pytest.mark.parametrize(
    "answer",
    [
        "Not visible in the image.",
        "Unknown.",
        "N/A",
        "It is not shown.",
        "Sorry, I don't know.",
        "Sorry, I can't help with identifying people.",
        "It cannot be determined from this X-ray.",
        "The image does not show this.",
        "Es lässt sich nicht bestimmen.",
        "Unbekannt",
        "Impossible de déterminer la date.",
        "No se puede saber.",
        "Невозможно определить.",
        "无法确定",
        "图片中没有显示",
        "判断できません",
        "لا يمكن تحديد ذلك",
    ],
)
def test_a_refusal_in_words_in_several_languages_reads_as_one(answer):
    from synth.domain_qa import reads_as_refusal

    assert reads_as_refusal(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "The X-ray does not show a fracture.",  # an answer about the image
        "An unknown mass in the left lung",
        "No fracture is visible.",
        "It was made on 3 March 2019 at 14:05.",
        "Na",  # sodium
        "red",
        "北京",
    ],
)
def test_an_answer_does_not_read_as_a_refusal(answer):
    from synth.domain_qa import reads_as_refusal

    assert not reads_as_refusal(answer)


def test_refusals_are_kept_only_when_the_text_refuses_and_never_in_the_teachers_words():
    """`refused: true` with 'It was made on 3 March 2019 at 14:05.' was kept as a verified
    refusal, and an answerable item answered "Sorry, I don't know." kept as answerable."""
    from synth.domain_qa import REFUSAL_ANSWER, ask_teacher

    class Scripted:
        model = "scripted"

        def __init__(self, *answers):
            self.answers = list(answers)

        def chat_json(self, messages, schema, *, items, **params):
            return schema.model_validate(self.answers.pop(0))

    first = {
        "qa": [
            {"question": "What organ is shown?", "answer": "a lung", "kind": "identify"},
            {
                "question": "Which hospital is this?",
                "answer": "Sorry, I don't know.",
                "kind": "identify",
            },
            {"question": "What is the label?", "answer": "N/A", "kind": "text"},
            {
                "question": "What is in the left lung?",
                "answer": "An unknown mass",
                "kind": "identify",
            },
        ],
        "unanswerable_questions": ["Who is the patient?", "What is the patient's age?"],
    }
    probe = {
        "answers": [
            {"index": 1, "refused": True, "answer": "I cannot tell; he is John Smith, 54."},
            {"index": 2, "refused": False, "answer": "Unknown."},
            {"index": 3, "refused": True, "answer": "It was made on 3 March 2019 at 14:05."},
            {"index": 4, "refused": True, "answer": "Das Bild zeigt das nicht."},
        ]
    }
    row = {"pair_id": "p", "domain": "medical_imaging", "training_allowed": True}
    kept, dropped = ask_teacher(
        Scripted(first, probe),
        row,
        _image((1, 2, 3), "PNG"),
        questions=4,
        adversarial=2,
        templates=[TEMPLATES[1], TEMPLATES[2]],
    )
    assert [q["answer"] for q in kept if q["answerable"]] == ["a lung", "An unknown mass"]
    refusals = [q for q in kept if q["kind"] == "refusal"]
    assert [q["question"] for q in refusals] == [
        "Who is the patient?",
        "What is the patient's age?",
        TEMPLATES[2],
    ]
    assert {q["answer"] for q in refusals} == {REFUSAL_ANSWER}  # no "John Smith, 54" kept
    assert [q["verified"] for q in refusals] == [False, False, True]
    assert [(d["question"], d["reason"]) for d in dropped] == [
        ("Which hospital is this?", "answerable_question_refused"),
        ("What is the label?", "answerable_question_refused"),
        (TEMPLATES[1], "refused_but_answered"),
    ]


# ------------------------------------------------------------------ images that cannot be read


def test_a_decompression_bomb_is_that_rows_unsupported_image(tmp_path):
    """A 200-byte BMP claiming 20000 x 20000 pixels raised Pillow's DecompressionBombError (not
    OSError or ValueError), ending the run; a FIFO named as the image would block it forever."""
    import os
    import struct

    pairs_dir = tmp_path / "pairs"
    (pairs_dir / "images").mkdir(parents=True)
    w = h = 20000
    dib = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, 0, 2835, 2835, 0, 0)
    bomb = b"BM" + struct.pack("<IHHI", 14 + 40 + 100, 0, 0, 54) + dib + b"\0" * 100
    (pairs_dir / "images/bomb.bmp").write_bytes(bomb)
    (pairs_dir / "images/ok.png").write_bytes(_image((9, 9, 9), "PNG"))
    os.mkfifo(pairs_dir / "images/fifo.png")
    rows = [
        {"id": pid, "image_path": f"images/{name}", "image_sha256": "x", "training_allowed": True}
        for pid, name in (("a", "bomb.bmp"), ("b", "ok.png"), ("c", "fifo.png"))
    ]
    pq.write_table(pa.Table.from_pylist(rows), pairs_dir / "pairs.parquet")
    (tmp_path / "dom").mkdir()
    domains = [
        {"id": r["id"], "domain": "medicine", "selected": True, "training_allowed": True}
        for r in rows
    ]
    pq.write_table(pa.Table.from_pylist(domains), tmp_path / "dom" / "domain_images.parquet")
    s = make_domain_qa(tmp_path / "dom", [pairs_dir], tmp_path / "out", None)
    out = _rows(tmp_path / "out")
    assert out["a"]["status"].startswith("unsupported_image: ") and "decode" in out["a"]["status"]
    assert out["c"]["status"].startswith("no_image: ")  # never opened: it would block
    assert out["b"]["status"] == NO_TEACHER and s["rows"] == 3


@pytest.mark.parametrize("order", ["allowed first", "opted out first"])
def test_a_pair_id_recorded_twice_is_allowed_only_when_both_records_allow(order, tmp_path):
    # Two image runs (or shards) record pair P1: one allows it, one opted it out. Whatever the
    # order of the --pairs directories, the opt-out wins and nothing reaches the teacher.
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), "red").save(buf, "PNG")
    dirs = []
    for name, flag in (("a", True), ("b", False)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "i.png").write_bytes(buf.getvalue())
        row = {"id": "P1", "doc_id": "D1", "image_path": "i.png", "image_sha256": "s"}
        pq.write_table(
            pa.Table.from_pylist([{**row, "training_allowed": flag}]),
            tmp_path / name / "pairs.parquet",
        )
        dirs.append(tmp_path / name)
    if order == "opted out first":
        dirs.reverse()
    (tmp_path / "dom").mkdir()
    selected = {"id": "P1", "domain": "charts", "selected": True, "training_allowed": True}
    pq.write_table(pa.Table.from_pylist([selected]), tmp_path / "dom" / "domain_images.parquet")

    class Recorder:
        model = "recorder"
        sent: list = []

        def chat_json(self, messages, schema, items=(), **kw):
            self.sent.append(list(items))
            raise RuntimeError("must not be asked")

    teacher = Recorder()
    make_domain_qa(tmp_path / "dom", dirs, tmp_path / "out", teacher, workers=1)
    assert teacher.sent == []
    (row,) = pq.read_table(tmp_path / "out" / "domain_qa.parquet").to_pylist()
    assert row["status"].startswith("opted_out: training_allowed is false in pairs")
    assert row["training_allowed"] is not True
