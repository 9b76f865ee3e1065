"""Checks of a mixture: shard checksums, bucket shares within tolerance, and no opted-out row
in the shards (a token-level scan of the shards for every opted-out document of its sources)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from common.checks import CheckOutcome, Figure, _first, _require


def _mix_manifest(mix_dir: Path) -> dict[str, Any]:
    from training.loader import read_manifest

    return read_manifest(mix_dir)


def mixture_checksums_match(mix_dir: Path) -> CheckOutcome:
    """Every shard the manifest lists exists, hashes to its recorded sha256 and has the recorded
    shape (num_sequences × seq_len). The eval arrays carry no checksum in the manifest."""
    mix_dir = Path(mix_dir)
    manifest = _mix_manifest(mix_dir)
    seq_len = int(manifest["seq_len"])
    missing, mismatched, misshapen = [], [], []
    total_bytes = 0
    for i, s in enumerate(manifest["shards"]):
        if "sha256" not in s:
            raise ValueError(
                f"{mix_dir / 'manifest.json'}: shards[{i}] has no sha256; rebuild the mixture "
                "with `refinery mix build`"
            )
        path = mix_dir / s["path"]
        if not path.exists():
            missing.append(s["path"])
            continue
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda f=f: f.read(1 << 20), b""):
                h.update(chunk)
                total_bytes += len(chunk)
        if h.hexdigest() != s["sha256"]:
            mismatched.append(s["path"])
            continue
        arr = np.load(path, mmap_mode="r")
        if arr.shape != (int(s["num_sequences"]), seq_len):
            misshapen.append(s["path"])
    bad = missing + mismatched + misshapen
    meta: dict[str, Figure] = {
        "shards": len(manifest["shards"]),
        "bytes": total_bytes,
        "missing": len(missing),
        "checksum_mismatch": len(mismatched),
        "shape_mismatch": len(misshapen),
        "first_bad_shard": _first(bad),
    }
    verdict = (
        "every checksum matches"
        if not bad
        else f"{len(missing)} missing, {len(mismatched)} with a different sha256, "
        f"{len(misshapen)} with another shape (first {bad[0]})"
    )
    return CheckOutcome(
        not bad,
        f"mixture {mix_dir}: {len(manifest['shards'])} shard(s), {total_bytes} bytes; {verdict}",
        meta,
    )


def mixture_shares_within_tolerance(mix_dir: Path) -> CheckOutcome:
    """Realised token shares (buckets, groups, weighted sources) within the spec's tolerance of
    their targets, recomputed from the manifest's token counts (not its stored verdicts); the bucket
    token counts must also add up to the manifest's document tokens."""
    from training.mixture.report import accounting_checks

    mix_dir = Path(mix_dir)
    manifest = _mix_manifest(mix_dir)
    tol = float(manifest.get("tolerance", 0.01))
    checks = accounting_checks(manifest)
    # A shortfall the spec allows (allow_shortfall, recorded in the manifest) is excused: that
    # bucket is not held to its share, and the others are judged by their share of the targets
    # (as groups and sources are), which the missing tokens do not skew.
    excused = sorted({s["bucket"] for s in manifest.get("shortfalls", [])})
    if excused and (manifest.get("spec") or {}).get("allow_shortfall"):
        total = sum(b["target_tokens"] for b in manifest["buckets"].values())
        for c in checks:
            if c["level"] == "bucket" and c["name"] not in excused:
                b = manifest["buckets"][c["name"]]
                c["share"] = b["tokens"] / total
                c["deviation"] = c["share"] - c["target_share"]
                c["ok"] = abs(c["deviation"]) <= tol
        checks = [c for c in checks if c["name"].split(".")[0].split("[")[0] not in excused]
    else:
        excused = []
    placed = sum(int(b["tokens"]) for b in manifest["buckets"].values())
    tokens_agree = placed == int(manifest["tokens"])
    off = [c for c in checks if not c["ok"]]
    worst = max(checks, key=lambda c: abs(c["deviation"]), default=None)
    meta: dict[str, Figure] = {
        "tolerance": tol,
        "checked": len(checks),
        "off_target": len(off),
        "max_abs_deviation": abs(worst["deviation"]) if worst else 0.0,
        "worst": f"{worst['level']} {worst['name']}" if worst else "",
        "bucket_tokens": placed,
        "manifest_tokens": int(manifest["tokens"]),
        "excused_shortfalls": ",".join(excused),
    }
    for c in checks:
        if c["level"] == "bucket":
            meta[f"share.{c['name']}"] = round(c["share"], 6)
            meta[f"target_share.{c['name']}"] = round(c["target_share"], 6)
    passed = bool(checks) and not off and tokens_agree
    if not checks:
        verdict = "no tokens placed: nothing to compare"
    elif off:
        verdict = "off target: " + ", ".join(
            f"{c['level']} {c['name']} {c['share']:.4f} vs {c['target_share']:.4f}" for c in off
        )
    else:
        verdict = f"all within (max deviation {meta['max_abs_deviation']:.4f})"
    if not tokens_agree:
        verdict += f"; bucket tokens {placed} != manifest tokens {manifest['tokens']}"
    if excused:
        verdict += f"; allowed shortfall (not judged): {', '.join(excused)}"
    return CheckOutcome(
        passed,
        f"mixture {mix_dir}: {len(checks)} share(s) against tolerance {tol:g}; {verdict}",
        meta,
    )


# Opted-out documents are recognised in the packed streams by their opening. A candidate is a
# document-copy start whose first PROBE_TOKENS tokens (or, for a shorter document, all of it and its
# boundary) equal an opted-out row's; each candidate is then compared over up to VERIFY_TOKENS
# tokens, with the opted-out row and with every allowed row that opens the same way.
PROBE_TOKENS = 32


VERIFY_TOKENS = 2048


_FILL = np.uint32(0xFFFFFFFF)  # never a token id: marks key positions after the boundary


_MULT = np.random.default_rng(20240613).integers(1, 2**63, size=PROBE_TOKENS, dtype=np.uint64) | 1


READ_ROWS = 65536  # source rows read at a time: bounds the text held in memory


def _normalise_keys(windows: np.ndarray, boundary: int) -> np.ndarray:
    """Blank (with _FILL) every position after a row's first boundary token."""
    is_b = windows == boundary
    after = (np.cumsum(is_b, axis=1) - is_b) > 0
    windows[after] = _FILL
    return windows


def _hash_keys(keys: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (keys.astype(np.uint64) * _MULT[None, : keys.shape[1]]).sum(axis=1, dtype=np.uint64)


def _doc_keys(tokens: np.ndarray, lengths: np.ndarray, boundary: int) -> np.ndarray:
    """Key of each document: its first PROBE_TOKENS tokens followed by the boundary, cut to size."""
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    keys = np.full((len(lengths), PROBE_TOKENS), _FILL, dtype=np.uint32)
    for i, (a, n) in enumerate(zip(offsets[:-1].tolist(), lengths.tolist(), strict=True)):
        m = min(n, PROBE_TOKENS)
        keys[i, :m] = tokens[a : a + m]
        if m < PROBE_TOKENS:
            keys[i, m] = boundary
    return _normalise_keys(keys, boundary)


def _copy_starts(
    pieces: list[np.ndarray], boundary: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(buffer, copy start positions in it) over one packed stream given in pieces (its shards).

    A copy starts at the stream's beginning and after every boundary token (a virtual boundary
    in front of the stream makes the first position one such start). Copies may cross pieces:
    every start yielded has its next VERIFY_TOKENS positions in the buffer, unless the stream ends.
    """
    buf = np.array([boundary], dtype=np.uint32)
    first = 1  # index in buf of the first position not yet looked at
    for k, piece in enumerate(pieces):
        buf = np.concatenate([buf, np.asarray(piece, dtype=np.uint32).ravel()])
        last = k == len(pieces) - 1
        end = len(buf) if last else max(len(buf) - VERIFY_TOKENS + 1, first)
        if end > first:
            yield buf, np.flatnonzero(buf[first - 1 : end - 1] == boundary) + first
        keep = end - 1
        buf, first = buf[keep:], end - keep


def _windows(buf: np.ndarray, starts: np.ndarray, width: int, boundary: int) -> np.ndarray:
    """Normalised windows of `width` tokens at `starts` (_FILL past the buffer's end)."""
    idx = starts[:, None] + np.arange(width)[None, :]
    outside = idx >= len(buf)
    windows = buf[np.minimum(idx, len(buf) - 1)]
    windows[outside] = _FILL
    return _normalise_keys(windows, boundary)


def _copy_prefix(window: np.ndarray, boundary: int) -> np.ndarray:
    """A copy's tokens within its window: up to its boundary, the stream's end or the window's."""
    stop = np.flatnonzero((window == boundary) | (window == _FILL))
    return window[: stop[0]] if len(stop) else window


def _source_files(manifest: dict[str, Any], mix_dir: Path, lake_root: Path | None):
    """(file, text column, image ReadUnit or None) of every source the mixture's spec read, sorted.

    Image sources (a `kind` other than text) carry the ReadUnit the builder read them with, so
    their documents are rebuilt exactly as the builder builds them (training/mixture/images.py)."""
    import glob

    from training.mixture.spec import resolve_path

    inputs = manifest.get("inputs") or []
    spec_dir = Path(inputs[0]).parent if inputs else None
    out: set[tuple[str, str, Any]] = set()
    for name, bucket in manifest["spec"]["buckets"].items():
        for i, src in enumerate(bucket["sources"]):
            kind = src.get("kind") or "text"
            path = src["path"]
            is_lake = path == "lake" or path.startswith("lake/")
            if not is_lake and not Path(path).is_absolute() and spec_dir is None:
                raise ValueError(
                    f"{mix_dir / 'manifest.json'}: spec.buckets.{name}.sources[{i}].path {path!r} "
                    "is relative and the manifest names no spec (`inputs`); build the mixture "
                    "with `refinery mix build` or use absolute or lake/ paths"
                )
            pattern = resolve_path(path, spec_dir or mix_dir, lake_root)
            for f in sorted(glob.glob(str(pattern), recursive=True)):
                unit = None
                if kind != "text":
                    from training.mixture.sources import ReadUnit, _pairs_files

                    pairs = _pairs_files(src.get("pairs"), spec_dir or mix_dir, lake_root)
                    unit = ReadUnit(
                        name,
                        i,
                        f,
                        src.get("where"),
                        src.get("text_column") or "text",
                        None,
                        (),
                        kind=kind,
                        pairs=pairs,
                        image_tokens=int(manifest.get("image_tokens") or 0),
                        dropped=src.get("dropped") or "exclude",
                    )
                out.add((f, src.get("text_column") or "text", unit))
    return sorted(out, key=lambda e: (e[0], e[1], repr(e[2])))


def flag_mask(flag: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """`common.consent.flag_true` over a column: true where the value is the boolean true. A
    column of another type ("false", 1, NaN, as other tools write) is all false: opted out."""
    if not pa.types.is_boolean(flag.type):
        return np.zeros(len(flag), dtype=bool)
    return np.asarray(pc.fill_null(flag, False).to_numpy(zero_copy_only=False), dtype=bool)


def _honoured_ledgers(
    manifest: dict[str, Any], mix_dir: Path, lake_root: Path, files
) -> list[list[Path]]:
    """The consent ledger files the mixture honoured, per lake (each lake's in append order).

    A manifest with `consent_ledgers` names every lake it honoured: each entry's files are found
    again in that lake (`lake` RUN_LAKE: `lake_root`) and checked against the recorded count and
    hash (`common.consent.honoured_files`). A `consent_ledger` that is not their combined version
    is read as older manifests meant it, the run's lake's ledger (checked the same way), and
    honoured too. An older manifest names the run's lake's ledger only (`consent_ledger`); the
    lakes its sources were taken from then count with their ledgers as they are now, since its
    build did not read them. Every reading only adds files: the check never judges by less.
    """
    from common.consent import honoured_files, lake_of, ledger_files, ledger_version
    from training.mixture.sources import RUN_LAKE
    from training.mixture.spec import resolve_path

    entries = manifest.get("consent_ledgers")
    combined = manifest.get("consent_ledger")
    if entries is not None:
        lakes = []
        for i, e in enumerate(entries):
            if not isinstance(e, dict) or not e.get("lake"):
                raise ValueError(
                    f"{mix_dir / 'manifest.json'}: consent_ledgers[{i}] names no lake; rebuild "
                    "the mixture with `refinery mix build`"
                )
            root = lake_root if e["lake"] == RUN_LAKE else resolve_path(e["lake"], mix_dir)
            lakes.append(honoured_files(root, e))
        every = [f for fs in lakes for f in fs]
        if combined and combined.get("sha256") != (
            ledger_version(every)["sha256"] if every else None
        ):
            run = honoured_files(lake_root, combined)  # raises when it is not that either
            known = {f.resolve() for f in every}
            lakes.append([f for f in run if f.resolve() not in known])
        return lakes
    lakes = [honoured_files(lake_root, combined)]
    seen = {Path(lake_root).resolve()}
    for f, _, _ in files:
        lake = lake_of(Path(f).parent)
        if lake is not None and lake not in seen:
            seen.add(lake)
            lakes.append(ledger_files(lake))
    return lakes


def _source_docs(
    files: list[tuple[str, str]], tok, *, allowed: bool, ledger: tuple = ((), set(), set())
) -> Iterator[tuple[list[str], np.ndarray, np.ndarray]]:
    """The sources' opted-out rows (training_allowed not true, as the builder's consent rule reads
    it) or allowed rows, tokenized a batch at a time: (refs "file#row", tokens, lengths).

    `ledger` = (consent ledger files the mixture honoured, their opted-out URLs, document ids):
    a row the ledger opted out (by doc_id, else url, as the builder matches) is opted out too."""
    from common.inputs import utf8_replaced
    from training.tokenizer import encode_texts

    ledger_files, out_urls, out_ids = ledger
    for f, text_col, unit in files:
        if unit is not None:  # an image source: the builder's own documents (allowed or not)
            from dataclasses import replace

            from training.mixture.images import read_image_unit_batches

            if ledger_files:
                unit = replace(unit, consent=tuple(str(p) for p in ledger_files))
            image_id = tok.token_to_id("<|image|>")
            for b in read_image_unit_batches(unit, tok, image_id, opted_out=not allowed):
                yield [f"{f}#{r}" for r in b.rows.tolist()], b.tokens, b.lengths
            continue
        cols = [text_col, "training_allowed"]
        _require(Path(f), cols, "every mixture source carries its text_column and training_allowed")
        names = pq.read_schema(f).names if ledger_files else []
        key = "doc_id" if "doc_id" in names else "url" if "url" in names else None
        opted = pa.array(sorted(out_ids if key == "doc_id" else out_urls), pa.string())
        first_row = 0
        for batch in pq.ParquetFile(f).iter_batches(
            batch_size=READ_ROWS, columns=cols + ([key] if key else [])
        ):
            batch = utf8_replaced(batch)  # a row of invalid UTF-8 (a build's reject) still reads
            ok = flag_mask(batch.column(1))
            if key:  # the consent ledger's later opt-outs
                ok = ok & ~pc.is_in(batch.column(2), value_set=opted).to_numpy(zero_copy_only=False)
            rows = np.flatnonzero(ok == allowed)
            base, first_row = first_row, first_row + batch.num_rows
            if not len(rows):
                continue
            texts = pc.fill_null(batch.column(0).take(pa.array(rows)), "").to_pylist()
            tokens, lengths = encode_texts(tok, texts)
            yield [f"{f}#{base + r}" for r in rows.tolist()], tokens, lengths


def _prefixes(tokens: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """Each document's first VERIFY_TOKENS tokens."""
    starts = (np.cumsum(lengths) - lengths).tolist()
    return [
        tokens[a : a + min(n, VERIFY_TOKENS)] for a, n in zip(starts, lengths.tolist(), strict=True)
    ]


def _streams(mix_dir: Path, manifest: dict[str, Any]) -> Iterator[list[np.ndarray]]:
    """Each packed stream: a stage's shards in order, then every eval array on its own."""
    by_stage: dict[str, list[str]] = {}
    for s in manifest["shards"]:
        by_stage.setdefault(str(s.get("stage", "")), []).append(s["path"])
    # With images, padding also sits before an image block moved to the next row: drop it, so the
    # stream is again copies and boundaries only.
    pad = int(manifest["special_tokens"]["pad"]) if manifest.get("image_tokens") else None

    def load(p: str) -> np.ndarray:
        arr = np.load(mix_dir / p, mmap_mode="r")
        return arr if pad is None else np.asarray(arr)[np.asarray(arr) != pad]

    for paths in by_stage.values():
        yield [load(p) for p in paths]
    for e in manifest.get("eval", []):
        yield [load(e["path"])]


def mixture_no_opted_out_rows(mix_dir: Path, lake_root: Path) -> CheckOutcome:
    """No document whose row says training_allowed is not true reached the shards or eval sets.

    The shards carry no per-row provenance (the builder keeps row numbers only while tokenizing and
    writes none to the manifest), so this is proven by content: every opted-out row of every file
    the spec's sources read is tokenized with the mixture's tokenizer and looked for at every
    document-copy start of the packed streams (see PROBE_TOKENS / VERIFY_TOKENS). A copy that
    agrees with an opted-out row over its first VERIFY_TOKENS tokens (or all of its tokens, when
    shorter) is found; if an allowed row of the same sources agrees as far, the copy may be that
    row's and counts as `ambiguous`, not found. Copies the sampler cut shorter than PROBE_TOKENS
    are not recognised. Opted-out rows with no tokens contribute nothing and are only counted.
    """
    from training.tokenizer import load_tokenizer

    mix_dir = Path(mix_dir)
    manifest = _mix_manifest(mix_dir)
    boundary = int(manifest["special_tokens"]["boundary"])
    tok = load_tokenizer(mix_dir / "tokenizer.json")
    files = _source_files(manifest, mix_dir, Path(lake_root))
    from common.consent import opted_out

    lakes = _honoured_ledgers(manifest, mix_dir, Path(lake_root), files)
    # each lake's latest rows, then any lake's opt-out (one lake's re-allow never lifts another's)
    out_urls: set[str] = set()
    out_ids: set[str] = set()
    for lake_files in lakes:
        urls, ids = opted_out(lake_files)
        out_urls |= urls
        out_ids |= ids
    ledger = ([f for fs in lakes for f in fs], out_urls, out_ids)
    refs: list[str] = []
    key_parts: list[np.ndarray] = []
    empty = 0
    for batch_refs, tokens, lengths in _source_docs(files, tok, allowed=False, ledger=ledger):
        nonempty = lengths > 0
        empty += int((~nonempty).sum())
        key_parts.append(_doc_keys(tokens, lengths, boundary)[nonempty])
        refs += [r for r, keep in zip(batch_refs, nonempty.tolist(), strict=True) if keep]
    keys = np.concatenate(key_parts) if key_parts else np.zeros((0, PROBE_TOKENS), np.uint32)
    by_hash: dict[int, list[int]] = {}
    for i, h in enumerate(_hash_keys(keys).tolist()):
        by_hash.setdefault(h, []).append(i)
    probe = np.array(sorted(by_hash), dtype=np.uint64)

    # Candidates: opted-out row -> the copies (up to VERIFY_TOKENS tokens) that open like it.
    candidates: dict[int, list[np.ndarray]] = {}
    copies = streams = 0
    for pieces in _streams(mix_dir, manifest):
        streams += 1
        for buf, starts in _copy_starts(pieces, boundary):
            copies += len(starts)
            if not len(probe) or not len(starts):
                continue
            opening = _windows(buf, starts, PROBE_TOKENS, boundary)
            h = _hash_keys(opening)
            hits = np.flatnonzero(np.isin(h, probe))
            if not len(hits):
                continue
            wide = _windows(buf, starts[hits], VERIFY_TOKENS, boundary)
            for j, row in enumerate(hits.tolist()):
                for i in by_hash[int(h[row])]:
                    if np.array_equal(keys[i], opening[row]):
                        candidates.setdefault(i, []).append(_copy_prefix(wide[j], boundary))

    found: set[int] = set()
    ambiguous: set[int] = set()
    if candidates:
        wanted = {refs[i]: i for i in candidates}
        docs: dict[int, np.ndarray] = {}
        for batch_refs, tokens, lengths in _source_docs(files, tok, allowed=False, ledger=ledger):
            for r, prefix in zip(batch_refs, _prefixes(tokens, lengths), strict=True):
                if r in wanted:
                    docs[wanted[r]] = prefix
        openings = {keys[i].tobytes() for i in candidates}
        allowed: list[np.ndarray] = []
        for _, tokens, lengths in _source_docs(files, tok, allowed=True, ledger=ledger):
            k = _doc_keys(tokens, lengths, boundary)
            for key, prefix in zip(k, _prefixes(tokens, lengths), strict=True):
                if key.tobytes() in openings:
                    allowed.append(prefix)
        for i, copies_of in candidates.items():
            for p in copies_of:
                if not np.array_equal(docs[i][: len(p)], p):
                    continue  # opens like the opted-out row but goes on otherwise
                if any(np.array_equal(a[: len(p)], p) for a in allowed):
                    ambiguous.add(i)
                else:
                    found.add(i)
    ambiguous -= found
    leaked = sorted(found)
    meta: dict[str, Figure] = {
        "source_files": len({f for f, _, _ in files}),
        "opted_out_rows": len(refs) + empty,
        "opted_out_probed": len(refs),
        "opted_out_empty": empty,
        "streams": streams,
        "copies_scanned": copies,
        "opted_out_found": len(leaked),
        "ambiguous": len(ambiguous),
        "probe_tokens": PROBE_TOKENS,
        "verify_tokens": VERIFY_TOKENS,
        "first_found": refs[leaked[0]] if leaked else "",
        "first_ambiguous": refs[min(ambiguous)] if ambiguous else "",
    }
    verdict = (
        "0 opted-out rows in the shards"
        if not leaked
        else f"{len(leaked)} opted-out row(s) found in the shards (first {refs[leaked[0]]})"
    )
    if ambiguous:
        verdict += (
            f"; {len(ambiguous)} opted-out row(s) indistinguishable from allowed rows over the "
            f"copy found (ambiguous, first {refs[min(ambiguous)]})"
        )
    return CheckOutcome(
        not leaked,
        f"mixture {mix_dir}: {len(refs)} opted-out row(s) of {meta['source_files']} source "
        f"file(s) looked for in {copies} document copies; {verdict}",
        meta,
    )
