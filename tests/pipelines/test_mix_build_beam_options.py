"""`refinery mix build` takes Beam options after its own, as the other Beam stages do
(`--runner DirectRunner --direct_num_workers=1`), besides `--beam-arg=...`; an option neither it
nor Beam knows is refused naming the closest flag. The build itself is replaced: the test
reads the executor the stage hands it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pipelines.stages import mix as stage


@pytest.fixture()
def build(tmp_path, monkeypatch):
    """Invoke `refinery mix build ARGS...`: (exit code, the executor the build got, output)."""
    import training.mixture.run as mixture_run
    from pipelines.cli import app

    monkeypatch.setenv("REFINERY_HOME", str(tmp_path / "lake"))
    monkeypatch.setenv("REFINERY_LOG_DIR", str(tmp_path / "logs"))
    got = []

    def run_mix_build(spec_path, out, *, executor=None, **kwargs):
        got.append(executor)
        raise ValueError("stopped before building")

    monkeypatch.setattr(mixture_run, "resolve_spec", lambda spec: tmp_path / spec)
    monkeypatch.setattr(mixture_run, "run_mix_build", run_mix_build)

    def invoke(*args: str):
        got.clear()
        out = ["--out", str(tmp_path / "mix")]
        result = CliRunner().invoke(app, ["mix", "build", *args, *out])
        return result.exit_code, (got[0] if got else None), result.output

    return invoke


@pytest.mark.parametrize(
    "args",
    [
        ["s.yaml", "--runner", "DirectRunner", "--direct_num_workers=1"],
        ["s.yaml", "--runner", "DirectRunner", "--direct_num_workers", "1"],
        ["--direct_num_workers=1", "s.yaml", "--runner", "DirectRunner"],
        ["--direct_num_workers", "1", "s.yaml", "--runner", "DirectRunner"],
    ],
)
def test_beam_options_after_the_stage_s_own_reach_the_build(build, args):
    code, executor, out = build(*args)
    assert code == 2 and "stopped before building" in out, out
    want = ("--direct_num_workers=1",) if "--direct_num_workers=1" in args else None
    want = want or ("--direct_num_workers", "1")
    assert executor == stage.BeamBuild("DirectRunner", want)


def test_beam_arg_still_works_and_comes_first(build):
    code, executor, out = build(
        "--beam-arg=--x=1", "s.yaml", "--runner", "DirectRunner", "--direct_num_workers=2"
    )
    assert code == 2 and "stopped before building" in out, out
    assert executor == stage.BeamBuild("DirectRunner", ("--x=1", "--direct_num_workers=2"))
    code, executor, out = build("s.yaml", "--beam-arg", "--y=1", "--runner", "DirectRunner")
    assert executor == stage.BeamBuild("DirectRunner", ("--y=1",)), out


@pytest.mark.parametrize(
    "option, close",
    [
        ("--direct_num_worker=1", "--direct_num_workers"),
        ("--memory-budget-mb=9", "--memory-budget-mib"),
    ],
)
def test_an_option_nobody_knows_is_refused_naming_the_closest(build, option, close):
    code, executor, out = build("s.yaml", "--runner", "DirectRunner", option)
    assert code == 2 and executor is None, out
    errors = [ln for ln in out.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and f"did you mean {close}?" in errors[0], out


def test_a_second_positional_argument_is_refused(build):
    code, executor, out = build("s.yaml", "t.yaml", "--runner", "DirectRunner")
    assert code == 2 and executor is None
    assert "unexpected argument 't.yaml'" in out and "no positional argument but SPEC" in out


def test_beam_options_without_a_runner_are_refused_not_dropped(build):
    code, executor, out = build("s.yaml", "--direct_num_workers=1")
    assert code == 2 and executor is None
    assert "--direct_num_workers=1 without --runner" in out, out
