"""`refinery mix build|validate|report` and `refinery tokenizer train`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def _fail(exc: Exception) -> None:
    typer.secho(f"error: {exc}", fg="red", err=True)
    raise typer.Exit(2) from exc


def register(app: typer.Typer) -> None:
    """Add the `mix` and `tokenizer` groups to the root app."""
    mix = typer.Typer(
        help="Mixtures: validate a spec, build shards, report token accounting.",
        no_args_is_help=True,
    )
    tokenizer = typer.Typer(help="The byte-level BPE tokenizer.", no_args_is_help=True)

    @mix.command("validate")
    def validate(
        spec: Annotated[
            str,
            typer.Argument(
                help="Spec YAML path, or a name under training/mixtures (e.g. tiny/pretrain)."
            ),
        ],
        schema_only: Annotated[
            bool, typer.Option("--schema-only", help="Skip the checks against the data.")
        ] = False,
    ) -> None:
        """Validate a mixture spec: fields, weights, paths, columns and `where` predicates."""
        from pipelines.stages.mix import run_mix_validate

        try:
            out = run_mix_validate(spec, check_data=not schema_only)
        except (ValueError, FileNotFoundError) as exc:
            _fail(exc)
        weights = ", ".join(f"{k}={v:.4g}" for k, v in out["weights"].items())
        typer.echo(f"{out['spec']}: valid mixture {out['name']!r} ({weights})")
        for key, n in out["rows_offered"].items():
            typer.echo(f"  {key}: {n:,} training-allowed rows")
        for sf in out.get("shortfalls", []):
            typer.echo(
                f"  shortfall allowed by allow_shortfall: buckets.{sf['bucket']}: {sf['reason']}"
            )

    @mix.command("build")
    def build(
        spec: Annotated[
            str, typer.Argument(help="Spec YAML path, or a name under training/mixtures.")
        ],
        out: Annotated[
            Path,
            typer.Option(
                "--out", help="Mixture directory (shards/, eval/, tokenizer.json, manifest.json)."
            ),
        ],
        runner: Annotated[
            str | None,
            typer.Option("--runner", help="Beam runner (e.g. DirectRunner); default: in process."),
        ] = None,
        beam_arg: Annotated[
            list[str] | None,
            typer.Option("--beam-arg", help="Extra Beam pipeline option, repeatable."),
        ] = None,
    ) -> None:
        """Tokenize, sample, pack and shard a mixture."""
        from pipelines.stages.mix import run_mix_build

        try:
            out_summary = run_mix_build(spec, out, runner=runner, pipeline_args=beam_arg or ())
        except (ValueError, FileNotFoundError) as exc:
            _fail(exc)
        typer.echo(out_summary["markdown"])
        typer.echo(f"-> {out} ({out_summary['seconds']} s); plot {out_summary['plot']}")

    @mix.command("report")
    def report(mix_dir: Annotated[Path, typer.Argument(help="A built mixture directory.")]) -> None:
        """Print the token accounting as a table and write DIR/report.png."""
        from rich.console import Console
        from rich.table import Table

        from pipelines.stages.mix import run_mix_report

        try:
            out = run_mix_report(mix_dir)
        except (ValueError, FileNotFoundError) as exc:
            _fail(exc)
        table = Table(title=f"mixture {out['name']}")
        for col in (
            "bucket",
            "group",
            "weight",
            "available",
            "target",
            "tokens",
            "epochs",
            "share",
        ):
            text_col = col in ("bucket", "group")
            table.add_column(col, justify="left" if text_col else "right", no_wrap=text_col)
        for r in out["rows"]:
            table.add_row(
                r["bucket"], r["group"], "" if r["weight"] is None else f"{r['weight']:.3f}",
                f"{r['available']:,}", f"{r['target']:,}", f"{r['tokens']:,}",
                "" if r["epochs"] is None else f"{r['epochs']:.2f}", f"{r['share']:.4f}",
            )  # fmt: skip
        console = Console()
        console.print(table)
        for line in out["summary"]:
            console.print(line, markup=False)
        console.print(f"plot: {out['plot']}", markup=False)

    @tokenizer.command("train")
    def train(
        out: Annotated[Path, typer.Option("--out", help="tokenizer.json path to write.")],
        vocab_size: Annotated[
            int, typer.Option("--vocab-size", help="Vocabulary size (150000 at scale).")
        ] = 4096,
        sources: Annotated[
            list[str] | None,
            typer.Option(
                "--sources",
                help="Parquet file or glob, repeatable (default: lake filter/documents.parquet).",
            ),
        ] = None,
        sample_tokens: Annotated[
            int, typer.Option("--sample-tokens", help="About how many tokens of text to sample.")
        ] = 2_000_000,
        seed: Annotated[int, typer.Option("--seed")] = 0,
    ) -> None:
        """Train a byte-level BPE tokenizer with the Refinery special tokens."""
        from pipelines.stages.mix import run_tokenizer_train

        try:
            s = run_tokenizer_train(
                out,
                vocab_size=vocab_size,
                sources=sources or None,
                sample_tokens=sample_tokens,
                seed=seed,
            )
        except (ValueError, FileNotFoundError) as exc:
            _fail(exc)
        typer.echo(f"{s['path']}: vocab {s['vocab_size']} from {s['sample_documents']} documents "
                   f"({s['sample_chars']:,} chars); special tokens {s['special_tokens']}")  # fmt: skip

    app.add_typer(mix, name="mix")
    app.add_typer(tokenizer, name="tokenizer")
