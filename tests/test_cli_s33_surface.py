"""User errors of the command line are one line naming the file or flag and the fix, exit 2,
no traceback: a path that is not UTF-8, an output directory that cannot be written, a file
where a directory goes (and the reverse), a value out of a flag's range. Every flag has help."""

from __future__ import annotations

import errno
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.stage import error_line, field_role, is_user_error, trace_log

REFINERY = str(Path(sys.executable).with_name("refinery"))


@pytest.fixture()
def cli(tmp_path, monkeypatch):
    """Invoke `refinery ARGS...` in process with the lake at tmp_path/lake: (exit code, output)."""
    from pipelines.cli import app

    monkeypatch.setenv("REFINERY_HOME", str(tmp_path / "lake"))
    monkeypatch.setenv("REFINERY_LOG_DIR", str(tmp_path / "logs"))

    def invoke(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, [str(a) for a in args])
        return result.exit_code, result.output

    return invoke


def one_error_line(code: int, output: str) -> str:
    errors = [ln for ln in output.splitlines() if ln.startswith("error: ")]
    assert code == 2, output
    assert len(errors) == 1 and "Traceback" not in output, output
    return errors[0]


def test_a_path_that_is_not_utf8_is_named_by_its_flag(tmp_path):
    """Was: two tracebacks (the log file could not be written either), exit 1."""
    env = {**os.environ, "REFINERY_HOME": str(tmp_path / "lake")}
    env["REFINERY_LOG_DIR"] = str(tmp_path / "logs")
    docs = os.fsencode(tmp_path) + b"/\xff\xfe"
    result = subprocess.run(
        [REFINERY, "filter", "--docs", docs], capture_output=True, env=env, timeout=120
    )
    stderr = result.stderr.decode("utf-8")
    assert result.returncode == 2, stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith(f"error: --docs {tmp_path}/\\xff\\xfe: not a UTF-8 path; rename it")


def test_the_trace_log_takes_a_message_that_is_not_utf8(tmp_path, monkeypatch):
    monkeypatch.setenv("REFINERY_LOG_DIR", os.fsdecode(os.fsencode(tmp_path) + b"/logs\xff"))
    exc = FileNotFoundError(errno.ENOENT, "No such file", os.fsdecode(b"/x/\xff"))
    log = trace_log(exc, "filter")
    assert log is not None and "\\udcff" in log.read_text(encoding="utf-8")
    assert error_line(exc) == "/x/\\xff: no such file; check the path"


def test_a_lake_root_that_is_not_utf8_is_refused_first(cli, tmp_path, monkeypatch):
    """Was: the stage ran, then stopped at its first manifest with a codec message."""
    home = os.fsdecode(os.fsencode(tmp_path) + b"/lake\xff")
    monkeypatch.setenv("REFINERY_HOME", home)
    line = one_error_line(*cli("sampleweb", "write"))
    assert line.startswith(f"error: REFINERY_HOME={tmp_path}/lake\\xff: not a UTF-8 path; rename")
    assert os.listdir(tmp_path) == ["logs"]


@pytest.mark.parametrize(
    "args",
    [
        ("crawl", "--seeds", "{seeds}", "--out", "{ro}/crawl"),
        ("filter", "--docs", "{tmp}/docs", "--out", "{ro}/filter"),
        ("sampleweb", "write", "--out", "{ro}/sw"),
        ("demo", "--lake", "{ro}/lake"),
    ],
    ids=lambda a: a[0],
)
def test_an_output_directory_that_cannot_be_written_is_named_by_its_flag(
    cli, tmp_path, monkeypatch, args
):
    """Was: `OSError: [Errno 30] Read-only file system` reported as a bug, exit 1."""
    ro = tmp_path / "ro"
    ro.mkdir()
    (tmp_path / "seeds.txt").write_text("http://127.0.0.1:9/\n")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != ro and real_access(p, mode))
    args = [a.format(ro=ro, tmp=tmp_path, seeds=tmp_path / "seeds.txt") for a in args]
    line = one_error_line(*cli(*args))
    flag = "--lake" if args[0] == "demo" else "--out"
    assert line.startswith(f"error: {flag} {args[-1]}: {ro} is not writable ("), line
    assert "choose a writable directory" in line
    assert os.listdir(ro) == []


@pytest.mark.parametrize(
    "code, words",
    [
        (errno.EROFS, "read-only file system; choose a writable directory"),
        (errno.EACCES, "permission denied; choose a writable directory"),
        (errno.ENOSPC, "no space left on device; free some space"),
        (errno.EEXIST, "file exists; a file is in the way: give a directory"),
        (errno.EISDIR, "is a directory; it is a directory: give a file"),
    ],
)
def test_an_os_error_the_user_can_fix_names_the_path_and_the_fix(
    tmp_path, monkeypatch, code, words
):
    monkeypatch.setenv("REFINERY_HOME", str(tmp_path))
    exc = OSError(code, os.strerror(code), str(tmp_path / "crawl"))
    assert is_user_error(exc)
    line = error_line(exc)
    assert line.startswith(f"{tmp_path / 'crawl'} (in REFINERY_HOME={tmp_path}): {words}"), line


@pytest.mark.parametrize(
    "args",
    [
        ("crawl", "--seeds", "{tmp}/seeds.txt", "--out", "{tmp}/afile"),
        ("extract", "--crawl", "{tmp}/crawl", "--out", "{tmp}/afile"),
        ("filter", "--docs", "{tmp}/docs", "--out", "{tmp}/afile"),
    ],
    ids=lambda a: a[0],
)
def test_a_file_given_for_an_output_directory_is_named_by_its_flag(cli, tmp_path, args):
    """Was: `error: [Errno 17] File exists: ...`."""
    (tmp_path / "afile").write_text("x")
    (tmp_path / "seeds.txt").write_text("http://127.0.0.1:9/\n")
    line = one_error_line(*cli(*[a.format(tmp=tmp_path) for a in args]))
    assert line.startswith(f"error: --out {tmp_path}/afile: is a file; give a directory"), line


def test_a_directory_given_for_a_config_file_is_named_by_its_flag(cli, tmp_path):
    """Was: `error: [Errno 21] Is a directory: ...`."""
    (tmp_path / "adir").mkdir()
    args = ("filter", "--docs", tmp_path / "docs", "--config", tmp_path / "adir")
    line = one_error_line(*cli(*args))
    assert line.startswith(f"error: --config {tmp_path}/adir: is a directory; give a file"), line


def test_a_file_output_is_checked_by_its_directory(cli, tmp_path):
    """`tokenizer train --out` names a file: an existing one is not refused as a non-directory,
    a file where its directory goes is."""
    (tmp_path / "afile").write_text("x")
    line = one_error_line(*cli("tokenizer", "train", "--out", tmp_path / "afile" / "tok.json"))
    assert line.startswith(f"error: --out {tmp_path}/afile: is a file; give a directory"), line


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ("extract", "--crawl", "{tmp}/crawl", "--page-timeout", "-1"),
            "error: --page-timeout: Input should be greater than 0",
        ),
        (
            ("images", "build", "--docs", "{tmp}/docs", "--top-fraction", "-1"),
            "error: --top-fraction: Input should be greater than 0",
        ),
        (
            ("images", "build", "--docs", "{tmp}/docs", "--top-fraction", "2"),
            "error: --top-fraction",
        ),
        (
            ("images", "build", "--docs", "{tmp}/docs", "--top-fraction", "nan"),
            "error: --top-fraction: Input should be",
        ),
        (
            ("images", "build", "--docs", "{tmp}/docs", "--min-score", "nan"),
            "error: --min-score: Input should be a finite number",
        ),
        (
            ("crawl", "--seeds", "{tmp}/s.txt", "--per-host-connections", "9" * 23),
            "error: --per-host-connections",
        ),
        (("crawl", "--seeds", "{tmp}/s.txt", "--concurrency", "9" * 23), "error: --concurrency"),
    ],
    ids=lambda a: " ".join(a[-2:]) if isinstance(a, tuple) else None,
)
def test_a_value_out_of_a_flags_range_is_refused_by_its_flag(cli, tmp_path, args, line):
    """Was: accepted (exit 0), or refused after the stage had started, by its internal name
    (`page_timeout_s=-1.0: must be positive`)."""
    out = one_error_line(*cli(*[a.format(tmp=tmp_path) for a in args]))
    assert out.startswith(line), out
    assert os.listdir(tmp_path) == ["logs"]  # refused before anything was written


def test_the_params_model_refuses_out_of_range_values_wherever_they_come_from():
    from pydantic import ValidationError

    from pipelines.stages.crawl import CrawlParams
    from pipelines.stages.extract import RenderParams
    from pipelines.stages.images import ImagesBuildParams

    for model, values in [
        (ImagesBuildParams, {"top_fraction": -1}),
        (ImagesBuildParams, {"top_fraction": math.nan}),
        (ImagesBuildParams, {"min_score": math.nan}),
        (CrawlParams, {"per_host_connections": 10**23}),
        (RenderParams, {"page_timeout": -1}),
    ]:
        with pytest.raises(ValidationError):
            model(**values)


def test_score_cut_refuses_a_nan_cut():
    from filters.images.pairs import score_cut

    with pytest.raises(ValueError, match="--min-score nan: give a number"):
        score_cut([0.5], math.nan, None)


def test_every_flag_has_help():
    from pipelines.stages import STAGES

    missing = [
        f"{stage.name} --{name.replace('_', '-')}"
        for stage in STAGES
        if stage.name
        for name, info in stage.params.model_fields.items()
        if field_role(stage.params, name).get("cli", True)
        and not field_role(stage.params, name).get("extra_args")
        and not info.description
    ]
    assert not missing, f"flags without help: {missing}"


def test_the_dagster_config_refuses_what_the_flag_refuses():
    # The run config of an asset carries the params field's limits, not only its minimum.
    from pipelines.graph import config_class
    from pipelines.stages import STAGES

    stage = next(s for s in STAGES if "top_fraction" in s.params.model_fields)
    cls = config_class(stage, stage.name)
    for bad in (-1.0, 0.0, 1.5, float("nan")):
        with pytest.raises(Exception, match="top_fraction"):
            cls(top_fraction=bad)
    assert cls(top_fraction=0.3).top_fraction == 0.3
