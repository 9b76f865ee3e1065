"""De-duplication: canonical URLs, exact and MinHash near-duplicates, deterministic representatives."""

import itertools
import random
from collections import defaultdict

import numpy as np

from filters.config import DedupConfig, HeuristicsConfig
from filters.dedup import canonical_url, cluster, normalise, signature, text_hash
from filters.heuristics import check

BASE = (
    "The harbour town grew around a fishing fleet in the eighteenth century. Merchants built warehouses "
    "along the quay, and a lighthouse was added after several wrecks on the northern reef. The railway "
    "arrived in 1871 and brought summer visitors, who stayed in guest houses on the hill above the port. "
    "Today the fleet is small, but the fish market still opens at dawn every weekday morning."
)
OTHER = (
    "Sourdough needs a lively starter, flour, water and salt. Mix them, rest the dough, fold it several "
    "times over a few hours, shape a loaf and let it rise slowly overnight in a cool place before baking "
    "it hot in a covered pot so the crust stays thin and crisp while the crumb opens up nicely."
)

THIRD = (
    "The mountain hut sits above the tree line on the southern slope and is open from June to "
    "September. Walkers reach it in four hours from the valley, cross two streams on wooden "
    "bridges and find soup, bunks and blankets waiting; the warden asks guests to book ahead."
)


def test_canonical_url_ignores_tracking_case_fragment_and_index():
    a = canonical_url("HTTPS://www.Example.com:443/a/index.html?utm_source=x&b=2&a=1#top")
    assert a == canonical_url("http://example.com/a/?a=1&b=2")
    assert a != canonical_url("http://example.com/a/?a=2&b=2")


def test_canonical_url_keeps_parameters_without_a_value_and_the_selecting_ones():
    """`shop?product-a` and `shop?product-b` are two products, `item?id=` is not `item`, and
    `sid` (a PHP-Nuke or Slashdot story) and `ref` (a GitLab branch) select content."""
    keys = [
        "http://127.0.0.1/shop?product-a",
        "http://127.0.0.1/shop?product-b",
        "http://127.0.0.1/shop",
        "http://127.0.0.1/item?id=",
        "http://127.0.0.1/item",
        "http://127.0.0.1/modules.php?name=News&file=article&sid=101",
        "http://127.0.0.1/modules.php?name=News&file=article&sid=102",
        "http://127.0.0.1/repo/blob/README?ref=main",
        "http://127.0.0.1/repo/blob/README?ref=v1",
        "http://127.0.0.1/viewtopic.php?1234",
        "http://127.0.0.1/viewtopic.php?5678",
    ]
    assert len({canonical_url(u) for u in keys}) == len(keys)
    assert canonical_url("http://127.0.0.1/shop?b&utm_source=x&a=1") == (
        "http://127.0.0.1/shop?a=1&b"
    )
    assert canonical_url("") == ""


def test_pages_under_distinct_urls_are_not_url_duplicates():
    """Two different pages of one shop (or one story site) are both kept, and a near duplicate
    with no URL is a near duplicate, not a URL duplicate of another page without one."""
    docs = [
        {"id": "a", "url": "http://127.0.0.1/shop?product-a", "text": BASE, "lang": "en"},
        {"id": "b", "url": "http://127.0.0.1/shop?product-b", "text": OTHER, "lang": "en"},
        {"id": "c", "url": "http://127.0.0.1/x.php?sid=5", "text": BASE[::-1], "lang": "en"},
        {"id": "d", "url": "http://127.0.0.1/x.php?sid=6", "text": OTHER[::-1], "lang": "en"},
        {"id": "e", "url": None, "text": THIRD, "lang": "en"},
        {"id": "f", "url": None, "text": THIRD.replace("slope", "hillside"), "lang": "en"},
    ]
    for d in docs:
        d["quality_score"] = 0.5
    rows = cluster(docs, DedupConfig())
    assert [(r["id"], r["duplicate_of"], r["match"]) for r in rows if r["duplicate_of"]] == [
        ("f", "e", "near")
    ]


def test_normalised_hash_ignores_case_punctuation_and_spacing():
    assert text_hash("Hello,  World!\n") == text_hash("hello world")
    assert normalise("Ünïcode\u00a0text") == "ünïcode text"


def test_soft_hyphens_and_zero_width_characters_leave_words_whole():
    """Hyphenation hints (&shy;), zero-width spaces and joiners and direction marks render as
    nothing: a page with them is an exact duplicate of the page without, and its words are the
    same words to the MinHash (German ß and SS fold together too)."""
    text = "Die Silbentrennung der Straße macht lange Wörter auf schmalen Bildschirmen lesbar. " * 5
    marked = text.replace("Silben", "Sil\u00adben\u00ad").replace("Wörter", "Wör\u200bter")
    marked = marked.replace("lesbar", "les\u200dbar\u200e").replace("Straße", "STRASSE")
    assert normalise("Silben\u00adtren\u00adnung") == "silbentrennung"
    assert text_hash(marked) == text_hash(text)
    cfg = DedupConfig()
    assert np.array_equal(signature(marked, "de", cfg), signature(text, "de", cfg))
    docs = [
        {"id": "shy", "url": "http://127.0.0.1/a", "text": marked, "lang": "de"},
        {"id": "plain", "url": "http://127.0.0.1/b", "text": text, "lang": "de"},
    ]
    rows = cluster([{**d, "quality_score": None} for d in docs], cfg)
    assert [(r["id"], r["match"]) for r in rows] == [("plain", None), ("shy", "exact")]


def test_near_duplicates_cluster_and_distinct_texts_do_not():
    cfg = DedupConfig()
    docs = [
        {"id": "b", "url": "http://x/1", "text": BASE, "lang": "en", "quality_score": 0.4},
        {
            "id": "a",
            "url": "http://y/2",
            "text": BASE.replace("small", "tiny") + " Visit soon.",
            "lang": "en",
            "quality_score": 0.9,
        },
        {"id": "c", "url": "http://z/3", "text": OTHER, "lang": "en", "quality_score": 0.5},
        {"id": "d", "url": "http://z/4", "text": BASE.upper(), "lang": "en", "quality_score": 0.1},
    ]
    rows = cluster(docs, cfg)
    members = {r["id"]: r for r in rows}
    assert set(members) == {"a", "b", "d"}
    # Highest quality_score is the representative even though "b"/"d" are exact twins.
    assert {r["cluster_id"] for r in rows} == {"a"}
    assert members["a"]["duplicate_of"] is None
    assert members["b"]["match"] == "near" and members["d"]["match"] == "near"


def test_representative_tie_breaks_on_smallest_id_and_nan_ranks_last():
    cfg = DedupConfig()
    docs = [
        {"id": "z", "url": "", "text": BASE, "lang": "en", "quality_score": 0.5},
        {"id": "m", "url": "", "text": BASE, "lang": "en", "quality_score": 0.5},
        {"id": "a", "url": "", "text": BASE, "lang": "en", "quality_score": float("nan")},
    ]
    rows = cluster(docs, cfg)
    assert {r["cluster_id"] for r in rows} == {"m"}
    assert {r["id"]: r["match"] for r in rows}["z"] == "exact"


def test_cjk_uses_character_shingles():
    cfg = DedupConfig()
    zh = (
        "这座古老的石桥横跨河流最窄的地方，水流湍急。工程师在洪水之后重建了中央拱门，使用了附近采石场的花岗岩。"
        * 3
    )
    # Spaced-language shingling sees one "word" per sentence and cannot tell these apart.
    sig_a, sig_b = signature(zh, "zh", cfg), signature(zh + "今天桥上只有行人。", "zh", cfg)
    assert (sig_a == sig_b).mean() > 0.7


def test_sample_web_dup_clusters_precision_and_recall(labelled_docs):
    cfg = DedupConfig()
    hcfg = HeuristicsConfig()
    # As in the pipeline, de-duplication sees the documents the heuristics kept.
    docs = [
        dict(d, quality_score=0.5)
        for d in labelled_docs
        if check(d["text"], d["lang"], hcfg)[1] is None
    ]
    truth = defaultdict(set)
    for d in docs:
        if d["dup_cluster"] is not None:
            truth[d["dup_cluster"]].add(d["id"])
    true_pairs = {p for ids in truth.values() for p in itertools.combinations(sorted(ids), 2)}
    assert true_pairs, "the sample web should label duplicate clusters"
    found = defaultdict(set)
    for r in cluster(docs, cfg):
        found[r["cluster_id"]].add(r["id"])
    pred_pairs = {p for ids in found.values() for p in itertools.combinations(sorted(ids), 2)}
    tp = len(true_pairs & pred_pairs)
    precision = tp / len(pred_pairs) if pred_pairs else 0.0
    recall = tp / len(true_pairs)
    assert precision >= 0.9 and recall >= 0.8, (precision, recall, len(true_pairs), len(pred_pairs))


def test_signature_equals_datasketchs_affine32_minhash():
    """The signature, fed to datasketch in blocks, is the MinHash of all shingles at once, value
    for value: empty text, CJK shingles, a short text, a text of more shingles than one block,
    and other seeds and permutation counts."""
    from datasketch import MinHash

    from filters import dedup

    rng = random.Random(7)
    words = [f"w{i}" for i in range(3000)]
    long_text = " ".join(rng.choice(words) for _ in range(dedup._BLOCK * 2 + 7))
    cases = [
        ("", "en"),
        ("one two", "en"),
        ("The bridge was closed to traffic for repairs on Monday morning.", "en"),
        ("今天桥上只有行人。昨天下了大雨，河水涨了很多。", "zh"),
        (long_text, "en"),
    ]
    for num_perm, seed in ((128, 1), (64, 42), (256, 0)):
        cfg = DedupConfig(num_perm=num_perm, seed=seed, bands=16, rows=4)
        for text, lang in cases:
            m = MinHash(num_perm=num_perm, seed=seed, scheme="affine32")
            grams = dedup.shingles(text, lang, cfg)
            if grams:
                m.update_batch(list(grams))
            ours = signature(text, lang, cfg)
            assert ours.dtype == np.uint32
            assert ours.tobytes() == m.hashvalues.astype(np.uint32).tobytes(), (num_perm, lang)
            h, sig = dedup.hash_and_signature(text, lang, cfg)
            assert h == text_hash(text) and sig.tobytes() == ours.tobytes()
