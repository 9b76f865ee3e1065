"""A list-valued option takes one or more values after one flag (`refinery filter --decontaminate
E1 E2`, as the help writes `--decontaminate EVAL...`), and the repeated form reads as before.
Every list option of every stage is parsed here through the real command machinery
(`pipelines.cli.add_stage_commands` over the real params models), with the stage's run
replaced by one that keeps the parameters: nothing runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pipelines.stage import Summary, is_list_field, spread_list_values

EVALS = ["e1.jsonl", "ev.jsonl"]


@pytest.fixture()
def parse(tmp_path, monkeypatch):
    """Invoke `refinery ARGS...` with every stage's run replaced: (exit code, the params the
    stage got, the output)."""
    from pipelines.cli import add_stage_commands
    from pipelines.stages import GROUPS, STAGES

    monkeypatch.setenv("REFINERY_HOME", str(tmp_path / "lake"))
    monkeypatch.setenv("REFINERY_LOG_DIR", str(tmp_path / "logs"))
    got = []

    def keep(params, lake):
        got.append(params)
        return Summary()

    app = typer.Typer()
    add_stage_commands(app, [replace(s, run=keep, show=None) for s in STAGES], GROUPS)

    def invoke(*args: str):
        got.clear()
        result = CliRunner().invoke(app, [str(a) for a in args])
        return result.exit_code, (got[0] if got else None), result.output

    return invoke


def test_filter_takes_two_eval_sets_after_one_decontaminate_flag(parse):
    code, p, out = parse("filter", "--runner", "InProcess", "--decontaminate", *EVALS)
    assert code == 0, out
    assert p.decontaminate == EVALS and p.runner == "InProcess" and p.beam_args == []


def test_one_flag_and_repeated_flags_mix(parse):
    code, p, out = parse("filter", "--decontaminate", *EVALS, "--decontaminate", "e3.parquet")
    assert code == 0, out
    assert p.decontaminate == [*EVALS, "e3.parquet"]
    code, p, out = parse("filter", "--decontaminate=e1.jsonl", "ev.jsonl", "--runner=InProcess")
    assert code == 0, out
    assert p.decontaminate == EVALS and p.runner == "InProcess"


# (command, flag, values, what the params field holds, other args the command needs)
LISTS = [
    (["filter"], "--decontaminate", EVALS, EVALS, []),
    (["images", "build"], "--face-angles", ["-25", "25", "90", "-90", "180"],
     [-25.0, 25.0, 90.0, -90.0, 180.0], []),
    (["images", "build"], "--face-angles", ["-25"], [-25.0], []),
    (["clip", "train"], "--pairs", ["a", "b"], [Path("a"), Path("b")], []),
    (["captioner", "train"], "--pairs", ["a", "b"], [Path("a"), Path("b")], []),
    (["synth", "captions"], "--pairs", ["a", "b"], [Path("a"), Path("b")], []),
    (["images", "ocr"], "--pairs", ["a", "b"], [Path("a"), Path("b")], []),
    (["images", "ocr"], "--languages", ["eng", "chi_sim"], ["eng", "chi_sim"], []),
    (["tokenizer", "train"], "--sources", ["x/*.parquet", "y.parquet"],
     ["x/*.parquet", "y.parquet"], []),
    (["train", "retrieval-eval"], "--run", ["r1", "r2"], ["r1", "r2"], ["--tokenizer", "t"]),
    (["ablate"], "--seeds", ["0", "1", "-2"], [0, 1, -2], []),
]  # fmt: skip


def _field(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


@pytest.mark.parametrize("command, flag, values, want, other", LISTS)
def test_every_list_option_takes_values_after_one_flag_or_repeated(
    parse, command, flag, values, want, other
):
    code, spread, out = parse(*command, *other, flag, *values)
    assert code == 0, out
    repeated_args = [a for v in values for a in (flag, v)]
    code, repeated, out = parse(*command, *other, *repeated_args)
    assert code == 0, out
    assert getattr(spread, _field(flag)) == getattr(repeated, _field(flag)) == want
    assert spread == repeated


def test_the_list_of_every_stage_is_covered():
    from pipelines.stage import field_role, flag_of
    from pipelines.stages import STAGES

    flags = {
        (s.name, flag_of(s, n))
        for s in STAGES
        if s.name
        for n in s.params.model_fields
        if is_list_field(s.params, n)
        and field_role(s.params, n).get("cli", True)
        and not field_role(s.params, n).get("argument")
    }
    covered = {(" ".join(c), f) for c, f, *_ in LISTS} | {("mix build", "--beam-arg")}
    assert flags <= covered, f"list options without a case here: {sorted(flags - covered)}"


def test_a_list_of_numbers_ends_at_a_positional_argument(parse):
    code, p, out = parse("ablate", "--seeds", "0", "1", "spec.yaml")
    assert code == 0, out
    assert p.seeds == [0, 1] and p.spec == Path("spec.yaml")


def test_a_list_of_text_leaves_a_command_s_positional_argument_alone(parse):
    """`mix build` takes its spec as an argument: a bare token after --beam-arg's value stays
    the spec, as before (its Beam options start with '-' anyway)."""
    code, p, out = parse("mix", "build", "--beam-arg=--x=1", "tiny/pretrain")
    assert code == 0, out
    assert p.beam_arg == ["--x=1"] and p.spec == "tiny/pretrain"
    code, p, out = parse("mix", "build", "tiny/pretrain", "--beam-arg", "--x=1", "--beam-arg=-y")
    assert code == 0, out
    assert p.beam_arg == ["--x=1", "-y"] and p.spec == "tiny/pretrain"


def test_options_after_the_values_still_reach_the_stage_and_beam(parse):
    code, p, out = parse(
        "filter", "--decontaminate", *EVALS, "--direct_num_workers=2", "--models", "m"
    )
    assert code == 0, out
    assert p.decontaminate == EVALS and p.models == Path("m")
    assert p.beam_args == ["--direct_num_workers=2"]


def test_a_stray_argument_is_still_refused(parse):
    code, _, out = parse("filter", "--runner", "InProcess", "stray.jsonl")
    assert code == 2 and "takes no positional arguments here" in out, out
    code, _, out = parse("filter", "stray.jsonl", "--decontaminate", "e1.jsonl")
    assert code == 2 and "takes no positional arguments here" in out, out


def test_spread_list_values_rewrites_only_what_a_list_option_takes():
    from pipelines.stages.filter import FILTER
    from pipelines.stages.images import IMAGES_BUILD

    assert spread_list_values(FILTER, ["--decontaminate", "a", "b", "--out", "o", "c"]) == [
        "--decontaminate", "a", "--decontaminate", "b", "--out", "o", "c",
    ]  # fmt: skip
    # the flag's first value is taken whatever it looks like; `--` ends all rewriting
    assert spread_list_values(FILTER, ["--decontaminate", "-x", "b", "--", "c"]) == [
        "--decontaminate", "-x", "--decontaminate", "b", "--", "c",
    ]  # fmt: skip
    assert spread_list_values(IMAGES_BUILD, ["--face-angles", "-25", "25", "x"]) == [
        "--face-angles", "-25", "--face-angles", "25", "x",
    ]  # fmt: skip
