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


def test_counts_its_own_peak_and_the_children_it_starts_not_older_ones():
    code = "import json; from tests.test_memory import scenario; print(json.dumps(scenario()))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    peak = json.loads(out.stdout.strip().splitlines()[-1])
    assert peak["self"] - peak["base_self"] >= 100  # the freed block still counts: a peak
    assert 90 <= peak["children"] < 150 + 90  # the new child; never the older one on top
    assert peak["mib"] == round(peak["self"] + peak["children"], 1)
