"""REFINERY_ENV=cluster takes the teacher from the environment, optionally as locally: with
REFINERY_TEACHER_URL / _MODEL unset an asset runs (no teacher), it does not fail on a missing
variable; set, the teacher resource carries them."""

from __future__ import annotations

import pytest
from dagster import DagsterInstance, asset, materialize

from pipelines.resources import resources_for


@asset(required_resource_keys={"lake", "teacher"})
def teacher_probe(context) -> None:
    teacher = context.resources.teacher
    context.add_output_metadata({"base_url": teacher.base_url, "model": teacher.model})


def _run(tmp_path, monkeypatch) -> dict:
    monkeypatch.setenv("REFINERY_HOME", str(tmp_path / "lake"))
    monkeypatch.setenv("REFINERY_BEAM_RUNNER", "DirectRunner")
    with DagsterInstance.ephemeral() as instance:
        result = materialize([teacher_probe], instance=instance, resources=resources_for("cluster"))
    assert result.success
    meta = result.asset_materializations_for_node("teacher_probe")[0].metadata
    return {k: v.value for k, v in meta.items()}


def test_cluster_runs_without_a_teacher_configured(tmp_path, monkeypatch):
    monkeypatch.delenv("REFINERY_TEACHER_URL", raising=False)
    monkeypatch.delenv("REFINERY_TEACHER_MODEL", raising=False)
    assert _run(tmp_path, monkeypatch) == {"base_url": "", "model": ""}


@pytest.mark.parametrize("url", ["", "http://127.0.0.1:9/v1"])
def test_cluster_takes_the_teacher_from_the_environment(tmp_path, monkeypatch, url):
    monkeypatch.setenv("REFINERY_TEACHER_URL", url)
    monkeypatch.setenv("REFINERY_TEACHER_MODEL", "tiny-teacher")
    assert _run(tmp_path, monkeypatch) == {"base_url": url, "model": "tiny-teacher"}
