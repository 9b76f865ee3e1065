"""Persistent crawl frontier in SQLite: every URL once (canonical), its signals, its outcome.

States: queued (to fetch), done (fetched; may be an error or redirect row), denied (robots said
no, not fetched), skipped (never fetched: trap, depth, budget, routed to another shard; with its
reason). `tier` orders work before priority: 0 for seeds (and their redirects), 1 otherwise.
A page's outcome, its new outlinks and its WARC file's committed end are written in one
transaction, which is what makes `--resume` after `kill -9` exact.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

URL_COLUMNS = {
    "url": "TEXT PRIMARY KEY",
    "host": "TEXT NOT NULL",
    "depth": "INTEGER NOT NULL",
    "state": "TEXT NOT NULL",
    "source": "TEXT",
    "parent": "TEXT",
    "anchor": "TEXT",
    "priority": "REAL",
    "lang_signal": "REAL",
    "topic": "TEXT",
    "topic_signal": "REAL",
    "path_signal": "REAL",
    "priority_reasons": "TEXT",
    "attempts": "INTEGER DEFAULT 0",
    "status": "INTEGER",
    "fetched_at": "TEXT",
    "final_url": "TEXT",
    "redirect_to": "TEXT",
    "content_type": "TEXT",
    "content_sha256": "TEXT",
    "content_length": "INTEGER",
    "warc_file": "TEXT",
    "warc_offset": "INTEGER",
    "warc_length": "INTEGER",
    "crawl_allowed": "INTEGER",
    "training_allowed": "INTEGER",
    "robots_crawl": "TEXT",
    "robots_training": "TEXT",
    "noindex": "INTEGER",
    "nofollow": "INTEGER",
    "noai": "INTEGER",
    "noimageai": "INTEGER",
    "lang": "TEXT",
    "lang_score": "REAL",
    "page_topic": "TEXT",
    "title": "TEXT",
    "outlinks": "INTEGER",
    "error": "TEXT",
    "skip_reason": "TEXT",
    "elapsed_s": "REAL",
    "redirect_hops": "INTEGER DEFAULT 0",
    "seq": "INTEGER",
    "tier": "INTEGER DEFAULT 1",
}
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS urls ({", ".join(f"{k} {v}" for k, v in URL_COLUMNS.items())});
CREATE INDEX IF NOT EXISTS urls_state ON urls(state);
CREATE TABLE IF NOT EXISTS warc_files (name TEXT PRIMARY KEY, committed_end INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS robots (origin TEXT PRIMARY KEY, status INTEGER, body BLOB,
    fetched_at REAL, error TEXT, truncated INTEGER DEFAULT 0);
CREATE TABLE IF NOT EXISTS sitemaps (url TEXT PRIMARY KEY, host TEXT, depth INTEGER,
    state TEXT, urls INTEGER, error TEXT);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


class Frontier:
    """The crawl's SQLite database (OUT/frontier.sqlite)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        # WAL + NORMAL: a committed transaction survives the process being killed.
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        have = {r[1] for r in self.db.execute("PRAGMA table_info(urls)")}
        for col, decl in URL_COLUMNS.items():
            if col not in have:  # a frontier written by an older version: add the new columns
                self.db.execute(f"ALTER TABLE urls ADD COLUMN {col} {decl}")
        if "truncated" not in {r[1] for r in self.db.execute("PRAGMA table_info(robots)")}:
            self.db.execute("ALTER TABLE robots ADD COLUMN truncated INTEGER DEFAULT 0")
        self._seq = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM urls").fetchone()[0]
        self._depth = 0

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    def __enter__(self) -> Frontier:
        # Re-entrant: a nested `with frontier:` joins the transaction already open.
        if self._depth == 0:
            self.db.execute("BEGIN IMMEDIATE")
        self._depth += 1
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")

    # --- reads -------------------------------------------------------------------------
    def count(self, state: str | None = None) -> int:
        """Number of URLs (in a state)."""
        if state is None:
            return self.db.execute("SELECT COUNT(*) FROM urls").fetchone()[0]
        return self.db.execute("SELECT COUNT(*) FROM urls WHERE state=?", (state,)).fetchone()[0]

    def rows(self, states: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """URL rows (optionally only some states), in discovery order."""
        if states is None:
            cur = self.db.execute("SELECT * FROM urls ORDER BY seq")
        else:
            states = list(states)
            marks = ",".join("?" * len(states))
            cur = self.db.execute(
                f"SELECT * FROM urls WHERE state IN ({marks}) ORDER BY seq", states
            )
        for row in cur:
            yield dict(row)

    def rows_by_url(self, urls: list[str]) -> list[dict[str, Any]]:
        """The rows of some URLs (in discovery order); unknown URLs are left out."""
        out: list[dict[str, Any]] = []
        for i in range(0, len(urls), 500):
            chunk = urls[i : i + 500]
            marks = ",".join("?" * len(chunk))
            out += [
                dict(r)
                for r in self.db.execute(f"SELECT * FROM urls WHERE url IN ({marks})", chunk)
            ]
        return sorted(out, key=lambda r: r["seq"] or 0)

    def skipped_since(self, seq: int, prefix: str) -> list[dict[str, Any]]:
        """Skipped rows added after `seq` whose skip_reason starts with `prefix`."""
        cur = self.db.execute(
            "SELECT * FROM urls WHERE state='skipped' AND seq>? AND skip_reason LIKE ? ORDER BY seq",
            (seq, prefix + "%"),
        )
        return [dict(r) for r in cur]

    def warc_ends(self) -> dict[str, int]:
        """Committed end offset of each WARC file."""
        return {r[0]: r[1] for r in self.db.execute("SELECT name, committed_end FROM warc_files")}

    def robots_records(self) -> list[sqlite3.Row]:
        """Stored robots.txt fetches."""
        return self.db.execute("SELECT * FROM robots").fetchall()

    def sitemaps(self, state: str | None = None) -> list[dict[str, Any]]:
        """Known sitemaps."""
        q = "SELECT * FROM sitemaps" + (" WHERE state=?" if state else "")
        return [dict(r) for r in self.db.execute(q, (state,) if state else ())]

    def get_meta(self, key: str) -> Any:
        """A JSON value stored under key, or None."""
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    # --- writes (call inside `with frontier:` to group them in one transaction) ----------
    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON value."""
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def add(self, row: dict[str, Any]) -> bool:
        """Insert a new URL row; False if the URL was already known."""
        self._seq += 1
        row = {**row, "seq": self._seq}
        cols = ",".join(row)
        cur = self.db.execute(
            f"INSERT OR IGNORE INTO urls ({cols}) VALUES ({','.join('?' * len(row))})",
            list(row.values()),
        )
        return cur.rowcount == 1

    def update(self, url: str, fields: dict[str, Any]) -> None:
        """Set fields of a known URL."""
        sets = ",".join(f"{k}=?" for k in fields)
        cur = self.db.execute(f"UPDATE urls SET {sets} WHERE url=?", [*fields.values(), url])
        if cur.rowcount != 1:
            raise KeyError(f"{url} is not in the frontier")

    def commit_warc(self, name: str, end: int) -> None:
        """Record a WARC file's new committed end."""
        self.db.execute("INSERT OR REPLACE INTO warc_files VALUES (?, ?)", (name, end))

    def save_robots(
        self,
        origin: str,
        status: int | None,
        body: bytes,
        error: str | None,
        *,
        truncated: bool = False,
    ) -> None:
        """Store a robots.txt fetch for --resume (`truncated`: body is a cut file's prefix)."""
        self.db.execute(
            "INSERT OR REPLACE INTO robots (origin, status, body, fetched_at, error, truncated)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (origin, status, body, time.time(), error, int(truncated)),
        )

    def add_sitemap(self, url: str, host: str, depth: int) -> bool:
        """Queue a sitemap; False if known."""
        cur = self.db.execute(
            "INSERT OR IGNORE INTO sitemaps VALUES (?, ?, ?, 'queued', NULL, NULL)",
            (url, host, depth),
        )
        return cur.rowcount == 1

    def finish_sitemap(self, url: str, urls: int, error: str | None) -> None:
        """Mark a sitemap processed."""
        self.db.execute(
            "UPDATE sitemaps SET state='done', urls=?, error=? WHERE url=?", (urls, error, url)
        )
