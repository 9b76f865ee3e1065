"""Beam runner and option checks made when a stage builds its executor, before it touches its
outputs: a misspelt runner, a bad option value, a job service or Dask scheduler that does not
answer, Beam options given with InProcess; a job service that goes away mid-run; and the
short name DaskRunner taken by every Beam stage (`import warc`, `extract`)."""

from __future__ import annotations

import json
import socket

import grpc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from typer.testing import CliRunner

from filters.run import InProcess
from pipelines.beam import fs
from pipelines.beam.filter import BeamExecutor
from pipelines.stages.filter import executor_for, run_filter

NO_DEFAULTS = {"quality": {"use_default_models": False}}
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("url", pa.string()),
        ("text", pa.string()),
        ("training_allowed", pa.bool_()),
    ]
)


def _free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def previous_run(tmp_path):
    """(docs dir, out dir holding a finished InProcess run's outputs, the names there)."""
    (tmp_path / "in").mkdir()
    pq.write_table(SCHEMA.empty_table(), tmp_path / "in" / "documents.parquet")
    out = tmp_path / "out"
    run_filter(tmp_path / "in", out, config=NO_DEFAULTS, beam_args=["--runner=InProcess"])
    names = sorted(p.name for p in out.iterdir())
    assert "documents.parquet" in names and "annotated.parquet" in names
    return tmp_path / "in", out, names


def test_misspelt_runner_is_refused_before_outputs_are_cleared(previous_run):
    docs, out, names = previous_run
    with pytest.raises(ValueError) as err:
        run_filter(docs, out, config=NO_DEFAULTS, beam_args=["--runner", "DirectRuner"])
    msg = str(err.value)
    assert msg.startswith("--runner DirectRuner: no such runner; did you mean DirectRunner?")
    assert "InProcess" in msg and "DaskRunner" in msg and "PortableRunner" in msg
    assert "\n" not in msg
    assert sorted(p.name for p in out.iterdir()) == names


def test_portable_runner_without_job_service_is_refused_before_outputs_are_cleared(
    previous_run,
):
    docs, out, names = previous_run
    endpoint = f"127.0.0.1:{_free_port()}"
    args = ["--runner=PortableRunner", f"--job_endpoint={endpoint}", "--environment_type=LOOPBACK"]
    with pytest.raises(ValueError, match=f"--job_endpoint={endpoint}: nothing answers there"):
        run_filter(docs, out, config=NO_DEFAULTS, beam_args=args)
    assert sorted(p.name for p in out.iterdir()) == names


def test_dask_scheduler_that_does_not_answer_is_refused():
    address = f"tcp://127.0.0.1:{_free_port()}"
    with pytest.raises(ValueError, match=f"--dask_client_address={address}: nothing answers"):
        fs.check_args(["--runner", "DaskRunner", f"--dask_client_address={address}"])


def test_known_runners_pass_the_check():
    assert fs.check_args(["--runner", "DirectRunner"]) == ["--runner=DirectRunner"]
    assert fs.check_args(["--runner=PortableRunner", "--job_endpoint=embed"])[0] == (
        "--runner=PortableRunner"
    )
    assert fs.check_args(["--runner=DaskRunner"])[0] == f"--runner={fs.DASK_RUNNER}"
    assert BeamExecutor(["--runner=DirectRunner", "--direct_num_workers=2"]).workers == 2


def test_bad_option_value_is_one_line_not_beams_usage(capsys):
    with pytest.raises(ValueError) as err:
        fs.unknown_option(["--direct_num_workers=two"])
    assert str(err.value) == (
        "Beam pipeline option --direct_num_workers: invalid int value: 'two'; it takes an "
        "integer; fix the value"
    )
    with pytest.raises(ValueError, match="--type_check_strictness: invalid choice: 'SOME'.*"):
        fs.unknown_option(["--type_check_strictness=SOME"])
    with pytest.raises(ValueError, match="--direct_num_workers: expected one argument"):
        fs.check_args(["--runner=DirectRunner", "--direct_num_workers"])
    assert capsys.readouterr().err == ""  # argparse printed nothing


def test_bad_option_value_through_the_cli_is_one_line(tmp_path):
    from pipelines.cli import app

    (tmp_path / "in").mkdir()
    pq.write_table(SCHEMA.empty_table(), tmp_path / "in" / "documents.parquet")
    cfg = tmp_path / "filter.yaml"
    cfg.write_text(json.dumps(NO_DEFAULTS))
    args = ["filter", "--docs", str(tmp_path / "in"), "--out", str(tmp_path / "out")]
    res = CliRunner().invoke(app, [*args, "--config", str(cfg), "--direct_num_workers=two"])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if "apitools" not in line]
    assert len(lines) == 1 and "--direct_num_workers: invalid int value: 'two'" in lines[0]


def test_inprocess_refuses_beam_options():
    assert isinstance(executor_for(["--runner", "InProcess"]), InProcess)
    with pytest.raises(ValueError) as err:
        executor_for(["--runner=InProcess", "--direct_num_workers=8", "--job_endpoint=x:1"])
    assert str(err.value).startswith(
        "--runner InProcess takes no Beam options: drop --direct_num_workers=8 "
        "--job_endpoint=x:1, or pick a Beam runner"
    )


class _Lost(grpc.RpcError):
    """What a portable runner raises once its job service is gone."""

    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return "Stream removed (Socket closed)"


class _Pipeline:
    def __init__(self, args, error):
        self.options, self.error = PipelineOptions(args), error

    def run(self):
        raise self.error


def test_job_service_gone_mid_run_is_a_user_error_naming_the_endpoint():
    args = ["--runner=PortableRunner", "--job_endpoint=localhost:8099"]
    with pytest.raises(ValueError) as err:
        fs.run(_Pipeline(args, _Lost()))
    assert str(err.value) == (
        "--job_endpoint=localhost:8099: the job service there went away mid-run (UNAVAILABLE: "
        "Stream removed (Socket closed)); restart it and re-run"
    )
    with pytest.raises(_Lost):  # not a job service's: gRPC's own error
        fs.run(_Pipeline(["--runner=DirectRunner"], _Lost()))


def test_import_and_extract_take_the_dask_short_name(monkeypatch, tmp_path):
    """Both build their options through `fs.runner_args` and run through `fs.run`."""
    from pipelines.beam import extract, imports

    seen = []
    monkeypatch.setattr(fs, "run", lambda p: seen.append(p.options.get_all_options()["runner"]))
    imports.run_pipeline([], tmp_path, {}, pipeline_args=["--runner", "DaskRunner"])
    extract.run_pipeline([], tmp_path, pipeline_args=["--runner", "DaskRunner"])
    assert seen == [fs.DASK_RUNNER, fs.DASK_RUNNER]


def test_importing_the_beam_pipelines_prints_nothing():
    """Beam's import warns on the root logger ("apitools not found ..."), which installs a
    stderr handler: the line came before every stage's own one-line error."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", "import pipelines.beam.fs, logging; logging.getLogger().info('x')"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stderr == ""
