"""Image de-duplication: exact and perceptual (banded pHash) groups, representatives, repeated
URLs; re-encoded and resized sample-web scenes match, different scenes do not; scale."""

from __future__ import annotations

import io
import itertools
import random
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from filters.images.config import DedupConfig
from filters.images.dedup import (
    band_masks,
    colour_confirm,
    dedup_rows,
    find_duplicates,
    hamming,
    near_pairs,
    phash_bytes,
    phash_hex,
    repeated_urls,
)
from sampleweb.images import Group, Scene, random_scene, render_png

D = DedupConfig().phash_max_distance

# Scenes that differ in layout (where things are), size and domain.
SCENES = [
    Scene((Group(2, "red", "circle", "left"),), 200, 150),
    Scene((Group(3, "blue", "square", "top"), Group(1, "green", "tree", "bottom")), 300, 200),
    Scene((Group(5, "purple", "car", "right"),), 240, 160),
    Scene((Group(1, "orange", "house", "center"),), 160, 160),
    Scene((Group(4, "black", "star", "bottom"), Group(2, "yellow", "cat", "top")), 300, 200),
    Scene((Group(3, "red", "apple", "center"),), 300, 200, "food"),
    Scene((Group(2, "green", "triangle", "left"),), 200, 150, "medical"),
    Scene((Group(1, "blue", "circle", "right"), Group(3, "red", "square", "left")), 240, 160),
]


def _jpeg(png: bytes, quality: int) -> bytes:
    buf = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def _resized(png: bytes, factor: float) -> bytes:
    im = Image.open(io.BytesIO(png)).convert("RGB")
    im = im.resize((round(im.width * factor), round(im.height * factor)), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def _copies(png: bytes) -> dict[str, bytes]:
    return {
        "jpeg90": _jpeg(png, 90),
        "jpeg80": _jpeg(png, 80),
        "half": _resized(png, 0.5),
        "x1.5": _resized(png, 1.5),
        "half+jpeg85": _jpeg(_resized(png, 0.5), 85),
    }


def test_phash_is_16_hex_digits_and_deterministic():
    png = render_png(SCENES[0])
    h = phash_bytes(png)
    assert len(h) == 16 and int(h, 16) >= 0 and h == h.lower()
    assert phash_bytes(png) == h
    assert hamming(h, h) == 0
    assert hamming("0" * 16, "f" * 16) == 64


def test_dead_zone_zero_is_imagehash_phash():
    import imagehash

    rng = random.Random(11)
    images = [Image.open(io.BytesIO(render_png(random_scene(rng)))) for _ in range(10)]
    noise = np.random.default_rng(0).integers(0, 256, size=(90, 120, 3), dtype=np.uint8)
    images.append(Image.fromarray(noise))
    for im in images:
        assert phash_hex(im, dead_zone=0) == str(imagehash.phash(im))


def test_dead_zone_keeps_symmetric_scenes_stable():
    # Two circles on the left: mirror-symmetric top to bottom, so half the DCT coefficients are 0
    # and plain pHash flips them under JPEG noise.
    png = render_png(SCENES[0])
    copy = _jpeg(png, 90)
    assert hamming(phash_bytes(png, 0), phash_bytes(copy, 0)) > D
    assert hamming(phash_bytes(png), phash_bytes(copy)) <= 2


def test_band_masks_cover_64_bits_in_d_plus_1_bands():
    for d in range(0, 12):
        bands = band_masks(d)
        assert len(bands) == d + 1
        assert sum(w for _, w in bands) == 64
        assert [s for s, _ in bands] == list(itertools.accumulate([0] + [w for _, w in bands[:-1]]))


def test_reencoded_and_resized_scenes_match_and_different_scenes_do_not():
    ids, shas, phashes, truth = [], [], [], []
    for k, scene in enumerate(SCENES):
        png = render_png(scene)
        ids.append(f"s{k}")
        shas.append(f"sha-s{k}")
        phashes.append(phash_bytes(png))
        truth.append(f"s{k}")
        for name, data in _copies(png).items():
            h = phash_bytes(data)
            assert hamming(h, phashes[ids.index(f"s{k}")]) <= D, f"scene {k} {name}"
            ids.append(f"s{k}-{name}")
            shas.append(f"sha-s{k}-{name}")  # different bytes, different sha256
            phashes.append(h)
            truth.append(f"s{k}")
    # Originals of different scenes are far apart.
    originals = [phashes[ids.index(f"s{k}")] for k in range(len(SCENES))]
    for a, b in itertools.combinations(range(len(SCENES)), 2):
        assert hamming(originals[a], originals[b]) > D, (a, b)
    # Highest clip score wins: give each scene's jpeg80 copy the best score.
    scores = [0.9 if i.endswith("jpeg80") else 0.3 for i in ids]
    dup_of = find_duplicates(ids, shas, phashes, scores, max_distance=D)
    for i, d in zip(ids, dup_of, strict=True):
        scene = i.split("-")[0]
        if i.endswith("jpeg80"):
            assert d is None, i
        else:
            assert d == f"{scene}-jpeg80", (i, d)


def test_sample_web_scene_rates():
    """Measured on random scenes of the sample-web grammar (flat graphics, where pHash is weaker
    than on photos): copies found and distinct scenes merged at the default distance."""
    rng = random.Random(7)
    scenes = list({s.spec(): s for s in (random_scene(rng) for _ in range(120))}.values())
    originals = [phash_bytes(render_png(s)) for s in scenes]
    found = [
        hamming(h, phash_bytes(data)) <= D
        for s, h in zip(scenes, originals, strict=True)
        for data in (_jpeg(render_png(s), 90), _resized(render_png(s), 0.5))
    ]
    false = [hamming(a, b) <= D for a, b in itertools.combinations(originals, 2)]
    assert np.mean(found) >= 0.95, np.mean(found)
    assert np.mean(false) <= 0.01, np.mean(false)


def test_exact_sha256_groups_without_phash_and_ties_go_to_smallest_id():
    ids = ["c", "a", "b", "d"]
    shas = ["x", "x", "x", "y"]
    assert find_duplicates(ids, shas, [None] * 4) == ["a", None, "a", None]
    # exact=False: equal sha256 alone does not group.
    assert find_duplicates(ids, shas, [None] * 4, exact=False) == [None] * 4


def test_transitive_groups_and_none_scores_rank_lowest():
    # a-b 2 bits apart, b-c 2 bits apart, a-c 4 bits apart: one group at d=2 (union-find).
    a, b, c = "0000000000000000", "0000000000000003", "000000000000000f"
    far = "ffffffffffffffff"
    ids = ["p", "q", "r", "s"]
    out = find_duplicates(ids, [None] * 4, [a, b, c, far], [None, 0.1, None, 0.9], max_distance=2)
    assert out == ["q", None, "q", None]
    assert find_duplicates(ids, [None] * 4, [a, b, c, far], max_distance=1) == [None] * 4
    assert find_duplicates(ids, [None] * 4, [a, b, c, far], perceptual=False) == [None] * 4


def test_row_lengths_and_hash_width_are_checked():
    with pytest.raises(ValueError, match="one value per row"):
        find_duplicates(["a"], [None, None], [None])
    with pytest.raises(ValueError, match="16 hex digits"):
        find_duplicates(["a", "b"], [None, None], ["abc", "0" * 16])


def test_near_pairs_matches_brute_force():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**63, size=300, dtype=np.uint64)
    flips = rng.integers(0, 64, size=(300, 3))
    near = base.copy()
    for k in range(300):
        for bit in flips[k, : rng.integers(0, 4)]:
            near[k] ^= np.uint64(1) << np.uint64(bit)
    hashes = np.concatenate([base, near])
    for d in (0, 1, 3, 5):
        got = {tuple(p) for p in near_pairs(hashes, d).tolist()}
        want = {
            (i, j)
            for i in range(len(hashes))
            for j in range(i + 1, len(hashes))
            if int(hashes[i] ^ hashes[j]).bit_count() <= d
        }
        assert got == want, d


def test_scale_50k_random_plus_1k_planted_near_duplicates():
    rng = np.random.default_rng(0)
    n, planted = 50_000, 1_000
    hashes = rng.integers(0, 2**63, size=n, dtype=np.uint64) * np.uint64(2)
    hashes |= rng.integers(0, 2, size=n, dtype=np.uint64)
    sources = rng.choice(n, size=planted, replace=False)
    copies = hashes[sources].copy()
    for k in range(planted):
        for bit in rng.choice(64, size=rng.integers(1, D + 1), replace=False):
            copies[k] ^= np.uint64(1) << np.uint64(bit)
    all_hashes = np.concatenate([hashes, copies])
    phashes = [f"{int(h):016x}" for h in all_hashes]
    ids = [f"r{i:06d}" for i in range(len(phashes))]
    start = time.perf_counter()
    dup_of = find_duplicates(ids, [None] * len(ids), phashes, max_distance=D)
    elapsed = time.perf_counter() - start
    assert elapsed < 10, f"{elapsed:.1f}s for 51k hashes"
    for k, src in enumerate(sources):
        assert dup_of[n + k] == ids[src], k  # the copy points at its source (smaller id)
    # Random 64-bit hashes are ~32 bits apart: nothing else is grouped.
    assert sum(d is not None for d in dup_of) == planted


def test_repeated_urls_count_distinct_documents():
    srcs = ["logo.png"] * 12 + ["ad.gif"] * 11 + ["photo.jpg"] * 3
    docs = [f"d{i}" for i in range(12)] + ["same"] * 11 + ["d1", "d2", "d3"]
    assert repeated_urls(srcs, docs, threshold=10) == {"logo.png"}
    assert repeated_urls(srcs, docs, threshold=2) == {"logo.png", "photo.jpg"}
    assert repeated_urls(srcs, docs, threshold=0) == set()


def test_dedup_rows_sets_reasons_and_leaves_dropped_rows_alone():
    h = phash_bytes(render_png(SCENES[1]))
    h_copy = phash_bytes(_jpeg(render_png(SCENES[1]), 85))
    other = phash_bytes(render_png(SCENES[3]))
    rows = [
        {"id": "p1", "doc_id": "d1", "src": "u1", "image_sha256": "s1", "phash": h},
        {"id": "p2", "doc_id": "d2", "src": "u2", "image_sha256": "s2", "phash": h_copy},
        {
            "id": "p0",
            "doc_id": "d3",
            "src": "u3",
            "image_sha256": "s1",
            "phash": h,
            "drop_reason": "bad_caption",
        },
        {
            "id": "p3",
            "doc_id": "d4",
            "src": "u4",
            "image_sha256": "s3",
            "phash": other,
            "clip_score": 0.2,
        },
    ] + [
        {
            "id": f"logo{i}",
            "doc_id": f"d{i}",
            "src": "logo.png",
            "image_sha256": "L",
            "phash": "0f0f0f0f0f0f0f0f",
        }
        for i in range(11)
    ]
    out = dedup_rows(rows, DedupConfig(repeated_url_threshold=10))
    by = {r["id"]: r for r in out}
    assert by["p1"]["drop_reason"] is None and by["p1"]["duplicate_of"] is None
    assert by["p2"]["drop_reason"] == "duplicate" and by["p2"]["duplicate_of"] == "p1"
    assert by["p0"]["drop_reason"] == "bad_caption" and by["p0"]["duplicate_of"] is None
    assert by["p3"]["drop_reason"] is None
    assert all(by[f"logo{i}"]["drop_reason"] == "repeated_url" for i in range(11))
    assert "duplicate_of" not in rows[0]  # inputs are not mutated


def test_colour_confirmation_splits_same_layout_graphics_and_keeps_copies(tmp_path):
    # Same layout, different colours and shapes: pHash (grey, layout only) cannot tell them apart.
    a = Scene((Group(4, "red", "square", "left"),), 300, 200)
    b = Scene((Group(4, "blue", "circle", "left"),), 300, 200)
    assert phash_bytes(render_png(a)) == phash_bytes(render_png(b))
    files = {
        "a.png": render_png(a),
        "a-copy.jpg": _jpeg(render_png(a), 80),
        "a-half.png": _resized(render_png(a), 0.5),
        "b.png": render_png(b),
        "b-copy.jpg": _jpeg(render_png(b), 90),
    }
    (tmp_path / "images").mkdir()
    rows = []
    for name, data in files.items():
        (tmp_path / "images" / name).write_bytes(data)
        rows.append(
            {
                "id": name.split(".")[0],
                "doc_id": name,
                "src": name,
                "image_sha256": name,
                "phash": phash_bytes(data),
                "image_path": f"images/{name}",
            }
        )
    by = {r["id"]: r["duplicate_of"] for r in dedup_rows(rows, image_root=tmp_path)}
    assert by == {"a": None, "a-copy": "a", "a-half": "a", "b": None, "b-copy": "b"}
    # Without the files (or with the check off), pHash alone merges the two scenes.
    alone = {r["id"]: r["duplicate_of"] for r in dedup_rows(rows)}
    assert alone["b"] == "a"
    off = DedupConfig(confirm_max_colour_diff=None)
    assert all(r["duplicate_of"] for r in dedup_rows(rows, off, image_root=tmp_path)[1:])


def test_colour_confirm_on_sample_web_scenes(tmp_path):
    """Random sample-web scenes with a JPEG and a half-size copy each: with the colour check the
    groups match the scenes (pHash alone merges a third of the distinct scenes)."""
    rng = random.Random(3)
    scenes = list({s.spec(): s for s in (random_scene(rng) for _ in range(150))}.values())
    paths, phashes, truth = [], [], []
    for k, scene in enumerate(scenes):
        png = render_png(scene)
        for tag, data in (("o.png", png), ("j.jpg", _jpeg(png, 80)), ("r.png", _resized(png, 0.5))):
            path = tmp_path / f"{k:04d}-{tag}"
            path.write_bytes(data)
            paths.append(str(path))
            phashes.append(phash_bytes(data))
            truth.append(k)
    ids = [Path(p).name for p in paths]
    confirm = colour_confirm(paths)
    dup_of = find_duplicates(ids, [None] * len(ids), phashes, max_distance=D, confirm=confirm)
    scene_of = dict(zip(ids, truth, strict=True))
    rep = [d or i for i, d in zip(ids, dup_of, strict=True)]
    wrong = sum(scene_of[r] != t for r, t in zip(rep, truth, strict=True))
    groups = len(set(rep))
    assert wrong <= 0.05 * len(ids), wrong
    assert abs(groups - len(scenes)) <= 0.03 * len(scenes), (groups, len(scenes))
    plain = find_duplicates(ids, [None] * len(ids), phashes, max_distance=D)
    assert len({d or i for i, d in zip(ids, plain, strict=True)}) < 0.8 * len(scenes)


def test_hashes_of_a_transparent_file_are_of_what_a_viewer_sees():
    """Black shapes on a transparent ground whose hidden colour is black: convert("RGB") drops
    the alpha and gives a black page; the hashes of the file are those of the page on white, as
    the fetch's own decode gives them."""
    from common.pairs import on_white
    from common.phash import colour_thumbnail

    alpha = np.zeros((120, 160), np.uint8)
    alpha[20:60, 20:80] = 255
    alpha[70:110, 90:150] = 255
    rgba = Image.fromarray(np.dstack([np.zeros((120, 160, 3), np.uint8), alpha]), "RGBA")
    buf = io.BytesIO()
    rgba.save(buf, "PNG")
    seen = on_white(rgba)
    assert phash_bytes(buf.getvalue()) == phash_hex(seen)
    assert phash_bytes(buf.getvalue()) != phash_hex(Image.new("RGB", (160, 120)))
    assert colour_thumbnail(rgba) == colour_thumbnail(seen) != colour_thumbnail(rgba.convert("RGB"))
