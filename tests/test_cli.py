"""The `refinery` command line: every command group is listed and answers --help quickly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REFINERY = str(Path(sys.executable).with_name("refinery"))
GROUPS = (
    "sampleweb",
    "crawl",
    "render",
    "extract",
    "filter",
    "quality",
    "tokenizer",
    "mix",
    "train",
    "demo",
    "ui",
)


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([REFINERY, *args], capture_output=True, text=True, timeout=120)


def test_help_lists_every_command_group():
    result = _run("--help")
    assert result.returncode == 0, result.stderr
    listed = {
        line.split()[1]
        for line in result.stdout.splitlines()
        if line.startswith("│ ") and len(line.split()) > 1
    }
    missing = [g for g in GROUPS if g not in listed]
    assert not missing, f"refinery --help does not list {missing}:\n{result.stdout}"


@pytest.mark.parametrize("group", GROUPS)
def test_each_group_answers_help(group):
    result = _run(group, "--help")
    assert result.returncode == 0, f"refinery {group} --help failed:\n{result.stderr}"
    assert "Usage" in result.stdout


def test_help_does_not_import_heavy_libraries():
    probe = (
        "import sys; from pipelines.cli import app; "
        "heavy = [m for m in ('torch', 'apache_beam', 'playwright', 'fasttext', 'dagster') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"`refinery --help` imports {out.stdout.strip()}"


def test_unknown_command_fails_with_usage():
    result = _run("no-such-stage")
    assert result.returncode != 0
    assert "No such command" in (result.stdout + result.stderr)
