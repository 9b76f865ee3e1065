"""Checks of the image pairs: no opted-out image stored or kept."""

from __future__ import annotations

from pathlib import Path

from common.checks import CheckOutcome, _first, _read_columns
from common.consent import flag_true

OPT_OUT_REASONS = ("robots_denied", "training_opt_out", "noai")


def image_pairs_consent(pairs_dir: Path) -> CheckOutcome:
    """No opted-out image is stored or kept: a row the training token may not use (robots,
    X-Robots-Tag, the page's noai) has no stored file and is not kept, and every stored file
    belongs to a row the training token may use."""
    pairs_dir = Path(pairs_dir)
    path = pairs_dir / "pairs.parquet"
    table = _read_columns(
        path,
        ["id", "image_path", "image_sha256", "training_allowed", "drop_reason"],
        "run `refinery images build` to write it",
    )
    rows = table.to_pylist()
    stored_rows = [r for r in rows if r["image_path"]]
    leaked = [
        r["id"]
        for r in rows
        if (not flag_true(r["training_allowed"]) or r["drop_reason"] in OPT_OUT_REASONS)
        and (r["image_path"] or r["drop_reason"] is None)
    ]
    files = (
        {p.name.split(".")[0] for p in (pairs_dir / "images").rglob("*.*")}
        if (pairs_dir / "images").exists()
        else set()
    )
    allowed = {r["image_sha256"] for r in stored_rows if flag_true(r["training_allowed"])}
    orphans = sorted(files - allowed)
    passed = not leaked and not orphans
    verdict = "no opted-out image stored or kept"
    if leaked:
        verdict = f"opted-out rows stored or kept: {_first(leaked)}"
    if orphans:
        verdict += f"; stored files of no allowed row: {_first(orphans)}"
    return CheckOutcome(
        passed,
        f"pairs {path}: {len(rows)} rows, {len(files)} stored files; {verdict}",
        {
            "rows": len(rows),
            "stored_files": len(files),
            "opted_out_rows": sum(1 for r in rows if not flag_true(r["training_allowed"])),
            "leaked_rows": len(leaked),
            "orphan_files": len(orphans),
        },
    )


def image_pairs_faces(pairs_dir: Path) -> CheckOutcome:
    """Faces were searched in every stored image, and no image with a face is stored as
    fetched: its stored file's sha256 differs from the fetched bytes' `image_sha256`."""
    import hashlib

    pairs_dir = Path(pairs_dir)
    path = pairs_dir / "pairs.parquet"
    table = _read_columns(
        path,
        ["id", "image_path", "image_sha256", "face_count"],
        "re-run `refinery images build` (pairs written before the face blur lack face_count)",
    )
    stored = [r for r in table.to_pylist() if r["image_path"]]
    unsearched = [r["id"] for r in stored if r["face_count"] is None]
    with_faces = {r["image_path"]: r for r in stored if r["face_count"]}
    kept_original = [
        r["id"]
        for p, r in sorted(with_faces.items())
        if hashlib.sha256((pairs_dir / p).read_bytes()).hexdigest() == r["image_sha256"]
    ]
    verdict = "faces searched in every stored image; no image with a face stored as fetched"
    if unsearched:
        verdict = f"stored images never searched for faces: {_first(unsearched)}"
    if kept_original:
        verdict = f"images with faces stored as fetched: {_first(kept_original)}"
    return CheckOutcome(
        not unsearched and not kept_original,
        f"pairs {path}: {len(stored)} stored rows, {len(with_faces)} images with faces; {verdict}",
        {
            "stored_rows": len(stored),
            "images_with_faces": len(with_faces),
            "faces": sum(r["face_count"] or 0 for r in stored),
            "unsearched_rows": len(unsearched),
            "kept_original": len(kept_original),
        },
    )
