"""Mixture stage declarations: `refinery tokenizer train`, `refinery mix validate|build|report`
and one mixture asset per training stage; their drivers are `training/mixture/run.py`, the Beam
build `pipelines/beam/mix.py`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from pipelines.stage import Check, Lake, Params, Stage, Summary, param


@dataclass(frozen=True)
class BeamBuild:
    """The mixture built as a Beam pipeline on the runner `name` (`pipelines.beam.mix`): the
    executor the stage hands `training.mixture.run.run_mix_build` when a runner is asked for."""

    name: str
    args: Sequence[str] = ()

    def __call__(self, spec_path: Path, out_dir: Path, *, lake_root: Path) -> dict[str, Any]:
        from pipelines.beam.mix import build_mixture_beam

        args = [f"--runner={self.name}", *self.args]
        return build_mixture_beam(spec_path, out_dir, pipeline_args=args, lake_root=lake_root)


# --- declarations: `refinery tokenizer train`, `refinery mix validate|build|report`, and the
# assets `tokenizer` and one mixture per training stage ---


class TokenizerParams(Params):
    out: Path | None = param(
        None,
        output=True,
        file=True,
        help="tokenizer.json path to write (default: lake tokenizer/).",
    )
    vocab_size: int = param(4096, help="Vocabulary size (150000 at scale).")
    sources: list[str] | None = param(
        None,
        input="deduplicated_documents",
        help="Parquet file or glob, repeatable (default: lake filter/documents.parquet).",
    )
    sample_tokens: int = param(2_000_000, help="About how many tokens of text to sample.")
    seed: int = param(0, help="Seed of the text sample: the same seed samples the same text.")


class TokenizerSummary(Summary):
    path: str
    vocab_size: int
    requested_vocab_size: int
    sample_documents: int
    sample_chars: int
    sources: list[str]
    special_tokens: dict[str, int]
    seconds: float

    def text(self) -> str:
        return (
            f"{self.path}: vocab {self.vocab_size} from {self.sample_documents} documents "
            f"({self.sample_chars:,} chars); special tokens {self.special_tokens}"
        )


def tokenizer_train(p: TokenizerParams, lake_: Lake) -> TokenizerSummary:
    """Train a byte-level BPE tokenizer with the Refinery special tokens."""
    from training.mixture.run import run_tokenizer_train

    s = run_tokenizer_train(
        p.out,
        vocab_size=p.vocab_size,
        sources=p.sources or None,
        sample_tokens=p.sample_tokens,
        seed=p.seed,
        lake_root=lake_.root,
    )
    return TokenizerSummary(outputs={"tokenizer": s.path}, **asdict(s))


class MixValidateParams(Params):
    spec: str = param(
        argument=True,
        help="Spec YAML path, or a name under training/mixtures (e.g. tiny/pretrain).",
    )
    schema_only: bool = param(False, help="Skip the checks against the data.")


class MixValidateSummary(Summary):
    spec: str
    name: str
    buckets: list[str]
    weights: dict[str, float]
    rows_offered: dict[str, int]
    shortfalls: list[dict[str, Any]]

    def text(self) -> str:
        weights = ", ".join(f"{k}={v:.4g}" for k, v in self.weights.items())
        lines = [f"{self.spec}: valid mixture {self.name!r} ({weights})"]
        lines += [f"  {k}: {n:,} training-allowed rows" for k, n in self.rows_offered.items()]
        lines += [
            f"  shortfall allowed by allow_shortfall: buckets.{sf['bucket']}: {sf['reason']}"
            for sf in self.shortfalls
        ]
        return "\n".join(lines)


def mix_validate(p: MixValidateParams, lake_: Lake) -> MixValidateSummary:
    """Validate a mixture spec: fields, weights, paths, columns and `where` predicates."""
    from training.mixture.run import run_mix_validate

    out = run_mix_validate(p.spec, check_data=not p.schema_only, lake_root=lake_.root)
    return MixValidateSummary(**asdict(out))


class MixBuildParams(Params):
    spec: str = param(argument=True, help="Spec YAML path, or a name under training/mixtures.")
    out: Path | None = param(
        None,
        output=True,
        help="Mixture directory (shards/, eval/, tokenizer.json, manifest.json); default: "
        "lake mixtures/<spec name>.",
    )
    runner: str | None = param(
        None, asset=False, help="Beam runner (e.g. DirectRunner); default: in process."
    )
    beam_arg: list[str] | None = param(
        None, asset=False, help="Extra Beam pipeline option, repeatable."
    )
    # options the stage does not declare (`--direct_num_workers=2`), as the other Beam stages
    # take them; after --beam-arg's
    beam_args: list[str] = param([], extra_args=True)
    use_beam: bool = param(
        False, cli=False, help="Build with the `beam` resource's runner instead of in process."
    )
    beam_runner: str = param("DirectRunner", cli=False, resource="beam.runner")
    beam_options: list[str] = param([], cli=False, resource="beam.options")
    memory_budget_mib: float | None = param(
        None,
        min=1,
        help="Peak memory (MiB) an in-process build stays under: the text rows read and "
        "tokenized at once are lowered to what fits; too small is an error naming the smallest "
        "budget.",
    )


class MixBuildSummary(Summary):
    name: str
    spec: str
    sequences: int
    tokens: int
    shards: int
    eval_sets: int
    waste_fraction: float
    shortfalls: int
    shares_within_tolerance: bool
    tokens_per_s: float | None
    images: int | None = None  # distinct stored images (mixtures with image_tokens)
    rejects: dict[str, int] | None = None  # rows/images refused (rejects.parquet), by reason
    read_rows: int | None = None  # text rows read and tokenized at once (from a memory budget)
    memory_budget: dict[str, Any] | None = None  # how the budget was spent (common.budget.Fit)
    seconds: float
    accounting: str
    plot: str
    markdown_fields: ClassVar[tuple[str, ...]] = ("accounting",)

    def text(self) -> str:
        out = self.outputs.get("mixture", "")
        return f"{self.accounting}\n-> {out} ({self.seconds} s); plot {self.plot}"


def default_out(mixtures: Path, name: str) -> Path:
    """lake/mixtures/<name>, which must lie strictly inside lake/mixtures (a name such as `..`,
    or a link out of it, would make the build's directory the lake's or another's)."""
    out = mixtures / name
    if out.resolve().parent != mixtures.resolve():
        raise ValueError(
            f"name: {name!r} puts the mixture at {out.resolve()}, not inside {mixtures}; rename "
            "the spec (letters, digits, '_', '-', '.') or give --out"
        )
    return out


def executor_for(p: MixBuildParams) -> BeamBuild | None:
    """Where the stage builds: on `--runner` with `--beam-arg`s and the Beam options the stage
    does not declare, on the `beam` resource's runner when the asset asks for Beam, else in
    process (None)."""
    if p.runner:
        return BeamBuild(p.runner, (*(p.beam_arg or ()), *p.beam_args))
    if p.beam_arg or p.beam_args:
        given = " ".join([*(p.beam_arg or ()), *p.beam_args])
        raise ValueError(
            f"Beam options {given} without --runner: an in-process build takes none; add "
            "--runner DirectRunner (or another Beam runner), or drop them"
        )
    if p.use_beam:
        return BeamBuild(p.beam_runner, tuple(p.beam_options or ()))
    return None


def mix_build(p: MixBuildParams, lake_: Lake) -> MixBuildSummary:
    """Tokenize, sample, pack and shard a mixture."""
    from training.mixture.run import resolve_spec, run_mix_build
    from training.mixture.spec import load_spec

    spec_path = resolve_spec(p.spec)
    out = Path(p.out) if p.out else default_out(lake_.dir("mixtures"), load_spec(spec_path).name)
    s = run_mix_build(
        spec_path,
        out,
        executor=executor_for(p),
        lake_root=lake_.root,
        memory_budget_mib=p.memory_budget_mib,
    )
    lake_.log(f"mixture {s.name}: {s.num_sequences} sequences, {s.tokens} tokens -> {out}")
    return MixBuildSummary(
        outputs={"mixture": str(out)},
        name=s.name,
        spec=str(spec_path),
        sequences=s.num_sequences,
        tokens=s.tokens,
        shards=s.shards,
        eval_sets=s.eval_sets,
        waste_fraction=s.waste_fraction,
        shortfalls=len(s.shortfalls),
        shares_within_tolerance=s.checks_ok,
        tokens_per_s=s.tokens_per_s,
        images=s.images,
        rejects=s.rejects,
        read_rows=s.read_rows,
        memory_budget=s.memory_budget,
        seconds=s.seconds,
        accounting=s.markdown,
        plot=s.plot,
    )


class MixReportParams(Params):
    mix_dir: Path = param(argument=True, help="A built mixture directory.")


class MixReportSummary(Summary):
    name: str
    rows: list[dict[str, Any]]
    summary: list[str]
    plot: str

    def text(self) -> str:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"mixture {self.name}")
        cols = ("bucket", "group", "weight", "available", "target", "tokens", "epochs", "share")
        for col in cols:
            text_col = col in ("bucket", "group")
            table.add_column(col, justify="left" if text_col else "right", no_wrap=text_col)
        for r in self.rows:
            table.add_row(
                r["bucket"],
                r["group"],
                "" if r["weight"] is None else f"{r['weight']:.3f}",
                f"{r['available']:,}",
                f"{r['target']:,}",
                f"{r['tokens']:,}",
                "" if r["epochs"] is None else f"{r['epochs']:.2f}",
                f"{r['share']:.4f}",
            )
        console = Console(record=True, width=120)
        with console.capture() as capture:
            console.print(table)
            for line in self.summary:
                console.print(line, markup=False)
            console.print(f"plot: {self.plot}", markup=False)
        return capture.get().rstrip("\n")


def mix_report(p: MixReportParams, lake_: Lake) -> MixReportSummary:
    """Print the token accounting as a table and write DIR/report.png."""
    from training.mixture.run import run_mix_report

    r = run_mix_report(p.mix_dir)
    return MixReportSummary(name=r.name, rows=r.rows, summary=r.summary, plot=r.plot)


def _no_opted_out_rows(summary: Summary, lake_: Lake):
    from training.mixture.checks import mixture_no_opted_out_rows

    return mixture_no_opted_out_rows(Path(summary.outputs["mixture"]), lake_.root)


def _shares_within_tolerance(summary: Summary, lake_: Lake):
    from training.mixture.checks import mixture_shares_within_tolerance

    return mixture_shares_within_tolerance(Path(summary.outputs["mixture"]))


def _checksums_match(summary: Summary, lake_: Lake):
    from training.mixture.checks import mixture_checksums_match

    return mixture_checksums_match(Path(summary.outputs["mixture"]))


TOKENIZER = Stage(
    name="tokenizer train",
    params=TokenizerParams,
    run=tokenizer_train,
    description=tokenizer_train.__doc__,
    outputs=("tokenizer",),
    inputs=("deduplicated_documents",),
    group="mix",
    output_descriptions={"tokenizer": "Byte-level BPE tokenizer trained on the filtered lake."},
)
MIX_VALIDATE = Stage("mix validate", MixValidateParams, mix_validate, mix_validate.__doc__)
MIX_REPORT = Stage("mix report", MixReportParams, mix_report, mix_report.__doc__)
MIX_BUILD = Stage("mix build", MixBuildParams, mix_build, mix_build.__doc__)

MIXTURE_ASSETS = {
    # asset: (default spec, extra upstream, description)
    "pretrain_mixture": ("tiny/pretrain", (), "Stage-1 pretraining mixture (shards + eval sets)."),
    "cpt_mixture": (
        "tiny/cpt",
        (),
        "Continued-pretraining mixture: multilingual 30%, more math and code.",
    ),
    "long_context_mixture": (
        "tiny/long_context",
        ("retrieval_documents",),
        "Long-context mixture (long documents, long seq_len, synthetic retrieval documents).",
    ),
    "multimodal_mixture": (
        "tiny/multimodal",
        (
            "interleaved_documents",
            "image_pairs",
            "domain_images",
            "synthetic_charts",
            "table_pairs",
            "synthetic_captions",
            "domain_qa",
            "text_rich_images",
        ),
        "Multimodal mixture: text, interleaved, image-caption (pairs, synthetic captions, charts, "
        "tables), text-rich images with their OCR text, domain image-text (domain images, domain "
        "QA); images as blocks of image_tokens "
        "<|image|> ids, stored by content hash with per-shard sidecars.",
    ),
}


def _mixture_stage(asset: str, spec: str, extra: tuple[str, ...], description: str) -> Stage:
    def run(p: MixBuildParams, lake_: Lake) -> MixBuildSummary:
        s = mix_build(p, lake_)
        s.outputs = {asset: s.outputs["mixture"]}
        return s

    def check(name: str, check_fn: Callable[[Summary, Lake], Any], what: str) -> Check:
        def fn(summary: Summary, lake_: Lake):
            renamed = summary.model_copy(update={"outputs": {"mixture": summary.outputs[asset]}})
            return check_fn(renamed, lake_)

        return Check(name, asset, fn, what)

    return Stage(
        name="",
        params=MixBuildParams,
        run=run,
        description=description,
        outputs=(asset,),
        inputs=("deduplicated_documents", "tokenizer", *extra),
        group="mix",
        asset_defaults={"spec": spec},
        checks=(
            check(
                "no_opted_out_rows",
                _no_opted_out_rows,
                "0 opted-out (training_allowed = false) rows in the shards.",
            ),
            check(
                "shares_within_tolerance",
                _shares_within_tolerance,
                "Realised bucket shares within the spec's tolerance.",
            ),
            check(
                "checksums_match",
                _checksums_match,
                "Every shard and eval file matches its manifest checksum.",
            ),
        ),
    )


MIXTURES = [_mixture_stage(a, *v) for a, v in MIXTURE_ASSETS.items()]
