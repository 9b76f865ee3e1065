"""The mixture stages' drivers live in `training.mixture.run` and return typed results; the
stage module (`pipelines.stages.mix`) only picks where a build runs and adapts the results into
the same summaries as before."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from pipelines.stage import Lake
from pipelines.stages import mix as stage
from training.mixture.builder import build_mixture
from training.mixture.run import (
    MixBuildResult,
    MixReportResult,
    MixValidateResult,
    TokenizerResult,
    run_mix_build,
    run_mix_report,
    run_mix_validate,
    run_tokenizer_train,
)

from .conftest import base_spec


class InThisProcess:
    """An executor that builds in process and records what it was handed."""

    name = "Recorder"

    def __init__(self) -> None:
        self.calls: list[tuple[Path, Path, Path]] = []

    def __call__(self, spec_path: Path, out_dir: Path, *, lake_root: Path) -> dict:
        self.calls.append((spec_path, out_dir, lake_root))
        return build_mixture(spec_path, out_dir, lake_root=lake_root)


def test_the_drivers_return_typed_results_that_the_stages_adapt(lake, write_spec, tmp_path):
    spec = write_spec(base_spec(lake))
    valid = run_mix_validate(spec, lake_root=lake)
    assert isinstance(valid, MixValidateResult) and valid.name == "tiny-test"
    summary = stage.mix_validate(stage.MixValidateParams(spec=str(spec)), Lake(root=lake))
    assert summary.model_dump(exclude={"outputs"}) == asdict(valid)

    built = run_mix_build(spec, tmp_path / "a", lake_root=lake)
    assert isinstance(built, MixBuildResult) and built.tokens > 0 and built.checks_ok
    params = stage.MixBuildParams(spec=str(spec), out=tmp_path / "b")
    s = stage.mix_build(params, Lake(root=lake))
    assert s.outputs == {"mixture": str(tmp_path / "b")}
    assert (s.name, s.sequences, s.tokens, s.shards) == (
        built.name,
        built.num_sequences,
        built.tokens,
        built.shards,
    )
    assert s.shortfalls == len(built.shortfalls) and s.shares_within_tolerance is built.checks_ok
    assert s.accounting == built.markdown and s.read_rows is None

    report = run_mix_report(tmp_path / "b")
    assert isinstance(report, MixReportResult) and report.markdown == s.accounting
    shown = stage.mix_report(stage.MixReportParams(mix_dir=tmp_path / "b"), Lake(root=lake))
    assert (shown.name, shown.rows, shown.summary) == (report.name, report.rows, report.summary)


def test_the_tokenizer_driver_returns_a_typed_result(lake, tmp_path):
    out = tmp_path / "tok" / "tokenizer.json"
    tok = run_tokenizer_train(out, vocab_size=300, sample_tokens=5_000, lake_root=lake)
    assert isinstance(tok, TokenizerResult) and tok.path == str(out)
    assert tok.sources == [str(lake / "filter" / "documents.parquet")]
    assert tok.special_tokens["boundary"] == 0


def test_a_build_runs_on_the_executor_it_is_handed(lake, write_spec, tmp_path):
    spec = write_spec(base_spec(lake))
    executor = InThisProcess()
    built = run_mix_build(spec, tmp_path / "x", executor=executor, lake_root=lake)
    assert executor.calls == [(spec, tmp_path / "x", lake)]
    assert built.tokens == run_mix_build(spec, tmp_path / "y", lake_root=lake).tokens
    with pytest.raises(ValueError, match=r"in-process build; .*without --runner \(Recorder\)"):
        run_mix_build(spec, tmp_path / "z", executor=executor, memory_budget_mib=100)
    assert not (tmp_path / "z").exists()


def test_the_stage_picks_beam_for_a_runner_and_in_process_otherwise():
    params = stage.MixBuildParams
    assert stage.executor_for(params(spec="s")) is None
    assert stage.executor_for(params(spec="s", runner="DirectRunner", beam_arg=["--a=1"])) == (
        stage.BeamBuild("DirectRunner", ("--a=1",))
    )
    asset = params(spec="s", use_beam=True, beam_runner="DaskRunner", beam_options=["--b"])
    assert stage.executor_for(asset) == stage.BeamBuild("DaskRunner", ("--b",))
    # the CLI's --runner wins over the resource, with its own --beam-arg
    both = params(spec="s", runner="DirectRunner", use_beam=True, beam_options=["--b"])
    assert stage.executor_for(both) == stage.BeamBuild("DirectRunner", ())
