"""`refinery synth charts` and `refinery synth tables` through the CLI: the contract's columns,
verified QA, no teacher -> programmatic, and an existing output is one line of error."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from tests.synth.test_tables import _rows, _write

pytestmark = pytest.mark.timeout(300)
CHARTS_COLUMNS = [
    "id",
    "chart_type",
    "topic",
    "data",
    "code",
    "image_path",
    "qa",
    "status",
    "teacher",
]
TABLES_COLUMNS = [
    "id",
    "doc_id",
    "table_index",
    "markdown",
    "image_path",
    "qa",
    "training_allowed",
    "status",
]


def test_synth_charts_cli(tmp_path):
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip(
            "bubblewrap is not installed (apt-get install bubblewrap); charts need the sandbox"
        )
    out = tmp_path / "charts"
    args = ["synth", "charts", "--out", str(out), "--n", "3", "--types", "bar,line,pie"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    table = pq.read_table(out / "charts.parquet")
    assert table.column_names == CHARTS_COLUMNS and table.num_rows == 3
    rows = table.to_pylist()
    assert {r["chart_type"] for r in rows} == {"bar", "line", "pie"}
    assert all(r["teacher"] == "programmatic" and r["status"] == "ok" for r in rows)
    assert all((out / r["image_path"]).exists() and r["qa"] for r in rows)
    assert all(q["verified"] for r in rows for q in r["qa"])
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 2 and "already exists" in again.output


def test_synth_tables_cli(tmp_path):
    src = _write(tmp_path, _rows(opted_out=("league",)))
    out = tmp_path / "tables"
    res = CliRunner().invoke(app, ["synth", "tables", "--tables", src, "--out", str(out)])
    assert res.exit_code == 0, res.output
    table = pq.read_table(out / "table_pairs.parquet")
    assert table.column_names == TABLES_COLUMNS
    rows = table.to_pylist()
    assert rows and any(not r["training_allowed"] for r in rows)
    assert all(q["verified"] for r in rows for q in r["qa"])
