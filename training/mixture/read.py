"""Reading a mixture's sources, whatever their kind: text rows (training/mixture/sources.py) or
image rows (training/mixture/images.py) become tokenized document batches; the spec's data
checks. The builder, the Beam pipeline and the CLI read through here."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from training.mixture.images import _select_sql as image_sql
from training.mixture.images import read_image_unit_batches
from training.mixture.sources import (
    READ_BATCH_ROWS,
    DocBatch,
    ReadUnit,
    _schema,
    _select_sql,
    _where_error,
    bad_utf8_rows,
    flag_sql,
    has_flag_column,
    plan_units,
    read_unit_batches,
    readable_file,
)
from training.mixture.spec import MixtureSpec, SpecError
from training.tokenizer import encode_texts, flag_type_problem

# Columns an image kind reads when its file has them, by kind (common.inputs).
IMAGE_COLUMNS = {
    "image_path": "string",
    "image_sha256": "string",
    "stored_sha256": "string",
    "pair_id": "string",
    "caption": "string",
    "markdown": "string",
    "qa": "list",
    "blocks": "list",
}


def check_unit_file(unit: ReadUnit) -> None:
    """One line naming the unit's file and the column when the file cannot be read as this
    source (missing, empty, truncated, not Parquet, the text column missing or not text, a
    column of the wrong kind, invalid UTF-8 in an image kind's file, a training_allowed column
    that is not boolean in a required source's file): a bad file never reaches the tokenizer.
    A text file's rows of invalid UTF-8 are its rejects instead (`sources.read_unit_batches`)."""
    from common.inputs import InputError, check_file

    fix = (
        f"fix or rebuild it (buckets.{unit.bucket}.sources[{unit.source}] of the mixture spec, "
        f"kind {unit.kind!r})"
    )
    try:
        schema = _schema(unit.file)
        if has_flag_column(schema):  # a misspelt or second flag column, named before the rest
            flag_sql(schema, unit.file)
        bad_flag = flag_type_problem(unit.file)
        if bad_flag and not unit.optional:  # no row of it consented: one file of a glob too
            raise SpecError(f"buckets.{unit.bucket}.sources[{unit.source}]: {bad_flag}")
        if unit.kind == "text":
            check_file(unit.file, {unit.text_column: "string"}, fix=fix, utf8=[])
            bad_utf8_rows(unit.file)  # read once here: the build reads its answer
        else:
            optional = dict(IMAGE_COLUMNS)
            if unit.text_column not in ("caption", "text"):
                optional[unit.text_column] = "string"
            check_file(unit.file, {}, optional, fix=fix)
    except InputError as exc:  # a source the spec names that cannot be read as it says
        raise SpecError(str(exc)) from None


def check_unit(unit: ReadUnit) -> int:
    """Validate a unit's columns and predicates against its file; return its training-allowed row count."""
    import duckdb

    check_unit_file(unit)
    sql = _select_sql(unit)
    if unit.kind != "text":
        sql = image_sql(unit, has_flag_column(_schema(unit.file)))
    con = duckdb.connect()
    try:
        with readable_file(unit.file) if unit.kind == "text" else nullcontext(unit.file) as path:
            return int(con.execute(f"SELECT count(*) FROM ({sql})", [path]).fetchone()[0])
    except duckdb.Error as exc:
        raise _where_error(unit, exc) from None
    finally:
        con.close()


def flag_problems(units: list[ReadUnit]) -> dict[str, list[dict]]:
    """Files of optional sources whose training_allowed is not boolean, so no row of them gives
    consent (a required source's is an error, `check_unit_file`), keyed 'bucket/source index':
    `file`, `rows`, `problem` (the one line naming the column, its type and the fix)."""
    import pyarrow.parquet as pq

    out: dict[str, list[dict]] = {}
    for unit in units:
        bad = unit.optional and flag_type_problem(unit.file)
        if bad:
            rows = pq.ParquetFile(unit.file).metadata.num_rows
            out.setdefault(f"{unit.bucket}/{unit.source}", []).append(
                {"file": unit.file, "rows": rows, "problem": bad}
            )
    return out


def tokenize_unit_batches(
    unit: ReadUnit, tokenizer, rows_per_batch: int = READ_BATCH_ROWS
) -> Iterator[DocBatch]:
    """Read and tokenize one unit a batch of rows at a time (bounded memory for any file size;
    `rows_per_batch` text rows at once, the builder's memory budget may lower it).

    Image kinds go through training/mixture/images.py. A document's literal special-token
    strings ("<|endoftext|>", "<|pad|>", "<|image|>", ...) are encoded as ordinary text
    (`training.tokenizer.encode_texts`): only the builder puts boundary, pad and image ids.
    """
    if unit.kind != "text":
        image_id = tokenizer.token_to_id("<|image|>") if unit.image_tokens else None
        yield from read_image_unit_batches(unit, tokenizer, image_id)
        return
    rejects: list[dict] = []
    for texts, groups, rep, rows, archives in read_unit_batches(unit, rows_per_batch, rejects):
        tokens, lengths = encode_texts(tokenizer, texts, min(1024, rows_per_batch))
        has_archive = any(a is not None for a in archives)
        yield DocBatch(
            tokens, lengths, groups, rep, rows, archives=archives if has_archive else None
        )
    if rejects:  # the unit's rows that are no document, after its documents
        yield DocBatch(
            np.zeros(0, np.uint32),
            np.zeros(0, np.int64),
            [],
            np.zeros(0, np.float64),
            np.zeros(0, np.int64),
            rejects=rejects,
        )


def tokenize_unit(unit: ReadUnit, tokenizer) -> DocBatch:
    """Read and tokenize one whole unit into one batch (the Beam workers' spill unit)."""
    return DocBatch.concat(list(tokenize_unit_batches(unit, tokenizer)))


def check_spec_data(
    spec: MixtureSpec, spec_dir: Path, lake_root: Path | None = None
) -> dict[str, int]:
    """Data checks: every required source exists, its columns and `where` are valid, and it offers rows."""
    counts: dict[str, int] = {}
    units = plan_units(spec, spec_dir, lake_root)
    for unit in units:
        key = f"buckets.{unit.bucket}.sources[{unit.source}]"
        counts[key] = counts.get(key, 0) + check_unit(unit)
    for name, bucket in spec.buckets.items():
        for i, src in enumerate(bucket.sources):
            key = f"buckets.{name}.sources[{i}]"
            counts.setdefault(key, 0)
            if counts[key] == 0 and not src.optional:
                for unit in units:
                    bad = (unit.bucket, unit.source) == (name, i) and flag_type_problem(unit.file)
                    if bad:
                        raise SpecError(f"{key}: {bad}")
                raise SpecError(
                    f"{key}: {src.path} offers no rows with training_allowed = true"
                    + (f" matching where {src.where!r}" if src.where else "")
                    + "; loosen the predicate, fix the path, or mark the source `optional: true`"
                )
    return counts
