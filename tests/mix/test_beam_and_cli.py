"""Beam and in-process builds agree byte for byte; the CLI commands work end to end."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer
from typer.testing import CliRunner

from pipelines.beam.mix import build_mixture_beam
from pipelines.cli import app
from training.mixture.builder import build_mixture

from .conftest import base_spec


@pytest.mark.timeout(180)
def test_beam_direct_runner_gives_byte_identical_shards(lake, write_spec, tmp_path):
    spec = write_spec(base_spec(lake))
    local = build_mixture(spec, tmp_path / "local")
    beam = build_mixture_beam(spec, tmp_path / "beam", pipeline_args=["--runner=DirectRunner"])
    assert [s["sha256"] for s in beam["shards"]] == [s["sha256"] for s in local["shards"]]

    assert (tmp_path / "beam/manifest.json").read_bytes() == (
        tmp_path / "local/manifest.json"
    ).read_bytes()
    # The lake's manifest fields, deterministic: what the mixture was made from.
    doc = json.loads((tmp_path / "local/manifest.json").read_text())
    assert doc["schema_version"] == 1 and doc["rows"] == doc["num_sequences"]
    assert str(spec) in doc["inputs"] and any(i.endswith(".parquet") for i in doc["inputs"])
    assert beam["beam_counters"]["tokens"] == sum(s["available_tokens"] for s in local["sources"])
    assert not (tmp_path / "beam/_work").exists()


@pytest.mark.timeout(120)
def test_cli_tokenizer_train_validate_build_report(lake, write_spec, tmp_path, monkeypatch):
    monkeypatch.setenv("REFINERY_HOME", str(lake))
    runner = CliRunner()
    tok_path = tmp_path / "tok" / "tokenizer.json"
    res = runner.invoke(
        app,
        [
            "tokenizer",
            "train",
            "--out",
            str(tok_path),
            "--vocab-size",
            "400",
            "--sample-tokens",
            "20000",
        ],
    )
    assert res.exit_code == 0, res.output
    tok = Tokenizer.from_file(str(tok_path))
    assert tok.token_to_id("<|endoftext|>") == 0 and tok.token_to_id("<|image_end|>") == 4
    assert (
        json.loads((tok_path.parent / "tokenizer.json.manifest.json").read_text())["vocab_size"]
        == tok.get_vocab_size()
    )

    spec = base_spec(lake, tokenizer="lake/tokenizer/tokenizer.json")
    spec["buckets"]["web"]["sources"][0]["path"] = "lake/filter/documents.parquet"
    path = write_spec(spec)
    res = runner.invoke(app, ["mix", "validate", str(path)])
    assert res.exit_code == 0 and "valid mixture" in res.output, res.output
    out = tmp_path / "mix"
    res = runner.invoke(app, ["mix", "build", str(path), "--out", str(out)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["mix", "report", str(out)])
    assert (
        res.exit_code == 0
        and "multilingual" in res.output
        and (out / "report.png").stat().st_size > 1000
    )
    assert json.loads((out / "manifest.json").read_text())["schema_version"] == 1

    bad = write_spec(base_spec(lake, total_tokens=-1), "bad.yaml")
    res = runner.invoke(app, ["mix", "validate", str(bad)])
    assert res.exit_code == 2 and "total_tokens" in res.output
