"""`refinery ui`: open the Dagster UI on the project's dagster_home/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def register(app: typer.Typer) -> None:
    @app.command("ui")
    def ui(
        host: str = typer.Option("127.0.0.1", help="Address the webserver binds."),
        port: int = typer.Option(3000, help="Port of the webserver."),
        dagster_home: Path = typer.Option(PROJECT_ROOT / "dagster_home", help="DAGSTER_HOME to use."),
    ) -> None:
        """Start `dagster dev` (webserver + daemon) on dagster_home/ and the project's workspace."""
        env = dict(os.environ, DAGSTER_HOME=str(dagster_home.resolve()))
        dagster = Path(sys.executable).with_name("dagster")
        cmd = [str(dagster), "dev", "-w", str(dagster_home / "workspace.yaml"), "-h", host, "-p", str(port)]
        raise typer.Exit(subprocess.call(cmd, env=env, cwd=PROJECT_ROOT))
