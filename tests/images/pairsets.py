"""Pairs files as `images build` writes them (pairs.parquet with its manifest, images stored by
sha256) and the ledger rows the consent recheck appends, for tests of the readers of pairs."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from PIL import Image

from common.consent import append_ledger
from common.manifest import write_parquet
from common.pairs import CLIP_CUT
from filters.images.pairs import pairs_table


def stored_image(root: Path, colour: tuple[int, int, int]) -> tuple[str, str]:
    """(image_path, sha256) of a small PNG stored under `root` as images build stores it."""
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), colour).save(buf, format="PNG")
    data = buf.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    rel = f"images/{sha[:2]}/{sha}.png"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)
    return rel, sha


def pair(pid: str, src: str, image: tuple[str, str], **kw) -> dict:
    """A pairs row, kept and allowed unless told otherwise."""
    return {
        "id": pid,
        "doc_id": pid.split("-")[0],
        "src": src,
        "alt": f"alt of {pid}",
        "caption": kw.pop("caption", f"a picture for {pid}"),
        "image_path": image[0],
        "image_sha256": image[1],
        "training_allowed": True,
        "drop_reason": None,
        "duplicate_of": None,
        **kw,
    }


def write_pairs(out: Path, rows: list[dict], shard: str = "0/1", cut: object = None) -> Path:
    """pairs.parquet with its manifest, as `images build` writes it (`cut`: its clip_score_cut;
    "absent": a manifest without one, as older builds wrote)."""
    extra = {"shard": shard} if cut == "absent" else {"shard": shard, CLIP_CUT: cut}
    write_parquet(pairs_table(rows), out / "pairs.parquet", inputs=[], config={}, extra=extra)
    return out / "pairs.parquet"


def opt_out(lake: Path, src: str, ids: list[str]) -> None:
    """What the consent recheck appends when an image's host disallows the training token."""
    append_ledger(
        lake,
        [
            {
                "checked_at": "2026-01-01T00:00:00Z",
                "host": "127.0.0.1",
                "url": src,
                "doc_ids": ids,
                "training_allowed": False,
                "previous": True,
                "agent": "RefineryBot-Extended",
                "rule": "Disallow: /a/",
            }
        ],
    )
