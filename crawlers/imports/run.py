"""A whole WARC import: files -> per-file parts (resumable) -> dedup -> consent -> crawl output.

Work is partitioned by file: each source file is scanned alone into its part (in this process,
or one Beam element per file: `pipelines/beam/imports.py`), so the executors write the same
parts. The driver then reads the parts twice, streamed a batch of rows at a time: first only
their key columns (which rows are exact repeats; the URLs whose origins need robots.txt), then
whole rows, decided and written as they come. It holds hashes of the keys and each URL's
robots.txt outcome, never the rows. An opt-out in any record of a URL (a later capture, a
revisit, a repeat of the payload, a skipped response) is carried to the page kept (`Carried`);
a URL is the scan's `warc.page_url`: the crawler's canonical form (`crawlers.crawl.canon`: IDNA
host, no trailing dot, default port or fragment, percent-encoding normalised), which the rows
store, so `HTTP://Bücher.example.:80/caf%c3%a9#top` is another capture of
`http://xn--bcher-kva.example/caf%C3%A9` (a URI with no canonical form is keyed as archived,
`warc.import_url`, and a skip's `skip_detail` says why).

Sharded imports (`shard`: `--shard K/N`, the Dagster partitions) are imports of their own: a URL
captured in files of two shards is a page in each (nothing is de-duplicated across shards), and
an opt-out is carried only within a shard. So every import appends the archived opt-outs of the
pages it keeps (a capture's noai, its own or carried: `_optout`) to the lake's consent ledger
(`crawlers.imports.consent.append_archived`, `archived_optouts_lake`): a row per URL,
`training_allowed = false`, the document id `refinery extract` gives it, `robots_kind =
'archived'`. Every consumer asks `common.consent.Consent`, which refuses every row of that URL
or id, so the copy another shard allowed is refused whichever shard ran first; a robots.txt
recheck never re-allows such a URL (`crawlers.consent`). An import outside a lake appends
nothing (its summary's `consent_ledger` is null).

Layout of the output directory (the crawl's contract, so `refinery extract --crawl DIR` runs
unchanged on it):

- `pages.parquet`: the crawl's `PAGES_SCHEMA` columns plus `IMPORT_COLUMNS` (provenance and
  consent evidence), one row per imported page.
- `skipped.parquet`: the crawl's `SKIPPED_SCHEMA` plus `skip_detail` and the provenance columns:
  every record that is not a page, with its reason. Records in = pages + skipped.
- `hosts.parquet`: every origin of the import, its robots.txt status, fetch time and sha256.
- `warc/<key>.warc.gz`: records copied from sources that cannot be read at an offset.
- `parts/<key>.parquet` + `parts/<key>.done.json`: one file's rows (or one byte range's, for
  a large gzip-per-record file: `plan`); a unit whose marker matches the file's size and mtime
  is not read again (resume after a kill).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawlers.imports import wacz
from crawlers.imports.sources import is_remote, list_remote, local_path, remote_info
from crawlers.imports.warc import ScanOptions, scan_file, splittable

PROVENANCE = [
    ("source_file", pa.string()),
    ("record_offset", pa.int64()),
    ("record_length", pa.int64()),
    ("warc_record_id", pa.string()),
    ("capture_time", pa.string()),
    ("record_type", pa.string()),
    ("import_mode", pa.string()),
]
IMPORT_COLUMNS = [
    *PROVENANCE,
    ("payload_digest", pa.string()),
    ("archived_x_robots", pa.string()),
    ("archived_header_optout", pa.string()),
    ("archived_meta_optout", pa.string()),
    ("consent_source", pa.string()),
    ("robots_fetched_at", pa.string()),
    ("robots_sha256", pa.string()),
]
PART_SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("url", pa.string()),
        ("status", pa.int32()),
        ("content_type", pa.string()),
        ("content_sha256", pa.string()),
        ("content_length", pa.int64()),
        ("redirect_to", pa.string()),
        ("noindex", pa.bool_()),
        ("nofollow", pa.bool_()),
        ("noai", pa.bool_()),
        ("noimageai", pa.bool_()),
        ("warc_file", pa.string()),
        ("warc_offset", pa.int64()),
        ("warc_length", pa.int64()),
        ("skip_reason", pa.string()),
        ("skip_detail", pa.string()),
        ("refers_to", pa.string()),
        ("refers_to_uri", pa.string()),
        *[f for f in IMPORT_COLUMNS if f[0] not in ("consent_source",) and "robots_" not in f[0]],
    ]
)
HOSTS_SCHEMA = pa.schema(
    [
        ("origin", pa.string()),
        ("robots_url", pa.string()),
        ("robots_status", pa.int32()),
        ("robots_fetched_at", pa.string()),
        ("robots_sha256", pa.string()),
        ("robots_kind", pa.string()),
        ("unreachable", pa.string()),
        ("urls", pa.int64()),
        ("training_allowed_urls", pa.int64()),
        ("decided", pa.bool_()),
    ]
)


def pages_schema() -> pa.Schema:
    from crawlers.crawl.output import PAGES_SCHEMA

    return pa.schema([*PAGES_SCHEMA, *[pa.field(n, t) for n, t in IMPORT_COLUMNS]])


def skipped_schema() -> pa.Schema:
    from crawlers.crawl.output import SKIPPED_SCHEMA

    extra = [("skip_detail", pa.string()), *PROVENANCE, ("payload_digest", pa.string())]
    return pa.schema([*SKIPPED_SCHEMA, *[pa.field(n, t) for n, t in extra]])


ARCHIVE_FILES = "WARC/ARC files, e.g. 'crawl/*.warc.gz' or s3://bucket/path/*.warc.gz"


def expand(
    patterns: Iterable[str], allow_private: bool = False, what: str = ARCHIVE_FILES
) -> list[str]:
    """Files named by paths, globs or fsspec URLs (globs too), in the order given, each once.
    A pattern that matches nothing is one error line naming it and what the importer reads
    (`what`: the kind of file, with an example). A URL is listed through `list_remote`: a
    scheme an import does not read is refused (`check_scheme`) and every request of an http(s)
    glob goes through the SSRF guard (`allow_private` lifts it)."""
    out: list[str] = []
    for pattern in patterns:
        pattern = str(pattern)
        if is_remote(pattern):
            found = list_remote(pattern, allow_private)
        elif glob.has_magic(local_path(pattern)):
            found = sorted(p for p in glob.glob(local_path(pattern)) if os.path.isfile(p))
        else:
            p = local_path(pattern)
            if os.path.isdir(p):
                raise IsADirectoryError(
                    f"{pattern}: a directory; name the files in it, e.g. '{p}/*' (FILE_OR_GLOB "
                    f"names {what})"
                )
            found = [p] if os.path.isfile(p) else []
        if not found:
            raise FileNotFoundError(f"{pattern}: no such file (FILE_OR_GLOB names {what})")
        for f in found:
            f = f if is_remote(f) else str(Path(f).resolve())
            for source in wacz.members(f) if not is_remote(f) and wacz.is_wacz(f) else [f]:
                if source not in out:
                    out.append(source)
    return out


def file_key(source: str) -> str:
    """The name of one source file's part: a hash of its path and its base name."""
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:12]
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in source.rsplit("/", 1)[-1])
    return f"{digest}-{name[:60]}"


# One scan: a whole file (start 0, end None) or the records of a gzip-per-record file that begin
# in the byte range [start, end) (the last range's end is None: to the end of the file).
Unit = tuple[str, int, int | None]
SPLIT_BYTES = 256 << 20  # the byte range one scan reads of a large gzip-per-record file
# What a part holds; a part written by an older scan is read again (2: a skipped response's
# and a revisit's archived X-Robots-Tag opt-out are kept on their rows; 3: URLs as
# `warc.import_url` keys them, repeated Content-Encoding lines joined, HTML sniffed past a
# byte order mark, comments and an XML declaration; 4: URLs in their canonical form,
# `warc.page_url`).
SCAN_VERSION = 4


def unit_key(unit: Unit) -> str:
    """The name of one unit's part: the file's, plus the range when the file is split."""
    source, start, end = unit
    if start == 0 and end is None:
        return file_key(source)
    return f"{file_key(source)}.{start}-{'end' if end is None else end}"


def plan(
    files: list[str], split_bytes: int | None = SPLIT_BYTES, allow_private: bool = False
) -> list[Unit]:
    """The scans of an import, in file order: one per file, or byte ranges of about
    `split_bytes` for a gzip-per-record file larger than that (`splittable`; local, or remote
    where the server reports the size and answers byte ranges)."""
    units: list[Unit] = []
    for source in files:
        if not split_bytes:
            size = 0
        elif is_remote(source):
            size = remote_info(source, allow_private).get("size") or 0
        else:
            size = os.path.getsize(local_path(source))
        if split_bytes and size > split_bytes and splittable(source, allow_private=allow_private):
            n = -(-size // split_bytes)
            step = -(-size // n)
            units += [(source, i * step, (i + 1) * step if i < n - 1 else None) for i in range(n)]
        else:
            units.append((source, 0, None))
    return units


def shard_of(source: str, shards: int) -> int:
    """The shard (0..shards-1) a file belongs to: a hash of its name, so adding files to an
    import moves none of the others (their finished parts stay finished)."""
    return int(hashlib.sha256(source.encode("utf-8")).hexdigest()[:8], 16) % shards


def _stamp(source: str, allow_private: bool = False) -> dict[str, Any]:
    if is_remote(source):
        info = remote_info(source, allow_private)
        return {"size": info.get("size"), "mtime": str(info.get("mtime") or info.get("ETag"))}
    st = os.stat(local_path(source))
    return {"size": st.st_size, "mtime": st.st_mtime_ns}


def is_done(
    source: str, out_dir: Path, opts: dict[str, Any] | None = None, start: int = 0, end=None
) -> bool:
    """A finished part whose marker matches the file's size and mtime, the byte range, the
    scan options (tokens, record cap) and `SCAN_VERSION`: a part read with other options, or
    by an older scan, is read again."""
    marker = Path(out_dir) / "parts" / f"{unit_key((source, start, end))}.done.json"
    if not marker.exists():
        return False
    try:
        done = json.loads(marker.read_text())
    except ValueError:
        return False
    same_opts = opts is None or done.get("opts") == opts
    same_range = done.get("range", [0, None]) == [start, end]
    same_scan = done.get("scan_version", 1) == SCAN_VERSION
    allow_private = bool((opts or {}).get("allow_private_networks"))
    return (
        done.get("source") == source
        and done.get("stamp") == _stamp(source, allow_private)
        and same_opts
        and same_range
        and same_scan
    )


def _table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    cols = {}
    for f in schema:
        values = [r.get(f.name) for r in rows]
        if pa.types.is_boolean(f.type):
            values = [None if v is None else v is True for v in values]
        cols[f.name] = pa.array(values, type=f.type)
    return pa.table(cols, schema=schema)


def _write(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def scan_to_part(
    source: str, out_dir: str | Path, opts: dict[str, Any], start: int = 0, end: int | None = None
) -> dict[str, Any]:
    """Scan one file (or one byte range of it) into `parts/<key>.parquet`, then its done
    marker (the resume unit)."""
    out_dir = Path(out_dir)
    key = unit_key((source, start, end))
    started = time.perf_counter()
    rows = scan_file(source, ScanOptions(**opts), out_dir / "warc", key, start, end)
    _write(_table(rows, PART_SCHEMA), out_dir / "parts" / f"{key}.parquet")
    counts = {
        "source": source,
        "range": [start, end],
        "scan_version": SCAN_VERSION,
        "stamp": _stamp(source, bool(opts.get("allow_private_networks"))),
        "opts": opts,
        "records": len(rows),
        "pages": sum(1 for r in rows if r["kind"] == "page"),
        "seconds": round(time.perf_counter() - started, 3),
    }
    marker = out_dir / "parts" / f"{key}.done.json"
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(json.dumps(counts))
    os.replace(tmp, marker)
    return counts


Scanner = Callable[[list[Unit], Path, dict[str, Any]], None]


def scan_in_process(units: list[Unit], out_dir: Path, opts: dict[str, Any]) -> None:
    for source, start, end in units:
        scan_to_part(source, out_dir, opts, start, end)


_KEY_COLUMNS = ["kind", "url", "payload_digest", "content_sha256", "skip_reason", "record_offset"]
_REVISIT_COLUMNS = ["refers_to", "refers_to_uri"]
_OPTOUT_COLUMNS = ["archived_header_optout", "archived_meta_optout"]
BATCH_ROWS = 2048  # rows of a part decided and written at once: the driver's memory bound


def _key(value: str) -> bytes:
    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _url_key(url: str) -> bytes:
    """The key of a URL: the hash of its canonical form (`warc.page_url`; a URL with none: as
    archived), so `HTTP://Host./a#x` and `http://host/a` are one key."""
    from crawlers.imports.warc import page_url

    return _key(page_url(url)[0])


Carry = tuple[int, str, str]  # (code of the row that opts out, its words, its evidence)


class Carried:
    """Opt-outs of rows an import does not keep (another capture of a URL, a repeat of a page
    or document, a revisit, a skipped response), carried to the row it keeps in their place:
    an opt-out in any record wins. Noted by URL (every capture of it, by the URL's canonical
    form, `warc.page_url`: every spelling of a page is one key) and by the code of the row a
    repeat repeats; `where(code)` names a row (`file@offset`). Held: the rows that opt out,
    never the others."""

    def __init__(self, where: Callable[[int], str], label: str = "another capture"):
        self.where, self.label = where, label
        self.by_url: dict[bytes, list[Carry]] = {}
        self.by_kept: dict[int, list[Carry]] = {}

    def note(
        self, code: int, words: set[str], evidence: str, url: str | None, kept: int | None
    ) -> None:
        """Row `code` opts out saying `evidence` (`words`: noai, noimageai, or optout: its
        source's own no to training); `kept`: the code of the row it repeats, if any."""
        entry = (code, ",".join(sorted(words)), evidence)
        if url:
            self.by_url.setdefault(_url_key(url), []).append(entry)
        if kept is not None:
            self.by_kept.setdefault(kept, []).append(entry)

    def apply(self, row: dict[str, Any], code: int) -> set[str]:
        """Carry the opt-outs noted for a kept row (`code`) or its URL into it (in place): noai
        and optout make `training_allowed` false, noai and noimageai set their flags;
        `consent_source` names the rows they came from. Returns the words carried."""
        if not (self.by_url or self.by_kept):
            return set()
        found = list(self.by_kept.get(code, ()))
        if row.get("url") and self.by_url:
            found += self.by_url.get(_url_key(row["url"]), ())
        others = {c: (w, e) for c, w, e in found if c != code}
        if not others:
            return set()
        words = {w for ws, _ in others.values() for w in ws.split(",")}
        if words & {"noai", "optout"}:
            row["training_allowed"] = False
        for flag in ("noai", "noimageai"):
            if flag in words:
                row[flag] = True
        said = [f"{self.label} ({self.where(c)}): {e}" for c, (_, e) in sorted(others.items())]
        if len(said) > 3:
            said = [*said[:3], f"and {len(said) - 3} more that opt out"]
        row["consent_source"] = "; ".join(filter(None, [row.get("consent_source"), *said]))
        return words


def _archived_optout(row: dict[str, Any]) -> tuple[set[str], str]:
    """The noai/noimageai an archived capture's own headers and meta tags carry, and the
    evidence as `consent_source` words it (`crawlers.imports.consent.decide`)."""
    words: set[str] = set()
    said = []
    for col, what in (
        ("archived_header_optout", "archived headers: X-Robots-Tag"),
        ("archived_meta_optout", "archived meta: robots"),
    ):
        if row.get(col):
            words |= set(row[col].split(","))
            said.append(f"{what} {row[col]}")
    return words & {"noai", "noimageai"}, "; ".join(said)


def _repeats(
    units: list[Unit], out_dir: Path
) -> tuple[dict[int, dict[int, tuple]], list[str], Carried]:
    """The first pass over the parts, reading only their key columns, in file order: which rows
    are exact repeats, as {unit index: {row index: (reason, detail)}}, the URLs of the pages
    kept (for the robots.txt fetch) and the opt-outs of the rows not kept (`Carried`). A repeat
    is a URL seen before (duplicate_url: by its canonical form, which the scan stores), a
    decoded body seen before (duplicate_payload, by the sha256 the scan computed: an archive's
    WARC-Payload-Digest is not verified here, may use an algorithm warcio does not know or be
    malformed, and archivers differ on what it covers, a chunked body or not, so it never makes
    two different bodies one), a revisit whose
    WARC-Payload-Digest is that of a page kept (revisit: the archive's own word on which
    capture it repeats) or of none (revisit_missing_original). Held: 16-byte hashes of the
    keys, never a row."""
    seen_url: dict[bytes, int] = {}
    seen_body: dict[bytes, int] = {}  # content_sha256 of the pages kept
    seen_digest: dict[bytes, int] = {}  # their WARC-Payload-Digest, for the revisits
    revisits: list[tuple[int, int, int, str | None, str, tuple[set[str], str] | None]] = []
    repeats: dict[int, dict[int, tuple]] = {}
    urls: list[str] = []

    def where(code: int) -> str:
        return f"{units[code >> 40][0]}@{code & ((1 << 40) - 1)}"

    carried = Carried(where)
    for fi, unit in enumerate(units):
        part = pq.ParquetFile(out_dir / "parts" / f"{unit_key(unit)}.parquet")
        cols = _KEY_COLUMNS + _REVISIT_COLUMNS + _OPTOUT_COLUMNS
        i = 0
        for batch in part.iter_batches(batch_size=BATCH_ROWS * 4, columns=cols):
            for row in batch.to_pylist():
                code = (fi << 40) | max(0, row.get("record_offset") or 0)
                optout = _archived_optout(row)
                kept = None  # the code of the row this one repeats
                if row["kind"] == "page":
                    ukey = _key(row["url"])  # canonical as scanned (`warc.page_url`)
                    body = _key(row["content_sha256"] or "")
                    first = seen_body.get(body)
                    if ukey in seen_url:
                        kept = seen_url[ukey]
                        detail = f"same URL as {where(kept)}"
                        repeats.setdefault(fi, {})[i] = ("duplicate_url", detail)
                    elif first is not None:
                        kept = first
                        detail = f"same payload as {where(first)}"
                        repeats.setdefault(fi, {})[i] = ("duplicate_payload", detail)
                    else:
                        seen_url[ukey] = code
                        seen_body[body] = code
                        if row["payload_digest"]:
                            seen_digest.setdefault(_key(row["payload_digest"]), code)
                        urls.append(row["url"])
                    if kept is not None and optout[0]:
                        reason, detail = repeats[fi][i]
                        detail += f"; its {','.join(sorted(optout[0]))} is carried to it"
                        repeats[fi][i] = (reason, detail)
                elif row["skip_reason"] == "revisit":
                    missing = (
                        f"revisit of {row['refers_to_uri'] or row['url']} "
                        f"({row['refers_to'] or 'no WARC-Refers-To'}): the original capture is "
                        "not in the import, so there is no body"
                    )
                    said = optout if optout[0] else None  # most revisits say nothing: hold none
                    revisits.append((fi, i, code, row["payload_digest"], missing, said))
                if optout[0]:
                    carried.note(code, *optout, row.get("url"), kept)
                i += 1
    for fi, i, code, digest, missing, optout in revisits:  # against every payload of the import
        k = _key(digest) if digest else None
        kept = seen_digest[k] if k is not None and k in seen_digest else None
        if kept is not None:
            detail = f"repeat capture of {where(kept)}"
            if optout is not None:
                detail += f"; its {','.join(sorted(optout[0]))} is carried to it"
                carried.note(code, *optout, None, kept)
            repeats.setdefault(fi, {})[i] = ("revisit", detail)
        else:
            repeats.setdefault(fi, {})[i] = ("revisit_missing_original", missing)
    return repeats, urls, carried


def _as_skip(row: dict, reason: str, detail: str) -> dict:
    return {**row, "kind": "skip", "skip_reason": reason, "skip_detail": detail}


class _Out:
    """One output Parquet file written a batch at a time (tmp, then renamed when closed)."""

    def __init__(self, path: Path, schema: pa.Schema):
        self.path, self.schema = path, schema
        self.tmp = path.with_name(path.name + ".tmp")
        self.writer = pq.ParquetWriter(self.tmp, schema)
        self.rows = 0

    def write(self, rows: list[dict]) -> None:
        if rows:
            self.writer.write_table(_table(rows, self.schema))
            self.rows += len(rows)

    def close(self) -> None:
        self.writer.close()
        os.replace(self.tmp, self.path)


def _write_outputs(
    units: list[Unit],
    out_dir: Path,
    repeats: dict[int, dict[int, tuple]],
    book: Any,
    carried: Carried | None = None,
    ledger: Callable[[list[dict[str, Any]]], Any] | None = None,
) -> dict[str, Any]:
    """The second pass: every part again, a batch of rows at a time, in file order: repeats
    become skips, pages take the opt-outs of the captures not kept (`Carried`), are decided
    (`ConsentBook.apply`) and both are written as they come. `ledger(optouts)` is given the
    archived opt-outs of the pages kept (`_optout`) before pages.parquet is in place,
    so no reader sees a page whose opt-out the lake's ledger does not hold yet."""
    pages = _Out(out_dir / "pages.parquet", pages_schema())
    skipped = _Out(out_dir / "skipped.parquet", skipped_schema())
    reasons: dict[str, int] = {}
    allowed = 0
    optouts: list[dict[str, Any]] = []
    for fi, unit in enumerate(units):
        part = pq.ParquetFile(out_dir / "parts" / f"{unit_key(unit)}.parquet")
        mine = repeats.get(fi, {})
        i = 0
        for batch in part.iter_batches(batch_size=BATCH_ROWS):
            kept, skips = [], []
            for row in batch.to_pylist():
                if i in mine:
                    row = _as_skip(row, *mine[i])
                i += 1
                if row["kind"] == "page":
                    words = _archived_optout(row)[0]
                    if carried is not None:
                        code = (fi << 40) | max(0, row.get("record_offset") or 0)
                        words |= carried.apply(row, code)
                    book.apply(row)
                    row.update(
                        host=_host(row["url"]),
                        depth=0,
                        source="import:warc",
                        final_url=row["url"],
                        fetched_at=row.get("capture_time"),
                        attempts=0,
                    )
                    allowed += row["training_allowed"] is True
                    if "noai" in words:
                        optouts.append(_optout(row))
                    kept.append(row)
                else:
                    why = _uncanonical(row.get("url"))
                    if why:
                        row["skip_detail"] = "; ".join(filter(None, [row.get("skip_detail"), why]))
                    row.update(host=_host(row.get("url")), depth=0, source="import:warc")
                    reasons[row["skip_reason"]] = reasons.get(row["skip_reason"], 0) + 1
                    skips.append(row)
            pages.write(kept)
            skipped.write(skips)
    if ledger is not None:
        ledger(optouts)
    pages.close()
    skipped.close()
    return {
        "pages": pages.rows,
        "skipped": skipped.rows,
        "allowed": allowed,
        "reasons": reasons,
        "optouts": len(optouts),
    }


def _uncanonical(url: str | None) -> str | None:
    """Why an http(s) URL is kept as archived (`warc.page_url` found no canonical form), or
    None."""
    if not url:
        return None
    from crawlers.imports.warc import page_url

    why = page_url(url)[1]
    return f"URL kept as archived, it has no canonical form ({why})"[:500] if why else None


def _optout(row: dict[str, Any]) -> dict[str, Any]:
    """A kept page's archived opt-out as `consent.append_archived` takes it: its URL, host, the
    id `refinery extract` gives its document, and the evidence (its own archived noai and that
    of the other captures carried to it)."""
    from crawlers.extract.page import doc_id

    parts = (row.get("consent_source") or "").split("; ")
    said = [p for p in parts if p.startswith(("archived ", "another capture"))]
    return {
        "url": row["url"],
        "host": row.get("host"),
        "doc_ids": [doc_id(row["url"])],
        "rule": "; ".join(said) or "archived noai",
    }


def archived_optouts_lake(out_dir: Path, lake_root: str | Path | None = None) -> Path | None:
    """The lake whose consent ledger takes an import's archived opt-outs: `lake_root` when
    given, else the lake `out_dir` is a crawl shard of (`<lake>/crawl/shard=.../`, where the
    import writes by default), else the nearest directory above `out_dir` that holds a consent
    ledger (`common.consent.lake_of`), else None (an import outside any lake: nothing is
    appended, and the summary's `consent_ledger` says so)."""
    from common.consent import lake_of

    if lake_root is not None:
        return Path(lake_root)
    out = Path(out_dir).resolve()
    if out.parent.name == "crawl" and out.name.startswith("shard="):
        return out.parent.parent
    return lake_of(out)


def import_warc(
    patterns: Iterable[str],
    out_dir: str | Path,
    *,
    config: Any = None,
    offline: bool = False,
    max_record_bytes: int | None = None,
    scanner: Scanner | None = None,
    split_bytes: int | None = SPLIT_BYTES,
    shard: tuple[int, int] = (0, 1),
    lake_root: str | Path | None = None,
    log: Callable[[str], None] = lambda msg: None,
) -> dict[str, Any]:
    """Import WARC/ARC files into `out_dir` (see the module doc); returns the summary figures.

    `config`: a CrawlConfig (or dict of its fields) for the robots.txt fetches and the tokens.
    `scanner(units, out_dir, opts)` scans the units (files, or byte ranges of a large
    gzip-per-record file: `plan`) not yet done (default: in this process; the stage passes a
    Beam pipeline, one unit per element). `shard` (k, n): only the files of shard k of n
    (`shard_of`), for n imports side by side into n directories; the shards do not
    de-duplicate against each other (a URL in files of two shards is a page in each), and an
    archived opt-out reaches the other shards' copies through the lake's consent ledger
    (`lake_root`, default `archived_optouts_lake`; see the module doc).
    """
    from common.manifest import manifest_path
    from crawlers.crawl.config import CrawlConfig
    from crawlers.imports.consent import ConsentBook, append_archived

    cfg = CrawlConfig.from_any(config)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = expand(patterns, cfg.allow_private_networks)
    k, n = shard
    if n > 1:
        files = [f for f in files if shard_of(f, n) == k]
    opts = {"agent": cfg.agent, "training_agent": cfg.training_agent}
    if max_record_bytes is not None:
        opts["max_record_bytes"] = int(max_record_bytes)
    if cfg.allow_private_networks:  # http(s) archives on private addresses (the SSRF guard)
        opts["allow_private_networks"] = True
    units = plan(files, split_bytes, cfg.allow_private_networks)
    todo = [u for u in units if not is_done(u[0], out_dir, opts, u[1], u[2])]
    for name in ("pages.parquet", "skipped.parquet", "hosts.parquet"):  # written again below,
        # from the parts of these files: a run killed before then leaves no previous run's
        # outputs a reader would take as this import
        manifest_path(out_dir / name).unlink(missing_ok=True)
        (out_dir / name).unlink(missing_ok=True)
    started = time.perf_counter()
    if todo:
        (scanner or scan_in_process)(todo, out_dir, opts)
    scan_s = time.perf_counter() - started
    scanned = {u[0] for u in todo}
    log(f"import: {len(files)} files ({len(files) - len(scanned)} already done), scanned")
    t = time.perf_counter()
    repeats, urls, carried = _repeats(units, out_dir)
    dedup_s = time.perf_counter() - t
    t = time.perf_counter()
    book = ConsentBook(cfg, offline=offline)
    book.fetch(urls)
    del urls
    consent_s = time.perf_counter() - t
    t = time.perf_counter()
    lake = archived_optouts_lake(out_dir, lake_root)
    appended: dict[str, Any] = {"file": None, "rows": 0}

    def ledger(optouts: list[dict[str, Any]]) -> None:
        if lake is not None:
            appended["file"], appended["rows"] = append_archived(lake, optouts, cfg.training_agent)

    out = _write_outputs(units, out_dir, repeats, book, carried, ledger)
    write_s = time.perf_counter() - t
    hosts = book.hosts()
    _write(_table(hosts, HOSTS_SCHEMA), out_dir / "hosts.parquet")
    records = sum(json.loads(m.read_text())["records"] for m in _markers(units, out_dir))
    pages, skipped = out["pages"], out["skipped"]
    summary = {
        "files": len(files),
        "files_scanned": len(scanned),
        "files_resumed": len(files) - len(scanned),
        "ranges": len(units),
        "ranges_scanned": len(todo),
        "shard": f"{k}/{n}",
        "records": records,
        "pages": pages,
        "skipped": skipped,
        "skipped_by_reason": dict(sorted(out["reasons"].items())),
        "hosts": len(hosts),
        "hosts_unreachable": sum(1 for h in hosts if h["unreachable"]),
        "training_allowed": out["allowed"],
        "training_not_allowed": pages - out["allowed"],
        "archived_optouts": out["optouts"],
        "consent_ledger": None if lake is None else str(lake / "consent" / "ledger"),
        "consent_ledger_appended": appended["file"] and str(appended["file"]),
        "consent_ledger_rows": appended["rows"],
        "offline": offline,
        "scan_seconds": round(scan_s, 3),
        "dedup_seconds": round(dedup_s, 3),
        "consent_seconds": round(consent_s, 3),
        "write_seconds": round(write_s, 3),
    }
    if records != pages + skipped:  # the promise: nothing is silently lost
        raise RuntimeError(f"import {out_dir}: {records} records != {pages} + {skipped}")
    _manifests(out_dir, files, summary, cfg)
    return summary


def _markers(units: list[Unit], out_dir: Path) -> list[Path]:
    return [out_dir / "parts" / f"{unit_key(u)}.done.json" for u in units]


def _host(url: str | None) -> str | None:
    """host[:port], as the crawler's pages.parquet writes it (canon.host_of)."""
    from common.inputs import url_netloc

    return url_netloc(url) if url else None


def _manifests(out_dir: Path, files: list[str], summary: dict[str, Any], cfg: Any) -> None:
    from common.manifest import write_manifest

    conf = {"agent": cfg.agent, "training_agent": cfg.training_agent}
    inputs = files[:50]
    write_manifest(
        out_dir / "pages.parquet",
        rows=summary["pages"],
        inputs=inputs,
        config=conf,
        extra={"summary": summary, "sources": files},
    )
    write_manifest(out_dir / "skipped.parquet", rows=summary["skipped"], inputs=inputs, config=conf)
    write_manifest(out_dir / "hosts.parquet", rows=summary["hosts"], inputs=inputs, config=conf)
