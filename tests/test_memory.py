"""PeakMemory: this process's high-water mark since the start plus the children it started.

The scenario runs in a fresh interpreter: a pytest worker that ran earlier tests may have
background threads that start processes of their own at any time (torch's compile workers, a
browser's renderers), and those are, rightly, counted as children started during the window.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

from common.memory import PeakMemory

ROOT = Path(__file__).resolve().parents[1]
HOLD = "import sys, time; b = bytearray({mib} << 20); b[::4096] = b'x' * len(b[::4096]); print('ok', flush=True); time.sleep({s})"


def _child(mib: int, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD.format(mib=mib, s=seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ok"  # its memory is resident now
    return proc


def scenario() -> dict:
    """An older child before and during, 120 MiB of our own freed again, a 100 MiB new child."""
    older = _child(150, 30)  # a server of earlier work, running before and during
    try:
        with PeakMemory(interval_s=0.05) as base:
            pass
        with PeakMemory(interval_s=0.05) as peak:
            block = bytearray(120 << 20)
            block[::4096] = b"y" * len(block[::4096])
            del block
            child = _child(100, 0.5)
            time.sleep(0.3)
            child.wait()
        return {
            "base_self": base.self_mib,
            "self": peak.self_mib,
            "children": peak.children_mib,
            "mib": peak.mib,
        }
    finally:
        older.kill()
        older.wait()


def scenario_fork() -> dict:
    """Holding 300 MiB, fork a child that only sleeps, then one that writes 100 MiB of its own."""
    import os

    held = bytearray(300 << 20)
    held[::4096] = b"h" * len(held[::4096])
    out = {}
    for name, mib in (("idle", 0), ("writes", 100)):
        with PeakMemory(interval_s=0.02) as peak:
            pid = os.fork()
            if pid == 0:  # the child: still this program, sharing the 300 MiB until written
                own = bytearray(mib << 20)
                own[::4096] = b"c" * len(own[::4096])
                time.sleep(0.4)
                os._exit(0)
            os.waitpid(pid, 0)
        out[name] = peak.children_mib
    return out


def _in_fresh_interpreter(name: str) -> dict:
    code = f"import json; from tests.test_memory import {name}; print(json.dumps({name}()))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_forked_child_counts_its_own_pages_not_its_parents():
    forked = _in_fresh_interpreter("scenario_fork")
    assert forked["idle"] < 50  # was ~300: its resident set held the parent's pages
    assert 90 <= forked["writes"] < 150


def test_counts_its_own_peak_and_the_children_it_starts_not_older_ones():
    peak = _in_fresh_interpreter("scenario")
    assert peak["self"] - peak["base_self"] >= 100  # the freed block still counts: a peak
    assert 90 <= peak["children"] < 150 + 90  # the new child; never the older one on top
    assert peak["mib"] == round(peak["self"] + peak["children"], 1)
