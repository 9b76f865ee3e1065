"""Image sources of a mixture: rows of the lake's image and synthetic outputs become documents
whose tokens hold an image block (`image_tokens` consecutive `<|image|>` ids) where each image
goes, plus the image each block stands for (content hash, file, size).

What each source `kind` reads (image paths relative to the directory of the row's own Parquet
file: the dataset the image belongs to; see `resolve_image`):

- `pairs` (images/pairs/**/pairs.parquet): image `image_path` + the row's `text_column` (caption).
- `interleaved` (images/interleaved/interleaved.parquet): `blocks` in order, text blocks joined
  by blank lines, an image block at each kept image (its `pair_id`, found in `pairs`).
- `domain_images` (images/domain/domain_images.parquet): the pair `id`'s image + `text_column`.
- `charts` (synth/charts/charts.parquet): `image_path` + the verified QA as "Q: .. A: .." lines.
- `tables` (synth/tables/table_pairs.parquet): `image_path` + `markdown` + the verified QA.
- `captions` (synth/captions/captions.parquet): the `pair_id`'s image (or `image_path` when the
  file carries one) + `caption`.
- `domain_qa` (synth/domain_qa/domain_qa.parquet): `image_path` (or the `pair_id`'s) + the QA.

Rows the producing stage dropped are left out without a `where` saying so: a pair (and a domain
image) whose `drop_reason` is set (for `pairs`, settled as every reader of pairs takes it,
`_settled_source`), a domain candidate not `selected`, a caption, chart, table or domain QA row
whose `status` is not 'ok' (`sources.UPSTREAM_KEPT`); each is an `upstream_dropped` reject, the
detail naming the column and value (a row the source's own `where` leaves out is no reject). A
source that says `dropped: include` takes them.

Consent: rows are read through the same `allowed` relation as text (training_allowed IS TRUE,
plus the consent ledger); a file without a training_allowed column is accepted only for
`charts` (generated from seeded generators or a teacher's invented data: nothing crawled is in
them) and `captions` (whose consent is their pair's). Every image named by pair id also needs
its pair's own training_allowed (and ledger) to be true. A row or image that cannot enter is a
recorded reject with its reason (`opted_out` included), never silently dropped.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import stat
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from common.inputs import MAX_IMAGE_BYTES, BadImagePath, resolve_image
from training.mixture import sources as src_mod
from training.mixture.spec import normalize_predicate, quote_ident
from training.tokenizer import encode_texts

# Kinds accepted without a training_allowed column (see the module docstring).
NO_CONSENT_COLUMN_KINDS = ("charts", "captions")
# Kinds whose text is QA pairs, and whether only verified answers are kept.
QA_VERIFIED_ONLY = {"charts": True, "tables": True, "domain_qa": False}
IMAGE_FORMATS = {
    "PNG": "png",
    "JPEG": "jpg",
    "GIF": "gif",
    "WEBP": "webp",
    "AVIF": "avif",
    "BMP": "bmp",
}
# resolve_image, BadImagePath, MAX_IMAGE_BYTES: the one image path rule (common.inputs)
# Pixels (width x height, from the header) an image may have to be decoded by the check: the
# image crawler's default max_pixels (a larger image is its decompression_bomb); Pillow's own
# MAX_IMAGE_PIXELS applies as well.
MAX_IMAGE_PIXELS = 40_000_000


@dataclass(frozen=True)
class Pair:
    """What a pair id resolves to: its image file, recorded hash and consent."""

    path: str | None
    sha256: str | None
    allowed: bool
    bad: BadImagePath | None = None  # an image_path that may not enter (see resolve_image)


class PairIndex:
    """Pair id -> `Pair` over pairs.parquet files (image_path relative to each file's directory).

    A pair is allowed when its training_allowed is true and the consent ledger has not opted its
    document out (the same rule the text read path applies); a pair id recorded more than once
    is allowed only when every record allows it (`_merge`)."""

    def __init__(self, files: tuple[str, ...], consent: tuple[str, ...] = ()) -> None:
        import duckdb

        self.pairs: dict[str, Pair] = {}
        for f in files:
            unit = src_mod.ReadUnit("pairs", 0, f, None, "caption", None, (), consent)
            con = duckdb.connect(config={"threads": 1})
            # the stored file's hash: stored_sha256 where faces were blurred (crawlers.images)
            sha = "image_sha256"
            try:
                q = con.execute(
                    "DESCRIBE SELECT * FROM read_parquet(?, hive_partitioning=false)", [f]
                ).fetchall()
                names = {c[0] for c in q}
                if "stored_sha256" in names:
                    sha = "COALESCE(stored_sha256, image_sha256)"
            except duckdb.Error:
                pass  # the SELECT below names the problem
            try:
                rows = con.execute(
                    f"SELECT id, image_path, {sha}, "
                    f"({src_mod.consent_sql(unit)}) AS ok FROM read_parquet(?, hive_partitioning=false)",
                    [f],
                ).fetchall()
            except duckdb.Error as exc:
                raise ValueError(
                    f"{f}: cannot read pairs (need id, image_path, image_sha256, "
                    f"training_allowed): {str(exc).splitlines()[0]}"
                ) from None
            finally:
                con.close()
            base = Path(f).parent
            for pid, path, sha, ok in rows:
                if pid is None:
                    continue
                try:
                    full, bad = resolve_image(path, base), None
                except BadImagePath as exc:
                    full, bad = None, exc
                pair = Pair(full, sha, bool(ok), bad)
                seen = self.pairs.get(str(pid))
                self.pairs[str(pid)] = pair if seen is None else _merge(seen, pair)

    def get(self, pair_id: str | None) -> Pair | None:
        return None if pair_id is None else self.pairs.get(str(pair_id))


def _merge(a: Pair, b: Pair) -> Pair:
    """One pair id recorded twice (two image-stage runs, two shards): allowed only when every
    record allows it (an opt-out anywhere wins), whatever order the files come in; the image is
    the usable record's with the smallest (sha256, path), so the choice does not depend on the
    files' names or order either."""

    def rank(p: Pair) -> tuple:
        return (p.bad is not None, p.path is None, p.sha256 or "", p.path or "")

    first = min(a, b, key=rank)
    return Pair(first.path, first.sha256, a.allowed and b.allowed, first.bad)


class ImageCheck:
    """Reads each image file once: content sha256, width, height, extension; or why it cannot enter."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[str, Any] | str] = {}

    def __call__(self, path: str, expected_sha: str | None = None) -> dict[str, Any] | str:
        """The image's record, or a reject reason string."""
        got = self._seen.get(path)
        if got is None:
            got = self._seen[path] = _inspect(path)
        if isinstance(got, dict) and expected_sha and expected_sha != got["sha256"]:
            return "image_sha256_mismatch"
        return got


def _inspect(path: str) -> dict[str, Any] | str:
    from PIL import Image, UnidentifiedImageError

    try:
        # O_NONBLOCK: a FIFO named as an image does not block the open; only regular files
        # are read, at most MAX_IMAGE_BYTES (a device such as /dev/zero never ends)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return "image_file_missing"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "image_not_a_file"
        if st.st_size > MAX_IMAGE_BYTES:
            return "image_too_large"
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_IMAGE_BYTES + 1)
    except OSError:
        return "image_file_missing"
    finally:
        os.close(fd)
    if len(data) > MAX_IMAGE_BYTES:
        return "image_too_large"
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.verify()
        with _strict_decoding(), Image.open(io.BytesIO(data)) as im:
            width, height, fmt = im.size[0], im.size[1], im.format
            if width * height > min(MAX_IMAGE_PIXELS, Image.MAX_IMAGE_PIXELS or MAX_IMAGE_PIXELS):
                return "image_undecodable"
            # verify() reads no JPEG or GIF pixel data: decode the frame the loader decodes
            # (a truncated file raises here, not in training)
            im.convert("RGB")
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, SyntaxError):
        return "image_undecodable"
    except Exception:  # noqa: BLE001 - Pillow raises many kinds on a bad file: the row's reject
        return "image_undecodable"
    ext = IMAGE_FORMATS.get(fmt or "", (fmt or "bin").lower())
    return {
        "sha256": hashlib.sha256(data).hexdigest(),
        "path": path,
        "width": int(width),
        "height": int(height),
        "ext": ext,
    }


_strict_lock = threading.Lock()
_strict_depth = 0
_strict_saved = False


@contextmanager
def _strict_decoding():
    """Pillow's ImageFile.LOAD_TRUNCATED_IMAGES off while inside (restored by the last thread to
    leave): a truncated image must fail the check, whatever the process set."""
    from PIL import ImageFile

    global _strict_depth, _strict_saved
    with _strict_lock:
        if _strict_depth == 0:
            _strict_saved = ImageFile.LOAD_TRUNCATED_IMAGES
            ImageFile.LOAD_TRUNCATED_IMAGES = False
        _strict_depth += 1
    try:
        yield
    finally:
        with _strict_lock:
            _strict_depth -= 1
            if _strict_depth == 0:
                ImageFile.LOAD_TRUNCATED_IMAGES = _strict_saved


def qa_text(qa: list[dict] | None, verified_only: bool) -> str:
    """QA pairs as "Q: .. A: .." lines (only verified answers when asked)."""
    lines = []
    for q in qa or []:
        if not q or not q.get("question") or q.get("answer") is None:
            continue
        if verified_only and q.get("verified") is not True:
            continue
        lines.append(f"Q: {q['question']} A: {q['answer']}")
    return "\n".join(lines)


def _select_sql(unit: src_mod.ReadUnit, has_consent_column: bool, opted_out: bool = False) -> str:
    """Like the text read path: consent first in `allowed`, the user's predicate on top.

    With `opted_out` (for checks), every row instead, flagged `__out` when its own consent is
    not given (the complement of `allowed`), rows the producing stage dropped included; else
    those rows are left out (`sources.upstream_kept_sql`; `_dropped_sql` finds them)."""
    if opted_out:
        consent = f"coalesce(NOT ({src_mod.consent_sql(unit, has_consent_column)}), true)"
        allowed = f"SELECT *, {consent} AS __out FROM read_parquet(?, file_row_number=true, hive_partitioning=false)"
    else:  # the one consent rule (flag, ledger), NaN read as NULL (sources.allowed_rows_sql)
        allowed = src_mod.allowed_rows_sql(unit, has_consent_column)
    group = f"CAST({quote_ident(unit.split_by)} AS VARCHAR)" if unit.split_by else "'all'"
    cases = " ".join(f"WHEN ({normalize_predicate(w)}) THEN {float(t)!r}" for w, t in unit.repeat)
    repeat = f"CASE {cases} ELSE 1.0 END" if cases else "1.0"
    where = src_mod.unit_where_sql(unit)
    kept = None if opted_out else src_mod.upstream_kept_sql(unit)
    if kept:  # rows the producing stage dropped: `_dropped_sql` records them instead
        where = f"{where}AND ({kept}) " if where else f"WHERE ({kept}) "
    return (
        f"WITH allowed AS ({allowed}) SELECT allowed.*, {group} AS __grp, {repeat} AS __rep, "
        f"file_row_number AS __row FROM allowed {where}"
    )


ROW_ID_COLUMNS = ("id", "pair_id", "doc_id")  # a reject's `id`: the first the row has


def _dropped_sql(unit: src_mod.ReadUnit, has_consent_column: bool) -> str | None:
    """The rows `_select_sql` offers but for the producing stage's own decision (consented,
    matching `where`, not contaminated, dropped upstream: `sources.upstream_kept_sql`), with
    their row number, id columns, and per rule column its value and whether it dropped the row
    (`__dropped_<i>`); None when no rule applies."""
    kept = src_mod.upstream_kept_sql(unit)
    if not kept:
        return None
    names = src_mod._schema(unit.file).names
    rules = src_mod.upstream_kept_columns(unit)
    cols = [c for c in ROW_ID_COLUMNS if c in names] + rules
    select = [f"CAST({quote_ident(c)} AS VARCHAR) AS {quote_ident(c)}" for c in cols]
    select += [
        f"NOT coalesce(({src_mod.UPSTREAM_KEPT[c].format(col=quote_ident(c))}), false) "
        f"AS __dropped_{i}"
        for i, c in enumerate(rules)
    ]
    where = src_mod.unit_where_sql(unit)
    dropped = f"NOT coalesce(({kept}), false)"
    return (
        f"WITH allowed AS ({src_mod.allowed_rows_sql(unit, has_consent_column)}) "
        f"SELECT file_row_number AS __row, {', '.join(select)} FROM allowed "
        + (f"{where}AND {dropped}" if where else f"WHERE {dropped}")
    )


def _dropped_rejects(unit: src_mod.ReadUnit, rows: list[dict]) -> list[dict[str, Any]]:
    """`upstream_dropped` rejects of rows `_dropped_sql` found, the detail naming the columns
    and values that dropped them (e.g. drop_reason = duplicate)."""
    rules = src_mod.upstream_kept_columns(unit)
    return [
        {
            "bucket": unit.bucket,
            "source": unit.source,
            "file": unit.file,
            "row": int(row["__row"]),
            "id": next((str(row[c]) for c in ROW_ID_COLUMNS if row.get(c)), ""),
            "reason": src_mod.UPSTREAM_DROPPED,
            "detail": "; ".join(
                f"{c} = {'NULL' if row[c] is None else row[c]}"
                for i, c in enumerate(rules)
                if row[f"__dropped_{i}"]
            ),
        }
        for row in rows
    ]


def _resolve(path: str | None, base: Path) -> str | None:
    return resolve_image(path, base)


def _row_parts(
    unit: src_mod.ReadUnit,
    row: dict,
    pairs: PairIndex | None,
    consent_column: bool,
    pairs_out: list[str] | None = None,
) -> tuple[list[tuple[str, Any]], list[tuple[str, str]]]:
    """A row as parts [("text", str) | ("image", (path, sha))] and image-level rejects
    [(reason, detail)]. A row-level reject is returned as parts == [] with its reason.

    Given a `pairs_out` list, an opted-out pair's image is used anyway and its id appended
    there (checks build the documents that must not enter this way)."""
    kind, base = unit.kind, Path(unit.file).parent
    rid = row.get("id") or row.get("pair_id") or row.get("doc_id")

    def by_pair(pid: str | None) -> tuple[tuple[str, str | None] | None, str | None]:
        pair = pairs.get(pid) if pairs is not None else None
        if pair is None:
            return None, "pair_not_found"
        if pair.bad is not None:
            return None, pair.bad.reason
        if not pair.allowed and pairs_out is not None:
            pairs_out.append(str(pid))
        elif not pair.allowed:
            return None, "image_opted_out"
        if not pair.path:
            return None, "image_missing"
        return (pair.path, pair.sha256), None

    if kind == "interleaved":
        parts: list[tuple[str, Any]] = []
        dropped: list[tuple[str, str]] = []
        for i, block in enumerate(row.get("blocks") or []):
            if block.get("kind") == "image":
                ref, why = by_pair(block.get("pair_id"))
                if ref is None:
                    dropped.append((why, f"block {i} pair {block.get('pair_id')}"))
                else:
                    parts.append(("image", ref))
            elif block.get("text"):
                parts.append(("text", block["text"]))
        return parts, dropped

    if kind == "pairs":
        sha = row.get("stored_sha256") or row.get("image_sha256")  # blurred: the stored file's
        ref = (_resolve(row.get("image_path"), base), sha)
        text = row.get(unit.text_column)
    elif kind == "domain_images":
        ref, why = by_pair(row.get("id"))
        if ref is None:
            return [], [(why, f"pair {row.get('id')}")]
        text = row.get(unit.text_column)
    elif kind == "charts":
        ref = (_resolve(row.get("image_path"), base), None)
        text = qa_text(row.get("qa"), QA_VERIFIED_ONLY["charts"])
    elif kind == "tables":
        ref = (_resolve(row.get("image_path"), base), None)
        qa = qa_text(row.get("qa"), QA_VERIFIED_ONLY["tables"])
        text = "\n\n".join(t for t in (row.get("markdown"), qa) if t)
    elif kind in ("captions", "domain_qa"):
        pid = row.get("pair_id")
        pair_ref, why = by_pair(pid) if pid is not None else (None, "pair_not_found")
        if why == "image_opted_out" or (kind == "captions" and not consent_column and why):
            # the pair's consent is the row's own (captions carry none of their own)
            return [], [(why, f"pair {pid}")]
        if pair_ref is not None:
            ref = pair_ref  # the pair's image, in the pairs dataset it belongs to
        else:  # no pair: only an image of the row's own dataset
            own = _resolve(row.get("image_path"), base)
            ref = (own, row.get("image_sha256")) if own else None
        if ref is None:
            return [], [(why or "image_missing", f"pair {pid}")]
        if kind == "captions":
            text = row.get("caption")
        else:
            text = qa_text(row.get("qa"), QA_VERIFIED_ONLY["domain_qa"])
    else:  # pragma: no cover - the spec's Literal admits no other kind
        raise ValueError(f"unknown source kind {kind!r}")
    if not ref[0]:
        return [], [("image_missing", f"row {rid} has no image_path")]
    if not text:
        return [], [("no_text", f"row {rid} has no {'verified QA' if kind != 'pairs' else 'text'}")]
    return [("image", ref), ("text", text)], []


def read_image_unit_batches(
    unit: src_mod.ReadUnit,
    tokenizer,
    image_id: int,
    rows_per_batch: int = 512,
    *,
    opted_out: bool = False,
):
    """Stream an image unit as tokenized `DocBatch`es (images and rejects attached).

    With `opted_out`, the documents that must NOT enter instead, built exactly as entering ones
    are: rows whose own consent is not given, and rows of one-image kinds whose image's pair is
    opted out (an interleaved document only loses such an image, which the image store check
    covers). Rejects are not recorded then."""
    import duckdb
    import pyarrow.parquet as pq

    # a near miss (`Training_Allowed`) counts as the column: flag_sql refuses it by name
    consent_column = src_mod.has_flag_column(pq.read_schema(unit.file))
    if not consent_column and unit.kind not in NO_CONSENT_COLUMN_KINDS:
        raise src_mod.SpecError(
            f"buckets.{unit.bucket}.sources[{unit.source}]: {unit.file} has no boolean "
            f"training_allowed column; a {unit.kind!r} source must carry it"
        )
    pairs = PairIndex(unit.pairs, unit.consent) if unit.pairs else None
    check = ImageCheck()
    con = duckdb.connect(config={"preserve_insertion_order": True, "threads": 1})
    scratch = tempfile.TemporaryDirectory(prefix="settled-pairs-")
    try:
        source = _settled_source(unit, Path(scratch.name))
        try:
            sql = _select_sql(unit, consent_column, opted_out)
            reader = con.sql(sql, params=[source]).to_arrow_reader(rows_per_batch)
        except duckdb.Error as exc:
            raise src_mod._where_error(unit, exc) from None
        for batch in reader:
            if batch.num_rows:
                yield _tokenize_rows(
                    unit,
                    batch.to_pylist(),
                    pairs,
                    check,
                    consent_column,
                    tokenizer,
                    image_id,
                    opted_out,
                )
        dropped = None if opted_out else _dropped_sql(unit, consent_column)
        if dropped:  # the rows the producing stage dropped, after the unit's documents
            try:
                reader = con.sql(dropped, params=[source]).to_arrow_reader(rows_per_batch)
            except duckdb.Error as exc:
                raise src_mod._where_error(unit, exc) from None
            for batch in reader:
                if batch.num_rows:
                    yield _empty_batch(_dropped_rejects(unit, batch.to_pylist()))
    finally:
        con.close()
        scratch.cleanup()


def _settled_source(unit: src_mod.ReadUnit, scratch: Path) -> str:
    """The file a unit's rows are read from: its own, or, for a `pairs` unit whose rows readers
    take otherwise than the file says (`common.pairs.settle` over the build the file belongs
    to: an allowed duplicate of an image whose kept row is opted out kept instead, an image
    kept in two shards kept once), a copy in `scratch` with drop_reason and duplicate_of
    settled. The copy has the file's schema and rows in its order, so the consent rule, the
    source's predicate, row numbers and image paths (relative to `unit.file`) are the file's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if unit.kind != "pairs":
        return unit.file
    changes = _pairs_changes(unit)
    if not changes:
        return unit.file
    table = pq.read_table(unit.file)
    for col, at in (("drop_reason", 0), ("duplicate_of", 1)):
        i = table.schema.get_field_index(col)
        if i < 0 or not pa.types.is_string(table.schema.field(i).type):
            continue
        values = table.column(i).to_pylist()
        for row, change in changes.items():
            values[row] = change[at]
        table = table.set_column(i, table.schema.field(i), pa.array(values, pa.string()))
    copy = scratch / "pairs.parquet"
    pq.write_table(table, copy)
    return str(copy)


def _pairs_changes(unit: src_mod.ReadUnit) -> dict[int, tuple[str | None, str | None]]:
    """{row number: (drop_reason, duplicate_of)} of a pairs unit's rows that readers take
    otherwise than its file says (`common.pairs.settle`), under the unit's consent ledgers."""
    from common.pairs import build_files

    own = Path(unit.file).resolve()
    files = [f.resolve() for f in build_files(unit.file)]
    if own not in files:
        files = [own]
    key = tuple((str(f), *_stamp(f)) for f in files)
    return _settled_build(key, tuple(unit.consent)).get(str(own), {})


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=8)
def _settled_build(
    files: tuple[tuple[str, int, int], ...], consent: tuple[str, ...]
) -> dict[str, dict[int, tuple[str | None, str | None]]]:
    """`common.pairs.settle` over one build's pairs files (each unit of a build asks once)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from common.consent import LEDGER_ID_KEYS, LEDGER_URL_KEYS, Consent
    from common.pairs import SETTLE_COLUMNS, settle

    paths = [Path(f) for f, *_ in files]
    wanted = dict.fromkeys((*SETTLE_COLUMNS, *LEDGER_ID_KEYS, *LEDGER_URL_KEYS))
    tables = []
    for f in paths:
        try:
            names = set(pq.read_schema(f).names)
            cols = [c for c in wanted if c in names]
            # not a pairs file of a build (no drop_reason): nothing to settle
            rows = pq.read_table(f, columns=cols).to_pylist() if "drop_reason" in names else []
        except (OSError, pa.ArrowException):
            rows = []  # its own unit's read names what is wrong with it
        tables.append(rows)
    changes = settle(paths, tables, Consent.load(None, consent))
    out: dict[str, dict[int, tuple[str | None, str | None]]] = {}
    for (fi, row), change in changes.items():
        out.setdefault(str(paths[fi]), {})[row] = change
    return out


def _tokenize_rows(
    unit, rows, pairs, check, consent_column, tokenizer, image_id, opted_out=False
) -> src_mod.DocBatch:
    k = unit.image_tokens
    docs: list[list[tuple[str, Any]]] = []
    keep_rows: list[dict] = []
    rejects: list[dict[str, Any]] = []

    def reject(row: dict, reason: str, detail: str) -> None:
        rejects.append(
            {
                "bucket": unit.bucket,
                "source": unit.source,
                "file": unit.file,
                "row": int(row["__row"]),
                "id": str(row.get("id") or row.get("pair_id") or row.get("doc_id") or ""),
                "reason": reason,
                "detail": detail,
            }
        )

    for row in rows:
        pairs_out: list[str] | None = [] if opted_out else None
        try:
            parts, problems = _row_parts(unit, row, pairs, consent_column, pairs_out)
        except BadImagePath as exc:  # a path out of its dataset: the row's recorded reject
            parts, problems = [], [(exc.reason, exc.detail)]
        if opted_out:
            out = row["__out"] or (bool(pairs_out) and unit.kind != "interleaved")
            if not out or problems:
                continue
        checked: list[tuple[str, Any]] = []
        for kind, value in parts:
            if kind == "image":
                info = check(*value)
                if isinstance(info, str):
                    problems.append((info, value[0]))
                    if unit.kind != "interleaved":  # the image is the row: it cannot enter
                        checked = []
                        break
                    continue
                checked.append(("image", info))
            else:
                checked.append((kind, value))
        for reason, detail in problems:
            reject(row, reason, detail)
        if not checked or (unit.kind != "interleaved" and problems):
            continue
        docs.append(checked)
        keep_rows.append(row)

    texts = [v for parts in docs for kind, v in parts if kind == "text"]
    tokens, lengths = encode_texts(tokenizer, texts)
    text_ends = np.cumsum(lengths)
    out_tokens: list[np.ndarray] = []
    doc_lengths, img_counts, images = [], [], []
    block = np.full(k, image_id, dtype=np.uint32)
    sep = encode_texts(tokenizer, ["\n\n"])[0]
    t = 0
    for parts in docs:
        pieces, n_img, prev_text = [], 0, False
        for kind, value in parts:
            if kind == "image":
                pieces.append(block)
                images.append(value)
                n_img += 1
                prev_text = False
            else:
                ids = tokens[text_ends[t] - lengths[t] : text_ends[t]]
                t += 1
                ids = ids[ids != image_id]  # a literal "<|image|>" in text is no image slot
                if prev_text:
                    pieces.append(sep)
                pieces.append(ids)
                prev_text = True
        doc = np.concatenate(pieces) if pieces else np.zeros(0, np.uint32)
        out_tokens.append(doc.astype(np.uint32, copy=False))
        doc_lengths.append(len(doc))
        img_counts.append(n_img)
    return src_mod.DocBatch(
        tokens=np.concatenate(out_tokens) if out_tokens else np.zeros(0, np.uint32),
        lengths=np.array(doc_lengths, dtype=np.int64),
        groups=[str(r["__grp"]) if r["__grp"] is not None else "null" for r in keep_rows],
        repeat=np.array([float(r["__rep"]) for r in keep_rows], dtype=np.float64),
        rows=np.array([int(r["__row"]) for r in keep_rows], dtype=np.int64),
        img_counts=np.array(img_counts, dtype=np.int64),
        images=images,
        rejects=rejects,
    )


def _empty_batch(rejects: list[dict]) -> src_mod.DocBatch:
    """A batch of no document carrying only rejects."""
    return src_mod.DocBatch(
        tokens=np.zeros(0, np.uint32),
        lengths=np.zeros(0, np.int64),
        groups=[],
        repeat=np.zeros(0, np.float64),
        rows=np.zeros(0, np.int64),
        img_counts=np.zeros(0, np.int64),
        images=[],
        rejects=rejects,
    )


def block_starts(tokens: np.ndarray, image_id: int, image_tokens: int) -> np.ndarray:
    """Start offsets of the image blocks in one document's tokens (blocks are whole runs of
    `image_tokens` ids; a run of two adjacent blocks holds two starts)."""
    idx = np.flatnonzero(np.asarray(tokens) == image_id)
    if len(idx) % image_tokens:
        raise ValueError(
            f"{len(idx)} image ids is not a whole number of {image_tokens}-token blocks; "
            "the document was cut inside an image block (a builder bug)"
        )
    return idx[::image_tokens]
