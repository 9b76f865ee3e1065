"""Build a mixture: tokenize sources, hold out eval documents, sample to the spec's targets, pack, shard.

`build_mixture` runs everything in process. The Beam pipeline (`pipelines/beam/mix.py`) tokenizes
the same `ReadUnit`s on workers and then calls `assemble` here, so both give identical shards.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from common.manifest import lake_fields
from training.mixture.images import block_starts
from training.mixture.outdir import finish_build, start_build
from training.mixture.packing import (
    DiskTokens,
    ImageRows,
    PackStats,
    TokenStore,
    pack_sequences,
    pack_sequences_images,
    save_array,
)
from training.mixture.read import check_unit_file, flag_problems, tokenize_unit_batches
from training.mixture.sampling import (
    cap_targets,
    cut_at_stages,
    largest_remainder,
    repetition_plan,
    temperature_shares,
)
from training.mixture.sources import (
    ALL_GROUP,
    READ_BATCH_ROWS,
    DocBatch,
    ReadUnit,
    consent_ledgers,
    consent_version,
    contaminated_excluded,
    plan_units,
    source_files,
    spec_ledger_files,
)
from training.mixture.spec import (
    MixtureSpec,
    SpecError,
    TokenizerTrain,
    load_spec,
    normalize_predicate,
    quote_ident,
    resolve_path,
)
from training.mixture.store import write_image_outputs, write_rejects
from training.tokenizer import load_tokenizer, sample_texts, special_token_ids, train_tokenizer

MANIFEST_VERSION = 1


def _rng(seed: int, *tags: str | int) -> np.random.Generator:
    """A generator keyed by seed and names (crc32 keeps it stable across processes and runs)."""
    return np.random.default_rng(
        [seed, *(t if isinstance(t, int) else zlib.crc32(t.encode()) for t in tags)]
    )


@dataclass
class Corpus:
    """All candidate documents of a spec, tokenized, with their bucket/source/group labels.

    Tokens live on disk (a uint32 file written as units are tokenized), so the
    driver's memory grows with the number of documents (a few small integers each), not with
    the number of tokens. Buckets and groups are integer codes into `bucket_names`/`group_names`.
    """

    store: TokenStore
    bucket: np.ndarray  # int32 code into bucket_names
    source: np.ndarray  # int64 source index within its bucket
    group: np.ndarray  # int32 code into group_names
    repeat: np.ndarray  # float64 per-document repetition weight
    bucket_names: list[str]
    group_names: list[str]
    # Images (mixtures with image_tokens): document d's blocks stand for
    # images[img_ids[img_offsets[d]:img_offsets[d + 1]]], one record per distinct sha256.
    img_offsets: np.ndarray | None = None
    img_ids: np.ndarray | None = None
    images: list[dict] = field(default_factory=list)
    rejects: list[dict] = field(default_factory=list)
    # document d came from archive archive_names[archive[d]] (-1: its row names none)
    archive: np.ndarray | None = None
    archive_names: list[str] = field(default_factory=list)
    # document d is row row[d] of the source file file_names[file[d]]
    file: np.ndarray | None = None
    row: np.ndarray | None = None
    file_names: list[str] = field(default_factory=list)

    @classmethod
    def from_batches(
        cls,
        units: Sequence[ReadUnit],
        batches: Iterable[DocBatch],
        work_dir: Path | None = None,
    ) -> Corpus:
        """Concatenate tokenized units in unit order; one batch (or several, in order) per unit.

        `batches` may be a lazy iterable: each batch is appended to the token file and dropped.
        `units` may repeat a unit for each of its batches (streamed reads), in the same order.
        """
        writer = CorpusWriter(work_dir)
        for unit, batch in zip(units, batches, strict=True):
            writer.add(unit, batch)
        return writer.finish()

    def in_bucket(self, name: str) -> np.ndarray:
        """Indices of the bucket's documents (empty when it has none)."""
        if name not in self.bucket_names:
            return np.zeros(0, dtype=np.int64)
        return np.nonzero(self.bucket == self.bucket_names.index(name))[0]

    def group_set(self, idx: np.ndarray) -> list[str]:
        """Sorted group names of the given documents."""
        return sorted({self.group_names[c] for c in np.unique(self.group[idx]).tolist()})

    def in_group(self, idx: np.ndarray, name: str) -> np.ndarray:
        """Boolean mask over idx: documents of group `name`."""
        if name not in self.group_names:
            return np.zeros(len(idx), dtype=bool)
        return self.group[idx] == self.group_names.index(name)

    def row_keys(self) -> np.ndarray:
        """One int64 per document naming the (source file, row) it was read from: two sources
        reading the same row give the same key."""
        if self.file is None or self.row is None:  # no provenance: every document its own
            return np.arange(len(self.bucket), dtype=np.int64)
        return (self.file.astype(np.int64) << 40) | self.row.astype(np.int64)


class CorpusWriter:
    """Build a `Corpus` batch by batch: tokens appended to `<work_dir>/tokens.u32`, labels in memory.

    Without a work_dir the tokens stay in memory (small builds and tests).
    """

    def __init__(self, work_dir: Path | None = None):
        self.work_dir = Path(work_dir) if work_dir is not None else None
        self._file = None
        self._mem: list[np.ndarray] = []
        if self.work_dir is not None:
            self.work_dir.mkdir(parents=True, exist_ok=True)
            self.path = self.work_dir / "tokens.u32"
            self._file = open(self.path, "wb")  # noqa: SIM115 - closed in finish()
        self.n_tokens = 0
        self.lengths: list[np.ndarray] = []
        self.sources: list[np.ndarray] = []
        self.buckets: list[np.ndarray] = []
        self.groups: list[np.ndarray] = []
        self.repeats: list[np.ndarray] = []
        self.bucket_names: list[str] = []
        self.group_names: list[str] = []
        self._bucket_code: dict[str, int] = {}
        self._group_code: dict[str, int] = {}
        self.img_counts: list[np.ndarray] = []
        self.img_ids: list[int] = []
        self.images: list[dict] = []
        self._image_code: dict[str, int] = {}
        self.rejects: list[dict] = []
        self.archives: list[np.ndarray] = []
        self.archive_names: list[str] = []
        self._archive_code: dict[str, int] = {}
        self.files: list[np.ndarray] = []
        self.rows: list[np.ndarray] = []
        self.file_names: list[str] = []
        self._file_code: dict[str, int] = {}

    def _code(self, table: dict[str, int], names: list[str], name: str) -> int:
        if name not in table:
            table[name] = len(names)
            names.append(name)
        return table[name]

    def add(self, unit: ReadUnit, batch: DocBatch) -> None:
        """Append one tokenized batch of `unit`."""
        n = len(batch.lengths)
        tokens = np.ascontiguousarray(batch.tokens, dtype=np.uint32)
        if self._file is not None:
            self._file.write(tokens.tobytes())
        else:
            self._mem.append(tokens)
        self.n_tokens += len(tokens)
        self.lengths.append(np.asarray(batch.lengths, dtype=np.int64))
        self.sources.append(np.full(n, unit.source, dtype=np.int64))
        b = self._code(self._bucket_code, self.bucket_names, unit.bucket)
        self.buckets.append(np.full(n, b, dtype=np.int32))
        codes = [self._code(self._group_code, self.group_names, g) for g in batch.groups]
        self.groups.append(np.array(codes, dtype=np.int32))
        self.repeats.append(np.asarray(batch.repeat, dtype=np.float64))
        self.img_counts.append(batch.image_counts())
        for info in batch.images:
            code = self._image_code.get(info["sha256"])
            if code is None:
                code = self._image_code[info["sha256"]] = len(self.images)
                self.images.append(info)
            self.img_ids.append(code)
        self.rejects.extend(batch.rejects)
        archives = [
            -1 if a is None else self._code(self._archive_code, self.archive_names, a)
            for a in batch.archive_list()
        ]
        self.archives.append(np.array(archives, dtype=np.int32))
        f = self._code(self._file_code, self.file_names, unit.file)
        self.files.append(np.full(n, f, dtype=np.int32))
        self.rows.append(np.asarray(batch.rows, dtype=np.int64))

    def finish(self) -> Corpus:
        """The finished corpus (tokens read from the file with positioned reads when on disk)."""
        if self._file is not None:
            self._file.close()
            tokens = DiskTokens(self.path, self.n_tokens)
        else:
            tokens = _concat(self._mem, np.uint32)
        lengths = _concat(self.lengths, np.int64)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        img_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(_concat(self.img_counts, np.int64), out=img_offsets[1:])
        return Corpus(
            store=TokenStore(tokens, offsets),
            bucket=_concat(self.buckets, np.int32),
            source=_concat(self.sources, np.int64),
            group=_concat(self.groups, np.int32),
            repeat=_concat(self.repeats, np.float64),
            bucket_names=self.bucket_names,
            group_names=self.group_names,
            img_offsets=img_offsets,
            img_ids=np.array(self.img_ids, dtype=np.int64),
            images=self.images,
            rejects=self.rejects,
            archive=_concat(self.archives, np.int32),
            archive_names=self.archive_names,
            file=_concat(self.files, np.int32),
            row=_concat(self.rows, np.int64),
            file_names=self.file_names,
        )


def _concat(arrays: Sequence[np.ndarray], dtype) -> np.ndarray:
    """np.concatenate as dtype, without copying a lone array that already has it."""
    if len(arrays) == 1:
        return np.asarray(arrays[0]).astype(dtype, copy=False)
    return np.concatenate(arrays or [np.zeros(0, dtype)]).astype(dtype, copy=False)


def prepare_tokenizer(
    spec: MixtureSpec, spec_dir: Path, out_dir: Path, lake_root: Path | None = None
) -> Path:
    """Copy the spec's tokenizer into out_dir/tokenizer.json, or train one there.

    The first write of a build (in process or Beam) into out_dir: the directory is taken first
    (`outdir.start_build`: refused when it is not the mixture's to take, else marked in progress
    and cleared of the previous build's manifest and outputs)."""
    start_build(spec, spec_dir, out_dir, lake_root)
    dest = out_dir / "tokenizer.json"
    if isinstance(spec.tokenizer, TokenizerTrain):
        cfg = spec.tokenizer.train
        if cfg.sample == "mixture":
            texts = mixture_sample_texts(spec, spec_dir, lake_root)
            return train_tokenizer(texts, cfg.vocab_size, dest)
        files = tokenizer_files(spec, spec_dir, lake_root)
        if not files:
            raise SpecError(
                "tokenizer.train.sources: no text source file exists to train the tokenizer on "
                "(image kinds are not sampled); give tokenizer.train.sources or a text bucket"
            )
        # the shards' consent rule: the row's flag and the consent ledgers the shards honour (the
        # run's lake's and that of every lake a source or a tokenizer source lies in)
        texts = sample_texts(
            [Path(f) for f, _ in files],
            cfg.sample_tokens,
            seed=spec.seed,
            consent=spec_ledger_files(spec, spec_dir, lake_root),
            text_columns=[c for _, c in files],
        )
        return train_tokenizer(texts, cfg.vocab_size, dest)
    src = resolve_path(spec.tokenizer, spec_dir, lake_root)
    if not src.exists():
        raise SpecError(
            f"tokenizer: {spec.tokenizer} (resolved to {src}) does not exist; run `refinery tokenizer train --out {src}`"
        )
    load_tokenizer(src)
    if src.resolve() != dest.resolve():
        shutil.copyfile(src, dest)
    return dest


def tokenizer_files(
    spec: MixtureSpec, spec_dir: Path, lake_root: Path | None = None
) -> list[tuple[str, str]]:
    """(file, text column) the `sample: files` tokenizer sample reads, sorted, each once:
    `tokenizer.train.sources` (their `text`), else every file of every `text` source with its
    own `text_column`. Image kinds carry no text column of their own (their text is built from
    captions, blocks or QA), so they are not sampled."""
    cfg = spec.tokenizer.train
    if cfg.sources:
        found = {
            (f, "text") for p in cfg.sources for f in _glob(resolve_path(p, spec_dir, lake_root))
        }
    else:
        found = {
            (f, src.text_column)
            for b, bs in spec.buckets.items()
            for i, src in enumerate(bs.sources)
            if src.kind == "text"
            for f in source_files(spec, b, i, spec_dir, lake_root)
        }
    return sorted(found)


def tokenizer_sample_plan(
    spec: MixtureSpec, spec_dir: Path, lake_root: Path | None = None
) -> list[tuple[list[ReadUnit], str | None, float]]:
    """The tokenizer sample of `sample: mixture`: (a source's text units, the group's predicate or
    None, its share of the sample) per bucket, source and group, shares as the build's sampling
    gives them: the buckets' effective weights (a bucket with no text drops out, the others
    renormalised); in a split_by bucket, the groups' temperature shares of their available text,
    capped at max_epochs times it, each group's share split among the sources by their text;
    else the sources' weights (or their text). Available text is counted in characters
    (CHARS_PER_TOKEN a token) through the build's own read query: consent, contamination and
    each source's `where` apply."""
    import duckdb

    from training.mixture.sources import _select_sql, readable_file
    from training.tokenizer import CHARS_PER_TOKEN

    units = [u for u in plan_units(spec, spec_dir, lake_root) if u.kind == "text"]
    # (bucket, source, group) -> characters available
    chars: dict[tuple[str, int, str | None], float] = {}
    con = duckdb.connect(config={"threads": 1})
    try:
        for u in units:
            sql = f"SELECT grp, sum(length(text)) FROM ({_select_sql(u)}) GROUP BY grp"
            with readable_file(u.file) as path:
                found = con.execute(sql, [path]).fetchall()
            for grp, n in found:
                key = (u.bucket, u.source, grp if u.split_by else None)
                chars[key] = chars.get(key, 0.0) + float(n or 0)
    finally:
        con.close()
    eff = spec.effective_weights()
    targets: dict[tuple[str, int, str | None], float] = {}
    for bname, bs in spec.buckets.items():
        mine = {k: v for k, v in chars.items() if k[0] == bname and v > 0}
        if not mine or eff[bname] <= 0:
            continue
        want = eff[bname] * spec.total_tokens
        if bs.split_by:
            groups: dict[str | None, float] = {}
            for (_, _, g), v in mine.items():
                groups[g] = groups.get(g, 0.0) + v / CHARS_PER_TOKEN
            shares = temperature_shares(groups, bs.temperature)
            per_group, _ = cap_targets(
                {g: want * p for g, p in shares.items()}, groups, bs.max_epochs
            )
            for (b, i, g), v in mine.items():
                targets[(b, i, g)] = per_group[g] * v / CHARS_PER_TOKEN / groups[g]
        else:
            total = sum(mine.values())
            avail = {k: v / CHARS_PER_TOKEN for k, v in mine.items()}
            given = {
                k: want * (bs.sources[k[1]].weight or 0.0)
                if bs.sources[k[1]].weight is not None
                else want * v / total
                for k, v in mine.items()
            }
            capped, _ = cap_targets(given, avail, bs.max_epochs)
            targets.update(capped)
    total = sum(targets.values())
    plan = []
    for (b, i, g), t in sorted(targets.items(), key=lambda kv: (kv[0][0], kv[0][1], str(kv[0][2]))):
        if t <= 0:
            continue
        src_units = [u for u in units if u.bucket == b and u.source == i]
        pred = None
        if src_units[0].split_by:
            col = quote_ident(src_units[0].split_by)
            pred = (
                f"{col} IS NULL"
                if g is None
                else f"CAST({col} AS VARCHAR) = '{str(g).replace(chr(39), chr(39) * 2)}'"
            )
        plan.append((src_units, pred, t / total))
    return plan


def mixture_sample_texts(
    spec: MixtureSpec, spec_dir: Path, lake_root: Path | None = None
) -> list[str]:
    """About tokenizer.train.sample_tokens tokens of text, each part of `tokenizer_sample_plan` at
    its share. A part with less text than its share is repeated to it, as the mixture repeats
    it (its epochs): otherwise the parts with the most text would shape the vocabulary."""
    from training.tokenizer import CHARS_PER_TOKEN

    cfg = spec.tokenizer.train
    texts: list[str] = []
    for src_units, pred, share in tokenizer_sample_plan(spec, spec_dir, lake_root):
        u = src_units[0]
        where = " AND ".join(
            f"({w})" for w in (u.where and normalize_predicate(u.where), pred) if w
        )
        tokens = max(1, round(share * cfg.sample_tokens))
        part = sample_texts(
            [Path(x.file) for x in src_units],
            tokens,
            seed=spec.seed,
            text_column=u.text_column,
            consent=u.consent,
            where=where or None,
        )
        have, want = sum(map(len, part)), tokens * CHARS_PER_TOKEN
        times = want // have if have else 0
        texts += part * max(1, times)
        left = want - have * max(1, times)
        for t in part:  # the rest of the share: the sample's (seeded) order, whole texts
            if left <= 0:
                break
            texts.append(t)
            left -= len(t)
    if not texts:
        raise SpecError("tokenizer.train: the buckets' sources hold no training-allowed text")
    return texts


def _glob(path: Path) -> list[str]:
    import glob

    return sorted(glob.glob(str(path), recursive=True))


# Memory of a build, for `memory_budget_mib` (common.budget): the knob is the text rows read and
# tokenized at once (`read_rows`), whose tokens then go to the on-disk token file. Measured with
# common.memory.PeakMemory around `build_mixture` (fresh process, DuckDB and tokenizers imported)
# on 1500 rows of sample-web texts joined into ~19 KB rows, a 512-token vocabulary: 16 rows at
# once grew 116 MiB over the resident set, all rows at once 1571 MiB, so a row costs ~50 times
# its uncompressed Parquet size -- the tokenizer's Encoding objects (ids, offsets, token
# strings: ~100 bytes a token) dominate; a larger vocabulary makes fewer tokens a byte. On top
# come MIX_FIXED_MIB (DuckDB, the tokenizer, NumPy temporaries; ~100 measured), MIX_DOC_BYTES per
# source row (labels kept per document) and two shard blocks of shard_sequences x seq_len uint32.
MIX_ROW_FACTOR = 64.0
MIX_FIXED_MIB = 128.0
MIX_DOC_BYTES = 96


def read_rows_for_budget(
    spec_path: str | Path, budget_mib: float, *, lake_root: Path | None = None
):
    """Rows read and tokenized at once (`common.budget.Fit`, at most READ_BATCH_ROWS) that keep
    a build of this spec under `budget_mib`. The shards do not depend on it."""
    import duckdb  # noqa: F401 - the build reads with DuckDB: resident before the budget is read
    import pyarrow.parquet as pq
    import tokenizers  # noqa: F401 - as DuckDB

    from common.budget import fit

    spec_path = Path(spec_path)
    spec = load_spec(spec_path)
    units = plan_units(spec, spec_path.parent, lake_root)
    for unit in units:  # a bad source file is one line naming it (not a Parquet reader error)
        check_unit_file(unit)
    files = sorted({u.file for u in units})
    rows, row_bytes = 0, 0.0
    for f in files:
        meta = pq.ParquetFile(f).metadata
        size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        rows += meta.num_rows
        row_bytes = max(row_bytes, size / meta.num_rows if meta.num_rows else 0.0)
    block = 2 * spec.shard_sequences * spec.seq_len * 4
    return fit(
        budget_mib,
        stage="mixture build",
        unit="row read at once",
        unit_mib=max(MIX_ROW_FACTOR * row_bytes, 1024) / 2**20,
        fixed_mib=MIX_FIXED_MIB + (block + rows * MIX_DOC_BYTES) / 2**20,
        most=READ_BATCH_ROWS,
    )


def build_mixture(
    spec_path: str | Path,
    out_dir: str | Path,
    *,
    lake_root: Path | None = None,
    read_rows: int = READ_BATCH_ROWS,
) -> dict[str, Any]:
    """Build a mixture in process; return its manifest. `read_rows`: text rows read and tokenized
    at once (`read_rows_for_budget`); the shards and manifest do not depend on it."""
    spec_path, out_dir = Path(spec_path), Path(out_dir)
    spec = load_spec(spec_path)
    tok_path = prepare_tokenizer(spec, spec_path.parent, out_dir, lake_root)
    tok = load_tokenizer(tok_path)
    units = plan_units(spec, spec_path.parent, lake_root)
    for unit in units:  # a bad source file is one line naming it, before any work
        check_unit_file(unit)
    work = out_dir / "_corpus"
    shutil.rmtree(work, ignore_errors=True)
    try:
        writer = CorpusWriter(work)
        for unit in units:
            for batch in tokenize_unit_batches(unit, tok, read_rows):
                writer.add(unit, batch)
        consent = consent_version(units, lake_root)
        return assemble_corpus(
            spec,
            spec_path,
            writer.finish(),
            out_dir,
            lake_root,
            consent=consent,
            consent_lakes=consent_ledgers(units, lake_root),
            contaminated=contaminated_excluded(units),
            flag_problems=flag_problems(units),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def plan_mixture(spec_path: str | Path, *, lake_root: Path | None = None) -> dict[str, Any]:
    """Everything `build_mixture` decides before writing, on the real data: tokenizer, held-out
    documents, per-bucket targets with max_epochs caps and the shortfalls they cause.

    Raises the same SpecError as a build would (so `refinery mix validate` catches a `max_epochs`
    shortfall that only a build found before); writes nothing outside a temporary directory.
    """
    import tempfile

    spec_path = Path(spec_path)
    spec = load_spec(spec_path)
    with tempfile.TemporaryDirectory(prefix="refinery-mix-plan-") as tmp:
        tmp_dir = Path(tmp)
        tok = load_tokenizer(prepare_tokenizer(spec, spec_path.parent, tmp_dir, lake_root))
        writer = CorpusWriter(tmp_dir / "_corpus")
        for unit in plan_units(spec, spec_path.parent, lake_root):
            for batch in tokenize_unit_batches(unit, tok):
                writer.add(unit, batch)
        return assemble_corpus(spec, spec_path, writer.finish(), tmp_dir, lake_root, plan_only=True)


def _holdout(lengths: np.ndarray, spec: MixtureSpec, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of documents held out for eval: a seeded pick filling the eval sequences, within budget."""
    mask = np.zeros(len(lengths), dtype=bool)
    want = spec.eval.sequences_per_group * spec.seq_len
    budget = spec.eval.max_fraction * float(lengths.sum())
    if want == 0 or len(lengths) < 2:
        return mask
    used_slots, used_tokens = 0, 0
    for i in rng.permutation(len(lengths)):
        n = int(lengths[i])
        if n == 0:  # an empty document is no eval document
            continue
        if used_slots >= want or used_tokens + n > budget:
            break
        mask[i] = True
        used_slots += n + 1
        used_tokens += n
    return mask


def _group_entry(available: int = 0) -> dict[str, Any]:
    return {
        "available_tokens": available,
        "heldout_tokens": 0,
        "target_tokens": 0,
        "tokens": 0,
        "epochs": 0.0,
    }


def _source_entries(
    spec: MixtureSpec,
    bucket: str,
    corpus: Corpus,
    contaminated: dict[str, int] | None,
    flag_problems: dict[str, list[dict[str, Any]]] | None,
) -> list[dict[str, Any]]:
    """The manifest's `sources` entries of one bucket (tokens filled in while sampling); a
    required source that offers no document is a SpecError naming it."""
    lengths = corpus.store.lengths
    in_bucket = corpus.in_bucket(bucket)
    out = []
    for i, src in enumerate(spec.buckets[bucket].sources):
        m = in_bucket[corpus.source[in_bucket] == i]
        rejected = dict(
            sorted(
                Counter(
                    r["reason"]
                    for r in corpus.rejects
                    if r["bucket"] == bucket and r["source"] == i
                ).items()
            )
        )
        entry: dict[str, Any] = {
            "bucket": bucket,
            "index": i,
            "path": src.path,
            "where": src.where,
            "weight": src.weight,
            "documents": int(len(m)),
            "available_tokens": int(lengths[m].sum()),
            "tokens": 0,
        }
        key = f"{bucket}/{i}"
        if contaminated and key in contaminated:
            entry["contaminated_excluded"] = contaminated[key]
        if spec.image_tokens:
            entry["kind"] = src.kind
        entry["rejected"] = rejected
        if flag_problems and key in flag_problems:
            entry["unconsented_files"] = flag_problems[key]
        out.append(entry)
        if len(m) == 0 and not src.optional:
            why = f" ({sum(rejected.values())} rejected: {rejected})" if rejected else ""
            raise SpecError(
                f"buckets.{bucket}.sources[{i}]: {src.path} offers no rows with training_allowed = true"
                + (f" matching where {src.where!r}" if src.where else "")
                + why
                + "; loosen the predicate, fix the path, or mark the source `optional: true`"
            )
    return out


def _hold_out(
    spec: MixtureSpec, corpus: Corpus
) -> tuple[np.ndarray, list[tuple[str, str, np.ndarray]], dict[str, dict[str, Any]]]:
    """Documents held out of training (a mask over the corpus), the eval documents per bucket
    and group, and each bucket's group entries with their available and held-out tokens.

    Each bucket and group picks its own eval documents (`_holdout`); every copy of a picked row
    (the same row of the same file read by another source, in this bucket or another) is held
    out of training too, and counts in its own group's `heldout_tokens`."""
    lengths = corpus.store.lengths
    own = np.zeros(len(lengths), dtype=bool)
    eval_docs: list[tuple[str, str, np.ndarray]] = []
    groups: dict[str, dict[str, Any]] = {}
    members: dict[tuple[str, str], np.ndarray] = {}
    for bucket, bs in spec.buckets.items():
        in_bucket = corpus.in_bucket(bucket)
        groups[bucket] = {}
        for g in corpus.group_set(in_bucket) if bs.split_by else [ALL_GROUP]:
            idx = in_bucket[corpus.in_group(in_bucket, g)] if bs.split_by else in_bucket
            mask = _holdout(lengths[idx], spec, _rng(spec.seed, "eval", bucket, g))
            own[idx[mask]] = True
            if mask.any():
                eval_docs.append((bucket, g, idx[mask]))
            groups[bucket][g] = _group_entry(int(lengths[idx].sum()))
            members[(bucket, g)] = idx
    keys = corpus.row_keys()
    held = own | np.isin(keys, keys[own])
    for (bucket, g), idx in members.items():
        groups[bucket][g]["heldout_tokens"] = int(lengths[idx[held[idx]]].sum())
    return held, eval_docs, groups


def shared_rows(spec: MixtureSpec, corpus: Corpus) -> list[dict[str, Any]]:
    """Source files whose rows more than one source read (the same file listed twice, or under
    two buckets, with overlapping predicates): `file`, the `sources` ("bucket[i]") and `rows`,
    the number of rows read more than once. Sorted by file; [] when no row is read twice."""
    if corpus.file is None or not len(corpus.bucket):
        return []
    labels = [f"{b}[{i}]" for b, bs in spec.buckets.items() for i in range(len(bs.sources))]
    first = np.cumsum([0] + [len(bs.sources) for bs in spec.buckets.values()])
    start = dict(zip(spec.buckets, first.tolist(), strict=False))
    base = np.array([start[b] for b in corpus.bucket_names], dtype=np.int64)
    doc_src = base[corpus.bucket] + corpus.source
    pairs = np.unique(np.stack([corpus.row_keys(), doc_src], axis=1), axis=0)
    keys, counts = np.unique(pairs[:, 0], return_counts=True)
    shared = keys[counts > 1]
    if not len(shared):
        return []
    hit = pairs[np.isin(pairs[:, 0], shared)]
    out = []
    for f in np.unique(hit[:, 0] >> 40).tolist():
        mine = hit[(hit[:, 0] >> 40) == f]
        out.append(
            {
                "file": corpus.file_names[f],
                "sources": [labels[c] for c in np.unique(mine[:, 1]).tolist()],
                "rows": int(len(np.unique(mine[:, 0]))),
            }
        )
    return sorted(out, key=lambda e: e["file"])


def _pools(spec: MixtureSpec, bucket: str, corpus: Corpus, idx: np.ndarray, target: float):
    """Split a bucket's training documents into sampling pools and give each a float target."""
    bs = spec.buckets[bucket]
    if bs.sources[0].weight is not None:  # per-source weights: one pool per source
        keys = [(ALL_GROUP, i) for i in range(len(bs.sources))]
        members = {k: idx[corpus.source[idx] == k[1]] for k in keys}
        targets = {k: target * (bs.sources[k[1]].weight or 0.0) for k in keys}
    else:
        groups = corpus.group_set(idx) if bs.split_by else [ALL_GROUP]
        keys = [(g, None) for g in groups]
        members = {k: idx[corpus.in_group(idx, k[0])] if bs.split_by else idx for k in keys}
        avail = {k: float(corpus.store.lengths[m].sum()) for k, m in members.items()}
        shares = temperature_shares(avail, bs.temperature)
        targets = {k: target * shares[k] for k in keys} if keys else {}
        if not keys and target > 0:
            keys, members, targets = (
                [(ALL_GROUP, None)],
                {(ALL_GROUP, None): idx},
                {(ALL_GROUP, None): target},
            )
    return keys, members, targets


def assemble(
    spec: MixtureSpec,
    spec_path: Path,
    units: Sequence[ReadUnit],
    batches: Sequence[DocBatch],
    out_dir: Path,
    lake_root: Path | None = None,
) -> dict[str, Any]:
    """Sample, shuffle, pack and write shards, eval sets and manifest.json from tokenized units.

    `batches` (one per unit, in order) may be a lazy iterable, e.g. loading each worker's spill as
    it is needed: every batch is appended to an on-disk token file under `out_dir/_corpus` and
    dropped, so the driver holds labels per document, never the corpus.
    """
    out_dir = Path(out_dir)
    work = out_dir / "_corpus"
    shutil.rmtree(work, ignore_errors=True)
    try:
        corpus = Corpus.from_batches(units, batches, work)
        consent = consent_version(units, lake_root)
        return assemble_corpus(
            spec,
            spec_path,
            corpus,
            out_dir,
            lake_root,
            consent=consent,
            consent_lakes=consent_ledgers(units, lake_root),
            contaminated=contaminated_excluded(units),
            flag_problems=flag_problems(units),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def assemble_corpus(
    spec: MixtureSpec,
    spec_path: Path,
    corpus: Corpus,
    out_dir: Path,
    lake_root: Path | None = None,
    *,
    plan_only: bool = False,
    consent: dict[str, Any] | None = None,
    consent_lakes: list[dict[str, Any]] | None = None,
    contaminated: dict[str, int] | None = None,
    flag_problems: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """`assemble` on an already-built corpus; with plan_only, stop after sampling (nothing written)
    and return the planned buckets, sources and shortfalls (a disallowed shortfall still raises).
    `consent` is the consent ledger version the units honoured (`consent_version`, over every
    lake's files); the manifest records it as `consent_ledger` when the ledger has files.
    `consent_lakes` (`consent_ledgers`): the same per lake, recorded as `consent_ledgers` (a
    list, [] when no lake has a ledger) whenever given, so a check finds every lake's files.
    `contaminated`: rows left out per source as contaminated (`contaminated_excluded`); each
    source's entry records its count as `contaminated_excluded` when its files carry the column.
    `flag_problems` (`read.flag_problems`): files of optional sources whose training_allowed is
    not boolean (no row of them consented), recorded as the source's `unconsented_files`."""
    from training.mixture.report import accounting_checks

    out_dir = Path(out_dir)
    tok = load_tokenizer(out_dir / "tokenizer.json")
    special = special_token_ids(tok)
    lengths = corpus.store.lengths
    spans = spec.stage_spans()
    eff = spec.effective_weights()
    bucket_targets = largest_remainder({b: eff[b] * spec.total_tokens for b in spec.buckets})
    buckets_out: dict[str, Any] = {}
    sources_out: list[dict[str, Any]] = []
    shortfalls: list[dict[str, Any]] = []
    # per stage: (documents, piece lengths, piece starts within the document) per pool
    stage_copies: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in spans]
    stage_buckets: list[dict[str, int]] = [dict.fromkeys(spec.buckets, 0) for _ in spans]

    for bucket in spec.buckets:
        sources_out += _source_entries(spec, bucket, corpus, contaminated, flag_problems)
    # Hold out eval documents per bucket and group before sampling; a row held out anywhere
    # (the same file read by two sources) is kept out of every source's training pool.
    held, eval_docs, groups_by_bucket = _hold_out(spec, corpus)

    for bucket, bs in spec.buckets.items():
        in_bucket = corpus.in_bucket(bucket)
        groups_out = groups_by_bucket[bucket]
        train_idx = in_bucket[~held[in_bucket]]
        keys, members, targets = _pools(spec, bucket, corpus, train_idx, bucket_targets[bucket])
        avail = {k: float(lengths[members[k]].sum()) for k in keys}
        capped, _ = cap_targets(targets, avail, bs.max_epochs)
        int_targets = largest_remainder(capped)
        stage_want = [frac * w[bucket] * spec.total_tokens for _, frac, w in spans]
        placed = 0
        bucket_images = 0
        for k in keys:
            pool = members[k]
            d, n = repetition_plan(
                lengths[pool],
                corpus.repeat[pool],
                int_targets[k],
                _rng(spec.seed, "sample", bucket, str(k)),
            )
            perm = _rng(spec.seed, "order", bucket, str(k)).permutation(len(d))
            d, n = pool[d[perm]], n[perm]
            images = spec.image_tokens and bs.modality != "text"
            if images:
                d, n, n_img = _whole_blocks(corpus, d, n, special["image"], spec.image_tokens)
                bucket_images += n_img
            copy, start, piece, stage = cut_at_stages(n, stage_want)
            if images:
                start, piece, keep = _whole_block_cuts(
                    corpus, d[copy], copy, start, piece, special["image"], spec.image_tokens
                )
                copy, start, piece, stage = copy[keep], start[keep], piece[keep], stage[keep]
            for s in range(len(spans)):
                at = stage == s
                stage_copies[s].append((d[copy[at]], piece[at], start[at]))
                stage_buckets[s][bucket] += int(piece[at].sum())
            g = groups_out.setdefault(k[0], _group_entry())
            g["target_tokens"] += int(int_targets[k])
            g["tokens"] += int(n.sum())
            placed += int(n.sum())
            for src in sources_out:
                if src["bucket"] == bucket:
                    src["tokens"] += int(n[corpus.source[d] == src["index"]].sum())
                    if k[1] == src["index"]:
                        src["target_tokens"] = int(int_targets[k])
        for g in groups_out.values():
            train_avail = g["available_tokens"] - g["heldout_tokens"]
            g["epochs"] = round(g["tokens"] / train_avail, 6) if train_avail else 0.0
        missing = bucket_targets[bucket] - placed
        if missing > 0:
            shortfalls.append(
                _shortfall(spec, bucket, bucket_targets[bucket], placed, len(in_bucket))
            )
        buckets_out[bucket] = {
            "weight": eff[bucket],
            "modality": bs.modality,
            "target_tokens": int(bucket_targets[bucket]),
            "tokens": placed,
            "groups": groups_out,
        }
        if spec.image_tokens:
            buckets_out[bucket]["images"] = bucket_images
            buckets_out[bucket]["image_tokens"] = bucket_images * spec.image_tokens

    if shortfalls and not spec.allow_shortfall:
        lines = "\n".join(f"  buckets.{s['bucket']}: {s['reason']}" for s in shortfalls)
        raise SpecError(
            f"{spec_path}: not enough data for the requested tokens\n{lines}\n"
            "  (lower total_tokens or the weight, raise max_epochs, or set allow_shortfall: true)"
        )
    if plan_only:
        return {"buckets": buckets_out, "sources": sources_out, "shortfalls": shortfalls}

    imgs = corpus if spec.image_tokens else None
    shards, stages_out, stats, shard_images = _write_shards(
        spec, corpus.store, stage_copies, spans, special, out_dir, imgs
    )
    _stage_accounting(spec, stages_out, stage_buckets)
    evals, eval_images = _write_eval(spec, corpus.store, eval_docs, special, out_dir, imgs)
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "name": spec.name,
        "spec_sha256": spec.sha256(),
        "seq_len": spec.seq_len,
        "total_tokens": spec.total_tokens,
        "seed": spec.seed,
        "tolerance": spec.tolerance,
        "tokenizer": "tokenizer.json",
        # what a training run records and checks its checkpoints against (--init, eval)
        "tokenizer_sha256": hashlib.sha256((out_dir / "tokenizer.json").read_bytes()).hexdigest(),
        "vocab_size": tok.get_vocab_size(),
        "special_tokens": special,
        "dtype": "uint32",
        "buckets": buckets_out,
        "sources": sources_out,
        "archives": _archives(corpus, stage_copies, eval_docs),
        "stages": stages_out,
        "shortfalls": shortfalls,
        "num_sequences": stats.sequences,
        "tokens": stats.doc_tokens,
        "boundary_tokens": stats.boundary_tokens,
        "padding_tokens": stats.padding_tokens,
        "waste_fraction": stats.padding_tokens / max(stats.sequences * spec.seq_len, 1),
        "shards": shards,
        "eval": evals,
        "shared_rows": shared_rows(spec, corpus),
        "spec": spec.model_dump(mode="json"),
    }
    if consent and consent.get("files"):  # the consent ledger honoured (none: key absent)
        manifest["consent_ledger"] = consent
    if consent_lakes is not None:  # per lake (checks.mixture_no_opted_out_rows reads them)
        manifest["consent_ledgers"] = consent_lakes
    if spec.image_tokens:
        manifest["image_tokens"] = spec.image_tokens
        manifest.update(
            write_image_outputs(out_dir, corpus, shards, shard_images, evals, eval_images)
        )
    manifest.update(write_rejects(out_dir, corpus.rejects))
    if spec.image_tokens:
        manifest["modality_shares"] = _modality_shares(spec, buckets_out)
    manifest["checks"] = accounting_checks(manifest)
    # The lake fields every dataset's manifest has: schema version, rows, the inputs it was made
    # from, the config hash.
    tok_src = (
        []
        if isinstance(spec.tokenizer, TokenizerTrain)
        else [str(resolve_path(spec.tokenizer, spec_path.parent, lake_root))]
    )
    files = {
        f
        for bucket, bs in spec.buckets.items()
        for i in range(len(bs.sources))
        for f in source_files(spec, bucket, i, spec_path.parent, lake_root)
    }
    inputs = [str(spec_path), *tok_src, *sorted(files)]
    # Deterministic: the same spec, data and seed give a byte-identical manifest (no time, no
    # directory name), whichever executor built it.
    lake = lake_fields(out_dir, rows=stats.sequences, inputs=inputs, config_sha256=spec.sha256())
    manifest.update({k: v for k, v in lake.items() if k not in ("dataset", "written_at")})
    tmp = out_dir / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=False))
    os.replace(tmp, out_dir / "manifest.json")
    finish_build(out_dir)
    return manifest


def _archives(corpus: Corpus, stage_copies, eval_docs) -> list[dict[str, Any]]:
    """The archives the mixture drew from (the documents' `source_file`), sorted by name:
    documents and tokens placed in the training shards, documents held out for eval."""
    if corpus.archive is None or not corpus.archive_names:
        return []
    n = len(corpus.archive_names)
    docs = np.zeros(n, np.int64)
    tokens = np.zeros(n, np.int64)
    held = np.zeros(n, np.int64)
    placed = [(d, k) for copies in stage_copies for d, k, _ in copies if len(d)]
    if placed:
        d = np.concatenate([d for d, _ in placed])
        k = np.concatenate([k for _, k in placed])
        code = corpus.archive[d]
        known = code >= 0
        np.add.at(tokens, code[known], k[known])
        distinct = np.unique(d[known])
        np.add.at(docs, corpus.archive[distinct], 1)
    for _, _, idx in eval_docs:
        code = corpus.archive[idx]
        np.add.at(held, code[code >= 0], 1)
    out = [
        {
            "source_file": name,
            "documents": int(docs[i]),
            "tokens": int(tokens[i]),
            "heldout_documents": int(held[i]),
        }
        for i, name in enumerate(corpus.archive_names)
        if docs[i] or held[i]
    ]
    return sorted(out, key=lambda a: a["source_file"])


def _shortfall(
    spec: MixtureSpec, bucket: str, target: int, placed: int, docs: int
) -> dict[str, Any]:
    bs = spec.buckets[bucket]
    if docs == 0:
        reason = f"no data: every source is missing or empty (wanted {target:,} tokens)"
    else:
        cap = f"max_epochs={bs.max_epochs:g} allows" if bs.max_epochs else "the data holds"
        reason = (
            f"{target:,} tokens requested but {cap} only {placed:,} (short {target - placed:,})"
        )
    return {
        "bucket": bucket,
        "target_tokens": target,
        "tokens": placed,
        "missing_tokens": target - placed,
        "fraction_missing": (target - placed) / target if target else 0.0,
        "reason": reason,
    }


def _clean(dirpath: Path) -> None:
    """Remove arrays of a previous build so no stale shard survives in the directory."""
    if dirpath.exists():
        for f in [*dirpath.glob("*.npy"), *dirpath.glob("*.npz")]:
            f.unlink()
    dirpath.mkdir(parents=True, exist_ok=True)


def _pack(spec, store, docs, lengths, special, rows, stats, corpus, starts=None):
    """pack_sequences, or its image-aware form (yielding (block, ImageRows)) with a corpus;
    `starts`: where each piece begins in its document (None: every copy is a document's head)."""
    img_offsets = corpus.img_offsets if corpus is not None else None
    img_ids = corpus.img_ids if corpus is not None else None
    if starts is not None:
        store, img_offsets, img_ids = _piece_view(
            store, docs, lengths, starts, corpus, special.get("image"), spec.image_tokens
        )
        docs = np.arange(len(docs), dtype=np.int64)
    if corpus is None:
        for block in pack_sequences(
            store, docs, lengths, spec.seq_len, special["boundary"], special["pad"], rows, stats
        ):
            yield block, None
        return
    yield from pack_sequences_images(
        store,
        docs,
        lengths,
        spec.seq_len,
        special["boundary"],
        special["pad"],
        rows,
        stats,
        image_id=special["image"],
        image_tokens=spec.image_tokens,
        img_offsets=img_offsets,
        img_ids=img_ids,
    )


def _piece_view(store, docs, lengths, starts, corpus, image_id, k):
    """Pieces (document docs[p] from token starts[p]) as documents 0..P-1 over the same tokens,
    with the images they hold (img_offsets, img_ids; None without a corpus). Packing reads copy p
    as the first lengths[p] tokens from offsets[p], so a piece's offset is where it begins."""
    view = TokenStore(store.tokens, np.append(store.offsets[docs] + starts, store.offsets[-1]))
    if corpus is None:
        return view, None, None
    per_doc = np.diff(corpus.img_offsets)[docs]
    skip, count = np.zeros(len(docs), np.int64), per_doc.copy()
    partial = (starts > 0) | (lengths < store.lengths[docs])
    for p in np.flatnonzero(partial & (per_doc > 0)).tolist():
        at = block_starts(store.doc(int(docs[p])), image_id, k)
        skip[p] = int((at < starts[p]).sum())
        count[p] = int(((at >= starts[p]) & (at < starts[p] + lengths[p])).sum())
    img_offsets = np.zeros(len(docs) + 1, np.int64)
    np.cumsum(count, out=img_offsets[1:])
    first = corpus.img_offsets[docs] + skip
    idx = np.repeat(first - img_offsets[:-1], count) + np.arange(img_offsets[-1])
    return view, img_offsets, corpus.img_ids[idx]


def _write_shards(spec, store, stage_copies, spans, special, out_dir: Path, corpus=None):
    _clean(out_dir / "shards")
    shards, stages_out, stats, images = [], [], PackStats(), []
    for s, (name, frac, _) in enumerate(spans):
        d = np.concatenate([c[0] for c in stage_copies[s]] or [np.zeros(0, np.int64)])
        n = np.concatenate([c[1] for c in stage_copies[s]] or [np.zeros(0, np.int64)])
        at = np.concatenate([c[2] for c in stage_copies[s]] or [np.zeros(0, np.int64)])
        perm = _rng(spec.seed, "shuffle", name).permutation(len(d))  # the global shuffle of a stage
        first = stats.sequences
        before = stats.doc_tokens
        for block, rows in _pack(
            spec, store, d[perm], n[perm], special, spec.shard_sequences, stats, corpus, at[perm]
        ):
            images.append(rows)
            rel = f"shards/{len(shards):05d}.npy"
            shards.append(
                {
                    "path": rel,
                    "num_sequences": int(block.shape[0]),
                    "sha256": save_array(block, out_dir / rel),
                    "stage": name,
                }
            )
        stages_out.append(
            {
                "name": name,
                "fraction": frac,
                "first_sequence": first,
                "num_sequences": stats.sequences - first,
                "tokens": stats.doc_tokens - before,
            }
        )
    return shards, stages_out, stats, images


def eval_paths(keys: Sequence[tuple[str, str]]) -> list[str]:
    """`eval/<bucket>.<group>.npy` per (bucket, group), one file each: a group name that is not
    plain ASCII letters, digits, '_' and '-' (or whose name a group before it took, also as a
    case-insensitive file system sees it) is written sanitised with `-<sha256[:8]>` of the raw
    name (longer if still taken). Plain names come first and keep their names."""
    paths: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for key in keys:  # plain ones first
        bucket, group = key
        name = f"{bucket}.{group}"
        if re.fullmatch(r"[A-Za-z0-9_-]+", group) and name.casefold() not in taken:
            paths[key] = name
            taken.add(name.casefold())
    for key in keys:
        if key in paths:
            continue
        bucket, group = key
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", group)
        digest = hashlib.sha256(group.encode("utf-8", "surrogatepass")).hexdigest()
        for n in range(8, len(digest) + 1):
            name = f"{bucket}.{safe}-{digest[:n]}"
            if name.casefold() not in taken:
                break
        paths[key] = name
        taken.add(name.casefold())
    return [f"eval/{paths[k]}.npy" for k in keys]


def _write_eval(spec, store, eval_docs, special, out_dir: Path, corpus=None):
    _clean(out_dir / "eval")
    out, images = [], []
    rels = eval_paths([(bucket, group) for bucket, group, _ in eval_docs])
    for (bucket, group, docs), rel in zip(eval_docs, rels, strict=True):
        stats = PackStats()
        packed = list(
            _pack(
                spec,
                store,
                docs,
                store.lengths[docs],
                special,
                max(spec.eval.sequences_per_group, 1),
                stats,
                corpus,
            )
        )
        arr = np.concatenate([b for b, _ in packed])[: spec.eval.sequences_per_group]
        if corpus is not None:
            images.append(ImageRows.concat([r for _, r in packed]).head(arr.shape[0]))
        save_array(arr, out_dir / rel)
        out.append(
            {
                "bucket": bucket,
                "group": group,
                "path": rel,
                "num_sequences": int(arr.shape[0]),
                "documents": int(len(docs)),
                "tokens": int(store.lengths[docs].sum()),
            }
        )
    return out, images


def _stage_accounting(
    spec: MixtureSpec, stages_out: list[dict[str, Any]], placed: list[dict[str, int]]
) -> None:
    """Add each stage's target tokens and, per bucket, its stage weight, target and placed tokens
    to the manifest's `stages` entries (`report.accounting_checks` holds them to the weights)."""
    for entry, (_, frac, weights), tokens in zip(
        stages_out, spec.stage_spans(), placed, strict=True
    ):
        targets = largest_remainder({b: frac * weights[b] * spec.total_tokens for b in weights})
        entry["target_tokens"] = sum(targets.values())
        entry["buckets"] = {
            b: {"weight": weights[b], "target_tokens": targets[b], "tokens": tokens[b]}
            for b in weights
        }


def _whole_block_cuts(corpus, docs, copy, start, length, image_id: int, k: int):
    """Stage cuts that fall inside an image block moved to the block's end (an image lies whole
    in one stage); returns (starts, lengths, mask of the pieces left non-empty). `docs` is each
    piece's document; pieces of one copy are consecutive."""
    start, stop = start.copy(), start + length
    per_doc = np.diff(corpus.img_offsets)[docs]
    for p in np.flatnonzero((start > 0) & (per_doc > 0)).tolist():
        at = block_starts(corpus.store.doc(int(docs[p])), image_id, k)
        inside = at[(at < start[p]) & (at + k > start[p])]
        if len(inside):
            start[p] = int(inside[0]) + k
            stop[p - 1] = start[p]  # the copy's previous piece ends where this one begins
    length = stop - start
    return start, length, length > 0


def _whole_blocks(corpus: Corpus, docs: np.ndarray, lengths: np.ndarray, image_id: int, k: int):
    """Copies of image documents cut inside an image block are extended to the block's end (an
    image enters whole or not at all); returns (docs, lengths, images the copies hold)."""
    lengths = lengths.copy()
    per_doc = np.diff(corpus.img_offsets)[docs]
    full = corpus.store.lengths[docs]
    images = int(per_doc[lengths >= full].sum())
    for j in np.flatnonzero((lengths < full) & (per_doc > 0)).tolist():
        starts = block_starts(corpus.store.doc(int(docs[j])), image_id, k)
        inside = starts[(starts < lengths[j]) & (starts + k > lengths[j])]
        if len(inside):
            lengths[j] = int(inside[0]) + k
        images += int((starts < lengths[j]).sum())
    return docs, lengths, images


def _modality_shares(spec: MixtureSpec, buckets_out: dict[str, Any]) -> dict[str, Any]:
    """Realised share of all placed tokens (image tokens included) per bucket vs its weight."""
    placed = sum(b["tokens"] for b in buckets_out.values())
    out: dict[str, Any] = {"tolerance": spec.tolerance, "buckets": {}}
    for name, b in buckets_out.items():
        share = b["tokens"] / placed if placed else 0.0
        out["buckets"][name] = {
            "modality": b["modality"],
            "target_share": b["weight"],
            "share": share,
            "deviation": share - b["weight"],
            "ok": abs(share - b["weight"]) <= spec.tolerance,
            "images": b.get("images", 0),
            "image_tokens": b.get("image_tokens", 0),
        }
    return out
