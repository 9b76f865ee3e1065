"""`images ocr` resumes (synth/text_rich.py): each image's reading is journaled as it completes, so
a run killed part way and run again reads only the images not journaled and writes what a clean
run writes, byte for byte; readings of another engine are never taken.

A stub engine stands in for Tesseract: its reading depends on the image, so rows out of order or
taken from the wrong image would show."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from synth.text_rich import OCR_JOURNAL, make_text_rich

from .test_text_rich_qa import _stub_pairs

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
N = 12
OUTPUTS = ("ocr.parquet", "pairs.parquet", "qa.parquet", "qa_rejects.parquet")
WORDS = ["ACME", "Bakery", "Cafe", "Depot", "Exit", "Ferry", "Garage", "Hotel", "Inn", "Jazz"]


class Killed(BaseException):
    """What an engine raises to end the run where it stands (as a kill would)."""


class SignEngine:
    """Reads each image as a sign named by its colour (or as no text); counts its readings.
    `kill_after`: raises Killed on the next reading once that many are journaled in `out`;
    `block_after`: hangs there instead (the process is then killed from outside)."""

    version = "stub-1"

    def __init__(self, out=None, kill_after=None, block_after=None):
        self.out, self.kill_after, self.block_after = out, kill_after, block_after
        self.reads: list[int] = []

    def read(self, image):
        shade = image.getpixel((0, 0))[0] // 10
        stop = self.kill_after if self.kill_after is not None else self.block_after
        if stop is not None and len(self.reads) >= stop:
            _wait_for_rows(self.out / OCR_JOURNAL, stop)
            if self.kill_after is not None:
                raise Killed
            time.sleep(600)
        self.reads.append(shade)
        text = "..." if shade % 4 == 0 else f"{WORDS[shade % len(WORDS)]} {shade} open"
        return SimpleNamespace(
            text=text,
            language="en",
            script="Latin",
            confidence=0.7 + shade / 97,  # a float that JSON must give back exactly
            text_share=0.05 + shade / 113,
            words=[SimpleNamespace(text=text, conf=0.61 + shade / 89, box=(1, 2, 30 + shade, 9))],
            rotation=0,
            skew=shade / 7,
            seconds=0.01 + shade / 1000,
        )


def _journal_rows(path: Path) -> int:
    if not path.exists():
        return 0
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT count(*) FROM rows").fetchone()[0]
    except sqlite3.OperationalError:  # created, its tables not yet
        return 0
    finally:
        con.close()


def _wait_for_rows(path: Path, k: int, limit_s: float = 20.0) -> int:
    deadline = time.monotonic() + limit_s
    while (n := _journal_rows(path)) < k and time.monotonic() < deadline:
        time.sleep(0.02)
    return n


def _pairs(root: Path, n: int = N) -> Path:
    return _stub_pairs(root, n, shade=lambda i: (10 * i + 5, 90, 200))


def _snapshot(out: Path) -> dict[str, bytes]:
    """Every output's bytes (manifests without their time of writing) and the copied images."""
    got = {}
    for name in OUTPUTS:
        got[name] = (out / name).read_bytes()
        manifest = json.loads((out / f"{name}.manifest.json").read_text())
        manifest.pop("written_at", None)
        got[f"{name}.manifest.json"] = json.dumps(manifest, sort_keys=True).encode()
    for f in sorted((out / "images").iterdir()):
        got[f"images/{f.name}"] = f.read_bytes()
    return got


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A clean run's outputs and the pairs it read."""
    root = tmp_path_factory.mktemp("clean")
    pairs = _pairs(root / "pairs")
    engine = SignEngine()
    s = make_text_rich(pairs, root / "out", engine=engine, workers=2)
    assert len(engine.reads) == N and s["resumed_images"] == 0
    assert 0 < s["text_rich"] < N  # both kinds of row
    return pairs, _snapshot(root / "out")


def test_a_clean_run_leaves_no_journal(clean, tmp_path):
    pairs, _ = clean
    make_text_rich(pairs, tmp_path / "out", engine=SignEngine(), workers=1)
    assert not list((tmp_path / "out").glob(f"{OCR_JOURNAL}*"))


def test_a_run_interrupted_after_k_images_resumes_with_the_rest(clean, tmp_path):
    """Every output was written only at the end and nothing was journaled: a run killed after
    K images left nothing, and the rerun read all N again."""
    pairs, want = clean
    out, k = tmp_path / "out", 5
    with pytest.raises(Killed):
        make_text_rich(pairs, out, engine=SignEngine(out, kill_after=k), workers=1)
    assert _journal_rows(out / OCR_JOURNAL) == k
    again = SignEngine()
    s = make_text_rich(pairs, out, engine=again, workers=2)
    assert len(again.reads) == N - k and s["resumed_images"] == k
    assert _snapshot(out) == want  # order by input, not by completion; values as read
    assert not list(out.glob(f"{OCR_JOURNAL}*"))


def test_a_killed_process_resumes_without_loss_or_repeat(clean, tmp_path):
    """kill -9 of a run part way: the rerun reads only the images it had not journaled."""
    pairs, want = clean
    out, k = tmp_path / "out", 4
    script = (
        "import sys; from pathlib import Path\n"
        "from synth.text_rich import make_text_rich\n"
        "from tests.synth.test_text_rich_resume import SignEngine\n"
        "out = Path(sys.argv[2])\n"
        "make_text_rich(Path(sys.argv[1]), out, engine=SignEngine(out, block_after=int(sys.argv[3])),"
        " workers=2)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(pairs), str(out), str(k)], cwd=ROOT, env=env
    )
    try:
        _wait_for_rows(out / OCR_JOURNAL, k, limit_s=60)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    journaled = _journal_rows(out / OCR_JOURNAL)  # as the kill left it
    assert journaled >= k and not (out / "ocr.parquet").exists()
    again = SignEngine()
    s = make_text_rich(pairs, out, engine=again, workers=2)
    assert len(again.reads) == N - journaled and s["resumed_images"] == journaled
    assert _snapshot(out) == want


def test_another_engines_readings_are_not_taken(clean, tmp_path):
    pairs, _ = clean
    out = tmp_path / "out"
    with pytest.raises(Killed):
        make_text_rich(pairs, out, engine=SignEngine(out, kill_after=3), workers=1)

    class Upgraded(SignEngine):
        version = "stub-2"

    again = Upgraded()
    s = make_text_rich(pairs, out, engine=again, workers=1)
    assert len(again.reads) == N and s["resumed_images"] == 0


def test_an_unreadable_journal_is_read_afresh(clean, tmp_path):
    pairs, want = clean
    out = tmp_path / "out"
    out.mkdir()
    (out / OCR_JOURNAL).write_bytes(b"not a database" * 100)
    again = SignEngine()
    make_text_rich(pairs, out, engine=again, workers=2)
    assert len(again.reads) == N and _snapshot(out) == want
