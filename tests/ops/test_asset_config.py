"""$REFINERY_ASSET_CONFIG: config defaults for launches without run config (the Dagster UI's
"Materialize all" and backfills); run config at launch still wins; mistakes name file and fix."""

from __future__ import annotations

import pytest

from pipelines.graph import CONFIG_DEFAULTS_ENV, build_definitions


def _default(defs, op: str) -> dict:
    (node,) = [a.node_def for a in defs.assets if a.node_def.name == op]
    return node.config_schema.as_field().default_value


def test_file_sets_defaults_of_named_assets_only(tmp_path, monkeypatch):
    cfg = tmp_path / "ui.yaml"
    cfg.write_text(
        "raw_pages: {seeds: ['http://127.0.0.1:9/'], delay: 0.2}\ncpt_model: {steps: 6}\n"
    )
    monkeypatch.delenv(CONFIG_DEFAULTS_ENV, raising=False)
    before = build_definitions("local", root=tmp_path)
    monkeypatch.setenv(CONFIG_DEFAULTS_ENV, str(cfg))
    after = build_definitions("local", root=tmp_path)
    assert _default(before, "raw_pages")["seeds"] == []
    assert _default(after, "raw_pages")["seeds"] == ["http://127.0.0.1:9/"]
    assert _default(after, "raw_pages")["delay"] == 0.2
    assert _default(after, "cpt_model")["steps"] == 6
    assert _default(after, "pretrained_model") == _default(before, "pretrained_model")


def test_values_take_their_fields_types(tmp_path, monkeypatch):
    """The file reads only true/false as booleans (YAML 1.2: `no` can be Norwegian elsewhere);
    a bool field given yes/off still gets a boolean, as Dagster's config requires."""
    cfg = tmp_path / "ui.yaml"
    cfg.write_text(
        "raw_pages: {resume: yes, allow_private_networks: off}\ncpt_model: {steps: '6'}\n"
    )
    monkeypatch.setenv(CONFIG_DEFAULTS_ENV, str(cfg))
    defs = build_definitions("local", root=tmp_path)
    assert _default(defs, "raw_pages")["resume"] is True
    assert _default(defs, "raw_pages")["allow_private_networks"] is False
    assert _default(defs, "cpt_model")["steps"] == 6


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus: {steps: 1}\n", r"'bogus' is not an asset; use one of .*cpt_model"),
        ("cpt_model: {steps: many}\n", r"cpt_model\.steps: .*integer.*\(got 'many'\)"),
        ("cpt_model: {stepz: 1}\n", r"cpt_model: \['stepz'\] are not config fields; use .*steps"),
        ("- a\n", "expected a mapping of asset name to config fields"),
        (
            "raw_pages: {delay: 0.5}\nraw_pages: {max_pages: 3}\n",
            r"=.*ui.yaml: not valid YAML: key 'raw_pages' is given twice \(lines 1 and 2\)",
        ),
        ("raw_pages:\n", r"raw_pages: expected a mapping of config fields .*got None; use .*delay"),
        ("cpt_model: {steps: 0}\n", r"cpt_model\.steps: .*greater than or equal to 1"),
        ("raw_pages: {per_host_connections: 0}\n", r"per_host_connections: .*greater than or"),
    ],
    ids=["unknown-asset", "bad-type", "unknown-field", "list", "twice", "no-value", "min", "min2"],
)
def test_mistakes_name_the_file_the_key_and_the_fix(tmp_path, monkeypatch, text, message):
    cfg = tmp_path / "ui.yaml"
    cfg.write_text(text)
    monkeypatch.setenv(CONFIG_DEFAULTS_ENV, str(cfg))
    with pytest.raises(ValueError, match=message) as err:
        build_definitions("local", root=tmp_path)
    assert str(cfg) in str(err.value)


def test_a_file_that_is_not_utf8_names_the_variable_the_file_and_the_byte(tmp_path, monkeypatch):
    cfg = tmp_path / "ui.yaml"
    cfg.write_bytes(b"raw_pages: {max_pages: \xff}\n")
    monkeypatch.setenv(CONFIG_DEFAULTS_ENV, str(cfg))
    with pytest.raises(ValueError) as err:
        build_definitions("local", root=tmp_path)
    assert str(err.value) == (
        f"{CONFIG_DEFAULTS_ENV}={cfg}: not UTF-8 at byte 23 (line 1); save it as UTF-8"
    )


def test_a_missing_file_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(CONFIG_DEFAULTS_ENV, str(tmp_path / "nope.yaml"))
    with pytest.raises(ValueError, match=f"{CONFIG_DEFAULTS_ENV}=.*nope.yaml: cannot read it"):
        build_definitions("local", root=tmp_path)


def test_ui_runs_execute_their_steps_in_the_runs_process_locally(tmp_path):
    """A launch from the UI (no executor in its run config) runs its steps one after another in
    the run's process locally, and a process per step on a cluster (Dagster's default)."""
    local = build_definitions("local", root=tmp_path).resolve_implicit_global_asset_job_def()
    assert local.executor_def.name == "in_process"
    cluster = build_definitions("cluster").resolve_implicit_global_asset_job_def()
    assert cluster.executor_def.name == "multiprocess"
