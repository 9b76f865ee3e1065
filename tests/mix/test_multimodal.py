"""Multimodal shards: image blocks, the image store and sidecars, shares, consent, rejects, loader."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from tokenizers import Tokenizer

from training.loader import EvalSets, ImageStore, ShardLoader, image_slot_count
from training.mixture.builder import build_mixture
from training.mixture.spec import SpecError, parse_spec

from .conftest import OPTED_OUT_MARKER, WORDS

K = 4  # image_tokens
IMAGE_ID = 2  # <|image|> (special tokens take the first ids)
QA = pa.list_(
    pa.struct(
        [
            ("question", pa.string()),
            ("answer", pa.string()),
            ("kind", pa.string()),
            ("verified", pa.bool_()),
        ]
    )
)


def _image(path: Path, seed: int, fmt: str) -> str:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 255, size=(12 + seed % 5, 10 + seed % 7, 3), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path, format=fmt)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS["en"]) for _ in range(n))


@pytest.fixture(scope="module")
def mm_lake(tmp_path_factory, lake) -> Path:
    """Pairs (PNG and JPEG, one opted out, one undecodable), interleaved documents, charts,
    tables, captions, domain images and domain QA, with real image files."""
    root = tmp_path_factory.mktemp("mmlake")
    rng = random.Random(3)
    pairs_dir = root / "images" / "pairs" / "shard=0"
    pairs = []
    for i in range(24):
        fmt = "PNG" if i % 2 else "JPEG"
        rel = f"images/p{i}.{'png' if fmt == 'PNG' else 'jpg'}"
        sha = _image(pairs_dir / rel, i, fmt)
        allowed = i != 5
        caption = _words(rng, rng.randint(4, 30)) + ("" if allowed else f" {OPTED_OUT_MARKER}")
        pairs.append(
            {
                "id": f"p{i}",
                "doc_id": f"d{i % 6}",
                "caption": caption,
                "image_sha256": sha,
                "image_path": rel,
                "training_allowed": allowed,
                "drop_reason": None,
            }
        )
    pairs[3]["caption"] += " <|image|>"
    (pairs_dir / "images" / "broken.png").write_bytes(b"not an image at all")
    pairs.append(
        {
            "id": "p-broken",
            "doc_id": "d0",
            "caption": "a broken image",
            "image_sha256": None,
            "image_path": "images/broken.png",
            "training_allowed": True,
            "drop_reason": None,
        }
    )
    pq.write_table(pa.Table.from_pylist(pairs), pairs_dir / "pairs.parquet")

    inter = []
    for d in range(6):
        blocks = []
        for b in range(5):
            blocks.append({"kind": "text", "text": _words(rng, 25), "pair_id": None})
            blocks.append({"kind": "image", "text": None, "pair_id": f"p{(d * 3 + b) % 24}"})
        inter.append({"doc_id": f"d{d}", "blocks": blocks, "training_allowed": d != 4})
    inter[0]["blocks"].append({"kind": "image", "text": None, "pair_id": "p-unknown"})
    # a literal placeholder in crawled text is no image slot (the alignment test would see it)
    inter[1]["blocks"][0]["text"] += " <|image|> <|image|>"
    (root / "images" / "interleaved").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(inter), root / "images/interleaved/interleaved.parquet")

    charts_dir = root / "synth" / "charts"
    charts = []
    for i in range(8):
        rel = f"images/chart-{i}.png"
        if i != 7:  # chart 7's image file is missing: an unresolved image
            _image(charts_dir / rel, 100 + i, "PNG")
        qa = [
            {"question": f"What is {w}?", "answer": str(i), "kind": "lookup", "verified": True}
            for w in ("river", "garden")
        ] + [{"question": "Unchecked?", "answer": "WRONGANSWER", "kind": "x", "verified": False}]
        charts.append(
            {"id": f"c{i}", "image_path": rel, "qa": qa, "status": "ok" if i != 6 else "timeout"}
        )
    pq.write_table(
        pa.Table.from_pylist(
            charts,
            schema=pa.schema(
                [
                    ("id", pa.string()),
                    ("image_path", pa.string()),
                    ("qa", QA),
                    ("status", pa.string()),
                ]
            ),
        ),
        charts_dir / "charts.parquet",
    )

    tables_dir = root / "synth" / "tables"
    tables = []
    for i in range(4):
        rel = f"images/t{i}.png"
        _image(tables_dir / rel, 200 + i, "PNG")
        ok = i != 2
        tables.append(
            {
                "id": f"t{i}",
                "markdown": "| a | b |\n|---|---|\n| 1 | 2 |"
                + ("" if ok else f" {OPTED_OUT_MARKER}"),
                "image_path": rel,
                "qa": [{"question": "a?", "answer": "1", "kind": "lookup", "verified": True}],
                "training_allowed": ok,
                "status": "ok",
            }
        )
    pq.write_table(pa.Table.from_pylist(tables), tables_dir / "table_pairs.parquet")

    # as `synth captions` writes them: the pair's image, relative to the captions' directory (it
    # belongs to the pairs dataset: the image comes through the pair)
    caps = [
        {
            "pair_id": p,
            "level": "brief",
            "caption": _words(rng, 8),
            "status": "ok",
            "image_path": f"../../images/pairs/shard=0/images/{p}.{'png' if p[-1] in '135' else 'jpg'}",
        }
        for p in ("p1", "p2", "p3", "p5", "p-nowhere")
    ]
    caps[3]["caption"] += f" {OPTED_OUT_MARKER}"  # p5 is opted out: its caption must not enter
    (root / "synth" / "captions").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(caps), root / "synth/captions/captions.parquet")

    dom = [
        {"id": f"p{i}", "domain": "nature", "caption": _words(rng, 10), "selected": True}
        for i in (7, 8, 9, 10)
    ]
    for d in dom:
        d["training_allowed"] = True
    (root / "images" / "domain").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(dom), root / "images/domain/domain_images.parquet")
    dqa = [
        {
            "id": f"q{i}",
            "pair_id": f"p{i}",
            "domain": "nature",
            "image_path": None,
            "qa": [{"question": "Which?", "answer": "river", "kind": "open", "verified": False}],
            "training_allowed": True,
            "status": "ok",
        }
        for i in (11, 12)
    ]
    (root / "synth" / "domain_qa").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(
            dqa,
            schema=pa.schema(
                [
                    ("id", pa.string()),
                    ("pair_id", pa.string()),
                    ("domain", pa.string()),
                    ("image_path", pa.string()),
                    ("qa", QA),
                    ("training_allowed", pa.bool_()),
                    ("status", pa.string()),
                ]
            ),
        ),
        root / "synth/domain_qa/domain_qa.parquet",
    )
    return root


def mm_spec(lake: Path, mm: Path, **overrides) -> dict:
    pairs = str(mm / "images/pairs/*/pairs.parquet")
    spec = {
        "name": "mm-test",
        "seq_len": 32,
        "total_tokens": 6_000,
        "seed": 5,
        "tokenizer": str(lake / "tokenizer" / "tokenizer.json"),
        "shard_sequences": 40,
        "image_tokens": K,
        "buckets": {
            "text": {
                "weight": 0.6,
                "sources": [
                    {"path": str(lake / "filter/documents.parquet"), "where": "lang = 'en'"}
                ],
            },
            "interleaved": {
                "weight": 0.1,
                "modality": "interleaved",
                "sources": [
                    {
                        "path": str(mm / "images/interleaved/interleaved.parquet"),
                        "kind": "interleaved",
                        "pairs": pairs,
                    }
                ],
            },
            "image_caption": {
                "weight": 0.285,
                "modality": "image_caption",
                "sources": [
                    {"path": pairs, "kind": "pairs", "text_column": "caption"},
                    {
                        "path": str(mm / "synth/captions/captions.parquet"),
                        "kind": "captions",
                        "pairs": pairs,
                        "where": "status = 'ok'",
                    },
                    {
                        "path": str(mm / "synth/charts/charts.parquet"),
                        "kind": "charts",
                        "where": "status = 'ok'",
                    },
                    {"path": str(mm / "synth/tables/table_pairs.parquet"), "kind": "tables"},
                ],
            },
            "domain_image_text": {
                "weight": 0.015,
                "modality": "domain_image_text",
                "sources": [
                    {
                        "path": str(mm / "images/domain/domain_images.parquet"),
                        "kind": "domain_images",
                        "text_column": "caption",
                        "where": "selected",
                        "pairs": pairs,
                    },
                    {
                        "path": str(mm / "synth/domain_qa/domain_qa.parquet"),
                        "kind": "domain_qa",
                        "pairs": pairs,
                    },
                ],
            },
        },
        "eval": {"sequences_per_group": 2, "max_fraction": 0.2},
    }
    spec.update(overrides)
    return spec


@pytest.fixture(scope="module")
def built(tmp_path_factory, lake, mm_lake):
    import yaml

    d = tmp_path_factory.mktemp("mmbuild")
    path = d / "spec.yaml"
    path.write_text(yaml.safe_dump(mm_spec(lake, mm_lake), sort_keys=False))
    manifest = build_mixture(path, d / "mix")
    return d / "mix", manifest, path


def _arrays(mix: Path, manifest: dict):
    for entry in manifest["shards"] + manifest["eval"]:
        arr = np.load(mix / entry["path"])
        with np.load(mix / entry["images"]["path"]) as z:
            yield entry, arr, z["img_offsets"], z["img_index"], z["img_pos"]


def test_blocks_are_whole_inside_one_row_and_match_the_sidecars(built):
    mix, manifest, _ = built
    images = pq.read_table(mix / "images.parquet").to_pylist()
    assert manifest["image_tokens"] == K and manifest["images"]["count"] == len(images) > 20
    assert [r["sha256"] for r in images] == sorted(r["sha256"] for r in images)
    for r in images:  # stored under the hash of its bytes
        data = (mix / r["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == r["sha256"]
        assert r["path"].startswith(f"images/{r['sha256'][:2]}/{r['sha256']}.")
        assert Image.open(mix / r["path"]).size == (r["width"], r["height"])
    total = 0
    for entry, arr, off, idx, pos in _arrays(mix, manifest):
        assert len(off) == arr.shape[0] + 1 and off[-1] == len(idx) == entry["images"]["count"]
        for r in range(arr.shape[0]):
            hits = np.flatnonzero(arr[r] == IMAGE_ID)
            starts = pos[off[r] : off[r + 1]]
            want = np.concatenate([np.arange(s, s + K) for s in starts]) if len(starts) else hits
            assert hits.tolist() == want.tolist(), (entry["path"], r)
        assert image_slot_count(arr, IMAGE_ID, K) == len(idx)
        assert idx.min(initial=0) >= 0 and idx.max(initial=-1) < len(images)
        total += len(idx)
    assert total > 0
    placed = sum(b.get("images", 0) for b in manifest["buckets"].values())
    assert placed == manifest["images"]["shard_occurrences"]
    # blocks did straddle a row boundary somewhere in this stream: padding moved them
    assert manifest["padding_tokens"] > 0


def test_bucket_shares_with_image_tokens_are_within_tolerance(built):
    _, manifest, _ = built
    shares = manifest["modality_shares"]
    assert shares["tolerance"] == 0.01 and not manifest["shortfalls"]
    want = {"text": 0.6, "interleaved": 0.1, "image_caption": 0.285, "domain_image_text": 0.015}
    for name, target in want.items():
        b = shares["buckets"][name]
        assert b["target_share"] == target and b["ok"] and abs(b["share"] - target) <= 0.01
    for name in ("interleaved", "image_caption", "domain_image_text"):
        b = manifest["buckets"][name]
        assert b["images"] > 0 and b["image_tokens"] == K * b["images"]
    assert manifest["buckets"]["text"]["images"] == 0
    assert all(c["ok"] for c in manifest["checks"])
    from training.mixture.report import summary_lines

    lines = summary_lines(manifest)
    assert any(x.startswith(f"images: {K} tokens each;") and "interleaved 0.1" in x for x in lines)
    assert any(x.startswith("REJECTED image-source rows/images:") for x in lines)


def test_opted_out_rows_and_images_never_enter(built, mm_lake):
    mix, manifest, _ = built
    tok = Tokenizer.from_file(str(mix / "tokenizer.json"))
    text = "".join(tok.decode(row.tolist()) for _, arr, *_ in _arrays(mix, manifest) for row in arr)
    assert OPTED_OUT_MARKER not in text
    assert "WRONGANSWER" not in text and "Q: What is river? A: 0" in text  # verified QA only
    pairs = pq.read_table(mm_lake / "images/pairs/shard=0/pairs.parquet").to_pylist()
    opted = {p["image_sha256"] for p in pairs if not p["training_allowed"]}
    stored = set(pq.read_table(mix / "images.parquet").column("sha256").to_pylist())
    assert opted and not opted & stored
    rejects = pq.read_table(mix / "rejects.parquet").to_pylist()
    # the interleaved block of opted-out p5 and the caption of p5 are recorded, not used
    assert {("interleaved", "image_opted_out"), ("image_caption", "image_opted_out")} <= {
        (r["bucket"], r["reason"]) for r in rejects
    }


def test_unresolved_images_are_recorded_rejects_with_their_reason(built):
    mix, manifest, _ = built
    rejects = pq.read_table(mix / "rejects.parquet").to_pylist()
    got = {(r["id"], r["reason"]) for r in rejects}
    assert ("c7", "image_file_missing") in got  # chart whose PNG is absent
    assert ("p-broken", "image_undecodable") in got  # bytes that are no image
    assert ("p-nowhere", "pair_not_found") in got  # caption of an unknown pair
    assert ("d0", "pair_not_found") in got  # interleaved block naming an unknown pair
    # a caption's image is its pair's, in the pairs dataset: not "outside" the captions' directory
    assert not [r for r in rejects if r["reason"] == "image_path_outside"], rejects
    assert manifest["rejects"]["count"] == len(rejects)
    assert sum(manifest["rejects"]["by_reason"].values()) == len(rejects)
    charts = next(s for s in manifest["sources"] if s["kind"] == "charts")
    assert charts["rejected"] == {"image_file_missing": 1}


def test_loader_yields_tokens_and_image_shas_and_resumes_exactly(built):
    mix, manifest, _ = built
    loader = ShardLoader(mix, batch_size=3, seed=9, with_images=True)
    store = ImageStore(mix)
    it = iter(loader)
    first = [next(it) for _ in range(4)]
    state = loader.state_dict()
    rest = [next(it) for _ in range(3)]
    for k, (tokens, shas) in enumerate(first):
        assert tokens.dtype == np.int64 and tokens.shape == (3, manifest["seq_len"])
        assert image_slot_count(tokens, IMAGE_ID, K) == len(shas)
        assert shas == loader.batch_images(0, k)
    resumed = ShardLoader(mix, batch_size=3, seed=9, with_images=True)
    resumed.load_state_dict(json.loads(json.dumps(state)))
    again = iter(resumed)
    for tokens, shas in rest:
        t2, s2 = next(again)
        assert np.array_equal(tokens, t2) and shas == s2
    # the text-only iteration of the same loader is unchanged
    plain = ShardLoader(mix, batch_size=3, seed=9)
    assert np.array_equal(next(iter(plain)), first[0][0])
    shas = [s for _, ss in first + rest for s in ss]
    assert shas, "some batch holds an image"
    px = store.pixels(shas[:2], 8)
    assert tuple(px.shape) == (2, 3, 8, 8) and px.dtype.is_floating_point


def test_pixels_match_open_clip_val_transform(built):
    import torch
    from open_clip.transform import image_transform

    mix, _, _ = built
    store = ImageStore(mix)
    sha = next(iter(store.rows))
    want = image_transform(16, is_train=False)(Image.open(store.path(sha)).convert("RGB"))
    assert torch.allclose(store.pixels([sha], 16)[0], want)


def test_eval_sets_carry_image_sidecars(built):
    mix, manifest, _ = built
    evals = EvalSets(mix)
    with_images = 0
    for bucket, group in evals.keys():
        shas = evals.get_images(bucket, group)
        arr = evals.get(bucket, group)
        assert image_slot_count(arr, IMAGE_ID, K) == len(shas)
        with_images += bool(shas)
    assert with_images >= 1
    assert all(e["images"]["path"].startswith("eval/") for e in manifest["eval"])


def test_build_is_deterministic(built, tmp_path):
    mix, manifest, spec_path = built
    again = build_mixture(spec_path, tmp_path / "again")
    assert json.dumps(again, sort_keys=True) == json.dumps(manifest, sort_keys=True)
    for name in ("images.parquet", "rejects.parquet"):
        assert (mix / name).read_bytes() == (tmp_path / "again" / name).read_bytes()


def test_image_slot_count_refuses_a_cut_block():
    ok = np.array([[5, 2, 2, 2, 2, 7, 2, 2, 2, 2, 2, 2, 2, 2]])
    assert image_slot_count(ok, 2, 4) == 3
    with pytest.raises(ValueError, match="row 0: a run of 3 image tokens at column 1"):
        image_slot_count(np.array([[5, 2, 2, 2, 7]]), 2, 4)


def test_spec_rules_for_image_sources(lake, mm_lake):
    spec = mm_spec(lake, mm_lake, image_tokens=0)
    with pytest.raises(SpecError, match="image_tokens: buckets"):
        parse_spec(spec)
    spec = mm_spec(lake, mm_lake)
    spec["buckets"]["text"]["sources"][0]["kind"] = "charts"
    with pytest.raises(SpecError, match=r"buckets\.text.*kind: 'charts' carries images"):
        parse_spec(spec)
    spec = mm_spec(lake, mm_lake)
    del spec["buckets"]["interleaved"]["sources"][0]["pairs"]
    with pytest.raises(SpecError, match="give `pairs:`"):
        parse_spec(spec)
    spec = mm_spec(lake, mm_lake, image_tokens=32)
    with pytest.raises(SpecError, match="smaller than seq_len"):
        parse_spec(spec)


def test_opted_out_check_finds_an_image_row_that_leaked(lake, mm_lake, tmp_path):
    """The shards of a lake where p5 was allowed, checked after p5 opted out: its pairs row and
    its caption (whose consent is p5's) are found; the mixture built honestly passes."""
    import shutil

    import yaml

    from training.mixture.checks import mixture_no_opted_out_rows

    copy = tmp_path / "lake"
    shutil.copytree(mm_lake, copy)
    pairs_file = copy / "images/pairs/shard=0/pairs.parquet"
    honest = pq.read_table(pairs_file)
    rows = honest.to_pylist()
    for r in rows:
        r["training_allowed"] = True
    pq.write_table(pa.Table.from_pylist(rows, schema=honest.schema), pairs_file)
    spec = mm_spec(lake, copy)
    spec["buckets"]["image_caption"]["sources"] = spec["buckets"]["image_caption"]["sources"][:2]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    build_mixture(path, tmp_path / "leaky")
    pq.write_table(honest, pairs_file)  # p5 opts out after the build
    leaked = mixture_no_opted_out_rows(tmp_path / "leaky", copy)
    assert not leaked.passed and leaked.metadata["opted_out_found"] >= 1
    build_mixture(path, tmp_path / "honest")
    ok = mixture_no_opted_out_rows(tmp_path / "honest", copy)
    assert ok.passed and ok.metadata["opted_out_probed"] >= 2


def test_literal_special_tokens_in_text_are_text_in_every_mixture(lake, tmp_path):
    """A document's literal "<|image|>" (or "<|endoftext|>", "<|pad|>") is ordinary text: only
    the builder puts special ids (an image block, a boundary, padding) in the stream."""
    from dataclasses import replace

    from training.mixture.read import tokenize_unit_batches
    from training.mixture.sources import ReadUnit
    from training.tokenizer import load_tokenizer, special_token_ids

    f = tmp_path / "docs.parquet"
    texts = ["river <|image|> garden", "a <|endoftext|> b <|pad|> c", "<|image_start|><|image|>"]
    pq.write_table(pa.table({"text": texts, "training_allowed": [True] * 3}), f)
    tok = load_tokenizer(lake / "tokenizer" / "tokenizer.json")
    special = list(special_token_ids(tok).values())
    unit = ReadUnit("text", 0, str(f), None, "text", None, ())
    for u in (unit, replace(unit, image_tokens=K)):
        batch = next(tokenize_unit_batches(u, tok))
        assert not np.isin(batch.tokens, special).any()
        assert batch.lengths.sum() == len(batch.tokens)
        assert [
            tok.decode(t.tolist()) for t in np.split(batch.tokens, batch.lengths.cumsum())[:-1]
        ] == texts


def test_packer_moves_a_straddling_block_to_the_next_row_and_keeps_text_packing():
    from training.mixture.packing import (
        PackStats,
        TokenStore,
        pack_sequences,
        pack_sequences_images,
    )

    b, pad = 0, 1
    docs = [np.array([7, 8, 9, 2, 2, 2, 2, 10], np.uint32), np.array([11, 12, 13], np.uint32)]
    store = TokenStore(np.concatenate(docs), np.array([0, 8, 11]))
    img_offsets, img_ids = np.array([0, 1, 1]), np.array([42])
    stats = PackStats()
    (block, rows), *_ = list(
        pack_sequences_images(
            store,
            np.array([0, 1]),
            np.array([8, 3]),
            5,
            b,
            pad,
            8,
            stats,
            image_id=2,
            image_tokens=4,
            img_offsets=img_offsets,
            img_ids=img_ids,
        )
    )
    assert block.tolist() == [[7, 8, 9, pad, pad], [2, 2, 2, 2, 10], [b, 11, 12, 13, b]]
    assert rows.offsets.tolist() == [0, 0, 1, 1] and rows.ids.tolist() == [42]
    assert rows.pos.tolist() == [0] and stats.padding_tokens == 2 and stats.sequences == 3
    # without images the two packers write the same stream
    text = TokenStore(np.arange(100, 160, dtype=np.uint32), np.array([0, 17, 40, 60]))
    d, n = np.array([2, 0, 1, 0]), np.array([20, 17, 23, 5])
    a = np.concatenate(list(pack_sequences(text, d, n, 8, b, pad, 4, PackStats())))
    z = np.concatenate(
        [
            blk
            for blk, _ in pack_sequences_images(
                text,
                d,
                n,
                8,
                b,
                pad,
                4,
                PackStats(),
                image_id=2,
                image_tokens=4,
                img_offsets=np.zeros(4, np.int64),
                img_ids=np.zeros(0, np.int64),
            )
        ]
    )
    assert np.array_equal(a, z)


def test_beam_build_of_an_image_mixture_is_byte_identical(built, tmp_path):
    from pipelines.beam.mix import build_mixture_beam

    mix, manifest, spec_path = built
    build_mixture_beam(spec_path, tmp_path / "beam", pipeline_args=["--runner=DirectRunner"])
    assert (tmp_path / "beam/manifest.json").read_bytes() == (mix / "manifest.json").read_bytes()
    for name in ("images.parquet", "rejects.parquet"):
        assert (tmp_path / "beam" / name).read_bytes() == (mix / name).read_bytes()


def test_a_decompression_bomb_is_an_undecodable_image_not_the_end(tmp_path):
    """A PNG whose header claims 30000x30000 (Pillow's DecompressionBombError, which is not an
    OSError) and other decode failures are the row's `image_undecodable` reject."""
    import struct
    import zlib

    from training.mixture.images import _inspect

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    ihdr = struct.pack(">IIBBBBB", 30000, 30000, 8, 0, 0, 0, 0)
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 1000))
        + chunk(b"IEND", b"")
    )
    assert _inspect(str(bomb)) == "image_undecodable"
