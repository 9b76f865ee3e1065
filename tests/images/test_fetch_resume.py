"""An image fetch killed with SIGKILL mid-way resumes: every ref exactly once, images intact,
committed work not fetched again."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawlers.images import FETCHED, JOURNAL

from .conftest import FAST, Resource, png, ref

ROOT = Path(__file__).resolve().parents[2]
IPS = ["127.0.0.161", "127.0.0.162"]
N = 240
CONCURRENCY, COMMIT_EVERY = 4, 5


def _committed(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute("SELECT COUNT(*) FROM rows").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _start(refs_file: Path, out: Path, resume: bool) -> subprocess.Popen:
    cfg = {**FAST, "concurrency": CONCURRENCY, "commit_every": COMMIT_EVERY}
    cmd = [sys.executable, "-m", "crawlers.images", str(refs_file), str(out)]
    cmd += ["--config", json.dumps(cfg)] + (["--resume"] if resume else [])
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.slow  # over 10 s on a quiet 2-core machine
def test_kill_9_and_resume(image_server, tmp_path):
    # Each image answers after 20 ms, so the run lasts a few seconds and is killed mid-way.
    routes = {
        f"/p/{i}.png": Resource(png(40, 40, (i, 255 - i, 7)), delay_s=0.02) for i in range(200)
    }
    routes["/p/small.png"] = Resource(png(4, 4))
    server = image_server(routes, ips=IPS)
    refs = []
    for i in range(N):
        if i % 40 == 7:  # the same URL again: its outcome is shared, fetched once
            refs.append(ref(f"r{i:03d}", server.url(IPS[0], "/p/3.png")))
        elif i % 50 == 11:
            refs.append(ref(f"r{i:03d}", server.url(IPS[1], "/p/9.png"), training_allowed=False))
        elif i % 60 == 13:
            refs.append(ref(f"r{i:03d}", server.url(IPS[0], "/p/small.png")))
        else:
            refs.append(ref(f"r{i:03d}", server.url(IPS[i % 2], f"/p/{i % 200}.png")))
    refs_file = tmp_path / "refs.parquet"
    pq.write_table(pa.Table.from_pylist(refs), refs_file)
    out = tmp_path / "out"
    db = out / JOURNAL

    proc = _start(refs_file, out, resume=False)
    deadline, killed_at = time.monotonic() + 60, None
    while time.monotonic() < deadline and proc.poll() is None:
        if _committed(db) >= N // 3:
            os.kill(proc.pid, signal.SIGKILL)  # no cleanup, no flush: the point of the test
            proc.wait(10)
            killed_at = _committed(db)
            break
        time.sleep(0.005)
    assert killed_at is not None, f"the run ended before it could be killed: {proc.communicate()}"
    assert killed_at < N and not (out / FETCHED).exists()
    before = Counter(server.requests)

    proc = _start(refs_file, out, resume=True)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr.decode()[-2000:]
    summary = json.loads(stdout)
    assert summary["resumed_rows"] == killed_at

    rows = pq.read_table(out / FETCHED).to_pylist()
    assert [r["id"] for r in rows] == [r["id"] for r in refs]  # no loss, no duplicate, in order
    reasons = Counter(r["drop_reason"] for r in rows)
    n_opted = sum(1 for r in refs if not r["training_allowed"])
    n_small = sum(1 for r in refs if r["src"].endswith("/small.png"))
    assert reasons == {
        None: N - n_opted - n_small,
        "training_opt_out": n_opted,
        "too_small": n_small,
    }
    for r in rows:
        if r["image_path"]:
            data = (out / r["image_path"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == r["image_sha256"]
    assert not list((out / "images").glob("*/.*.tmp"))

    # Work committed before the kill is not fetched again; at most what was in flight or
    # queued for the next commit is (each image at most twice in all).
    image_hits = Counter({p: n for (_, p), n in server.requests.items() if p != "/robots.txt"})
    refetched = sum(n - 1 for n in image_hits.values() if n > 1)
    assert max(image_hits.values()) <= 2
    assert refetched <= CONCURRENCY + COMMIT_EVERY, refetched
    assert sum(image_hits.values()) > sum(n for (_, p), n in before.items() if p != "/robots.txt")
    assert server.hits("/p/9.png") <= 2  # fetched for the allowed refs only


def test_an_image_whose_face_search_raises_is_its_rows_reject_and_tried_again_on_resume(
    tmp_path, image_server, monkeypatch, caplog
):
    # a fault after the decode (here the face search raising on one image's size) ends neither
    # the run nor any other row; that image is not stored (its faces were not searched), its row
    # says why, the trace is logged, and a resumed run tries it again
    from crawlers.images import fetch_images
    from crawlers.images.faces import FaceDetector

    bodies = {f"/{w}.png": png(w, 48) for w in (48, 61, 64)}
    server = image_server({p: Resource(b) for p, b in bodies.items()}, ips=("127.0.0.163",))
    refs = [ref(p[1:-4], server.url("127.0.0.163", p)) for p in bodies]
    search = FaceDetector.detect

    def faulty(self, image, size=None):
        if (size or image.size)[0] == 61:
            raise ValueError("a fault in the face search")
        return search(self, image, size)

    monkeypatch.setattr(FaceDetector, "detect", faulty)
    out = tmp_path / "fetch"
    summary = fetch_images(refs, out, FAST)
    rows = {r["id"]: r for r in pq.read_table(out / FETCHED).to_pylist()}
    assert summary["rows"] == 3 and summary["stored"] == 2
    bad = rows["61"]
    assert bad["drop_reason"] == "process_error" and bad["image_path"] is None
    assert bad["error"] == "ValueError: a fault in the face search"
    assert bad["image_sha256"] == hashlib.sha256(bodies["/61.png"]).hexdigest()
    assert bad["face_count"] is None
    assert not any("61" in p.name for p in (out / "images").rglob("*"))
    assert all(rows[i]["image_path"] and rows[i]["drop_reason"] is None for i in ("48", "64"))
    assert "a fault in the face search" in caplog.text
    monkeypatch.setattr(FaceDetector, "detect", search)
    fetch_images(refs, out, FAST, resume=True)
    rows = {r["id"]: r for r in pq.read_table(out / FETCHED).to_pylist()}
    assert rows["61"]["image_path"] and rows["61"]["drop_reason"] is None
    assert rows["61"]["face_count"] == 0
