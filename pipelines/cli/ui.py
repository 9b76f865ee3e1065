"""`refinery ui`: open the Dagster UI on the project's dagster_home/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def register(app: typer.Typer) -> None:
    @app.command("ui")
    def ui(
        host: Annotated[str, typer.Option(help="Address the webserver binds.")] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="Port of the webserver.")] = 3000,
        dagster_home: Annotated[Path, typer.Option(help="DAGSTER_HOME to use.")] = PROJECT_ROOT
        / "dagster_home",
    ) -> None:
        """Start `dagster dev` (webserver + daemon) on dagster_home/ and the project's workspace."""
        env = dict(os.environ, DAGSTER_HOME=str(dagster_home.resolve()))
        dagster = Path(sys.executable).with_name("dagster")
        cmd = [
            str(dagster),
            "dev",
            "-w",
            str(dagster_home / "workspace.yaml"),
            "-h",
            host,
            "-p",
            str(port),
        ]
        raise typer.Exit(subprocess.call(cmd, env=env, cwd=PROJECT_ROOT))
