"""The demo: serve the sample web and run every stage on it, end to end, into the lake."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pipelines import lake


@dataclass
class DemoState:
    """What the demo's stages hand each other: the lake root, the served web, each stage's output."""

    root: Path
    served: Any = None
    outputs: dict[str, Path] = field(default_factory=dict)


@dataclass
class StepResult:
    name: str
    seconds: float
    summary: dict[str, Any]
    output: Path | None


def step_sample_web(state: DemoState) -> tuple[dict[str, Any], Path]:
    """Write the sample web and its labels to the lake."""
    from pipelines.stages.sampleweb import run_sampleweb_write

    out = lake.stage_dir("sampleweb", state.root)
    summary = run_sampleweb_write(out)
    return {k: summary[k] for k in ("sites", "content_pages", "images", "languages")}, out


# Stages in order; each later issue appends its step here.
STEPS: list[tuple[str, Callable[[DemoState], tuple[dict[str, Any], Path]]]] = [
    ("sample web", step_sample_web),
]


def _fmt(summary: dict[str, Any]) -> str:
    parts = []
    for key, value in summary.items():
        if isinstance(value, float):
            value = f"{value:.3g}"
        elif isinstance(value, list | tuple):
            value = ",".join(map(str, value))
        parts.append(f"{key}={value}")
    return "  ".join(parts)


def run_demo(root: Path | None = None, console: Console | None = None) -> list[StepResult]:
    """Serve the sample web on loopback and run every stage on it; print a summary table."""
    from crawlers.sampleweb import build_web, serve

    console = console or Console()
    state = DemoState(root=(root or lake.lake_root()))
    state.root.mkdir(parents=True, exist_ok=True)
    results: list[StepResult] = []
    started = time.perf_counter()
    with serve(build_web()) as served:
        state.served = served
        console.print(f"[bold]Refinery demo[/] lake={state.root}  sample web: {len(served.seeds())} sites on loopback")
        for name, step in STEPS:
            console.rule(name)
            t0 = time.perf_counter()
            summary, output = step(state)
            results.append(StepResult(name, time.perf_counter() - t0, summary, output))
            console.print(f"{name}: {_fmt(summary)}")
    table = Table(title=f"Refinery demo: {len(results)} stages in {time.perf_counter() - started:.0f} s")
    table.add_column("stage")
    table.add_column("seconds", justify="right")
    table.add_column("summary")
    table.add_column("output")
    for r in results:
        table.add_row(r.name, f"{r.seconds:.1f}", _fmt(r.summary), str(r.output or ""))
    console.print(table)
    return results
