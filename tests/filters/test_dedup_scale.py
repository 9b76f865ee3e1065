"""De-duplication that scales: linear candidate edges, and the Beam components step agreeing with
the in-process one (same clusters, representatives and matches), including components too wide
for the propagation rounds, big clusters, ties and unscored (NaN) documents."""

from __future__ import annotations

import math
import random

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that

from filters import dedup_shards
from filters.config import DedupConfig, FilterConfig
from filters.dedup import cluster, merge_label_pairs, star_pairs
from pipelines.beam.filter import DedupShards

WORDS = (
    "river harbour lantern meadow copper violet stone orchard signal winter basket candle "
    "ferry marble thunder garden pillow saddle quarry window"
).split()


def _text(rng: random.Random, n: int = 80) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n))


def _row(doc_id: str, text: str, url: str, q: float, lang: str = "en") -> dict:
    return {
        "id": doc_id,
        "url": url,
        "text": text,
        "lang": lang,
        "quality_score": q,
        "drop_reason": None,
    }


def _sorted(rows) -> list[dict]:
    return sorted(rows, key=lambda r: (r["cluster_id"], r["id"]))


def _check_beam(rows: list[dict], rounds: int, expected: list[dict], leftover: bool) -> None:
    """Run the pipeline's Beam dedup (DedupShards) over the rows' features, batched by shard as
    the Annotate step emits them; matchers run on the workers, so they assert there."""

    def same_clusters(actual):
        got = _sorted(actual)
        assert got == expected, [r for r in got if r not in expected][:5]

    def leftover_used(actual):
        assert (sum(d[1][1] for d in actual) > 0) == leftover, actual

    cfg, shards = FilterConfig(dedup=DedupConfig()), 4
    with beam.Pipeline(runner="DirectRunner") as p:
        results = (
            p
            | beam.Create(rows)
            | "Candidates" >> beam.Filter(lambda r: r["drop_reason"] is None)
            | "Features" >> beam.Map(lambda r: dedup_shards.doc_features(r, cfg.dedup))
            | "ByShard" >> beam.Map(lambda f: (dedup_shards.shard_of(f[0], shards), f))
            | "Batches" >> beam.GroupByKey()
            | "Shards" >> DedupShards(cfg, shards, rounds)
        )
        clusters = (
            results
            | "ClusterBatches" >> beam.Filter(lambda o: o[0] == "clusters")
            | "ClusterRows" >> beam.FlatMap(lambda o: o[2])
        )
        counts = (
            results
            | "Leftover" >> beam.Filter(lambda o: o[0] == "leftover")
            | "LeftoverDescriptor" >> beam.Map(lambda o: (None, ("leftover", o[2][0], {})))
        )
        assert_that(clusters, same_clusters, label="Clusters")
        assert_that(counts, leftover_used, label="Leftover")


def _chain(n: int) -> list[dict]:
    """A path of n documents: pairs alternately share a text and most of a text (five blocks of
    16 words, the next text shifted by one block: a near copy of its neighbours only); the best
    is at the end. Every fourth one has a second fetch of its URL, worse and of another text,
    which hangs off it by its URL and joins no content (ids c{n}, c{n+1}, ...)."""
    rng = random.Random(3)
    blocks = [_text(rng, 16) for _ in range(n // 2 + 4)]
    texts = [" ".join(blocks[j : j + 5]) for j in range(n // 2)]
    rows = []
    for i in range(n):
        text = texts[i // 2]  # 0=1, 2=3, ...: exact pairs; 1~2, 3~4, ...: near pairs
        rows.append(_row(f"c{i:03d}", text, f"http://chain.test/{i}", q=0.1 + 0.8 * i / n))
    for k, i in enumerate(range(0, n, 4)):
        url = f"https://www.chain.test/{i}#again"
        rows.append(_row(f"c{n + k:03d}", _text(rng), url, q=0.05))
    return rows


def test_star_pairs_are_linear_in_the_bucket():
    ids = [f"d{i:05d}" for i in range(5000)][::-1]
    pairs = star_pairs(ids + ids[:10])
    assert len(pairs) == 4999 and {a for a, _ in pairs} == {"d00000"}


def test_merge_label_pairs_joins_classes_to_the_smallest_label():
    a, b, c, d = (0.1, "a"), (0.2, "b"), (0.3, "c"), (0.0, "z")
    assert merge_label_pairs([(b, c), (c, a), (d, d)]) == {b: a, c: a}


@pytest.mark.timeout(120)
def test_beam_components_match_in_process_even_past_the_propagation_rounds():
    rows = _chain(24)
    expected = cluster(rows, DedupConfig())
    assert len(expected) == 30 and {r["cluster_id"] for r in expected} == {"c023"}
    matches = [r["match"] for r in expected]
    assert matches.count("url") == 6 and matches.count("near") == 22, matches
    # One round cannot carry c023's label 23 hops: the leftover merge must finish the job.
    _check_beam(rows, 1, expected, leftover=True)
    _check_beam(rows, 30, expected, leftover=False)


@pytest.mark.timeout(120)
def test_beam_matches_in_process_on_big_clusters_ties_nan_and_scripts():
    rng = random.Random(11)
    base = _text(rng, 120)
    rows = []
    # 300 near-copies of one page (one word changed each), in shuffled id order.
    for i in rng.sample(range(300), 300):
        words = base.split()
        words[rng.randrange(len(words))] = "edited"
        rows.append(_row(f"n{i:04d}", " ".join(words), f"http://copies{i % 7}.test/p{i}", 0.5))
    # Exact copies with tied and NaN scores; a representative must be the smallest id of the best.
    twin = _text(rng)
    rows += [
        _row(f"t{i}", twin.upper() if i % 2 else twin, f"http://t.test/{i}", q)
        for i, q in enumerate([0.7, 0.7, math.nan, 0.2])
    ]
    # Chinese near-duplicates (character shingles) and distinct singletons.
    zh = "这座古老的石桥横跨河流最窄的地方，水流湍急。工程师在洪水之后重建了中央拱门。" * 4
    rows += [
        _row("zh1", zh, "http://zh.test/1", 0.4, "zh"),
        _row("zh2", zh + "今天桥上只有行人。", "http://zh.test/2", 0.6, "zh"),
    ]
    rows += [_row(f"s{i}", _text(rng), f"http://s.test/{i}", 0.3) for i in range(20)]
    # Rows already dropped by a filter are not candidates.
    rows.append(dict(_row("x-dropped", twin, "http://t.test/0", 0.99), drop_reason="too_short"))
    expected = cluster([r for r in rows if r["drop_reason"] is None], DedupConfig())
    _check_beam(rows, 4, expected, leftover=False)
    by_id = {r["id"]: r for r in expected}
    assert by_id["t1"]["cluster_id"] == "t0" and by_id["t2"]["match"] == "exact"
    assert by_id["zh1"]["cluster_id"] == "zh2" and "x-dropped" not in by_id
    big = [r for r in expected if r["id"].startswith("n")]
    assert len(big) == 300 and len({r["cluster_id"] for r in big}) == 1


@pytest.mark.parametrize("shards", [1, 3, 7])
def test_sharded_steps_in_process_match_for_any_shards_and_rounds(shards):
    from filters import dedup_shards

    rows = _chain(24)
    expected = cluster(rows, DedupConfig())
    feats = [dedup_shards.doc_features(r, DedupConfig(), chunk=i % 3) for i, r in enumerate(rows)]
    for rounds, leftover in ((1, True), (30, False)):
        out = dedup_shards.run_in_memory(
            [(0, feats[:10]), (1, feats[10:])], DedupConfig(), shards, rounds
        )
        got = _sorted(r for kind, _, data in out if kind == "clusters" for r in data)
        assert got == expected, (shards, rounds)
        counts = [data[0] for kind, _, data in out if kind == "leftover"]
        assert (sum(counts) > 0) == leftover, counts
        # Duplicates come back addressed to their input chunk.
        dups = {d[0]: (chunk, d[1]) for kind, chunk, data in out if kind == "dups" for d in data}
        assert dups == {
            r["id"]: (int(r["id"][1:]) % 3, r["duplicate_of"])
            for r in expected
            if r["duplicate_of"]
        }
