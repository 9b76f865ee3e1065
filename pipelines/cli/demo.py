"""`refinery demo`: run every stage on the bundled sample web."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo(
        lake_dir: Annotated[
            Path | None,
            typer.Option("--lake", help="Lake root (default: $REFINERY_HOME or ./lake)."),
        ] = None,
        train_steps: Annotated[
            str | None,
            typer.Option(
                help="Training steps as PRETRAIN,CPT,LONG (default 300,100,100, the tiny config's own)."
            ),
        ] = None,
    ) -> None:
        """Serve the sample web on loopback and run every stage on it, end to end, into the lake."""
        from pipelines.demo import run_demo

        steps = None
        if train_steps:
            try:
                steps = tuple(int(x) for x in train_steps.split(","))
                assert len(steps) == 3 and all(n > 0 for n in steps)
            except (ValueError, AssertionError):
                raise typer.BadParameter(
                    "--train-steps takes three positive integers, e.g. 300,100,100"
                ) from None
        run_demo(lake_dir.resolve() if lake_dir else None, train_steps=steps)
