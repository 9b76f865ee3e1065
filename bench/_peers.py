"""Throwaway venvs for the peer tools benchmarks compare against (never project dependencies)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

VENVS = Path(__file__).resolve().parent / ".venvs"

# One datatrove venv serves bench/filter.py and bench/mix.py, so it carries what both need.
DATATROVE = (
    ["datatrove[processing]", "spacy", "tokenizers", "pyarrow"],
    "import datatrove, spacy, tokenizers, pyarrow",
)
SCRAPY = (["scrapy"], "import scrapy")
# bench/images.py: the image downloader compared against (download + resize).
IMG2DATASET = (["img2dataset"], "import img2dataset")


def peer_python(name: str, packages: list[str], probe: str) -> Path:
    """Python of bench/.venvs/<name>: created on first use, packages (re)installed if probe fails."""
    py = VENVS / name / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(py.parents[1])], check=True)
    if subprocess.run([str(py), "-c", probe], capture_output=True).returncode != 0:
        subprocess.run([str(py), "-m", "pip", "install", "-q", *packages], check=True)
    return py
