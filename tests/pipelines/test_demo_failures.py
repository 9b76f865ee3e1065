"""When a demo run fails, the terminal gets a few lines saying what and why; the trace goes to the
log file those lines name (issue 25: ~200 lines of tracebacks around the one line that mattered)."""

from __future__ import annotations

import subprocess
import sys

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    MetadataValue,
    Output,
    asset,
    materialize,
    mem_io_manager,
)

from pipelines.demo import _failure_lines, _output_to


@asset(check_specs=[AssetCheckSpec("loss_finite_and_falling", asset="model", blocking=True)])
def model():
    yield Output(1, metadata={"path": MetadataValue.path("/lake/runs/cpt/r1")})
    yield AssetCheckResult(
        check_name="loss_finite_and_falling",
        passed=False,
        description="training /lake/runs/cpt/r1: 10 logged step(s); held-out loss not falling",
        metadata={"loss_first_mean": 6.84, "loss_last_mean": 6.91, "judged_on": "held-out"},
    )


@asset
def broken():
    raise ValueError("documents.parquet: column text is int64; write it as string")


def test_a_failed_blocking_check_is_a_few_lines_naming_asset_check_figures_and_log(tmp_path):
    result = materialize([model], raise_on_error=False, resources={"io_manager": mem_io_manager})
    failed = [ev for ev in result.get_asset_check_evaluations() if not ev.passed]
    lines = _failure_lines(result, "model", failed, tmp_path / "demo.log")
    text = "\n".join(lines)
    assert len(lines) <= 6, text
    assert "check model.loss_finite_and_falling failed" in text
    assert "held-out loss not falling" in text and "loss_last_mean=6.91" in text
    assert "data: /lake/runs/cpt/r1" in text and str(tmp_path / "demo.log") in text
    assert "Traceback" not in text


def test_a_failed_step_names_the_users_exception_not_dagsters_wrappers(tmp_path):
    result = materialize([broken], raise_on_error=False)
    lines = _failure_lines(result, "broken", [], tmp_path / "demo.log")
    text = "\n".join(lines)
    assert len(lines) <= 4, text
    assert "step broken failed: ValueError: documents.parquet: column text is int64" in text
    assert "Dagster" not in text.split("full log")[0] and "Traceback" not in text


def test_output_goes_to_the_log_file_children_included_and_comes_back(tmp_path, capfd):
    log = tmp_path / "logs" / "demo.log"
    with _output_to(log) as terminal:
        print("event log line", flush=True)
        subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('child trace\\n')"])
        terminal.write("one line per asset\n")
    print("after")
    out, err = capfd.readouterr()
    assert "one line per asset" in out and "after" in out
    assert "event log line" not in out + err and "child trace" not in out + err
    assert "event log line" in log.read_text() and "child trace" in log.read_text()
