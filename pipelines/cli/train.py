"""`refinery train {pretrain,cpt,long-context}`: train one stage on a mixture into a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

STAGE_HELP = {
    "pretrain": "Pretrain from scratch on the pretraining mixture.",
    "cpt": "Continued pretraining from a pretrain run (--init), fresh optimiser and warm-up.",
    "long-context": "Context lengthening from a cpt run (--init) at a longer seq_len, raised RoPE base.",
}


def _train(
    stage: str,
    config: str,
    data: Path,
    out: Path,
    init: Path | None,
    steps: int | None,
    resume: bool,
) -> None:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from pipelines.stages.train import run_train
    from training.train_config import ConfigError
    from training.trainer import TrainError

    console = Console(stderr=True)
    columns = (
        TextColumn(f"[bold]{stage}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(stage, total=None, info="starting")

        def on_step(step: int, total: int, row: dict | None) -> None:
            info = None
            if row is not None:
                tps = f"{row['tokens_per_s']:,.0f} tok/s" if row["tokens_per_s"] else ""
                info = f"loss {row['loss']:.4f} lr {row['lr']:.2e} {tps}"
            progress.update(task, completed=step, total=total, **({"info": info} if info else {}))

        try:
            s = run_train(
                stage, config, data, out, init=init, steps=steps, resume=resume, on_step=on_step
            )
        except (TrainError, ConfigError, FileNotFoundError, ValueError) as exc:
            progress.stop()
            typer.secho(f"error: {exc}", fg="red", err=True)
            raise typer.Exit(2) from exc
    before, after = s["eval_mean_before"], s["eval_mean"]
    typer.echo(
        f"{stage}: {s['steps']} steps, seq_len {s['seq_len']}, final loss {s['final_loss']:.4f}"
    )
    if before is not None and after is not None:
        typer.echo(f"  held-out loss {before:.4f} -> {after:.4f} (start -> end)")
        for key, loss in s["eval"].items():
            typer.echo(f"    {key}: {s['eval_before'].get(key, float('nan')):.4f} -> {loss:.4f}")
    typer.echo(f"  checkpoint: {s['checkpoint']}")
    typer.echo(f"  loss curve: {s['loss_plot']}")


def _make_command(stage: str):
    def command(
        config: Annotated[
            str,
            typer.Option("--config", help="Training config YAML, or a packaged name: tiny, gpu."),
        ],
        data: Annotated[
            Path, typer.Option("--data", help="Mixture directory (manifest.json, shards/, eval/).")
        ],
        out: Annotated[
            Path, typer.Option("--out", help="Run directory (metrics, eval, checkpoints).")
        ],
        init: Annotated[
            Path | None,
            typer.Option(
                "--init", help="Run directory (its latest checkpoint) or checkpoint file."
            ),
        ] = None,
        steps: Annotated[
            int | None, typer.Option("--steps", min=1, help="Total steps of the run.")
        ] = None,
        resume: Annotated[
            bool,
            typer.Option("--resume", help="Continue the run in --out from its latest checkpoint."),
        ] = False,
    ) -> None:
        _train(stage, config, data, out, init, steps, resume)

    command.__doc__ = STAGE_HELP[stage]
    return command


def retrieval_data(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Parquet to write (default: lake synth/long/retrieval.parquet)."
        ),
    ] = None,
    docs: Annotated[int, typer.Option("--docs", min=1, help="Number of documents.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Generator seed.")] = 0,
    facts: Annotated[int, typer.Option("--facts", min=1, help="Facts stated early.")] = 6,
    queries: Annotated[int, typer.Option("--queries", min=1, help="Late queries.")] = 4,
    filler_min: Annotated[int, typer.Option("--filler-min", min=0)] = 20,
    filler_max: Annotated[
        int, typer.Option("--filler-max", min=0, help="Filler sentences between facts and queries.")
    ] = 30,
    values: Annotated[str, typer.Option("--values", help="digits or words.")] = "digits",
) -> None:
    """Write synthetic long documents for in-context retrieval (facts early, queries late)."""
    from pipelines.stages.train import run_retrieval_data

    try:
        r = run_retrieval_data(out, n_docs=docs, seed=seed, n_facts=facts, n_queries=queries,
                               filler_sentences=(filler_min, filler_max), values=values)  # fmt: skip
    except ValueError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from exc
    typer.echo(
        f"{r['documents']} documents ({r['mean_chars']:.0f} chars on average) -> {r['path']}"
    )


def retrieval_eval(
    run: Annotated[
        list[str],
        typer.Option(
            "--run", help="NAME=RUN_DIR_OR_CHECKPOINT; repeat to compare (cpt=..., lc=...)."
        ),
    ],
    tokenizer: Annotated[Path, typer.Option("--tokenizer", help="The runs' tokenizer.json.")],
    docs: Annotated[int, typer.Option("--docs", min=1, help="Held-out documents.")] = 64,
    seed: Annotated[
        int, typer.Option("--seed", help="Held-out seed (not the training one).")
    ] = 10_000,
    facts: Annotated[int, typer.Option("--facts", min=1)] = 6,
    queries: Annotated[int, typer.Option("--queries", min=1)] = 4,
    filler_min: Annotated[int, typer.Option("--filler-min", min=0)] = 20,
    filler_max: Annotated[int, typer.Option("--filler-max", min=0)] = 30,
    values: Annotated[str, typer.Option("--values", help="digits or words.")] = "digits",
) -> None:
    """Loss on the answers of late queries in held-out retrieval documents, per checkpoint."""
    import json

    from pipelines.stages.train import run_retrieval_eval

    named = {}
    for item in run:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            typer.secho(f"error: --run {item!r}: expected NAME=PATH", fg="red", err=True)
            raise typer.Exit(2)
        named[name] = path
    try:
        result = run_retrieval_eval(named, tokenizer, n_docs=docs, seed=seed, n_facts=facts,
                                    n_queries=queries, filler_sentences=(filler_min, filler_max),
                                    values=values)  # fmt: skip
    except (ValueError, FileNotFoundError) as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from exc
    for name, r in result.items():
        typer.echo(
            f"{name}: late-answer loss {r['loss']:.4f} (without the facts {r['loss_without_facts']:.4f}, "
            f"retrieval gain {r['retrieval_gain']:+.4f}) over {r['answer_tokens']} tokens"
        )
    typer.echo(json.dumps(result))


def register(app: typer.Typer) -> None:
    """Add the `train` group (pretrain, cpt, long-context, retrieval data/eval) to the root app."""
    train = typer.Typer(help="Train the model: pretrain, cpt, long-context.", no_args_is_help=True)
    for stage in STAGE_HELP:
        train.command(stage)(_make_command(stage))
    train.command("retrieval-data")(retrieval_data)
    train.command("retrieval-eval")(retrieval_eval)
    app.add_typer(train, name="train")
