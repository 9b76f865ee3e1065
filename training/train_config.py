"""Training run configuration: YAML validated by pydantic, with errors that name the field.

A config file has three sections: `model` (fields of `training.model.ModelConfig`; `vocab_size`
may be left out, it then comes from the mixture's tokenizer), `train` (batch, precision, logging,
checkpointing) and `stages` with one section per stage (`pretrain`, `cpt`, `multimodal`,
`long-context`) holding the mixture name, steps and schedule, for long context the raised RoPE base
and length limit, for multimodal the vision options (`MultimodalSection`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from common import yamlio

if TYPE_CHECKING:
    # training.model imports torch; `_run_config_class` resolves it on first use, so importing
    # this module (for STAGES, e.g. from pipelines) stays light.
    from training.model import ModelConfig

# The training stages, in order; the single definition (pipelines import it from here).
STAGES = ("pretrain", "cpt", "multimodal", "long-context")
CONFIG_DIR = Path(__file__).parent / "configs"


class ConfigError(ValueError):
    """A training config is invalid; the message names the file and each bad field."""


# NumPy's and torch's seeds are unsigned 32-bit integers; an Adam beta is a decay in [0, 1).
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]
Beta = Annotated[float, Field(ge=0, lt=1)]


class _Strict(BaseModel):
    # `.inf` / `.nan` are YAML floats: refused in every float field (a run would train on NaN)
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TrainSection(_Strict):
    """How steps run: batch, precision, optimiser constants, logging, evaluation, checkpoints."""

    batch_size: int = Field(default=8, ge=1)
    grad_accum: int = Field(default=1, ge=1)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["float32", "bfloat16"] = "float32"  # bfloat16 = autocast on CUDA only
    compile: bool = False
    # auto: FlexAttention block masks on CUDA, chunked SDPA elsewhere; dense = explicit (T, T) mask
    attention_backend: Literal["auto", "flex", "chunked", "dense"] = "auto"
    seed: Seed = 0
    threads: int = Field(default=0, ge=0)  # CPU threads for torch; 0 leaves torch's default
    deterministic: bool = True
    weight_decay: float = Field(default=0.1, ge=0)
    betas: tuple[Beta, Beta] = (0.9, 0.95)
    grad_clip: float = Field(default=1.0, ge=0)  # 0 disables clipping
    log_every: int = Field(default=10, ge=1)
    eval_every: int = Field(default=100, ge=1)
    eval_max_sequences: int = Field(default=64, ge=1)  # per bucket/group
    checkpoint_every: int = Field(default=100, ge=1)
    keep_checkpoints: int = Field(default=2, ge=1)


class StageSection(_Strict):
    """One training stage: its mixture, length and learning-rate schedule."""

    mixture: str = Field(min_length=1)  # name under lake `mixtures/`
    steps: int = Field(ge=1)
    lr: float = Field(gt=0)
    min_lr_ratio: float = Field(default=0.1, ge=0, le=1)
    warmup_steps: int = Field(default=0, ge=0)
    schedule: Literal["cosine", "wsd"] = "cosine"
    decay_fraction: float = Field(default=0.2, gt=0, le=1)  # WSD: share of steps spent decaying
    batch_size: int | None = Field(default=None, ge=1)  # overrides train.batch_size
    rope_base: float | None = Field(default=None, gt=0)  # overrides model.rope_base (local layers)
    max_seq_len: int | None = Field(default=None, ge=1)  # overrides model.max_seq_len


class MultimodalSection(StageSection):
    """The multimodal stage: a stage plus the vision side (training/vision.py).

    Image tokens per image come from the mixture (manifest `image_tokens`), the image size and
    normalisation from the CLIP model.
    """

    freeze_vision: bool = True  # false: the CLIP image tower trains too
    adapter_only_steps: int = Field(default=0, ge=0)  # the first N steps train the adapter only
    adapter_heads: int = Field(default=4, ge=1)
    adapter_ffn_mult: float = Field(default=2.0, gt=0)
    # the text eval loss at the end may exceed the init checkpoint's by this fraction at most
    text_loss_tolerance: float = Field(default=0.05, ge=0)
    mismatch_seed: Seed = 0  # seeds the derangement of eval images (the mismatched condition)


class StagesSection(_Strict):
    """The per-stage sections; a stage left out cannot be run with this config."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    pretrain: StageSection | None = None
    cpt: StageSection | None = None
    multimodal: MultimodalSection | None = None
    long_context: StageSection | None = Field(default=None, alias="long-context")


class RunConfig(_Strict):
    """A whole training config file."""

    model: ModelConfig
    train: TrainSection = TrainSection()
    stages: StagesSection

    @field_validator("model", mode="before")
    @classmethod
    def _vocab_placeholder(cls, value: Any) -> Any:
        # vocab_size usually comes from the mixture; validate the rest with a placeholder.
        if isinstance(value, dict) and value.get("vocab_size") is None:
            value = {**value, "vocab_size": 1}
        return value

    def stage(self, name: str) -> StageSection:
        """The section of a stage, with a clear error if it is unknown or missing."""
        if name not in STAGES:
            raise ConfigError(f"unknown stage {name!r}; choose one of {', '.join(STAGES)}")
        section = getattr(self.stages, name.replace("-", "_"))
        if section is None:
            raise ConfigError(f"stages.{name}: missing; add a `{name}:` section to the config")
        return section


def _run_config_class() -> type[RunConfig]:
    """RunConfig with its `model: ModelConfig` field resolved (imports torch the first time)."""
    if not RunConfig.__pydantic_complete__:
        from training.model import ModelConfig

        RunConfig.model_rebuild(_types_namespace={"ModelConfig": ModelConfig})
    return RunConfig


def resolve_config_path(path: str | Path) -> Path:
    """A config path as given, else the name of a packaged config (`tiny`, `gpu`)."""
    p = Path(path)
    if p.exists():
        return p
    packaged = CONFIG_DIR / (p.name if p.suffix else f"{p.name}.yaml")
    if packaged.exists():
        return packaged
    raise ConfigError(
        f"{path}: config file not found (packaged configs: tiny, gpu in {CONFIG_DIR})"
    )


def load_run_config(path: str | Path) -> tuple[RunConfig, dict[str, Any]]:
    """Load and validate a config file; return the config and the raw mapping (for the run record)."""
    p = resolve_config_path(path)
    try:
        raw = yamlio.load_file(p)
    except yamlio.YamlFileError as e:
        raise ConfigError(str(e)) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: expected a mapping with model/train/stages sections")
    try:
        cfg_class = _run_config_class()
        cfg = cfg_class.model_validate(raw)
    except ValidationError as e:
        from common.errors import validation_problems

        problems = validation_problems(e, model=cfg_class)
        raise ConfigError(f"{p}: invalid training config: {problems}") from e
    raw_vocab = (raw.get("model") or {}).get("vocab_size")
    if raw_vocab is None:
        cfg.model.vocab_size = 0  # 0 = take it from the mixture
    return cfg, raw
