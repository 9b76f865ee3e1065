"""A licensed JSONL/Parquet corpus -> documents.parquet rows (`refinery import docs`).

The corpus maps its own fields: `text_field`, `id_field`, `url_field`, each a key or a dotted path
into nested objects (Dolma's `metadata.url`, RedPajama's `meta.url`). Without `url_field` the URL
is looked for where the common corpus layouts keep it (`URL_FIELDS`: FineWeb's and C4's `url`,
Dolma's `metadata.url`, ...), so a document that names its page is never consented by the
licence alone; with `url_field`, a row that lacks it (or has it empty) is looked for there too,
for the same reason. A document without a URL carries the licence given and is consented by it
(`consent_source: licence: <x>`); one without a URL and without a licence is not consented. A
document with a URL goes through the same consent check as an imported page (today's
robots.txt for both tokens, `crawlers.imports.consent`). A document keeps its URL as the corpus
spells it; its id (when the corpus gives none), its host and the key its repeats and carried
opt-outs are found by are made from the URL's canonical form (`crawlers.imports.warc.page_url`),
so `HTTP://host/a` and `http://host/a#part` are one document (a repeat).
A row's own consent is kept and can only say no (`source_consent`): when the row has
`training_allowed`, at the top level or nested (`metadata.training_allowed`, `meta.`), each must
be the boolean true (`common.consent.flag_true`), and a `noai` that is on takes the document
out (`noai`/`noimageai` are carried to it); `consent_source` names it (`licence: cc-by-4.0;
source row: metadata.training_allowed is false`).
Every row read is a document or a recorded skip (`malformed_row`: a line that is no JSON
object, a Parquet row in a row group that cannot be read or with a string that is not UTF-8;
`empty_text` (the detail says which: missing, null, not a string, empty, white space only),
`too_large`: a text over `max_record_bytes` of UTF-8 (default `import wet`'s 8 MB),
`duplicate_payload`, `duplicate_id`, `id_conflict`: a `--id-field` id that an
earlier row gives to a different text). A repeat's own no to training is carried to the
document kept in its place (`crawlers.imports.run.Carried`). A file none of whose rows has the
text field is one `no_text_field` skip naming the file, the field and the fix (RedPajama-V2's
`--text-field raw_content`; the summary's `files_rejected`); when no file has it the import
stops with that line.
JSON Lines are UTF-8 (a byte order mark or none) or UTF-16/32 (by its byte order mark or, without
one, its zero bytes: JSON's rule), split into lines on the decoded text. A document's `text` is
the row's with each control character extraction turns into a space (C0 but tab, newline,
carriage return: `crawlers.extract.decode.drop_controls`) so turned, then stripped;
`content_sha256` is the hash of that stored text, so rows differing only in white space around
the text are one document (`duplicate_payload`). The corpus's own fields are kept: its id
(`--id-field`, else `id`: Dolma's, FineWeb's `<urn:uuid:...>`) as `source_id` (a string; `id`
is made from the URL without `--id-field`), its language (`LANG_FIELDS`) as `lang_hint` (the
base code, as `import wet` has it), the capture time (`FETCHED_FIELDS`: FineWeb's `date`, C4's
`timestamp`) as `fetched_at` and the document's own date (`DATE_FIELDS`: Dolma's `created`) as
`date`. Files are named by paths, globs, fsspec URLs or directories (`corpus_files`: a
directory's corpus files, recursively; a directory or glob passes over `_SUCCESS`, hidden and
`.crc` files and empty files, listed in the summary's `files_skipped`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from common.inputs import LONE_ESCAPE, lone_surrogate
from crawlers.imports.run import expand
from crawlers.imports.warc import open_source, page_url
from crawlers.imports.wet import MAX_TEXT_BYTES, Spool, _decide_and_write, _doc_host, _doc_id

# Where corpora keep a document's URL, tried in order when --url-field is not given: FineWeb,
# C4, RefinedWeb (`url`), Dolma (`metadata.url`), RedPajama (`meta.url`), OSCAR
# (`warc_headers.warc-target-uri`), and other spellings seen in the wild.
URL_FIELDS = (
    "url",
    "URL",
    "metadata.url",
    "meta.url",
    "source_url",
    "page_url",
    "warc_headers.warc-target-uri",
    "WARC-Target-URI",
)
_MISSING = object()
FLAG = "training_allowed"
# Where corpora nest a row's own fields (Dolma's `metadata`, RedPajama's `meta`): a consent
# flag or opt-out there counts as one at the top level does.
NESTED = ("metadata", "meta")
CORPUS_FILES = (
    "JSONL/Parquet corpus files, e.g. 'corpus/*.jsonl.gz', 'data/*.parquet' or a directory"
)
# What a directory's corpus files are named (`corpus_files`), each also compressed.
CORPUS_SUFFIXES = (".jsonl", ".json", ".ndjson", ".jsonlines", ".parquet")
COMPRESSIONS = (".gz", ".zst", ".zstd", ".bz2", ".xz")
# The corpus's own id of a row, kept as `source_id` (Dolma's, datatrove's and FineWeb's `id`,
# `<urn:uuid:...>`) when --id-field does not name another.
ID_FIELDS = ("id",)
# The row's language (`lang_hint`, its base code): FineWeb's and RedPajama-V2's `language`,
# datatrove's `metadata.language`.
LANG_FIELDS = ("language", "lang", "metadata.language", "meta.language", "metadata.lang")
# When the page was fetched (`fetched_at`, as for `import wet` the capture's WARC-Date):
# FineWeb's `date` and C4's `timestamp` are the Common Crawl capture's, RedPajama-V2's
# `date_download` too.
FETCHED_FIELDS = (
    "date",
    "timestamp",
    "date_download",
    "metadata.date",
    "metadata.timestamp",
    "meta.timestamp",
    "metadata.warc_date",
)
# The document's own date (`date`, as extraction's page date): Dolma's `created`, when the
# original document was created (`added` is when Dolma took it in).
DATE_FIELDS = ("created", "metadata.created")
# Where corpora without `text` keep it (the fix a file without --text-field's field is given).
TEXT_FIELDS = ("raw_content", "content", "contents", "body", "document")


def field_value(row: dict, path: str) -> object:
    """The row's value at `path`: the key itself, else a dotted path into nested objects
    (`_MISSING` when neither is there; a JSON-encoded object string is read as an object)."""
    if path in row:
        return row[path]
    node: object = row
    for part in path.split("."):
        if isinstance(node, str) and node.startswith("{"):
            try:
                node = json.loads(node)
            except ValueError:
                return _MISSING
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _url_of(row: dict, url_field: str | None) -> tuple[str | None, bool]:
    """(the row's URL or None, whether `url_field` was there). The first non-empty value of
    `url_field`, then of URL_FIELDS: a row that lacks the named field, or has it empty, but
    names its page where corpora usually do (`url`, `metadata.url`, ...) is a page, decided by
    robots.txt, never consented by the licence alone. Without `url_field`, the first of
    URL_FIELDS the row has a value in (an empty `url` does not hide `metadata.url`)."""
    named = False
    paths = (url_field, *(f for f in URL_FIELDS if f != url_field)) if url_field else URL_FIELDS
    for path in paths:
        value = field_value(row, path)
        if value is _MISSING:
            continue
        named |= path == url_field
        text = str(value).strip() if value not in (None, "") else ""
        if text:
            return text, named
    return None, named


def _directive_on(value: object) -> bool:
    """A source row's noai/noimageai: on unless null or the boolean false (an opt-out that is
    not clearly off, e.g. the string "false" or 0, counts: only the boolean false is no)."""
    if value is None or value is False:
        return False
    t = type(value)
    return not (t.__module__ == "numpy" and t.__name__ in ("bool", "bool_") and not value)


def _own_fields(row: dict, name: str) -> list[tuple[str, object]]:
    """(where, value) of each place the row states its own `name`: the top level ("") and
    the nested objects of `NESTED` ("metadata."); absent ones say nothing."""
    found = [("", row[name])] if name in row else []
    for nest in NESTED:
        value = field_value(row, f"{nest}.{name}")
        if value is not _MISSING:
            found.append((f"{nest}.", value))
    return found


def source_consent(row: dict) -> tuple[bool, dict[str, bool], list[str]]:
    """(whether the corpus row's own consent permits training, its noai/noimageai, the evidence)
    from its `training_allowed`, `noai` and `noimageai`, at the top level or nested (`NESTED`:
    `metadata.training_allowed`); absent ones say nothing. Permits: every `training_allowed`
    there is the boolean true (`common.consent.flag_true`: false, "false", 0, "true" or null
    anywhere is a no that wins), and no `noai` is on; `noimageai` keeps the text in and is
    carried to the document."""
    from common.consent import describe_flag, flag_true

    ok = True
    evidence: list[str] = []
    for where, value in _own_fields(row, FLAG):
        if flag_true(value):
            evidence.append(f"source row: {where}training_allowed true")
        else:
            ok = False
            evidence.append(f"source row: {where}{describe_flag(value)}")
    flags = {"noai": False, "noimageai": False}
    for name in flags:
        for where, value in _own_fields(row, name):
            if not _directive_on(value):
                continue
            flags[name] = True
            how = "" if flag_true(value) else f" ({value!r}, not the boolean false: read as {name})"
            evidence.append(f"source row: {where}{name}{how}")
            ok &= name != "noai"
    return ok, flags, evidence


def _corpus_rows(
    source: str, allow_private: bool = False
) -> Iterable[tuple[int, dict | None, str | None]]:
    """(row number, row or None, why it is unreadable) of a JSONL or Parquet corpus."""
    name = source.lower()
    if name.endswith(".parquet"):
        with open_source(source, allow_private) as fh:
            try:
                pf = pq.ParquetFile(fh)
            except Exception as exc:  # pyarrow raises several kinds for a damaged file
                yield 0, None, f"not a readable Parquet file ({type(exc).__name__}: {exc})"
                return
            yield from _parquet_rows(pf, source)
        return
    with open_source(source, allow_private) as raw:
        fh = _decompressed(raw, name)
        try:
            peeked = fh.peek(64)[:64]
        except Exception as exc:  # not the compression its name says (gzip, zstd, bz2, lzma errors)
            yield 0, None, f"unreadable: {type(exc).__name__}: {exc}"
            return
        # UTF-8 (a byte order mark or none), or UTF-16/32 by its byte order mark or, without
        # one, its zero bytes (JSON's own rule: `json.detect_encoding`)
        encoding = json.detect_encoding(peeked) if peeked else "utf-8"
        wide = not encoding.startswith("utf-8")
        if wide:
            head = peeked.decode(encoding, "ignore").lstrip("\ufeff").lstrip().encode()
        else:
            head = peeked.removeprefix(b"\xef\xbb\xbf").lstrip()
        if head.startswith(b"["):  # a JSON array of objects, not JSON Lines
            yield from _json_array(fh, source)
            return
        if wide:  # split on the decoded text's newlines, never on a byte of a 2-byte character
            yield from _lines(_text_lines(fh, encoding), source)
        else:
            yield from _lines(fh, source)


def _text_lines(fh, encoding: str) -> Iterable[str]:
    """The lines of a UTF-16/32 file, decoded (its byte order mark dropped). A lone surrogate is
    let through, to reject its row alone (`_lines`), not the rest of the file."""
    import io

    text = io.TextIOWrapper(fh, encoding=encoding, errors="surrogatepass", newline="\n")
    first = True
    for line in text:
        yield line.removeprefix("\ufeff") if first else line
        first = False


def _lines(lines_in: Iterable[bytes] | Iterable[str], source: str):
    """(row number, row or None, why it is unreadable) of each line of a JSON Lines file, bytes
    (UTF-8) or text (a UTF-16/32 file, decoded): a blank line is no row."""
    i = -1
    lines = iter(lines_in)
    while True:
        try:
            line = next(lines)
        except StopIteration:
            break
        except Exception as exc:  # a truncated or damaged stream (each codec its own error)
            yield i + 1, None, f"after line {i + 1}: unreadable ({type(exc).__name__}: {exc})"
            return
        i += 1
        text = isinstance(line, str)
        if i == 0 and not text:
            line = line.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            yield i, None, f"line {i + 1}: not JSON ({exc})"
            continue
        if not isinstance(row, dict):
            yield i, None, f"line {i + 1}: a JSON {type(row).__name__}, not an object"
            continue
        # a lone surrogate: escaped (\ud800) in UTF-8, or raw in text decoded from UTF-16/32
        bad = lone_surrogate(row) if text or LONE_ESCAPE.search(line) else None
        if bad:
            yield i, None, f"line {i + 1}: {bad}"
            continue
        yield i, row, None


def _parquet_rows(pf: pq.ParquetFile, source: str) -> Iterable[tuple[int, dict | None, str | None]]:
    """The rows of a Parquet corpus, a row group at a time: a row group that cannot be read
    (a damaged page) rejects its rows from the first it could not read, naming the file, the
    row group and the error, and the next row group is read."""
    i = 0
    for rg in range(pf.num_row_groups):
        first, n = i, pf.metadata.row_group(rg).num_rows
        batches = pf.iter_batches(batch_size=1024, row_groups=[rg])
        why = None
        while why is None:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except Exception as exc:  # pyarrow raises OSError, ArrowInvalid, ... for bad pages
                why = f"{type(exc).__name__}: {exc}"
                break
            yield from _batch_rows(batch, i, source)
            i += batch.num_rows
        if i < first + n:
            why = why or f"it ends after {i - first} of its {n} rows"
            detail = (
                f"{source}: row group {rg} (rows {first}-{first + n - 1}) unreadable from row "
                f"{i}: {why}"
            )[:500]
            for j in range(i, first + n):
                yield j, None, detail
        i = first + n


def _batch_rows(batch, start: int, source: str) -> Iterable[tuple[int, dict | None, str | None]]:
    """The rows of one record batch; when the batch cannot be read whole (a string value that
    is not UTF-8), row by row, rejecting only the rows that cannot be read (naming the column)."""
    try:
        rows = batch.to_pylist()
    except Exception:  # UnicodeDecodeError, or a value pyarrow cannot convert
        rows = None
    if rows is not None:
        for k, row in enumerate(rows):
            yield start + k, row, None
        return
    for k in range(batch.num_rows):
        one = batch.slice(k, 1)
        try:
            yield start + k, one.to_pylist()[0], None
            continue
        except Exception as exc:
            error = exc
        bad = ", ".join(repr(c) for c in one.schema.names if not _readable(one.column(c)))
        what = "UTF-8" if isinstance(error, UnicodeDecodeError) else "readable"
        yield (
            start + k,
            None,
            f"{source}: row {start + k}: column {bad or '?'} is not {what} "
            f"({type(error).__name__}: {error})"[:500],
        )


def _readable(column) -> bool:
    try:
        column.to_pylist()
    except Exception:
        return False
    return True


def _decompressed(raw, name: str):
    """A buffered reader of the corpus's text, by its compression suffix (.gz, .zst/.zstd,
    .bz2, .xz; none: as is). gzip and zstd are the archive readers' own streams
    (crawlers.imports.sources): every member or frame, every byte before a cut."""
    import io

    from crawlers.imports.sources import Gunzip, Unzstd

    if name.endswith(".gz"):
        return io.BufferedReader(Gunzip(raw))
    if name.endswith((".zst", ".zstd")):
        return io.BufferedReader(Unzstd.open(raw))
    if name.endswith(".bz2"):
        import bz2

        return io.BufferedReader(bz2.open(raw))
    if name.endswith(".xz"):
        import lzma

        return io.BufferedReader(lzma.open(raw))
    return io.BufferedReader(raw) if not hasattr(raw, "peek") else raw


def _json_array(fh, source: str) -> Iterable[tuple[int, dict | None, str | None]]:
    """Rows of a file holding one JSON array of objects (read whole: such files are small)."""
    try:
        items = json.load(fh)
    except ValueError as exc:
        yield 0, None, f"not a JSON array ({exc})"
        return
    for i, row in enumerate(items):
        if isinstance(row, dict):
            bad = lone_surrogate(row)
            yield (i, None, f"item {i}: {bad}") if bad else (i, row, None)
        else:
            yield i, None, f"item {i}: a JSON {type(row).__name__}, not an object"


def _first_value(row: dict, paths: Iterable[str]) -> str | None:
    """The first of `paths` the row holds a string (or a date, a time: ISO 8601) in, as text."""
    import datetime

    for path in paths:
        value = field_value(row, path)
        if isinstance(value, (datetime.date, datetime.datetime)):
            return value.isoformat()
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _lang_hint(row: dict) -> str | None:
    """The base language code (`lang_hint`, as `import wet` and crawled pages have it) of the
    row's `LANG_FIELDS`: FineWeb's `en`, FineWeb-2's `fra_Latn` (`fr`), ISO 639-3 `spa` (`es`)."""
    import re

    from crawlers.imports.wet import base_language

    value = _first_value(row, LANG_FIELDS)
    return base_language(re.split(r"[_\-]", value)[0]) if value else None


def _source_id(row: dict, id_field: str | None) -> str | None:
    """The corpus's own id of the row (`--id-field`, else `ID_FIELDS`), as a string."""
    for path in (id_field,) if id_field else ID_FIELDS:
        value = field_value(row, path)
        if value is not _MISSING and value not in (None, ""):
            return str(value)
    return None


def _empty_reason(text: object, text_field: str) -> str:
    """Why a row's text is no document, in words (`empty_text`)."""
    if text is _MISSING:
        return f"field {text_field!r} is missing (--text-field names the field holding the text)"
    if text is None:
        return f"field {text_field!r} is null"
    if not isinstance(text, str):
        kind = type(text).__name__
        article = "an" if kind[0] in "aeiou" else "a"
        return f"field {text_field!r} is {article} {kind}, not a string (--text-field)"
    if not text:
        return f"field {text_field!r} is empty"
    if not text.strip():
        return f"field {text_field!r} is white space only"
    return f"field {text_field!r} holds only control characters and white space"


def _text_guess(row: dict) -> str | None:
    """The field a row most likely holds its text in: the first of `TEXT_FIELDS` holding a
    string, else the top-level field with the longest string."""
    for path in TEXT_FIELDS:
        if isinstance(field_value(row, path), str):
            return path
    strings = [(len(v), k) for k, v in row.items() if isinstance(v, str)]
    return max(strings)[1] if strings else None


def _no_text_field(source: str, text_field: str, rows: int, first: dict) -> str:
    """One line: the file, the field no row of it has, and the fix (`--text-field` naming the
    field its rows hold their text in, RedPajama-V2's `raw_content`)."""
    guess = _text_guess(first)
    fields = ", ".join(sorted(first)[:8]) + (", ..." if len(first) > 8 else "")
    fix = f"--text-field {guess}" if guess else "--text-field FIELD"
    return (
        f"{source}: no row has the field {text_field!r} ({rows} row{'s' * (rows != 1)}, with "
        f"{fields}); name the field holding the text: {fix}"
    )


def _spool_file(
    spool: Spool,
    source: str,
    text_field: str,
    id_field: str | None,
    url_field: str | None,
    license: str | None,
    allow_private: bool,
    max_bytes: int = MAX_TEXT_BYTES,
) -> tuple[bool, str | None]:
    """Every row of one corpus file into the spool: a document or a recorded skip. Returns
    (whether a row has the text field, why the file is rejected whole or None): a file none of
    whose rows has `text_field` is one `no_text_field` skip naming the file, the field and the
    fix. The rows without it that come before the first row with it wait unspooled (the file
    is read again up to that row to record them), so a file is decided without holding rows."""
    found_text = found_url = False
    objects = 0  # rows of this file read as objects
    waiting = 0  # rows without the text field before the first with it
    first: dict | None = None
    for i, row, bad in _corpus_rows(source, allow_private):
        base = {"source_file": source, "record_offset": i, "record_type": "corpus_row"}
        base["import_mode"] = "text"
        if row is None:
            spool.add("skip", {**base, "skip_reason": "malformed_row", "skip_detail": bad})
            continue
        objects += 1
        first = first if first is not None else row
        text = field_value(row, text_field)
        url, has_url = _url_of(row, url_field)
        found_url |= has_url
        if text is _MISSING and not found_text:
            waiting += 1  # a skip if the file has the field after all, else the file's reject
            continue
        if not found_text and waiting:
            _spool_waiting(spool, source, text_field, url_field, allow_private, before=i)
        found_text = True
        _spool_row(spool, base, row, text, url, text_field, id_field, license, max_bytes)
    if objects and not found_text:
        why = _no_text_field(source, text_field, objects, first or {})
        skip = {"source_file": source, "record_type": "corpus_file", "import_mode": "text"}
        spool.add("skip", {**skip, "skip_reason": "no_text_field", "skip_detail": why})
        return False, why
    if url_field and not found_url and objects:
        spool.discard()
        raise KeyError(
            f"{source}: no row has the field {url_field!r} (--url-field); name the field "
            "that holds each document's URL (a dotted path reaches into objects: "
            "metadata.url), or leave the flag out to look in the usual places"
        )
    return found_text, None


def _spool_waiting(
    spool: Spool,
    source: str,
    text_field: str,
    url_field: str | None,
    allow_private: bool,
    before: int,
) -> None:
    """The `empty_text` skips of the rows before row `before` that lack the text field, read
    again (the first row with the field came after them)."""
    for i, row, _ in _corpus_rows(source, allow_private):
        if i >= before:
            break
        if row is not None and field_value(row, text_field) is _MISSING:
            base = {"source_file": source, "record_offset": i, "record_type": "corpus_row"}
            detail = _empty_reason(_MISSING, text_field)
            url = _url_of(row, url_field)[0]
            skip = {**base, "import_mode": "text", "url": url, "skip_reason": "empty_text"}
            spool.add("skip", {**skip, "skip_detail": detail})


def _spool_row(
    spool: Spool,
    base: dict,
    row: dict,
    text: object,
    url: str | None,
    text_field: str,
    id_field: str | None,
    license: str | None,
    max_bytes: int,
) -> None:
    """One corpus row (that is an object) into the spool: a document or a recorded skip."""
    from crawlers.extract.decode import drop_controls

    canon = page_url(url)[0] if url else None  # one id and host for every spelling
    # what is stored, and hashed: the text with the control characters extraction turns into
    # spaces (C0 but tab, newline, carriage return) so turned, then stripped
    stored = drop_controls(text).strip() if isinstance(text, str) else ""
    if not stored:
        detail = _empty_reason(text, text_field)
        spool.add("skip", {**base, "url": url, "skip_reason": "empty_text", "skip_detail": detail})
        return
    data = stored.encode("utf-8")
    if len(data) > max_bytes:
        detail = (
            f"{base['source_file']}@{base['record_offset']}: field {text_field!r} is {len(data)} "
            f"bytes of UTF-8, over the cap of {max_bytes} (max_record_bytes)"
        )
        spool.add("skip", {**base, "url": url, "skip_reason": "too_large", "skip_detail": detail})
        return
    source_id = _source_id(row, id_field)
    ident = source_id if id_field else None
    if ident is None:
        ident = _doc_id(canon) if canon else hashlib.sha256(data).hexdigest()[:16]
    title = row.get("title")
    doc = {
        **base,
        "id": ident,
        "source_id": source_id,
        "url": url,
        "host": _doc_host(canon) if canon else None,
        "text": stored,
        "title": drop_controls(title) if isinstance(title, str) else None,
        "lang_hint": _lang_hint(row),
        "date": _first_value(row, DATE_FIELDS),
        "fetched_at": _first_value(row, FETCHED_FIELDS),
        "extraction_method": "corpus",
        "source": f"import:docs:{os.path.basename(base['source_file'])}",
        "license": license,
        "content_sha256": hashlib.sha256(data).hexdigest(),
        "rendered": False,
    }
    # The row's own consent (training_allowed, noai) is kept: the licence or today's
    # robots.txt can only add a no to it, never lift one.
    source_ok, flags, evidence = source_consent(row)
    doc.update(flags)
    if url is None:
        if license:
            why, allowed = f"licence: {license}", source_ok
        else:
            why, allowed = "no URL and no licence (--license): no consent", False
        doc.update(training_allowed=allowed, consent_source="; ".join([why, *evidence]))
    else:  # decided by robots.txt (crawlers.imports.consent.decide), which keeps these
        doc["consent_source"] = "; ".join(evidence) or None
        if not source_ok:
            doc["training_allowed"] = False
    spool.add("doc", doc)


def _not_data(name: str) -> str | None:
    """Why a file a directory or a glob names is no corpus file (a bookkeeping file an export
    writes beside its data: `_SUCCESS`, `_metadata`, `.part-0.crc`), or None."""
    if name.startswith("_"):
        return "a bookkeeping file (its name starts with '_', as _SUCCESS)"
    if name.startswith("."):
        return "a hidden file"
    if name.endswith(".crc"):
        return "a checksum file (.crc)"
    return None


def _corpus_name(name: str) -> bool:
    """A JSONL/JSON/Parquet file by its name, compressed or not."""
    base = name.lower()
    for ext in COMPRESSIONS:
        if ext and base.endswith(ext):
            base = base[: -len(ext)]
            break
    return base.endswith(CORPUS_SUFFIXES)


def corpus_files(
    patterns: Iterable[str], allow_private: bool = False
) -> tuple[list[str], list[dict[str, str]]]:
    """(the corpus files, the files passed over with why) named by paths, globs, fsspec URLs
    and directories. A directory: its JSONL/Parquet files (`CORPUS_SUFFIXES`, compressed or
    not), recursively, sorted. A directory or a glob passes over the bookkeeping files exports
    write beside the data (`_SUCCESS`, hidden files, `.crc`; directories starting with `_` or
    `.`) and empty files; a file named by itself is read whatever its name."""
    import glob as globs

    from crawlers.imports.sources import is_remote, local_path

    files: list[str] = []
    passed: list[dict[str, str]] = []
    for pattern in map(str, patterns):
        path = local_path(pattern)
        if not is_remote(pattern) and os.path.isdir(path):
            found = _walk(path, passed)
            if not found:
                raise FileNotFoundError(
                    f"{pattern}: a directory with no corpus file in it ({CORPUS_FILES})"
                )
        else:
            found = expand([pattern], allow_private, what=CORPUS_FILES)
            if (is_remote(pattern) and "*" in pattern) or (
                not is_remote(pattern) and globs.has_magic(path)
            ):
                found = [f for f in found if not _passed_over(f, is_remote(f), passed)]
                if not found:
                    raise FileNotFoundError(
                        f"{pattern}: matches no corpus file, only files passed over "
                        f"({passed[-1]['reason']}: {passed[-1]['file']}; {CORPUS_FILES})"
                    )
        files += [f for f in found if f not in files]
    return files, passed


def _passed_over(path: str, remote: bool, passed: list[dict[str, str]]) -> bool:
    why = _not_data(path.rstrip("/").rsplit("/", 1)[-1])
    if why is None and not remote and os.path.getsize(path) == 0:
        why = "an empty file (0 bytes)"
    if why is not None:
        passed.append({"file": path, "reason": why})
    return why is not None


def _walk(top: str, passed: list[dict[str, str]]) -> list[str]:
    """The corpus files under a directory, recursively, sorted (see `corpus_files`)."""
    found = []
    for root, dirs, names in os.walk(top):
        for d in sorted(dirs):
            why = _not_data(d)
            if why is not None:
                dirs.remove(d)  # not walked: an export's _temporary/, .git/, ...
                passed.append({"file": str(Path(root, d).resolve()) + "/", "reason": why})
        for name in names:
            path = str(Path(root, name).resolve())
            if _passed_over(path, False, passed):
                continue
            if not _corpus_name(name):
                why = f"not a corpus file by its name ({CORPUS_FILES})"
                passed.append({"file": path, "reason": why})
                continue
            found.append(path)
    passed.sort(key=lambda p: p["file"])
    return sorted(found)


def import_docs(
    patterns: Iterable[str],
    out_dir: str | Path,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    url_field: str | None = None,
    license: str | None = None,
    max_record_bytes: int | None = None,
    config: Any = None,
    offline: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> dict[str, Any]:
    """A JSONL/Parquet corpus -> `out_dir/documents.parquet`, fields mapped by the flags.
    `patterns`: files, globs, fsspec URLs or directories (`corpus_files`). A document's text
    over `max_record_bytes` of UTF-8 (default `MAX_TEXT_BYTES`, `import wet`'s cap) is a
    `too_large` skip. A file none of whose rows has `text_field` is a `no_text_field` skip
    (the summary's `files_rejected`), unless no file has it: then KeyError, that line."""
    from crawlers.crawl.config import CrawlConfig

    allow_private = CrawlConfig.from_any(config).allow_private_networks
    cap = MAX_TEXT_BYTES if max_record_bytes is None else int(max_record_bytes)
    files, passed = corpus_files(patterns, allow_private)
    for p in passed:
        log(f"import docs: passed over {p['file']}: {p['reason']}")
    spool = Spool(Path(out_dir))
    rejected: list[str] = []
    has_text = False
    try:
        for source in files:
            found, why = _spool_file(
                spool, source, text_field, id_field, url_field, license, allow_private, cap
            )
            has_text |= found
            if why:
                rejected.append(why)
                log(f"import docs: {why}")
        if rejected and not has_text:  # no file has the field: the flag is wrong, not a file
            more = f" (and {len(rejected) - 1} more files)" if len(rejected) > 1 else ""
            raise KeyError(rejected[0] + more)
    except BaseException:
        spool.discard()  # the error is one line; no _parts/ is left behind
        raise
    log(f"import docs: {len(files)} files, {sum(spool.counts.values())} rows")
    return _decide_and_write(
        spool,
        Path(out_dir),
        config=config,
        offline=offline,
        files=files,
        kind="docs",
        ids_given=id_field is not None,
        extra={"files_skipped": passed, "files_rejected": rejected},
    )
