"""Common Crawl WET files -> documents.parquet rows (the writer `import docs` shares).

Rows are spooled to disk as they are read and decided a batch at a time (repeats, then
consent), so neither import holds a corpus in memory.

WET `conversion` records hold the text Common Crawl extracted: there is no HTML, so no
extraction; `source` says `import:wet` and `extraction_method` says `cc-wet`. A document's
`url` is its target URI's canonical form (`crawlers.imports.warc.page_url`) and its `id` is
made from that, so every spelling of one page is one document. Every record read
is a document or a recorded skip (`warcinfo`, `record_type`: a record without WARC-Type,
`missing_target_uri`, `decode_error`: text that is not of the charset its Content-Type
declares (UTF-8 when none), `empty_text`, `duplicate_payload`, `malformed_record`: a damaged
stretch, after which reading goes on at the next record, ...).
A document's `text` is the record's text with each control character extraction turns into a
space (C0 controls but tab, newline and carriage return: `crawlers.extract.decode.drop_controls`)
so turned, stripped; `content_sha256` is the hash of that stored text (UTF-8), so records whose
text differs only in white space around it, or in such control characters, are one document
(`duplicate_payload`); `import docs` stores and hashes a corpus row's text the same way.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawlers.imports.run import (
    BATCH_ROWS,
    HOSTS_SCHEMA,
    PROVENANCE,
    Carried,
    _key,
    _table,
    _write,
    expand,
)
from crawlers.imports.warc import open_source

# The record's WARC-Payload-Digest, as `import warc` keeps it (null where the record has none,
# and for `import docs` rows, which come from no record).
PAYLOAD_DIGEST = ("payload_digest", pa.string())
EXTRA_COLUMNS = [
    ("source", pa.string()),
    ("license", pa.string()),
    # `import docs`: the corpus's own id of the row (Dolma's `id`, FineWeb's `<urn:uuid:...>`),
    # kept when `id` is one made from the URL; null for WET records and rows without one
    ("source_id", pa.string()),
    *PROVENANCE,
    PAYLOAD_DIGEST,
    ("consent_source", pa.string()),
    ("robots_fetched_at", pa.string()),
    ("robots_sha256", pa.string()),
]
SKIPS_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("skip_reason", pa.string()),
        ("skip_detail", pa.string()),
        *PROVENANCE,
        PAYLOAD_DIGEST,
    ]
)
MAX_TEXT_BYTES = 8_000_000
WET_FILES = "Common Crawl WET files, e.g. 'CC-MAIN-*.warc.wet.gz'"


def base_language(declared: str | None) -> str | None:
    """The base code `lang_hint` holds (ISO 639-1 where one exists, as for crawled pages) of a
    WET record's WARC-Identified-Content-Language: Common Crawl's CLD2 guesses as ISO 639-3,
    most likely first ("spa,eng" -> "es"; "arg" -> "an"; "fil" stays; "und" is None). CLDR's
    language aliases (Babel) map the codes; a code they do not name is kept in lower case."""
    first = (declared or "").split(",")[0].strip().lower()
    if not first or first == "und":  # undetermined
        return None
    from babel.core import get_global

    return get_global("language_aliases").get(first, first).replace("_", "-").split("-")[0]


def documents_schema() -> pa.Schema:
    from common.schemas import DOCUMENTS

    names = set(DOCUMENTS.names)
    return pa.schema([*DOCUMENTS, *[pa.field(n, t) for n, t in EXTRA_COLUMNS if n not in names]])


def _doc_id(url: str) -> str:
    from crawlers.extract.page import doc_id

    return doc_id(url)


def iter_wet(source: str, allow_private: bool = False) -> Iterator[tuple[str, dict]]:
    """("doc", row) or ("skip", row) for every record of one WET file, as it is read (an
    http(s) file through the SSRF guard; `allow_private` lifts it). A damaged stretch (a cut
    gzip member, garbage between records) is one `malformed_record` skip; a seekable file is
    read on from the next record start (`crawlers.imports.warc._resync`), a stream ends there.
    A whole-file gzip is read on as one decompressed stream (offsets are then the text's)."""
    from warcio.archiveiterator import ArchiveIterator

    from crawlers.imports.sources import Gunzip, can_seek
    from crawlers.imports.warc import _GZIP_MAGIC, _resync, _tail

    fh = open_source(source, allow_private)
    try:
        seekable = can_seek(fh)
        gz = False
        if seekable:
            gz = fh.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC
            fh.seek(0)
        stream, done = fh, 0  # done: records read before the stream was read again
        last_end = 0  # where the last record read ends
        while True:
            it = ArchiveIterator(stream, check_digests=True)  # WARC-Block-Digest: `record_damage`
            n = 0
            try:
                for record in it:
                    kind, row = _wet_row(record, it, source)
                    n += 1
                    if n <= done:
                        continue  # read before, as a gzip member, when the stream restarted
                    last_end = row["record_offset"] + max(0, row["record_length"] or 0)
                    yield kind, row
                if seekable:  # warcio ends quietly at a cut gzip member: the rest is a skip
                    yield from (("skip", r) for r in _tail(stream, last_end, source, "text"))
                return
            except Exception as exc:  # a damaged stretch: what came before stays, it is one skip
                if "non-chunked gzip" in str(exc) and stream is fh and seekable:
                    fh.seek(0)  # one gzip stream of many records: read again, decompressed
                    stream, done, seekable, last_end = Gunzip(fh), n, False, 0
                    continue
                detail = " ".join(f"{type(exc).__name__}: {exc}".split())
                yield (
                    "skip",
                    {
                        "source_file": source,
                        "record_offset": last_end,
                        "import_mode": "text",
                        "skip_reason": "malformed_record",
                        "skip_detail": f"{source}@{last_end}: {detail}"[:500],
                    },
                )
            if not seekable:
                return  # a stream cannot be searched for the next record: the rest is lost
            nxt = _resync(stream, last_end + 1, gz)
            if nxt is None:
                return
            stream.seek(nxt)
    finally:
        fh.close()


def _wet_row(record, it, source: str) -> tuple[str, dict]:
    """One WET record as ("doc", row) or ("skip", row). A record that ends before its
    Content-Length (warcio stops quietly at a cut gzip member) or fails its WARC-Block-Digest
    is a skip (`short_record`, `digest_mismatch`: `crawlers.imports.warc.record_damage`), never a
    document of part of its text."""
    from crawlers.extract.decode import drop_controls
    from crawlers.imports.warc import page_url, record_damage

    h = record.rec_headers
    url = h.get_header("WARC-Target-URI")
    row = {
        "source_file": source,
        "record_type": record.rec_type,
        "warc_record_id": h.get_header("WARC-Record-ID"),
        "capture_time": h.get_header("WARC-Date"),
        "import_mode": "text",
        "url": (page_url(url)[0] or None) if url else url,  # canonical: `warc.page_url`
        "payload_digest": h.get_header("WARC-Payload-Digest"),
    }
    raw = record.raw_stream.read(MAX_TEXT_BYTES + 1)
    it.read_to_end(record)
    row["record_offset"] = it.get_record_offset()
    row["record_length"] = it.get_record_length()

    def skip(reason: str, detail: str) -> tuple[str, dict]:
        return "skip", {**row, "skip_reason": reason, "skip_detail": detail}

    if record.rec_type is None:
        return skip("record_type", "record without WARC-Type: only conversion records are text")
    if record.rec_type != "conversion":
        return skip(
            record.rec_type, f"{record.rec_type} record: only conversion records hold a page's text"
        )
    if not row["url"]:
        return skip(
            "missing_target_uri",
            f"{source}@{row['record_offset']}: conversion record without WARC-Target-URI (a "
            "document needs the URL of its page)",
        )
    damage = record_damage(record)
    if damage is not None:
        return skip(damage[0], f"{source}@{row['record_offset']}: {damage[1]}"[:500])
    if len(raw) > MAX_TEXT_BYTES:
        return skip("too_large", "text over 8 MB")
    text, why = decode_text(raw, h.get_header("Content-Type"))
    if text is None:
        return skip("decode_error", f"{source}@{row['record_offset']}: {why}")
    # what is stored, and hashed (`content_sha256`: two records whose stored text is the same
    # are one document): the control characters extraction turns into spaces (C0 but tab,
    # newline, carriage return) so turned, then stripped
    text = drop_controls(text).strip()
    if not text:
        return skip(
            "empty_text",
            f"{source}@{row['record_offset']}: the record's text is empty, or white space and "
            "control characters only",
        )
    return (
        "doc",
        {
            **row,
            "id": _doc_id(row["url"]),
            "host": _doc_host(row["url"]),
            "text": text,
            "lang_hint": base_language(h.get_header("WARC-Identified-Content-Language")),
            "extraction_method": "cc-wet",
            "source": "import:wet",
            "status": 200,
            "content_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "fetched_at": row["capture_time"],
            "rendered": False,
        },
    )


def decode_text(raw: bytes, content_type: str | None) -> tuple[str | None, str | None]:
    """(the text, None), or (None, why not): `raw` decoded with the charset its Content-Type
    declares (UTF-8 when it declares none; a byte order mark of that encoding is dropped).
    Bytes that are not of that charset are refused, never replaced by U+FFFD."""
    import codecs

    charset = "utf-8"
    for param in (content_type or "").split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip("\"'"):
            charset = value.strip().strip("\"'")
    try:
        codec = codecs.lookup(charset).name
    except LookupError:
        return None, f"Content-Type charset {charset!r}: no such encoding"
    try:
        return raw.decode("utf-8-sig" if codec == "utf-8" else codec), None
    except UnicodeDecodeError as exc:
        return None, (
            f"the text is not {charset} as its Content-Type says ({exc.reason} at byte "
            f"{exc.start}): declare its charset in the record's Content-Type"
        )


class Spool:
    """The documents and skips read so far, written to `<out>/_parts/` a batch at a time (the
    import then reads them back twice, `_decide_and_write`): no file's rows wait in memory."""

    def __init__(self, out_dir: Path):
        import shutil

        from crawlers.imports.run import _Out

        self.dir = Path(out_dir) / "_parts"
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self._docs = _Out(self.dir / "docs.parquet", documents_schema())
        self._skips = _Out(self.dir / "skips.parquet", SKIPS_SCHEMA)
        self._buf: dict[str, list[dict]] = {"doc": [], "skip": []}
        self.counts = {"doc": 0, "skip": 0}

    def add(self, kind: str, row: dict) -> None:
        """One document ("doc") or recorded skip ("skip")."""
        self._buf[kind].append(row)
        self.counts[kind] += 1
        if len(self._buf[kind]) >= BATCH_ROWS:
            self._flush(kind)

    def _flush(self, kind: str) -> None:
        (self._docs if kind == "doc" else self._skips).write(self._buf[kind])
        self._buf[kind] = []

    def discard(self) -> None:
        """Drop what was spooled (the import stops with an error)."""
        import shutil

        self._docs.writer.close()
        self._skips.writer.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def close(self) -> tuple[Path, Path]:
        for kind in self._buf:
            self._flush(kind)
        self._docs.close()
        self._skips.close()
        return self._docs.path, self._skips.path


def _doc_host(url: str | None) -> str:
    """The host, as extraction's documents.parquet writes it (no port)."""
    from common.inputs import url_host

    return url_host(url)


_SOURCE_NO = "source row: "  # how `crawlers.imports.docs` words a corpus row's own consent


def _source_optout(d: dict) -> tuple[set[str], str]:
    """A spooled document's own opt-out (a corpus row's noai, noimageai, or training_allowed
    not the boolean true, at the top level or nested: `crawlers.imports.docs.source_consent`)
    and its evidence."""
    words = {w for w in ("noai", "noimageai") if d.get(w)}
    said = [
        part
        for part in (d.get("consent_source") or "").split("; ")
        if part.startswith(_SOURCE_NO) and not part.endswith("training_allowed true")
    ]
    if any(_flag_said(p) for p in said):
        words.add("optout")
    return words, "; ".join(said)


def _flag_said(part: str) -> bool:
    """Whether a `source row: ...` evidence part is about training_allowed (top-level or
    nested: `source row: metadata.training_allowed is false`)."""
    where = part[len(_SOURCE_NO) :].split(" ", 1)[0]
    return where.rsplit(".", 1)[-1] == "training_allowed"


def _repeats(
    docs_path: Path, ids_given: bool = False
) -> tuple[dict[int, tuple[str, str]], list[str], Carried, dict[str, int]]:
    """Exact repeats by row of the spooled documents, read by their key columns only (the
    first wins): the same text (`duplicate_payload`), or the same id (`duplicate_id`: an id made
    from the URL, another capture of the page); with `ids_given` (the corpus's own ids,
    `--id-field`), the same id on a different text is `id_conflict`, naming both places. Also
    the URLs of the documents kept, the opt-outs of the rows not kept (`Carried`) and the
    file index of each source (a row's code is `index << 40 | record_offset`)."""
    files: dict[str, int] = {}
    names: list[str] = []
    seen: dict[bytes, int] = {}
    repeats: dict[int, tuple[str, str]] = {}
    urls: list[str] = []

    def where(code: int) -> str:
        return f"{names[code >> 40]}@{code & ((1 << 40) - 1)}"

    carried = Carried(where, "another row")
    cols = ["content_sha256", "id", "url", "source_file", "record_offset"]
    cols += ["noai", "noimageai", "consent_source"]
    i = 0
    for batch in pq.ParquetFile(docs_path).iter_batches(batch_size=BATCH_ROWS * 4, columns=cols):
        for d in batch.to_pylist():
            src = d["source_file"] or ""
            if src not in files:
                files[src] = len(names)
                names.append(src)
            code = (files[src] << 40) | max(0, d["record_offset"] or 0)
            key, ident = _key(d["content_sha256"] or ""), _key("id:" + d["id"])
            kept = seen.get(key, seen.get(ident))
            if kept is None:
                seen[key] = seen[ident] = code
                if d["url"]:
                    urls.append(d["url"])
            elif key in seen:
                repeats[i] = ("duplicate_payload", f"same as {where(kept)}")
            elif ids_given:
                repeats[i] = (
                    "id_conflict",
                    f"id {d['id']!r} is already the id of a different text at {where(kept)}: "
                    "an id names one document; make the corpus's ids unique, or leave out "
                    "--id-field to have ids made from each URL or text",
                )
                kept = None  # another document: its opt-out is its own
            else:
                repeats[i] = ("duplicate_id", f"same as {where(kept)}")
            words, said = _source_optout(d)
            if words:
                carried.note(code, words, said, d["url"], kept)
                if kept is not None:
                    reason, detail = repeats[i]
                    repeats[i] = (reason, f"{detail}; its opt-out is carried to it")
            i += 1
    return repeats, urls, carried, files


def _decide_and_write(
    spool: Spool,
    out_dir: Path,
    *,
    config: Any,
    offline: bool,
    files: list[str],
    kind: str,
    ids_given: bool = False,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The spooled rows decided and written: repeats become skips (`_repeats`; `ids_given`:
    the ids are the corpus's own), documents take the opt-outs of the rows not kept and are
    decided (`ConsentBook.apply`); then the summary (with `extra`'s figures) and the
    manifests."""
    import shutil

    from common.manifest import write_manifest
    from crawlers.crawl.config import CrawlConfig
    from crawlers.imports.consent import ConsentBook
    from crawlers.imports.run import _Out

    cfg = CrawlConfig.from_any(config)
    records = spool.counts["doc"] + spool.counts["skip"]
    docs_path, skips_path = spool.close()
    repeats, urls, carried, file_index = _repeats(docs_path, ids_given)
    t = time.perf_counter()
    book = ConsentBook(cfg, offline=offline)
    book.fetch(urls)
    del urls
    out_dir.mkdir(parents=True, exist_ok=True)
    kept = _Out(out_dir / "documents.parquet", documents_schema())
    skipped = _Out(out_dir / "skipped.parquet", SKIPS_SCHEMA)
    reasons: dict[str, int] = {}
    for batch in pq.ParquetFile(skips_path).iter_batches(batch_size=BATCH_ROWS):
        rows = batch.to_pylist()
        for r in rows:
            reasons[r["skip_reason"]] = reasons.get(r["skip_reason"], 0) + 1
        skipped.write(rows)
    allowed = 0
    i = 0
    for batch in pq.ParquetFile(docs_path).iter_batches(batch_size=BATCH_ROWS):
        docs, skips = [], []
        for d in batch.to_pylist():
            if i in repeats:
                reason, detail = repeats[i]
                reasons[reason] = reasons.get(reason, 0) + 1
                skips.append({**d, "skip_reason": reason, "skip_detail": detail})
            else:
                at = file_index.get(d.get("source_file") or "", 0)
                carried.apply(d, (at << 40) | max(0, d.get("record_offset") or 0))
                if d.get("url"):
                    book.apply(d)
                for flag in ("noai", "noimageai"):
                    d[flag] = bool(d.get(flag))
                allowed += d.get("training_allowed") is True
                docs.append(d)
            i += 1
        kept.write(docs)
        skipped.write(skips)
    kept.close()
    skipped.close()
    shutil.rmtree(spool.dir, ignore_errors=True)
    hosts = book.hosts()
    _write(_table(hosts, HOSTS_SCHEMA), out_dir / "hosts.parquet")
    summary = {
        "files": len(files),
        "records": records,
        "documents": kept.rows,
        "skipped": skipped.rows,
        "skipped_by_reason": dict(sorted(reasons.items(), key=lambda kv: str(kv[0]))),
        "hosts": len(hosts),
        "hosts_unreachable": sum(1 for h in hosts if h["unreachable"]),
        "training_allowed": allowed,
        "training_not_allowed": kept.rows - allowed,
        "offline": offline,
        "consent_seconds": round(time.perf_counter() - t, 3),
        **(extra or {}),
    }
    if records != kept.rows + skipped.rows:
        raise RuntimeError(f"import {kind}: {records} records != {kept.rows} + {skipped.rows}")
    conf = {"agent": cfg.agent, "training_agent": cfg.training_agent, "source": kind}
    write_manifest(
        out_dir / "documents.parquet",
        rows=kept.rows,
        inputs=files[:50],
        config=conf,
        extra={"summary": summary, "sources": files},
    )
    write_manifest(out_dir / "skipped.parquet", rows=skipped.rows, inputs=files[:50], config=conf)
    write_manifest(out_dir / "hosts.parquet", rows=len(hosts), inputs=files[:50], config=conf)
    return summary


def import_wet(
    patterns: Iterable[str],
    out_dir: str | Path,
    *,
    config: Any = None,
    offline: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> dict[str, Any]:
    """Common Crawl WET files -> `out_dir/documents.parquet` (+ skipped, hosts)."""
    from crawlers.crawl.config import CrawlConfig

    allow_private = CrawlConfig.from_any(config).allow_private_networks
    files = expand(patterns, allow_private, what=WET_FILES)
    spool = Spool(Path(out_dir))
    try:
        for source in files:
            for kind, row in iter_wet(source, allow_private):
                spool.add(kind, row)
    except BaseException:
        spool.discard()  # the error is one line; no _parts/ is left behind
        raise
    log(f"import wet: {len(files)} files, {sum(spool.counts.values())} records")
    return _decide_and_write(
        spool, Path(out_dir), config=config, offline=offline, files=files, kind="wet"
    )
