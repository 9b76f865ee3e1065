"""De-duplication building blocks: exact (normalised-text hash), URL (canonical URL) and
near-duplicate (datasketch MinHash + LSH banding) keys, linear candidate edges, and connected
components with a deterministic representative (highest quality_score, then smallest id).

URL groups are resolved first: of the documents sharing a canonical URL (fetches of one page),
the best by `rank_key` stays and the others are its URL duplicates. Content (exact and near
edges) is then compared among the survivors only, so a shared URL never joins two texts that
share nothing: a text leaves only with its own copy, or with a fetch of its own page.

Every step is linear in its input: a key group links each member to one member (a star, not
all pairs: an exact or LSH group's smallest id, a URL group's best), and components are found
by min-label propagation, where a node's label is the best `rank_key` it has seen, so a
component's final label is its representative. `filters.dedup_shards` chains these into
sharded steps that the filter's executors run (in process, or one GroupByKey per step on Beam);
`cluster` below is the plain in-memory reference for tests and small inputs, with identical
output.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from urllib.parse import quote_plus, unquote_plus, urlsplit, urlunsplit

import numpy as np
from datasketch import MinHash

from common.words import WORD_CLASS
from filters.config import DedupConfig
from filters.heuristics import is_char_lang
from filters.linededup import INVISIBLE

_WS = re.compile(r"\s+")
# Neither space nor a word character; a combining mark is part of its word (common.words).
_PUNCT = re.compile(f"[^\\s{WORD_CLASS}]")
# Query parameters that track visits rather than select content. Not `sid` (a story id on
# PHP-Nuke and Slashdot sites) nor `ref` (a branch or tag on GitLab and GitHub): they select.
_TRACKING = re.compile(r"^(utm_\w+|fbclid|gclid|mc_cid|mc_eid|sessionid|phpsessid)$", re.I)


def normalise(text: str) -> str:
    """NFKC, invisible characters removed (`filters.linededup.INVISIBLE`: a soft hyphen or a
    zero-width space inside a word leaves one word), case folded, punctuation removed,
    whitespace collapsed: the exact-dup key's and the shingles' input."""
    text = unicodedata.normalize("NFKC", text)
    if not text.isascii():
        text = INVISIBLE.sub("", text)
    return _WS.sub(" ", _PUNCT.sub(" ", text.casefold())).strip()


def text_hash(text: str) -> str:
    """sha1 of the normalised text (exact duplicates share it)."""
    return hashlib.sha1(normalise(text).encode()).hexdigest()


def canonical_url(url: str) -> str:
    """Lower-case scheme/host, no default port, no fragment, tracking params dropped, sorted query.

    Every other query parameter stays, with or without a value: `shop?product-a`,
    `shop?product-b`, `item?id=` and `item` are four pages. A URL that does not parse
    ('http://[::1', a port out of range) is its own key, as written; an empty one is ''. One odd
    URL never ends the run."""
    if not url.strip():
        return ""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url.strip()
    scheme = (parts.scheme or "http").lower()
    host = (parts.hostname or "").lower().removeprefix("www.")
    netloc = host if port in (None, 80 if scheme == "http" else 443) else f"{host}:{port}"
    if scheme == "https":
        scheme = "http"  # the same page served over both schemes is one page
    path = re.sub(r"/{2,}", "/", parts.path or "/")
    path = re.sub(r"/(index\.(html?|php))?$", "/", path) if path != "/" else path
    return urlunsplit((scheme, netloc, path, _canonical_query(parts.query), ""))


def _canonical_query(query: str) -> str:
    """The query's parameters but the tracking ones, sorted, each as `quote_plus` spells it: a
    key without `=` stays without it, an empty value stays empty."""
    params = []
    for part in query.split("&"):
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = unquote_plus(key), unquote_plus(value)
        if not _TRACKING.match(key):
            params.append((key, eq, value))
    return "&".join(quote_plus(k) + eq + quote_plus(v) for k, eq, v in sorted(params))


def shingles(text: str, lang: str, cfg: DedupConfig) -> set[bytes]:
    """Word n-grams for spaced languages, character n-grams for CJK-like ones."""
    return _shingles(normalise(text), lang, cfg)


def _shingles(norm: str, lang: str, cfg: DedupConfig) -> set[bytes]:
    if is_char_lang(lang):
        chars = norm.replace(" ", "")
        n = cfg.char_ngram
        grams = {chars[i : i + n] for i in range(max(1, len(chars) - n + 1))}
    else:
        words = norm.split()
        n = cfg.word_ngram
        grams = {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}
    return {g.encode() for g in grams if g}


_BLOCK = 4096  # shingles per update: a huge document never holds a shingles x num_perm matrix


@lru_cache(maxsize=8)
def _permutations(num_perm: int, seed: int):
    # Building permutations is the costly part of a MinHash; reuse them for every document.
    return MinHash(num_perm=num_perm, seed=seed).permutations


def _minhash(grams: set[bytes], num_perm: int, seed: int) -> np.ndarray:
    """datasketch's MinHash (affine32) of the shingles, fed in blocks of _BLOCK."""
    m = MinHash(
        num_perm=num_perm,
        seed=seed,
        permutations=_permutations(num_perm, seed),
        scheme="affine32",
    )
    grams = list(grams)
    for i in range(0, len(grams), _BLOCK):
        m.update_batch(grams[i : i + _BLOCK])
    return m.hashvalues.astype(np.uint32)


def signature(text: str, lang: str, cfg: DedupConfig) -> np.ndarray:
    """MinHash signature (uint32 array of num_perm values) of a document."""
    return _minhash(shingles(text, lang, cfg), cfg.num_perm, cfg.seed)


def hash_and_signature(text: str, lang: str, cfg: DedupConfig) -> tuple[str, np.ndarray]:
    """`text_hash` and `signature` of one text, normalising it once."""
    norm = normalise(text)
    sig = _minhash(_shingles(norm, lang, cfg), cfg.num_perm, cfg.seed)
    return hashlib.sha1(norm.encode()).hexdigest(), sig


def band_keys(sig: np.ndarray, cfg: DedupConfig) -> list[tuple[int, str]]:
    """LSH keys (band index, band hash): documents sharing any key are candidate pairs."""
    r = cfg.rows
    return [
        (b, hashlib.blake2b(sig[b * r : (b + 1) * r].tobytes(), digest_size=8).hexdigest())
        for b in range(cfg.bands)
    ]


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Share of equal MinHash values: the Jaccard estimate."""
    return float(np.mean(a == b))


def candidate_pairs(bucket: Sequence[str]) -> list[tuple[str, str]]:
    """All (smaller id, larger id) pairs among the ids of one bucket (quadratic: small groups only)."""
    ids = sorted(set(bucket))
    return [(ids[i], ids[j]) for i in range(len(ids)) for j in range(i + 1, len(ids))]


def star_pairs(bucket: Iterable[str]) -> list[tuple[str, str]]:
    """(smallest id, other id) for every other member of one key group: linear in its size.

    Members of an exact group are all equal, so the star loses nothing. In an LSH bucket
    each member is verified against the bucket's smallest id only; members that fail are left
    to the other bands they share with similar documents.
    """
    ids = sorted(set(bucket))
    return [(ids[0], x) for x in ids[1:]]


class UnionFind:
    """Disjoint sets over string ids, path-halving, union by smaller root for determinism."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        """Root of x's set."""
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        """Merge the sets of a and b."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo

    def groups(self) -> dict[str, list[str]]:
        """Root -> sorted members of every set with more than one member."""
        out: dict[str, list[str]] = defaultdict(list)
        for x in self.parent:
            out[self.find(x)].append(x)
        return {k: sorted(v) for k, v in out.items() if len(v) > 1}


def rank_key(quality: float | None, doc_id: str) -> tuple[float, str]:
    """Sort key of the representative: highest quality first (NaN last), then smallest id."""
    q = -1.0 if quality is None or math.isnan(quality) else quality
    return (-q, doc_id)


Label = tuple[float, str]


def label_of(quality: float | None, doc_id: str) -> Label:
    """A node's own label: its `rank_key`; the minimum over a component is its representative."""
    return rank_key(quality, doc_id)


def label_messages(node: str, label: Label, neighbours: Iterable[str]) -> list[tuple[str, Label]]:
    """One round of min-label propagation: a node sends its label to itself and its neighbours."""
    return [(node, label)] + [(u, label) for u in neighbours]


def merge_label_pairs(pairs: Iterable[tuple[Label, Label]]) -> dict[Label, Label]:
    """Labels still differing across an edge after propagation -> the smallest label they join.

    Only labels that change are returned. Exact for any number of earlier rounds: every label
    is a node of its own component and never above its node's own rank, so the minimum label
    of the joined classes is the component's representative.
    """
    parent: dict[Label, Label] = {}

    def find(x: Label) -> Label:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb))
            parent[hi] = lo
    return {x: r for x in list(parent) if (r := find(x)) != x}


def cluster_rows(rep: str, members: Iterable[tuple[str, str, bool]]) -> list[dict]:
    """Rows of one component: `members` are (id, text_hash, lost its URL group), `rep` the kept
    representative.

    `match` says why a member goes: the same normalised text as the representative (`exact`),
    else another fetch of its own URL stayed (`url`: it lost its URL group), else a chain of
    near copies among URL-group survivors leads to the representative (`near`). Sorted by id.
    """
    info = {m[0]: m for m in members}
    rep_hash = info[rep][1]
    rows = []
    for m, h, url_lost in sorted(info.values()):
        if m == rep:
            match = None
        elif h == rep_hash:
            match = "exact"
        elif url_lost:
            match = "url"
        else:
            match = "near"
        rows.append(
            {
                "cluster_id": rep,
                "id": m,
                "duplicate_of": None if m == rep else rep,
                "match": match,
                "cluster_size": len(info),
            }
        )
    return rows


def url_representatives(groups: Iterable[Sequence[str]], nodes: dict[str, dict]) -> dict[str, str]:
    """Each URL group's members but its best (smallest `rank_key`) -> that best member."""
    lost = {}
    for group in groups:
        ids = sorted(set(group))
        best = min(ids, key=lambda i: rank_key(nodes[i].get("quality_score"), i))
        lost.update({m: best for m in ids if m != best})
    return lost


def resolve_clusters(edges: Iterable[tuple[str, str, str]], nodes: dict[str, dict]) -> list[dict]:
    """Connected components of typed edges (a, b, kind); one row per clustered document.

    `nodes[id]` holds `quality_score`, `text_hash` and `url_lost` (true for a member that lost
    its URL group: its only edge is the `url` edge to the group's best, so it never carries a
    component's label). The returned rows carry `cluster_id` (the representative: the member
    with the smallest `rank_key`), `id`, `duplicate_of` (None for the representative), `match`
    (exact/url/near, `cluster_rows`) and `cluster_size`, sorted by (cluster_id, id).
    """
    uf = UnionFind()
    for a, b, _ in edges:
        uf.union(a, b)
    rows = []
    for members in uf.groups().values():
        rep = min(members, key=lambda i: rank_key(nodes[i].get("quality_score"), i))
        rows += cluster_rows(
            rep, [(m, nodes[m]["text_hash"], nodes[m].get("url_lost", False)) for m in members]
        )
    return sorted(rows, key=lambda r: (r["cluster_id"], r["id"]))


def near_edges(
    buckets: Iterable[Sequence[str]], sigs: dict[str, np.ndarray], threshold: float
) -> list[tuple[str, str, str]]:
    """Verified near-duplicate edges: each bucket's star pairs kept if their Jaccard estimate passes."""
    seen = set()
    edges = []
    for bucket in buckets:
        for a, b in star_pairs(bucket):
            if (a, b) not in seen:
                seen.add((a, b))
                if estimated_jaccard(sigs[a], sigs[b]) >= threshold:
                    edges.append((a, b, "near"))
    return edges


def cluster(docs: Sequence[dict], cfg: DedupConfig) -> list[dict]:
    """In-memory exact + URL + MinHash clustering of docs with id, text, lang, url, quality_score.

    URL groups first (each keeps its best; the others hang off it by a `url` edge), then exact
    and near edges among the URL groups' survivors only."""
    nodes = {}
    by_url: dict[str, list[str]] = defaultdict(list)
    sigs = {}
    for d in docs:
        u = canonical_url(d.get("url") or "")
        if cfg.near:
            h, sigs[d["id"]] = hash_and_signature(d["text"], d.get("lang") or "", cfg)
        else:
            h = text_hash(d["text"])
        nodes[d["id"]] = {"quality_score": d.get("quality_score"), "text_hash": h}
        if u:
            by_url[u].append(d["id"])
    lost = url_representatives(by_url.values(), nodes) if cfg.url else {}
    edges = [(best, m, "url") for m, best in sorted(lost.items())]
    by_hash: dict[str, list[str]] = defaultdict(list)
    buckets: dict[tuple[int, str], list[str]] = defaultdict(list)
    for d in docs:
        doc_id = d["id"]
        nodes[doc_id]["url_lost"] = doc_id in lost
        if doc_id in lost:
            continue
        by_hash[nodes[doc_id]["text_hash"]].append(doc_id)
        if cfg.near:
            for key in band_keys(sigs[doc_id], cfg):
                buckets[key].append(doc_id)
    edges += exact_edges(by_hash.values(), "exact") if cfg.exact else []
    edges += near_edges(buckets.values(), sigs, cfg.jaccard_threshold) if cfg.near else []
    return resolve_clusters(edges, nodes)


def exact_edges(groups: Iterable[Sequence[str]], kind: str) -> list[tuple[str, str, str]]:
    """Star edges from the smallest id of each group to its other members."""
    return [(a, b, kind) for g in groups for a, b in star_pairs(g)]
