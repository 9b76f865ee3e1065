"""Peak memory of a piece of work in this process and the processes it starts.

`PeakMemory` resets this process's resident high-water mark (`VmHWM`, by writing 5 to
`/proc/self/clear_refs`) when it starts, and samples the resident memory of its child processes
(Chromium, Beam workers, sandboxed code) in a background thread; child processes that were
already running when it started (a server or a worker pool of earlier work) are not counted. A
child that is still this program (a fork that has not yet exec'd, or a fork-mode worker) counts
its private memory only: its resident set holds the pages it shares with this process, which the
high-water mark already counts (a pytest worker holding ~1.8 GiB once showed a child of 1,887 MiB
in a 0.05 s sample). At the end its peak is this
process's high-water mark since the start plus the largest sampled total of the children. Where
the kernel does not allow the reset, the high-water mark is sampled too and `exact` is False.
"""

from __future__ import annotations

import threading
from collections.abc import Container
from pathlib import Path

import psutil

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def child_bytes(child: psutil.Process, own_cmdline: list[str]) -> int:
    """The memory a child process adds: its resident set, or, while it is still this program
    (the same command line: forked, not exec'd), its private pages (smaps_rollup), since its
    resident set then counts the pages it shares with its parent."""
    if child.cmdline() != own_cmdline:
        return child.memory_info().rss
    try:
        private = 0
        with open(f"/proc/{child.pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    private += int(line.split()[1]) * 1024
        return private
    except (OSError, ValueError, IndexError):
        return child.memory_full_info().uss


def children_bytes(proc: psutil.Process, own_cmdline: list[str], skip: Container[int] = ()) -> int:
    """What the child processes of `proc` (all generations) add now (child_bytes each), those in
    `skip` left out; a child that ends while it is read counts nothing."""
    try:
        children = proc.children(recursive=True)
    except psutil.Error:
        return 0
    total = 0
    for child in children:
        if child.pid in skip:
            continue
        try:
            total += child_bytes(child, own_cmdline)
        except psutil.Error:
            pass
    return total


def own_cmdline() -> list[str]:
    try:
        return psutil.Process().cmdline()
    except psutil.Error:
        return []


def _reset_high_water_mark() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


class PeakMemory:
    """`with PeakMemory() as peak: ...`, then `peak.mib` (process tree, MiB) and `peak.self_mib`."""

    def __init__(self, interval_s: float = 0.1) -> None:
        self.interval_s = interval_s
        self.exact = False
        self.self_mib = 0.0
        self.children_mib = 0.0
        self._sampled_self_kib = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def mib(self) -> float:
        return round(self.self_mib + self.children_mib, 1)

    def __enter__(self) -> PeakMemory:
        self.exact = _reset_high_water_mark()
        self._proc = psutil.Process()
        self._cmdline = own_cmdline()
        try:
            self._before = {c.pid for c in self._proc.children(recursive=True)}
        except psutil.Error:
            self._before = set()
        self._thread = threading.Thread(target=self._sample, name="peak-memory", daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            total = children_bytes(self._proc, self._cmdline, skip=self._before)
            self.children_mib = max(self.children_mib, total / 2**20)
            rss = _status_kib("VmRSS") or 0
            self._sampled_self_kib = max(self._sampled_self_kib, rss)
            self._stop.wait(self.interval_s)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        hwm = _status_kib("VmHWM") if self.exact else None
        self.self_mib = round(max(hwm or 0, self._sampled_self_kib) / 1024, 1)
        self.children_mib = round(self.children_mib, 1)
