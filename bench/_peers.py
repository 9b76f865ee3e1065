"""What benchmarks compare against: throwaway venvs for the peer tools (never project dependencies),
and a module of this repository as it was at an older revision."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

VENVS = Path(__file__).resolve().parent / ".venvs"

# One datatrove venv serves bench/filter.py and bench/mix.py, so it carries what both need.
DATATROVE = (
    ["datatrove[processing]", "spacy", "tokenizers", "pyarrow", "orjson"],
    "import datatrove, spacy, tokenizers, pyarrow, orjson",
)
SCRAPY = (["scrapy"], "import scrapy")
# bench/images.py: the image downloader compared against (download + resize).
IMG2DATASET = (["img2dataset"], "import img2dataset")


def module_at(rev: str, path: str, name: str):
    """The module at `path` (relative to the repository root) as it was at git revision `rev`,
    imported as `name`."""
    import types

    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def peer_python(name: str, packages: list[str], probe: str) -> Path:
    """Python of bench/.venvs/<name>: created on first use, packages (re)installed if probe fails."""
    py = VENVS / name / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(py.parents[1])], check=True)
    if subprocess.run([str(py), "-c", probe], capture_output=True).returncode != 0:
        subprocess.run([str(py), "-m", "pip", "install", "-q", *packages], check=True)
    return py


class TreePeak:
    """Peak PSS (MiB) of a process and its descendants, sampled in a background thread."""

    def __init__(self, pid: int, interval_s: float = 0.2):
        import psutil

        self.proc = psutil.Process(pid)
        self.interval_s = interval_s
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            total = 0
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
            except psutil.Error:
                break
            for p in procs:
                try:
                    total += p.memory_full_info().pss
                except psutil.Error:
                    pass
            self.peak_mib = max(self.peak_mib, total / 2**20)
            self._stop.wait(self.interval_s)

    def stop(self) -> float:
        """Stop sampling; the peak in MiB."""
        self._stop.set()
        self._thread.join()
        return self.peak_mib
