"""A stage run as its own process under Dagster Pipes: `python -m pipelines.pipes_job`.

Launched by the stage's asset through `PipesSubprocessClient` (see `pipelines.graph`), for stages
that run Beam jobs when the `beam` resource says so (`launch: pipes`, or `auto` with a runner
other than the in-process DirectRunner). It reads the stage name, its parameters, the lake root
and the partition from the Pipes extras, runs the stage, and reports each output's metadata
(the same figures as an in-process step, peak memory included) and each check's result back
through `dagster_pipes`. The same module is what a launcher on a cluster would run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from dagster_pipes import PipesContext, open_dagster_pipes

from common.memory import PeakMemory
from pipelines.stage import Lake, Stage


def _stage(name: str) -> Stage:
    from pipelines.stages import STAGES

    for stage in STAGES:
        if stage.name == name:
            return stage
    raise KeyError(f"pipes job: no stage named {name!r} in pipelines.stages.STAGES")


def _pipes_metadata(typed: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    kinds = {"raw": "__infer__", "md": "md", "json": "json", "path": "path"}
    return {k: {"raw_value": v, "type": kinds[kind]} for k, (kind, v) in typed.items()}


def run(pipes: PipesContext) -> None:
    from pipelines.graph import stage_results, typed_metadata

    extras = pipes.extras
    stage = _stage(extras["stage"])
    lake = Lake(root=Path(extras["lake"]), log=pipes.log.info, partition=extras.get("partition"))
    started = time.perf_counter()
    with PeakMemory() as peak:
        summary = stage.run(stage.params(**extras["params"]), lake)
    seconds = round(time.perf_counter() - started, 2)
    outputs, checks = stage_results(stage, summary, lake, seconds, peak)
    for out, _path, meta in outputs:
        meta["pipes_pid"] = ("raw", __import__("os").getpid())
        pipes.report_asset_materialization(asset_key=out, metadata=_pipes_metadata(meta))
    for check, outcome in checks:
        meta = typed_metadata(dict(outcome.metadata), ())
        meta["description"] = ("raw", outcome.description or "")
        pipes.report_asset_check(
            check_name=check.name,
            passed=bool(outcome.passed),
            asset_key=check.asset,
            metadata=_pipes_metadata(meta),
        )


def main() -> None:
    with open_dagster_pipes() as pipes:
        run(pipes)


if __name__ == "__main__":
    main()
