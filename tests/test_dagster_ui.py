"""The whole graph from the Dagster UI, in a real browser: `dagster dev` (webserver and daemon)
on a free loopback port with a copy of dagster_home/, the sample web served on loopback, and
headless Chromium doing what a user does on a first afternoon: open the global asset lineage,
"Materialize all", pick all partitions, launch the backfill. Then every asset must have
succeeded and every asset check passed, read through the GraphQL API, with screenshots of the
lineage, the filter funnel and a check.

The demo's settings (the served seeds, tiny training) reach the UI's launches through
$REFINERY_ASSET_CONFIG (config defaults per asset; a UI backfill brings no run config).
Screenshots land in the test's tmp dir, and in bench/results/ui/ when REFINERY_SCREENSHOTS=1.
It takes several minutes (every run is a fresh process). Dagster's backfill daemon ticks every
30 s (`dagster._daemon.controller.DEFAULT_DAEMON_INTERVAL_SECONDS`, not configurable); here the
daemon process alone gets a 2 s tick through a sitecustomize on its PYTHONPATH, so the test waits
for runs, not for ticks (the backfill's logic is Dagster's own, unchanged).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
TINY_STEPS = 6  # per training asset: the UI test checks the plumbing, not the models
# ... except the multimodal stage, whose checks ask for evidence about images (a warning here)
MULTIMODAL_STEPS = 30
CRAWL_DELAY_S = 0.05  # of the demo's 0.1 s: politeness is tested by the crawl tests
CAPTIONER_STEPS = 100  # of the demo's 400: captions are made and accounted, not good
DONE = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(base: str, query: str, variables: dict | None = None) -> dict:
    req = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": query, "variables": variables or {}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        out = json.loads(resp.read())
    if out.get("errors"):
        raise AssertionError(f"GraphQL errors: {out['errors']}")
    return out["data"]


def _wait_for_code_location(base: str, deadline: float) -> None:
    query = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"
    last = None
    while time.monotonic() < deadline:
        try:
            entries = _graphql(base, query)["workspaceOrError"]["locationEntries"]
            last = entries
            if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                errors = [
                    e for e in entries if e["locationOrLoadError"]["__typename"] == "PythonError"
                ]
                assert not errors, f"code location failed to load: {errors}"
                return
        except (OSError, KeyError, TypeError):
            pass
        time.sleep(1)
    raise AssertionError(f"dagster code location did not load in time: {last}")


DAEMON_TICK_S = 2
SITECUSTOMIZE = f"""import sys
if sys.orig_argv[1:3] == ["-m", "dagster._daemon"]:  # the daemon of `dagster dev`, nothing else
    import dagster._daemon.controller as controller
    controller.DEFAULT_DAEMON_INTERVAL_SECONDS = {DAEMON_TICK_S}
"""


@contextlib.contextmanager
def dagster_dev(tmp: Path, env_extra: dict[str, str]):
    """`dagster dev` on a copy of dagster_home/ and a free loopback port (its daemon ticking every
    DAEMON_TICK_S); on exit it is stopped (SIGINT) and every process it started is waited for, or
    killed, by PID."""
    home = tmp / "dagster_home"
    shutil.copytree(ROOT / "dagster_home", home)
    port = _free_port()
    site = tmp / "daemon_tick"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, DAGSTER_HOME=str(home), PYTHONPATH=path, **env_extra)
    log = open(tmp / "dagster_dev.log", "wb")
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("dagster")),
            "dev",
            "-w",
            str(home / "workspace.yaml"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_code_location(base, time.monotonic() + 300)
        # the newsletter prompt of a first visit would cover the page
        _graphql(base, "mutation { setNuxSeen }")
        yield base
    finally:
        children = []
        with contextlib.suppress(psutil.NoSuchProcess):
            children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        for child in children:
            try:
                child.wait(timeout=10)
            except psutil.TimeoutExpired:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        log.close()


def _wait_for_text(page, names: list[str], timeout_s: float = 90) -> None:
    """Poll the page's visible text until every name shows up (the UI renders asynchronously)."""
    deadline = time.monotonic() + timeout_s
    missing = names
    while time.monotonic() < deadline:
        text = page.inner_text("body")
        missing = [n for n in names if n not in text]
        if not missing:
            return
        page.wait_for_timeout(1000)
    raise AssertionError(f"not shown in the UI: {missing}")


BACKFILLS = "{ partitionBackfillsOrError { ... on PartitionBackfills { results { id status numPartitions } } } }"
RUNS = "{ runsOrError { ... on Runs { results { runId status assetSelection { path } tags { key value } } } } }"
ASSETS = """{ assetNodes { assetKey { path } isPartitioned
  partitionStats { numMaterialized numPartitions numFailed }
  assetMaterializations(limit: 1) { runId }
  assetChecksOrError { ... on AssetChecks { checks { name } } } } }"""
CHECK_RUNS = """query($key: AssetKeyInput!, $name: String!) {
  assetCheckExecutions(assetKey: $key, checkName: $name, limit: 50) { status partition } }"""


def _wait_for_backfill(base: str, deadline: float, log) -> dict:
    """Poll until the one backfill ends; log its progress (runs by status) as it goes."""
    backfill: dict = {}
    while time.monotonic() < deadline:
        found = _graphql(base, BACKFILLS)["partitionBackfillsOrError"]["results"]
        assert len(found) <= 1, found
        runs = _graphql(base, RUNS)["runsOrError"]["results"]
        states: dict[str, int] = {}
        for r in runs:
            states[r["status"]] = states.get(r["status"], 0) + 1
        log.write(f"{time.strftime('%H:%M:%S')} backfill={found} runs={states}\n")
        log.flush()
        if found:
            backfill = found[0]
            if backfill["status"] in DONE and not states.get("STARTED"):
                return {"backfill": backfill, "runs": runs}
        time.sleep(3)
    raise AssertionError(f"the backfill did not end in time: {backfill}")


def _failed_runs(runs: list[dict]) -> list[str]:
    return [
        f"{r['runId']} ({', '.join(p['path'][-1] for p in r['assetSelection'] or [])})"
        for r in runs
        if r["status"] != "SUCCESS"
    ]


@pytest.mark.timeout(2400)
def test_the_whole_graph_materializes_from_the_ui(tmp_path):
    from playwright.sync_api import sync_playwright

    from common.browser import CHROMIUM_ARGS, find_chromium
    from pipelines.demo import DEMO_TRAIN_STEPS, demo_config
    from pipelines.graph import build_definitions
    from sampleweb import build_web, serve

    lake = tmp_path / "lake"
    shots = tmp_path / "screenshots"
    shots.mkdir()
    graph = build_definitions("local", root=lake).resolve_asset_graph()
    expected = sorted(k.to_user_string() for k in graph.get_all_asset_keys())
    groups = sorted({graph.get(k).group_name for k in graph.get_all_asset_keys()})
    partitioned = {
        k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).is_partitioned
    }
    checks = sorted((c.asset_key.to_user_string(), c.name) for c in graph.asset_check_keys)
    assert partitioned and checks
    (n_parts,) = {
        len(graph.get(k).partitions_def.get_partition_keys())
        for k in graph.get_all_asset_keys()
        if graph.get(k).is_partitioned
    }

    with serve(build_web()) as served, open(tmp_path / "progress.log", "w") as progress:
        steps = {name: TINY_STEPS for name in DEMO_TRAIN_STEPS} | {
            "multimodal_model": MULTIMODAL_STEPS
        }
        config = demo_config(served.seeds(), steps)
        config["captioner_model"] = {"steps": CAPTIONER_STEPS}
        config["raw_pages"]["delay"] = CRAWL_DELAY_S
        (tmp_path / "ui_config.yaml").write_text(yaml.safe_dump(config))
        env = {
            "REFINERY_HOME": str(lake),
            "REFINERY_ASSET_CONFIG": str(tmp_path / "ui_config.yaml"),
        }
        with dagster_dev(tmp_path, env) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(find_chromium()), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1600, "height": 2400})
                page.goto(f"{base}/assets", wait_until="networkidle")
                _wait_for_text(page, expected)  # the catalog lists every asset
                page.set_viewport_size({"width": 1600, "height": 1000})

                # The global asset lineage: every group shown; Materialize all, all partitions.
                page.goto(f"{base}/asset-groups", wait_until="networkidle")
                _wait_for_text(page, groups)
                page.get_by_role("button").filter(
                    has_text=re.compile(r"^\s*Materialize all")
                ).first.click()
                dialog = page.get_by_role("dialog")
                dialog.get_by_text(f"Launch runs to materialize {len(expected)} assets").wait_for()
                dialog.get_by_role("button", name="All", exact=True).click()
                _wait_for_text(page, [f"{n_parts} partitions"])
                page.screenshot(path=str(shots / "launch_backfill.png"))
                dialog.get_by_role("button", name="Launch backfill").click()

                ended = _wait_for_backfill(base, time.monotonic() + 2100, progress)
                assert ended["backfill"]["status"] == "COMPLETED_SUCCESS", (
                    f"backfill {ended['backfill']}; runs not successful: "
                    f"{_failed_runs(ended['runs'])}; see {tmp_path / 'dagster_dev.log'}"
                )
                assert not _failed_runs(ended["runs"])

                # Every asset materialized (every partition of the partitioned ones) ...
                nodes = {
                    "/".join(n["assetKey"]["path"]): n for n in _graphql(base, ASSETS)["assetNodes"]
                }
                assert sorted(nodes) == expected
                for name, node in nodes.items():
                    if node["isPartitioned"]:
                        stats = node["partitionStats"]
                        assert stats["numMaterialized"] == stats["numPartitions"] > 0, (name, stats)
                    else:
                        assert node["assetMaterializations"], f"{name} was not materialized"
                # ... and every check passed, once per partition for partitioned assets.
                shown = sorted(
                    (name, c["name"])
                    for name, n in nodes.items()
                    for c in n["assetChecksOrError"].get("checks", [])
                )
                assert shown == checks
                for asset, check in checks:
                    runs = _graphql(base, CHECK_RUNS, {"key": {"path": [asset]}, "name": check})[
                        "assetCheckExecutions"
                    ]
                    want = n_parts if asset in partitioned else 1
                    assert runs and all(r["status"] == "SUCCEEDED" for r in runs), (
                        asset,
                        check,
                        runs,
                    )
                    # the check specs are not partitioned: one execution per partition's run
                    assert len(runs) == want, (asset, check, runs)

                # Screenshots: the lineage after the run, the filter funnel, a passed check.
                page.goto(f"{base}/asset-groups", wait_until="networkidle")
                _wait_for_text(page, groups)
                page.wait_for_timeout(2000)
                page.screenshot(path=str(shots / "lineage.png"))
                page.goto(f"{base}/assets/filtered_documents", wait_until="networkidle")
                _wait_for_text(page, ["funnel", "kept"])
                page.screenshot(path=str(shots / "funnel.png"), full_page=True)
                asset, check = checks[0]
                page.goto(f"{base}/assets/{asset}?view=checks", wait_until="networkidle")
                _wait_for_text(page, [check, "Passed"])
                page.screenshot(path=str(shots / "check.png"), full_page=True)
            finally:
                browser.close()

    for name in ("lineage", "funnel", "check"):
        assert (shots / f"{name}.png").stat().st_size > 10_000, name
    if os.environ.get("REFINERY_SCREENSHOTS"):
        out = ROOT / "bench" / "results" / "ui"
        out.mkdir(parents=True, exist_ok=True)
        for png in shots.glob("*.png"):
            shutil.copyfile(png, out / png.name)
