"""Image-text pairs from fetched image refs: clean captions, pHash, CLIP score, de-duplicate,
cut by score. One row in per row out: every fetched ref becomes a pairs row, kept or with the
reason it was dropped (the first reason wins: fetch/decode, then caption, duplicate, score).

Also the text form of interleaved documents: each kept image block becomes `<|image|>` in
`text`, so a mixture's `interleaved` bucket tokenizes text and image positions in order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from filters.images.captions import caption_rows
from filters.images.config import ImageFilterConfig
from filters.images.dedup import DUPLICATE, dedup_rows, phash_bytes

LOW_CLIP_SCORE = "low_clip_score"
IMAGE_TOKEN = "<|image|>"

PAIRS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("doc_id", pa.string()),
        ("src", pa.string()),
        ("alt", pa.string()),
        ("caption", pa.string()),
        ("image_sha256", pa.string()),
        ("phash", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("image_path", pa.string()),
        ("training_allowed", pa.bool_()),
        ("clip_score", pa.float64()),
        ("duplicate_of", pa.string()),
        ("drop_reason", pa.string()),
        # beyond the contract's columns: where the image sat, and the caption's language
        ("url", pa.string()),
        ("position", pa.int32()),
        ("surrounding_text", pa.string()),
        ("caption_lang", pa.string()),
        # faces blurred in the stored image (crawlers.images.faces; null: no image stored)
        ("face_count", pa.int32()),
        (
            "face_boxes",
            pa.list_(
                pa.struct(
                    [("x", pa.int32()), ("y", pa.int32()), ("w", pa.int32()), ("h", pa.int32())]
                )
            ),
        ),
        ("stored_sha256", pa.string()),  # the stored file's sha256 (image_sha256 unless blurred)
    ]
)

Scorer = Callable[[Sequence[str], Sequence[str]], np.ndarray]


def _phash(root: Path, row: dict) -> str | None:
    if not row.get("image_path"):
        return None
    if row.get("phash"):  # computed by the image fetch from its one decode
        return row["phash"]
    try:
        return phash_bytes((root / row["image_path"]).read_bytes())
    except (OSError, ValueError):
        return None


def score_cut(
    scores: Sequence[float | None], min_score: float | None, top_fraction: float | None
) -> float | None:
    """The score below which a kept pair is dropped: `min_score`, or the score at the top
    `top_fraction` of the scored pairs (DataComp keeps the top 30%); None: no cut."""
    if min_score is not None and top_fraction is not None:
        raise ValueError("--min-score and --top-fraction exclude each other: give one")
    if min_score is not None:
        if not np.isfinite(min_score):
            raise ValueError(f"--min-score {min_score}: give a number")
        return float(min_score)
    if top_fraction is None:
        return None
    if not 0 < top_fraction <= 1:
        raise ValueError(f"--top-fraction {top_fraction}: give a share in (0, 1]")
    finite = np.array([s for s in scores if s is not None and np.isfinite(s)], dtype=float)
    if finite.size == 0:
        return None
    keep = max(1, int(round(top_fraction * finite.size)))
    return float(np.sort(finite)[::-1][keep - 1])


def apply_score_cut(rows: Sequence[dict], cut: float) -> None:
    """Drop the kept rows scored under `cut` (LOW_CLIP_SCORE), in place, so that `duplicate_of`
    still names a kept row: a cut representative's duplicates under the cut are cut too (no
    `duplicate_of`), and the best of those not under it (highest score, then smallest id, as
    `find_duplicates` picks) is kept in its place, the others its duplicates."""
    members: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r["drop_reason"] == DUPLICATE and r.get("duplicate_of") is not None:
            members[r["duplicate_of"]].append(r)
    for r in rows:
        if r["drop_reason"] is not None or r["clip_score"] >= cut:
            continue
        r["drop_reason"] = LOW_CLIP_SCORE
        passing = []
        for m in members.get(r["id"], ()):
            if m["clip_score"] is not None and m["clip_score"] >= cut:
                passing.append(m)
            else:
                m["drop_reason"], m["duplicate_of"] = LOW_CLIP_SCORE, None
        if passing:
            head = min(passing, key=lambda m: (-m["clip_score"], m["id"]))
            for m in passing:
                m["drop_reason"], m["duplicate_of"] = (
                    (None, None) if m is head else (DUPLICATE, head["id"])
                )


def build_pairs(
    fetched: Sequence[dict],
    image_root: str | Path,
    cfg: ImageFilterConfig | None = None,
    *,
    score: Scorer | None = None,
    min_score: float | None = None,
    top_fraction: float | None = None,
    lang_id=None,
) -> list[dict]:
    """`fetched.parquet` rows (crawlers.images) to pairs rows (PAIRS_SCHEMA), in input order.

    `score(image_paths, captions)` gives CLIP cosine similarities (NaN for an undecodable image);
    without it `clip_score` is null and no score cut applies. Scoring comes before
    de-duplication so a duplicate group keeps its best-scored member.
    """
    cfg = cfg or ImageFilterConfig()
    root = Path(image_root)
    rows = caption_rows(fetched, cfg.captions, lang_id)
    for r in rows:
        r["phash"] = _phash(root, r) if r.get("drop_reason") is None else None
        r["clip_score"] = None
    live = [r for r in rows if r["drop_reason"] is None]
    if score is not None and live:
        sims = score([str(root / r["image_path"]) for r in live], [r["caption"] for r in live])
        for r, s in zip(live, sims, strict=True):
            r["clip_score"] = float(s) if np.isfinite(s) else None
            if r["clip_score"] is None:
                r["drop_reason"] = "undecodable"
    rows = dedup_rows(rows, cfg.dedup, image_root=root)
    if score is not None:
        live = [r for r in rows if r["drop_reason"] is None]
        cut = score_cut([r["clip_score"] for r in live], min_score, top_fraction)
        if cut is not None:
            apply_score_cut(rows, cut)
    names = PAIRS_SCHEMA.names
    return [{k: r.get(k) for k in names} for r in rows]


def pairs_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=PAIRS_SCHEMA)


def interleaved_text(blocks: Sequence[dict]) -> str:
    """A kept interleaved document as text: text blocks in order, `<|image|>` for each image."""
    parts = []
    for b in blocks:
        if b.get("kind") == "image":
            parts.append(IMAGE_TOKEN)
        elif b.get("text"):
            parts.append(b["text"])
    return "\n\n".join(parts)
