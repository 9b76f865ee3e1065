"""`refinery crawl`: the polite, robots-aware crawler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the `crawl` command to the root app."""

    @app.command("crawl")
    def crawl_cmd(
        seeds: Annotated[Path, typer.Option("--seeds", help="File with one seed URL per line.")],
        out: Annotated[
            Path, typer.Option("--out", help="Output directory (warc/, pages.parquet).")
        ],
        agent: Annotated[str, typer.Option("--agent", help="Crawl product token.")] = "RefineryBot",
        training_agent: Annotated[
            str, typer.Option("--training-agent", help="Training product token.")
        ] = "RefineryBot-Extended",
        max_pages: Annotated[
            int | None,
            typer.Option("--max-pages", help="Content pages (robots/sitemaps not counted)."),
        ] = None,
        delay: Annotated[
            float, typer.Option("--delay", help="Min seconds between requests to one host.")
        ] = 1.0,
        allow_private_networks: Annotated[
            bool, typer.Option("--allow-private-networks", help="Allow loopback/private addresses.")
        ] = False,
        resume: Annotated[
            bool, typer.Option("--resume", help="Continue a crawl in --out.")
        ] = False,
        concurrency: Annotated[
            int, typer.Option("--concurrency", help="Hosts fetched at once.")
        ] = 64,
        shard: Annotated[
            str, typer.Option("--shard", help="K/N: only hosts with hash(host) % N == K.")
        ] = "0/1",
        config_file: Annotated[
            Path | None, typer.Option("--config", help="YAML file with more CrawlConfig fields.")
        ] = None,
        quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
    ) -> None:
        """Crawl from seeds, obeying robots.txt for two tokens, politely, into WARC + pages.parquet."""
        import yaml
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        from pipelines.stages.crawl import read_seeds, run_crawl

        try:
            k, n = (int(x) for x in shard.split("/"))
        except ValueError as exc:
            raise typer.BadParameter(f"--shard {shard!r}: expected K/N, e.g. 0/4") from exc
        config = yaml.safe_load(config_file.read_text()) if config_file else {}
        if config is not None and not isinstance(config, dict):
            raise typer.BadParameter(
                f"--config {config_file}: expected a mapping of CrawlConfig fields"
            )
        config = dict(config or {})
        config.update(agent=agent, training_agent=training_agent, max_pages=max_pages, delay=delay,
                      allow_private_networks=allow_private_networks, concurrency=concurrency,
                      shard=k, shards=n)  # fmt: skip
        console = Console(stderr=True)
        with Progress(TextColumn("[bold]crawl"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                      TimeElapsedColumn(), console=console, disable=quiet) as bar:  # fmt: skip
            task = bar.add_task("crawl", total=max_pages, info="")

            def progress(ev: dict) -> None:
                bar.update(
                    task,
                    completed=ev["fetched"],
                    info=f"{ev['status']} {ev['url'][-60:]} queued={ev['queued']}",
                )

            summary = run_crawl(
                read_seeds(seeds), out, config=config, resume=resume, progress=progress
            )
        typer.echo(json.dumps(summary, indent=2))
