"""`refinery sampleweb serve|write`: run the bundled sample web, or write it into the lake."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the `sampleweb` command group to the root app."""
    sub = typer.Typer(
        help="The bundled sample web: serve it on loopback or write it to the lake.",
        no_args_is_help=True,
    )

    @sub.command("serve")
    def serve_cmd(
        port: Annotated[
            int, typer.Option(help="Shared port for every site (0 picks a free one).")
        ] = 0,
        first_octet: Annotated[
            int, typer.Option(help="Site i binds 127.0.0.(first_octet + i).")
        ] = 10,
        seed: Annotated[int, typer.Option(help="Seed of the generated web.")] = 0,
        seeds_out: Annotated[
            Path | None, typer.Option(help="Write the seed URLs here, one per line.")
        ] = None,
        labels_out: Annotated[
            Path | None, typer.Option(help="Write labels.parquet with served URLs.")
        ] = None,
    ) -> None:
        """Serve every site until Ctrl-C (SIGINT) or SIGTERM."""
        from crawlers.sampleweb.__main__ import main

        argv = [
            "serve",
            "--port",
            str(port),
            "--first-octet",
            str(first_octet),
            "--seed",
            str(seed),
        ]
        if seeds_out:
            argv += ["--seeds-out", str(seeds_out)]
        if labels_out:
            argv += ["--labels-out", str(labels_out)]
        raise typer.Exit(main(argv))

    @sub.command("write")
    def write_cmd(
        out: Annotated[
            Path | None, typer.Option(help="Output directory (default: the lake's sampleweb/).")
        ] = None,
        seed: Annotated[int, typer.Option(help="Seed of the generated web.")] = 0,
    ) -> None:
        """Write pages, labels.parquet and sites.json, with manifests."""
        import json

        from pipelines.stages.sampleweb import run_sampleweb_write

        typer.echo(json.dumps(run_sampleweb_write(out, seed=seed), indent=2))

    app.add_typer(sub, name="sampleweb")
