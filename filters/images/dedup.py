"""Image de-duplication: exact (sha256), perceptual (64-bit pHash within a Hamming distance) and
image URLs repeated across many documents.

Near-duplicates are found by banding, as the text MinHash does: with distance d the 64 bits are
cut into d+1 bands, and two hashes at most d bits apart agree on at least one whole band
(pigeonhole), so only hashes that share a band value are compared. Candidate pairs are found
with a sort per band (no Python loop over rows) and confirmed with a popcount of the XOR; the
confirmed pairs are joined with union-find. pHash is grey and low-frequency (layout only), so a
pHash match may also be confirmed on the stored files by an 8x8 colour thumbnail
(colour_confirm): on the sample web's flat scenes pHash alone merges about a third of the
distinct scenes, with the check almost none. Each group keeps one representative: the highest
`clip_score` (null counts lowest), then the smallest id.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

# The pHash is shared with the image fetch (crawlers/images hashes the one decode it makes of each
# image), so it lives in common/; its names stay importable from here.
from common.phash import (  # noqa: F401
    PHASH_DEAD_ZONE,
    colour_thumbnail,
    phash_bytes,
    phash_hex,
)
from filters.images.config import DedupConfig

DUPLICATE = "duplicate"
REPEATED_URL = "repeated_url"


def hamming(a: str, b: str) -> int:
    """Number of differing bits of two 16-hex-digit pHashes."""
    return (int(a, 16) ^ int(b, 16)).bit_count()


def _to_uint64(phashes: Sequence[str]) -> np.ndarray:
    out = np.empty(len(phashes), dtype=np.uint64)
    for i, h in enumerate(phashes):
        if len(h) != 16:
            raise ValueError(f"phash {h!r} at row {i}: expected 16 hex digits (a 64-bit pHash)")
        out[i] = int(h, 16)
    return out


def band_masks(max_distance: int) -> list[tuple[int, int]]:
    """(shift, width) of the d+1 bands that cover the 64 bits as evenly as possible."""
    n = max_distance + 1
    widths = [64 // n + (1 if i < 64 % n else 0) for i in range(n)]
    out, shift = [], 0
    for w in widths:
        out.append((shift, w))
        shift += w
    return out


def near_pairs(hashes: np.ndarray, max_distance: int) -> np.ndarray:
    """Index pairs (i < j) of uint64 hashes at most `max_distance` bits apart, as an (n, 2) array.

    Equal hashes are paired too; the caller may collapse them first (near_duplicate_groups
    does) so that a bucket of identical hashes does not cost its square."""
    n = len(hashes)
    found: list[np.ndarray] = []
    if n < 2:
        return np.empty((0, 2), dtype=np.int64)
    for shift, width in band_masks(max_distance):
        keys = (hashes >> np.uint64(shift)) & np.uint64((1 << width) - 1)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        # Pair each row with the rows k places after it in the sort while they share the band;
        # a row whose k-th follower is in another bucket has no later one in it either.
        pos = np.arange(n - 1)
        k = 1
        while pos.size:
            pos = pos[pos + k < n]
            pos = pos[sorted_keys[pos] == sorted_keys[pos + k]]
            if not pos.size:
                break
            i, j = order[pos], order[pos + k]
            ok = np.bitwise_count(hashes[i] ^ hashes[j]) <= max_distance
            if ok.any():
                found.append(np.stack([np.minimum(i[ok], j[ok]), np.maximum(i[ok], j[ok])], 1))
            k += 1
    if not found:
        return np.empty((0, 2), dtype=np.int64)
    return np.unique(np.concatenate(found).astype(np.int64), axis=0)


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _same(uf: _UnionFind, confirm: Callable[[int, int], bool] | None, a: int, b: int) -> bool:
    return confirm is None or uf.find(a) == uf.find(b) or confirm(a, b)


def colour_signature(image) -> np.ndarray:
    """8x8 RGB box-filtered thumbnail of a PIL image, as floats in [0, 1] (8x8x3)."""
    return _signature(colour_thumbnail(image))


def _signature(thumb: bytes) -> np.ndarray:
    return np.frombuffer(thumb, dtype=np.uint8).reshape(8, 8, 3).astype(np.float32) / 255.0


def colour_confirm(
    paths: Sequence[str | None],
    max_diff: float = 0.06,
    thumbnails: Sequence[str | None] | None = None,
) -> Callable[[int, int], bool]:
    """A `confirm` for find_duplicates: rows i and j are the same image when no cell of their 8x8
    colour thumbnails differs by more than `max_diff` in any channel. pHash is grey and keeps
    only layout, so "four red squares on the left" and "five purple circles on the left" share a
    hash; the thumbnails tell them apart. Re-encodes and resizes of one image (JPEG 75-90,
    0.5-1.5x) stay under 0.06 on the sample web's scenes. `thumbnails`: each row's
    `common.phash.colour_thumbnail` of its stored file, hex-encoded, where the image fetch
    recorded it (its `colour_thumbnail` column); a row without one has its file read, once,
    when first compared; a row without a readable file is confirmed (pHash alone decides)."""
    from PIL import Image

    cache: dict[int, np.ndarray | None] = {}

    def signature(i: int) -> np.ndarray | None:
        if i not in cache:
            path = paths[i]
            thumb = thumbnails[i] if thumbnails is not None else None
            if thumb and len(thumb) == 384:
                cache[i] = _signature(bytes.fromhex(thumb))
                return cache[i]
            try:
                with Image.open(path) as im:
                    im.seek(0)
                    cache[i] = colour_signature(im)
            except (OSError, ValueError, TypeError):
                cache[i] = None
        return cache[i]

    def confirm(i: int, j: int) -> bool:
        a, b = signature(i), signature(j)
        if a is None or b is None:
            return True
        return float(np.abs(a - b).max()) <= max_diff

    return confirm


def find_duplicates(
    ids: Sequence[str],
    image_sha256: Sequence[str | None],
    phashes: Sequence[str | None],
    clip_scores: Sequence[float | None] | None = None,
    max_distance: int = 4,
    exact: bool = True,
    perceptual: bool = True,
    confirm: Callable[[int, int], bool] | None = None,
) -> list[str | None]:
    """For each row, the id of its group's representative when the row is a duplicate, else None.

    Rows join a group when their sha256 are equal (`exact`) or their pHashes are at most
    `max_distance` bits apart (`perceptual`) and, when given, `confirm(row_i, row_j)` agrees
    (see colour_confirm: pHash sees layout only, so two different graphics with the same layout
    share a hash); groups are transitive (union-find). Rows with neither a sha256 nor a pHash are
    never duplicates. The representative has the highest clip_score (None is lowest), then the
    smallest id; its own value is None."""
    n = len(ids)
    if not (len(image_sha256) == len(phashes) == n):
        raise ValueError(
            f"find_duplicates: ids ({n}), image_sha256 ({len(image_sha256)}) and phashes "
            f"({len(phashes)}) must have one value per row"
        )
    if clip_scores is not None and len(clip_scores) != n:
        raise ValueError(f"find_duplicates: clip_scores has {len(clip_scores)} values for {n} rows")
    uf = _UnionFind(n)
    if exact:
        first: dict[str, int] = {}
        for i, sha in enumerate(image_sha256):
            if sha:
                uf.union(first.setdefault(sha, i), i)
    if perceptual:
        rows_of: dict[str, list[int]] = defaultdict(list)
        for i, h in enumerate(phashes):
            if h:
                rows_of[h.lower()].append(i)
        distinct = list(rows_of)
        # Rows of one pHash, clustered without banding them: each row joins the first leader
        # that confirms it (without `confirm`, the first row leads them all).
        leaders: dict[str, list[int]] = {}
        for h, rows in rows_of.items():
            heads: list[int] = []
            for r in rows:
                head = next((L for L in heads if _same(uf, confirm, L, r)), None)
                if head is None:
                    heads.append(r)
                else:
                    uf.union(head, r)
            leaders[h] = heads
        if max_distance > 0 and len(distinct) > 1:
            for a, b in near_pairs(_to_uint64(distinct), max_distance).tolist():
                for la in leaders[distinct[a]]:
                    for lb in leaders[distinct[b]]:
                        if _same(uf, confirm, la, lb):
                            uf.union(la, lb)
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(n):
        members[uf.find(i)].append(i)
    out: list[str | None] = [None] * n
    for group in members.values():
        if len(group) < 2:
            continue

        def rank(i: int) -> tuple[float, str]:
            score = clip_scores[i] if clip_scores is not None else None
            return (-(score if score is not None else float("-inf")), ids[i])

        rep = min(group, key=rank)
        for i in group:
            if i != rep:
                out[i] = ids[rep]
    return out


def repeated_urls(srcs: Iterable[str | None], doc_ids: Iterable[str], threshold: int) -> set[str]:
    """Image URLs referenced by more than `threshold` distinct documents (OBELICS: 10);
    threshold 0 disables the rule (empty set)."""
    if threshold <= 0:
        return set()
    docs: dict[str, set[str]] = defaultdict(set)
    for src, doc in zip(srcs, doc_ids, strict=True):
        if src:
            docs[src].add(doc)
    return {src for src, d in docs.items() if len(d) > threshold}


def dedup_rows(rows: Sequence[dict], cfg=None, image_root: str | Path | None = None) -> list[dict]:
    """Pairs rows (`id`, `doc_id`, `src`, `image_sha256`, `phash`, optional `clip_score`,
    `image_path`, `colour_thumbnail` and `drop_reason`) to copies with `duplicate_of` set and
    `drop_reason` = "repeated_url" or "duplicate" for rows that were kept so far. Rows already dropped keep their
    reason, take no part in grouping and get `duplicate_of` None. `cfg` is a DedupConfig (None:
    defaults). With `image_root` (the directory `image_path` is relative to) and
    `cfg.confirm_max_colour_diff` set, pHash matches are confirmed on the stored files
    (colour_confirm)."""
    cfg = cfg or DedupConfig()
    out = [dict(r) for r in rows]
    for r in out:
        r.setdefault("drop_reason", None)
        r["duplicate_of"] = None
    # Repeated URLs count every reference, kept or not: a logo is a logo whatever its alt says.
    repeated = repeated_urls(
        [r.get("src") for r in out],
        [r.get("doc_id") or "" for r in out],
        cfg.repeated_url_threshold,
    )
    for r in out:
        if r["drop_reason"] is None and r.get("src") in repeated:
            r["drop_reason"] = REPEATED_URL
    live = [i for i, r in enumerate(out) if r["drop_reason"] is None]
    confirm = None
    if image_root is not None and cfg.confirm_max_colour_diff is not None:
        paths = [
            str(Path(image_root) / out[i]["image_path"]) if out[i].get("image_path") else None
            for i in live
        ]
        thumbs = [out[i].get("colour_thumbnail") for i in live]
        confirm = colour_confirm(paths, cfg.confirm_max_colour_diff, thumbs)
    dup_of = find_duplicates(
        [out[i]["id"] for i in live],
        [out[i].get("image_sha256") for i in live],
        [out[i].get("phash") for i in live],
        [out[i].get("clip_score") for i in live],
        max_distance=cfg.phash_max_distance,
        exact=cfg.exact,
        perceptual=cfg.perceptual,
        confirm=confirm,
    )
    for i, d in zip(live, dup_of, strict=True):
        if d is not None:
            out[i]["duplicate_of"] = d
            out[i]["drop_reason"] = DUPLICATE
    return out
