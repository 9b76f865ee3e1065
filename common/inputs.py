"""Checked reading of a stage's input files: a bad file is one line naming the file, the field
and the fix (`InputError`, a ValueError: the CLI prints it and exits 2).

`read_parquet(path, required={...}, optional={...})` opens the file (missing, empty, truncated or
not Parquet: one line), checks that the required columns are there and that every named column
has the kind of values the stage reads ('string', 'int', 'float', 'bool', 'list', 'binary',
'any'), reads them and checks that text columns hold valid UTF-8. `read_jsonl` reads JSON lines
and returns the bad lines as rejects with their reason, so one bad line never ends a run.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

KINDS = ("string", "int", "float", "bool", "list", "binary", "any")


class InputError(ValueError):
    """An input file the stage can not read: the message names the file, the field and the fix."""


def _kind_ok(kind: str, t: pa.DataType) -> bool:
    if kind == "any" or pa.types.is_null(t):  # an all-null column reads as null: no values
        return True
    if pa.types.is_dictionary(t):
        t = t.value_type
    return {
        "string": pa.types.is_string(t) or pa.types.is_large_string(t),
        "int": pa.types.is_integer(t),
        "float": pa.types.is_floating(t) or pa.types.is_integer(t),
        "bool": pa.types.is_boolean(t),
        "list": pa.types.is_list(t) or pa.types.is_large_list(t),
        "binary": pa.types.is_binary(t) or pa.types.is_large_binary(t),
    }[kind]


def url_host(url: object) -> str:
    """The lowercase host of a URL for counting and sharding; '' when it has none or does not
    parse ('http://[::1' raises in urlsplit, a non-string value): never an exception."""
    from urllib.parse import urlsplit

    try:
        return (urlsplit(url).hostname or "") if isinstance(url, str) else ""
    except ValueError:
        return ""


def url_netloc(url: object) -> str:
    """The lowercase host[:port] of a URL as written; '' when it does not parse."""
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).netloc.lower() if isinstance(url, str) else ""
    except ValueError:
        return ""


# An image file larger than this is a reject (`image_too_large`), never read whole.
MAX_IMAGE_BYTES = 32 * 2**20


class BadImagePath(ValueError):
    """An image path that may not enter a mixture: (reject reason, detail)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def resolve_image(path: object, base: Path) -> str | None:
    """The file an image path names, inside its dataset `base` (the directory of the Parquet
    file that names it); None when there is none. BadImagePath (`image_path_outside`) for an
    absolute path, a `..` that leaves `base` or a symlink that points out of it, and
    (`image_path_invalid`) for a value that is not a path: no local file outside the dataset
    (`/dev/zero`, `/etc/passwd`, `~/.ssh/...`) can enter a mixture."""
    if path is None or path == "":
        return None
    if not isinstance(path, str) or "\x00" in path:
        raise BadImagePath("image_path_invalid", f"image_path {str(path)[:200]!r} is not a path")
    if Path(path).is_absolute() or path.startswith("~"):
        raise BadImagePath(
            "image_path_outside", f"{path[:200]!r} is absolute; paths are relative to {base}"
        )
    root = Path(os.path.realpath(base))
    full = Path(os.path.realpath(base / path))
    if full != root and root not in full.parents:
        raise BadImagePath(
            "image_path_outside", f"{path[:200]!r} resolves to {full}, outside {root}"
        )
    return str(full)


def read_regular_file(path: str | Path, max_bytes: int) -> bytes | None:
    """The bytes of a regular file of at most `max_bytes`; None for anything else (missing, a
    directory, a FIFO or device such as /dev/zero, which would block or never end, too large)."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= max_bytes else None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def read_schema(path: str | Path, fix: str = "") -> pa.Schema:
    """The schema of a Parquet file; InputError (one line) when it is missing or not Parquet."""
    path = Path(path)
    fix = fix or "re-run the stage that writes it"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; {fix}")
    if path.is_dir():
        raise InputError(f"{path}: a directory, not a Parquet file; {fix}")
    if path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty (0 bytes), not Parquet; {fix}")
    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{path}: not a readable Parquet file (truncated or another format: "
            f"{_one_line(exc)}); {fix}"
        ) from None


def check_columns(
    path: str | Path,
    schema: pa.Schema,
    required: Mapping[str, str] | Iterable[str] = (),
    optional: Mapping[str, str] | None = None,
    fix: str = "",
) -> None:
    """InputError naming the first missing required column, or a column whose values are not
    of the kind the stage reads ('text' is int64, expected string)."""
    fix = fix or "re-run the stage that writes it"
    req = dict(required) if isinstance(required, Mapping) else dict.fromkeys(required, "any")
    names = set(schema.names)
    missing = [c for c in req if c not in names]
    if missing:
        raise InputError(
            f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"(needs {', '.join(req)}); {fix}"
        )
    for name, kind in {**(optional or {}), **req}.items():
        if name in names and not _kind_ok(kind, schema.field(name).type):
            raise InputError(
                f"{path}: column {name} holds {schema.field(name).type}, expected {kind} "
                f"values; {fix}"
            )


def check_utf8(path: str | Path, table: pa.Table, fix: str = "", offset: int = 0) -> None:
    """InputError naming the first text column (and row) that holds bytes that are not UTF-8."""
    fix = fix or "write text columns as UTF-8"
    for name in table.column_names:
        col = table.column(name)
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            continue
        try:
            col.validate(full=True)
        except pa.ArrowInvalid:
            row = offset
            for chunk in col.chunks:
                for i, v in enumerate(chunk.cast(pa.binary()).to_pylist()):
                    if v is not None:
                        try:
                            v.decode("utf-8")
                        except UnicodeDecodeError:
                            raise InputError(
                                f"{path}: column {name}, row {row + i}: invalid UTF-8; {fix}"
                            ) from None
                row += len(chunk)
            raise InputError(f"{path}: column {name}: invalid UTF-8; {fix}") from None


def invalid_utf8_rows(path: str | Path, column: str, batch_size: int = 1024) -> list[int]:
    """Rows (0-based) whose `column` (a string column) holds bytes that are not UTF-8, read batch
    by batch; for a stage that records such rows as rejects instead of refusing the file."""
    bad: list[int] = []
    with pq.ParquetFile(path) as pf:
        row = 0
        for batch in pf.iter_batches(batch_size=batch_size, columns=[column]):
            col = batch.column(0)
            try:
                col.validate(full=True)
            except pa.ArrowInvalid:
                for i, v in enumerate(col.cast(pa.binary()).to_pylist()):
                    if v is not None:
                        try:
                            v.decode("utf-8")
                        except UnicodeDecodeError:
                            bad.append(row + i)
            row += batch.num_rows
    return bad


def utf8_replaced(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` with every string value that is not UTF-8 decoded with U+FFFD for its bad bytes
    (the caller has recorded those rows; this only lets them be read as Python strings)."""
    cols = []
    for col in batch.columns:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            try:
                col.validate(full=True)
            except pa.ArrowInvalid:
                raw = col.cast(
                    pa.large_binary() if pa.types.is_large_string(col.type) else pa.binary()
                )
                vals = [
                    None if v is None else v.decode("utf-8", "replace") for v in raw.to_pylist()
                ]
                col = pa.array(vals, col.type)
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=batch.schema)


def check_file(
    path: str | Path,
    required: Mapping[str, str] | Iterable[str] = (),
    optional: Mapping[str, str] | None = None,
    fix: str = "",
    utf8: Iterable[str] | None = None,
) -> pa.Schema:
    """Check a Parquet input without holding it: readable, the columns there and of their kind,
    the text columns `utf8` (default: every string column) valid UTF-8 batch by batch, and every
    row group readable (a truncated file). Returns its schema."""
    schema = read_schema(path, fix)
    check_columns(path, schema, required, optional, fix)
    text = [
        f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]
    cols = [c for c in utf8 if c in text] if utf8 is not None else text
    if not schema.names:
        return schema
    try:
        with pq.ParquetFile(path) as pf:
            row = 0  # small batches: a text column of long documents stays a few MB at once
            for batch in pf.iter_batches(batch_size=1024, columns=cols or [schema.names[0]]):
                check_utf8(path, pa.Table.from_batches([batch]), "", offset=row)
                row += batch.num_rows
    except InputError:
        raise
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{path}: not a readable Parquet file ({_one_line(exc)}); "
            f"{fix or 're-run the stage that writes it'}"
        ) from None
    return schema


def read_parquet(
    path: str | Path,
    columns: Iterable[str] | None = None,
    *,
    required: Mapping[str, str] | Iterable[str] = (),
    optional: Mapping[str, str] | None = None,
    fix: str = "",
) -> pa.Table:
    """Read `columns` (default: all) of a Parquet input, checked; one-line InputError otherwise."""
    schema = read_schema(path, fix)
    check_columns(path, schema, required, optional, fix)
    cols = None if columns is None else [c for c in columns if c in schema.names]
    try:
        table = pq.read_table(path, columns=cols)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{path}: not a readable Parquet file ({_one_line(exc)}); "
            f"{fix or 're-run the stage that writes it'}"
        ) from None
    check_utf8(path, table)
    return table


def read_rows(path: str | Path, columns: Iterable[str] | None = None, **kw: Any) -> list[dict]:
    """`read_parquet(...).to_pylist()`."""
    return read_parquet(path, columns, **kw).to_pylist()


# A \uD800-\uDFFF escape in a JSON line: json.loads takes a lone one (JSON allows it), but it
# is no Unicode character and no UTF-8 writer (Parquet, a tokenizer) takes it; a cut through an
# emoji's UTF-16 pair leaves one. Only lines holding such an escape need `lone_surrogate`.
LONE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(node: object, path: str = "") -> str | None:
    """Where a value read from JSON holds a lone UTF-16 surrogate (a dotted path to the string),
    said in one line; None if nowhere."""
    if isinstance(node, str):
        m = _SURROGATE.search(node)
        if m is None:
            return None
        where = f"field {path!r}" if path else "a string"
        return (
            f"{where} holds a lone UTF-16 surrogate \\u{ord(m.group()):04x} at character "
            f"{m.start()} (not Unicode text; re-export it as valid UTF-8)"
        )
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return None
    for key, value in items:
        bad = lone_surrogate(value, f"{path}.{key}" if path else str(key))
        if bad:
            return bad
    return None


def read_jsonl(path: str | Path, fix: str = "") -> tuple[list[dict], list[dict]]:
    """(rows, rejects) of a JSON-lines file: each line a JSON object; a line that is not (bad
    JSON, not an object, invalid UTF-8) is a reject {'line', 'reason'}, and the rest is read."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; {fix or 'give a JSON-lines file'}")
    rows: list[dict] = []
    rejects: list[dict] = []
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                rejects.append({"line": n, "reason": f"invalid UTF-8 ({exc.reason})"})
                continue
            except json.JSONDecodeError as exc:
                rejects.append({"line": n, "reason": f"not JSON ({exc.msg})"})
                continue
            if not isinstance(value, dict):
                rejects.append(
                    {"line": n, "reason": f"a JSON {type(value).__name__}, not an object"}
                )
                continue
            bad = lone_surrogate(value) if LONE_ESCAPE.search(raw) else None
            if bad:
                rejects.append({"line": n, "reason": bad})
                continue
            rows.append(value)
    return rows, rejects
