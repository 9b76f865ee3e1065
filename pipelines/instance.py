"""The Dagster instance of Refinery: SQLite under $DAGSTER_HOME, or Postgres when DAGSTER_PG_URL
is set.

`dagster_home/dagster.yaml` names `RefineryInstance` as its `instance_class`. A dagster.yaml
cannot branch on an environment variable, but an instance class supplies the storage defaults,
so this one does: with `DAGSTER_PG_URL` unset (or empty) they are Dagster's own (SQLite files in
$DAGSTER_HOME/history, schedules, storage); with it set to a standard
`postgresql://user:password@host:port/db` URL, run, event-log and schedule storage all go to that
database through dagster-postgres.

dagster-postgres drives PostgreSQL with psycopg2, while SQLAlchemy 2.1 reads a bare
`postgresql://` as psycopg 3, so the URL is translated to `postgresql+psycopg2://` here. The
instance reference that Dagster hands to run workers and code servers names only the variable
(`url_env`), never the URL, so the password does not end up on a command line; each process
reads the variable from its own environment. A Unix socket works too:
`postgresql://user@/db?host=/path/to/socket_dir`.

An explicit `storage:` section in dagster.yaml still wins over these defaults.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import yaml
from dagster import DagsterInstance, Field
from dagster._core.instance.ref import InstanceRef
from dagster._serdes import ConfigurableClassData
from dagster_postgres import DagsterPostgresStorage

PG_URL_ENV = "DAGSTER_PG_URL"
_EXAMPLE = "postgresql://user:password@host:5432/dagster"
# Query keys whose values an error line never shows (libpq's password, passfile, sslpassword...).
_SECRET_KEYS = ("password", "passfile", "secret", "token")


def _shown(parsed: Any) -> str:
    """`parsed` (a SQLAlchemy URL) as an error line may show it: the userinfo password and every
    secret-looking query value (`_SECRET_KEYS`, e.g. `?password=`) replaced by ***."""
    base = parsed.set(query={}).render_as_string(hide_password=True)
    if not parsed.query:
        return base
    pairs = []
    for key, value in parsed.query.items():
        secret = any(word in key.lower() for word in _SECRET_KEYS)
        for v in value if isinstance(value, tuple) else (value,):
            pairs.append(f"{key}={'***' if secret else v}")
    return f"{base}?{'&'.join(pairs)}"


def psycopg2_url(url: str, env: str = PG_URL_ENV) -> str:
    """`url` (postgresql://, postgres:// or postgresql+psycopg2://) as the psycopg2 URL that
    dagster-postgres needs; a ValueError naming `env` and the fix for anything else."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url.strip())
    except ArgumentError:
        raise ValueError(
            f"{env}: not a database URL (its value is not shown: it may hold a password); "
            f"set it like {_EXAMPLE}, or unset it for SQLite under $DAGSTER_HOME"
        ) from None
    shown = _shown(parsed)
    if parsed.drivername not in ("postgresql", "postgres", "postgresql+psycopg2"):
        raise ValueError(
            f"{env}={shown}: scheme {parsed.drivername!r} is not PostgreSQL through psycopg2, "
            f"which dagster-postgres uses; write it as {_EXAMPLE} (postgresql:// is translated "
            "to postgresql+psycopg2://)"
        )
    if not parsed.database:
        raise ValueError(f"{env}={shown}: names no database; end it with /<db>, as in {_EXAMPLE}")
    if not parsed.host and "host" not in parsed.query:
        raise ValueError(
            f"{env}={shown}: names no host; give host:port ({_EXAMPLE}) or a socket directory "
            "(postgresql://user@/db?host=/run/postgresql)"
        )
    return parsed.set(drivername="postgresql+psycopg2").render_as_string(hide_password=False)


class RefineryPostgresStorage(DagsterPostgresStorage):
    """dagster-postgres storage (runs, event log, schedules) at the URL in the environment
    variable `url_env`, translated for psycopg2 by `psycopg2_url`."""

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {"url_env": Field(str, default_value=PG_URL_ENV, is_required=False)}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> RefineryPostgresStorage:
        env = config_value.get("url_env", PG_URL_ENV)
        url = os.environ.get(env, "").strip()
        if not url:
            raise ValueError(
                f"{env} is not set in this process, but the Dagster instance was opened with "
                f"Postgres storage: export {env}={_EXAMPLE} for every Dagster process "
                "(webserver, daemon, run workers)"
            )
        check_connection(url, env)
        return cls(postgres_url=psycopg2_url(url, env), inst_data=inst_data)


def check_connection(url: str, env: str = PG_URL_ENV, timeout_s: int = 10) -> None:
    """One connection to the database at `url` (a `psycopg2_url` input), so that a wrong
    password, host or database fails as the instance opens, in one line naming `env` and libpq's
    reason, not after dagster-postgres's retries as "too many retries for DB connection"."""
    import sqlalchemy
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    parsed = make_url(psycopg2_url(url, env))
    args = {} if "connect_timeout" in parsed.query else {"connect_timeout": timeout_s}
    engine = sqlalchemy.create_engine(parsed, poolclass=NullPool, connect_args=args)
    try:
        engine.connect().close()
    except sqlalchemy.exc.DBAPIError as exc:
        reason = " ".join(str(exc.orig).split())
        if parsed.password:  # libpq does not echo it, but an error line must never show it
            reason = reason.replace(str(parsed.password), "***")
        raise ValueError(
            f"{env}={_shown(make_url(url.strip()))}: cannot connect ({reason}); fix the user, password, host, "
            "port or database in the URL, or start the server"
        ) from None
    finally:
        engine.dispose()


def storage_defaults(base_dir: str) -> dict[str, ConfigurableClassData | None]:
    """Dagster's instance defaults for `base_dir`, with Postgres storage when DAGSTER_PG_URL is
    set (validated here, so a bad URL fails when the instance opens, naming the variable)."""
    defaults = dict(InstanceRef.config_defaults(base_dir))
    url = os.environ.get(PG_URL_ENV, "").strip()
    if url:
        psycopg2_url(url)
        defaults["storage"] = ConfigurableClassData(
            __name__,
            RefineryPostgresStorage.__name__,
            yaml.dump({"url_env": PG_URL_ENV}, default_flow_style=False),
        )
    return defaults


class RefineryInstance(DagsterInstance):
    """Dagster's instance with `storage_defaults`: SQLite under $DAGSTER_HOME, or Postgres when
    DAGSTER_PG_URL is set."""

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return {}

    @staticmethod
    def config_defaults(base_dir: str) -> Mapping[str, ConfigurableClassData | None]:
        return storage_defaults(base_dir)


def storage_kind(instance: DagsterInstance) -> str:
    """'postgres' or 'sqlite': what an open instance keeps its runs in."""
    storage = instance.run_storage
    name = type(getattr(storage, "_storage", storage)).__name__  # legacy wrappers hold the real one
    return "postgres" if "Postgres" in name else "sqlite" if "Sqlite" in name else name
