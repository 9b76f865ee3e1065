"""`refinery images build`, `refinery clip train` and `refinery images domains` end to end on the
served sample web: the pairs contract (one row per image ref, the contract's columns, known drop
reasons), opted-out images never stored, interleaved documents filtered in place, a CLIP trained
here loading back for scoring and domain selection."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from sampleweb import build_web, serve

pytestmark = pytest.mark.timeout(600)

PAIRS_COLUMNS = [
    "id",
    "doc_id",
    "src",
    "alt",
    "caption",
    "image_sha256",
    "phash",
    "width",
    "height",
    "image_path",
    "training_allowed",
    "clip_score",
    "duplicate_of",
    "drop_reason",
]
DROP_REASONS = {
    "robots_denied",
    "training_opt_out",
    "noai",
    "fetch_error",
    "http_status",
    "not_image",
    "too_large",
    "decompression_bomb",
    "too_small",
    "bad_aspect",
    "undecodable",
    "process_error",
    "bad_caption",
    "duplicate",
    "repeated_url",
    "low_clip_score",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(extract dir, images build dir, served web) of four sample-web sites. Its own web, not the
    shared sample lake: four sites keep the CLI's image build (CLIP scoring included) small."""
    from crawlers.crawl import crawl
    from pipelines.stages.extract import run_extract

    root = tmp_path_factory.mktemp("images-stage")
    with serve(build_web(0), first_octet=190) as web:
        seeds = web.seeds()[:4]
        config = {"delay": 0.0, "allow_private_networks": True, "robots_retries": 0}
        asyncio.run(crawl(seeds, root / "crawl", config))
        run_extract(root / "crawl", root / "extract", "never")
        args = ["images", "build", "--docs", str(root / "extract"), "--out", str(root / "pairs")]
        res = CliRunner().invoke(app, [*args, "--allow-private-networks", "--delay", "0"])
        assert res.exit_code == 0, res.output
        yield root / "extract", root / "pairs", web


def test_pairs_contract_rows_in_equal_rows_out(built):
    extract, pairs_dir, _ = built
    refs = pq.read_table(extract / "image_refs.parquet")
    pairs = pq.read_table(pairs_dir / "pairs.parquet")
    assert pairs.column_names[: len(PAIRS_COLUMNS)] == PAIRS_COLUMNS
    assert pairs.num_rows == refs.num_rows > 0
    rows = pairs.to_pylist()
    assert len({r["id"] for r in rows}) == len(rows)
    assert {r["drop_reason"] for r in rows} - {None} <= DROP_REASONS
    kept = [r for r in rows if r["drop_reason"] is None]
    assert kept and all(r["caption"] and r["image_path"] and r["phash"] for r in kept)
    assert all(len(r["phash"]) == 16 for r in kept)
    assert all(r["clip_score"] is None for r in rows)  # no --clip: no score, no cut
    for r in kept:
        assert (pairs_dir / r["image_path"]).exists()


def test_opted_out_images_are_never_stored(built):
    _, pairs_dir, _ = built
    rows = pq.read_table(pairs_dir / "pairs.parquet").to_pylist()
    opted_out = [
        r for r in rows if r["drop_reason"] in ("noai", "training_opt_out", "robots_denied")
    ]
    assert opted_out, "the sample web has images the training token may not use"
    for r in opted_out:
        assert r["image_path"] is None and r["image_sha256"] is None
        assert r["training_allowed"] is False
    stored = {p.name.split(".")[0] for p in (pairs_dir / "images").rglob("*.*")}
    assert stored == {r["image_sha256"] for r in rows if r["image_sha256"]}


def test_interleaved_documents_keep_text_and_order(built):
    extract, pairs_dir, _ = built
    source = {d["doc_id"]: d for d in pq.read_table(extract / "interleaved.parquet").to_pylist()}
    kept = pq.read_table(pairs_dir / "interleaved.parquet").to_pylist()
    pairs = {r["id"]: r for r in pq.read_table(pairs_dir / "pairs.parquet").to_pylist()}
    assert kept
    for doc in kept:
        texts = [b["text"] for b in doc["blocks"] if b["kind"] != "image"]
        original = [b["text"] for b in source[doc["doc_id"]]["blocks"] if b["kind"] != "image"]
        assert texts == original  # text blocks and their order stay
        for b in doc["blocks"]:
            if b["kind"] == "image":
                assert pairs[b["pair_id"]]["drop_reason"] is None
        assert doc["text"].count("<|image|>") == sum(b["kind"] == "image" for b in doc["blocks"])


def test_clip_train_then_score_and_select_domains(built, tmp_path):
    extract, pairs_dir, _ = built
    model = tmp_path / "clip"
    res = CliRunner().invoke(
        app,
        [
            "clip",
            "train",
            "--pairs",
            str(pairs_dir),
            "--out",
            str(model),
            "--steps",
            "8",
            "--batch-size",
            "16",
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads((model / "manifest.json").read_text())["rows"] > 2
    # The trained model scores the pairs (the fixture's server is still up).
    out = tmp_path / "scored"
    args = ["images", "build", "--docs", str(extract), "--out", str(out), "--clip", str(model)]
    res = CliRunner().invoke(
        app, [*args, "--top-fraction", "0.5", "--allow-private-networks", "--delay", "0"]
    )
    assert res.exit_code == 0, res.output
    rows = pq.read_table(out / "pairs.parquet").to_pylist()
    scored = [r for r in rows if r["clip_score"] is not None]
    assert scored and any(r["drop_reason"] == "low_clip_score" for r in rows)
    # the cut it applied is recorded for the readers (common.pairs.settle)
    cut = json.loads((out / "pairs.parquet.manifest.json").read_text())["clip_score_cut"]
    assert all(r["clip_score"] >= cut for r in rows if r["drop_reason"] is None)
    assert all(r["clip_score"] < cut for r in rows if r["drop_reason"] == "low_clip_score")
    res = CliRunner().invoke(
        app,
        [
            "images",
            "domains",
            "--pairs",
            str(pairs_dir),
            "--clip",
            str(model),
            "--out",
            str(tmp_path / "domains"),
        ],
    )
    assert res.exit_code == 0, res.output
    table = pq.read_table(tmp_path / "domains" / "domain_images.parquet")
    for col in ("id", "domain", "keyword_hits", "clip_similarity", "selected", "reason"):
        assert col in table.column_names


def test_min_score_and_top_fraction_exclude_each_other(built, tmp_path):
    extract, _, _ = built
    res = CliRunner().invoke(
        app,
        [
            "images",
            "build",
            "--docs",
            str(extract),
            "--out",
            str(tmp_path / "x"),
            "--clip",
            "x",
            "--min-score",
            "0.2",
            "--top-fraction",
            "0.3",
        ],
    )
    assert res.exit_code == 2 and "exclude each other" in res.output
    assert not (tmp_path / "x").exists()  # refused before anything is fetched


def test_an_extract_output_without_usable_interleaved_documents_is_refused_before_fetching(
    built, tmp_path
):
    """The run ends by filtering extract's interleaved.parquet: a missing or unreadable one was
    found only after every image had been fetched, leaving a journal that refused a re-run."""
    import shutil

    import pyarrow as pa

    extract, _, _ = built
    docs = tmp_path / "extract"
    docs.mkdir()
    for name in ("image_refs.parquet", "documents.parquet"):
        shutil.copy(extract / name, docs / name)
    base = ["images", "build", "--docs", str(docs), "--allow-private-networks", "--delay", "0"]
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "interleaved.parquet: no interleaved documents" in res.output
    assert not (tmp_path / "a").exists()
    pq.write_table(pa.table({"doc_id": ["d"]}), docs / "interleaved.parquet")
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "missing column blocks" in res.output, res.output
    assert not (tmp_path / "b").exists()


def test_face_detector_flag_reaches_the_fetch_and_a_bad_one_is_refused(
    built, tmp_path, monkeypatch
):
    import crawlers.images.fetch as fetch_mod

    extract, pairs, web = built
    used = []

    class Recording(fetch_mod.FaceDetector):
        def __init__(self, cfg=None):
            super().__init__(cfg)
            used.append((self.cfg.detector, list(self.cfg.angles)))

    monkeypatch.setattr(fetch_mod, "FaceDetector", Recording)
    base = ["images", "build", "--docs", str(extract), "--allow-private-networks", "--delay", "0"]
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "bad"), "--face-detector", "x"])
    assert (
        res.exit_code == 2 and "--face-detector 'x'" in res.output and "mtcnn, haar" in res.output
    )
    assert not (tmp_path / "bad").exists() and used == []  # refused before anything is fetched
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "h"), "--face-detector", "haar"])
    assert res.exit_code == 0, res.output
    assert used == [("haar", [-15.0, 15.0, -30.0, 30.0])]
    turns = ["--face-angles", "-25", "--face-angles", "25", "--face-angles", "90"]
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "t"), *turns])
    assert res.exit_code == 0, res.output
    assert used[-1] == ("mtcnn", [-25.0, 25.0, 90.0])
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "n"), "--face-angles", "nan"])
    assert res.exit_code == 2 and "is not a turn" in res.output, res.output
    assert not (tmp_path / "n").exists() and len(used) == 2
    # The sample web's scenes hold no face for either detector: the same rows and files.
    cols = ["id", "image_sha256", "stored_sha256", "face_count", "drop_reason"]
    assert (
        pq.read_table(tmp_path / "h" / "pairs.parquet", columns=cols).to_pylist()
        == pq.read_table(pairs / "pairs.parquet", columns=cols).to_pylist()
    )


def test_consent_check_passes_then_fails_on_a_stored_opted_out_image(built, tmp_path):
    import shutil

    import pyarrow as pa

    from crawlers.images.checks import image_pairs_consent

    _, pairs_dir, _ = built
    assert image_pairs_consent(pairs_dir).passed
    copy = tmp_path / "pairs"
    shutil.copytree(pairs_dir, copy)
    table = pq.read_table(copy / "pairs.parquet")
    rows = table.to_pylist()
    i = next(k for k, r in enumerate(rows) if r["drop_reason"] in ("noai", "training_opt_out"))
    stored = next(r for r in rows if r["image_path"])
    rows[i]["image_path"], rows[i]["drop_reason"] = stored["image_path"], None
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), copy / "pairs.parquet")
    out = image_pairs_consent(copy)
    assert not out.passed and out.metadata["leaked_rows"] == 1 and rows[i]["id"] in out.description
    # A stored file that belongs to no allowed row fails too.
    pq.write_table(table, copy / "pairs.parquet")
    (copy / "images" / "ff").mkdir(exist_ok=True)
    (copy / "images" / "ff" / ("f" * 64 + ".png")).write_bytes(b"x")
    out = image_pairs_consent(copy)
    assert not out.passed and out.metadata["orphan_files"] == 1


def test_clip_scores_on_beam_equal_the_in_process_scorer(built, tmp_path):
    from common.pairs import kept_pairs
    from pipelines.beam.images import score_pairs_beam
    from training.clip import ClipScorer, train_clip

    _, pairs_dir, _ = built
    pairs = [(k["image_file"], k["caption"]) for k in kept_pairs([pairs_dir / "pairs.parquet"])]
    pairs = pairs[:40]
    model = tmp_path / "clip"
    train_clip(pairs, model, steps=2, batch_size=8)
    items = [(f"p{i}", path, caption) for i, (path, caption) in enumerate(pairs)]
    items.append(("missing", str(tmp_path / "no-such.png"), "a caption"))
    beam = score_pairs_beam(items, str(model), ["--runner=DirectRunner"], batch_size=16)
    local = ClipScorer(str(model)).score([p for p, _ in pairs], [c for _, c in pairs])
    assert set(beam) == {pid for pid, _, _ in items}
    assert np.isnan(beam["missing"])
    np.testing.assert_allclose([beam[f"p{i}"] for i in range(len(pairs))], local, atol=1e-5)


def test_image_pairs_asset_rematerializes_its_partition(built, tmp_path):
    import shutil

    from crawlers.images.shards import image_shard
    from pipelines.graph import materialize_selection
    from pipelines.stages.images import IMAGE_SHARDS

    extract, _, _ = built
    root = tmp_path / "lake"
    shutil.copytree(extract, root / "extract")
    src = pq.read_table(extract / "image_refs.parquet")["src"][0].as_py()
    shard = str(image_shard(src, IMAGE_SHARDS))
    config = {"ops": {"image_pairs": {"config": {"allow_private_networks": True, "delay": 0.0}}}}
    for _ in range(2):  # a second run starts the partition afresh instead of refusing it
        result = materialize_selection(
            ["image_pairs"], root, partition_key=shard, run_config=config
        )
        assert result.success
    pairs = pq.read_table(root / "images" / "pairs" / f"shard={shard}" / "pairs.parquet")
    assert pairs.num_rows > 0
    assert {image_shard(s, IMAGE_SHARDS) for s in pairs["src"].to_pylist()} == {int(shard)}
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {"no_opted_out_image": True, "faces_blurred": True, "refs_accounted": True}
