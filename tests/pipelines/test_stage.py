"""The stage layer: one declaration gives the CLI command and the Dagster asset; user errors are
treated alike by every command; the lake IO manager hands out dataset handles."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pipelines.cli import app, command_for
from pipelines.graph import config_class, stage_asset
from pipelines.stage import Lake, Params, Stage, Summary, param


class CountParams(Params):
    src: Path | None = param(None, input="upstream_docs", help="Input directory.")
    out: Path | None = param(None, output=True, help="Output directory.")
    limit: int = param(10, min=1, help="Stop after N lines.")
    runner: str = param("DirectRunner", resource="beam.runner", help="Beam runner.")


class CountSummary(Summary):
    lines: int


def count(p: CountParams, lake: Lake) -> CountSummary:
    """Count lines."""
    src = Path(p.src) / "in.txt"
    n = min(len(src.read_text().splitlines()), p.limit)
    return CountSummary(outputs={"counted": str(p.out or src.parent)}, lines=n)


def _stage(params=CountParams) -> Stage:
    return Stage(
        "count", params, count, "Count lines.", outputs=("counted",), inputs=("upstream_docs",)
    )


def _cli(stage: Stage) -> typer.Typer:
    cli = typer.Typer()
    cli.command("count")(command_for(stage))
    cli.command("noop")(lambda: None)  # a second command keeps typer's sub-command parsing
    return cli


def test_adding_a_parameter_touches_one_place(tmp_path):
    (tmp_path / "in.txt").write_text("a\nb\nc\n")

    class MoreParams(CountParams):  # the one change: a new field
        skip_blank: bool = param(False, help="Ignore blank lines.")

    for params, has_new in ((CountParams, False), (MoreParams, True)):
        stage = _stage(params)
        help_text = CliRunner().invoke(_cli(stage), ["count", "--help"]).output
        assert ("--skip-blank" in help_text) == has_new
        fields = config_class(stage, "counted").model_fields
        assert ("skip_blank" in fields) == has_new
        # Dagster fills inputs, outputs and resource values itself: not config fields.
        assert "limit" in fields and not {"src", "out", "runner"} & set(fields)
        assert stage_asset(stage).keys_by_output_name.keys() == {"counted"}
    ok = CliRunner().invoke(_cli(_stage()), ["count", "--src", str(tmp_path), "--limit", "2"])
    assert ok.exit_code == 0 and "lines=2" in ok.output


def test_bad_values_name_the_flag_and_exit_2(tmp_path):
    res = CliRunner().invoke(_cli(_stage()), ["count", "--src", str(tmp_path), "--limit", "0"])
    assert res.exit_code == 2 and "--limit" in res.output


MIN_MESSAGE = "Input should be greater than or equal to 1"


def test_a_min_binds_the_params_model_the_cli_and_the_dagster_config_alike(tmp_path):
    """`param(min=...)` is a constraint of the params model, so a stage called from code, the CLI
    and the asset's Dagster config refuse the same value with the same message; the default
    stays what it was."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=MIN_MESSAGE):
        CountParams(limit=0)
    res = CliRunner().invoke(_cli(_stage()), ["count", "--src", str(tmp_path), "--limit", "0"])
    assert res.exit_code == 2 and MIN_MESSAGE in res.output
    config = config_class(_stage(), "counted")
    with pytest.raises(ValueError) as err:
        config(limit=0)
    assert str(err.value) == f"config of counted: limit: {MIN_MESSAGE}"
    assert config().limit == 10 and config(limit=1).limit == 1


def test_a_dagster_run_with_a_value_below_min_fails_on_its_config_before_the_stage_runs(tmp_path):
    from pipelines.graph import materialize_selection

    cfg = {"docs": 3, "facts": 0, "queries": 0, "filler_min": -5, "filler_max": -1}
    result = materialize_selection(
        ["retrieval_documents"],
        tmp_path,
        run_config={"ops": {"retrieval_documents": {"config": cfg}}},
        raise_on_error=False,
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    message = failure.event_specific_data.error.message
    assert message.startswith("ValueError: config of retrieval_documents: facts: " + MIN_MESSAGE)
    assert "filler_min: Input should be greater than or equal to 0" in message
    assert not list(tmp_path.rglob("retrieval.parquet"))  # refused before anything was written
    cli = ["train", "retrieval-data", "--docs", "3", "--facts", "0", "--out", str(tmp_path / "r")]
    res = CliRunner().invoke(app, cli)
    assert res.exit_code == 2 and "--facts" in res.output and MIN_MESSAGE in res.output


def test_every_assets_default_config_meets_its_fields_minimums():
    """The constraints added to the Dagster configs leave every default valid."""
    from typing import Annotated

    from pydantic import TypeAdapter

    from pipelines.stages import STAGES

    checked = 0
    for stage in STAGES:
        for name in stage.outputs[:1]:
            for field in config_class(stage, name).model_fields.values():
                if field.metadata and not field.is_required():
                    TypeAdapter(Annotated[field.annotation, *field.metadata]).validate_python(
                        field.default
                    )
                    checked += 1
    assert checked > 20  # the constraints did reach the configs


def test_a_manifest_without_a_field_or_not_an_object_is_one_line_naming_it(tmp_path):
    (tmp_path / "m1").mkdir()
    (tmp_path / "m1" / "manifest.json").write_text("{}")
    (tmp_path / "m2").mkdir()
    (tmp_path / "m2" / "manifest.json").write_text("[1]")
    for name, said in (("m1", "no 'buckets' field"), ("m2", "a manifest is a JSON object")):
        res = CliRunner().invoke(app, ["mix", "report", str(tmp_path / name)])
        assert res.exit_code == 2, res.output
        (line,) = [ln for ln in res.output.splitlines() if ln.startswith("error: ")]
        assert f"{tmp_path / name / 'manifest.json'}: {said}" in line
        assert "refinery mix build" in line


def test_refinery_home_at_a_file_names_the_variable_and_what_to_set(tmp_path):
    (tmp_path / "afile").write_text("")
    res = CliRunner().invoke(
        app,
        ["train", "retrieval-data", "--docs", "2"],
        env={"REFINERY_HOME": str(tmp_path / "afile")},
    )
    assert res.exit_code == 2, res.output
    assert f"REFINERY_HOME={tmp_path / 'afile'}: " in res.output
    assert "set REFINERY_HOME to a directory" in res.output and "Errno" not in res.output


@pytest.mark.parametrize(
    "args, named",
    [
        (["filter", "--docs", "/missing-dir", "--out", "OUT"], "/missing-dir"),
        (["crawl", "--seeds", "/missing-seeds.txt", "--out", "OUT"], "/missing-seeds.txt"),
        (["extract", "--crawl", "/missing-crawl", "--out", "OUT"], "/missing-crawl"),
        (["mix", "validate", "/missing-spec.yaml"], "/missing-spec.yaml"),
        (["mix", "report", "/missing-mix"], "/missing-mix"),
        (
            ["train", "pretrain", "--config", "tiny", "--data", "/missing-mix", "--out", "OUT"],
            "/missing-mix",
        ),
        (
            [
                "quality",
                "train",
                "--lang",
                "en",
                "--labels",
                "/missing.parquet",
                "--out",
                "OUT/m.bin",
            ],
            "/missing.parquet",
        ),
        (
            ["tokenizer", "train", "--out", "OUT/t.json", "--sources", "/missing/*.parquet"],
            "/missing",
        ),
    ],
)
def test_every_command_treats_a_missing_file_alike(args, named, tmp_path, monkeypatch):
    monkeypatch.setenv("REFINERY_HOME", str(tmp_path / "lake"))
    args = [a.replace("OUT", str(tmp_path / "out")) for a in args]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error: ")]
    assert len(errors) == 1 and named in errors[0], res.output
    assert "Traceback" not in res.output


def test_an_existing_output_is_one_line_too(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from common.schemas import OUTPUTS
    from crawlers.images.journal import JOURNAL

    extract = tmp_path / "extract"
    extract.mkdir()
    pq.write_table(OUTPUTS["image_refs"].empty_table(), extract / "image_refs.parquet")
    pq.write_table(OUTPUTS["interleaved"].empty_table(), extract / "interleaved.parquet")
    docs = pa.table(
        {
            "id": pa.array([], pa.string()),
            "noai": pa.array([], pa.bool_()),
            "training_allowed": pa.array([], pa.bool_()),
        }
    )
    pq.write_table(docs, extract / "documents.parquet")
    out = tmp_path / "pairs"
    out.mkdir()
    (out / JOURNAL).write_bytes(b"")
    res = CliRunner().invoke(app, ["images", "build", "--docs", str(extract), "--out", str(out)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "already holds an image fetch" in res.output and "--resume" in res.output


def test_io_manager_hands_out_handles_and_falls_back_to_the_lake_place(tmp_path):
    from dagster import build_input_context, build_output_context

    from pipelines.resources import LakeIOManager
    from pipelines.stage import Dataset

    io = LakeIOManager(root=str(tmp_path))
    handle = Dataset("tokenizer", str(tmp_path / "somewhere" / "tok.json"))
    io.handle_output(build_output_context(asset_key="tokenizer"), handle)
    assert io.load_input(build_input_context(asset_key="tokenizer")) == handle
    # No handle: the dataset at its standard lake place, if it exists; else a clear error.
    with pytest.raises(FileNotFoundError, match="materialize documents first"):
        io.load_input(build_input_context(asset_key="documents"))
    (tmp_path / "extract").mkdir()
    loaded = io.load_input(build_input_context(asset_key="documents"))
    assert loaded.path == str(tmp_path / "extract")


def test_format_figures_escapes_control_characters():
    """A figure holding text from a stage's data (sandbox stderr in a chart status) never sends
    ESC/OSC/\\r to the terminal: they are written as escapes."""
    from pipelines.stage import format_figures

    line = format_figures(
        {"status": {"exit code 1: \x1b]0;TITLE\x07\x1b[2K\rok": 3}, "note": "a\x1b[8mb\tc"}
    )
    assert line == "status=exit code 1: \\x1b]0;TITLE\\x07\\x1b[2K\\rok:3  note=a\\x1b[8mb\tc"
    assert not any(ord(c) < 32 and c != "\t" or ord(c) == 127 for c in line)
