"""Assets `tokenizer` and one mixture per training stage, with their token accounting as metadata."""

from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset

from pipelines.resources import BeamRunnerResource, LakeResource
from pipelines.stages.mix import run_mix_build, run_tokenizer_train


class TokenizerConfig(Config):
    """Vocabulary size (150000 at scale; small for the demo) and sample size of the tokenizer."""

    vocab_size: int = 4096
    sample_tokens: int = 2_000_000
    seed: int = 0


class MixtureConfig(Config):
    """Which spec to build (a path, or a name under training/mixtures) and whether to use Beam."""

    spec: str = ""
    use_beam: bool = False


@asset(
    group_name="mix",
    deps=["deduplicated_documents"],
    description="Byte-level BPE tokenizer trained on the filtered lake.",
)
def tokenizer(
    context: AssetExecutionContext, config: TokenizerConfig, lake: LakeResource
) -> MaterializeResult:
    out = lake.stage_dir("tokenizer") / "tokenizer.json"
    s = run_tokenizer_train(
        out,
        vocab_size=config.vocab_size,
        sample_tokens=config.sample_tokens,
        seed=config.seed,
        lake_root=lake.path(),
    )
    context.log.info(f"tokenizer: vocab {s['vocab_size']} -> {out}")
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(s["path"]),
            "vocab_size": s["vocab_size"],
            "sample_documents": s["sample_documents"],
            "special_tokens": MetadataValue.json(s["special_tokens"]),
        }
    )


def _mixture_asset(
    asset_name: str, default_spec: str, description: str, extra_deps: tuple[str, ...] = ()
):
    @asset(
        name=asset_name,
        group_name="mix",
        deps=["deduplicated_documents", "tokenizer", *extra_deps],
        description=description,
    )
    def _build(
        context: AssetExecutionContext,
        config: MixtureConfig,
        lake: LakeResource,
        beam: BeamRunnerResource,
    ) -> MaterializeResult:
        from pipelines.stages.mix import resolve_spec
        from training.mixture.spec import load_spec

        spec_path = resolve_spec(config.spec or default_spec)
        out = lake.stage_dir("mixtures") / load_spec(spec_path).name
        runner = beam.runner if config.use_beam else None
        s = run_mix_build(
            spec_path, out, runner=runner, pipeline_args=beam.options, lake_root=lake.path()
        )
        context.log.info(
            f"{asset_name}: {s['num_sequences']} sequences, {s['tokens']} tokens -> {out}"
        )
        return MaterializeResult(
            metadata={
                "path": MetadataValue.path(str(out)),
                "spec": MetadataValue.path(str(spec_path)),
                "sequences": s["num_sequences"],
                "tokens": s["tokens"],
                "shards": s["shards"],
                "eval_sets": s["eval_sets"],
                "waste_fraction": s["waste_fraction"],
                "shortfalls": len(s["shortfalls"]),
                "shares_within_tolerance": s["checks_ok"],
                "accounting": MetadataValue.md(s["markdown"]),
                "plot": MetadataValue.path(s["plot"]),
            }
        )

    return _build


pretrain_mixture = _mixture_asset(
    "pretrain_mixture", "tiny/pretrain", "Stage-1 pretraining mixture (shards + eval sets)."
)
cpt_mixture = _mixture_asset(
    "cpt_mixture",
    "tiny/cpt",
    "Continued-pretraining mixture: multilingual 30%, more math and code.",
)
long_context_mixture = _mixture_asset(
    "long_context_mixture",
    "tiny/long_context",
    "Long-context mixture (long documents, long seq_len, synthetic retrieval documents).",
    extra_deps=("retrieval_documents",),
)
multimodal_mixture = _mixture_asset(
    "multimodal_mixture",
    "tiny/multimodal",
    "Multimodal mixture: text, interleaved, image-caption, domain image-text.",
)
