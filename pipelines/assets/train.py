"""Assets `pretrained_model` → `cpt_model` → `long_context_model`: one training run each.

Each reads its mixture from lake `mixtures/<name>/` (name from the training config's stage
section) and writes a new versioned run `runs/<stage>/<run-id>/`; when it finishes,
`runs/<stage>/latest.json` points at it. A re-materialisation is a new run next to the old ones
(nothing is deleted); `resume: true` continues the newest run that has a checkpoint. Later stages
start from the latest checkpoint of the previous stage's latest run. Metadata: run id, final and
eval losses, tokens/s, loss curve.
"""

import base64

from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset

from pipelines.resources import LakeResource
from pipelines.stages.train import (
    UPSTREAM,
    latest_run,
    new_run_dir,
    resumable_run,
    run_retrieval_data,
    run_train,
    set_latest,
    stage_mixture_dir,
)


class TrainConfig(Config):
    """Training config file (a path, or `tiny` / `gpu`), total steps, and whether to resume."""

    config: str = "tiny"
    steps: int | None = None  # None: the config's stage steps
    resume: bool = False  # continue the newest run of lake runs/<stage> instead of a new run


class RetrievalDataConfig(Config):
    """Synthetic in-context retrieval documents (training/longctx.py); defaults fit tiny seq 512."""

    docs: int = 1000
    seed: int = 0
    facts: int = 3
    queries: int = 3
    filler_min: int = 12
    filler_max: int = 18
    values: str = "words"  # or "digits"


@asset(group_name="train")
def retrieval_documents(
    context: AssetExecutionContext, config: RetrievalDataConfig, lake: LakeResource
) -> MaterializeResult:
    """Synthetic long documents (facts early, queries late): lake `synth/long/retrieval.parquet`,
    a source of the long-context mixtures."""
    r = run_retrieval_data(
        n_docs=config.docs,
        seed=config.seed,
        lake_root=lake.path(),
        n_facts=config.facts,
        n_queries=config.queries,
        filler_sentences=(config.filler_min, config.filler_max),
        values=config.values,
    )
    context.log.info(f"{r['documents']} retrieval documents -> {r['path']}")
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(r["path"]),
            "documents": r["documents"],
            "mean_chars": r["mean_chars"],
        }
    )


def _train_asset(
    name: str, stage: str, mixture_asset: str, upstream_model: str | None, description: str
):
    deps = [mixture_asset] + ([upstream_model] if upstream_model else [])

    @asset(name=name, group_name="train", deps=deps, description=description)
    def _train(
        context: AssetExecutionContext, config: TrainConfig, lake: LakeResource
    ) -> MaterializeResult:
        from training.checkpoint import latest_checkpoint

        runs = lake.stage_dir("runs")
        data = stage_mixture_dir(stage, config.config, lake.path())
        previous = resumable_run(runs / stage) if config.resume else None
        resume = previous is not None
        init = None
        if stage in UPSTREAM and not resume:
            init = latest_run(runs / UPSTREAM[stage])
            if init is None or latest_checkpoint(init) is None:
                raise FileNotFoundError(
                    f"{runs / UPSTREAM[stage]}: no finished run with a checkpoint; "
                    f"materialize {upstream_model} first"
                )
        out = previous if resume else new_run_dir(runs / stage)
        context.log.info(f"{stage}: run directory {out}" + (" (resumed)" if resume else ""))

        def log(step: int, total: int, row: dict | None) -> None:
            if row is not None:
                context.log.info(f"{stage} step {step}/{total} loss {row['loss']:.4f}")

        s = run_train(
            stage,
            config.config,
            data,
            out,
            init=init,
            steps=config.steps,
            resume=resume,
            on_step=log,
        )
        set_latest(runs / stage, out)
        png = base64.b64encode(open(s["loss_plot"], "rb").read()).decode()
        return MaterializeResult(
            metadata={
                "checkpoint": MetadataValue.path(s["checkpoint"]),
                "run_dir": MetadataValue.path(str(out)),
                "run_id": out.name,
                "init": MetadataValue.path(str(s["init"])) if s["init"] else "none",
                "mixture": MetadataValue.path(str(data)),
                "steps": s["steps"],
                "seq_len": s["seq_len"],
                "final_loss": s["final_loss"],
                "eval_loss_mean": s["eval_mean"],
                "eval_loss_mean_at_start": s["eval_mean_before"],
                "eval_losses": MetadataValue.json(s["eval"]),
                "tokens_per_s": s["tokens_per_s"],
                "loss_curve": MetadataValue.md(f"![loss curve](data:image/png;base64,{png})"),
                "loss_curve_path": MetadataValue.path(s["loss_plot"]),
            }
        )

    return _train


pretrained_model = _train_asset(
    "pretrained_model",
    "pretrain",
    "pretrain_mixture",
    None,
    "Pretraining from scratch on the pretraining mixture.",
)
cpt_model = _train_asset(
    "cpt_model",
    "cpt",
    "cpt_mixture",
    "pretrained_model",
    "Continued pretraining from the pretrained weights, fresh optimiser and warm-up.",
)
long_context_model = _train_asset(
    "long_context_model",
    "long-context",
    "long_context_mixture",
    "cpt_model",
    "Context lengthening at 4x seq_len with a raised RoPE base on the local layers.",
)
