"""Dagster resources: typed, configurable objects picked per environment."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import ConfigurableResource

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

    def pipeline_args(self) -> list[str]:
        return [f"--runner={self.runner}", *self.options]


class BrowserResource(ConfigurableResource):
    """The headless browser used for rendering: executable (found automatically) and pages in flight."""

    executable_path: str = ""
    pages_in_flight: int = 4
    page_timeout_s: float = 20.0


class TeacherResource(ConfigurableResource):
    """An OpenAI-compatible chat endpoint used as teacher/grader. Empty base_url means disabled."""

    base_url: str = ""
    model: str = ""
    api_key_env: str = "REFINERY_TEACHER_API_KEY"

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env)


def default_resources() -> dict[str, ConfigurableResource]:
    """The embedded defaults: the local lake, DirectRunner, auto-found Chromium, no teacher."""
    return {
        "lake": LakeResource(),
        "beam": BeamRunnerResource(),
        "browser": BrowserResource(),
        "teacher": TeacherResource(),
    }
