"""Dagster resources: typed, configurable objects picked per environment."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dagster import ConfigurableResource, EnvVar

from pipelines import lake


class LakeResource(ConfigurableResource):
    """Where the lake lives; empty root means $REFINERY_HOME or ./lake."""

    root: str = ""

    def path(self) -> Path:
        return Path(self.root).resolve() if self.root else lake.lake_root()

    def stage_dir(self, stage: str) -> Path:
        return lake.stage_dir(stage, self.path())


class BeamRunnerResource(ConfigurableResource):
    """Which Beam runner executes batch pipelines, and its options (e.g. --job_endpoint=...)."""

    runner: str = "DirectRunner"
    options: list[str] = []

    @property
    def runner_or_none(self) -> str | None:
        """The runner for stages that run in process unless given one (DirectRunner: in process)."""
        return None if self.runner == "DirectRunner" and not self.options else self.runner

    def pipeline_args(self) -> list[str]:
        return [f"--runner={self.runner}", *self.options]


class BrowserResource(ConfigurableResource):
    """The headless browser used for rendering: executable (found automatically) and pages in flight."""

    executable_path: str = ""
    pages_in_flight: int = 4
    page_timeout_s: float = 20.0

    @property
    def executable_or_none(self) -> str | None:
        return self.executable_path or None


class TeacherResource(ConfigurableResource):
    """An OpenAI-compatible chat endpoint used as teacher/grader. Empty base_url means disabled."""

    base_url: str = ""
    model: str = ""
    api_key_env: str = "REFINERY_TEACHER_API_KEY"

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env)


ENVIRONMENTS = ("local", "cluster")


def default_resources() -> dict[str, Any]:
    """The embedded defaults: the local lake, DirectRunner, auto-found Chromium, no teacher."""
    return resources_for("local")


def resources_for(env: str | None = None, root: str | Path | None = None) -> dict[str, Any]:
    """The resource set of one environment, chosen by `env` or $REFINERY_ENV (default `local`).

    local: the embedded defaults (./lake or $REFINERY_HOME, DirectRunner, Chromium found on the
    machine, no teacher). cluster: everything from the environment, so one deployment setting
    switches it: REFINERY_HOME (may be a remote path for the Beam workers), REFINERY_BEAM_RUNNER
    and REFINERY_BEAM_OPTIONS (space-separated, e.g. `--dask_client_address=host:8786`),
    REFINERY_TEACHER_URL / _MODEL. The Dagster instance itself (runs, events, schedules) lives in
    $DAGSTER_HOME/dagster.yaml: SQLite locally, Postgres on a cluster. `root` overrides the
    local lake root (tests).
    """
    from pipelines.graph import LakeIOManager

    env = env or os.environ.get("REFINERY_ENV") or "local"
    if env == "local":
        here = str(root or "")
        return {
            "lake": LakeResource(root=here),
            "io_manager": LakeIOManager(root=here),
            "beam": BeamRunnerResource(),
            "browser": BrowserResource(),
            "teacher": TeacherResource(),
        }
    if env == "cluster":
        root = EnvVar("REFINERY_HOME")
        return {
            "lake": LakeResource(root=root),
            "io_manager": LakeIOManager(root=root),
            "beam": BeamRunnerResource(
                runner=EnvVar("REFINERY_BEAM_RUNNER"),
                options=os.environ.get("REFINERY_BEAM_OPTIONS", "").split(),
            ),
            "browser": BrowserResource(),
            "teacher": TeacherResource(
                base_url=EnvVar("REFINERY_TEACHER_URL"), model=EnvVar("REFINERY_TEACHER_MODEL")
            ),
        }
    raise ValueError(f"REFINERY_ENV={env!r}: choose one of {', '.join(ENVIRONMENTS)}")
