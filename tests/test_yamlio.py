"""common.yamlio: YAML 1.2's booleans, a key given twice refused, files read with one-line errors."""

from __future__ import annotations

import pytest

from common import yamlio


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb: 2\na: 3\n", r"key 'a' is given twice \(lines 1 and 3\); keep one"),
        ("raw_pages: {delay: 0.5}\nraw_pages: {max_pages: 3}\n", r"'raw_pages' .*lines 1 and 2"),
        ("top:\n  x: 1\n  y: 2\n  x: 1\n", r"key 'x' is given twice \(lines 2 and 4\)"),
        ("{a: 1, a: 2}", r"key 'a' is given twice \(line 1\)"),
        ("- {k: 1, k: 2}\n", r"key 'k' is given twice"),
        ("1: a\n01: b\n", r"key '01' \(the same as '1'\) is given twice \(lines 1 and 2\)"),
    ],
    ids=["top", "asset-config", "nested", "flow", "in-a-list", "same-value"],
)
def test_a_key_given_twice_is_refused_naming_the_key_and_both_lines(text, message):
    with pytest.raises(yamlio.DuplicateKeyError, match=message):
        yamlio.load(text)


def test_merge_keys_still_merge_and_a_key_beside_a_merge_overrides_it():
    text = "base: &b {x: 1, y: 2}\nmore: &m {z: 3}\nc:\n  <<: [*b, *m]\n  x: 5\n"
    assert yamlio.load(text)["c"] == {"x": 5, "y": 2, "z": 3}


def test_load_file_names_the_file_and_the_byte_that_is_not_utf8(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(yamlio.YamlFileError) as err:
        yamlio.load_file(path)
    assert str(err.value) == f"{path}: not UTF-8 at byte 11 (line 2); save it as UTF-8"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\n b: 2\n", r"not valid YAML: line 2, column 3: mapping values are not allowed"),
        ("a: [1, 2\n", r"not valid YAML: line 2, column 1: .*\(while parsing a flow sequence"),
        ("a: 1\na: 2\n", r"not valid YAML: key 'a' is given twice \(lines 1 and 2\)"),
    ],
)
def test_load_file_says_where_the_yaml_is_wrong_on_one_line(tmp_path, text, message):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    with pytest.raises(yamlio.YamlFileError, match=message) as err:
        yamlio.load_file(path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)


def test_load_file_reads_a_valid_file_and_leaves_a_missing_one_to_the_caller(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text("name: café\nn: 3\n", encoding="utf-8")
    assert yamlio.load_file(path) == {"name": "café", "n": 3}
    (tmp_path / "empty.yaml").write_text("")
    assert yamlio.load_file(tmp_path / "empty.yaml") is None
    with pytest.raises(FileNotFoundError):
        yamlio.load_file(tmp_path / "missing.yaml")


def _loaders():
    from filters.config import load_config
    from filters.images.config import load_image_config
    from filters.images.domains import load_domain_spec
    from pipelines.stages.crawl import _yaml
    from training.mixture.spec import load_spec
    from training.train_config import load_run_config

    return {
        "mixture": load_spec,
        "filter": load_config,
        "image filter": load_image_config,
        "domains": load_domain_spec,
        "crawl": _yaml,
        "train": load_run_config,
    }


@pytest.mark.parametrize("name", ["filter", "image filter", "domains", "crawl", "train", "mixture"])
@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"seed: 1\nname: caf\xe9\n", "not UTF-8 at byte 17 (line 2); save it as UTF-8"),
        (b"seed: 1\nseed: 2\n", "key 'seed' is given twice (lines 1 and 2)"),
    ],
)
def test_every_config_loader_names_the_file_and_what_is_wrong_in_one_line(
    tmp_path, name, data, says
):
    path = tmp_path / "conf.yaml"
    path.write_bytes(data)
    with pytest.raises(ValueError) as info:
        _loaders()[name](path)
    message = str(info.value)
    assert str(path) in message and says in message and "\n" not in message
