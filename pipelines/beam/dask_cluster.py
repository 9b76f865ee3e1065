"""A throwaway `dask.distributed` cluster on loopback: one scheduler and N worker processes.

For tests and benchmarks of the DaskRunner path: the scheduler and workers are separate
processes (`dask scheduler`, `dask worker`), so the driver's memory is the driver's alone.
Started with free ports and no dashboards; stopped by process-group id on exit. Should the
parent be killed before it can stop them, the scheduler exits after 10 idle minutes and the
workers a minute after losing it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def local_dask_cluster(
    n_workers: int = 2, threads: int = 1, host: str = "127.0.0.1", timeout: float = 60.0
) -> Iterator[str]:
    """Yield the scheduler address (`tcp://HOST:PORT`) of a fresh cluster; stop it afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="refinery-dask-"))
    sched_file = tmp / "scheduler.json"
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
    procs: list[subprocess.Popen] = []
    log = open(tmp / "cluster.log", "wb")  # noqa: SIM115 - closed in finally
    try:
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_scheduler",
                    "--host",
                    host,
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(sched_file),
                    "--idle-timeout",
                    "600s",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        )
        deadline = time.time() + timeout
        while not sched_file.exists():
            if procs[0].poll() is not None or time.time() > deadline:
                raise RuntimeError(f"dask scheduler did not start; see {tmp / 'cluster.log'}")
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    address,
                    "--host",
                    host,
                    "--nworkers",
                    str(n_workers),
                    "--nthreads",
                    str(threads),
                    "--no-dashboard",
                    "--local-directory",
                    str(tmp / "workers"),
                    "--death-timeout",
                    "60",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        )
        _wait_for_workers(address, n_workers, deadline)
        yield address
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=30)
        log.close()


def _wait_for_workers(address: str, n: int, deadline: float) -> None:
    from distributed import Client

    with Client(address, timeout=max(1.0, deadline - time.time())) as client:
        client.wait_for_workers(n, timeout=max(1.0, deadline - time.time()))
