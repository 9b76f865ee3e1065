"""Byte-level BPE tokenizer (Hugging Face `tokenizers`) trained on a sample of the lake.

The saved file is a standard `tokenizer.json`: `tokenizers.Tokenizer.from_file(path)` and
`transformers.PreTrainedTokenizerFast(tokenizer_file=path)` both load it. Special tokens take
the first ids, in the order of `SPECIAL_TOKENS`.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

# Role -> token. Roles are the keys the manifest's `special_tokens` uses.
SPECIAL_TOKENS: dict[str, str] = {
    "boundary": "<|endoftext|>",
    "pad": "<|pad|>",
    "image": "<|image|>",
    "image_start": "<|image_start|>",
    "image_end": "<|image_end|>",
}
CHARS_PER_TOKEN = 4  # rough sizing of a text sample before any tokenizer exists
MIN_VOCAB = 256 + len(SPECIAL_TOKENS)
# Pre-tokenization: GPT-2's pattern (what ByteLevel splits by) with the combining marks (\p{M})
# inside letter runs, as o200k's pattern has them. GPT-2's puts each vowel sign, virama or vowel
# point in a piece of its own, so no merge joins it to its letter: on lingua-py's sentences
# (16k vocab trained on 75 languages, 300 held-out sentences each) Tamil takes 0.58x the tokens,
# Hindi 0.71x, Bengali 0.68x, Thai 0.87x; text without marks splits exactly as before (the
# other languages' counts move by 0-2% as the merges are shared differently); 0.96x overall.
PRE_TOKENIZE = (
    r"'s|'t|'re|'ve|'m|'ll|'d| ?[\p{L}\p{M}]+| ?\p{N}+| ?[^\s\p{L}\p{M}\p{N}]+|\s+(?!\S)|\s+"
)


def train_tokenizer(
    texts: Iterable[str], vocab_size: int, out: str | Path, *, min_frequency: int = 2
) -> Path:
    """Train a byte-level BPE tokenizer on texts and save it as tokenizer.json at `out`."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    if vocab_size < MIN_VOCAB:
        raise ValueError(
            f"vocab_size {vocab_size} is too small: byte-level BPE needs at least {MIN_VOCAB}"
        )
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRE_TOKENIZE), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS.values()),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    check_text_only(tok, out)  # learned from text holding "<|endoftext|>", it is still text
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tok.save(str(tmp))
    os.replace(tmp, out)
    return out


def load_tokenizer(path: str | Path):
    """Load a tokenizer.json and check it carries every Refinery special token."""
    from tokenizers import Tokenizer

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"tokenizer {path} does not exist; train one with `refinery tokenizer train --out {path}`"
        )
    tok = Tokenizer.from_file(str(path))
    check_text_only(text_only(tok), path)
    return tok


def text_only(tok):
    """`tok` set to encode special-token strings as ordinary text (`encode_special_tokens`, not
    saved in tokenizer.json): a document's literal "<|endoftext|>" or "<|pad|>" never becomes a
    boundary or pad id. Only the code puts special ids in the stream (`special_token_ids`)."""
    tok.encode_special_tokens = True
    return tok


def check_text_only(tok, path: str | Path = "<tokenizer>") -> dict[str, int]:
    """Role -> special id, after checking that no special token's string, met in text, encodes to
    a special id (a model whose merges rebuild "<|pad|>" would turn text into control ids)."""
    ids = special_token_ids(tok, path)
    text_only(tok)
    special = set(ids.values())
    for token in SPECIAL_TOKENS.values():
        got = tok.encode(f"a {token} b", add_special_tokens=False).ids
        if special.intersection(got):
            raise ValueError(
                f"{path}: the text {token!r} encodes to a special-token id (its pre-tokenizer "
                "lets merges rebuild the token); retrain it with `refinery tokenizer train`"
            )
    return ids


def special_token_ids(tok, path: str | Path = "<tokenizer>") -> dict[str, int]:
    """Role -> id of the special tokens; a clear error naming the missing token."""
    ids = {}
    for role, token in SPECIAL_TOKENS.items():
        tid = tok.token_to_id(token)
        if tid is None:
            raise ValueError(
                f"{path}: special token {token} ({role}) missing; train it with `refinery tokenizer train`"
            )
        ids[role] = tid
    return ids


def encode_texts(
    tok, texts: Sequence[str] | pa.ChunkedArray, batch_size: int = 1024
) -> tuple[np.ndarray, np.ndarray]:
    """Tokenize texts (a sequence of str, or an Arrow string array without nulls) in batches;
    return (uint32 concatenated ids, int64 lengths).

    encode_batch_fast skips offset tracking, which packing never needs, and runs each batch on the Rust
    (Rayon) threads with the GIL released. One helper thread feeds it, so while batch k+1 is encoded
    this thread turns batch k's ids into arrays; at most two batches of encodings are alive at once.
    Arrow input is turned into Python strings a batch at a time. Special-token strings in the
    texts are encoded as ordinary text (`text_only`): document text never yields a special id.
    """
    text_only(tok)
    n = len(texts)

    def encode(start: int):
        part = texts[start : start + batch_size]
        part = part.to_pylist() if hasattr(part, "to_pylist") else list(part)
        return tok.encode_batch_fast(part, add_special_tokens=False)

    parts: list[np.ndarray] = []

    def collect(encoded) -> None:
        parts.extend(np.asarray(enc.ids, dtype=np.uint32) for enc in encoded.result())

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        for start in range(0, n, batch_size):
            submitted = pool.submit(encode, start)
            if pending is not None:
                collect(pending)
            pending = submitted
        if pending is not None:
            collect(pending)
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    tokens = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
    return tokens, lengths


def expand_sources(patterns: Sequence[str | Path]) -> list[Path]:
    """Expand paths/globs to a sorted list of existing Parquet files; error if a pattern matches nothing."""
    files: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(str(pattern), recursive=True))
        if not matches:
            raise FileNotFoundError(f"tokenizer source {pattern} matches no file")
        files.extend(Path(m) for m in matches)
    return files


def sample_texts(
    files: Sequence[Path],
    sample_tokens: int,
    seed: int = 0,
    text_column: str = "text",
    consent: Sequence[str | Path] = (),
    where: str | None = None,
    text_columns: Sequence[str] | None = None,
) -> list[str]:
    """A deterministic sample of about `sample_tokens` tokens of training-allowed text from Parquet files.

    Training-allowed is the mixture's rule, over the relation the shards are read from
    (training/mixture/sources.py `allowed_rows_sql`, the SQL form of common.consent): the row's
    training_allowed is the boolean true, the consent ledger files `consent`
    (`common.consent.ledger_files(lake)`) have not opted its document out, a NaN score reads as
    NULL, and a row holding invalid UTF-8 is left out. `where`: a predicate the rows must also
    meet (a mixture source's, already normalised). `text_columns`: each file's text column
    (default `text_column` for every file).
    """
    import contextlib

    import duckdb

    from training.mixture.sources import (
        ReadUnit,
        allowed_rows_sql,
        contamination_sql,
        readable_file,
    )

    budget_chars = sample_tokens * CHARS_PER_TOKEN
    columns = list(text_columns) if text_columns is not None else [text_column] * len(files)
    if len(columns) != len(files):
        raise ValueError(f"{len(files)} tokenizer sources but {len(columns)} text columns")
    ledger = tuple(str(f) for f in consent)

    def lit(value: object) -> str:
        return "'" + str(value).replace("'", "''") + "'"

    # The sample is picked inside DuckDB: rows are ranked by a seeded hash of (the file's place in
    # `files`, row) - never its path, so a lake moved or built elsewhere samples alike - and only
    # the rows whose running length starts inside the budget are fetched, so the driver never holds
    # more than the sample. Same consent rule as shards: opted-out text never shapes the vocabulary.
    ranked, texts = [], []
    from common.inputs import InputError, check_file

    for f, column in zip(files, columns, strict=True):  # one line naming file and column
        schema = check_file(
            f,
            {column: "string"},
            fix=f"give tokenizer sources with a text column {column!r} (e.g. documents.parquet)",
            utf8=[],
        )
        if "training_allowed" not in {n.lower() for n in schema.names}:  # nor a directory name
            raise InputError(
                f"{f}: no training_allowed column; a tokenizer source carries its consent as a "
                "boolean training_allowed column (e.g. the filter's documents.parquet)"
            )
    with contextlib.ExitStack() as stack:
        try:
            for i, (f, column) in enumerate(zip(files, columns, strict=True)):
                col = '"' + column.replace('"', '""') + '"'
                read = lit(stack.enter_context(readable_file(str(f))))
                unit = ReadUnit("tokenizer", 0, str(f), None, column, None, (), ledger)
                terms = [t for t in (contamination_sql(unit), where) if t]  # no eval text
                extra = "".join(f" AND ({t})" for t in terms)
                ranked.append(
                    f"SELECT {i} AS filename, file_row_number AS r, length({col}) AS n, "
                    f"hash('{i}:' || file_row_number::VARCHAR || ':' || "
                    f"$seed::VARCHAR) AS k FROM ({allowed_rows_sql(unit, source=read)}) "
                    f"WHERE length({col}) > 0{extra}"
                )
                texts.append(
                    f"SELECT {i} AS filename, file_row_number AS r, {col} AS text "
                    f"FROM read_parquet({read}, file_row_number=true, hive_partitioning=false)"
                )
        except (OSError, ValueError) as exc:  # pyarrow cannot read a file's schema
            raise ValueError(
                f"cannot read tokenizer sources {[str(f) for f in files]}: {exc}"
            ) from exc
        if not ranked:
            raise ValueError("tokenizer sources: no file given")
        sql = f"""
            WITH ranked AS ({" UNION ALL ".join(ranked)}),
            picked AS (
                SELECT filename, r, k,
                       sum(n) OVER (ORDER BY k, filename, r ROWS UNBOUNDED PRECEDING) - n AS before
                FROM ranked
                QUALIFY before < $budget
            ),
            t AS ({" UNION ALL ".join(texts)})
            SELECT t.text, p.before
            FROM picked p
            JOIN t ON t.filename = p.filename AND t.r = p.r
            ORDER BY p.k, p.filename, p.r
        """
        con = duckdb.connect()
        try:
            rows = con.execute(sql, {"seed": seed, "budget": budget_chars}).fetchall()
        except duckdb.Error as exc:
            raise ValueError(
                f"cannot read tokenizer sources {[str(f) for f in files]}: {exc}"
            ) from exc
        finally:
            con.close()
    out = [text[: budget_chars - before] for text, before in rows]
    if not out:
        for f in files:
            bad = flag_type_problem(f)
            if bad:
                raise ValueError(bad)
        cols = sorted(set(columns))
        raise ValueError(
            f"tokenizer sources {[str(f) for f in files]} hold no training-allowed text: no row "
            f"has training_allowed = true (boolean) and a non-empty "
            f"{cols[0] if len(cols) == 1 else cols!r}"
            + (f" matching where {where!r}" if where else "")
            + "; give sources with consented text or set `tokenizer: {path: ...}`"
        )
    return out


def flag_type_problem(file: str | Path) -> str | None:
    """One line when a file's `training_allowed` column is there but not boolean (so no row of it
    gives consent: training/mixture/sources.py `flag_sql`), naming the column, its type and the
    fix; None otherwise."""
    import pyarrow as pa

    from training.mixture.sources import FLAG_COLUMN, _schema, has_flag_column

    schema = _schema(str(file))
    if not has_flag_column(schema) or FLAG_COLUMN not in schema.names:
        return None
    kind = schema.field(FLAG_COLUMN).type
    if pa.types.is_boolean(kind):
        return None
    return (
        f"{file}: column {FLAG_COLUMN} holds {kind}, not boolean, so no row gives consent; "
        f"write {FLAG_COLUMN} as a boolean column (true only where training is allowed)"
    )
