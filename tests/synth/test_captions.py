"""Captions at three levels (synth/captions.py, `refinery synth captions`, `refinery captioner
train`): the CLIP filter keeps mismatched captions as rejects with their reason, the detailed
level is absent without a teacher (and the summary says why), and against the fake
OpenAI-compatible teacher on loopback (tests/synth/fake_teacher.py): detailed paragraphs and the
dense-caption recipe, opted-out pairs never sent, a rerun sends nothing, a 500 is retried, a
failure is a row with its reason; the CLI on a tiny lake with the CoCa and CLIP trained here.

Most tests score with `PaletteClip`: the same interface as training.clip.ClipScorer, with
embeddings computed from the sample web's exact colour palette (pixels of each palette colour in
the image, colour words in the text), so a caption with the wrong colour scores 0 and the right
one 1 -- a scorer whose right answer is known, where a CLIP trained for seconds is not reliable.
The CLI test uses a real CLIP and CoCa trained here."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import random

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from common.lakecheck import verify_lake
from common.teacher import TeacherClient, TeacherError
from sampleweb.images import COLOURS, random_scene, render_png
from synth import captions as cap_mod
from synth.captions import COLUMNS, NO_TEACHER, make_captions
from tests.synth import fake_teacher
from tests.synth.fake_teacher import request_images, request_text
from tests.synth.test_coca import make_pairs_dir

server = fake_teacher.server  # the fake endpoint (a pytest fixture)
pytestmark = pytest.mark.timeout(180)

N = 8
PARAGRAPH = "There are shapes. They sit on a pale background."


class PaletteClip:
    """ClipScorer's interface over the sample web's palette (see the module docstring)."""

    names = list(COLOURS)

    def encode_images(self, images):
        feats = np.zeros((len(images), len(self.names)), dtype=np.float32)
        ok = np.zeros(len(images), dtype=bool)
        for i, image in enumerate(images):
            with Image.open(image if not isinstance(image, bytes) else io.BytesIO(image)) as im:
                px = np.asarray(im.convert("RGB")).reshape(-1, 3)
            for k, name in enumerate(self.names):
                feats[i, k] = float((px == COLOURS[name]).all(axis=1).sum() > 20)
            feats[i] /= max(np.linalg.norm(feats[i]), 1e-9)
            ok[i] = True
        return feats, ok

    def encode_texts(self, texts):
        feats = np.zeros((len(texts), len(self.names)), dtype=np.float32)
        for i, text in enumerate(texts):
            words = set(text.lower().replace(",", " ").split())
            feats[i] = [name in words for name in self.names]
            feats[i] /= max(np.linalg.norm(feats[i]), 1e-9)
        return feats


class ScriptedCaptioner:
    """A captioner that says a pair's true alt text, or for the pairs in `wrong` the alt text with
    its first colour replaced by one the image does not show."""

    name = "scripted-captioner"
    card = {"description": "test double"}

    def __init__(self, pairs_dir, wrong=()):
        rows = pq.read_table(pairs_dir / "pairs.parquet").to_pylist()
        self.by_sha = {r["image_sha256"]: (r["id"], r["caption"]) for r in rows}
        self.wrong = set(wrong)
        self.calls = 0

    def generate(self, images):
        self.calls += 1
        out = []
        for data in images:
            pid, caption = self.by_sha[hashlib.sha256(data).hexdigest()]
            if pid in self.wrong:
                said = [c for c in COLOURS if c in caption.split()]
                (seen,), _ = PaletteClip().encode_images([data])
                drawn = {c for c, v in zip(PaletteClip.names, seen, strict=True) if v > 0}
                other = next(c for c in COLOURS if c not in said and c not in drawn)
                caption = caption.replace(said[0], other)
            out.append(caption)
        return out


def _opted_out_rows(root):
    """Two kept pairs a teacher must never see: training_allowed false, and null."""
    rows = []
    for i, allowed in enumerate((False, None)):
        png = render_png(random_scene(random.Random(100 + i)))
        sha = hashlib.sha256(png).hexdigest()
        rel = f"images/{sha[:2]}/{sha}.png"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(png)
        rows.append(
            {
                "id": f"out{i}",
                "caption": "a red circle on the left",
                "image_sha256": sha,
                "image_path": rel,
                "training_allowed": allowed,
                "drop_reason": None,
            }
        )
    return rows


@pytest.fixture
def pairs(tmp_path):
    root = tmp_path / "lake" / "images" / "pairs" / "shard=0"
    return make_pairs_dir(root, N, seed=5, extra=_opted_out_rows(root))


def _rows(out):
    return pq.read_table(out / "captions.parquet").to_pylist()


def _data_url(path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()


def test_clip_filter_rejects_mismatched_captions_with_the_reason(pairs, tmp_path):
    wrong = {"p001", "p004"}
    out = tmp_path / "out"
    s = make_captions(
        [pairs],
        out,
        ["keywords", "brief"],
        captioner=ScriptedCaptioner(pairs, wrong),
        clip=PaletteClip(),
        min_score=0.5,
    )
    rows = _rows(out)
    table = pq.read_table(out / "captions.parquet")
    assert table.column_names == list(COLUMNS)
    assert len(rows) == s["rows"] == 2 * N == s["ok"] + s["rejected"]  # rows in = ok + rejects
    assert s["opted_out_skipped"] == 2 and not {r["pair_id"] for r in rows} & {"out0", "out1"}
    for r in rows:
        assert r["source"] == "scripted-captioner"
        if r["pair_id"] in wrong:
            assert r["status"] == "low_clip_score" and r["clip_score"] < 0.5, r
            assert r["caption"]  # the reject keeps its caption and score
        else:
            assert r["status"] == "ok" and r["clip_score"] > 0.7, r  # e.g. an apple's leaf
        assert (out / r["image_path"]).is_file()
        image = (out / r["image_path"]).read_bytes()
        assert hashlib.sha256(image).hexdigest() == r["image_sha256"]
    assert s["rejects"] == {"low_clip_score": 4}
    brief = {r["pair_id"]: r["caption"] for r in rows if r["level"] == "brief"}
    kw = {r["pair_id"]: r["caption"] for r in rows if r["level"] == "keywords"}
    for pid, text in brief.items():
        words = [w for w in text.split() if w not in cap_mod.STOP_WORDS]
        assert kw[pid] == ", ".join(dict.fromkeys(words)), (text, kw[pid])
    manifest = json.loads((out / "captions.parquet.manifest.json").read_text())
    assert manifest["rows"] == 2 * N and manifest["summary"]["rejects"] == s["rejects"]


def test_detailed_level_is_absent_without_a_teacher(pairs, tmp_path):
    out = tmp_path / "out"
    captioner = ScriptedCaptioner(pairs)
    s = make_captions([pairs], out, captioner=captioner, clip=PaletteClip())
    rows = _rows(out)
    assert {r["level"] for r in rows} == {"keywords", "brief"}
    assert s["absent_levels"] == {"detailed": NO_TEACHER} and "rather than faked" in NO_TEACHER
    assert s["rows"] == 2 * N and s["min_score"] is None and s["rejected"] == 0
    with pytest.raises(cap_mod.CaptionsError, match="captioner train"):
        make_captions([pairs], tmp_path / "o2", ["brief"], clip=PaletteClip())
    with pytest.raises(cap_mod.CaptionsError, match="clip train"):
        make_captions([pairs], tmp_path / "o3", captioner=captioner)
    with pytest.raises(cap_mod.CaptionsError, match="keywords,brief,detailed"):
        make_captions([pairs], tmp_path / "o4", ["short"], captioner=captioner, clip=PaletteClip())


def _teacher(server, tmp_path, **kw):
    return TeacherClient(
        server["base_url"],
        "tiny-vlm",
        timeout=5,
        backoff_s=0.01,
        cache_dir=tmp_path / "cache",
        **kw,
    )


def _dense_responder(body):
    """Regions: the palette colours the crop shows; summary: one sentence per non-empty region."""
    text = request_text(body)
    if "region of a larger image" in text:
        position = text.split("This is the ")[1].split(" region")[0]
        (url,) = request_images(body)
        (seen,), _ = PaletteClip().encode_images([base64.b64decode(url.split(",", 1)[1])])
        colours = [c for c, v in zip(PaletteClip.names, seen, strict=True) if v > 0]
        return ("ok", f"{' and '.join(colours)} shapes ({position})" if colours else "empty")
    if "captions of the regions" in text:
        lines = [ln[2:] for ln in text.splitlines() if ln.startswith("- ")]
        return (
            "ok",
            " ".join(f"There are {ln.split(': ', 1)[1]}." for ln in lines if "empty" not in ln),
        )
    return ("ok", PARAGRAPH)


def test_detailed_paragraphs_and_the_dense_recipe(server, pairs, tmp_path):
    server["responder"] = _dense_responder
    teacher = _teacher(server, tmp_path)
    s = make_captions(
        [pairs], tmp_path / "plain", ["detailed"], clip=PaletteClip(), teacher=teacher
    )
    rows = _rows(tmp_path / "plain")
    assert len(server["requests"]) == N and s["teacher"] == "tiny-vlm"
    assert all(r["caption"] == PARAGRAPH and r["source"] == "tiny-vlm" for r in rows)
    assert all(r["status"] == "ok" and r["clip_score"] is not None for r in rows)
    for req in server["requests"]:  # one image each, as a data URL
        (url,) = request_images(req["body"])
        assert url.startswith("data:image/png;base64,")

    server["requests"].clear()
    s = make_captions(
        [pairs], tmp_path / "dense", ["detailed"], clip=PaletteClip(), teacher=teacher, dense=2
    )
    # 4 regions + 1 summary each; a region identical to one asked already (the same empty
    # corner of the same size) is answered from the cache
    u = s["teacher_usage"]
    assert u["requests"] - N == len(server["requests"]) and s["dense"] == 2
    assert len(server["requests"]) + u["cache_hits"] == N * 5
    summaries = [
        r for r in server["requests"] if "captions of the regions" in request_text(r["body"])
    ]
    assert summaries
    for req in summaries:
        text = request_text(req["body"])
        for position in ("top-left", "top-right", "bottom-left", "bottom-right"):
            assert f"- {position}: " in text
        assert request_images(req["body"]) == []  # the summary is text: regions with positions
    regions = [r for r in server["requests"] if r not in summaries]
    for req in regions:
        (url,) = request_images(req["body"])
        with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as im:
            assert im.size[0] <= 150 and im.size[1] <= 100  # quadrants of <= 300x200 scenes
    rows = _rows(tmp_path / "dense")
    for r in rows:
        assert r["caption"].startswith("There are ") and "shapes (" in r["caption"], r
        # each sentence names the colours of its region: the paragraph matches its image
        assert r["status"] == "ok" and r["clip_score"] > 0.5, r


def test_opted_out_pairs_are_never_sent(server, pairs, tmp_path):
    server["default"] = ("ok", PARAGRAPH)
    teacher = _teacher(server, tmp_path)
    s = make_captions([pairs], tmp_path / "out", clip=PaletteClip(), teacher=teacher, dense=3)
    assert s["opted_out_skipped"] == 2
    assert s["levels"]["brief"]["source"] == "teacher"  # no captioner: the teacher writes all
    sent = {u for r in server["requests"] for u in request_images(r["body"])}
    asked = len(server["requests"]) + s["teacher_usage"]["cache_hits"]
    assert asked == N * (1 + 1 + 9 + 1)  # keywords, brief, 9 regions, summary (some cached)
    table = pq.read_table(pairs / "pairs.parquet").to_pylist()
    for r in table:
        url = _data_url(pairs / r["image_path"])
        assert (url in sent) == (r["training_allowed"] is True), r["id"]
    # the client refuses them too, before any request
    before = len(server["requests"])
    blocked = next(r for r in table if r["training_allowed"] is False)
    data = (pairs / blocked["image_path"]).read_bytes()
    item = {"pair_id": blocked["id"], "training_allowed": False}
    with pytest.raises(TeacherError, match="refused to send"):
        cap_mod.teacher_caption(teacher, item, data, "detailed", dense=None)
    assert len(server["requests"]) == before


def test_a_rerun_sends_nothing_and_a_500_is_retried(server, pairs, tmp_path):
    server["default"] = ("ok", PARAGRAPH)
    server["script"] = [500, 429]
    captioner = ScriptedCaptioner(pairs)
    args = dict(captioner=captioner, clip=PaletteClip(), min_score=0.5)
    s1 = make_captions([pairs], tmp_path / "a", teacher=_teacher(server, tmp_path), **args)
    assert len(server["requests"]) == N + 2  # one detailed paragraph per pair; 2 retries
    assert s1["ok"] + s1["rejected"] == s1["rows"] == 3 * N
    assert s1["teacher_usage"]["requests"] == N and s1["teacher_usage"]["failures"] == 0
    s2 = make_captions([pairs], tmp_path / "b", teacher=_teacher(server, tmp_path), **args)
    assert len(server["requests"]) == N + 2  # all from the cache
    assert s2["teacher_usage"]["cache_hits"] == N and s2["teacher_usage"]["requests"] == 0
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")  # image paths are relative to DIR


def test_a_teacher_failure_is_a_row_with_its_reason(server, pairs, tmp_path):
    server["default"] = 400  # a client error: not retried, fails for good
    s = make_captions(
        [pairs],
        tmp_path / "out",
        ["brief", "detailed"],
        captioner=ScriptedCaptioner(pairs),
        clip=PaletteClip(),
        teacher=_teacher(server, tmp_path),
    )
    rows = _rows(tmp_path / "out")
    detailed = [r for r in rows if r["level"] == "detailed"]
    assert len(detailed) == N and s["rows"] == 2 * N == s["ok"] + s["rejected"]
    for r in detailed:
        assert r["status"].startswith("teacher_error: HTTP 400") and r["caption"] is None, r
        assert r["clip_score"] is None
    assert s["rejects"] == {"teacher_error": N}


@pytest.mark.parametrize(
    "body",
    [
        b'{"choices":[{"index":0,"message":{"role":"assistant","content":"a red \\udc80 square"}}]}',
        b'{"choices":[{"message":{"content":"\xff"}}]}',  # not UTF-8
    ],
)
def test_an_answer_that_is_not_unicode_is_one_rows_reason_not_the_end(
    server, pairs, tmp_path, body
):
    """A lone surrogate in one answer raised UnicodeEncodeError from the cache's write, a body not
    UTF-8 UnicodeDecodeError: either ended the whole run, captions.parquet never written."""
    server["default"] = ("ok", PARAGRAPH)
    server["script"] = [("ok", PARAGRAPH), ("raw", body)]  # the second request's answer
    s = make_captions(
        [pairs],
        tmp_path / "out",
        ["detailed"],
        clip=PaletteClip(),
        teacher=_teacher(server, tmp_path, max_retries=0),
        workers=1,
    )
    rows = _rows(tmp_path / "out")
    assert len(rows) == s["rows"] == N == s["ok"] + s["rejected"]
    assert s["rejects"] == {"teacher_error": 1}
    (bad,) = [r for r in rows if r["status"] != "ok"]
    assert bad["caption"] is None and ("Unicode" in bad["status"] or "read" in bad["status"])


def test_any_failure_of_one_rows_request_is_that_rows_reason(pairs, tmp_path):
    """Only TeacherError was caught: anything else one row's request raised ended the run."""

    class Flaky:
        model = "flaky-vlm"

        def __init__(self):
            self.calls = 0

        def chat(self, messages, *, items=(), **params):
            self.calls += 1
            if items[0]["pair_id"] == "p003":
                raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
            return PARAGRAPH

    s = make_captions(
        [pairs], tmp_path / "out", ["detailed"], clip=PaletteClip(), teacher=Flaky(), workers=2
    )
    rows = {r["pair_id"]: r for r in _rows(tmp_path / "out")}
    assert len(rows) == N and s["rejects"] == {"caption_error": 1}
    assert rows["p003"]["status"].startswith("caption_error: UnicodeEncodeError")
    assert all(r["status"] == "ok" for pid, r in rows.items() if pid != "p003")


def test_dense_on_an_image_smaller_than_the_grid_describes_it_whole(server, tmp_path):
    """An image narrower than the grid cut into empty cells: Pillow's 'cannot write empty image'
    ended the run."""
    root = tmp_path / "pairs"
    extra = []
    for pid, size in (("tiny1", (1, 1)), ("strip", (40, 5))):
        buf = io.BytesIO()
        Image.new("RGB", size, COLOURS["red"]).save(buf, format="PNG")
        sha = hashlib.sha256(buf.getvalue()).hexdigest()
        (root / "images").mkdir(parents=True, exist_ok=True)
        (root / f"images/{sha}.png").write_bytes(buf.getvalue())
        extra.append(
            {
                "id": pid,
                "caption": "red",
                "image_sha256": sha,
                "image_path": f"images/{sha}.png",
                "training_allowed": True,
                "drop_reason": None,
            }
        )
    pairs = make_pairs_dir(root, 1, seed=3, extra=extra)
    server["responder"] = _dense_responder
    s = make_captions(
        [pairs],
        tmp_path / "out",
        ["detailed"],
        clip=PaletteClip(),
        teacher=_teacher(server, tmp_path),
        dense=3,
    )
    rows = {r["pair_id"]: r for r in _rows(tmp_path / "out")}
    assert all(r["status"] == "ok" for r in rows.values()), rows
    assert rows["tiny1"]["caption"] == rows["strip"]["caption"] == PARAGRAPH  # described whole
    assert rows["p000"]["caption"].startswith("There are ")  # the grid fits: regions
    assert s["dense_whole_image"] == 2
    assert cap_mod.grid_fits(b"not an image", 2) is False


def test_cli_trains_the_captioner_and_captions_a_tiny_lake(tmp_path, monkeypatch):
    from common.pairs import kept_pairs
    from pipelines.cli import app
    from training.clip import train_clip

    lake = tmp_path / "lake"
    pairs = make_pairs_dir(lake / "images" / "pairs" / "shard=0", 24, seed=9)
    clip = lake / "models" / "clip"
    train_clip(
        [(p["image_file"], p["caption"]) for p in kept_pairs([pairs])],
        clip,
        steps=5,
        batch_size=8,
        device="cpu",
    )
    monkeypatch.setenv("REFINERY_HOME", str(lake))
    monkeypatch.delenv("REFINERY_TEACHER_URL", raising=False)
    runner = CliRunner()
    res = runner.invoke(app, ["captioner", "train", "--steps", "20", "--batch-size", "8"])
    assert res.exit_code == 0, res.output
    model = lake / "models" / "captioner"
    assert "pairs=24" in res.output and (model / "model_card.json").is_file()
    assert json.loads((model / "manifest.json").read_text())["kind"] == "captioner-model"

    res = runner.invoke(app, ["synth", "captions", "--min-score", "0.2"])
    assert res.exit_code == 0, res.output
    out = lake / "synth" / "captions"
    rows = _rows(out)
    assert len(rows) == 48 and {r["level"] for r in rows} == {"keywords", "brief"}
    assert all(r["source"] == "refinery-coca-tiny@captioner" for r in rows)
    assert all(r["caption"] and r["clip_score"] is not None for r in rows if r["status"] == "ok")
    assert {r["status"] for r in rows} <= {"ok", "low_clip_score", "empty_caption"}
    assert "rows=48" in res.output and "absent_levels" in res.output
    assert verify_lake(lake) == []  # rows as the manifests say, no duplicate rows

    explicit = tmp_path / "explicit"
    res = runner.invoke(
        app,
        [
            "synth",
            "captions",
            "--pairs",
            str(pairs),
            "--out",
            str(explicit),
            "--levels",
            "brief",
            "--captioner",
            str(model),
            "--clip",
            str(clip),
        ],
    )
    assert res.exit_code == 0, res.output
    again = _rows(explicit)
    assert [(r["pair_id"], r["caption"]) for r in again] == [
        (r["pair_id"], r["caption"]) for r in rows if r["level"] == "brief"
    ]
    bad = runner.invoke(
        app, ["synth", "captions", "--captioner", str(clip), "--out", str(tmp_path / "x")]
    )
    assert bad.exit_code == 2 and "multimodal_cfg" in bad.output
    bad = runner.invoke(app, ["synth", "captions", "--dense", "2", "--out", str(tmp_path / "y")])
    assert bad.exit_code == 2 and "needs a teacher" in bad.output


def test_dagster_assets_train_caption_and_check(tmp_path):
    import pyarrow as pa

    from common.pairs import kept_pairs
    from pipelines.graph import materialize_selection
    from pipelines.stage import Dataset, Lake
    from pipelines.stages import captions as stage_mod
    from training.clip import train_clip

    lake = tmp_path / "lake"
    shard = lake / "images" / "pairs" / "shard=0"
    pairs = make_pairs_dir(shard, 12, seed=2, extra=_opted_out_rows(shard))
    clip = lake / "models" / "clip"
    kept = [(p["image_file"], p["caption"]) for p in kept_pairs([pairs])]
    train_clip(kept, clip, steps=3, batch_size=8, device="cpu")
    handles = lake / "_handles"
    (handles / "image_pairs").mkdir(parents=True)
    (handles / "image_pairs" / "0.json").write_text(
        Dataset("image_pairs", str(pairs), "0").to_json()
    )
    (handles / "clip_model.json").write_text(Dataset("clip_model", str(clip)).to_json())
    res = materialize_selection(
        ["captioner_model", "synthetic_captions"],
        lake,
        run_config={
            "ops": {
                "captioner_model": {"config": {"steps": 8, "batch_size": 8}},
                "synthetic_captions": {"config": {"min_score": -1.0}},
            }
        },
    )
    assert res.success
    events = {e.asset_key.path[-1]: e for e in res.get_asset_materialization_events()}
    meta = {
        k: getattr(v, "value", v)
        for k, v in events["synthetic_captions"].materialization.metadata.items()
    }
    assert meta["pairs"] == 12 and meta["opted_out_skipped"] == 2 and meta["rows"] == 24
    assert meta["teacher_requests"] == 0 and "detailed" in meta["absent_levels"]
    checks = {c.check_name: c.passed for c in res.get_asset_check_evaluations()}
    assert checks == {"only_consented_pairs": True, "captions_accounted": True}
    out = lake / "synth" / "captions" / "captions.parquet"
    assert (lake / "models" / "captioner" / "model_card.json").is_file() and out.is_file()

    # the checks catch a captioned opted-out pair and a lost row
    table = pq.read_table(out)
    rows = table.to_pylist()
    summary = stage_mod.CaptionsSummary(
        outputs={"synthetic_captions": str(out)},
        **{k: meta[k] for k in ("pairs", "opted_out_skipped", "rows", "ok", "rejected")},
        rejects={},
        levels={"keywords": {}, "brief": {}},
        absent_levels={},
        seconds=1.0,
        captions_per_s=1.0,
    )
    manifest = out.with_name(out.name + ".manifest.json").read_text()
    bad = [*rows[1:], {**rows[0], "pair_id": "out0"}]
    pq.write_table(pa.Table.from_pylist(bad, schema=table.schema), out)
    out.with_name(out.name + ".manifest.json").write_text(manifest)
    assert not stage_mod._captions_consent(summary, Lake(root=lake)).passed
    assert not stage_mod._captions_accounted(summary, Lake(root=lake)).passed
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), out)
    assert stage_mod._captions_consent(summary, Lake(root=lake)).passed
    assert stage_mod._captions_accounted(summary, Lake(root=lake)).passed


def test_a_pair_whose_image_path_is_refused_is_an_undecodable_row(pairs, tmp_path):
    """An absolute image_path (refused: paths are relative to the pairs file) is the row's
    reason, not the end of the run."""
    import pyarrow as pa

    table = pq.read_table(pairs / "pairs.parquet")
    rows = table.to_pylist()
    bad = rows[0]["id"]
    rows[0]["image_path"] = str((pairs / rows[0]["image_path"]).resolve())
    odd = tmp_path / "odd"
    odd.mkdir()
    for r in rows[1:]:
        (odd / r["image_path"]).parent.mkdir(parents=True, exist_ok=True)
        (odd / r["image_path"]).write_bytes((pairs / r["image_path"]).read_bytes())
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), odd / "pairs.parquet")
    out = tmp_path / "out"
    make_captions([odd], out, captioner=ScriptedCaptioner(odd), clip=PaletteClip())
    got = [r for r in _rows(out) if r["pair_id"] == bad]
    assert got and all(r["status"] != "ok" and r["caption"] is None for r in got), got
