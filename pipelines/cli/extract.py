"""`refinery extract` (render what needs it, then extract documents) and `refinery render`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

_MODES = "auto|never|always"

# Options shared by `extract` and `render`: what the browser's downloader sends and obeys.
AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        help="Crawl product token: User-Agent and robots.txt decisions (default: the crawl's).",
    ),
]
TrainingAgentOpt = Annotated[
    str | None,
    typer.Option(
        "--training-agent",
        help="Training product token, recorded per request (default: the crawl's).",
    ),
]
PrivateOpt = Annotated[
    bool,
    typer.Option(
        "--allow-private-networks",
        help="Let pages' sub-requests reach loopback/private addresses (a page on a private "
        "IP literal may always reach its own origin).",
    ),
]
DelayOpt = Annotated[
    float | None,
    typer.Option(
        "--delay",
        min=0,
        help="Minimum seconds between requests to one server (default: the crawl's).",
    ),
]
SandboxOpt = Annotated[
    str, typer.Option("--sandbox", help="Chromium sandbox: auto|on|off (auto: where possible).")
]
ArchiveOpt = Annotated[
    bool,
    typer.Option(
        "--archive/--no-archive",
        help="Write every sub-resource the pages used as WARC records (OUT/render-*.warc.gz).",
    ),
]


def _render_options(agent, training_agent, allow_private, delay, sandbox, archive) -> dict:
    return {"robots_token": agent, "training_token": training_agent, "delay": delay,
            "allow_private_networks": allow_private, "sandbox": sandbox, "archive": archive}  # fmt: skip


def _teacher(url: str, model: str, hosts: str) -> dict | None:
    if not url:
        return None
    if not model or not hosts:
        raise ValueError(
            "--llm-url needs --llm-model and --llm-hosts (comma-separated hosts to send)"
        )
    return {
        "base_url": url,
        "model": model,
        "api_key": os.environ.get("REFINERY_TEACHER_API_KEY"),
        "hosts": [h.strip() for h in hosts.split(",") if h.strip()],
    }


def register(app: typer.Typer) -> None:
    """Add `extract` and `render` to the root app."""

    @app.command(
        "extract", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
    )
    def extract_cmd(
        ctx: typer.Context,
        crawl: Annotated[
            Path,
            typer.Option(
                "--crawl", help="Crawl output directory (pages.parquet + warc/, or shard=*/)."
            ),
        ],
        out: Annotated[
            Path,
            typer.Option(
                "--out", help="Output directory (documents.parquet, rejects.parquet, ...)."
            ),
        ],
        render: Annotated[
            str, typer.Option("--render", help=f"Which pages to render in Chromium: {_MODES}.")
        ] = "auto",
        rendered: Annotated[
            Path | None,
            typer.Option(
                "--rendered", help="Reuse a render output directory instead of rendering."
            ),
        ] = None,
        pages_in_flight: Annotated[
            int, typer.Option("--pages-in-flight", min=1, help="Pages rendered at once.")
        ] = 4,
        page_timeout: Annotated[
            float, typer.Option("--page-timeout", help="Seconds per page before giving up.")
        ] = 20.0,
        chromium: Annotated[
            str | None,
            typer.Option("--chromium", help="Chromium executable (default: found automatically)."),
        ] = None,
        runner: Annotated[
            str, typer.Option("--runner", help="Beam runner; unknown options go to Beam.")
        ] = "DirectRunner",
        favor: Annotated[
            str, typer.Option("--favor", help="trafilatura mode: balanced|precision|recall.")
        ] = "balanced",
        llm_url: Annotated[
            str,
            typer.Option(
                "--llm-url",
                envvar="REFINERY_TEACHER_URL",
                help="OpenAI-compatible base URL; enables LLM extraction.",
            ),
        ] = "",
        llm_model: Annotated[
            str, typer.Option("--llm-model", envvar="REFINERY_TEACHER_MODEL")
        ] = "",
        llm_hosts: Annotated[
            str,
            typer.Option("--llm-hosts", help="Comma-separated hosts whose pages go to the LLM."),
        ] = "",
        agent: AgentOpt = None,
        training_agent: TrainingAgentOpt = None,
        allow_private_networks: PrivateOpt = False,
        delay: DelayOpt = None,
        sandbox: SandboxOpt = "auto",
        archive: ArchiveOpt = True,
    ) -> None:
        """Render the pages that need it, then extract documents, images, tables and rejects."""
        from pipelines.stages.extract import run_extract

        if render not in ("auto", "never", "always"):
            typer.secho(f"error: --render {render!r}: choose {_MODES}", fg="red", err=True)
            raise typer.Exit(2)
        opts = _render_options(
            agent, training_agent, allow_private_networks, delay, sandbox, archive
        )
        try:
            summary = run_extract(
                crawl, out, render, rendered_dir=rendered, favor=favor,
                pipeline_args=[f"--runner={runner}", *ctx.args],
                teacher=_teacher(llm_url, llm_model, llm_hosts),
                pages_in_flight=pages_in_flight, page_timeout_s=page_timeout, chromium=chromium,
                **opts,
            )  # fmt: skip
        except (FileNotFoundError, ValueError, RuntimeError) as exc:
            typer.secho(f"error: {exc}", fg="red", err=True)
            raise typer.Exit(2) from exc
        typer.echo(json.dumps(summary, indent=2, default=str))

    @app.command("render")
    def render_cmd(
        crawl: Annotated[Path, typer.Option("--crawl", help="Crawl output directory.")],
        out: Annotated[Path, typer.Option("--out", help="Output directory (rendered.parquet).")],
        mode: Annotated[
            str, typer.Option("--mode", help=f"Which pages to render: {_MODES}.")
        ] = "auto",
        pages_in_flight: Annotated[int, typer.Option("--pages-in-flight", min=1)] = 4,
        page_timeout: Annotated[float, typer.Option("--page-timeout")] = 20.0,
        chromium: Annotated[str | None, typer.Option("--chromium")] = None,
        agent: AgentOpt = None,
        training_agent: TrainingAgentOpt = None,
        allow_private_networks: PrivateOpt = False,
        delay: DelayOpt = None,
        sandbox: SandboxOpt = "auto",
        archive: ArchiveOpt = True,
    ) -> None:
        """Render only (the `rendered_pages` stage); extraction can reuse it with --rendered."""
        from pipelines.stages.extract import run_render

        opts = _render_options(
            agent, training_agent, allow_private_networks, delay, sandbox, archive
        )
        try:
            summary = run_render(
                crawl,
                out,
                mode,
                pages_in_flight=pages_in_flight,
                page_timeout_s=page_timeout,
                chromium=chromium,
                **opts,
            )
        except (FileNotFoundError, ValueError, RuntimeError) as exc:
            typer.secho(f"error: {exc}", fg="red", err=True)
            raise typer.Exit(2) from exc
        typer.echo(json.dumps(summary, indent=2))
