"""Image-text pairs as `images build` writes them: finding their files, decoding their images.

Shared by every reader of pairs (CLIP and captioner training, synthetic captions, domain QA,
interleaved documents), so none of them reaches into another domain for it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from PIL import Image

PAIRS_NAME = "pairs.parquet"
# What `images build` keeps beside its outputs (`crawlers.images.journal.JOURNAL`; a test pins
# the two names together): a directory holding it is an images build output, finished only once
# its pairs.parquet and that file's manifest are there.
FETCH_JOURNAL = "fetch_journal.sqlite"
SHARD_PREFIX = "shard="  # the lake's images/pairs/shard=<k>/: one image-server shard's build
ImageInput = str | os.PathLike[str] | bytes


def pairs_files(pairs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """pairs.parquet files of `images build` outputs: a file, or every `**/pairs.parquet` under a
    directory (the lake's images/pairs holds one per shard); several of them in order.

    Refused, one line each: a build under a directory that did not finish (its fetch journal
    without a whole pairs.parquet: the files found would leave its pairs out), an unsharded
    build's pairs.parquet beside shard=<k>/ builds, shard builds of different shard counts, and
    a pair id in two of the files (every such pair would be read twice)."""
    items = [pairs] if isinstance(pairs, str | os.PathLike) else list(pairs)
    files: list[Path] = []
    for item in items:
        path = Path(item)
        found = [path] if path.is_file() else sorted(path.glob(f"**/{PAIRS_NAME}"))
        if not found:
            _check_finished(path)
            raise FileNotFoundError(
                f"--pairs {path}: no {PAIRS_NAME} there; run `refinery images build` first"
            )
        if not path.is_file():
            _check_finished(path)
            _check_layout(found)
        files += found
    for f in files:
        _check_finished(f.parent, recursive=False)
    _check_unique_ids(files)
    return files


def _manifest(pairs_file: Path) -> dict | None:
    """The manifest of a pairs.parquet, or None when it has none or it cannot be read."""
    from common.manifest import read_manifest

    try:
        return read_manifest(pairs_file)
    except (OSError, ValueError):
        return None


def _build_shard(pairs_file: Path) -> tuple[int, int] | None:
    """(k, n) of the `--shard K/N` a pairs.parquet was built with, from its manifest."""
    shard = (_manifest(pairs_file) or {}).get("shard")
    try:
        k, n = str(shard).split("/")
        return int(k), int(n)
    except ValueError:
        return None


def _resume_command(build: Path) -> str:
    """The command that resumes the images build of directory `build`."""
    if not build.name.startswith(SHARD_PREFIX):
        return f"`refinery images build --out {build} --resume`"
    k = build.name[len(SHARD_PREFIX) :]
    counts = {
        s[1]
        for sibling in build.parent.glob(f"{SHARD_PREFIX}*/{PAIRS_NAME}")
        if (s := _build_shard(sibling)) is not None
    }
    n = str(counts.pop()) if len(counts) == 1 else "N"
    return f"`refinery images build --shard {k}/{n} --resume`"


def _check_finished(root: Path, recursive: bool = True) -> None:
    """Refuse an `images build` output under `root` that did not finish: its fetch journal but no
    pairs.parquet, or a pairs.parquet without its manifest (written last)."""
    from common.inputs import InputError
    from common.manifest import manifest_path

    journals = root.glob(f"**/{FETCH_JOURNAL}") if recursive else [root / FETCH_JOURNAL]
    for journal in sorted(journals):
        build = journal.parent
        if not journal.exists():
            continue
        pairs = build / PAIRS_NAME
        if pairs.exists() and manifest_path(pairs).exists():
            continue
        what = f"no {PAIRS_NAME}" if not pairs.exists() else f"{PAIRS_NAME} without its manifest"
        raise InputError(
            f"{build}: an `images build` that did not finish ({FETCH_JOURNAL}, {what}), so its "
            f"pairs would be left out; resume it with {_resume_command(build)} (with the "
            "--docs and flags it was started with) or re-run it without --resume"
        )


def _check_layout(found: list[Path]) -> None:
    """Refuse an unsharded build's pairs.parquet beside shard builds, and shard builds made with
    different shard counts: either way the files hold some pairs twice."""
    from common.inputs import InputError

    fix = "re-run `refinery images build` unsharded, or each `--shard K/N` with one N"
    dirs = {f.parent for f in found}
    for f in found:
        shard_dir = f.parent
        if not shard_dir.name.startswith(SHARD_PREFIX):
            continue
        if shard_dir.parent in dirs:
            raise InputError(
                f"{shard_dir.parent}: holds an unsharded `images build` ({PAIRS_NAME}) and the "
                f"shard build {shard_dir.name}/, which repeat each other's pairs; {fix}"
            )
    counts: dict[Path, dict[int, Path]] = {}
    for f in found:
        shard = _build_shard(f) if f.parent.name.startswith(SHARD_PREFIX) else None
        if shard is None:
            continue
        seen = counts.setdefault(f.parent.parent, {})
        seen.setdefault(shard[1], f.parent)
        if len(seen) > 1:
            (n1, d1), (n2, d2) = list(seen.items())[:2]
            raise InputError(
                f"{d1.parent}: shard builds of {n1} shards ({d1.name}/) and of {n2} shards "
                f"({d2.name}/) repeat each other's pairs; {fix}"
            )


def _check_unique_ids(files: list[Path]) -> None:
    """Refuse a pair id found in two of `files`. A file without an `id` column, or one that
    cannot be read, is left to its reader, whose error names it."""
    if len(files) < 2:
        return
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from common.inputs import InputError

    parts = []
    for i, f in enumerate(files):
        try:
            ids = pq.read_table(f, columns=["id"])["id"].cast(pa.string())
        except (OSError, ValueError, KeyError, pa.ArrowException):
            continue
        parts.append(pa.table({"id": ids, "file": pa.repeat(i, len(ids))}))
    if len(parts) < 2:
        return
    table = pa.concat_tables(parts).filter(pc.is_valid(pc.field("id")))
    spread = table.group_by("id", use_threads=False).aggregate([("file", "min"), ("file", "max")])
    twice = spread.filter(pc.not_equal(pc.field("file_min"), pc.field("file_max")))
    if twice.num_rows:
        pair_id = twice["id"][0].as_py()
        first, second = twice["file_min"][0].as_py(), twice["file_max"][0].as_py()
        raise InputError(
            f"{files[second]}: pair id {pair_id!r} is also in {files[first]} ({twice.num_rows} "
            "ids are in more than one file), so those pairs would be read twice; give each `images "
            "build` output once (re-running `refinery images build` clears a lake's old one)"
        )


def open_image(image: ImageInput) -> Image.Image | None:
    """Decode an image (path or bytes) to RGB, or None when it cannot be read or decoded: its
    first frame as `rgb_view` shows it (a 16-bit grey image scaled to 8 bits, anything transparent
    on white)."""
    try:
        source = io.BytesIO(image) if isinstance(image, bytes) else image
        with Image.open(source) as im:
            im.seek(0)
            im.load()
            view = rgb_view(im)
            return im.copy() if view is im else view
    except Exception:  # PIL raises OSError, ValueError, SyntaxError, DecompressionBombError...
        return None


# Greyscale modes wider than 8 bits and the value each holds for white. Pillow's own convert to L
# or RGB clips every value over 255 to white, so a 16-bit grey PNG (mode I;16) came out a white
# page. Mode I is what Pillow's 16-bit grey decoders give where they give no I;16 (0-65535);
# F is taken as 0-1 when every value lies there, else as 0-255 (Pillow's own reading of it).
_WIDE_GREY = {"I;16": 65535, "I;16L": 65535, "I;16B": 65535, "I;16N": 65535, "I": 65535, "F": 255}


def eight_bit(image: Image.Image) -> Image.Image:
    """`image` with a 16-bit or 32-bit integer or float greyscale mode (I;16, I;16B, I, F) scaled
    by its mode's range to 8-bit L (a grey value made transparent by the file, PNG tRNS, becomes
    LA's alpha); any other image as it is. Its info (EXIF, XMP) is kept."""
    if image.mode not in _WIDE_GREY:
        return image
    import numpy as np

    values = np.asarray(image)
    white = _WIDE_GREY[image.mode]
    if image.mode == "F":
        values = np.nan_to_num(values.astype(np.float64), nan=0.0, posinf=255.0, neginf=0.0)
        if values.size and values.min() >= 0.0 and values.max() <= 1.0:
            white = 1
        grey = np.clip(values * (255.0 / white), 0, 255).round().astype(np.uint8)
    else:
        wide = np.clip(values.astype(np.int64), 0, white)
        grey = ((wide * 255 + white // 2) // white).astype(np.uint8)  # 16 bits: round(v / 257)
    info = {k: v for k, v in image.info.items() if k != "transparency"}
    clear = image.info.get("transparency")
    if isinstance(clear, int) and image.mode != "F":
        alpha = np.where(values == clear, 0, 255).astype(np.uint8)
        out = Image.fromarray(np.dstack([grey, alpha]), "LA")
    else:
        out = Image.fromarray(grey, "L")
    out.info.update(info)
    return out


_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")


def has_alpha(image: Image.Image) -> bool:
    """Whether `image` has an alpha channel or a transparent colour (PNG/GIF tRNS)."""
    return image.mode in _ALPHA_MODES or "transparency" in image.info


def on_white(image: Image.Image) -> Image.Image:
    """`image` (after `eight_bit`) with anything transparent composited onto white, as RGB; an
    opaque image as it is (in its own mode). convert("RGB") drops alpha without compositing: black text on a
    transparent ground whose hidden colour is black came out an all-black page."""
    image = eight_bit(image)
    if not has_alpha(image):
        return image
    rgba = image.convert("RGBA")  # P, L and RGB with tRNS too; RGBa and La un-premultiplied
    if rgba.getextrema()[3][0] == 255:
        return image.convert("RGB")  # opaque after all
    white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    white.alpha_composite(rgba)
    return white.convert("RGB")


def rgb_view(image: Image.Image) -> Image.Image:
    """What every reader of pairs sees of a decoded image: `on_white`, as RGB (the image itself
    when it is RGB already)."""
    image = on_white(image)
    return image if image.mode == "RGB" else image.convert("RGB")


PAIR_COLUMNS = {
    "id": "string",
    "caption": "string",
    "image_path": "string",
    "drop_reason": "string",
}
# The de-duplication's and the score cut's drop reasons (filters.images.dedup.DUPLICATE,
# filters.images.pairs.LOW_CLIP_SCORE; a test pins them together), and the pairs manifest's
# record of the score cut `images build` applied (null: none).
DUPLICATE = "duplicate"
LOW_CLIP_SCORE = "low_clip_score"
CLIP_CUT = "clip_score_cut"
# What `settle` reads of a pairs file beside the consent rule's keys.
SETTLE_COLUMNS = (
    "id",
    "drop_reason",
    "duplicate_of",
    "clip_score",
    "image_sha256",
    "stored_sha256",
    "image_path",
    "training_allowed",
)

Change = tuple[str | None, str | None]  # a row's (drop_reason, duplicate_of) as readers take it


def build_files(pairs_file: str | os.PathLike[str]) -> list[Path]:
    """The pairs.parquet files of the `images build` a pairs.parquet belongs to: every
    `shard=*/pairs.parquet` beside it when it is a shard's, else itself."""
    path = Path(pairs_file)
    if not path.parent.name.startswith(SHARD_PREFIX):
        return [path]
    return sorted(path.parent.parent.glob(f"{SHARD_PREFIX}*/{PAIRS_NAME}"))


def score_cut_of(pairs_file: Path, rows: list[dict]) -> float | None:
    """The clip_score under which `images build` dropped kept pairs: its manifest's record
    (`clip_score_cut`), else, for a file without one, the lowest score kept when some pair was
    dropped for its score (a duplicate under it is never promoted), else None (no cut)."""
    man = _manifest(pairs_file) or {}
    if CLIP_CUT in man:
        cut = man[CLIP_CUT]
        return float(cut) if isinstance(cut, int | float) else None
    if not any(r.get("drop_reason") == LOW_CLIP_SCORE for r in rows):
        return None
    kept = [_score(r) for r in rows if r.get("drop_reason") is None]
    kept = [k for k in kept if k is not None]
    return min(kept) if kept else float("inf")


def _score(row: dict) -> float | None:
    score = row.get("clip_score")
    if isinstance(score, int | float) and score == score:  # NaN is unscored
        return float(score)
    return None


def settle(
    files: list[Path], tables: list[list[dict]], consent: Any = None
) -> dict[tuple[int, int], Change]:
    """The rows whose (drop_reason, duplicate_of) readers take otherwise than the files say,
    keyed (file index, row index), for the files of one `images build` (`build_files`) and
    their rows in file order.

    The de-duplication of a build picked each group's representative once, per shard, before
    any later opt-out. Readers settle the groups again: a group is the rows `duplicate_of` ties
    together in one file, joined across files (and within) by the stored image's sha256
    (`stored_sha256`, else `image_sha256`); of its rows kept or `duplicate`, those a reader may
    use (the consent rule `consent` with its ledger, an image inside its dataset, and, for a
    duplicate, a clip_score not under its build's cut: `score_cut_of`) compete, the kept ones
    first, then the highest clip_score (null lowest), then the smallest id (then the earlier
    file). The winner is kept; every other usable row is a `duplicate` of it. Rows no reader
    may use keep what the file says (a reader drops them for their own reason). A group whose
    kept row the ledger opted out so gives its kept place to an allowed copy, and one image in
    two shards is kept once, whatever order the files come in."""
    from common.consent import NO_LEDGER
    from common.inputs import BadImagePath, resolve_image

    rule = consent if consent is not None else NO_LEDGER
    cuts = [score_cut_of(f, rows) for f, rows in zip(files, tables, strict=True)]
    members = [
        (fi, ri)
        for fi, rows in enumerate(tables)
        for ri, r in enumerate(rows)
        if r.get("drop_reason") in (None, DUPLICATE)
    ]
    row = [tables[fi][ri] for fi, ri in members]

    def usable(n: int) -> bool:
        fi, r = members[n][0], row[n]
        if not r.get("image_path") or not rule.allows(r):
            return False
        try:
            resolve_image(r["image_path"], files[fi].parent)
        except BadImagePath:
            return False
        if r.get("drop_reason") is None or cuts[fi] is None:
            return True
        score = _score(r)
        return score is not None and score >= cuts[fi]

    changes: dict[tuple[int, int], Change] = {}
    for group in _groups([fi for fi, _ in members], row):
        if len(group) == 1 and row[group[0]].get("drop_reason") is None:
            continue  # a kept row alone: nothing to settle
        ok = [n for n in group if usable(n)]
        if not ok:
            continue

        def rank(n: int) -> tuple:
            score = _score(row[n])
            return (
                row[n].get("drop_reason") is not None,
                -(score if score is not None else float("-inf")),
                str(row[n].get("id")),
                members[n][0],
            )

        keeper = min(ok, key=rank)
        for n in ok:
            new: Change = (None, None) if n == keeper else (DUPLICATE, str(row[keeper]["id"]))
            if new != (row[n].get("drop_reason"), row[n].get("duplicate_of")):
                changes[members[n]] = new
    return changes


def _groups(file_of: list[int], rows: list[dict]) -> list[list[int]]:
    """Indexes of `rows` (of files `file_of`) grouped: a `duplicate` with the row of its
    `duplicate_of` id in its file, and rows storing the same image (sha256) in any file."""
    parent = list(range(len(rows)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    by_id = {(fi, str(r.get("id"))): n for n, (fi, r) in enumerate(zip(file_of, rows, strict=True))}
    first_of_sha: dict[str, int] = {}
    for n, (fi, r) in enumerate(zip(file_of, rows, strict=True)):
        rep = r.get("duplicate_of")
        if r.get("drop_reason") == DUPLICATE and rep is not None and (fi, str(rep)) in by_id:
            union(n, by_id[(fi, str(rep))])
        sha = r.get("stored_sha256") or r.get("image_sha256")
        if sha and r.get("image_path"):
            union(first_of_sha.setdefault(str(sha), n), n)
    groups: dict[int, list[int]] = {}
    for n in range(len(rows)):
        groups.setdefault(find(n), []).append(n)
    return list(groups.values())


def settled_rows(
    pairs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    consent: Any = None,
    required: Mapping[str, str] = PAIR_COLUMNS,
) -> list[tuple[Path, list[dict]]]:
    """Every row of the pairs files (`pairs_files`), per file in order, with drop_reason and
    duplicate_of as readers take them (`settle`, over each build's files among them).
    `required`: the columns the reader needs (a file without one is refused, named)."""
    from common.inputs import read_rows

    fix = "pass an `images build` output"
    files = pairs_files(pairs)
    tables = [read_rows(f, required=required, fix=fix) for f in files]
    builds: dict[tuple[Path, ...], list[int]] = {}
    for i, f in enumerate(files):
        builds.setdefault(tuple(build_files(f)), []).append(i)
    for idx in builds.values():
        changes = settle([files[i] for i in idx], [tables[i] for i in idx], consent)
        for (fi, ri), (reason, dup) in changes.items():
            r = tables[idx[fi]][ri]
            r["drop_reason"], r["duplicate_of"] = reason, dup
    return list(zip(files, tables, strict=True))


def kept_pairs(
    pairs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], consent: Any = None
) -> list[dict]:
    """The kept, training-allowed pairs, in file order: drop_reason null as readers take it
    (`settled_rows`: a duplicate of an image whose kept copy is opted out takes its place, and
    an image kept in two shards counts once), an image inside the pairs' own directory (no local
    file outside it is read), and the one consent rule (`common.consent`: training_allowed the
    boolean true, and `consent`'s ledger, when given, has not opted its document out). Dicts
    with pair_id, caption, image_sha256, image_path (relative, as stored), image_file
    (absolute), pairs_file (the file the row is in) and training_allowed."""
    from common.consent import NO_LEDGER
    from common.inputs import BadImagePath, resolve_image

    rule = consent if consent is not None else NO_LEDGER
    out = []
    for f, rows in settled_rows(pairs, rule):
        for r in rows:
            if r["drop_reason"] is None and r["image_path"] and rule.allows(r):
                try:
                    resolve_image(r["image_path"], f.parent)
                except BadImagePath:
                    continue  # absolute, '..' or a symlink out: not an image of this dataset
                out.append(
                    {
                        "pair_id": r["id"],
                        "caption": r["caption"],
                        "image_sha256": r.get("image_sha256"),
                        "image_path": r["image_path"],
                        "image_file": str(f.parent / r["image_path"]),
                        "pairs_file": str(f),
                        "training_allowed": True,
                    }
                )
    return out
