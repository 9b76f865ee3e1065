"""The demo: serve the sample web, then materialize the whole asset graph with Dagster.

No list of steps is written here: the runs come from the graph (`pipelines.graph`), in
topological order, one run per partition for partitioned assets. The only demo-specific things
are run config values (the served seeds, a short crawl delay, training steps). The runs, their
materializations and check evaluations land in the Dagster instance of $DAGSTER_HOME (default:
the project's dagster_home/), so `make ui` then shows the run that just happened.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from common import lake

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# The sample web is on loopback: a short delay keeps the demo quick; robots and Crawl-delay apply.
DEMO_CRAWL_DELAY_S = 0.1
DEMO_ROBOTS_GIVE_UP_S = 15.0
# Where a demo run records the port it served the sample web on (`_serve_on_the_lakes_port`).
DEMO_PORT_FILE = Path("logs") / "demo-sample-web.port"
# Enough steps for each run's held-out loss to fall clearly (what its check judges) and for the
# multimodal run's image evidence, and no more: training is most of the demo's time (a step of
# the tiny model is about 0.43 s on 2 cores). On the sixth fresh demo's lake, 150 pretraining
# steps took the mixture-weighted held-out loss 8.33 -> 6.69 (300: 6.48), and CPT's margin on it
# grew (80 steps: 6.93 -> 6.73; after 300 pretraining steps, 100 CPT steps moved it 0.05-0.29);
# 100 multimodal steps grew the image gap 0.005 -> 0.018 with text loss +1.7% (tolerance 5%);
# 40 long-context steps 5.99 -> 5.37, late-query loss 6.97 -> 6.24.
DEMO_TRAIN_STEPS = {
    "pretrained_model": 150,
    "cpt_model": 80,
    "multimodal_model": 100,
    "long_context_model": 40,
}
DEMO_RETRIEVAL_EVAL_DOCS = 64
DEMO_IMAGE_DELAY_S = 0.05
DEMO_CLIP_STEPS = 60
DEMO_CHARTS = 10  # one of each chart type
DEMO_BLOCKLIST_DIR = "blocklists"  # under the lake: the URL lists the demo's filter reads


@dataclass
class AssetResult:
    """One materialized asset of the demo: its name, run time, summary line and dataset path."""

    name: str
    seconds: float
    summary: str
    output: str
    checks: dict[str, bool]
    warnings: list[str] = field(default_factory=list)  # failed non-blocking checks, described


class DemoFailed(RuntimeError):
    """A demo run failed: `lines` say what failed and why (asset, check, figures, where to look,
    what to do); the full trace is in the log file the last line names."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines


def _innermost(error):
    """The user's exception inside Dagster's wrappers (a SerializableErrorInfo chain)."""
    while error is not None and error.cause is not None and error.cls_name.startswith("Dagster"):
        error = error.cause
    return error


def _figures(metadata, limit: int = 6) -> str:
    parts = []
    for key, value in list((metadata or {}).items())[:limit]:
        value = getattr(value, "value", value)
        if isinstance(value, float):
            value = f"{value:.4g}"
        parts.append(f"{key}={value}")
    return ", ".join(parts)


def _failure_lines(result, label: str, checks_by_key, log_path: Path | None) -> list[str]:
    """A few lines on what failed in one run: failed blocking checks first, else failed steps."""
    paths = {}
    for ev in result.get_asset_materialization_events():
        mat = ev.event_specific_data.materialization
        if "path" in mat.metadata:
            paths[mat.asset_key.to_user_string()] = mat.metadata["path"].value
    where = f"full log: {log_path}" if log_path else "full trace: the Dagster instance"
    lines = [f"demo run {label} failed"]
    failed_checks = [ev for ev in checks_by_key if not ev.passed]
    for ev in failed_checks:
        asset = ev.asset_key.to_user_string()
        lines.append(f"  check {asset}.{ev.check_name} failed: {ev.description or ''}".rstrip())
        if ev.metadata:
            lines.append(f"    figures: {_figures(ev.metadata)}")
        path = paths.get(asset)
        if path:
            lines.append(f"    data: {path}")
    if not failed_checks:
        for ev in result.get_step_failure_events():
            error = _innermost(ev.event_specific_data.error)
            message = (error.message or "").strip().splitlines() if error else []
            first = message[0] if message else "no message"
            name = error.cls_name if error else ""
            if name and not first.startswith(name):
                first = f"{name}: {first}"
            lines.append(f"  step {ev.step_key} failed: {first}")
    lines.append(
        f"  {where}; fix the cause and run `make demo` again (`make ui` shows the runs and checks)"
    )
    return lines


@contextlib.contextmanager
def _output_to(log_path: Path | None):
    """Send this process's and its children's stdout/stderr (Dagster's event log lines, Beam's and
    the browser's output, tracebacks) to `log_path`; yield a file on the original terminal for
    the demo's own lines. No log path: nothing is redirected."""
    if log_path is None:
        yield None
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    terminal = os.fdopen(os.dup(saved[0]), "w", buffering=1)
    streams = sys.stdout, sys.stderr
    with log_path.open("ab", buffering=0) as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        text = os.fdopen(os.dup(log.fileno()), "w", buffering=1)
        sys.stdout = sys.stderr = text  # Python-level writers too (pytest swaps sys.stdout)
        try:
            yield terminal
        finally:
            text.flush()  # left open: a logging handler made meanwhile may still hold it
            sys.stdout, sys.stderr = streams
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            terminal.close()


def demo_config(
    seeds: list[str],
    train_steps: dict[str, int],
    root: str | Path | None = None,
    blocklist: str | Path | None = None,
) -> dict[str, dict[str, Any]]:
    """Config per asset (by asset name) for the demo; everything else keeps its defaults. With
    the lake `root`, the filter decontaminates against the benchmark that leaked into the sample
    web (`sampleweb.evals`, written by the sample_web asset before the filter runs); with a
    `blocklist` directory, its URL step reads those lists (`sampleweb.blocklist`)."""
    config: dict[str, dict[str, Any]] = {
        "raw_pages": {
            "seeds": seeds,
            "delay": DEMO_CRAWL_DELAY_S,
            "allow_private_networks": True,
            # The sample web is served by this process, on the port the lake's last run used
            # when it is free: when it was not, a host whose robots.txt does not answer (a URL a
            # killed run queued, on that run's port) is not coming back, so it is given up
            # after DEMO_ROBOTS_GIVE_UP_S, not the default hour.
            "extra": {"robots_give_up_s": DEMO_ROBOTS_GIVE_UP_S},
        },
        "long_context_model": {"retrieval_eval_docs": DEMO_RETRIEVAL_EVAL_DOCS},
        # the sample web's images are on loopback too
        "image_pairs": {"allow_private_networks": True, "delay": DEMO_IMAGE_DELAY_S},
        "clip_model": {"steps": DEMO_CLIP_STEPS, "batch_size": 32},
        "synthetic_charts": {"n": DEMO_CHARTS},
    }
    for name, steps in train_steps.items():
        config.setdefault(name, {})["steps"] = steps
    if root is not None:
        from common.lake import stage_dir
        from sampleweb.evals import FILE

        evals = stage_dir("sampleweb", Path(root)) / FILE
        config["filtered_documents"] = {"decontaminate": [str(evals)]}
    if blocklist is not None:
        config.setdefault("filtered_documents", {})["blocklist"] = str(blocklist)
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


def prepare_dagster_home(dagster_home: Path | None = None) -> Path:
    """The Dagster home the demo records its runs in and `refinery ui` shows: `dagster_home`,
    else $DAGSTER_HOME, else the project's dagster_home/ (created, with the project's
    dagster.yaml when it has none), as an absolute path."""
    from common.lake import check_directory

    project_home = PROJECT_ROOT / "dagster_home"
    home = Path(dagster_home or os.environ.get("DAGSTER_HOME") or project_home)
    check_directory(home, "--dagster-home" if dagster_home else "$DAGSTER_HOME")
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():  # the project's instance settings (SQLite storage)
        shutil.copyfile(project_home / "dagster.yaml", home / "dagster.yaml")
    return home.resolve()


def _instance(dagster_home: Path | None):
    from dagster import DagsterInstance

    home = prepare_dagster_home(dagster_home)
    os.environ["DAGSTER_HOME"] = str(home)
    return DagsterInstance.get(), home


def materialize_graph(
    root: Path,
    config_by_asset: dict[str, dict[str, Any]],
    *,
    dagster_home: Path | None = None,
    console: Console | None = None,
    log_path: Path | None = None,
) -> list[AssetResult]:
    """Materialize every asset of the graph into the lake at `root`, recording the runs in the
    Dagster instance; return one result per asset (the last partition's, for partitioned ones).

    A failed step or a failed blocking check stops the demo with DemoFailed (a few lines: what
    failed and why, where to look); a failed non-blocking check is a warning on its asset."""
    from dagster import materialize

    from pipelines.graph import build_definitions

    defs = build_definitions("local", root=root)
    instance, home = _instance(dagster_home)
    assets = list(defs.assets)
    op_of = {k.to_user_string(): a.node_def.name for a in assets for k in a.keys}
    blocking = {
        (spec.asset_key.to_user_string(), spec.name): spec.blocking
        for a in assets
        for spec in a.check_specs
    }
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
                raise_on_error=False,
            )
            evaluations = result.get_asset_check_evaluations()
            blocking_failed = [
                ev for ev in evaluations if not ev.passed and blocking.get(_check_id(ev), True)
            ]
            if not result.success or blocking_failed:
                _log_traces(result)
                raise DemoFailed(_failure_lines(result, label, blocking_failed, log_path))
            checks: dict[str, dict[str, bool]] = {}
            warnings: dict[str, list[str]] = {}
            for ev in evaluations:
                name = ev.asset_key.to_user_string()
                checks.setdefault(name, {})[ev.check_name] = ev.passed
                if not ev.passed:
                    warnings.setdefault(name, []).append(
                        f"{ev.check_name} (non-blocking) failed: {ev.description or ''}"
                    )
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
                    warnings=warnings.get(name, []),
                )
                if console:
                    console.print(f"{name}: {results[name].summary}", markup=False)
                    for warning in results[name].warnings:
                        console.print(f"  warning: {warning}", markup=False, style="yellow")
    order = [k.to_user_string() for k in defs.resolve_asset_graph().toposorted_asset_keys]
    return [results[n] for n in order if n in results]


def _check_id(ev) -> tuple[str, str]:
    return ev.asset_key.to_user_string(), ev.check_name


def _log_traces(result) -> None:
    """Write every failed step's full trace to stderr (the log file while the demo runs)."""
    for ev in result.get_step_failure_events():
        error = ev.event_specific_data.error
        if error is not None:
            print(f"--- step {ev.step_key} failed:\n{error.to_string()}", file=sys.stderr)


def run_demo(
    root: Path | None = None,
    console: Console | None = None,
    *,
    train_steps: tuple[int, ...] | None = None,
    dagster_home: Path | None = None,
    asset_config: dict[str, dict[str, Any]] | None = None,
    log_path: Path | None = None,
) -> list[AssetResult]:
    """Serve the sample web on loopback and materialize the whole graph on it; print a table.

    train_steps overrides the (pretrain, cpt, multimodal, long-context) step counts, e.g. for a
    quick check; three values are (pretrain, cpt, long-context) with multimodal at its default.
    asset_config adds config per asset name on top of the demo's (e.g. the captioner's steps).
    log_path: where Dagster's event log, the stages' log lines and every trace go (default
    `<lake>/logs/demo-<time>.log`; the terminal shows one line per asset and the table). A
    given console keeps everything on the console (no redirection), as tests want.
    """
    root = (root or lake.lake_root()).resolve()
    root.mkdir(parents=True, exist_ok=True)
    if console is None and log_path is None:
        log_path = root / "logs" / time.strftime("demo-%Y%m%d-%H%M%S.log")
    with _output_to(log_path) as terminal:
        if terminal is not None:
            console = Console(file=terminal, force_terminal=terminal.isatty())
            console.print(f"[dim]Dagster's event log and every trace go to {log_path}[/]")
        return _run_demo(
            root, console or Console(), train_steps, dagster_home, asset_config, log_path
        )


def _serve_on_the_lakes_port(web, root):
    """The sample web served on the port this lake's last demo run served it on, when that
    port is free (else a new one, recorded for the next run): a killed demo's crawl resumes
    with the URLs it queued still answering, instead of retrying a dead port's pages and
    tripping the circuit breaker of their server, which is the live port's too (the resumed
    crawl of a shard took 300 s, not 5)."""
    from sampleweb import serve

    record = Path(root) / DEMO_PORT_FILE
    try:
        port = int(record.read_text())
    except (OSError, ValueError):  # none yet, or a write a kill cut short
        port = 0
    served = None
    if 0 < port < 65536:
        with contextlib.suppress(OSError):  # taken by another process meanwhile
            served = serve(web, port=port)
    if served is None:
        served = serve(web)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(f"{served.port}\n")
    return served


def _run_demo(root, console, train_steps, dagster_home, asset_config, log_path):
    from common.urlblock import write_lists
    from sampleweb import build_web
    from sampleweb.blocklist import blocklist_entries

    steps = dict(DEMO_TRAIN_STEPS)
    if train_steps:
        names = list(DEMO_TRAIN_STEPS)
        if len(train_steps) == 3:
            names.remove("multimodal_model")
        steps.update(zip(names, train_steps, strict=True))
    started = time.perf_counter()
    web = build_web()
    with _serve_on_the_lakes_port(web, root) as served:
        console.print(
            f"[bold]Refinery demo[/] lake={root}  sample web: {len(served.seeds())} sites on "
            "loopback; materializing the asset graph with Dagster"
        )
        # A user's URL blocklist that names the web's spam pages (found after the crawl): the
        # filter's first step drops them as url_blocked:spam.
        lists = write_lists(
            Path(root) / DEMO_BLOCKLIST_DIR, blocklist_entries(web, served.base_url)
        )
        config = demo_config(served.seeds(), steps, root, lists)
        for name, extra in (asset_config or {}).items():
            config[name] = config.get(name, {}) | extra
        results = materialize_graph(
            root, config, dagster_home=dagster_home, console=console, log_path=log_path
        )
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
        if r.warnings:
            checks += f" ({len(r.warnings)} warning)"
        table.add_row(r.name, f"{r.seconds:.1f}", checks, r.summary)
    console.print(table)
    return results
