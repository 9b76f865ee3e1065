"""`refinery filter` (annotate, scrub and de-duplicate documents) and `refinery quality train`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add `filter` and the `quality` group to the root app."""

    @app.command(
        "filter", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
    )
    def filter_cmd(
        ctx: typer.Context,
        docs: Annotated[Path, Opt("--docs", help="Directory holding documents.parquet (extract output).")],
        out: Annotated[Path, Opt("--out", help="Output directory (annotated.parquet, documents.parquet, ...).")],
        runner: Annotated[str, Opt("--runner", help="Beam runner (DirectRunner, PortableRunner, FlinkRunner, ...).")] = "DirectRunner",
        config: Annotated[Path | None, Opt("--config", help="Filter config YAML (default: built-in defaults).")] = None,
        models: Annotated[Path | None, Opt("--models", help="Directory of <lang>.bin quality models (default: the default set, built on first use under <lake>/models/quality/default).")] = None,
    ) -> None:  # fmt: skip
        """Language ID, PII scrub, heuristics, safety, quality and dedup; unknown options go to Beam."""
        from pipelines.stages.filter import run_filter

        try:
            summary = run_filter(
                docs,
                out,
                models_dir=models,
                config=config,
                beam_args=[f"--runner={runner}", *ctx.args],
            )
        except (FileNotFoundError, ValueError, KeyError) as exc:
            typer.secho(f"error: {exc}", fg="red", err=True)
            raise typer.Exit(2) from exc
        typer.echo(summary["funnel_markdown"])
        typer.echo(
            f"{summary['rows_in']} in, {summary['rows_kept']} kept, dedup rate {summary['dedup_rate']:.3f}, "
            f"{summary['tokens_kept']} tokens kept -> {out}"
        )

    quality = typer.Typer(help="Per-language quality classifiers (fastText).", no_args_is_help=True)

    @quality.command("train")
    def train(
        lang: Annotated[str, Opt("--lang", help="ISO 639-1 language code, e.g. de.")],
        labels: Annotated[str, Opt("--labels", help="Labelled documents: .parquet/.jsonl file or `sampleweb[:SEED]`.")],
        out: Annotated[Path, Opt("--out", help="Model path (.bin); metadata JSON is written beside it.")],
        source: Annotated[str, Opt("--source", help="Label source: reference, reference+shuffled (the default models' recipe), llm or benchmark.")] = "reference",
        seed: Annotated[int, Opt("--seed")] = 0,
        threshold: Annotated[float | None, Opt("--threshold", help="Score cut in [0,1].")] = None,
        keep_rate: Annotated[float | None, Opt("--keep-rate", help="Share of the crawl to keep, on out-of-fold scores (sets the cut).")] = None,
        positive_recall: Annotated[float | None, Opt("--positive-recall", help="Share of the positive class to keep, on out-of-fold scores (sets the cut). Default: the lower of the --keep-rate 0.95 and --positive-recall 0.98 cuts.")] = None,
        teacher_url: Annotated[str, Opt("--teacher-url", envvar="REFINERY_TEACHER_URL", help="OpenAI-compatible base URL (llm source).")] = "",
        teacher_model: Annotated[str, Opt("--teacher-model", envvar="REFINERY_TEACHER_MODEL")] = "",
        targets: Annotated[Path | None, Opt("--targets", help="Target examples, one per line (benchmark source).")] = None,
        top_frac: Annotated[float, Opt("--top-frac", help="Share of top-ranked documents used as positives (benchmark).")] = 0.3,
    ) -> None:  # fmt: skip
        """Train one language's classifier and print its held-out evaluation report."""
        import os

        from pipelines.stages.filter import run_quality_train

        try:
            meta = run_quality_train(
                lang, labels, out, source=source, seed=seed, threshold=threshold, keep_rate=keep_rate,
                positive_recall=positive_recall, teacher_url=teacher_url, teacher_model=teacher_model,
                teacher_api_key=os.environ.get("REFINERY_TEACHER_API_KEY"), targets=targets, top_frac=top_frac,
            )  # fmt: skip
        except (FileNotFoundError, ValueError, KeyError) as exc:
            typer.secho(f"error: {exc}", fg="red", err=True)
            raise typer.Exit(2) from exc
        m = {k: ("n/a" if v is None else f"{v:.3f}") for k, v in meta["metrics"].items()
             if k not in ("scorer", "n_test")}  # fmt: skip
        typer.echo(
            f"{lang} ({meta['label_source']}): train {meta['n_train']}, held-out {meta['n_test']}; "
            f"scorer {meta['metrics']['scorer']} on the held-out split: "
            f"AUC {m['auc']}, precision {m['precision']}, recall {m['recall']} at threshold {m['threshold']}"
        )
        typer.echo(json.dumps({"model": str(out), "metadata": str(Path(out).with_suffix(".json"))}))

    app.add_typer(quality, name="quality")
