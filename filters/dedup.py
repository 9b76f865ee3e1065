"""De-duplication building blocks: exact (normalised-text hash), URL (canonical URL) and
near-duplicate (datasketch MinHash + LSH banding), plus union-find clustering with a
deterministic representative (highest quality_score, then smallest id).

Executors decide how to group: the Beam pipeline groups band keys with GroupByKey; `cluster`
below does the same in memory for tests and small runs.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
from datasketch import MinHash

from filters.config import DedupConfig
from filters.heuristics import is_char_lang

_WS = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
# Query parameters that track visits rather than select content.
_TRACKING = re.compile(r"^(utm_\w+|fbclid|gclid|mc_cid|mc_eid|ref|sessionid|sid|phpsessid)$", re.I)


def normalise(text: str) -> str:
    """NFKC, lower case, punctuation removed, whitespace collapsed: the exact-dup key's input."""
    text = unicodedata.normalize("NFKC", text).lower()
    return _WS.sub(" ", _PUNCT.sub(" ", text)).strip()


def text_hash(text: str) -> str:
    """sha1 of the normalised text (exact duplicates share it)."""
    return hashlib.sha1(normalise(text).encode()).hexdigest()


def canonical_url(url: str) -> str:
    """Lower-case scheme/host, no default port, no fragment, tracking params dropped, sorted query."""
    parts = urlsplit(url.strip())
    scheme = (parts.scheme or "http").lower()
    host = (parts.hostname or "").lower().removeprefix("www.")
    port = parts.port
    netloc = host if port in (None, 80 if scheme == "http" else 443) else f"{host}:{port}"
    if scheme == "https":
        scheme = "http"  # the same page served over both schemes is one page
    path = re.sub(r"/{2,}", "/", parts.path or "/")
    path = re.sub(r"/(index\.(html?|php))?$", "/", path) if path != "/" else path
    query = urlencode(sorted((k, v) for k, v in parse_qsl(parts.query) if not _TRACKING.match(k)))
    return urlunsplit((scheme, netloc, path, query, ""))


def shingles(text: str, lang: str, cfg: DedupConfig) -> set[bytes]:
    """Word n-grams for spaced languages, character n-grams for CJK-like ones."""
    norm = normalise(text)
    if is_char_lang(lang):
        chars = norm.replace(" ", "")
        n = cfg.char_ngram
        grams = {chars[i : i + n] for i in range(max(1, len(chars) - n + 1))}
    else:
        words = norm.split()
        n = cfg.word_ngram
        grams = {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}
    return {g.encode() for g in grams if g}


@lru_cache(maxsize=8)
def _permutations(num_perm: int, seed: int):
    # Building permutations is the costly part of a MinHash; reuse them for every document.
    return MinHash(num_perm=num_perm, seed=seed).permutations


def signature(text: str, lang: str, cfg: DedupConfig) -> np.ndarray:
    """MinHash signature (uint32 array of num_perm values) of a document."""
    m = MinHash(
        num_perm=cfg.num_perm,
        seed=cfg.seed,
        permutations=_permutations(cfg.num_perm, cfg.seed),
        scheme="affine32",
    )
    grams = shingles(text, lang, cfg)
    if grams:
        m.update_batch(list(grams))
    return m.hashvalues.astype(np.uint32)


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
    """All (smaller id, larger id) pairs among the ids of one LSH bucket."""
    ids = sorted(set(bucket))
    return [(ids[i], ids[j]) for i in range(len(ids)) for j in range(i + 1, len(ids))]


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


def resolve_clusters(edges: Iterable[tuple[str, str, str]], nodes: dict[str, dict]) -> list[dict]:
    """Union-find over typed edges (a, b, kind); one row per clustered document.

    `nodes[id]` holds `quality_score`, `text_hash` and `canonical_url`. The returned rows carry
    `cluster_id` (the representative), `id`, `duplicate_of` (None for the representative),
    `match` (exact/url/near relative to the representative) and `cluster_size`.
    """
    uf = UnionFind()
    for a, b, _ in edges:
        uf.union(a, b)
    rows = []
    for members in uf.groups().values():
        rep = min(members, key=lambda i: rank_key(nodes[i].get("quality_score"), i))
        for m in members:
            if m == rep:
                match = None
            elif nodes[m]["text_hash"] == nodes[rep]["text_hash"]:
                match = "exact"
            elif nodes[m]["canonical_url"] == nodes[rep]["canonical_url"]:
                match = "url"
            else:
                match = "near"
            rows.append(
                {
                    "cluster_id": rep,
                    "id": m,
                    "duplicate_of": None if m == rep else rep,
                    "match": match,
                    "cluster_size": len(members),
                }
            )
    return sorted(rows, key=lambda r: (r["cluster_id"], r["id"]))


def cluster(docs: Sequence[dict], cfg: DedupConfig) -> list[dict]:
    """In-memory exact + URL + MinHash clustering of docs with id, text, lang, url, quality_score."""
    nodes, edges = {}, []
    by_hash: dict[str, list[str]] = defaultdict(list)
    by_url: dict[str, list[str]] = defaultdict(list)
    buckets: dict[tuple[int, str], list[str]] = defaultdict(list)
    sigs = {}
    for d in docs:
        h, u = text_hash(d["text"]), canonical_url(d.get("url") or "")
        nodes[d["id"]] = {
            "quality_score": d.get("quality_score"),
            "text_hash": h,
            "canonical_url": u,
        }
        by_hash[h].append(d["id"])
        if d.get("url"):
            by_url[u].append(d["id"])
        if cfg.near:
            sigs[d["id"]] = signature(d["text"], d.get("lang") or "", cfg)
            for key in band_keys(sigs[d["id"]], cfg):
                buckets[key].append(d["id"])
    edges += exact_edges(by_hash.values(), "exact") if cfg.exact else []
    edges += exact_edges(by_url.values(), "url") if cfg.url else []
    seen = set()
    for bucket in buckets.values():
        for a, b in candidate_pairs(bucket):
            if (a, b) not in seen:
                seen.add((a, b))
                if estimated_jaccard(sigs[a], sigs[b]) >= cfg.jaccard_threshold:
                    edges.append((a, b, "near"))
    return resolve_clusters(edges, nodes)


def exact_edges(groups: Iterable[Sequence[str]], kind: str) -> list[tuple[str, str, str]]:
    """Star edges from the smallest id of each group to its other members."""
    out = []
    for g in groups:
        ids = sorted(set(g))
        out += [(ids[0], x, kind) for x in ids[1:]]
    return out
