"""Peak memory of a piece of work in this process and the processes it starts.

`PeakMemory` resets this process's resident high-water mark (`VmHWM`, by writing 5 to
`/proc/self/clear_refs`) when it starts, and samples the resident memory of its child processes
(Chromium, Beam workers, sandboxed code) in a background thread; child processes that were
already running when it started (a server or a worker pool of earlier work) are not counted. At the end its peak is this
process's high-water mark since the start plus the largest sampled total of the children. Where
the kernel does not allow the reset, the high-water mark is sampled too and `exact` is False.
"""

from __future__ import annotations

import threading
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
        try:
            self._before = {c.pid for c in self._proc.children(recursive=True)}
        except psutil.Error:
            self._before = set()
        self._thread = threading.Thread(target=self._sample, name="peak-memory", daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            total = 0
            try:
                children = self._proc.children(recursive=True)
            except psutil.Error:
                children = []
            for child in children:
                if child.pid in self._before:
                    continue
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    pass
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
