"""Process bookkeeping from /proc, so every browser process we start can be killed by PID."""

from __future__ import annotations

import os
import signal
from pathlib import Path

_BROWSER_NAMES = ("chrom", "headless_shell")


def _stat(pid: int) -> tuple[int, str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name may contain spaces and parentheses; fields resume after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0]


def descendants(pid: int | None = None) -> set[int]:
    """Live (non-zombie) descendants of a process, default this one."""
    pid = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st and st[1] != "Z":
                children.setdefault(st[0], []).append(int(entry))
    out: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in out:
                out.add(child)
                stack.append(child)
    return out


def is_browser(pid: int) -> bool:
    """True if the process looks like Chromium (any of its helper processes included)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    name = (os.path.basename(cmd) + " " + comm).lower()
    return any(n in name for n in _BROWSER_NAMES)


def browser_descendants(pid: int | None = None) -> set[int]:
    """Live Chromium processes below a process (default: this one)."""
    return {p for p in descendants(pid) if is_browser(p)}


def alive(pid: int) -> bool:
    """True if the PID exists and is not a zombie."""
    st = _stat(pid)
    return st is not None and st[1] != "Z"


def kill_all(pids: set[int]) -> set[int]:
    """SIGKILL each PID still alive (and not a zombie); return those that were signalled."""
    killed = set()
    for pid in sorted(pids):
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
    return killed
