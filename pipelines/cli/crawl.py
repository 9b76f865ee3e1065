"""`refinery crawl`: the polite, robots-aware crawler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

# Flag -> CrawlConfig field. A flag overrides the --config YAML only when given on the command
# line; otherwise the YAML value stands, and CrawlConfig's default applies when neither sets it.
_FLAG_FIELDS = {
    "agent": "agent",
    "training_agent": "training_agent",
    "max_pages": "max_pages",
    "delay": "delay",
    "allow_private_networks": "allow_private_networks",
    "concurrency": "concurrency",
    "per_host_connections": "per_host_connections",
    "politeness_key": "politeness_key",
    "shard_root": "shard_root",
}


def merge_config(
    explicit: dict[str, Any], yaml_config: dict[str, Any], defaults: dict[str, Any]
) -> dict[str, Any]:
    """Precedence: explicit flag, then the YAML file, then the flag's default."""
    return {**defaults, **yaml_config, **explicit}


def _given(ctx: typer.Context, param: str) -> bool:
    """True when a flag was set on the command line (or its environment variable), not defaulted."""
    source = ctx.get_parameter_source(param)
    # Typer vendors its own click: compare the enum by name, not by class.
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def register(app: typer.Typer) -> None:
    """Add the `crawl` command to the root app."""

    @app.command("crawl")
    def crawl_cmd(
        ctx: typer.Context,
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
            float, typer.Option("--delay", help="Min seconds between requests to one server.")
        ] = 1.0,
        allow_private_networks: Annotated[
            bool, typer.Option("--allow-private-networks", help="Allow loopback/private addresses.")
        ] = False,
        resume: Annotated[
            bool, typer.Option("--resume", help="Continue a crawl in --out.")
        ] = False,
        concurrency: Annotated[
            int, typer.Option("--concurrency", help="Requests in flight at once (all servers).")
        ] = 64,
        per_host_connections: Annotated[
            int,
            typer.Option(
                "--per-host-connections", min=1, help="Requests in flight at once to one server."
            ),
        ] = 1,
        politeness_key: Annotated[
            str,
            typer.Option(
                "--politeness-key",
                help="What one politeness slot covers: ip (resolved address), domain (registered "
                "domain) or host (host:port).",
            ),
        ] = "ip",
        shard: Annotated[
            str, typer.Option("--shard", help="K/N: only hosts with hash(host) % N == K.")
        ] = "0/1",
        shard_root: Annotated[
            Path | None,
            typer.Option(
                "--shard-root",
                help="Directory shared by all shards: links to other shards' hosts go to "
                "outbox/to-<j>/ there (default: the parent of an --out named shard=<k>).",
            ),
        ] = None,
        config_file: Annotated[
            Path | None, typer.Option("--config", help="YAML file with more CrawlConfig fields.")
        ] = None,
        quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
    ) -> None:
        """Crawl from seeds, obeying robots.txt for two tokens, politely, into WARC + pages.parquet."""
        import yaml
        from pydantic import ValidationError
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        from crawlers.crawl import CrawlConfig
        from pipelines.stages.crawl import read_seeds, run_crawl

        try:
            k, n = (int(x) for x in shard.split("/"))
        except ValueError as exc:
            raise typer.BadParameter(f"--shard {shard!r}: expected K/N, e.g. 0/4") from exc
        if config_file is not None and not config_file.exists():
            raise typer.BadParameter(f"--config {config_file}: file does not exist")
        try:
            loaded = yaml.safe_load(config_file.read_text()) if config_file else {}
        except yaml.YAMLError as exc:
            raise typer.BadParameter(f"--config {config_file}: not valid YAML ({exc})") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise typer.BadParameter(
                f"--config {config_file}: expected a mapping of CrawlConfig fields"
            )
        values = {
            "agent": agent,
            "training_agent": training_agent,
            "max_pages": max_pages,
            "delay": delay,
            "allow_private_networks": allow_private_networks,
            "concurrency": concurrency,
            "per_host_connections": per_host_connections,
            "politeness_key": politeness_key,
            "shard_root": str(shard_root) if shard_root is not None else None,
        }
        explicit, defaults = {}, {}
        for param, field in _FLAG_FIELDS.items():
            (explicit if _given(ctx, param) else defaults)[field] = values[param]
        config = merge_config(explicit, dict(loaded or {}), defaults)
        if _given(ctx, "shard") or ("shard" not in config and "shards" not in config):
            config.update(shard=k, shards=n)
        try:
            cfg = CrawlConfig.model_validate(config)
        except ValidationError as exc:
            where = f"--config {config_file} / flags" if config_file else "flags"
            raise typer.BadParameter(f"{where}: {exc}") from exc
        console = Console(stderr=True)
        with Progress(TextColumn("[bold]crawl"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                      TimeElapsedColumn(), console=console, disable=quiet) as bar:  # fmt: skip
            task = bar.add_task("crawl", total=cfg.max_pages, info="")

            def progress(ev: dict) -> None:
                bar.update(
                    task,
                    completed=ev["fetched"],
                    info=f"{ev['status']} {ev['url'][-60:]} queued={ev['queued']}",
                )

            summary = run_crawl(
                read_seeds(seeds), out, config=cfg, resume=resume, progress=progress
            )
        typer.echo(json.dumps(summary, indent=2))
