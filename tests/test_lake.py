"""The lake: root selection, standard stage directories, manifests beside every dataset."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common import lake


def test_lake_root_defaults_to_dot_lake(monkeypatch, tmp_path):
    monkeypatch.delenv("REFINERY_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert lake.lake_root() == (tmp_path / "lake").resolve()


def test_refinery_home_overrides_lake_root(monkeypatch, tmp_path):
    monkeypatch.setenv("REFINERY_HOME", str(tmp_path / "elsewhere"))
    assert lake.lake_root() == (tmp_path / "elsewhere").resolve()
    assert lake.stage_dir("crawl").is_dir()
    assert lake.stage_dir("crawl") == (tmp_path / "elsewhere" / "crawl").resolve()


def test_unknown_stage_names_the_known_ones(tmp_path):
    with pytest.raises(KeyError, match="known: .*crawl"):
        lake.stage_dir("crawll", tmp_path)


def test_write_parquet_writes_manifest_with_rows_inputs_and_config_hash(tmp_path):
    table = pa.table({"id": ["a", "b", "c"], "n": [1, 2, 3]})
    path = lake.write_parquet(
        table, tmp_path / "x" / "docs.parquet", inputs=["in.parquet"], config={"k": 1}
    )
    assert pq.read_table(path).num_rows == 3
    manifest = json.loads((tmp_path / "x" / "docs.parquet.manifest.json").read_text())
    assert manifest["rows"] == 3
    assert manifest["inputs"] == ["in.parquet"]
    assert manifest["schema_version"] == lake.SCHEMA_VERSION
    assert manifest["config_sha256"] == lake.config_hash({"k": 1})
    assert lake.read_manifest(path)["dataset"] == "docs.parquet"
    assert not list((tmp_path / "x").glob("*.tmp"))


def test_config_hash_is_order_independent_and_sensitive():
    assert lake.config_hash({"a": 1, "b": 2}) == lake.config_hash({"b": 2, "a": 1})
    assert lake.config_hash({"a": 1}) != lake.config_hash({"a": 2})


def test_directory_dataset_manifest_lives_inside(tmp_path):
    d = tmp_path / "shards"
    d.mkdir()
    lake.write_manifest(d, rows=None, config=None)
    assert (d / "manifest.json").exists()


def test_missing_manifest_error_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="no manifest"):
        lake.read_manifest(tmp_path / "nothing.parquet")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[1]", "a manifest is a JSON object, this is a list"),
        ("null", "a manifest is a JSON object, this is a null"),
        ('{"rows": ', "not a JSON manifest"),
    ],
)
def test_a_manifest_that_is_not_a_json_object_is_an_error_naming_it(tmp_path, text, said):
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ValueError) as err:
        lake.read_manifest(tmp_path, fix="rebuild it")
    assert str(err.value).startswith(f"{tmp_path / 'manifest.json'}: {said}")
    assert str(err.value).endswith("; rebuild it")


def test_a_field_missing_from_a_manifest_names_the_file_and_the_fix(tmp_path):
    (tmp_path / "manifest.json").write_text('{"rows": 3}')
    manifest = lake.read_manifest(tmp_path, fix="rebuild it")
    assert manifest == {"rows": 3} and manifest.get("shards") is None
    with pytest.raises(KeyError) as err:
        manifest["shards"]
    assert err.value.args[0] == f"{tmp_path / 'manifest.json'}: no 'shards' field; rebuild it"


@pytest.mark.parametrize("below", ["", "sub"], ids=["the-file", "below-the-file"])
def test_refinery_home_at_a_file_names_the_variable_and_the_fix(monkeypatch, tmp_path, below):
    (tmp_path / "afile").write_text("")
    home = tmp_path / "afile" / below if below else tmp_path / "afile"
    monkeypatch.setenv("REFINERY_HOME", str(home))
    with pytest.raises(NotADirectoryError) as err:
        lake.lake_root()
    assert str(err.value) == (
        f"REFINERY_HOME={home}: {tmp_path / 'afile'} is a file, not a directory; set "
        "REFINERY_HOME to a directory for the lake (created if missing), e.g. "
        "REFINERY_HOME=$PWD/lake"
    )
