"""The mixture stages' drivers: train the tokenizer, validate / build / report a mixture, each
returning a typed result. Plain Python over lake paths: `pipelines/stages/mix.py` declares the
stages and picks where a build runs (in process, or an `Executor` such as the Beam one)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from common import lake

DEFAULT_TOKENIZER_SOURCES = ("filter/documents.parquet",)
MIXTURES_DIR = Path(__file__).resolve().parents[1] / "mixtures"


@dataclass(frozen=True)
class TokenizerResult:
    """What `run_tokenizer_train` returns."""

    path: str
    vocab_size: int
    requested_vocab_size: int
    sample_documents: int
    sample_chars: int
    sources: list[str]
    special_tokens: dict[str, int]
    seconds: float


@dataclass(frozen=True)
class MixValidateResult:
    """What `run_mix_validate` returns: the spec's buckets and weights, and with the data
    checked, the training-allowed rows each bucket offers and the shortfalls allowed."""

    spec: str
    name: str
    buckets: list[str]
    weights: dict[str, float]
    rows_offered: dict[str, int]
    shortfalls: list[dict[str, Any]]


@dataclass(frozen=True)
class MixReportResult:
    """What `run_mix_report` returns: the token accounting of a built mixture."""

    name: str
    rows: list[dict[str, Any]]
    summary: list[str]
    markdown: str
    plot: str
    checks: list[dict[str, Any]]
    shortfalls: list[dict[str, Any]]


@dataclass(frozen=True)
class MixBuildResult:
    """What `run_mix_build` returns: the manifest's figures and the report's Markdown and plot."""

    name: str
    out_dir: str
    num_sequences: int
    tokens: int
    shards: int
    eval_sets: int
    waste_fraction: float
    shortfalls: list[dict[str, Any]]
    checks_ok: bool
    tokens_per_s: float | None
    images: int | None  # distinct stored images (mixtures with image_tokens)
    rejects: dict[str, int] | None  # rows/images refused (rejects.parquet), by reason
    seconds: float
    markdown: str
    plot: str
    read_rows: int | None  # text rows read and tokenized at once (from a memory budget)
    memory_budget: dict[str, Any] | None  # how the budget was spent (common.budget.Fit)


class Executor(Protocol):
    """Where a mixture is built other than in this process (the stage passes the Beam one):
    `name` names it in messages; a call builds into `out_dir` and returns the manifest."""

    name: str

    def __call__(self, spec_path: Path, out_dir: Path, *, lake_root: Path) -> dict[str, Any]: ...


def run_tokenizer_train(
    out: str | Path | None = None,
    *,
    vocab_size: int = 4096,
    sources: Sequence[str | Path] | None = None,
    sample_tokens: int = 2_000_000,
    seed: int = 0,
    lake_root: Path | None = None,
) -> TokenizerResult:
    """Train the byte-level BPE tokenizer on a sample of the lake; default out: lake tokenizer/tokenizer.json."""
    from common.consent import ledger_files_for
    from training.tokenizer import (
        expand_sources,
        load_tokenizer,
        sample_texts,
        special_token_ids,
        train_tokenizer,
    )

    root = lake_root or lake.lake_root()
    out = Path(out) if out else lake.stage_dir("tokenizer", root) / "tokenizer.json"
    patterns = list(sources) if sources else [str(root / p) for p in DEFAULT_TOKENIZER_SOURCES]
    files = expand_sources(patterns)
    # the shards' consent rule: the row's flag and the consent ledger (the lake's, and that of
    # the lake each source file lies in)
    texts = sample_texts(files, sample_tokens, seed=seed, consent=ledger_files_for(root, *files))
    t0 = time.perf_counter()
    train_tokenizer(texts, vocab_size, out)
    tok = load_tokenizer(out)
    lake.write_manifest(
        out,
        rows=None,
        inputs=files,
        config={"vocab_size": vocab_size, "sample_tokens": sample_tokens, "seed": seed},
        extra={"vocab_size": tok.get_vocab_size(), "special_tokens": special_token_ids(tok)},
    )
    return TokenizerResult(
        path=str(out),
        vocab_size=tok.get_vocab_size(),
        requested_vocab_size=vocab_size,
        sample_documents=len(texts),
        sample_chars=sum(len(t) for t in texts),
        sources=[str(f) for f in files],
        special_tokens=special_token_ids(tok),
        seconds=round(time.perf_counter() - t0, 2),
    )


def resolve_spec(spec: str | Path) -> Path:
    """A spec path as given, or a name under training/mixtures (e.g. `tiny/pretrain`)."""
    p = Path(spec)
    if p.exists():
        return p
    for cand in (MIXTURES_DIR / spec, MIXTURES_DIR / f"{spec}.yaml"):
        if cand.exists():
            return cand
    raise FileNotFoundError(
        f"mixture spec {spec} not found (neither a file nor a name under {MIXTURES_DIR})"
    )


def run_mix_validate(
    spec_path: str | Path, *, check_data: bool = True, lake_root: Path | None = None
) -> MixValidateResult:
    """Validate a spec (schema; with check_data also paths, columns and `where` predicates)."""
    from training.mixture.read import check_spec_data
    from training.mixture.spec import load_spec

    path = resolve_spec(spec_path)
    spec = load_spec(path)
    counts, shortfalls = {}, []
    if check_data:
        from training.mixture.builder import plan_mixture

        root = lake_root or lake.lake_root()
        counts = check_spec_data(spec, path.parent, root)
        # The sampling plan on the real data: a max_epochs (or data) shortfall fails here, as in build.
        shortfalls = plan_mixture(path, lake_root=root)["shortfalls"]
    return MixValidateResult(
        spec=str(path),
        name=spec.name,
        buckets=sorted(spec.buckets),
        weights=spec.effective_weights(),
        rows_offered=counts,
        shortfalls=shortfalls,
    )


def run_mix_build(
    spec_path: str | Path,
    out_dir: str | Path,
    *,
    executor: Executor | None = None,
    lake_root: Path | None = None,
    memory_budget_mib: float | None = None,
) -> MixBuildResult:
    """Build a mixture: in process when executor is None, else on the executor (the stage's
    Beam one, `pipelines.stages.mix.BeamBuild`).

    `lake/...` paths in the spec resolve against lake_root (default $REFINERY_HOME or ./lake).
    With `memory_budget_mib` (in process only), the rows read and tokenized at once are as many
    as fit in the budget (`training.mixture.builder.read_rows_for_budget`); the shards do not
    change.
    """
    path = resolve_spec(spec_path)
    root = lake_root or lake.lake_root()
    out_dir = Path(out_dir)
    t0 = time.perf_counter()
    budget = None
    if memory_budget_mib is not None and executor is not None:
        raise ValueError(
            f"memory_budget_mib={memory_budget_mib:g} (--memory-budget-mib) applies to the "
            f"in-process build; drop it or build without --runner ({executor.name})"
        )
    if executor is None:
        from training.mixture.builder import READ_BATCH_ROWS, build_mixture, read_rows_for_budget

        read_rows = READ_BATCH_ROWS
        if memory_budget_mib is not None:
            budget = read_rows_for_budget(path, memory_budget_mib, lake_root=root)
            read_rows = budget.units
        manifest = build_mixture(path, out_dir, lake_root=root, read_rows=read_rows)
    else:
        manifest = executor(path, out_dir, lake_root=root)
    seconds = time.perf_counter() - t0
    report = run_mix_report(out_dir)
    return MixBuildResult(
        name=manifest["name"],
        out_dir=str(out_dir),
        num_sequences=manifest["num_sequences"],
        tokens=manifest["tokens"],
        shards=len(manifest["shards"]),
        eval_sets=len(manifest["eval"]),
        waste_fraction=manifest["waste_fraction"],
        shortfalls=manifest["shortfalls"],
        checks_ok=all(c["ok"] for c in manifest["checks"]),
        tokens_per_s=manifest["tokens"] / seconds if seconds > 0 else None,
        images=(manifest.get("images") or {}).get("count"),
        rejects=(manifest.get("rejects") or {}).get("by_reason"),
        seconds=round(seconds, 2),
        markdown=report.markdown,
        plot=report.plot,
        read_rows=budget.units if budget else None,
        memory_budget=budget.as_dict() if budget else None,
    )


def run_mix_report(mix_dir: str | Path) -> MixReportResult:
    """Token accounting of a built mixture: rows, Markdown, summary lines and DIR/report.png."""
    from training.loader import read_manifest
    from training.mixture.report import (
        accounting_rows,
        markdown_table,
        plot_composition,
        summary_lines,
    )

    mix_dir = Path(mix_dir)
    manifest = read_manifest(mix_dir)
    plot = plot_composition(manifest, mix_dir / "report.png")
    return MixReportResult(
        name=manifest["name"],
        rows=accounting_rows(manifest),
        summary=summary_lines(manifest),
        markdown=markdown_table(manifest),
        plot=str(plot),
        checks=manifest.get("checks", []),
        shortfalls=manifest.get("shortfalls", []),
    )
