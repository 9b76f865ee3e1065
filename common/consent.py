"""Consent: the one rule every path to a teacher, a tokenizer, a shard or a stored image asks.

A row may be used for training only when

1. its own flag says so: `training_allowed` is the boolean `true` (Python `True`, NumPy's
   `True`, Arrow's `true`). Anything else is no: `None`/NULL, a missing column, the string
   `"true"` or `"false"`, `1`, NaN. Data made by other tools must carry a real boolean; and
2. the consent ledger (append-only, `<lake>/consent/ledger/`) does not hold a later opt-out for
   it: its latest ledger row, by URL or by document id, is not `training_allowed = false`.

`Consent.load(lake_root)` reads the ledger once; `consent.allows(row)` and `consent.why_not(row)`
answer for one row (a mapping or an object); `consent.keep(rows)` splits a batch.
`flag_true(value)` is the flag rule alone. The mixture builder applies the same rule in SQL
(`training_allowed IS TRUE` and the ledger's latest rows), from the same ledger files.

The ledger itself (written by `crawlers.consent.recheck`, read by every consumer):

- Append-only: files are `ledger-<seq>.parquet` (seq = 1 + the highest present), created with an
  exclusive link so a concurrent recheck never overwrites one; nothing is ever rewritten.
- Latest row wins, per URL, in file order: an opt-out is `training_allowed = false`; a host that
  allows the token again gets a `true` row. The ledger can only take documents out: a row whose
  own flag is not true stays out whatever the ledger says.

A ledger version is the sha256 of its sorted file names with each file's sha256
(`ledger_version`); a mixture manifest records the version it honoured.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

FLAG = "training_allowed"


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
    another lake brings that lake's opt-outs with it."""
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


def latest_rows(files: Iterable[str | Path]) -> dict[str, dict[str, Any]]:
    """The latest ledger row per URL (files in append order; the last row for a URL wins)."""
    latest: dict[str, dict[str, Any]] = {}
    for f in files:
        for row in pq.read_table(f, schema=LEDGER_SCHEMA).to_pylist():
            latest[row["url"]] = row
    return latest


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
    """(URLs, document ids) whose latest ledger row says training_allowed = false."""
    urls: set[str] = set()
    ids: set[str] = set()
    for row in latest_rows(files).values():
        if not row["training_allowed"]:
            urls.add(row["url"])
            ids.update(row["doc_ids"] or ())
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

    `urls` and `ids` are the URLs and document ids whose latest ledger row is an opt-out;
    `files` the ledger files read (the snapshot a manifest can record)."""

    urls: frozenset[str] = frozenset()
    ids: frozenset[str] = frozenset()
    files: tuple[str, ...] = ()
    id_keys: tuple[str, ...] = ("doc_id", "id")
    url_keys: tuple[str, ...] = ("url", "doc_url", "page_url")
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
            for key in self.id_keys:
                v = flag_of(row, key)
                if v is not None and str(v) in self.ids:
                    return f"the consent ledger opted out {key}={v}"
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
