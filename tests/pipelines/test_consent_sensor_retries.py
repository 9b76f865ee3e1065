"""The `consent_recheck` sensor requests a mixture again while its manifest lags the ledger: a
failed (or never launched) rebuild is not forgotten once the cursor has moved, one request per
tick, none while a requested run of that version is still pending."""

from __future__ import annotations

import json

import pytest
from dagster import DagsterInstance, DagsterRunStatus, RunRequest, SkipReason, build_sensor_context
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.utils import make_new_run_id

from common.consent import append_ledger, ledger_files, ledger_version
from pipelines.resources import LakeResource
from pipelines.sensors import CONSENT_TAG, MIXTURE_ASSETS, consent_recheck_sensor


def _manifest(lake, name: str, sha: str | None) -> None:
    mix = lake / "mixtures" / name
    mix.mkdir(parents=True, exist_ok=True)
    entries = [{"lake": "lake", "sha256": sha, "files": 1}] if sha else []
    (mix / "manifest.json").write_text(json.dumps({"consent_ledgers": entries}))


def _add_run(instance, version: str, status: DagsterRunStatus) -> None:
    run = DagsterRun(
        job_name="__ASSET_JOB",
        run_id=make_new_run_id(),
        status=status,
        tags={CONSENT_TAG: version, "refinery/reason": "consent-recheck"},
    )
    instance.add_run(run)


@pytest.fixture
def lake(tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    row = {"url": "http://a.example/x", "training_allowed": False}
    append_ledger(lake, [{**row, "checked_at": "2026-01-01T00:00:00Z"}])
    return lake


def test_lagging_mixture_is_requested_again_after_the_cursor_moved(lake):
    version = ledger_version(ledger_files(lake))["sha256"]
    _manifest(lake, "tiny-pretrain", "0" * 64)  # built before this opt-out
    sensor = consent_recheck_sensor({})
    resources = {"lake": LakeResource(root=str(lake))}

    def tick(instance, cursor):
        ctx = build_sensor_context(instance=instance, cursor=cursor, resources=resources)
        return sensor(ctx), ctx.cursor

    with DagsterInstance.ephemeral() as instance:
        first, cursor = tick(instance, None)
        assert isinstance(first, RunRequest)
        assert first.run_key == f"consent-{version[:16]}"
        assert {k.to_user_string() for k in first.asset_selection} == set(MIXTURE_ASSETS)

        # That run never rebuilt the mixture: the next tick requests the built one that lags,
        # under a new run key (Dagster would skip the first one's).
        again, cursor = tick(instance, cursor)
        assert isinstance(again, RunRequest), again
        assert [k.to_user_string() for k in again.asset_selection] == ["pretrain_mixture"]
        assert again.run_key == f"consent-{version[:16]}-retry1-pretrain_mixture"
        assert again.tags[CONSENT_TAG] == version

        # A requested run of this version is still going: no second request meanwhile.
        _add_run(instance, version, DagsterRunStatus.STARTED)
        waiting, cursor = tick(instance, cursor)
        assert isinstance(waiting, SkipReason) and "STARTED" in waiting.skip_message

        # It failed: the next tick requests again, the never-built mixtures included.
        _add_run(instance, version, DagsterRunStatus.FAILURE)
        retry, cursor = tick(instance, cursor)
        assert isinstance(retry, RunRequest), retry
        assert {k.to_user_string() for k in retry.asset_selection} == set(MIXTURE_ASSETS)
        assert retry.run_key.startswith(f"consent-{version[:16]}-retry2-")

        # Once the mixture honours the version and nothing failed, the sensor skips.
        _add_run(instance, version, DagsterRunStatus.SUCCESS)
        _manifest(lake, "tiny-pretrain", version)
        done, _ = tick(instance, cursor)
        assert isinstance(done, SkipReason)
        assert "no built mixture lags" in done.skip_message


def test_an_older_cursor_and_an_up_to_date_mixture(lake):
    """A cursor of the older form (the bare version) still reads; a mixture that honours the
    new version already is not requested."""
    version = ledger_version(ledger_files(lake))["sha256"]
    _manifest(lake, "tiny-pretrain", version)
    sensor = consent_recheck_sensor({}, ["pretrain_mixture"])
    resources = {"lake": LakeResource(root=str(lake))}
    with DagsterInstance.ephemeral() as instance:
        ctx = build_sensor_context(instance=instance, cursor=version, resources=resources)
        assert isinstance(sensor(ctx), SkipReason)
        ctx = build_sensor_context(instance=instance, cursor=None, resources=resources)
        skip = sensor(ctx)
        assert isinstance(skip, SkipReason) and "every mixture honours it" in skip.skip_message


def test_a_mixture_handle_is_read_against_the_lake_it_is_in(tmp_path):
    """Handles are stored relative to the lake (pipelines.resources); the sensor finds the
    mixture in this lake whatever the working directory, and an absolute one where it says."""
    import json as _json

    from pipelines.resources import HANDLES_DIR
    from pipelines.sensors import mixture_dir

    lake = tmp_path / "lake"
    (lake / HANDLES_DIR).mkdir(parents=True)
    handle = lake / HANDLES_DIR / "pretrain_mixture.json"
    handle.write_text(_json.dumps({"name": "pretrain_mixture", "path": "mixtures/p"}))
    assert mixture_dir(lake, "pretrain_mixture") == lake / "mixtures" / "p"
    handle.write_text(_json.dumps({"name": "pretrain_mixture", "path": str(tmp_path / "out")}))
    assert mixture_dir(lake, "pretrain_mixture") == tmp_path / "out"
