"""URL groups are resolved before content: a shared URL never joins two unrelated texts into one
near-duplicate component, in the in-memory `cluster`, the sharded steps and the Beam pipeline."""

from __future__ import annotations

import math
import random
from collections import defaultdict

import pytest

from filters import dedup_shards
from filters.config import DedupConfig
from filters.dedup import best_of, canonical_url, cluster, standing, text_hash, text_keys

X = (
    "The harbour town grew around a fishing fleet in the eighteenth century. Merchants built "
    "warehouses along the quay, and a lighthouse was added after several wrecks on the northern "
    "reef. The railway arrived in 1871 and brought summer visitors, who stayed in guest houses on "
    "the hill above the port. Today the fleet is small, but the fish market opens at dawn."
)
Y = (
    "Sourdough needs a lively starter, flour, water and salt. Mix them, rest the dough, fold it "
    "several times over a few hours, shape a loaf and let it rise slowly overnight in a cool "
    "place before baking it hot in a covered pot so the crust stays thin and crisp while the "
    "crumb opens up nicely and the kitchen smells of bread for the rest of the afternoon."
)


def _doc(doc_id: str, url: str | None, text: str, q: float | None = None) -> dict:
    return {
        "id": doc_id,
        "url": url,
        "text": text,
        "lang": "en",
        "quality_score": q,
        "drop_reason": None,
    }


def _sharded(docs: list[dict], shards: int, rounds: int) -> list[dict]:
    cfg = DedupConfig()
    feats = [dedup_shards.doc_features(d, cfg, chunk=i % 2) for i, d in enumerate(docs)]
    out = dedup_shards.run_in_memory([(0, feats[::2]), (1, feats[1::2])], cfg, shards, rounds)
    rows = [r for kind, _, data in out if kind == "clusters" for r in data]
    return sorted(rows, key=lambda r: (r["cluster_id"], r["id"]))


def _both(docs: list[dict]) -> list[tuple]:
    """(id, cluster_id, duplicate_of, match) from `cluster`, after checking that the sharded
    steps give the same rows for several shard and round counts."""
    rows = cluster(docs, DedupConfig())
    for shards, rounds in ((1, 4), (3, 1), (5, 30)):
        assert _sharded(docs, shards, rounds) == rows, (shards, rounds)
    return [(r["id"], r["cluster_id"], r["duplicate_of"], r["match"]) for r in rows]


ABC = [
    _doc("a", "http://127.0.0.1/page", X, 0.5),
    _doc("b", "https://127.0.0.1/page", Y),
    _doc("c", "http://127.0.0.1/other", Y + " Enjoy."),
]


def test_a_url_duplicate_does_not_make_its_near_copy_a_near_duplicate_of_an_unrelated_text():
    """b is the same page as a (http and https) and is dropped for it (a has a score, b none);
    c is b's text plus one word and shares no text with a, so c stays: Y survives in c."""
    assert _both(ABC) == [("a", "a", None, None), ("b", "a", "a", "url")]


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        # b wins its URL group, then its content cluster: as before.
        (
            {"a": 0.1, "b": 0.9, "c": 0.5},
            [("a", "b", "b", "url"), ("b", "b", None, None), ("c", "b", "b", "near")],
        ),
        # b wins its URL group and loses to its near copy c: a is still only a URL duplicate
        # (of b's page); it is not a near duplicate of c, whose text it does not share.
        (
            {"a": 0.1, "b": 0.5, "c": 0.9},
            [("a", "c", "c", "url"), ("b", "c", "c", "near"), ("c", "c", None, None)],
        ),
        # a wins the URL group: b is dropped for it and c, sharing no text with a, stays.
        ({"a": 0.9, "b": 0.5, "c": 0.1}, [("a", "a", None, None), ("b", "a", "a", "url")]),
    ],
)
def test_the_url_group_is_resolved_before_content(scores, expected):
    docs = [dict(d, quality_score=scores[d["id"]]) for d in ABC]
    assert _both(docs) == expected


def test_a_dropped_url_duplicate_does_not_hide_near_copies_among_the_survivors():
    """b (the smallest id, so the hub of every key group it is in) loses its URL group to a;
    c and d, two near copies of b's text, still find each other and one of them is dropped."""
    docs = [
        _doc("a", "http://127.0.0.1/p", X, 0.9),
        _doc("b", "http://127.0.0.1/p", Y, 0.5),
        _doc("c", "http://127.0.0.1/q", Y + " Enjoy.", 0.4),
        _doc("d", "http://127.0.0.1/r", Y + " Bake well.", 0.3),
    ]
    assert _both(docs) == [
        ("a", "a", None, None),
        ("b", "a", "a", "url"),
        ("c", "c", None, None),
        ("d", "c", "c", "near"),
    ]


def test_an_identical_fetch_of_the_same_url_stays_an_exact_duplicate():
    """The same page fetched twice with the same text is labelled exact, as before; a blank URL
    is no URL and groups nothing."""
    docs = [
        _doc("a", "http://127.0.0.1/p", X, 0.2),
        _doc("b", "https://127.0.0.1/p/", X.upper(), 0.8),
        _doc("c", "  ", Y, 0.5),
        _doc("d", " ", X[::-1], 0.5),
    ]
    assert _both(docs) == [("a", "b", "b", "exact"), ("b", "b", None, None)]


def test_the_beam_pipeline_resolves_url_groups_first():
    from tests.filters.test_dedup_scale import _check_beam

    expected = cluster(ABC, DedupConfig())
    assert [r["id"] for r in expected] == ["a", "b"]
    _check_beam(ABC, 4, expected, leftover=False)


def _random_corpus(seed: int, n: int = 60) -> list[dict]:
    """Texts with near copies, exact copies and unrelated texts, spread over few URLs so URL
    groups and content clusters cross each other; tied, missing and NaN scores."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    bases = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(8)]
    docs = []
    for i in range(n):
        text = rng.choice(bases).split()
        for _ in range(rng.choice([0, 0, 1, 3, 30])):
            text[rng.randrange(len(text))] = rng.choice(words)
        url = rng.choice(
            [None, "", f"http://127.0.0.1/{i}", *(f"http://127.0.0.1/u{k}" for k in range(6))]
        )
        if url and rng.random() < 0.3:
            url = url.replace("http://", "https://")
        q = rng.choice([None, math.nan, 0.5, 0.5, round(rng.random(), 2)])
        docs.append(_doc(f"d{i:03d}", url, " ".join(text), q))
    return docs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kept_rows_are_one_per_url_group_and_per_content_cluster(seed):
    """On crossing URL groups and content clusters: the executors agree; every URL group keeps
    at most one row; a row that lost its URL group is a `url` (or, same text as the kept row,
    `exact`) duplicate in its group best's cluster; a `near` drop won its URL group; no two kept
    rows share a text; every `duplicate_of` is its cluster's kept representative."""
    docs = _random_corpus(seed)
    _both(docs)
    rows = cluster(docs, DedupConfig())
    by_id = {d["id"]: d for d in docs}
    dropped = {r["id"]: r for r in rows if r["duplicate_of"] is not None}
    kept = [d for d in docs if d["id"] not in dropped]
    groups = defaultdict(list)
    for d in docs:
        if canonical_url(d["url"] or ""):
            groups[canonical_url(d["url"])].append(d["id"])
    assert dropped and any(len(g) > 1 for g in groups.values())
    best = {}
    for u, ids in groups.items():
        assert sum(i not in dropped for i in ids) <= 1, u
        sizes = {i: text_keys(by_id[i]["text"], "en", DedupConfig())[2] for i in ids}
        best[u] = best_of({i: standing(by_id[i]["quality_score"], u, sizes[i]) for i in ids})
    for r in dropped.values():
        assert r["duplicate_of"] == r["cluster_id"] and r["cluster_id"] not in dropped
        u = canonical_url(by_id[r["id"]]["url"] or "")
        if u and best[u] != r["id"]:  # dropped for its URL group's best, whose cluster it joins
            assert r["match"] in ("url", "exact"), r
            assert by_id[best[u]]["id"] in {
                x["id"] for x in rows if x["cluster_id"] == r["cluster_id"]
            }
        else:
            assert r["match"] in ("exact", "near"), r
        if r["match"] == "exact":
            assert text_hash(by_id[r["id"]]["text"]) == text_hash(by_id[r["cluster_id"]]["text"])
    hashes = [text_hash(d["text"]) for d in kept]
    assert len(hashes) == len(set(hashes))
