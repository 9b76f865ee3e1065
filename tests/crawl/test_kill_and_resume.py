"""A crawl killed with SIGKILL mid-way resumes with --resume: every page exactly once, WARC intact."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from .faultserver import FaultServer, Site

pytestmark = pytest.mark.slow  # make test-fast leaves it out

ROOT = Path(__file__).resolve().parents[2]
HOSTS = [f"127.0.0.{n}" for n in (71, 72, 73, 74)]
TREE = 60


def _done(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute("SELECT COUNT(*) FROM urls WHERE state='done'").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _start(seeds: Path, out: Path, resume: bool) -> subprocess.Popen:
    cfg = json.dumps(
        {"delay": 0.01, "allow_private_networks": True, "robots_retries": 0, "checkpoint_every": 7}
    )
    cmd = [sys.executable, "-m", "crawlers.crawl", str(seeds), str(out), "--config", cfg]
    return subprocess.Popen(
        cmd + (["--resume"] if resume else []),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _kill_when(proc: subprocess.Popen, db: Path, at_least: int) -> bool:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if _done(db) >= at_least:
            os.kill(proc.pid, signal.SIGKILL)  # no cleanup, no flush: the point of the test
            proc.wait(10)
            return True
        time.sleep(0.005)
    proc.wait(30)
    return False


@pytest.mark.timeout(150)
def test_sigkill_then_resume_fetches_every_page_exactly_once(tmp_path):
    with FaultServer([Site(ip) for ip in HOSTS], tree_size=TREE) as fs:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(fs.url(ip, "/tree/0") + "\n" for ip in HOSTS))
        out = tmp_path / "crawl"
        db = out / "frontier.sqlite"
        total = len(HOSTS) * TREE
        proc = _start(seeds, out, resume=False)
        try:
            assert _kill_when(proc, db, total // 4), "crawl finished before it could be killed"
            proc = _start(seeds, out, resume=True)
            killed_twice = _kill_when(proc, db, total * 2 // 3)
            proc = _start(seeds, out, resume=True)
            assert proc.wait(90) == 0, proc.stderr.read().decode()[-2000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        assert killed_twice
        pages = pq.read_table(out / "pages.parquet").to_pylist()
        urls = [p["url"] for p in pages]
        expected = {fs.url(ip, f"/tree/{n}") for ip in HOSTS for n in range(TREE)}
        expected |= {
            fs.url(ip, "/from-sitemap") for ip in HOSTS
        }  # listed in each robots.txt sitemap
        assert len(urls) == len(set(urls)) and set(urls) == expected
        assert all(p["status"] == 200 and p["error"] is None for p in pages)
        # WARC: every record readable, each page's response exactly once, offsets point at it.
        responses = Counter()
        for path in sorted((out / "warc").glob("*.warc.gz")):
            with open(path, "rb") as fh:
                for rec in ArchiveIterator(fh):
                    uri = rec.rec_headers.get_header("WARC-Target-URI")
                    # robots.txt and sitemap exchanges are archived too, as consent evidence.
                    if rec.rec_type == "response" and not uri.endswith(("/robots.txt", ".xml")):
                        responses[uri] += 1
        assert set(responses) == expected and set(responses.values()) == {1}
        for p in pages:
            with open(out / p["warc_file"], "rb") as fh:
                fh.seek(p["warc_offset"])
                rec = next(iter(ArchiveIterator(io.BytesIO(fh.read(p["warc_length"])))))
            assert rec.rec_headers.get_header("WARC-Target-URI") == p["url"]
        # Server side: only a page in flight at a kill can have been requested twice.
        hits = Counter((h.host, h.path) for h in fs.hits if h.path.startswith("/tree/"))
        assert sum(c - 1 for c in hits.values()) <= 2 * len(HOSTS)
