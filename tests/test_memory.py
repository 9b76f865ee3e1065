"""PeakMemory: this process's high-water mark since the start plus the children it started."""

import subprocess
import sys
import time

from common.memory import PeakMemory

HOLD = "import sys, time; b = bytearray({mib} << 20); b[::4096] = b'x' * len(b[::4096]); print('ok', flush=True); time.sleep({s})"


def _child(mib: int, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD.format(mib=mib, s=seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ok"  # its memory is resident now
    return proc


def test_counts_its_own_peak_and_the_children_it_starts_not_older_ones():
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
        assert peak.self_mib - base.self_mib >= 100  # the freed block still counts: a peak
        assert 90 <= peak.children_mib < 150 + 90  # the new child; never the older one on top
        assert peak.mib == round(peak.self_mib + peak.children_mib, 1)
    finally:
        older.kill()
        older.wait()
