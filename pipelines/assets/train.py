"""Assets `pretrained_model` → `cpt_model` → `long_context_model`: one training run each.

Each reads its mixture from lake `mixtures/<name>/` (name from the training config's stage
section) and writes its run to lake `runs/<stage>/`; later stages start from the latest
checkpoint of the previous stage's run. Metadata: final and eval losses, tokens/s, loss curve.
"""

import base64
import shutil

from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset

from pipelines.resources import LakeResource
from pipelines.stages.train import UPSTREAM, run_train, stage_mixture_dir


class TrainConfig(Config):
    """Training config file (a path, or `tiny` / `gpu`), total steps, and whether to resume."""

    config: str = "tiny"
    steps: int | None = None  # None: the config's stage steps
    resume: bool = (
        False  # continue lake runs/<stage> from its latest checkpoint instead of restarting
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
        out = runs / stage
        data = stage_mixture_dir(stage, config.config, lake.path())
        resume = config.resume and latest_checkpoint(out) is not None
        if not resume and out.exists():
            shutil.rmtree(out)  # a re-materialization is a new run
        init = None
        if stage in UPSTREAM and not resume:
            init = runs / UPSTREAM[stage]
            if latest_checkpoint(init) is None:
                raise FileNotFoundError(
                    f"{init}: no checkpoint; materialize {upstream_model} first"
                )

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
        png = base64.b64encode(open(s["loss_plot"], "rb").read()).decode()
        return MaterializeResult(
            metadata={
                "checkpoint": MetadataValue.path(s["checkpoint"]),
                "run_dir": MetadataValue.path(str(out)),
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
