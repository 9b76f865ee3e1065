"""A real, throwaway PostgreSQL server for tests: Debian's `postgresql` package, `initdb` on a
temporary data directory, the postmaster on a free loopback port (and a Unix socket in the data
directory), password authentication. Stopped by its PID.

As root, PostgreSQL refuses to run, so the server runs as the `postgres` OS user that Debian's
package creates (or `nobody`), and its data directory is made outside pytest's private tmp dirs.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

INSTALL_HINT = (
    "install Debian's PostgreSQL server: `apt-get install -y postgresql` "
    "(scripts/bootstrap.sh does this for `make test` when run as root)"
)


def pg_bindir() -> Path:
    """The directory of initdb and postgres: $REFINERY_PG_BINDIR, the newest
    /usr/lib/postgresql/<v>/bin, or wherever `initdb` is on PATH."""
    explicit = os.environ.get("REFINERY_PG_BINDIR")
    candidates = [Path(explicit)] if explicit else []
    candidates += [
        Path(p)
        for p in sorted(
            glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
        )[::-1]
    ]
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(os.path.realpath(on_path)).parent)
    for d in candidates:
        if (d / "initdb").is_file() and (d / "postgres").is_file():
            return d
    where = explicit or "/usr/lib/postgresql/*/bin or PATH"
    raise FileNotFoundError(f"no PostgreSQL initdb/postgres in {where}: {INSTALL_HINT}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PgServer:
    data_dir: Path
    port: int
    user: str
    password: str
    pid: int
    proc: subprocess.Popen

    def url(self, db: str) -> str:
        """The standard postgresql://user:password@host:port/db URL (password percent-encoded)."""
        return (
            f"postgresql://{quote(self.user, safe='')}:{quote(self.password, safe='')}"
            f"@127.0.0.1:{self.port}/{db}"
        )

    def connect(self, db: str = "postgres"):
        import psycopg2

        return psycopg2.connect(
            host="127.0.0.1", port=self.port, user=self.user, password=self.password, dbname=db
        )

    def create_database(self, name: str) -> None:
        conn = self.connect()
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()

    def stop(self, timeout: float = 30) -> None:
        """Fast shutdown (SIGINT) of the postmaster by its PID; SIGKILL if it outlives timeout."""
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def _os_user() -> tuple[int, int] | None:
    """(uid, gid) to run the server as when we are root; None when we are not."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise RuntimeError("running as root and no `postgres` or `nobody` user to run PostgreSQL as")


def start(user: str = "refinery", password: str = "s3cret@pg/1") -> PgServer:
    """initdb a temporary cluster and start its postmaster; the caller must `stop` it."""
    bindir = pg_bindir()
    ids = _os_user()
    data = Path(tempfile.mkdtemp(prefix="refinery-pg-"))
    pwfile = data / "pwfile"
    pwfile.write_text(password + "\n")
    cluster = data / "cluster"
    as_user: dict = {}
    if ids:
        os.chown(data, *ids)
        os.chown(pwfile, *ids)
        as_user = {"user": ids[0], "group": ids[1], "extra_groups": []}
    env = dict(os.environ, LC_ALL="C", LANG="C")
    init = subprocess.run(
        [
            str(bindir / "initdb"),
            "-D",
            str(cluster),
            "-U",
            user,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--no-sync",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=data,
        **as_user,
    )
    pwfile.unlink()
    if init.returncode:
        shutil.rmtree(data, ignore_errors=True)
        raise RuntimeError(f"initdb failed ({init.returncode}): {init.stderr[-2000:]}")
    port = _free_port()
    log = open(data / "postgres.log", "ab")
    proc = subprocess.Popen(
        [
            str(bindir / "postgres"),
            "-D",
            str(cluster),
            "-p",
            str(port),
            "-k",
            str(data),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=100",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=data,
        **as_user,
    )
    log.close()
    server = PgServer(data, port, user, password, proc.pid, proc)
    deadline = time.monotonic() + 60
    while True:
        try:
            server.connect().close()
            return server
        except Exception as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                server.stop()
                tail = (data / "postgres.log").read_text(errors="replace")[-2000:]
                shutil.rmtree(data, ignore_errors=True)
                raise RuntimeError(f"postgres did not start ({exc}); its log: {tail}") from exc
            time.sleep(0.2)


def remove(server: PgServer) -> None:
    server.stop()
    shutil.rmtree(server.data_dir, ignore_errors=True)


@contextmanager
def running(database: str = "dagster") -> Iterator[PgServer]:
    """A started server with `database` created; stopped and removed on the way out, and checked
    to be gone (no postmaster left behind by a test)."""
    server = start()
    try:
        server.create_database(database)
        yield server
    finally:
        remove(server)
    assert server.proc.poll() is not None, f"postgres PID {server.pid} still running"
