"""The demo: serve the sample web, then materialize the whole asset graph with Dagster.

No list of steps is written here: the runs come from the graph (`pipelines.graph`), in
topological order, one run per partition for partitioned assets. The only demo-specific things
are run config values (the served seeds, a short crawl delay, training steps). The runs, their
materializations and check evaluations land in the Dagster instance of $DAGSTER_HOME (default:
the project's dagster_home/), so `make ui` then shows the run that just happened.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pipelines import lake

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# The sample web is on loopback: a short delay keeps the demo quick; robots and Crawl-delay apply.
DEMO_CRAWL_DELAY_S = 0.2
DEMO_TRAIN_STEPS = {
    "pretrained_model": 300,
    "cpt_model": 100,
    "multimodal_model": 100,
    "long_context_model": 100,
}
DEMO_RETRIEVAL_EVAL_DOCS = 64
DEMO_IMAGE_DELAY_S = 0.05
DEMO_CLIP_STEPS = 60
DEMO_CHARTS = 10  # one of each chart type


@dataclass
class AssetResult:
    """One materialized asset of the demo: its name, run time, summary line and dataset path."""

    name: str
    seconds: float
    summary: str
    output: str
    checks: dict[str, bool]


def demo_config(seeds: list[str], train_steps: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Config per asset (by asset name) for the demo; everything else keeps its defaults."""
    config: dict[str, dict[str, Any]] = {
        "raw_pages": {
            "seeds": seeds,
            "delay": DEMO_CRAWL_DELAY_S,
            "allow_private_networks": True,
        },
        "long_context_model": {"retrieval_eval_docs": DEMO_RETRIEVAL_EVAL_DOCS},
        # the sample web's images are on loopback too
        "image_pairs": {"allow_private_networks": True, "delay": DEMO_IMAGE_DELAY_S},
        "clip_model": {"steps": DEMO_CLIP_STEPS, "batch_size": 32},
        "synthetic_charts": {"n": DEMO_CHARTS},
    }
    for name, steps in train_steps.items():
        config.setdefault(name, {})["steps"] = steps
    return config


def plan_runs(defs) -> list[tuple[list[Any], list[str | None]]]:
    """The graph's assets in topological order, cut into runs: consecutive assets that share a
    partitioning go in one run, executed once per partition key (None: unpartitioned). The
    outputs of one multi-asset always go together (it is computed in one step)."""
    graph = defs.resolve_asset_graph()
    siblings = {k: list(a.keys) for a in defs.assets for k in a.keys}
    runs: list[tuple[list[Any], Any]] = []
    placed: set = set()
    for key in graph.toposorted_asset_keys:
        if key in placed:
            continue
        group = sorted(siblings.get(key, [key]), key=graph.toposorted_asset_keys.index)
        placed.update(group)
        parts = graph.get(key).partitions_def
        if runs and runs[-1][1] == parts:
            runs[-1][0].extend(group)
        else:
            runs.append((group, parts))
    return [(keys, parts.get_partition_keys() if parts else [None]) for keys, parts in runs]


def _instance(dagster_home: Path | None):
    from dagster import DagsterInstance

    project_home = PROJECT_ROOT / "dagster_home"
    home = Path(dagster_home or os.environ.get("DAGSTER_HOME") or project_home)
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():  # the project's instance settings (SQLite storage)
        shutil.copyfile(project_home / "dagster.yaml", home / "dagster.yaml")
    os.environ["DAGSTER_HOME"] = str(home.resolve())
    return DagsterInstance.get(), home


def materialize_graph(
    root: Path,
    config_by_asset: dict[str, dict[str, Any]],
    *,
    dagster_home: Path | None = None,
    console: Console | None = None,
) -> list[AssetResult]:
    """Materialize every asset of the graph into the lake at `root`, recording the runs in the
    Dagster instance; return one result per asset (the last partition's, for partitioned ones)."""
    from dagster import materialize

    from pipelines.graph import build_definitions

    defs = build_definitions("local", root=root)
    instance, home = _instance(dagster_home)
    assets = list(defs.assets)
    op_of = {k.to_user_string(): a.node_def.name for a in assets for k in a.keys}
    results: dict[str, AssetResult] = {}
    for keys, partitions in plan_runs(defs):
        names = [k.to_user_string() for k in keys]
        run_config = {
            "ops": {
                op_of[n]: {"config": config_by_asset[n]} for n in names if n in config_by_asset
            },
            # the instance keeps every event; the terminal shows the stages' own log lines
            "loggers": {"console": {"config": {"log_level": "INFO"}}},
        }
        for partition in partitions:
            label = ", ".join(names) + (f" [partition {partition}]" if partition else "")
            if console:
                from rich.markup import escape

                console.rule(escape(label))
            result = materialize(
                assets,
                selection=keys,
                instance=instance,
                resources=defs.resources,
                run_config=run_config,
                partition_key=partition,
                tags={"refinery/demo": "1"},
            )
            if not result.success:
                raise RuntimeError(f"demo run {label} failed; see the Dagster instance at {home}")
            checks: dict[str, dict[str, bool]] = {}
            for ev in result.get_asset_check_evaluations():
                checks.setdefault(ev.asset_key.to_user_string(), {})[ev.check_name] = ev.passed
            for ev in result.get_asset_materialization_events():
                mat = ev.event_specific_data.materialization
                name = mat.asset_key.to_user_string()
                meta = mat.metadata
                results[name] = AssetResult(
                    name=name,
                    seconds=float(meta["seconds"].value) if "seconds" in meta else 0.0,
                    summary=str(meta["summary"].value) if "summary" in meta else "",
                    output=str(meta["path"].value) if "path" in meta else "",
                    checks=checks.get(name, {}),
                )
                if console:
                    console.print(f"{name}: {results[name].summary}", markup=False)
            failed = [f"{a}.{c}" for a, cs in checks.items() for c, ok in cs.items() if not ok]
            if failed:
                raise RuntimeError(f"demo run {label}: checks failed: {', '.join(failed)}")
    order = [k.to_user_string() for k in defs.resolve_asset_graph().toposorted_asset_keys]
    return [results[n] for n in order if n in results]


def run_demo(
    root: Path | None = None,
    console: Console | None = None,
    *,
    train_steps: tuple[int, ...] | None = None,
    dagster_home: Path | None = None,
    asset_config: dict[str, dict[str, Any]] | None = None,
) -> list[AssetResult]:
    """Serve the sample web on loopback and materialize the whole graph on it; print a table.

    train_steps overrides the (pretrain, cpt, multimodal, long-context) step counts, e.g. for a
    quick check; three values are (pretrain, cpt, long-context) with multimodal at its default.
    asset_config adds config per asset name on top of the demo's (e.g. the captioner's steps).
    """
    from sampleweb import build_web, serve

    console = console or Console()
    root = (root or lake.lake_root()).resolve()
    root.mkdir(parents=True, exist_ok=True)
    steps = dict(DEMO_TRAIN_STEPS)
    if train_steps:
        names = list(DEMO_TRAIN_STEPS)
        if len(train_steps) == 3:
            names.remove("multimodal_model")
        steps.update(zip(names, train_steps, strict=True))
    started = time.perf_counter()
    with serve(build_web()) as served:
        console.print(
            f"[bold]Refinery demo[/] lake={root}  sample web: {len(served.seeds())} sites on "
            "loopback; materializing the asset graph with Dagster"
        )
        config = demo_config(served.seeds(), steps)
        for name, extra in (asset_config or {}).items():
            config[name] = config.get(name, {}) | extra
        results = materialize_graph(root, config, dagster_home=dagster_home, console=console)
    n_checks = sum(len(r.checks) for r in results)
    table = Table(
        title=f"Refinery demo: {len(results)} assets and {n_checks} checks in "
        f"{time.perf_counter() - started:.0f} s (lake {root})"
    )
    table.add_column("asset", no_wrap=True)
    table.add_column("s", justify="right")
    table.add_column("checks", justify="right")
    table.add_column("summary (path: Dagster metadata)")
    for r in results:
        ok = sum(r.checks.values())
        checks = f"{ok}/{len(r.checks)} ok" if r.checks else ""
        table.add_row(r.name, f"{r.seconds:.1f}", checks, r.summary)
    console.print(table)
    return results
