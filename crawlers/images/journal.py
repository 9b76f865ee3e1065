"""The image fetch's resume journal: one SQLite file, `<out>/fetch_journal.sqlite`.

Tables: `meta` (the input's fingerprint), `urls` (one outcome per image URL, so a URL shared by
many refs is fetched once) and `rows` (one finished output row per ref id). A row is committed
only after its image file is in place (written to a temporary name, then renamed), so after a
`kill -9` every committed row's image exists; uncommitted rows are simply done again. Ids are
primary keys, so nothing is ever recorded twice.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

JOURNAL = "fetch_journal.sqlite"


class Journal:
    """Rows and per-URL outcomes of one fetch, committed in batches."""

    def __init__(self, path: Path):
        self.path = path
        self.con = sqlite3.connect(path, isolation_level=None)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("PRAGMA synchronous=NORMAL")
        self.con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        self.con.execute("CREATE TABLE IF NOT EXISTS urls (src TEXT PRIMARY KEY, outcome TEXT)")
        self.con.execute("CREATE TABLE IF NOT EXISTS rows (id TEXT PRIMARY KEY, row TEXT)")
        self._rows: list[tuple[str, str]] = []
        self._urls: list[tuple[str, str]] = []

    def get_meta(self, key: str) -> str | None:
        """A stored meta value, or None."""
        got = self.con.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return got[0] if got else None

    def set_meta(self, key: str, value: str) -> None:
        """Store a meta value now."""
        self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def rows(self) -> dict[str, dict]:
        """Every committed row by id."""
        return {i: json.loads(r) for i, r in self.con.execute("SELECT id, row FROM rows")}

    def outcomes(self) -> dict[str, dict]:
        """Every committed URL outcome by src."""
        return {s: json.loads(o) for s, o in self.con.execute("SELECT src, outcome FROM urls")}

    def add(self, row: dict, src: str | None = None, outcome: dict | None = None) -> None:
        """Queue a finished row (and its URL's outcome) for the next commit."""
        self._rows.append((row["id"], json.dumps(row)))
        if src is not None and outcome is not None:
            self._urls.append((src, json.dumps(outcome)))

    @property
    def pending(self) -> int:
        """Rows queued since the last commit."""
        return len(self._rows)

    def commit(self) -> None:
        """Write the queued rows and outcomes in one transaction."""
        if not self._rows and not self._urls:
            return
        self.con.execute("BEGIN")
        self.con.executemany("INSERT OR REPLACE INTO urls VALUES (?, ?)", self._urls)
        self.con.executemany("INSERT OR REPLACE INTO rows VALUES (?, ?)", self._rows)
        self.con.execute("COMMIT")
        self._rows, self._urls = [], []

    def close(self) -> None:
        """Commit what is queued and close."""
        try:
            self.commit()
        finally:
            self.con.close()


def open_journal(out_dir: Path, fingerprint: str, resume: bool) -> Journal:
    """Open (resume) or create the journal; errors say what to pass instead."""
    path = out_dir / JOURNAL
    if path.exists() and not resume:
        raise FileExistsError(
            f"{out_dir} already holds an image fetch ({path.name}); pass resume=True "
            "(--resume) to continue it or pick a new output directory"
        )
    if resume and not path.exists():
        raise FileNotFoundError(
            f"resume: {path} does not exist; start the image fetch without resume"
        )
    journal = Journal(path)
    stored = journal.get_meta("fingerprint")
    if stored is None:
        journal.set_meta("fingerprint", fingerprint)
    elif stored != fingerprint:
        journal.close()
        raise ValueError(
            f"resume: {path} was written for other image refs (fingerprint {stored[:12]} != "
            f"{fingerprint[:12]}); resume with the same refs or pick a new output directory"
        )
    return journal
