"""Two refusals name what to do: a mixture directory never built, a checkpoint of another model."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from training.loader import ShardLoader
from training.model import ModelConfig
from training.trainer import TrainError, check_compatible


def test_a_mixture_directory_never_built_names_its_manifest(tmp_path):
    missing = tmp_path / "never-built"
    with pytest.raises(FileNotFoundError) as err:
        ShardLoader(missing, 1)
    line = str(err.value)
    assert str(missing / "manifest.json") in line and ".manifest.json" not in line
    assert "refinery mix build" in line and "\n" not in line


def test_a_checkpoint_of_another_model_names_the_fix_and_only_the_fields_in_use():
    ours = ModelConfig(vocab_size=300, d_model=48, n_layer=5)
    saved = dataclasses.asdict(dataclasses.replace(ours, d_model=32, n_layer=4))
    with pytest.raises(TrainError) as err:
        check_compatible(saved, ours, Path("runs/full/checkpoints/step_0000012.pt"))
    line = str(err.value)
    assert "d_model: checkpoint 32 vs config 48" in line and "n_layer" in line
    assert "moe_" not in line  # mixture of experts is off in both
    assert "run.json" in line and "\n" not in line
