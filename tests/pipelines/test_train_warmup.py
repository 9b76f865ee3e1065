"""`refinery clip train` and `refinery captioner train` take `--warmup` (docs/training.md: cosine
to 0 after a warm-up of `--warmup` steps, default a tenth of the run) and hand it to the
trainer; without the flag the trainer's own default (None: a tenth of the run) applies. The
trainers are replaced: the test reads what they were given."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

PAIRS = [{"image_file": f"{i}.png", "caption": f"caption {i}"} for i in range(2)]


@pytest.fixture()
def trainer(tmp_path, monkeypatch):
    """Invoke `refinery ARGS...` with train_clip and train_coca replaced: (exit code, the
    keyword arguments the trainer got, output)."""
    import training.clip
    import training.coca
    from common import pairs
    from pipelines.cli import app
    from pipelines.stages import images

    monkeypatch.setenv("REFINERY_HOME", str(tmp_path / "lake"))
    monkeypatch.setenv("REFINERY_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr(images, "pairs_files", lambda d: [Path(d) / "pairs.parquet"])
    monkeypatch.setattr(pairs, "pairs_files", lambda ds: [Path(d) / "pairs.parquet" for d in ds])
    monkeypatch.setattr(images, "kept_pairs", lambda files, consent: PAIRS)
    got = []

    def train(*args, **kwargs):
        got.append(kwargs)
        raise ValueError("stopped before training")

    monkeypatch.setattr(training.clip, "train_clip", train)
    monkeypatch.setattr(training.coca, "train_coca", train)

    def invoke(*args: str):
        got.clear()
        result = CliRunner().invoke(app, [*args, "--pairs", str(tmp_path / "p")])
        return result.exit_code, (got[0] if got else None), result.output

    return invoke


@pytest.mark.parametrize("command", [["clip", "train"], ["captioner", "train"]])
def test_warmup_reaches_the_trainer(trainer, command):
    code, kwargs, out = trainer(*command, "--steps", "2", "--warmup", "1")
    assert code == 2 and "stopped before training" in out, out
    assert kwargs["warmup"] == 1 and kwargs["steps"] == 2
    code, kwargs, out = trainer(*command, "--warmup", "0")
    assert kwargs["warmup"] == 0, out
    code, kwargs, out = trainer(*command)
    assert kwargs["warmup"] is None, out  # the trainer's default: a tenth of the run


def test_the_train_group_s_help_names_its_stages():
    from pipelines.stages import GROUPS

    assert "pretrain, cpt, multimodal, long-context" in GROUPS["train"]
