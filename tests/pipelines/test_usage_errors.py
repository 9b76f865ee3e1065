"""A command line the parser refuses (a mistyped flag, a bad value, an option without its value,
a missing argument) is one line on stderr, as every other user error: `error: ...` naming the
flag (and the closest one), the fix and the log file with the traceback; exit status 2. Help
stays as it was."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def cli(tmp_path, monkeypatch):
    """Invoke `refinery ARGS...` in process: the result, its stderr lines."""
    from pipelines.cli import app

    monkeypatch.setenv("REFINERY_HOME", str(tmp_path / "lake"))
    monkeypatch.setenv("REFINERY_LOG_DIR", str(tmp_path / "logs"))

    def invoke(*args: str):
        result = CliRunner().invoke(app, [str(a) for a in args])
        return result, result.stderr.splitlines()

    return invoke


def trace_of(line: str) -> Path:
    found = re.search(r"\(trace: (.+)\)$", line)
    assert found, line
    return Path(found.group(1))


@pytest.mark.parametrize(
    "args, start",
    [
        (
            ["crawl", "--seeds", "s.txt", "--max-page", "3"],
            "error: unknown option --max-page: `refinery crawl` does not take it "
            "(did you mean --max-pages? see --help)",
        ),
        (["crawl", "--max-pages", "abc"], "error: --max-pages: Input should be a valid integer"),
        (["train", "pretrain", "--steps", "0"], "error: --steps: Input should be greater than"),
        (["mix", "build"], "error: Missing argument 'spec'. (see `refinery mix build --help`)"),
        (["clip", "train", "--pairs"], "error: Option '--pairs' requires an argument."),
        (["clip", "train", "--warmup", "-1"], "error: --warmup: Input should be greater than"),
        (["demo", "--lake"], "error: Option '--lake' requires an argument."),
        (["ui", "--prot", "1"], "error: unknown option --prot: `refinery ui` does not take it"),
        (["crwal"], "error: No such command 'crwal'."),
    ],
)
def test_a_usage_error_is_one_line_naming_the_flag_and_the_log(cli, tmp_path, args, start):
    result, err = cli(*args)
    assert result.exit_code == 2, result.output
    assert len(err) == 1 and err[0].startswith(start), result.output
    assert "Usage:" not in result.output and "╭" not in result.output
    log = trace_of(err[0])
    assert log.parent == tmp_path / "logs" and log.is_file()


def test_a_beam_stage_keeps_its_own_message(cli):
    result, err = cli("filter", "--modles", "m")
    assert result.exit_code == 2
    assert len(err) == 1 and err[0].startswith("error: unknown option --modles: neither"), err
    assert "did you mean --models?" in err[0]


def test_help_is_untouched(cli):
    for args in (["--help"], ["crawl", "--help"], ["mix", "build", "--help"]):
        result, err = cli(*args)
        assert result.exit_code == 0 and "Usage:" in result.output and not err, args
    result, _ = cli("train")  # a group without its command shows its help, as before
    assert "pretrain" in result.output and "error:" not in result.output


def test_the_console_script_prints_the_one_line(tmp_path):
    env = dict(os.environ, REFINERY_LOG_DIR=str(tmp_path / "logs"))
    done = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "crawl", "--max-page", "3"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert lines[-1].startswith("error: unknown option --max-page:"), done.stderr
    assert "did you mean --max-pages?" in lines[-1] and trace_of(lines[-1]).is_file()
    assert "Usage:" not in done.stderr
