"""The `refinery` command line.

Each module in this package registers its command group on the root app through a
`register(app)` function; heavy imports stay inside the commands so `refinery --help` is fast.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer

app = typer.Typer(
    name="refinery",
    help="Refinery: build LLM pretraining data and run the training that consumes it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _register_all() -> None:
    from pipelines.cli_derive import add_stage_commands
    from pipelines.stages import GROUPS, STAGES

    add_stage_commands(app, STAGES, GROUPS)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(app)


_register_all()


def main() -> None:
    """Entry point of the `refinery` console script."""
    app()
