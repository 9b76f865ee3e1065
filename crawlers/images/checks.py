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
