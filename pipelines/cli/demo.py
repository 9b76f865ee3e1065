"""`refinery demo`: run every stage on the bundled sample web."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo(
        lake_dir: Path = typer.Option(None, "--lake", help="Lake root (default: $REFINERY_HOME or ./lake)."),
    ) -> None:
        """Serve the sample web on loopback and run every stage on it, end to end, into the lake."""
        from pipelines.demo import run_demo

        run_demo(lake_dir.resolve() if lake_dir else None)
