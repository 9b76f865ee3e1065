"""The Dagster UI in a real browser: `dagster dev` on a copy of dagster_home/, the asset graph
shown in headless Chromium, and `sample_web` materialized from the UI."""

from __future__ import annotations

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

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(base: str, query: str) -> dict:
    req = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _wait_for_code_location(base: str, deadline: float) -> None:
    query = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"
    last = None
    while time.monotonic() < deadline:
        try:
            entries = _graphql(base, query)["data"]["workspaceOrError"]["locationEntries"]
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


@pytest.fixture()
def dagster_dev(tmp_path):
    """Start `dagster dev` on a free loopback port; stop it and every child it started afterwards."""
    home = tmp_path / "dagster_home"
    shutil.copytree(ROOT / "dagster_home", home)
    lake = tmp_path / "lake"
    port = _free_port()
    env = dict(os.environ, DAGSTER_HOME=str(home), REFINERY_HOME=str(lake))
    log = open(tmp_path / "dagster_dev.log", "wb")
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
        _wait_for_code_location(base, time.monotonic() + 180)
        yield base, lake, tmp_path
    finally:
        children = []
        try:
            children = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            pass
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        for child in children:
            try:
                child.wait(timeout=5)
            except psutil.TimeoutExpired:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        log.close()


def _dismiss_community_dialog(page) -> None:
    skip = page.get_by_role("button", name="Skip")
    try:
        skip.wait_for(timeout=3000)
        skip.click()
    except Exception:  # the dialog only shows on a first visit
        pass


def _wait_for_text(page, names: list[str], timeout_s: float = 60) -> None:
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


def _latest_run_status(base: str) -> str | None:
    data = _graphql(base, "{ runsOrError(limit: 1) { ... on Runs { results { runId status } } } }")
    runs = data["data"]["runsOrError"]["results"]
    return runs[0]["status"] if runs else None


@pytest.mark.timeout(420)
def test_asset_graph_shows_assets_and_sample_web_materializes_from_ui(dagster_dev):
    from playwright.sync_api import sync_playwright

    from crawlers.browser import CHROMIUM_ARGS, find_chromium
    from pipelines.definitions import defs

    base, lake, tmp = dagster_dev
    graph = defs.resolve_asset_graph()
    expected = sorted(k.to_user_string() for k in graph.get_all_asset_keys())
    groups = sorted({graph.get(k).group_name for k in graph.get_all_asset_keys()})
    assert "sample_web" in expected
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(find_chromium()), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 2400})
            page.goto(f"{base}/assets", wait_until="networkidle")
            _dismiss_community_dialog(page)
            _wait_for_text(page, expected)
            page.goto(f"{base}/asset-groups", wait_until="networkidle")
            _dismiss_community_dialog(page)
            _wait_for_text(page, groups)  # the lineage graph shows each asset group
            page.screenshot(path=str(tmp / "asset_graph.png"))

            page.goto(f"{base}/assets/sample_web", wait_until="networkidle")
            _dismiss_community_dialog(page)
            page.get_by_role("button").filter(
                has_text=re.compile(r"^\s*Materialize\s*$")
            ).first.click()
            deadline = time.monotonic() + 300
            status = None
            while time.monotonic() < deadline:
                status = _latest_run_status(base)
                if status in ("SUCCESS", "FAILURE", "CANCELED"):
                    break
                time.sleep(2)
            assert status == "SUCCESS", (
                f"sample_web run ended as {status}; see {tmp / 'dagster_dev.log'}"
            )
            page.reload(wait_until="networkidle")
            _wait_for_text(page, ["Latest materialization", "/sampleweb/labels.parquet"])
            page.screenshot(path=str(tmp / "sample_web_materialized.png"))
        finally:
            browser.close()
    assert (lake / "sampleweb" / "labels.parquet").exists()
    assert (tmp / "asset_graph.png").stat().st_size > 10_000
