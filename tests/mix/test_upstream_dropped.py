"""Image sources read the rows their producing stage kept: a pair with a `drop_reason` (as
settled: a duplicate whose kept copy is opted out takes its place) or a synthetic row whose
`status` is not 'ok' is an `upstream_dropped` reject, whatever `where` says, unless the source
says `dropped: include`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image
from tokenizers import Tokenizer

from training.mixture.builder import build_mixture
from training.mixture.spec import SpecError, parse_spec

K = 4  # image_tokens
DUPLICATE = "ZQXDUPLICATEMARKER"  # a duplicate of an allowed kept pair
LOW_CLIP = "ZQXLOWCLIPMARKER"  # a pair dropped for its clip score
LOW_CAPTION = "ZQXLOWCAPTIONMARKER"  # a synthetic caption with status low_clip_score
PROMOTED = "ZQXPROMOTEDMARKER"  # a duplicate whose kept copy is opted out: kept when settled
DROPPED = (DUPLICATE, LOW_CLIP, LOW_CAPTION)


def _image(path: Path, seed: int) -> str:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 255, size=(12, 10 + seed, 3), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path, format="PNG")
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def stage_lake(tmp_path_factory) -> Path:
    """One `images build` shard and a `synth captions` output, each with rows their stage dropped."""
    root = tmp_path_factory.mktemp("dropped")
    shard = root / "images" / "pairs" / "shard=0"
    sha = {name: _image(shard / f"images/{name}.png", i) for i, name in enumerate("012AC")}

    def pair(pid: str, img: str, caption: str, **kw) -> dict:
        row = {
            "id": pid,
            "doc_id": f"d-{pid}",
            "caption": caption,
            "image_sha256": sha[img],
            "image_path": f"images/{img}.png",
            "training_allowed": True,
            "clip_score": 0.5,
            "duplicate_of": None,
            "drop_reason": None,
        }
        return row | kw

    pairs = [
        pair("p0", "0", "the river light garden"),
        pair("p1", "1", "the quiet house music"),
        pair("p2", "2", "a tree by the river"),
        pair("pA", "A", "an opted out kept pair", training_allowed=False),
        pair("pA2", "A", f"the data {PROMOTED}", clip_score=0.6, duplicate_of="pA",
             drop_reason="duplicate"),
        pair("pB2", "0", f"the model {DUPLICATE}", clip_score=0.6, duplicate_of="p0",
             drop_reason="duplicate"),
        pair("pC", "C", f"the token {LOW_CLIP}", clip_score=0.1, drop_reason="low_clip_score"),
    ]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(pairs), shard / "pairs.parquet")
    caps = [
        {"pair_id": "p1", "level": "brief", "caption": "quiet garden light", "status": "ok"},
        {"pair_id": "p2", "level": "brief", "caption": "the river tree", "status": "ok"},
        {"pair_id": "p0", "level": "brief", "caption": f"data {LOW_CAPTION}",
         "status": "low_clip_score"},
    ]  # fmt: skip
    (root / "synth" / "captions").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(caps), root / "synth/captions/captions.parquet")
    return root


def _spec(lake: Path, stage: Path, **source_keys) -> dict:
    pairs = str(stage / "images/pairs/*/pairs.parquet")
    return {
        "name": "dropped",
        "seq_len": 32,
        "total_tokens": 3_000,
        "seed": 1,
        "tokenizer": str(lake / "tokenizer" / "tokenizer.json"),
        "image_tokens": K,
        "buckets": {
            "image_caption": {
                "weight": 1.0,
                "modality": "image_caption",
                "sources": [
                    {"path": pairs, "kind": "pairs", "text_column": "caption"}
                    | source_keys.get("pairs", {}),
                    {
                        "path": str(stage / "synth/captions/captions.parquet"),
                        "kind": "captions",
                        "pairs": pairs,
                    }
                    | source_keys.get("captions", {}),
                ],
            }
        },
        "eval": {"sequences_per_group": 0},
    }


def _build(tmp_path: Path, spec: dict, name: str) -> tuple[Path, dict]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return tmp_path / name, build_mixture(path, tmp_path / name)


def _text(mix: Path, manifest: dict) -> str:
    tok = Tokenizer.from_file(str(mix / "tokenizer.json"))
    arrays = [np.load(mix / e["path"]) for e in manifest["shards"] + manifest["eval"]]
    return "".join(tok.decode(row.tolist()) for arr in arrays for row in arr)


def test_dropped_rows_stay_out_by_default_and_are_counted(tmp_path, lake, stage_lake):
    mix, manifest = _build(tmp_path, _spec(lake, stage_lake), "default")
    text = _text(mix, manifest)
    assert not [m for m in DROPPED if m in text]
    assert PROMOTED in text  # settled: the opted-out kept pair's allowed duplicate takes its place
    pairs, captions = manifest["sources"]
    # rows offered (consented, matching `where`) = documents + rejects
    assert pairs["rejected"] == {"upstream_dropped": 2} and pairs["documents"] == 4
    assert captions["rejected"] == {"upstream_dropped": 1} and captions["documents"] == 2
    rejects = pq.read_table(mix / "rejects.parquet").to_pylist()
    got = {(r["source"], r["id"], r["reason"], r["detail"]) for r in rejects}
    assert got == {
        (0, "pB2", "upstream_dropped", "drop_reason = duplicate"),
        (0, "pC", "upstream_dropped", "drop_reason = low_clip_score"),
        (1, "p0", "upstream_dropped", "status = low_clip_score"),
    }
    assert manifest["rejects"]["by_reason"] == {"upstream_dropped": 3}
    assert "dropped" not in manifest["spec"]["buckets"]["image_caption"]["sources"][0]


def test_dropped_include_takes_them(tmp_path, lake, stage_lake):
    include = {"dropped": "include"}
    spec = _spec(lake, stage_lake, pairs=include, captions=include)
    mix, manifest = _build(tmp_path, spec, "include")
    text = _text(mix, manifest)
    assert all(m in text for m in (*DROPPED, PROMOTED))
    pairs, captions = manifest["sources"]
    assert pairs["rejected"] == {} and pairs["documents"] == 6
    assert captions["rejected"] == {} and captions["documents"] == 3
    assert manifest["spec"]["buckets"]["image_caption"]["sources"][0]["dropped"] == "include"


def test_an_explicit_where_is_redundant_and_counts_nothing_twice(tmp_path, lake, stage_lake):
    """The shipped specs' `where: drop_reason IS NULL` / `status = 'ok'` give the same shards;
    rows the user's own predicate leaves out are the user's selection, not rejects."""
    plain_dir, plain = _build(tmp_path, _spec(lake, stage_lake), "plain")
    spec = _spec(
        lake,
        stage_lake,
        pairs={"where": "drop_reason IS NULL"},
        captions={"where": "status = 'ok'"},
    )
    mix, manifest = _build(tmp_path, spec, "explicit")
    for a, b in zip(plain["shards"], manifest["shards"], strict=True):
        assert np.array_equal(np.load(plain_dir / a["path"]), np.load(mix / b["path"]))
    assert [s["rejected"] for s in manifest["sources"]] == [{}, {}]
    assert [s["documents"] for s in manifest["sources"]] == [4, 2]


def test_dropped_is_an_image_source_key_and_keeps_old_spec_hashes():
    base = {
        "name": "x",
        "seq_len": 64,
        "total_tokens": 100,
        "tokenizer": "t.json",
        "buckets": {"web": {"weight": 1.0, "sources": [{"path": "d.parquet"}]}},
    }
    text = {"web": {"weight": 1.0, "sources": [{"path": "d.parquet", "dropped": "include"}]}}
    with pytest.raises(SpecError, match=r"buckets\.web\.sources\.0: dropped: only image kinds"):
        parse_spec(base | {"buckets": text})
    image = {
        "weight": 1.0,
        "modality": "image_caption",
        "sources": [{"path": "p.parquet", "kind": "pairs", "dropped": "exclude"}],
    }
    a = parse_spec(base | {"image_tokens": 4, "buckets": {"img": image}})
    image["sources"][0].pop("dropped")
    b = parse_spec(base | {"image_tokens": 4, "buckets": {"img": image}})
    assert (
        a.sha256() == b.sha256() and "dropped" not in a.model_dump()["buckets"]["img"]["sources"][0]
    )


def _read(unit, tokenizer) -> tuple[list[int], list[dict]]:
    from training.mixture.images import read_image_unit_batches

    batches = list(read_image_unit_batches(unit, tokenizer, tokenizer.token_to_id("<|image|>")))
    return [r for b in batches for r in b.rows.tolist()], [r for b in batches for r in b.rejects]


def test_a_cross_shard_duplicate_is_dropped_as_settled_without_a_where(lake, tmp_path):
    """The settled drop_reason is the one applied: a kept row of shard 1 whose image shard 0
    keeps too is a duplicate, though its file says kept."""
    from tests.images.pairsets import pair, stored_image, write_pairs
    from training.mixture.sources import ReadUnit
    from training.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(lake / "tokenizer" / "tokenizer.json")
    s0, s1 = tmp_path / "pairs" / "shard=0", tmp_path / "pairs" / "shard=1"
    a0, a1 = stored_image(s0, (200, 100, 0)), stored_image(s1, (200, 100, 0))
    files = [
        write_pairs(s0, [pair("d0-0", "http://h/a.png", a0, caption="the river")], "0/2"),
        write_pairs(s1, [pair("d2-0", "http://g/a.png", a1, caption="the house")], "1/2"),
    ]
    got = {}
    for f in files:
        unit = ReadUnit("b", 0, str(f), None, "caption", None, (), kind="pairs", image_tokens=4)
        got[f.parent.name] = _read(unit, tokenizer)
    assert got["shard=0"] == ([0], [])
    rows, rejects = got["shard=1"]
    assert rows == [] and [(r["id"], r["reason"], r["detail"]) for r in rejects] == [
        ("d2-0", "upstream_dropped", "drop_reason = duplicate")
    ]


def test_synthetic_and_domain_rows_their_stage_dropped_stay_out(lake, tmp_path):
    """A table marked missing_glyphs keeps its Markdown, a domain candidate not selected keeps
    its caption: neither enters without a `where`; `dropped: include` takes them."""
    from dataclasses import replace

    from training.mixture.sources import ReadUnit
    from training.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(lake / "tokenizer" / "tokenizer.json")
    _image(tmp_path / "tables/images/t0.png", 1)
    _image(tmp_path / "tables/images/t1.png", 2)
    qa = [{"question": "a?", "answer": "1", "kind": "lookup", "verified": True}]
    tables = [
        {"id": "t0", "markdown": "| a |", "image_path": "images/t0.png", "qa": qa,
         "training_allowed": True, "status": "ok"},
        {"id": "t1", "markdown": "| b |", "image_path": "images/t1.png", "qa": qa,
         "training_allowed": True, "status": "missing_glyphs: 'Ω' in DejaVu Sans"},
    ]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(tables), tmp_path / "tables/table_pairs.parquet")
    unit = ReadUnit(
        "b", 0, str(tmp_path / "tables/table_pairs.parquet"), None, "text", None, (),
        kind="tables", image_tokens=4,
    )  # fmt: skip
    rows, rejects = _read(unit, tokenizer)
    assert rows == [0]
    assert [(r["id"], r["detail"]) for r in rejects] == [
        ("t1", "status = missing_glyphs: 'Ω' in DejaVu Sans")
    ]
    assert _read(replace(unit, dropped="include"), tokenizer) == ([0, 1], [])

    shard = tmp_path / "pairs" / "shard=0"
    sha = {p: _image(shard / f"images/{p}.png", i) for i, p in enumerate(("p0", "p1"))}
    pairs = [
        {"id": p, "doc_id": p, "caption": "x", "image_sha256": sha[p],
         "image_path": f"images/{p}.png", "training_allowed": True, "drop_reason": None}
        for p in ("p0", "p1")
    ]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(pairs), shard / "pairs.parquet")
    dom = [
        {"id": "p0", "domain": "nature", "caption": "river", "selected": True,
         "training_allowed": True},
        {"id": "p1", "domain": "nature", "caption": "garden", "selected": False,
         "training_allowed": True},
    ]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(dom), tmp_path / "domain_images.parquet")
    unit = ReadUnit(
        "b", 0, str(tmp_path / "domain_images.parquet"), None, "caption", None, (),
        kind="domain_images", pairs=(str(shard / "pairs.parquet"),), image_tokens=4,
    )  # fmt: skip
    rows, rejects = _read(unit, tokenizer)
    assert rows == [0] and [(r["id"], r["detail"]) for r in rejects] == [("p1", "selected = false")]
    assert _read(replace(unit, dropped="include"), tokenizer) == ([0, 1], [])
