"""Reading mixture sources: the one read path, where the consent rule is applied.

Work is cut into `ReadUnit`s (one Parquet file of one source of one bucket), in a fixed order, so
the in-process builder and the Beam pipeline tokenize the same units and assemble them identically.
"""

from __future__ import annotations

import glob
import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from common.consent import LEDGER_ID_KEYS, LEDGER_URL_KEYS
from training.mixture.spec import (
    MixtureSpec,
    SpecError,
    normalize_predicate,
    quote_ident,
    resolve_path,
)

if TYPE_CHECKING:
    import pyarrow as pa

ALL_GROUP = "all"


@dataclass(frozen=True)
class ReadUnit:
    """One Parquet file of one source of one bucket."""

    bucket: str
    source: int
    file: str
    where: str | None
    text_column: str
    split_by: str | None
    repeat: tuple[tuple[str, float], ...]
    consent: tuple[str, ...] = ()  # consent ledger files honoured (see crawlers/consent.py)
    kind: str = "text"  # how rows become documents (training/mixture/images.py for image kinds)
    pairs: tuple[str, ...] = ()  # pairs.parquet files resolving pair ids to images
    image_tokens: int = 0  # the mixture's tokens per image (0: a text-only mixture)
    contaminated: str = "exclude"  # the source's `contaminated:` (SourceSpec): exclude or include
    optional: bool = False  # the source's `optional:` (it may be missing, empty or unconsented)
    dropped: str = "exclude"  # the source's `dropped:`: exclude (UPSTREAM_KEPT) or include


@dataclass
class DocBatch:
    """A tokenized unit: concatenated tokens, per-document lengths, group names, repeat weights, row ids.

    Image units add, per document, how many images its blocks stand for (`img_counts`), the
    images themselves in block order (`images`: sha256, path, width, height, ext) and the rows
    or images that could not enter (`rejects`, each with its reason).
    """

    tokens: np.ndarray
    lengths: np.ndarray
    groups: list[str]
    repeat: np.ndarray
    rows: np.ndarray
    img_counts: np.ndarray | None = None
    images: list[dict] = field(default_factory=list)
    rejects: list[dict] = field(default_factory=list)
    # per document, the archive it came from (the row's `source_file`; None: the file has none)
    archives: list[str | None] | None = None

    def save(self, path: str | Path) -> None:
        """Write to .npz (used to hand units between Beam workers and the assembler)."""
        extra = {}
        if self.img_counts is not None or self.rejects:
            counts = self.img_counts
            extra = {
                "img_counts": np.zeros(len(self.lengths), np.int64) if counts is None else counts,
                "images": np.array([json.dumps(i) for i in self.images], dtype=object),
                "rejects": np.array([json.dumps(r) for r in self.rejects], dtype=object),
            }
        if self.archives is not None:
            extra["archives"] = np.array(self.archives, dtype=object)
        np.savez(
            path,
            tokens=self.tokens,
            lengths=self.lengths,
            groups=np.array(self.groups, dtype=object),
            repeat=self.repeat,
            rows=self.rows,
            **extra,
        )

    @classmethod
    def concat(cls, batches: list[DocBatch]) -> DocBatch:
        """One batch holding the given batches in order (an empty batch for none)."""
        if len(batches) == 1:
            return batches[0]
        with_images = any(b.img_counts is not None for b in batches)
        return cls(
            np.concatenate([b.tokens for b in batches] or [np.zeros(0, np.uint32)]),
            np.concatenate([b.lengths for b in batches] or [np.zeros(0, np.int64)]),
            [g for b in batches for g in b.groups],
            np.concatenate([b.repeat for b in batches] or [np.zeros(0, np.float64)]),
            np.concatenate([b.rows for b in batches] or [np.zeros(0, np.int64)]),
            np.concatenate([b.image_counts() for b in batches]) if with_images else None,
            [i for b in batches for i in b.images],
            [r for b in batches for r in b.rejects],
            [a for b in batches for a in b.archive_list()]
            if any(b.archives is not None for b in batches)
            else None,
        )

    def archive_list(self) -> list[str | None]:
        """The archive of each document (None where unknown)."""
        return list(self.archives) if self.archives is not None else [None] * len(self.lengths)

    def image_counts(self) -> np.ndarray:
        """Images per document (zeros for a text batch)."""
        if self.img_counts is None:
            return np.zeros(len(self.lengths), dtype=np.int64)
        return np.asarray(self.img_counts, dtype=np.int64)

    @classmethod
    def load(cls, path: str | Path) -> DocBatch:
        """Read a batch written by `save`."""
        with np.load(path, allow_pickle=True) as z:
            batch = cls(
                z["tokens"], z["lengths"], [str(g) for g in z["groups"]], z["repeat"], z["rows"]
            )
            if "img_counts" in z.files:
                batch.img_counts = z["img_counts"]
                batch.images = [json.loads(str(i)) for i in z["images"]]
                batch.rejects = [json.loads(str(r)) for r in z["rejects"]]
            if "archives" in z.files:
                batch.archives = [None if a is None else str(a) for a in z["archives"]]
            return batch


def source_files(
    spec: MixtureSpec, bucket: str, index: int, spec_dir: Path, lake_root: Path | None
) -> list[str]:
    """Sorted files a source's path/glob matches; a clear error when a required source has none."""
    src = spec.buckets[bucket].sources[index]
    pattern = resolve_path(src.path, spec_dir, lake_root)
    files = sorted(glob.glob(str(pattern), recursive=True))
    if not files and not src.optional:
        raise SpecError(
            f"buckets.{bucket}.sources[{index}].path: {src.path} (resolved to {pattern}) matches no file; "
            "build that dataset first or mark the source `optional: true`"
        )
    return files


def plan_units(spec: MixtureSpec, spec_dir: Path, lake_root: Path | None = None) -> list[ReadUnit]:
    """Every read unit of the spec, in bucket / source / file order.

    Each unit carries the same snapshot of the consent ledgers (`spec_ledger_files`: the run's
    lake's and that of every lake a source reads from, their files at planning time), so a recheck
    appending meanwhile changes neither what is read nor the version recorded.
    """
    planned = [
        (name, i, src, source_files(spec, name, i, spec_dir, lake_root))
        for name, bucket in spec.buckets.items()
        for i, src in enumerate(bucket.sources)
    ]
    consent = tuple(
        str(f)
        for f in spec_ledger_files(
            spec, spec_dir, lake_root, [f for *_, files in planned for f in files]
        )
    )
    units = []
    for name, i, src, files in planned:
        bucket = spec.buckets[name]
        for f in files:
            rep = tuple((r.where, r.times) for r in bucket.repeat)
            units.append(
                ReadUnit(
                    name,
                    i,
                    f,
                    src.where,
                    src.text_column,
                    bucket.split_by,
                    rep,
                    consent,
                    kind=src.kind,
                    pairs=_pairs_files(src.pairs, spec_dir, lake_root),
                    image_tokens=spec.image_tokens,
                    contaminated=src.contaminated,
                    optional=src.optional,
                    dropped=src.dropped,
                )
            )
    return units


def spec_ledger_files(
    spec: MixtureSpec,
    spec_dir: Path,
    lake_root: Path | None = None,
    files: Sequence[str] | None = None,
) -> list[Path]:
    """The consent ledger files a build of the spec honours (common.consent.ledger_files_for):
    the run's lake's, then those of the lake of every file it reads (the sources' files, or
    `files` when given, their `pairs` files and the tokenizer's own `train.sources`), each once.
    A source taken from another lake brings that lake's opt-outs with it, into the shards, the
    tokenizer sample and the manifest alike."""
    from common.consent import ledger_files_for
    from training.mixture.spec import TokenizerTrain

    inputs: list[str] = []
    if files is None:
        files = [
            f
            for name, bucket in spec.buckets.items()
            for i in range(len(bucket.sources))
            for f in source_files(spec, name, i, spec_dir, lake_root)
        ]
    inputs += files
    for bucket in spec.buckets.values():
        for src in bucket.sources:
            inputs += _pairs_files(src.pairs, spec_dir, lake_root)
    if isinstance(spec.tokenizer, TokenizerTrain) and spec.tokenizer.train.sources:
        for p in spec.tokenizer.train.sources:
            inputs += sorted(glob.glob(str(resolve_path(p, spec_dir, lake_root)), recursive=True))
    return ledger_files_for(lake_root, *inputs)


CONTAMINATED_COLUMN = "contaminated"  # filters/decontam.py: shares n-grams with an eval set


def contamination_sql(unit: ReadUnit) -> str | None:
    """The SQL condition that leaves out a unit's rows marked contaminated (None: nothing to
    leave out, because the file has no `contaminated` column or the source includes them).

    Only a boolean column is read: a `contaminated` column of another type is one line naming
    the file and the fix, since reading 'false' or 0 as clean would be a guess."""
    import pyarrow as pa

    if unit.contaminated == "include":
        return None
    schema = _schema(unit.file)
    idx = schema.get_field_index(CONTAMINATED_COLUMN)
    if idx < 0:
        return None
    if not pa.types.is_boolean(schema.field(idx).type):
        raise SpecError(
            f"buckets.{unit.bucket}.sources[{unit.source}]: {unit.file} has a `contaminated` "
            f"column of type {schema.field(idx).type}, not boolean; rewrite it as boolean "
            "(filters/decontam.py writes it so) or set `contaminated: include` on the source"
        )
    return f"{quote_ident(CONTAMINATED_COLUMN)} IS NOT TRUE"


# What each image kind's producing stage keeps, by the columns it marks its decision in: a row
# whose column says otherwise was dropped there (a pair's `drop_reason`, settled as every reader
# of pairs takes it; a synthetic row's `status` other than 'ok', whose caption, Markdown or QA
# may still be there; a domain candidate not `selected`). A source leaves such rows out unless
# it says `dropped: include`; they are its recorded `upstream_dropped` rejects. Only the columns
# a file has apply (interleaved.parquet holds kept documents only: no column, no rule).
UPSTREAM_KEPT = {
    "drop_reason": "{col} IS NULL",
    "status": "CAST({col} AS VARCHAR) = 'ok'",
    "selected": "{col} IS TRUE",
}
UPSTREAM_KEPT_BY_KIND = {
    "pairs": ("drop_reason",),
    "interleaved": ("drop_reason",),
    "domain_images": ("drop_reason", "selected"),
    "captions": ("status",),
    "charts": ("status",),
    "tables": ("status",),
    "domain_qa": ("status",),
}
UPSTREAM_DROPPED = "upstream_dropped"  # the reject reason of a row its stage dropped


def upstream_kept_columns(unit: ReadUnit) -> list[str]:
    """The columns of the unit's file in which its producing stage marked what it kept
    (UPSTREAM_KEPT_BY_KIND); [] when the source includes dropped rows or the file has none."""
    if unit.dropped == "include":
        return []
    names = set(_schema(unit.file).names)
    return [c for c in UPSTREAM_KEPT_BY_KIND.get(unit.kind, ()) if c in names]


def upstream_kept_sql(unit: ReadUnit) -> str | None:
    """The SQL condition a row of the unit must meet to be one its producing stage kept (None:
    no rule applies, `upstream_kept_columns`). NULL (a NULL status) counts as dropped."""
    cols = upstream_kept_columns(unit)
    if not cols:
        return None
    return " AND ".join(f"({UPSTREAM_KEPT[c].format(col=quote_ident(c))})" for c in cols)


def unit_where_sql(unit: ReadUnit) -> str:
    """'WHERE ...' for a unit's rows within `allowed`: the contamination rule and the source's
    predicate ('' when neither applies)."""
    terms = [f"({normalize_predicate(unit.where)})"] if unit.where else []
    clean = contamination_sql(unit)
    if clean:
        terms.insert(0, f"({clean})")
    return f"WHERE {' AND '.join(terms)} " if terms else ""


def contaminated_excluded(units: Sequence[ReadUnit]) -> dict[str, int]:
    """Rows each source would have offered but left out as contaminated, keyed
    'bucket/source index' (only sources whose files carry the column; empty when none does)."""
    import duckdb

    out: dict[str, int] = {}
    con = duckdb.connect(config={"threads": 1})
    try:
        for unit in units:
            if contamination_sql(unit) is None:
                continue
            where = f"({normalize_predicate(unit.where)}) AND " if unit.where else ""
            sql = (
                f"WITH allowed AS ({allowed_rows_sql(unit)}) SELECT count(*) FROM allowed "
                f"WHERE {where}{quote_ident(CONTAMINATED_COLUMN)} IS TRUE"
            )
            try:
                with readable_file(unit.file) as path:
                    n = con.execute(sql, [path]).fetchone()[0]
            except duckdb.Error as exc:
                raise _where_error(unit, exc) from None
            key = f"{unit.bucket}/{unit.source}"
            out[key] = out.get(key, 0) + int(n)
    finally:
        con.close()
    return out


def consent_version(units: Sequence[ReadUnit], lake_root: Path | None = None) -> dict:
    """The consent ledger version the units honour (for the manifest's `consent_ledger`; the
    lake's when no units): over every ledger file they honour, of every lake, in order. With
    one lake it is that lake's `common.consent.ledger_version`, as before several were read."""
    from common.consent import ledger_files, ledger_version

    return ledger_version(units[0].consent if units else ledger_files(lake_root))


RUN_LAKE = "lake"  # a `consent_ledgers` entry's `lake` for the run's own lake (as spec paths say)


def consent_ledgers(units: Sequence[ReadUnit], lake_root: Path | None = None) -> list[dict]:
    """Per lake whose ledger the units honour (the manifest's `consent_ledgers`): `lake` (RUN_LAKE
    for the run's lake, else the lake's absolute path) and that lake's `ledger_version`, so a
    check can find each lake's honoured files again (`common.consent.honoured_files`)."""
    from common.consent import ledger_files, ledger_version

    files = units[0].consent if units else ledger_files(lake_root)
    run = Path(lake_root).resolve() if lake_root is not None else None
    return [
        {"lake": RUN_LAKE if lake == run else str(lake), **ledger_version(fs)}
        for lake, fs in ledger_lakes(files)
    ]


def _ledger_seq(path: str | Path) -> tuple[int, str]:
    """A ledger file's place in its lake's append order: `ledger-<seq>.parquet` by seq."""
    import re

    m = re.fullmatch(r"ledger-(\d+)\.parquet", Path(path).name)
    return (int(m[1]) if m else -1, Path(path).name)


def ledger_lakes(files: Sequence[str | Path]) -> list[tuple[Path, list[str]]]:
    """Ledger files grouped by the lake they belong to (`<lake>/consent/ledger/`): lakes in the
    order first met, each lake's files in append order (seq), as given (str)."""
    from common.consent import LEDGER_DIR

    lakes: dict[Path, list[str]] = {}
    for f in files:
        ledger = Path(f).resolve().parent
        lake = ledger.parents[len(LEDGER_DIR.parts) - 1]
        lakes.setdefault(lake, []).append(str(f))
    return [(lake, sorted(fs, key=_ledger_seq)) for lake, fs in lakes.items()]


# Columns matched to the consent ledger: common.consent's LEDGER_ID_KEYS (the row's document id,
# among an opted-out row's doc_ids) and LEDGER_URL_KEYS (its URL, an opted-out row's url). A file
# without `doc_id` may name its document only through a derived id: a pair id is
# '<doc_id>-<position>' (crawlers.images.fetch.ref_id), a table pair '<doc_id>#t<index>', a
# domain QA row '<pair_id>#<domain>'; those id columns are matched with the suffixes stripped too.


def _schema(file: str):
    """The source file's schema; one line naming the file when it is missing, empty, truncated
    or not Parquet (common.inputs)."""
    from common.inputs import read_schema

    return read_schema(file, "fix or rebuild the source file the mixture spec names")


FLAG_COLUMN = "training_allowed"  # common.consent.FLAG


def _case_twins(schema, name: str) -> list[str]:
    """The schema's column names equal to `name` but for case (`name` itself included): DuckDB
    binds an identifier case-insensitively, quoted or not, and renames later twins `<name>_1`,
    so with two of them `"name"` may read the other column."""
    return [n for n in schema.names if n.casefold() == name.casefold()]


def has_flag_column(schema) -> bool:
    """Whether the file has a consent flag column at all, however spelled (for kinds that may
    come without one: a near miss such as `Training_Allowed` is not their absence)."""
    return bool(_case_twins(schema, FLAG_COLUMN))


def flag_sql(schema, file: str | None = None) -> str:
    """The row's own consent in SQL, as common.consent.flag_true reads it: only a BOOLEAN true.

    The flag is exactly one column named exactly `training_allowed`. DuckDB's `IS TRUE` casts a
    string 'true'/'t' or an integer 1 to true: a training_allowed column that is not boolean
    gives no consent at all. A missing one is left to the binder, whose error names the column;
    a near miss (`Training_Allowed`, `TRAINING_ALLOWED`) or a second column of that name, which
    DuckDB would bind instead (it matches names case-insensitively), is one line naming the file
    and the fix (SpecError)."""
    import pyarrow as pa

    twins = _case_twins(schema, FLAG_COLUMN)
    if twins and twins != [FLAG_COLUMN]:
        raise SpecError(
            f"{file or 'a source file'}: the consent flag must be exactly one boolean column "
            f"named `{FLAG_COLUMN}`, found {', '.join(map(repr, twins))}; rename the column to "
            f"`{FLAG_COLUMN}` (boolean) and drop any other spelling or duplicate"
        )
    if twins and not pa.types.is_boolean(schema.field(FLAG_COLUMN).type):
        return "false"
    return f"{quote_ident(FLAG_COLUMN)} IS TRUE"


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _ledger_sql(files: Sequence[str], schema, file: str | None = None) -> str:
    """' AND <the row's ids and URLs are not opted out>' against the consent ledgers ('' without
    a ledger).

    Within one lake the latest row per URL wins, in append order (`ledger-<seq>.parquet` by seq,
    then row order); across lakes a URL is opted out when ANY lake's latest row for it says
    training_allowed = false (one lake's re-allow never overrides another's opt-out). A file
    with none of the key columns (LEDGER_ID_KEYS, LEDGER_URL_KEYS), or with a key column and
    another spelling of it that DuckDB could bind instead, is one line naming the file and the
    fix (SpecError): the ledger is never skipped silently."""
    if not files:
        return ""
    names = set(schema.names)
    ids = [k for k in LEDGER_ID_KEYS if k in names]
    urls = [k for k in LEDGER_URL_KEYS if k in names]
    where = file or "a source file"
    if not ids and not urls:
        near = [n for n in schema.names if n.casefold() in (*LEDGER_ID_KEYS, *LEDGER_URL_KEYS)]
        seen = f" (found {', '.join(map(repr, near))}, not spelt so)" if near else ""
        raise SpecError(
            f"{where}: no column the consent ledger can match{seen}: the honoured ledger "
            f"({len(files)} file(s)) opts documents out by "
            f"{', '.join(LEDGER_ID_KEYS + LEDGER_URL_KEYS)}; add (or rename one to) a `url` "
            "or `doc_id` column holding each row's document URL or lake document id"
        )
    for k in ids + urls:
        twins = _case_twins(schema, k)
        if len(twins) > 1:
            raise SpecError(
                f"{where}: columns {', '.join(map(repr, twins))} differ only in case, and the "
                f"consent ledger matches `{k}`; rename or drop all but one"
            )
    lakes = ledger_lakes(files)
    order = ", ".join(
        f"({_sql_str(f)}, {n}, {seq})"
        for n, (_, fs) in enumerate(lakes)
        for seq, f in enumerate(fs)
    )
    quoted = ", ".join(_sql_str(f) for _, fs in lakes for f in fs)
    latest = (
        "SELECT l.url, l.doc_ids, l.training_allowed, row_number() OVER (PARTITION BY o.lake, "
        "l.url ORDER BY o.seq DESC, l.file_row_number DESC) AS rn "
        f"FROM read_parquet([{quoted}], filename=true, file_row_number=true, hive_partitioning=false) AS l "
        f"JOIN (VALUES {order}) AS o(file, lake, seq) ON l.filename = o.file"
    )
    # as common.consent.opted_out: the URLs any lake's latest row does not allow (false, or a
    # hand-written NULL), and the doc_ids of EVERY lake's latest row for those URLs (another lake
    # may know the page's documents by other ids; its re-allow frees none of them)
    out_urls = f"SELECT url FROM ({latest}) WHERE rn = 1 AND training_allowed IS NOT TRUE"
    out_ids = f"SELECT unnest(doc_ids) FROM ({latest}) WHERE rn = 1 AND url IN ({out_urls})"
    hits = []
    for k in ids:
        col = f"CAST({quote_ident(k)} AS VARCHAR)"
        hits.append(f"{col} IN ({out_ids})")
        if "doc_id" not in names:  # the document a pair / table pair / QA row id names
            doc = f"regexp_replace(regexp_replace({col}, '#.*$', ''), '-[0-9]+$', '')"
            hits.append(f"regexp_replace({col}, '#.*$', '') IN ({out_ids})")
            hits.append(f"{doc} IN ({out_ids})")
    for k in urls:
        hits.append(f"CAST({quote_ident(k)} AS VARCHAR) IN ({out_urls})")
    return " AND NOT coalesce(" + " OR ".join(hits) + ", false)"


def _consent_sql(unit: ReadUnit) -> str:
    """' AND <not opted out by the consent ledger>' for a unit's file ('' without a ledger)."""
    if not unit.consent:
        return ""
    return _ledger_sql(unit.consent, _schema(unit.file), unit.file)


def consent_sql(unit: ReadUnit, own_flag: bool = True) -> str:
    """The consent rule for one row of the unit's file, as a SQL boolean: its own flag is the
    boolean true, and the consent ledger has not opted out its document (by doc_id, id, pair id
    or URL, whatever of those the file has). `own_flag=False`: a kind whose rows carry no flag
    of their own (training/mixture/images.py), the ledger only."""
    schema = _schema(unit.file)
    flag = flag_sql(schema, unit.file) if own_flag else "true"
    return flag + (_ledger_sql(unit.consent, schema, unit.file) if unit.consent else "")


def allowed_rows_sql(unit: ReadUnit, own_flag: bool = True, source: str = "?") -> str:
    """The relation every predicate of a unit sees: the unit's consented rows (`consent_sql`), in
    file order, with a NaN in any floating column read as NULL (unscored, like NULL: pandas and
    other tools write NaN for missing, and NaN >= 0.5 is true in DuckDB). The file path is the
    query's `?` parameter (or `source`, an SQL string literal). `own_flag=False`: the ledger
    only, training_allowed read as NULL."""
    import pyarrow as pa

    schema = _schema(unit.file)
    floats = [f.name for f in schema if pa.types.is_floating(f.type)]
    replace = ""
    if floats:
        cols = ", ".join(
            f"CASE WHEN isnan({quote_ident(c)}) THEN NULL ELSE {quote_ident(c)} END AS {quote_ident(c)}"
            for c in floats
        )
        replace = f" REPLACE ({cols})"
    where = (flag_sql(schema, unit.file) if own_flag else "true") + (
        _ledger_sql(unit.consent, schema, unit.file) if unit.consent else ""
    )
    extra = "" if own_flag else ", NULL::BOOLEAN AS training_allowed"
    return f"SELECT *{replace}{extra} FROM read_parquet({source}, file_row_number=true, hive_partitioning=false) WHERE {where}"


def _select_sql(unit: ReadUnit) -> str:
    """The one query that reads a unit: consent first, in a relation no predicate can reach around.

    `allowed` (`allowed_rows_sql`) holds only training-allowed rows (NULL, a string or a number
    counts as not allowed; NaN scores read as NULL); every user predicate
    is parsed as a single expression, re-printed from its parse tree (`normalize_predicate`) and
    applied on top of `allowed`, so `OR true`, a stray `)`, a comment or a subquery cannot widen it.
    Documents whose latest consent ledger row says training_allowed = false are removed in
    `allowed` too, by every id or URL column the file has (`LEDGER_ID_KEYS`, `LEDGER_URL_KEYS`):
    a later opt-out (crawlers/consent.py) reaches every future mixture, whatever the source's
    kind. The file path is bound as a parameter.
    Rows come in file order without an ORDER BY (DuckDB's
    `preserve_insertion_order`, set explicitly by the readers), so a large file streams instead of
    being sorted in memory; `read_unit_batches` checks the order.
    """
    allowed = allowed_rows_sql(unit)
    group = f"CAST({quote_ident(unit.split_by)} AS VARCHAR)" if unit.split_by else f"'{ALL_GROUP}'"
    cases = " ".join(f"WHEN ({normalize_predicate(w)}) THEN {float(t)!r}" for w, t in unit.repeat)
    repeat = f"CASE {cases} ELSE 1.0 END" if cases else "1.0"
    where = unit_where_sql(unit)
    text = f"COALESCE({quote_ident(unit.text_column)}, '')"  # NULL or '': an empty_text reject
    # the archive a row came from (extract's and the importers' provenance), for the manifest
    has_archive = ARCHIVE_COLUMN in _schema(unit.file).names
    archive = f"CAST({quote_ident(ARCHIVE_COLUMN)} AS VARCHAR)" if has_archive else "NULL"
    return (
        f"WITH allowed AS ({allowed}) "
        f"SELECT {text} AS text, {group} AS grp, {repeat} AS rep, file_row_number AS row, "
        f"{archive} AS archive, {quote_ident(unit.text_column)} IS NULL AS null_text "
        f"FROM allowed {where}"
    )


def _where_error(unit: ReadUnit, exc: Exception) -> SpecError:
    field = f"buckets.{unit.bucket}.sources[{unit.source}]"
    msg = str(exc).splitlines()[0]
    if "training_allowed" in msg:
        return SpecError(
            f"{field}: {unit.file} has no boolean training_allowed column; every source must carry it"
        )
    return SpecError(
        f"{field}: cannot select from {unit.file} (where={unit.where!r}, text_column={unit.text_column!r}, "
        f"split_by={unit.split_by!r}, repeat={[w for w, _ in unit.repeat]}): {msg}"
    )


READ_BATCH_ROWS = 2048  # rows per Arrow batch when streaming a unit: bounds the text held at once
_UNIT_DB: tuple[int, object] | None = None  # (pid, the DuckDB database units are read through)
_UNIT_DB_LOCK = threading.Lock()


def _unit_cursor():
    """A DuckDB connection to read one unit through: a cursor of one in-memory database per
    process (one thread, insertion order kept). Opening a database costs about 30 ms, a cursor
    about 1: a mixture of many small files paid the first twice a file. Each unit gets its own
    cursor (units may be read from several threads, or two at once); a forked process opens its
    own database."""
    import duckdb

    global _UNIT_DB
    with _UNIT_DB_LOCK:
        if _UNIT_DB is None or _UNIT_DB[0] != os.getpid():
            db = duckdb.connect(config={"preserve_insertion_order": True, "threads": 1})
            _UNIT_DB = (os.getpid(), db)
        return _UNIT_DB[1].cursor()


ARCHIVE_COLUMN = "source_file"  # common.schemas.PROVENANCE: the archive a document came from


def read_unit_batches(
    unit: ReadUnit, rows_per_batch: int = READ_BATCH_ROWS, rejects: list[dict] | None = None
) -> Iterator[tuple[pa.Array, list[str], np.ndarray, np.ndarray, list[str | None]]]:
    """Stream a unit's training-allowed rows as (texts, groups, repeat weights, row numbers,
    archives) batches (archives: each row's `source_file`, None where the file has none).

    Texts stay Arrow, so the tokenizer makes Python strings of one batch at a time and a source
    file of any size is read in bounded memory. Numbers go through to_pylist: pyarrow's to_numpy
    imports pandas (a second per process).

    A row is no document when it holds bytes that are not UTF-8 (any string column, whatever its
    flag: `bad_utf8_rows`) or when its text is NULL or empty; given a `rejects` list, each such
    row is appended to it once the unit is read (`invalid_utf8`, `empty_text`, with its id).
    """
    import duckdb
    import pyarrow as pa
    import pyarrow.compute as pc

    bad = bad_utf8_rows(unit.file)
    found: list[tuple[int, str, str]] = [
        (r, "invalid_utf8", f"bytes that are not UTF-8 in {', '.join(cols)}")
        for r, cols in sorted(bad.items())
    ]
    con = _unit_cursor()
    last = -1
    try:
        with readable_file(unit.file, bad) as path:
            try:
                reader = con.sql(_select_sql(unit), params=[path]).to_arrow_reader(rows_per_batch)
            except duckdb.Error as exc:
                raise _where_error(unit, exc) from None
            for batch in reader:
                if batch.num_rows == 0:
                    continue
                rows = np.array(batch.column("row").to_pylist(), dtype=np.int64)
                if rows[0] <= last or (len(rows) > 1 and np.any(np.diff(rows) <= 0)):
                    raise RuntimeError(
                        f"{unit.file}: rows did not arrive in file order; this is a bug"
                    )
                last = int(rows[-1])
                empty = np.array(
                    pc.equal(pc.binary_length(batch.column("text")), 0).to_pylist(), dtype=bool
                )
                if empty.any():
                    nulls = batch.column("null_text").to_pylist()
                    col = repr(unit.text_column)
                    found += [
                        (int(rows[i]), "empty_text", f"{col} is {'NULL' if nulls[i] else 'empty'}")
                        for i in np.flatnonzero(empty).tolist()
                    ]
                    batch = batch.filter(pa.array(~empty))
                    rows = rows[~empty]
                    if batch.num_rows == 0:
                        continue
                groups = [g if g is not None else "null" for g in batch.column("grp").to_pylist()]
                rep = np.array(batch.column("rep").to_pylist(), dtype=np.float64)  # DECIMAL
                archives = batch.column("archive").to_pylist()
                yield batch.column("text"), groups, rep, rows, archives
    finally:
        con.close()
    if rejects is not None and found:
        ids = row_ids(unit.file, [r for r, _, _ in found])
        rejects += [
            {
                "bucket": unit.bucket,
                "source": unit.source,
                "file": unit.file,
                "row": r,
                "id": ids.get(r, ""),
                "reason": reason,
                "detail": detail,
            }
            for r, reason, detail in sorted(found)
        ]


# Bad rows found per file state: (path, size, mtime_ns) -> {row: [columns]} (a build checks and
# then reads each file: one scan).
_BAD_UTF8: dict[tuple[str, int, int], dict[int, list[str]]] = {}
BAD_UTF8_CACHE = 4096


def bad_utf8_rows(file: str) -> dict[int, list[str]]:
    """The rows of a Parquet file that hold a string value of bytes that are not UTF-8, with
    those columns (0-based row -> column names), read a batch at a time. DuckDB refuses a whole
    file for one such value, so the readers read `readable_file` instead."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    st = Path(file).stat()
    key = (str(file), st.st_size, st.st_mtime_ns)
    if key in _BAD_UTF8:
        return _BAD_UTF8[key]
    schema = _schema(file)
    cols = [
        f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]
    bad: dict[int, list[str]] = {}
    if cols:
        with pq.ParquetFile(file) as pf:
            row = 0  # small batches: long documents stay a few MB at once
            for batch in pf.iter_batches(batch_size=1024, columns=cols):
                for name, col in zip(batch.schema.names, batch.columns, strict=True):
                    try:
                        col.validate(full=True)
                    except pa.ArrowInvalid:
                        raw = col.cast(
                            pa.large_binary() if pa.types.is_large_string(col.type) else pa.binary()
                        )
                        for i, v in enumerate(raw.to_pylist()):
                            if v is not None and not _is_utf8(v):
                                bad.setdefault(row + i, []).append(name)
                row += batch.num_rows
    if len(_BAD_UTF8) >= BAD_UTF8_CACHE:  # bounded: the oldest answer goes first
        del _BAD_UTF8[next(iter(_BAD_UTF8))]
    _BAD_UTF8[key] = bad
    return bad


def _in_batch(rows: np.ndarray, start: int, n: int) -> list[int]:
    """Offsets within a batch of rows [start, start + n) of the sorted row numbers `rows`."""
    lo, hi = np.searchsorted(rows, [start, start + n])
    return (rows[lo:hi] - start).tolist()


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@contextmanager
def readable_file(file: str, bad: dict[int, list[str]] | None = None) -> Iterator[str]:
    """A path DuckDB can read for `file`: the file itself, or, when some rows hold invalid UTF-8
    (`bad`, default `bad_utf8_rows(file)`), a temporary copy with the same rows in the same order
    in which those rows' bad bytes read as U+FFFD and their training_allowed as false, so no
    query of the read path ever takes them (the reader records them as `invalid_utf8`)."""
    import tempfile

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from common.inputs import utf8_replaced

    bad = bad_utf8_rows(file) if bad is None else bad
    if not bad:
        yield file
        return
    fd, tmp = tempfile.mkstemp(prefix="refinery-utf8-", suffix=".parquet")
    os.close(fd)
    try:
        schema = _schema(file)
        flag = schema.get_field_index(FLAG_COLUMN)
        rows = np.array(sorted(bad), dtype=np.int64)
        with pq.ParquetFile(file) as pf, pq.ParquetWriter(tmp, schema) as writer:
            row = 0
            for batch in pf.iter_batches(batch_size=1024):
                batch = utf8_replaced(batch)
                hit = _in_batch(rows, row, batch.num_rows)
                if hit and flag >= 0 and pa.types.is_boolean(schema.field(flag).type):
                    mask = np.zeros(batch.num_rows, dtype=bool)
                    mask[hit] = True
                    cols = list(batch.columns)
                    cols[flag] = pc.if_else(pa.array(mask), False, cols[flag])
                    batch = pa.RecordBatch.from_arrays(cols, schema=batch.schema)
                writer.write_batch(batch)
                row += batch.num_rows
        yield tmp
    finally:
        os.unlink(tmp)


ID_COLUMNS = ("id", "doc_id", "pair_id")  # what names a row in rejects.parquet, first found


def row_ids(file: str, rows: Sequence[int]) -> dict[int, str]:
    """The id of each of `rows` of a file (its first ID_COLUMNS column; bytes that are not UTF-8
    shown as U+FFFD); {} when the file has none of them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = _schema(file).names
    col = next((c for c in ID_COLUMNS if c in names), None)
    if col is None or not rows:
        return {}
    want = np.unique(np.asarray(rows, dtype=np.int64))
    out: dict[int, str] = {}
    with pq.ParquetFile(file) as pf:
        row = 0
        for batch in pf.iter_batches(batch_size=8192, columns=[col]):
            hit = _in_batch(want, row, batch.num_rows)
            if hit:
                values = batch.column(0).take(pa.array(hit))
                if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
                    values = values.cast(pa.large_binary())
                for i, v in zip(hit, values.to_pylist(), strict=True):
                    if isinstance(v, bytes):
                        v = v.decode("utf-8", "replace")
                    out[row + i] = "" if v is None else str(v)
            row += batch.num_rows
    return out


def read_unit(unit: ReadUnit) -> tuple[pa.ChunkedArray, list[str], np.ndarray, np.ndarray]:
    """All of a unit's training-allowed rows at once (small units; `read_unit_batches` streams)."""
    import pyarrow as pa

    texts, groups, reps, rows = [], [], [], []
    for t, g, r, w, _ in read_unit_batches(unit):
        texts.append(t)
        groups.extend(g)
        reps.append(r)
        rows.append(w)
    return (
        pa.chunked_array(texts, type=pa.string()),
        groups,
        np.concatenate(reps) if reps else np.zeros(0, np.float64),
        np.concatenate(rows) if rows else np.zeros(0, np.int64),
    )


def _pairs_files(pattern: str | None, spec_dir: Path, lake_root: Path | None) -> tuple[str, ...]:
    """The pairs.parquet files a source's `pairs` path/glob names (none: an empty tuple)."""
    if not pattern:
        return ()
    return tuple(sorted(glob.glob(str(resolve_path(pattern, spec_dir, lake_root)), recursive=True)))
