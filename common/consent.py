"""Consent: the one rule every path to a teacher, a tokenizer, a shard or a stored image asks.

A row may be used for training only when

1. its own flag says so: `training_allowed` is the boolean `true` (Python `True`, NumPy's
   `True`, Arrow's `true`). Anything else is no: `None`/NULL, a missing column, the string
   `"true"` or `"false"`, `1`, NaN. Data made by other tools must carry a real boolean; and
2. no consent ledger that applies (`<lake>/consent/ledger/`) holds an opt-out for it: by
   document id (`LEDGER_ID_KEYS`: the row's `doc_id`, `id` or `pair_id` among an opted-out row's
   `doc_ids`) or by URL (`LEDGER_URL_KEYS`: the row's page URL `url`/`doc_url`/`page_url`, or
   its image URL `src`/`image_url`, equal to an opted-out row's `url`).

`Consent.load(lake_root)` reads the ledger once; `consent.allows(row)` and `consent.why_not(row)`
answer for one row (a mapping or an object); `consent.keep(rows)` splits a batch.
`flag_true(value)` is the flag rule alone. The mixture builder applies the same rule in SQL
(`training_allowed IS TRUE` and the ledgers' latest rows), from the same ledger files.

The ledger itself (written by `crawlers.consent.recheck`, read by every consumer):

- Append-only: files are `ledger-<seq>.parquet` (seq = 1 + the highest present), created with an
  exclusive link so a concurrent recheck never overwrites one; nothing is ever rewritten.
- One row per URL whose training permission changed: a document's page URL, or a stored image's
  URL (`src`), whose `doc_ids` then hold the ids of the image rows (pair ids).
- Within ONE lake's ledger the latest row per URL wins: files by seq (`ledger-<seq>`), then row
  order within a file. An opt-out is `training_allowed = false`; a host that allows the token
  again gets a `true` row.
- ACROSS lakes (a run over inputs of other lakes reads each input's own ledger too,
  `ledger_files_for`), a URL is opted out when ANY lake's latest row for it is
  `training_allowed = false` (and so are the `doc_ids` of every lake's latest row for it): one
  lake's later re-allow never lifts another lake's opt-out, and neither the order the files are
  given in nor their paths decide. A file's lake is its directory (`<lake>/consent/ledger/`).
- The ledger can only take rows out: a row whose own flag is not true stays out whatever the
  ledger says.

A ledger version is the sha256 of its sorted file names with each file's sha256
(`ledger_version`); a mixture manifest records the version it honoured.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

FLAG = "training_allowed"
# The columns a row names its document by (its ids; a pair's id names the image row) and its
# URLs by (the page's, and the image's own URL), matched against the ledger's `doc_ids` and
# `url`. training/mixture/sources.py applies the same keys in SQL.
LEDGER_ID_KEYS = ("doc_id", "id", "pair_id")
LEDGER_URL_KEYS = ("url", "doc_url", "page_url", "src", "image_url")


def flag_true(value: Any) -> bool:
    """True only for the boolean true (Python's or NumPy's); every other value is no."""
    if value is True:
        return True
    return _numpy_bool(value) and bool(value)


def _numpy_bool(value: Any) -> bool:
    t = type(value)
    return t.__module__ == "numpy" and t.__name__ in ("bool", "bool_")


def flag_of(row: Any, key: str = FLAG) -> Any:
    """The raw value of a row's consent flag (a mapping's key or an object's attribute)."""
    if isinstance(row, Mapping):
        return row.get(key)
    return getattr(row, key, None)


def _has_key(row: Any, key: str) -> bool:
    return key in row if isinstance(row, Mapping) else hasattr(row, key)


_ROW_SUFFIX = re.compile(r"-[0-9]+$")


def document_ids(row_id: str) -> tuple[str, ...]:
    """The row id and the ids of the document it names, as the mixture's SQL reads them
    (training/mixture/sources.py `_ledger_sql`) for a row without a `doc_id`: a pair id
    `<doc>-<n>`, a table pair `<doc>#t<n>`, a QA row `<pair>#<domain>`."""
    head = row_id.split("#", 1)[0]
    doc = _ROW_SUFFIX.sub("", head)
    return tuple(dict.fromkeys((row_id, head, doc)))


def describe_flag(value: Any) -> str:
    """Why a flag value is not consent, in a few words."""
    if value is None:
        return "training_allowed is missing or null"
    if isinstance(value, float) and math.isnan(value):
        return "training_allowed is NaN"
    if value is False or (_numpy_bool(value) and not bool(value)):
        return "training_allowed is false"
    return f"training_allowed is {value!r} ({type(value).__name__}), not the boolean true"


LEDGER_DIR = Path("consent") / "ledger"
LEDGER_SCHEMA = pa.schema(
    [
        ("checked_at", pa.string()),  # UTC, ISO 8601
        ("host", pa.string()),  # host[:port] of the document URL
        ("url", pa.string()),  # the document URL the decision is about
        ("doc_ids", pa.list_(pa.string())),  # lake document ids at that URL
        ("training_allowed", pa.bool_()),  # the new decision for the training token
        ("previous", pa.bool_()),  # what it was before this row
        ("agent", pa.string()),  # the training product token evaluated
        ("agent_group", pa.string()),  # the robots.txt group that applied ('*', a token, none)
        ("rule", pa.string()),  # the rule line that matched, e.g. 'Disallow: /'; None: no rule
        ("robots_url", pa.string()),
        ("robots_status", pa.int32()),  # final HTTP status of the robots.txt fetch
        ("robots_sha256", pa.string()),  # sha256 of the robots.txt body as fetched
        ("robots_kind", pa.string()),  # RobotsTxt.kind: parsed, unavailable-4xx, ...
    ]
)
_NAME = "ledger-{:06d}.parquet"


def ledger_dir(lake_root: str | Path) -> Path:
    """`<lake>/consent/ledger`."""
    return Path(lake_root) / LEDGER_DIR


def ledger_files(lake_root: str | Path | None) -> list[Path]:
    """The ledger's files in append order (empty when there is no ledger or no lake root)."""
    if lake_root is None:
        return []
    return sorted(ledger_dir(lake_root).glob("ledger-*.parquet"))


def lake_of(path: str | Path | None) -> Path | None:
    """The lake an input belongs to: the nearest of `path` (a directory) and its parents that
    holds a consent ledger directory; None when there is none."""
    if path is None:
        return None
    p = Path(path).resolve()
    for d in (p, *p.parents):
        if (d / LEDGER_DIR).is_dir():
            return d
    return None


def ledger_files_for(lake_root: str | Path | None, *inputs: str | Path | None) -> list[Path]:
    """The ledger files that apply to a run over `inputs`: the run's lake's, then those of each
    input's own lake (`lake_of`) when that is another one, each file once. An input taken from
    another lake brings that lake's opt-outs with it; the order decides nothing (`latest_rows`:
    latest row per lake, an opt-out in any lake wins)."""
    out: list[Path] = []
    seen: set[Path] = set()
    for root in (lake_root, *(lake_of(i) for i in inputs)):
        for f in ledger_files(root):
            if f.resolve() not in seen:
                seen.add(f.resolve())
                out.append(f)
    return out


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_SEQ = re.compile(r"ledger-(\d+)\.parquet")


def _seq(path: Path) -> tuple[int, str]:
    """A ledger file's place in its lake's append order: `ledger-<seq>.parquet` by seq (another
    name: -1, so such files come first, by name; training/mixture/sources.py sorts alike)."""
    m = _SEQ.fullmatch(path.name)
    return (int(m.group(1)) if m else -1, path.name)


def latest_by_lake(files: Iterable[str | Path]) -> dict[Path, dict[str, dict[str, Any]]]:
    """{ledger directory (one lake): {URL: its latest row there}}: within one lake, files by seq
    (`ledger-<seq>`), then row order; the last row for a URL wins."""
    by_lake: dict[Path, list[Path]] = {}
    for f in files:
        p = Path(f)
        by_lake.setdefault(p.resolve().parent, []).append(p)
    out: dict[Path, dict[str, dict[str, Any]]] = {}
    for lake, paths in by_lake.items():
        latest: dict[str, dict[str, Any]] = {}
        for f in sorted(paths, key=_seq):
            for row in pq.read_table(f, schema=LEDGER_SCHEMA).to_pylist():
                latest[row["url"]] = row
        out[lake] = latest
    return out


def latest_rows(files: Iterable[str | Path]) -> dict[str, dict[str, Any]]:
    """The row that decides each URL: its latest row in each lake (`latest_by_lake`); when any
    lake's latest row is an opt-out (`training_allowed` not true), that opt-out (the first lake
    with one, in the order given), else the first lake's latest row."""
    decided: dict[str, dict[str, Any]] = {}
    for latest in latest_by_lake(files).values():
        for url, row in latest.items():
            prev = decided.get(url)
            if prev is None or (prev["training_allowed"] and not row["training_allowed"]):
                decided[url] = row
    return decided


def ledger_version(files: Iterable[str | Path]) -> dict[str, Any]:
    """What a mixture manifest records: file count, last file, sha256 over (name, file sha256)
    of every file in order (None for an empty ledger), and how many URLs are opted out now."""
    paths = [Path(f) for f in files]
    if not paths:
        return {"path": str(LEDGER_DIR), "files": 0, "last": None, "sha256": None, "opted_out": 0}
    h = hashlib.sha256()
    for p in paths:
        h.update(f"{p.name} {_sha256_file(p)}\n".encode())
    opted_out = sum(1 for r in latest_rows(paths).values() if not r["training_allowed"])
    return {
        "path": str(LEDGER_DIR),
        "files": len(paths),
        "last": paths[-1].name,
        "sha256": h.hexdigest(),
        "opted_out": opted_out,
    }


def honoured_files(lake_root: str | Path | None, version: dict[str, Any] | None) -> list[Path]:
    """The ledger files a manifest's `consent_ledger` entry names (none for no entry): the
    lake's files up to `last`, checked against the recorded count and sha256."""
    if not version or not version.get("files"):
        return []
    files = [f for f in ledger_files(lake_root) if f.name <= str(version["last"])]
    if ledger_version(files).get("sha256") != version.get("sha256"):
        raise ValueError(
            f"consent_ledger: the manifest honoured {version.get('files')} ledger files up to "
            f"{version.get('last')} (sha256 {version.get('sha256')}), but "
            f"{ledger_dir(lake_root or '.')} holds {len(files)} such files with another hash; "
            "the ledger is append-only: restore the files or rebuild the mixture"
        )
    return files


def opted_out(files: Iterable[str | Path]) -> tuple[set[str], set[str]]:
    """(URLs, document ids) opted out: the URLs whose latest ledger row in any lake says
    training_allowed = false, and the `doc_ids` of every lake's latest row for those URLs (lakes
    may know a URL's documents by other ids; a re-allow in one lake frees none of them)."""
    by_lake = latest_by_lake(files)
    urls = {
        u for latest in by_lake.values() for u, r in latest.items() if not r["training_allowed"]
    }
    ids: set[str] = set()
    for latest in by_lake.values():
        for url in urls & latest.keys():
            ids.update(latest[url]["doc_ids"] or ())
    return urls, ids


def append_ledger(lake_root: str | Path, rows: list[dict[str, Any]]) -> Path | None:
    """Append `rows` as one new ledger file (None when there are none); never overwrites a file."""
    if not rows:
        return None
    missing = [r for r in rows if not r.get("url") or r.get("training_allowed") is None]
    if missing:
        raise ValueError(
            f"consent ledger rows need a url and a training_allowed decision; got {missing[0]!r}"
        )
    out = ledger_dir(lake_root)
    out.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=LEDGER_SCHEMA)
    tmp = out / f".append-{os.getpid()}-{id(rows)}.tmp"
    pq.write_table(table, tmp)
    try:
        while True:
            files = ledger_files(lake_root)
            seq = 1 + max((int(p.stem.split("-")[1]) for p in files), default=0)
            final = out / _NAME.format(seq)
            try:
                os.link(tmp, final)  # exclusive: fails if a concurrent recheck took this name
                return final
            except FileExistsError:
                continue
    finally:
        tmp.unlink(missing_ok=True)


@dataclass
class Consent:
    """The consent rule over one snapshot of the ledger: a row's own flag, then the ledger.

    `urls` and `ids` are the URLs (pages' and images') and document ids whose latest ledger row
    in some lake is an opt-out (`opted_out`);
    `files` the ledger files read (the snapshot a manifest can record)."""

    urls: frozenset[str] = frozenset()
    ids: frozenset[str] = frozenset()
    files: tuple[str, ...] = ()
    id_keys: tuple[str, ...] = LEDGER_ID_KEYS
    url_keys: tuple[str, ...] = LEDGER_URL_KEYS
    _version: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def load(
        cls, lake_root: str | Path | None, files: Iterable[str | Path] | None = None
    ) -> Consent:
        """The rule with the lake's ledger as it is now (or exactly `files`)."""
        paths = [Path(f) for f in (ledger_files(lake_root) if files is None else files)]
        urls, ids = opted_out(paths)
        return cls(frozenset(urls), frozenset(ids), tuple(str(p) for p in paths))

    def version(self) -> dict[str, Any]:
        """The ledger version this rule honours (for a manifest)."""
        if self._version is None:
            self._version = ledger_version(self.files)
        return self._version

    def why_not(self, row: Any) -> str | None:
        """None when the row may be used for training, else the reason it may not."""
        value = flag_of(row)
        if not flag_true(value):
            return describe_flag(value)
        if self.ids:
            derive = not _has_key(row, "doc_id")  # as the mixture's SQL: only without a doc_id
            for key in self.id_keys:
                v = flag_of(row, key)
                if v is None:
                    continue
                for doc in document_ids(str(v)) if derive else (str(v),):
                    if doc in self.ids:
                        named = f" (its document {doc})" if doc != str(v) else ""
                        return f"the consent ledger opted out {key}={v}{named}"
        if self.urls:
            for key in self.url_keys:
                v = flag_of(row, key)
                if v is not None and str(v) in self.urls:
                    return f"the consent ledger opted out {key}={v}"
        return None

    def allows(self, row: Any) -> bool:
        """True only when the row's flag is the boolean true and the ledger has not opted it out."""
        return self.why_not(row) is None

    def keep(self, rows: Iterable[Any]) -> tuple[list[Any], list[tuple[Any, str]]]:
        """(allowed rows, [(refused row, reason)]) in input order."""
        kept: list[Any] = []
        refused: list[tuple[Any, str]] = []
        for row in rows:
            why = self.why_not(row)
            if why is None:
                kept.append(row)
            else:
                refused.append((row, why))
        return kept, refused


NO_LEDGER = Consent()
