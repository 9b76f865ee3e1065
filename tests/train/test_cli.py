"""`refinery train ...`: runs a stage, resumes to a new total, and fails clearly on bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

pytestmark = pytest.mark.timeout(120)


def test_cli_pretrain_then_resume_to_a_larger_total(tmp_path, mixtures, config):
    runner = CliRunner()
    args = [
        "train",
        "pretrain",
        "--config",
        str(config),
        "--data",
        str(mixtures["pretrain"]),
        "--out",
        str(tmp_path / "run"),
    ]
    first = runner.invoke(app, [*args, "--steps", "3"])
    assert first.exit_code == 0, first.output
    assert "pretrain: 3 steps, seq_len 64" in first.output
    again = runner.invoke(app, [*args, "--steps", "5"])
    assert again.exit_code == 2 and "--resume" in again.output
    resumed = runner.invoke(app, [*args, "--steps", "5", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    steps = [
        json.loads(ln)["step"]
        for ln in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    assert steps == [1, 2, 3, 4, 5]
    assert (tmp_path / "run" / "loss.png").stat().st_size > 1000


def test_cli_reports_a_missing_mixture_and_exits_2(tmp_path, config):
    result = CliRunner().invoke(
        app,
        [
            "train",
            "cpt",
            "--config",
            str(config),
            "--data",
            str(tmp_path / "none"),
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code == 2
    assert "mixture not found" in result.output


def test_cli_retrieval_data_writes_a_source_and_eval_rejects_bad_runs(tmp_path):
    import pyarrow.parquet as pq

    runner = CliRunner()
    out = tmp_path / "synth" / "long" / "retrieval.parquet"
    args = [
        "train",
        "retrieval-data",
        "--out",
        str(out),
        "--docs",
        "7",
        "--seed",
        "3",
        "--facts",
        "3",
        "--queries",
        "2",
        "--filler-min",
        "1",
        "--filler-max",
        "2",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert pq.read_table(out).num_rows == 7 and "7 documents" in result.output
    assert (out.parent / "retrieval.parquet.manifest.json").exists()
    bad = runner.invoke(app, args[:-8] + ["--facts", "2", "--queries", "3"])
    assert bad.exit_code == 2 and "n_queries" in bad.output
    result = runner.invoke(
        app, ["train", "retrieval-eval", "--run", "nameless", "--tokenizer", str(out)]
    )
    assert result.exit_code == 2 and "expected NAME=PATH" in result.output
