"""The demo: serve the sample web and run every stage on it, end to end, into the lake."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pipelines import lake


@dataclass
class DemoState:
    """What the demo's stages hand each other: the lake root, the served web, each stage's output."""

    root: Path
    served: Any = None
    train_steps: tuple[int, ...] = ()
    outputs: dict[str, Path] = field(default_factory=dict)


@dataclass
class StepResult:
    name: str
    seconds: float
    summary: dict[str, Any]
    output: Path | None


def step_sample_web(state: DemoState) -> tuple[dict[str, Any], Path]:
    """Write the sample web and its labels to the lake."""
    from pipelines.stages.sampleweb import run_sampleweb_write

    out = lake.stage_dir("sampleweb", state.root)
    summary = run_sampleweb_write(out)
    return {k: summary[k] for k in ("sites", "content_pages", "images", "languages")}, out


def _fresh(path: Path) -> Path:
    """A demo run starts each stage's output afresh, so reruns never mix old and new files."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def step_crawl(state: DemoState) -> tuple[dict[str, Any], Path]:
    """Crawl the served sample web from its home pages (loopback allowed, short politeness delay)."""
    from pipelines.stages.crawl import run_crawl

    out = _fresh(state.root / lake.STAGE_DIRS["crawl"])
    config = {"delay": DEMO_CRAWL_DELAY_S, "allow_private_networks": True}
    summary = run_crawl(state.served.seeds(), out, config=config)
    keys = ("pages", "fetched", "denied", "skipped", "errors", "pages_per_s")
    return {k: summary[k] for k in keys if k in summary}, out


def step_extract(state: DemoState) -> tuple[dict[str, Any], Path]:
    """Render the pages that need JavaScript and extract every page's main content."""
    from pipelines.stages.extract import run_extract

    out = _fresh(state.root / lake.STAGE_DIRS["extract"])
    summary = run_extract(state.root / lake.STAGE_DIRS["crawl"], out, "auto")
    keys = ("pages", "documents", "rejects", "rendered", "image_refs", "tables")
    return {k: summary[k] for k in keys if k in summary}, out


DEMO_LANGS = ("en", "de", "fr", "es", "ja", "zh")


def step_filter(state: DemoState) -> tuple[dict[str, Any], Path]:
    """Filter with the default quality models: one per language trained from the sample web's
    reference pages, plus the multilingual fallback, built on first use and reused by key."""
    import json

    from filters.quality.default import default_root, ensure_default_models
    from pipelines.stages.filter import run_filter
    from sampleweb.labels import labelled_documents

    models = ensure_default_models(
        default_root(state.root / lake.STAGE_DIRS["quality_models"]), labelled_documents(0)
    )
    out = _fresh(state.root / lake.STAGE_DIRS["filter"])
    summary = run_filter(state.root / lake.STAGE_DIRS["extract"], out, models_dir=models)
    keys = ("rows_in", "rows_kept", "dedup_rate", "tokens_kept", "dropped")
    result = {k: summary[k] for k in keys if k in summary}
    aucs = {}
    for lang in DEMO_LANGS:  # the deployed fold ensemble, on its held-out split
        meta = models / f"{lang}.json"
        if meta.exists():
            auc = (json.loads(meta.read_text()).get("metrics") or {}).get("auc")
            if auc is not None:
                aucs[lang] = round(auc, 2)
    result["quality_auc"] = aucs
    return result, out


DEMO_MIXTURES = ("pretrain", "cpt", "long_context", "multimodal")


def step_mix(state: DemoState) -> tuple[dict[str, Any], Path]:
    """Train the demo tokenizer on the filtered documents and build the tiny stage mixtures."""
    from pipelines.stages.mix import run_mix_build, run_tokenizer_train
    from pipelines.stages.train import run_retrieval_data

    tok = run_tokenizer_train(vocab_size=DEMO_VOCAB_SIZE, lake_root=state.root)
    # The report's synthetic long-form retrieval documents: a source of the long-context mixture.
    run_retrieval_data(n_docs=1000, seed=0, lake_root=state.root, **DEMO_RETRIEVAL_DOCS)
    out = state.root / lake.STAGE_DIRS["mixtures"]
    summary: dict[str, Any] = {"vocab": tok.get("vocab_size", DEMO_VOCAB_SIZE)}
    for stage in DEMO_MIXTURES:
        spec = f"tiny/{stage}"
        name = "tiny-" + stage.replace("_", "-")
        built = run_mix_build(spec, _fresh(out / name), lake_root=state.root)
        summary[f"{stage}_tokens"] = built.get("tokens")
        state.outputs[f"mixture:{stage}"] = out / name
    return summary, out


def step_train(state: DemoState) -> tuple[dict[str, Any], Path]:
    """Run pretraining, continued pretraining and context lengthening on the tiny mixtures.

    Each stage writes a new versioned run `runs/<stage>/<run id>/` and points
    `runs/<stage>/latest.json` at it; earlier runs are kept.
    """
    from pipelines.stages.train import new_run_dir, run_retrieval_eval, run_train, set_latest

    runs = state.root / lake.STAGE_DIRS["runs"]
    summary: dict[str, Any] = {}
    init = None
    plan = DEMO_TRAIN_STEPS
    if state.train_steps:
        plan = tuple(
            (stage, mix, n)
            for (stage, mix, _), n in zip(DEMO_TRAIN_STEPS, state.train_steps, strict=True)
        )
    done: dict[str, Path] = {}
    for stage, mixture, steps in plan:
        out = new_run_dir(runs / stage)
        result = run_train(
            stage, "tiny", state.outputs[f"mixture:{mixture}"], out, init=init, steps=steps
        )
        set_latest(runs / stage, out)
        summary[f"{stage}_loss"] = result.get("final_loss")
        if stage == "long-context":
            summary["long_eval_before"] = result.get("eval_mean_before")
            summary["long_eval_after"] = result.get("eval_mean")
        init = done[stage] = out
    # Late-query loss on held-out retrieval documents (a seed the training data did not use).
    ev = run_retrieval_eval(
        {"cpt": done["cpt"], "long-context": done["long-context"]},
        state.root / lake.STAGE_DIRS["tokenizer"] / "tokenizer.json",
        n_docs=64,
        seed=10_000,
        **DEMO_RETRIEVAL_DOCS,
    )
    summary["late_query_loss"] = {k: round(v["loss"], 3) for k, v in ev.items()}
    return summary, runs


DEMO_VOCAB_SIZE = 4096
DEMO_RETRIEVAL_DOCS = {
    "n_facts": 3,
    "n_queries": 3,
    "filler_sentences": (12, 18),
    "values": "words",
}
DEMO_TRAIN_STEPS = (
    ("pretrain", "pretrain", 300),
    ("cpt", "cpt", 100),
    ("long-context", "long_context", 100),
)

# The sample web is on loopback: a short delay keeps the demo quick; robots and Crawl-delay still apply.
DEMO_CRAWL_DELAY_S = 0.2

# Stages in order; each later issue appends its step here.
STEPS: list[tuple[str, Callable[[DemoState], tuple[dict[str, Any], Path]]]] = [
    ("sample web", step_sample_web),
    ("crawl", step_crawl),
    ("render + extract", step_extract),
    ("filter + dedup", step_filter),
    ("tokenizer + mixtures", step_mix),
    ("train", step_train),
]


def _fmt(summary: dict[str, Any]) -> str:
    parts = []
    for key, value in summary.items():
        if isinstance(value, float):
            value = f"{value:.3g}"
        elif isinstance(value, list | tuple):
            value = ",".join(map(str, value))
        elif isinstance(value, dict):
            value = ",".join(
                f"{k}:{v:.3g}" if isinstance(v, float) else f"{k}:{v}" for k, v in value.items()
            )
        parts.append(f"{key}={value}")
    return "  ".join(parts)


def run_demo(
    root: Path | None = None,
    console: Console | None = None,
    *,
    train_steps: tuple[int, int, int] | None = None,
) -> list[StepResult]:
    """Serve the sample web on loopback and run every stage on it; print a summary table.

    train_steps overrides the (pretrain, cpt, long-context) step counts, e.g. for a quick check.
    """
    from crawlers.sampleweb import build_web, serve

    console = console or Console()
    state = DemoState(root=(root or lake.lake_root()))
    if train_steps:
        state.train_steps = tuple(train_steps)
    state.root.mkdir(parents=True, exist_ok=True)
    results: list[StepResult] = []
    started = time.perf_counter()
    with serve(build_web()) as served:
        state.served = served
        console.print(
            f"[bold]Refinery demo[/] lake={state.root}  sample web: {len(served.seeds())} sites on loopback"
        )
        for name, step in STEPS:
            console.rule(name)
            t0 = time.perf_counter()
            summary, output = step(state)
            results.append(StepResult(name, time.perf_counter() - t0, summary, output))
            console.print(f"{name}: {_fmt(summary)}")
    table = Table(
        title=f"Refinery demo: {len(results)} stages in {time.perf_counter() - started:.0f} s"
    )
    table.add_column("stage")
    table.add_column("seconds", justify="right")
    table.add_column("summary")
    table.add_column("output")
    for r in results:
        table.add_row(r.name, f"{r.seconds:.1f}", _fmt(r.summary), str(r.output or ""))
    console.print(table)
    return results
