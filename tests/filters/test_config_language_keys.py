"""Per-language config keys: each must be a code the language identifier gives (else the setting
never applies, silently), and a `heuristics_by_lang` override changes only the fields it names,
over the user's `heuristics` block."""

import pytest

from filters.config import ConfigError, FilterConfig, config_from_dict
from filters.run import check_languages

LABELS = frozenset({"en", "de", "no", "nn", "zh", "th", "lo", "km", "my"})


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"heuristics_by_lang": {"nb": {"min_words": 5}}}, "heuristics_by_lang.nb"),
        ({"quality": {"thresholds": {"nb": {"score": 0.3}}}}, "quality.thresholds.nb"),
        ({"quality": {"rescue_by_lang": {"nb": None}}}, "quality.rescue_by_lang.nb"),
        (
            {"quality": {"default_label_sources": {"nb": "graded"}}},
            "quality.default_label_sources.nb",
        ),
        (
            {"heuristics": {"no_sentences_exempt": ["th", "nb"]}},
            r"heuristics.no_sentences_exempt.1",
        ),
        (
            {"heuristics_by_lang": {"de": {"no_sentences_exempt": ["th", "nb"]}}},
            r"heuristics_by_lang.de.no_sentences_exempt.1",
        ),
    ],
)
def test_a_per_language_key_the_identifier_cannot_give_is_refused(data, field):
    cfg = config_from_dict({"languages": ["en", "no"], **data})
    with pytest.raises(ConfigError) as err:
        check_languages(cfg, LABELS, source="f.yaml")
    msg = str(err.value)
    assert msg.startswith(f"f.yaml: {field}: 'nb' is not a language")
    assert "the setting would never apply" in msg and "names that language 'no'" in msg
    assert "\n" not in msg


def test_good_per_language_keys_and_the_default_star_pass():
    cfg = config_from_dict(
        {
            "languages": ["en", "no"],
            "heuristics": {"no_sentences_exempt": ["th", "lo", "km", "my"]},
            "heuristics_by_lang": {"no": {"min_words": 5}},
            "quality": {
                "thresholds": {"no": {"keep_rate": 0.5}},
                "rescue_by_lang": {"de": None},
                "default_label_sources": {"*": "reference", "zh": "graded"},
            },
        }
    )
    check_languages(cfg, LABELS)
    check_languages(FilterConfig(languages=["en"]), LABELS)  # the default exempt list


def test_the_filter_refuses_an_unknown_override_key_before_any_work(tmp_path):
    from filters.run import run_filter

    path = tmp_path / "f.yaml"
    path.write_text("languages: [no]\nheuristics_by_lang:\n  nb: {min_words: 5}\n")
    with pytest.raises(
        ConfigError, match=r"f\.yaml: heuristics_by_lang\.nb: 'nb' .* names that language 'no'"
    ):
        run_filter(tmp_path / "no-such-docs", tmp_path / "out", config=str(path))
    assert not (tmp_path / "out").exists()


def test_an_override_changes_only_its_fields_over_the_users_heuristics():
    cfg = config_from_dict(
        {
            "heuristics": {
                "min_words": 50,
                "max_symbol_ratio": 0.1,
                "boilerplate_lexicon": False,
                "no_sentences_exempt": ["th", "lo", "km", "my"],
            },
            "heuristics_by_lang": {"de": {"min_words": 40}, "en": {"boilerplate_lexicon": True}},
        }
    )
    de, en, fr = (cfg.heuristics_for(x) for x in ("de", "en", "fr"))
    assert de.min_words == 40 and en.min_words == 50 and fr.min_words == 50
    assert de.max_symbol_ratio == en.max_symbol_ratio == 0.1
    assert de.boilerplate_lexicon is False and en.boilerplate_lexicon is True
    assert de.no_sentences_exempt == ["th", "lo", "km", "my"]
    assert de.max_words == cfg.heuristics.max_words  # unset in both: the built-in default
    # the workers read the config from its JSON: the same config again
    again = FilterConfig.model_validate_json(cfg.model_dump_json())
    assert again == cfg and again.heuristics_for("de") == de
