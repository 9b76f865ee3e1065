"""A DAGSTER_PG_URL that parses but does not connect (wrong password, nothing listening) fails
as the instance opens, in one line naming the variable and libpq's reason, its password masked:
not after dagster-postgres's retries as "too many retries for DB connection"."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from urllib.parse import quote

import pytest

from pipelines.instance import PG_URL_ENV
from tests.ops import pgserver

ROOT = Path(__file__).resolve().parents[2]


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    return home


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_nothing_listening_names_the_variable_and_the_reason(tmp_path, monkeypatch):
    from dagster import DagsterInstance

    url = f"postgresql://dagster:s3cret@127.0.0.1:{_closed_port()}/dagster"
    monkeypatch.setenv(PG_URL_ENV, url)
    with pytest.raises(ValueError) as err:
        DagsterInstance.from_config(str(_home(tmp_path)))
    line = str(err.value)
    assert line.startswith(f"{PG_URL_ENV}=postgresql://dagster:***@127.0.0.1:"), line
    assert "Connection refused" in line and "\n" not in line and "s3cret" not in line


@pytest.fixture()
def postgres():
    with pgserver.running() as server:
        yield server


def test_a_wrong_password_on_a_real_server_is_one_line_naming_the_variable(
    tmp_path, monkeypatch, postgres
):
    from dagster import DagsterInstance

    wrong = "wr0ng@pw"
    url = f"postgresql://{postgres.user}:{quote(wrong, safe='')}@127.0.0.1:{postgres.port}/dagster"
    monkeypatch.setenv(PG_URL_ENV, url)
    with pytest.raises(ValueError) as err:
        DagsterInstance.from_config(str(_home(tmp_path)))
    line = str(err.value)
    assert line.startswith(f"{PG_URL_ENV}=postgresql://{postgres.user}:***@127.0.0.1:"), line
    assert "password authentication failed" in line, line
    assert "\n" not in line and "wr0ng" not in line and "too many retries" not in line
