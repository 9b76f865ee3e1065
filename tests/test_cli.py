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


# Stages that pass the options they do not declare on to Beam (their `extra_args` field).
BEAM_STAGES = (("images", "build"), ("filter",), ("extract",), ("import", "warc", "crawl.warc.gz"))


@pytest.mark.parametrize("stage", BEAM_STAGES, ids=lambda s: " ".join(s[:2]))
def test_an_option_neither_the_stage_nor_beam_knows_is_refused(stage, tmp_path):
    """Beam drops options it does not know with a warning, so a mistyped flag used to run the
    job without it (`--allow-private-network` fetched nothing, `--max-image 3` everything)."""
    out = tmp_path / "out"
    if stage[0] == "import":  # its positional WARC file is checked first: give one
        (tmp_path / stage[2]).write_bytes(b"")
        stage = (*stage[:2], str(tmp_path / stage[2]))
    result = _run(*stage, "--out", str(out), "--max-image", "3")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and "unknown option --max-image" in lines[0], result.stderr
    assert not out.exists()
    result = _run(*stage, "--out", str(out), "--direct_num_workres=2")
    assert result.returncode == 2 and "did you mean --direct_num_workers?" in result.stderr


def test_a_mistyped_flag_is_named_with_the_stage_flag_meant(tmp_path):
    result = _run("images", "build", "--out", str(tmp_path / "o"), "--allow-private-network")
    assert result.returncode == 2
    assert "did you mean --allow-private-networks?" in result.stderr, result.stderr
    result = _run("images", "build", "--out", str(tmp_path / "o"), "stray")
    assert result.returncode == 2 and "unexpected argument 'stray'" in result.stderr


def test_beam_options_still_reach_beam(tmp_path):
    """Real Beam options pass the check (and reach the stage: here its missing input)."""
    from pipelines.beam.fs import unknown_option

    args = [
        "--runner",
        "PortableRunner",
        "--job_endpoint=localhost:8099",
        "--environment_type=LOOPBACK",
        "--direct_num_workers=2",
        "--dask_npartitions=4",
        "--temp_location",
        "gs://b/tmp",
    ]
    assert unknown_option(args) is None
    result = _run("filter", "--docs", str(tmp_path / "none"), "--direct_num_workers=2")
    assert result.returncode == 2 and "unknown option" not in result.stderr, result.stderr
