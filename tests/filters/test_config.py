"""Filter config: YAML validated by pydantic; errors name the field."""

import pytest

from filters.config import ConfigError, config_from_dict, load_config


def test_defaults_load_without_a_file():
    cfg = load_config(None)
    assert "de" in cfg.languages and cfg.dedup.bands * cfg.dedup.rows <= cfg.dedup.num_perm


def test_yaml_overrides_per_language(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text(
        "languages: [en, de]\n"
        "heuristics_by_lang:\n  de: {min_words: 5}\n"
        "quality:\n  thresholds:\n    de: {keep_rate: 0.5}\n    en: {score: 0.4}\n"
    )
    cfg = load_config(path)
    assert cfg.heuristics_for("de").min_words == 5
    assert cfg.heuristics_for("en").min_words == cfg.heuristics.min_words
    assert cfg.quality.thresholds["de"].keep_rate == 0.5


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"heuristics": {"max_symbol_ratio": 2}}, "heuristics.max_symbol_ratio"),
        ({"dedup": {"num_perm": 64, "bands": 16, "rows": 8}}, "dedup"),
        (
            {"quality": {"thresholds": {"de": {"score": 0.3, "keep_rate": 0.5}}}},
            "quality.thresholds.de",
        ),
        ({"heuristcs": {}}, "heuristcs"),
        (
            {"quality": {"thresholds": {"fr": {"positive_recall": 1.5}}}},
            "quality.thresholds.fr.positive_recall",
        ),
        ({"quality": {"thresholds": {"fr": {}}}}, "quality.thresholds.fr"),
        ({"heuristics": {"max_mojibake_ratio": -0.1}}, "heuristics.max_mojibake_ratio"),
    ],
)
def test_invalid_config_names_the_field(data, field):
    with pytest.raises(ConfigError) as err:
        config_from_dict(data, source="f.yaml")
    assert field in str(err.value) and "f.yaml" in str(err.value)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (
            {"heuristcs": {}},
            "heuristcs: Extra inputs are not permitted (did you mean 'heuristics'?)",
        ),
        (
            {"quality": {"thresholds": {"de": {"scor": 0.1}}}},
            "quality.thresholds.de.scor: Extra inputs are not permitted (did you mean 'score'?)",
        ),
        (
            {"dedup": {"num_perms": 64}},
            "dedup.num_perms: Extra inputs are not permitted (did you mean 'num_perm'?)",
        ),
        ({"colour": 1}, "colour: Extra inputs are not permitted"),  # nothing close: no guess
    ],
)
def test_an_unknown_key_names_the_closest_field_of_its_level(data, said):
    with pytest.raises(ConfigError) as err:
        config_from_dict(data, source="f.yaml")
    assert str(err.value) == f"f.yaml: invalid filter config: {said}"


def test_missing_and_malformed_files_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("languages: [en\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_norwegian_is_a_language_code_not_false(tmp_path):
    """YAML 1.1 reads a bare `no` as false: the configs are read with YAML 1.2's booleans
    (common.yamlio), so Norwegian can be listed, weighted and overridden unquoted, while a
    boolean field still takes true, false, yes or off."""
    path = tmp_path / "f.yaml"
    path.write_text(
        "languages: [en, no, nn]\n"
        "heuristics: {boilerplate_lexicon: off}\n"
        "heuristics_by_lang:\n  no: {min_words: 5, boilerplate_lexicon: yes}\n"
        "quality:\n  thresholds:\n    no: {keep_rate: 0.5}\n"
        "safety: {wordlists: off}\n"
    )
    cfg = load_config(path)
    assert cfg.safety.wordlists == "off"  # YAML 1.1 made it false, which the choice refused
    assert cfg.languages == ["en", "no", "nn"]
    assert cfg.heuristics_for("no").min_words == 5
    assert cfg.heuristics_for("no").boilerplate_lexicon is True
    assert cfg.heuristics.boilerplate_lexicon is False
    assert cfg.quality.thresholds["no"].keep_rate == 0.5


def test_yaml_booleans_are_only_true_and_false():
    from common import yamlio

    assert yamlio.load("[true, True, TRUE, false, False, FALSE]") == [True] * 3 + [False] * 3
    assert yamlio.load("[no, No, NO, yes, on, off, y, n]") == [
        "no", "No", "NO", "yes", "on", "off", "y", "n"
    ]  # fmt: skip
    assert yamlio.load("{a: 1, b: 1.5, c: ~, d: '2'}") == {"a": 1, "b": 1.5, "c": None, "d": "2"}
    assert yamlio.load("") is None


def test_a_language_the_identifier_cannot_give_is_refused_before_any_work(tmp_path):
    """A document is kept only in its identified language: `nb` (lid.176 says `no`) or a code
    it does not know would keep nothing, silently; the filter refuses it naming file, field and
    fix, before reading any document."""
    from filters.run import run_filter

    path = tmp_path / "f.yaml"
    path.write_text("languages: [en, nb]\n")
    with pytest.raises(
        ConfigError, match=r"f\.yaml: languages\.1: 'nb' .* names that language 'no'"
    ):
        run_filter(tmp_path / "no-such-docs", tmp_path / "out", config=str(path))
    with pytest.raises(ConfigError, match=r"languages\.0: 'xx' .* one of its 176 codes"):
        run_filter(tmp_path / "no-such-docs", tmp_path / "out", config={"languages": ["xx"]})
    assert not (tmp_path / "out").exists()
