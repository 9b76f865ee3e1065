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
`empty_text`, `duplicate_payload`, `duplicate_id`, `id_conflict`: a `--id-field` id that an
earlier row gives to a different text). A repeat's own no to training is carried to the
document kept in its place (`crawlers.imports.run.Carried`).
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
from crawlers.imports.wet import Spool, _decide_and_write, _doc_host, _doc_id

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
CORPUS_FILES = "JSONL/Parquet corpus files, e.g. 'corpus/*.jsonl.gz' or 'data/*.parquet'"


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
            head = fh.peek(64)[:64].removeprefix(b"\xef\xbb\xbf").lstrip()
        except Exception as exc:  # not the compression its name says (gzip, zstd, bz2, lzma errors)
            yield 0, None, f"unreadable: {type(exc).__name__}: {exc}"
            return
        if head.startswith(b"["):  # a JSON array of objects, not JSON Lines
            yield from _json_array(fh, source)
            return
        i = -1
        lines = iter(fh)
        while True:
            try:
                line = next(lines)
            except StopIteration:
                break
            except Exception as exc:  # a truncated or damaged stream (each codec its own error)
                yield i + 1, None, f"after line {i + 1}: unreadable ({type(exc).__name__}: {exc})"
                return
            i += 1
            if i == 0:
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
            bad = lone_surrogate(row) if LONE_ESCAPE.search(line) else None
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


def _spool_file(
    spool: Spool,
    source: str,
    text_field: str,
    id_field: str | None,
    url_field: str | None,
    license: str | None,
    allow_private: bool,
) -> None:
    """Every row of one corpus file into the spool: a document or a recorded skip."""
    found_text = found_url = False
    objects = 0  # rows of this file read as objects
    for i, row, bad in _corpus_rows(source, allow_private):
        base = {"source_file": source, "record_offset": i, "record_type": "corpus_row"}
        base["import_mode"] = "text"
        if row is None:
            spool.add("skip", {**base, "skip_reason": "malformed_row", "skip_detail": bad})
            continue
        objects += 1
        text = field_value(row, text_field)
        found_text |= text is not _MISSING
        url, has_url = _url_of(row, url_field)
        canon = page_url(url)[0] if url else None  # one id and host for every spelling
        found_url |= has_url
        if not isinstance(text, str) or not text.strip():
            what = "missing" if text is _MISSING else f"a {type(text).__name__}"
            spool.add(
                "skip",
                {
                    **base,
                    "url": url,
                    "skip_reason": "empty_text",
                    "skip_detail": f"field {text_field!r} is {what} (--text-field)",
                },
            )
            continue
        ident = field_value(row, id_field) if id_field else None
        if ident is _MISSING or ident in (None, ""):
            ident = _doc_id(canon) if canon else hashlib.sha256(text.encode()).hexdigest()[:16]
        doc = {
            **base,
            "id": str(ident),
            "url": url,
            "host": _doc_host(canon) if canon else None,
            "text": text.strip(),
            "title": row.get("title") if isinstance(row.get("title"), str) else None,
            "extraction_method": "corpus",
            "source": f"import:docs:{os.path.basename(source)}",
            "license": license,
            "content_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
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
    if objects and not found_text and spool.counts["doc"] == 0:
        spool.discard()
        raise KeyError(
            f"{source}: no row has the field {text_field!r}; name the text field with --text-field"
        )
    if url_field and not found_url and objects:
        spool.discard()
        raise KeyError(
            f"{source}: no row has the field {url_field!r} (--url-field); name the field "
            "that holds each document's URL (a dotted path reaches into objects: "
            "metadata.url), or leave the flag out to look in the usual places"
        )


def import_docs(
    patterns: Iterable[str],
    out_dir: str | Path,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    url_field: str | None = None,
    license: str | None = None,
    config: Any = None,
    offline: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> dict[str, Any]:
    """A JSONL/Parquet corpus -> `out_dir/documents.parquet`, fields mapped by the flags."""
    from crawlers.crawl.config import CrawlConfig

    allow_private = CrawlConfig.from_any(config).allow_private_networks
    files = expand(patterns, allow_private, what=CORPUS_FILES)
    spool = Spool(Path(out_dir))
    try:
        for source in files:
            _spool_file(spool, source, text_field, id_field, url_field, license, allow_private)
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
    )
