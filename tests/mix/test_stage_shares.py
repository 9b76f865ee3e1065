"""Curriculum stages get their token budgets and weights, even when documents are long."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from tokenizers import Tokenizer

from training.loader import image_slot_count
from training.mixture.builder import Corpus, _pack, _whole_block_cuts, build_mixture
from training.mixture.packing import PackStats, TokenStore
from training.mixture.report import accounting_checks, summary_lines
from training.mixture.sampling import cut_at_stages

from .conftest import WORDS
from .test_multimodal import IMAGE_ID, K, mm_lake, mm_spec  # noqa: F401 - mm_lake: a fixture

pytestmark = pytest.mark.timeout(180)

STAGES = [
    {"name": "main", "until": 0.5},
    {"name": "anneal", "until": 1.0, "weights": {"web": 0.2, "other": 0.8}},
]


@pytest.fixture(scope="module")
def long_docs(tmp_path_factory) -> Path:
    """English and German documents of 500 to 3,000 words (about as many tokens each)."""
    rng = random.Random(11)
    rows = [
        {
            "id": f"{lang}-{i}",
            "text": " ".join(rng.choice(WORDS[lang]) for _ in range(rng.randint(500, 3000))),
            "training_allowed": True,
            "lang": lang,
        }
        for lang in ("en", "de")
        for i in range(30)
    ]
    path = tmp_path_factory.mktemp("long") / "docs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _staged_spec(lake: Path, docs: Path) -> dict:
    return {
        "name": "staged",
        "seq_len": 128,
        "total_tokens": 30_000,
        "seed": 5,
        "tokenizer": str(lake / "tokenizer" / "tokenizer.json"),
        "buckets": {
            "web": {"weight": 0.6, "sources": [{"path": str(docs), "where": "lang = 'en'"}]},
            "other": {"weight": 0.4, "sources": [{"path": str(docs), "where": "lang = 'de'"}]},
        },
        "stages": STAGES,
        "eval": {"sequences_per_group": 1, "max_fraction": 0.05},
    }


def _stage_language_tokens(out: Path, manifest: dict) -> dict[str, dict[str, int]]:
    """Tokens per stage and language, read back from the shards (each piece between boundary
    tokens decoded and told apart by its words)."""
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    boundary, pad = manifest["special_tokens"]["boundary"], manifest["special_tokens"]["pad"]
    en = set(WORDS["en"])
    got: dict[str, dict[str, int]] = {}
    for st in manifest["stages"]:
        rows = [np.load(out / s["path"]) for s in manifest["shards"] if s["stage"] == st["name"]]
        stream = np.concatenate(rows).reshape(-1)
        stream = stream[stream != pad]
        counts = got.setdefault(st["name"], {"en": 0, "de": 0})
        for piece in np.split(stream, np.flatnonzero(stream == boundary)):
            piece = piece[piece != boundary]
            if len(piece):
                words = set(tok.decode(piece.tolist()).split())
                counts["en" if words & en else "de"] += len(piece)
    return got


def test_stages_get_their_budget_and_weights_with_long_documents(lake, long_docs, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(_staged_spec(lake, long_docs), sort_keys=False))
    m = build_mixture(spec, tmp_path / "out")
    got = _stage_language_tokens(tmp_path / "out", m)
    want = {"main": {"en": 0.6, "de": 0.4}, "anneal": {"en": 0.2, "de": 0.8}}
    for name, shares in want.items():
        total = sum(got[name].values())
        assert total == 15_000, (name, got[name])
        for lang, share in shares.items():
            assert got[name][lang] / total == pytest.approx(share, abs=0.01), (name, got[name])
    # the manifest records the same per stage and bucket, and the checks hold them to the weights
    main, anneal = m["stages"]
    assert main["buckets"]["web"] == {"weight": 0.6, "target_tokens": 9000, "tokens": 9000}
    assert anneal["buckets"]["other"]["tokens"] == anneal["buckets"]["other"]["target_tokens"]
    stage_checks = [c for c in m["checks"] if c["level"] == "stage"]
    assert len(stage_checks) == 4 and all(c["ok"] for c in m["checks"])


def test_a_stage_off_its_weights_fails_the_accounting_checks():
    def stage(name, web, other, tw, to):
        buckets = {
            "web": {"weight": tw / (tw + to), "target_tokens": tw, "tokens": web},
            "other": {"weight": to / (tw + to), "target_tokens": to, "tokens": other},
        }
        return {"name": name, "tokens": web + other, "target_tokens": tw + to, "buckets": buckets}

    # the whole run is on target (12,000 / 18,000), the stages are not
    manifest = {
        "name": "m",
        "tolerance": 0.01,
        "buckets": {
            "web": {"target_tokens": 12_000, "tokens": 12_000, "groups": {}},
            "other": {"target_tokens": 18_000, "tokens": 18_000, "groups": {}},
        },
        "stages": [
            stage("main", 11_362, 6_653, 9000, 6000),
            stage("anneal", 638, 11_347, 3000, 12000),
        ],
        "num_sequences": 1,
        "seq_len": 1,
        "tokens": 30_000,
        "shards": [],
        "padding_tokens": 0,
        "waste_fraction": 0.0,
        "eval": [],
    }
    manifest["checks"] = checks = accounting_checks(manifest)
    off = {c["name"] for c in checks if not c["ok"]}
    assert off == {"web[main]", "other[main]", "web[anneal]", "other[anneal]"}
    assert all(c["ok"] for c in checks if c["level"] != "stage")
    assert any(x.startswith("OFF TARGET stage web[anneal]") for x in summary_lines(manifest))
    # a manifest from before stages recorded their buckets says so instead of "all within"
    for st in manifest["stages"]:
        del st["buckets"]
    manifest["checks"] = accounting_checks(manifest)
    lines = summary_lines(manifest)
    assert any(x.startswith("STAGE SHARES UNCHECKED") for x in lines)
    assert lines[-1].startswith("all checked shares within tolerance")


def test_a_copy_straddling_a_stage_boundary_is_cut_into_head_and_rest():
    copy, start, length, stage = cut_at_stages(np.array([10, 10, 10]), [15, 15])
    assert copy.tolist() == [0, 1, 1, 2] and start.tolist() == [0, 0, 5, 0]
    assert length.tolist() == [10, 5, 5, 10] and stage.tolist() == [0, 0, 1, 1]
    # one copy longer than a stage spans it; an empty stage gets nothing
    copy, start, length, stage = cut_at_stages(np.array([30, 5]), [10, 0, 5, 20])
    assert list(
        zip(copy.tolist(), start.tolist(), length.tolist(), stage.tolist(), strict=True)
    ) == [
        (0, 0, 10, 0),
        (0, 10, 5, 2),
        (0, 15, 15, 3),
        (1, 0, 5, 3),
    ]
    lengths = np.random.default_rng(2).integers(1, 4000, 50)
    copy, start, length, stage = cut_at_stages(lengths, [0.3, 0.5, 0.2])
    per_stage = np.bincount(stage, weights=length, minlength=3)
    assert per_stage.sum() == lengths.sum()
    assert np.abs(per_stage - lengths.sum() * np.array([0.3, 0.5, 0.2])).max() <= 1
    # the pieces of each copy are contiguous and cover it
    for j in range(len(lengths)):
        mine = copy == j
        assert start[mine][0] == 0 and (np.diff(start[mine]) == length[mine][:-1]).all()
        assert length[mine].sum() == lengths[j]


def _image_corpus(docs: list[tuple[list[int], list[int]]]) -> Corpus:
    tokens = np.concatenate([np.array(t, np.uint32) for t, _ in docs])
    offsets = np.cumsum([0] + [len(t) for t, _ in docs])
    img_offsets = np.cumsum([0] + [len(i) for _, i in docs])
    n = len(docs)
    return Corpus(
        store=TokenStore(tokens, offsets.astype(np.int64)),
        bucket=np.zeros(n, np.int32),
        source=np.zeros(n, np.int64),
        group=np.zeros(n, np.int32),
        repeat=np.ones(n),
        bucket_names=["b"],
        group_names=["all"],
        img_offsets=img_offsets.astype(np.int64),
        img_ids=np.array([i for _, ids in docs for i in ids], np.int64),
    )


def test_pieces_starting_inside_a_document_pack_with_their_own_images():
    blk = [IMAGE_ID] * K
    corpus = _image_corpus([([5, 5, *blk, 6, *blk, 7, 7], [10, 11]), ([8, *blk, 9], [12])])
    spec = SimpleNamespace(seq_len=8, image_tokens=K)
    special = {"boundary": 0, "pad": 1, "image": IMAGE_ID}
    docs, lengths, starts = np.array([0, 1, 0]), np.array([7, 6, 6]), np.array([6, 0, 0])
    got = list(_pack(spec, corpus.store, docs, lengths, special, 4, PackStats(), corpus, starts))
    # the same pieces as documents of their own
    alone = _image_corpus([([6, *blk, 7, 7], [11]), ([8, *blk, 9], [12]), ([5, 5, *blk], [10])])
    want = list(_pack(spec, alone.store, np.arange(3), lengths, special, 4, PackStats(), alone))
    assert len(got) == len(want)
    for (a, ra), (b, rb) in zip(got, want, strict=True):
        assert np.array_equal(a, b)
        assert ra.ids.tolist() == rb.ids.tolist() == [11, 12, 10][: len(ra.ids)]
        assert ra.offsets.tolist() == rb.offsets.tolist() and ra.pos.tolist() == rb.pos.tolist()
    # a stage cut inside an image block moves to the block's end
    start, length, keep = _whole_block_cuts(
        corpus, np.array([0, 0]), np.array([0, 0]), np.array([0, 4]), np.array([4, 9]), IMAGE_ID, K
    )
    assert start.tolist() == [0, 6] and length.tolist() == [6, 7] and keep.all()


def test_staged_image_mixture_keeps_blocks_whole_and_meets_stage_weights(
    lake,
    mm_lake,  # noqa: F811 - the fixture imported above
    tmp_path,
):
    stages = [
        {"name": "main", "until": 0.6},
        {
            "name": "anneal",
            "until": 1.0,
            "weights": {
                "text": 0.4,
                "interleaved": 0.2,
                "image_caption": 0.385,
                "domain_image_text": 0.015,
            },
        },
    ]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(mm_spec(lake, mm_lake, stages=stages), sort_keys=False))
    m = build_mixture(spec, tmp_path / "mix")
    assert not m["shortfalls"] and all(c["ok"] for c in m["checks"])
    assert {c["name"] for c in m["checks"] if c["level"] == "stage"} >= {"interleaved[anneal]"}
    total = 0
    for entry in m["shards"]:
        arr = np.load(tmp_path / "mix" / entry["path"])
        with np.load(tmp_path / "mix" / entry["images"]["path"]) as z:
            off, idx, pos = z["img_offsets"], z["img_index"], z["img_pos"]
        for r in range(arr.shape[0]):
            hits = np.flatnonzero(arr[r] == IMAGE_ID)
            at = pos[off[r] : off[r + 1]]
            want = np.concatenate([np.arange(s, s + K) for s in at]) if len(at) else hits
            assert hits.tolist() == want.tolist(), (entry["path"], r)
        assert image_slot_count(arr, IMAGE_ID, K) == len(idx)
        total += len(idx)
    assert total == m["images"]["shard_occurrences"]
    assert total == sum(b.get("images", 0) for b in m["buckets"].values())


@pytest.mark.timeout(240)
def test_beam_direct_runner_staged_build_is_byte_identical(lake, long_docs, tmp_path):
    from pipelines.beam.mix import build_mixture_beam

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(_staged_spec(lake, long_docs), sort_keys=False))
    local = build_mixture(spec, tmp_path / "local")
    beam = build_mixture_beam(spec, tmp_path / "beam", pipeline_args=["--runner=DirectRunner"])
    assert [s["sha256"] for s in beam["shards"]] == [s["sha256"] for s in local["shards"]]
    assert (tmp_path / "beam/manifest.json").read_bytes() == (
        tmp_path / "local/manifest.json"
    ).read_bytes()
