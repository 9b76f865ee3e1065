"""Dagster on a real PostgreSQL: DAGSTER_PG_URL selects Postgres run, event-log and schedule
storage (pipelines/instance.py); runs and materializations recorded there survive a restart of
Dagster (a new process opening the instance). Without the variable the instance stays SQLite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.instance import PG_URL_ENV, psycopg2_url
from tests.ops import pgserver

ROOT = Path(__file__).resolve().parents[2]


def test_url_is_translated_for_psycopg2_and_bad_urls_name_the_variable_and_fix():
    assert (
        psycopg2_url("postgresql://u:p%40ss@db.example:5433/dagster")
        == "postgresql+psycopg2://u:p%40ss@db.example:5433/dagster"
    )
    assert psycopg2_url("postgres://u@h/d").startswith("postgresql+psycopg2://u@h/d")
    assert psycopg2_url("postgresql+psycopg2://u@h/d") == "postgresql+psycopg2://u@h/d"
    socket_url = psycopg2_url("postgresql://u@/d?host=/run/postgresql")
    assert socket_url == "postgresql+psycopg2://u@/d?host=%2Frun%2Fpostgresql"
    with pytest.raises(ValueError, match=r"DAGSTER_PG_URL=mysql://u:\*\*\*@h/d: scheme 'mysql'"):
        psycopg2_url("mysql://u:secret@h/d")
    with pytest.raises(ValueError, match="psycopg2"):
        psycopg2_url("postgresql+psycopg://u@h/d")  # psycopg 3: dagster-postgres cannot use it
    with pytest.raises(ValueError, match="names no database"):
        psycopg2_url("postgresql://u:secret@h:5432")
    with pytest.raises(ValueError, match="names no host"):
        psycopg2_url("postgresql://u@/d")
    with pytest.raises(ValueError, match="not a database URL") as err:
        psycopg2_url("secret-not-a-url")
    assert "secret" not in str(err.value).split("(")[0]  # the value is never echoed


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    return home


def test_without_the_variable_the_instance_is_sqlite_under_dagster_home(tmp_path, monkeypatch):
    from dagster import DagsterInstance

    from pipelines.instance import RefineryInstance, storage_kind

    monkeypatch.delenv(PG_URL_ENV, raising=False)
    home = _home(tmp_path)
    with DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance, RefineryInstance)
        assert storage_kind(instance) == "sqlite"
    assert (home / "history" / "runs.db").exists()


def test_a_bad_url_fails_when_the_instance_opens(tmp_path, monkeypatch):
    from dagster import DagsterInstance

    monkeypatch.setenv(PG_URL_ENV, "mysql://u:pw@127.0.0.1/d")
    with pytest.raises(ValueError, match="DAGSTER_PG_URL=mysql://u:\\*\\*\\*@127.0.0.1/d"):
        DagsterInstance.from_config(str(_home(tmp_path)))


@pytest.fixture()
def postgres():
    with pgserver.running() as server:
        yield server


READ_BACK = """
import json
from dagster import AssetKey, DagsterInstance
from pipelines.instance import storage_kind
with DagsterInstance.get() as instance:
    runs = instance.get_runs()
    print(json.dumps({
        "storage": storage_kind(instance),
        "schedule_storage": type(instance.schedule_storage).__name__,
        "runs": sorted(r.status.value for r in runs),
        "assets": sorted(k.to_user_string() for k in instance.get_asset_keys()),
        "sample_web_path": instance.get_latest_materialization_event(AssetKey("sample_web"))
        .asset_materialization.metadata["path"].value,
    }))
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_runs_and_materializations_survive_a_restart_on_real_postgres(
    postgres, tmp_path, monkeypatch
):
    from dagster import AssetKey, DagsterInstance

    from pipelines.graph import build_definitions
    from pipelines.instance import storage_kind

    home = _home(tmp_path)
    lake = tmp_path / "lake"
    monkeypatch.setenv(PG_URL_ENV, postgres.url("dagster"))  # postgresql://, password escaped
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    defs = build_definitions("local", root=lake)
    from dagster import materialize

    with DagsterInstance.get() as instance:
        assert storage_kind(instance) == "postgres"
        for name in ("sample_web", "retrieval_documents"):
            result = materialize(
                list(defs.assets),
                selection=[name],
                instance=instance,
                resources=defs.resources,
            )
            assert result.success, name
        assert instance.get_latest_materialization_event(AssetKey("sample_web")) is not None

    # Nothing went to SQLite: the runs are in PostgreSQL's tables.
    assert not (home / "history" / "runs.db").exists()
    with postgres.connect("dagster") as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM runs WHERE status = 'SUCCESS'")
        assert cur.fetchone()[0] == 2
        cur.execute(
            "SELECT count(*) FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'"
        )
        assert cur.fetchone()[0] == 2
        cur.execute("SELECT to_regclass('public.instigators') IS NOT NULL")  # schedule storage
        assert cur.fetchone()[0]

    # "Restart Dagster": a new process opens the instance from DAGSTER_HOME and the same URL.
    out = subprocess.run(
        [sys.executable, "-c", READ_BACK],
        env=dict(os.environ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["storage"] == "postgres"
    assert seen["schedule_storage"] == "PostgresScheduleStorage"
    assert seen["runs"] == ["SUCCESS", "SUCCESS"]
    assert seen["assets"] == ["retrieval_documents", "sample_web"]
    assert seen["sample_web_path"].startswith(str(lake))
