"""Spec validation: every bad field gets an error that names it."""

from __future__ import annotations

import copy
import re

import pytest

from training.mixture.builder import build_mixture
from training.mixture.read import check_spec_data
from training.mixture.spec import SpecError, load_spec, parse_spec, resolve_path

from .conftest import base_spec


def _err(lake, mutate) -> str:
    spec = base_spec(lake)
    mutate(spec)
    with pytest.raises(SpecError) as exc:
        parse_spec(spec, "s.yaml")
    return str(exc.value)


def test_valid_spec_parses(lake):
    spec = parse_spec(base_spec(lake))
    assert spec.effective_weights() == {"web": 0.6, "multilingual": 0.4}


def test_weights_not_summing_to_one_name_buckets(lake):
    msg = _err(lake, lambda s: s["buckets"]["web"].update(weight=0.5))
    assert "buckets" in msg and "sum to 0.9" in msg and "web=0.5" in msg


def test_empty_source_list_is_named(lake):
    msg = _err(lake, lambda s: s["buckets"]["web"].update(sources=[]))
    assert "buckets.web.sources" in msg


def test_unknown_field_is_named(lake):
    msg = _err(lake, lambda s: s["buckets"]["web"].update(wieght=0.1))
    assert "buckets.web.wieght" in msg


def test_partial_source_weights_rejected(lake):
    def mutate(s):
        src = s["buckets"]["web"]["sources"][0]
        s["buckets"]["web"]["sources"] = [dict(src, weight=0.5), dict(src)]

    assert "every source" in _err(lake, mutate)


def test_stage_weights_must_sum_to_one_and_end_at_one(lake):
    msg = _err(
        lake, lambda s: s.update(stages=[{"name": "a", "until": 0.5, "weights": {"web": 0.9}}])
    )
    assert "stages[0]" in msg and "sum to 1.3" in msg
    msg = _err(lake, lambda s: s.update(stages=[{"name": "a", "until": 0.5}]))
    assert "until: 1.0" in msg
    msg = _err(
        lake, lambda s: s.update(stages=[{"name": "a", "until": 1.0, "weights": {"nope": 0.1}}])
    )
    assert "unknown bucket" in msg and "nope" in msg


def test_negative_temperature_named(lake):
    assert "buckets.multilingual.temperature" in _err(
        lake, lambda s: s["buckets"]["multilingual"].update(temperature=0)
    )


def test_where_with_missing_column_names_source(lake, write_spec):
    spec = base_spec(lake)
    spec["buckets"]["web"]["sources"][0]["where"] = "langage = 'en'"
    path = write_spec(spec)
    with pytest.raises(SpecError) as exc:
        check_spec_data(load_spec(path), path.parent)
    assert "buckets.web.sources[0]" in str(exc.value) and "langage" in str(exc.value)


def test_source_matching_no_rows_is_an_error(lake, write_spec):
    spec = base_spec(lake)
    spec["buckets"]["web"]["sources"][0]["where"] = "lang = 'xx'"
    path = write_spec(spec)
    with pytest.raises(
        SpecError, match=r"buckets\.web\.sources\[0\].*no rows with training_allowed = true"
    ):
        check_spec_data(load_spec(path), path.parent)


def test_missing_path_is_named(lake, write_spec):
    spec = base_spec(lake)
    spec["buckets"]["web"]["sources"][0]["path"] = "nothing/here/*.parquet"
    path = write_spec(spec)
    with pytest.raises(SpecError, match=r"buckets\.web\.sources\[0\]\.path"):
        check_spec_data(load_spec(path), path.parent)


@pytest.mark.timeout(60)
def test_more_tokens_than_max_epochs_allow_is_reported(lake, write_spec, tmp_path):
    spec = base_spec(lake, total_tokens=400_000)
    path = write_spec(spec)
    with pytest.raises(SpecError, match=r"buckets\.multilingual: .*max_epochs=4 allows only"):
        build_mixture(path, tmp_path / "out")
    allowed = copy.deepcopy(spec) | {"allow_shortfall": True}
    manifest = build_mixture(write_spec(allowed, "allowed.yaml"), tmp_path / "out2")
    (short,) = manifest["shortfalls"]
    assert short["bucket"] == "multilingual" and short["missing_tokens"] > 0
    groups = manifest["buckets"]["multilingual"]["groups"]
    for g in groups.values():  # every language sits at its cap of 4 epochs
        assert g["epochs"] == pytest.approx(4.0, abs=1e-3)


def test_lake_paths_resolve_against_lake_root(tmp_path):
    assert (
        resolve_path("lake/filter/x.parquet", tmp_path / "specs", tmp_path / "L")
        == tmp_path / "L/filter/x.parquet"
    )
    assert (
        resolve_path("data/x.parquet", tmp_path / "specs", tmp_path / "L")
        == tmp_path / "specs/data/x.parquet"
    )
    assert str(resolve_path("/abs/x.parquet", tmp_path, tmp_path)) == "/abs/x.parquet"


def test_a_string_training_allowed_column_is_named_with_its_fix(lake, write_spec, tmp_path):
    """A source whose training_allowed is a string gives no consent: the spec check and the
    tokenizer sample name the column, its type and the fix, not "loosen the predicate"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from training.tokenizer import sample_texts

    table = pq.read_table(lake / "filter" / "documents.parquet")
    i = table.schema.get_field_index("training_allowed")
    flags = pa.array(["true" if v else "false" for v in table["training_allowed"].to_pylist()])
    bad = tmp_path / "str_flag.parquet"
    pq.write_table(table.set_column(i, "training_allowed", flags), bad)
    spec = base_spec(lake)
    spec["buckets"]["web"]["sources"][0]["path"] = str(bad)
    path = write_spec(spec)
    fix = r"training_allowed holds string, not boolean.*write training_allowed as a boolean column"
    with pytest.raises(SpecError, match=r"buckets\.web\.sources\[0\]: .*" + fix):
        check_spec_data(load_spec(path), path.parent)
    with pytest.raises(ValueError, match=fix):
        sample_texts([bad], 1000)


@pytest.mark.parametrize(
    ("weights", "problem"),
    [
        ({"web": 2.0, "multilingual": -1.0}, r"stages\.0\.weights\.web: .*less than or equal to 1"),
        ({"web": float("nan")}, r"stages\.0\.weights\.web: Input should be a finite number"),
        ({"web": float("inf")}, r"stages\.0\.weights\.web: Input should be a finite number"),
    ],
)
def test_a_stage_weight_outside_0_to_1_is_named_with_stage_and_bucket(lake, weights, problem):
    msg = _err(lake, lambda s: s.update(stages=[{"name": "a", "until": 1.0, "weights": weights}]))
    assert re.search(problem, msg), msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda s: s.update(seed=-1), r"seed: Input should be greater than or equal to 0"),
        (
            lambda s: s["buckets"]["web"].update(repeat=[{"where": "true", "times": float("inf")}]),
            r"buckets\.web\.repeat\.0\.times: Input should be a finite number",
        ),
        (
            lambda s: s["buckets"]["multilingual"].update(temperature=float("nan")),
            r"buckets\.multilingual\.temperature: Input should be a finite number",
        ),
    ],
)
def test_bad_numbers_are_one_line_naming_the_field(lake, mutate, problem):
    msg = _err(lake, mutate)
    assert re.search(problem, msg) and "\n" not in msg, msg


def test_a_tiny_temperature_gives_the_largest_group_everything(lake, write_spec, tmp_path):
    from training.mixture.sampling import temperature_shares

    assert temperature_shares({"en": 400.0, "de": 150.0, "fr": 0.0}, 1e-300) == {
        "en": 1.0,
        "de": 0.0,
        "fr": 0.0,
    }
    assert temperature_shares({"a": 10.0, "b": 10.0}, 5e-324) == {"a": 0.5, "b": 0.5}
    spec = base_spec(lake, total_tokens=4_000, allow_shortfall=True)
    spec["buckets"]["multilingual"]["temperature"] = 1e-300
    m = build_mixture(write_spec(spec), tmp_path / "mix")
    groups = m["buckets"]["multilingual"]["groups"]
    assert groups["de"]["tokens"] > 0 and groups["fr"]["tokens"] == 0  # de has the most text
