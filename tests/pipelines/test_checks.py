"""The asset-check logic (each domain's `checks` module) on real stage outputs, and on outputs tampered to
break each promise: every check passes on what the stages wrote and fails on the tampered copy."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml

from crawlers import checks as crawl_checks
from filters import checks as filter_checks
from tests.filters.conftest import docs_dir, labelled_docs  # noqa: F401 - the filter fixtures
from tests.mix.conftest import OPTED_OUT_MARKER, base_spec, lake  # noqa: F401 - the mix fixtures
from tests.train.conftest import mixtures, write_config  # noqa: F401 - the training fixtures
from training import checks as train_checks
from training.mixture import checks as mix_checks

NO_DEFAULTS = {"quality": {"use_default_models": False}}  # unscored: training models is slow


# --- stage outputs, built once per module with the real stage functions ---------------------


@pytest.fixture(scope="module")
def crawl_dir(sample_lake) -> Path:
    """The session's real crawl of the sample web (robots there deny some pages to both tokens;
    tests/samplelake.py). Tests that change it work on copies."""
    return sample_lake.crawl.dir


@pytest.fixture(scope="module")
def extract_dir(sample_lake) -> Path:
    """The session's extraction of that crawl (--render auto)."""
    return sample_lake.extract.dir


@pytest.fixture(scope="module")
def dup_docs_dir(tmp_path_factory, docs_dir, labelled_docs) -> Path:  # noqa: F811
    """Duplicate-cluster members of the sample web and a few other pages, as extraction writes."""
    dups = [d["id"] for d in labelled_docs if d["dup_cluster"] is not None][:60]
    others = [d["id"] for d in labelled_docs if d["dup_cluster"] is None][:30]
    table = pq.read_table(docs_dir / "documents.parquet")
    table = table.filter(pc.is_in(table["id"], pa.array(dups + others)))
    out = tmp_path_factory.mktemp("checks-docs")
    pq.write_table(table, out / "documents.parquet")
    return out


@pytest.fixture(scope="module")
def filter_dir(tmp_path_factory, dup_docs_dir) -> Path:
    from filters.run import run_filter

    out = tmp_path_factory.mktemp("checks-filter")
    run_filter(dup_docs_dir, out, config=NO_DEFAULTS)
    return out


def _build(tmp: Path, lake: Path, name: str, **overrides) -> Path:  # noqa: F811
    from training.mixture.builder import build_mixture

    spec = tmp / f"{name}.yaml"
    spec.write_text(yaml.safe_dump(base_spec(lake, **overrides), sort_keys=False))
    build_mixture(spec, tmp / name, lake_root=lake)
    return tmp / name


@pytest.fixture(scope="module")
def mix_dir(tmp_path_factory, lake) -> Path:  # noqa: F811
    return _build(tmp_path_factory.mktemp("checks-mix"), lake, "mix")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, mixtures) -> Path:  # noqa: F811
    from training.trainer import run_stage

    tmp = tmp_path_factory.mktemp("checks-train")
    config = write_config(tmp / "train.yaml", eval_every=20, checkpoint_every=20)
    run_stage("pretrain", config, mixtures["pretrain"], tmp / "run", steps=20)
    return tmp / "run"


def _rewrite(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path)


def _set(table: pa.Table, column: str, row: int, value) -> pa.Table:
    values = table[column].to_pylist()
    values[row] = value
    i = table.schema.get_field_index(column)
    return table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))


# --- crawl -----------------------------------------------------------------------------------


def test_crawl_checks_pass_on_a_real_crawl(crawl_dir):
    respected = crawl_checks.crawl_robots_respected(crawl_dir)
    recorded = crawl_checks.crawl_robots_decisions_recorded(crawl_dir)
    assert respected.passed, respected.description
    assert recorded.passed, recorded.description
    pages = pq.read_table(crawl_dir / "pages.parquet")
    assert respected.metadata["pages"] == recorded.metadata["pages"] == pages.num_rows
    assert respected.metadata["fetched_not_allowed"] == 0 and respected.metadata["fetched"] > 0
    # robots.txt of these hosts denies pages: the check saw both kinds of decision
    assert (
        recorded.metadata["crawl_disallowed"] > 0 and recorded.metadata["training_disallowed"] > 0
    )


def _sharded_copy(crawl_dir: Path, dest: Path) -> tuple[pa.Table, pa.Table]:
    """The crawl's pages split into dest/shard=0 and dest/shard=1 (as a sharded crawl lays them)."""
    pages = pq.read_table(crawl_dir / "pages.parquet")
    half = pages.num_rows // 2
    parts = pages.slice(0, half), pages.slice(half)
    for k, part in enumerate(parts):
        (dest / f"shard={k}").mkdir(parents=True)
        _rewrite(dest / f"shard={k}" / "pages.parquet", part)
    return parts


def test_a_fetch_against_robots_in_any_shard_fails(crawl_dir, tmp_path):
    _, second = _sharded_copy(crawl_dir, tmp_path)
    assert crawl_checks.crawl_robots_respected(tmp_path).passed
    row = pc.index(second["status"], 200).as_py()
    url = second["url"][row].as_py()
    _rewrite(
        tmp_path / "shard=1" / "pages.parquet", _set(second, "robots_crawl", row, "disallowed")
    )
    out = crawl_checks.crawl_robots_respected(tmp_path)
    assert not out.passed
    assert out.metadata["shards"] == 2
    assert out.metadata["fetched_disallowed"] == 1 and out.metadata["fetched_not_allowed"] == 1
    assert out.metadata["first_offending_url"] == url and url in out.description


def test_a_missing_robots_decision_fails(crawl_dir, tmp_path):
    first, _ = _sharded_copy(crawl_dir, tmp_path)
    _rewrite(tmp_path / "shard=0" / "pages.parquet", _set(first, "robots_training", 0, None))
    out = crawl_checks.crawl_robots_decisions_recorded(tmp_path)
    assert not out.passed and out.metadata["missing_training_decision"] == 1
    assert out.metadata["first_offending_url"] == first["url"][0].as_py()


def test_training_allowed_against_the_training_token_fails(crawl_dir, tmp_path):
    pages = pq.read_table(crawl_dir / "pages.parquet")
    row = pc.index(pages["robots_training"], "disallowed").as_py()
    assert row >= 0, "the crawl has a page robots.txt keeps from training"
    _rewrite(tmp_path / "pages.parquet", _set(pages, "training_allowed", row, True))
    out = crawl_checks.crawl_robots_decisions_recorded(tmp_path)
    assert not out.passed and out.metadata["training_allowed_without_training_robots"] == 1


# --- extract ---------------------------------------------------------------------------------


def test_extract_pages_accounted(crawl_dir, extract_dir, tmp_path):
    out = crawl_checks.extract_pages_accounted(crawl_dir, extract_dir)
    assert out.passed, out.description
    m = out.metadata
    assert m["pages_in"] == m["documents"] + m["rejects"] > 0 and m["rejects"] > 0

    for name in ("documents", "rejects"):
        shutil.copyfile(extract_dir / f"{name}.parquet", tmp_path / f"{name}.parquet")
    docs = pq.read_table(tmp_path / "documents.parquet")
    lost = docs["url"][3].as_py()
    _rewrite(tmp_path / "documents.parquet", pa.concat_tables([docs.slice(0, 3), docs.slice(4)]))
    out = crawl_checks.extract_pages_accounted(crawl_dir, tmp_path)
    assert not out.passed
    assert out.metadata["unaccounted"] == 1 and out.metadata["pages_without_output"] == 1
    assert out.metadata["first_missing_url"] == lost


# --- filter ----------------------------------------------------------------------------------


def test_filter_checks_pass_on_a_real_filter_run(dup_docs_dir, filter_dir):
    accounted = filter_checks.filter_rows_accounted(dup_docs_dir, filter_dir)
    no_dup = filter_checks.filter_no_duplicate_kept(filter_dir)
    assert accounted.passed, accounted.description
    assert no_dup.passed, no_dup.description
    assert accounted.metadata["rows_in"] == accounted.metadata["annotated"] == 90
    assert accounted.metadata["kept"] + accounted.metadata["dropped"] == 90
    assert no_dup.metadata["clusters"] > 0  # the input holds duplicates: the check had work


def _filter_copy(filter_dir: Path, dest: Path) -> Path:
    for name in ("annotated", "documents", "dup_clusters"):
        shutil.copyfile(filter_dir / f"{name}.parquet", dest / f"{name}.parquet")
    return dest


def test_a_lost_annotated_row_fails(dup_docs_dir, filter_dir, tmp_path):
    _filter_copy(filter_dir, tmp_path)
    ann = pq.read_table(tmp_path / "annotated.parquet")
    dropped = ann.filter(pc.is_valid(ann["drop_reason"]))["id"][0].as_py()
    _rewrite(tmp_path / "annotated.parquet", ann.filter(pc.not_equal(ann["id"], dropped)))
    out = filter_checks.filter_rows_accounted(dup_docs_dir, tmp_path)
    assert not out.passed
    assert out.metadata["ids_not_annotated"] == 1 and out.metadata["first_missing_id"] == dropped


@pytest.mark.parametrize("clear_marks", [False, True])
def test_a_kept_duplicate_fails(dup_docs_dir, filter_dir, tmp_path, clear_marks):
    _filter_copy(filter_dir, tmp_path)
    ann = pq.read_table(tmp_path / "annotated.parquet")
    kept = pq.read_table(tmp_path / "documents.parquet")
    dup = ann.filter(pc.is_valid(ann["duplicate_of"])).slice(0, 1)
    assert dup.num_rows == 1
    if clear_marks:  # a duplicate that lost its marks still shares its cluster with the kept one
        dup = _set(_set(dup, "duplicate_of", 0, None), "drop_reason", 0, None)
    _rewrite(
        tmp_path / "documents.parquet", pa.concat_tables([kept, dup.select(kept.schema.names)])
    )
    out = filter_checks.filter_no_duplicate_kept(tmp_path)
    assert not out.passed, out.description
    m = out.metadata
    if clear_marks:
        assert m["kept_marked_duplicate"] == 0 and m["kept_extra_cluster_members"] == 1
    else:
        assert m["kept_marked_duplicate"] == 1
        assert m["first_offender"] == dup["id"][0].as_py()
    # the kept rows no longer match the annotated ones either
    accounted = filter_checks.filter_rows_accounted(dup_docs_dir, tmp_path)
    assert not accounted.passed and accounted.metadata["kept_rows_not_matching_annotated"] == 1


# --- mixture ---------------------------------------------------------------------------------


def test_mixture_checks_pass_on_a_real_build(mix_dir, lake):  # noqa: F811
    no_opt = mix_checks.mixture_no_opted_out_rows(mix_dir, lake)
    shares = mix_checks.mixture_shares_within_tolerance(mix_dir)
    sums = mix_checks.mixture_checksums_match(mix_dir)
    for out in (no_opt, shares, sums):
        assert out.passed, out.description
    docs = pq.read_table(lake / "filter" / "documents.parquet")
    opted_out = docs.num_rows - pc.sum(docs["training_allowed"]).as_py()
    assert no_opt.metadata["opted_out_rows"] == opted_out > 0
    assert no_opt.metadata["opted_out_found"] == 0 and no_opt.metadata["copies_scanned"] > 100
    assert shares.metadata["checked"] > 0 and shares.metadata["off_target"] == 0
    assert sums.metadata["shards"] == len(
        json.loads((mix_dir / "manifest.json").read_text())["shards"]
    )


def test_a_flipped_shard_byte_fails(mix_dir, tmp_path):
    copy = Path(shutil.copytree(mix_dir, tmp_path / "mix"))
    shard = copy / json.loads((copy / "manifest.json").read_text())["shards"][-1]["path"]
    data = bytearray(shard.read_bytes())
    data[-5] ^= 0x01
    shard.write_bytes(bytes(data))
    out = mix_checks.mixture_checksums_match(copy)
    assert not out.passed
    assert out.metadata["checksum_mismatch"] == 1 and out.metadata["first_bad_shard"] in str(shard)


def test_a_mixture_that_ignored_consent_fails(lake, tmp_path):  # noqa: F811
    """Build from a copy of the source with every row marked allowed, then restore the real consent
    column: the shards now hold documents their rows opted out."""
    src = tmp_path / "filter" / "documents.parquet"
    src.parent.mkdir()
    real = pq.read_table(lake / "filter" / "documents.parquet")
    i = real.schema.get_field_index("training_allowed")
    _rewrite(src, real.set_column(i, "training_allowed", pa.array([True] * real.num_rows)))
    spec = base_spec(lake)
    for bucket in spec["buckets"].values():
        bucket["sources"][0]["path"] = str(src)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    from training.mixture.builder import build_mixture

    build_mixture(tmp_path / "spec.yaml", tmp_path / "mix", lake_root=lake)
    _rewrite(src, real)
    out = mix_checks.mixture_no_opted_out_rows(tmp_path / "mix", lake)
    assert not out.passed, out.description
    assert out.metadata["opted_out_found"] > 0 and out.metadata["ambiguous"] == 0
    row = int(out.metadata["first_found"].rsplit("#", 1)[1])
    assert OPTED_OUT_MARKER in real["text"][row].as_py()
    assert mix_checks.mixture_checksums_match(tmp_path / "mix").passed  # integrity is not consent


def _splice(mix_dir: Path, lake_root: Path, dest: Path, *, across_shards: bool, whole: bool = True):
    """Copy the mixture to dest and write an opted-out row's tokens where a document copy starts:
    after a boundary in the first shard, or from the end of the first shard on into the second.
    `whole`: the row's tokens and a boundary (a copy as packing lays it); else only its opening,
    followed by what was there before. Returns the row's index in the source."""
    from training.tokenizer import encode_texts, load_tokenizer

    copy = Path(shutil.copytree(mix_dir, dest))
    manifest = json.loads((copy / "manifest.json").read_text())
    boundary = manifest["special_tokens"]["boundary"]
    docs = pq.read_table(lake_root / "filter" / "documents.parquet")
    row = pc.index(docs["training_allowed"], False).as_py()
    tokens, _ = encode_texts(load_tokenizer(copy / "tokenizer.json"), [docs["text"][row].as_py()])
    assert len(tokens) >= 2 * mix_checks.PROBE_TOKENS
    placed = np.append(tokens, boundary) if whole else tokens[: mix_checks.PROBE_TOKENS + 8]
    paths = [copy / s["path"] for s in manifest["shards"][:2]]
    assert len(paths) == 2 and len({s["stage"] for s in manifest["shards"][:2]}) == 1
    first, second = np.load(paths[0]), np.load(paths[1])
    stream = np.concatenate([first.ravel(), second.ravel()])
    start = first.size - 10 if across_shards else int(np.flatnonzero(stream == boundary)[0]) + 1
    stream[start - 1] = boundary
    stream[start : start + len(placed)] = placed
    np.save(paths[0], stream[: first.size].reshape(first.shape))
    np.save(paths[1], stream[first.size :].reshape(second.shape))
    return copy, row


@pytest.mark.parametrize("across_shards", [False, True])
def test_an_opted_out_document_spliced_into_a_shard_fails(
    mix_dir,
    lake,  # noqa: F811
    tmp_path,
    across_shards,
):
    copy, row = _splice(mix_dir, lake, tmp_path / "mix", across_shards=across_shards)
    out = mix_checks.mixture_no_opted_out_rows(copy, lake)
    assert not out.passed
    assert out.metadata["opted_out_found"] == 1
    assert out.metadata["first_found"].endswith(f"#{row}")


def test_a_copy_that_only_opens_like_an_opted_out_row_passes(mix_dir, lake, tmp_path):  # noqa: F811
    """Packing places whole documents (or their prefixes): a copy that opens like an opted-out row
    and then goes on differently is another document, not that row."""
    copy, _ = _splice(mix_dir, lake, tmp_path / "mix", across_shards=False, whole=False)
    out = mix_checks.mixture_no_opted_out_rows(copy, lake)
    assert out.passed, out.description
    assert out.metadata["opted_out_found"] == 0 and out.metadata["ambiguous"] == 0


def test_an_opted_out_mirror_of_an_allowed_row_is_ambiguous_not_found(lake, tmp_path):  # noqa: F811
    """The same text opted out on one page and allowed on another: its copy in the shards may be
    the allowed row's, so the check reports it as ambiguous and passes."""
    from training.mixture.builder import build_mixture

    real = pq.read_table(lake / "filter" / "documents.parquet")
    # every allowed English row again, opted out, under a new id
    mirror = real.filter(pc.and_(pc.equal(real["lang"], "en"), real["training_allowed"]))
    ids = pa.array([f"mirror-{i}" for i in range(mirror.num_rows)])
    mirror = mirror.set_column(mirror.schema.get_field_index("id"), "id", ids)
    i = mirror.schema.get_field_index("training_allowed")
    mirror = mirror.set_column(i, "training_allowed", pa.array([False] * mirror.num_rows))
    src = tmp_path / "documents.parquet"
    _rewrite(src, pa.concat_tables([real, mirror]))
    spec = base_spec(lake)
    for bucket in spec["buckets"].values():
        bucket["sources"][0]["path"] = str(src)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    build_mixture(tmp_path / "spec.yaml", tmp_path / "mix", lake_root=lake)
    out = mix_checks.mixture_no_opted_out_rows(tmp_path / "mix", lake)
    assert out.passed, out.description
    assert out.metadata["opted_out_found"] == 0
    # the mirrors of the rows the mixture sampled (a few dozen of these hundreds) are ambiguous
    assert 0 < out.metadata["ambiguous"] < mirror.num_rows
    assert int(out.metadata["first_ambiguous"].rsplit("#", 1)[1]) >= real.num_rows


def test_shares_off_target_fail(lake, tmp_path):  # noqa: F811
    """A real build whose multilingual bucket runs short (max_epochs, shortfall allowed)."""
    spec = base_spec(lake, allow_shortfall=True)
    spec["buckets"]["multilingual"]["max_epochs"] = 0.1
    name = "short"
    (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    from training.mixture.builder import build_mixture

    manifest = build_mixture(tmp_path / f"{name}.yaml", tmp_path / name, lake_root=lake)
    assert manifest["shortfalls"]
    # The shortfall the spec allows is excused and said so; the other buckets are still judged.
    out = mix_checks.mixture_shares_within_tolerance(tmp_path / name)
    assert out.passed, out.description
    assert out.metadata["excused_shortfalls"] == "multilingual" and "allowed shortfall" in (
        out.description
    )
    # A bucket that is short without a recorded shortfall fails the check.
    path = tmp_path / name / "manifest.json"
    doc = json.loads(path.read_text())
    cut = doc["buckets"]["web"]["tokens"] // 5
    doc["buckets"]["web"]["tokens"] -= cut
    doc["tokens"] -= cut
    path.write_text(json.dumps(doc))
    out = mix_checks.mixture_shares_within_tolerance(tmp_path / name)
    assert not out.passed
    assert out.metadata["off_target"] > 0 and out.metadata["max_abs_deviation"] > 0.01
    assert out.metadata["share.web"] < out.metadata["target_share.web"]


# --- training --------------------------------------------------------------------------------


def test_training_loss_check_passes_on_a_real_run(run_dir):
    out = train_checks.training_loss_finite_and_falling(run_dir)
    assert out.passed, out.description
    m = out.metadata
    assert m["judged_on"] == "held-out, mixture-weighted" and m["steps_logged"] == 20
    summary = json.loads((run_dir / "summary.json").read_text())
    after = summary["eval"]  # the synthetic mixture places 3/4 of its tokens in en, 1/4 in fr
    assert summary["eval_mixture"] == pytest.approx(0.75 * after["web/en"] + 0.25 * after["web/fr"])
    assert m["loss_last_mean"] < m["loss_first_mean"]


def _drop_held_out(dest: Path) -> None:
    summary = json.loads((dest / "summary.json").read_text())
    for key in ("eval_mean", "eval_mean_before", "eval_mixture", "eval_mixture_before"):
        summary.pop(key, None)
    (dest / "summary.json").write_text(json.dumps(summary))


def test_without_held_out_loss_the_run_is_judged_on_windows_of_steps(run_dir, tmp_path):
    _run_copy(run_dir, tmp_path)
    _drop_held_out(tmp_path)
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert out.passed and out.metadata["judged_on"] == "train", out.description
    assert out.metadata["window"] == 5  # a quarter of 20 logged steps, at least MIN_WINDOW


def test_the_coin_toss_of_one_noisy_batch_per_window_does_not_decide(run_dir, tmp_path):
    """The fresh-machine demo failure: a CPT run logged 10 steps, the check compared step 10
    (5.758) with step 100 (5.858), one batch each, while the held-out loss fell 6.84 -> 6.73."""
    rows = _run_copy(run_dir, tmp_path)[:10]
    wandering = (5.758, 5.97, 5.70, 6.09, 5.81, 5.75, 5.93, 5.72, 5.88, 5.858)
    _write_metrics(tmp_path, [{**r, "loss": v} for r, v in zip(rows, wandering, strict=True)])
    summary = json.loads((tmp_path / "summary.json").read_text())
    summary.update(eval_mixture_before=6.84, eval_mixture=6.73)
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert out.passed and out.metadata["judged_on"].startswith("held-out"), out.description
    _drop_held_out(tmp_path)  # no held-out: windows of 3 logged steps see no fall, and say so
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert not out.passed and out.metadata["window"] == 3, out.description
    _write_metrics(tmp_path, [{**r, "loss": 5.8} for r in rows[:5]])  # too few for two windows
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert not out.passed and "log more often" in out.description


def _run_copy(run_dir: Path, dest: Path) -> list[dict]:
    for name in ("metrics.jsonl", "eval.jsonl", "summary.json"):
        shutil.copyfile(run_dir / name, dest / name)
    return [json.loads(x) for x in (dest / "metrics.jsonl").read_text().splitlines() if x]


def _write_metrics(dest: Path, rows: list[dict]) -> None:
    (dest / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_nan_loss_fails(run_dir, tmp_path):
    rows = _run_copy(run_dir, tmp_path)
    rows[7]["loss"] = math.nan
    _write_metrics(tmp_path, rows)
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert not out.passed and out.metadata["nonfinite_train_losses"] == 1
    assert out.metadata["finite"] is False


def test_an_infinite_eval_loss_fails(run_dir, tmp_path):
    _run_copy(run_dir, tmp_path)
    evals = [json.loads(x) for x in (tmp_path / "eval.jsonl").read_text().splitlines() if x]
    evals[-1]["loss"] = math.inf
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evals))
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert not out.passed and out.metadata["nonfinite_eval_losses"] == 1


def test_a_rising_loss_fails(run_dir, tmp_path):
    rows = _run_copy(run_dir, tmp_path)
    losses = [r["loss"] for r in rows][::-1]  # the same losses, the run going the wrong way
    _write_metrics(tmp_path, [{**r, "loss": v} for r, v in zip(rows, losses, strict=True)])
    _drop_held_out(tmp_path)
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert not out.passed and out.metadata["falling"] is False
    assert out.metadata["finite"] is True
    summary = json.loads((run_dir / "summary.json").read_text())
    before, after = summary["eval_mixture_before"], summary["eval_mixture"]
    summary.update(eval_mixture_before=after, eval_mixture=before)  # the held-out loss rose
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert not out.passed and out.metadata["judged_on"] == "held-out, mixture-weighted"


def test_a_run_within_its_warmup_is_not_judged_on_falling(run_dir, tmp_path):
    rows = _run_copy(run_dir, tmp_path)
    losses = [r["loss"] for r in rows][::-1]
    _write_metrics(tmp_path, [{**r, "loss": v} for r, v in zip(rows, losses, strict=True)])
    _drop_held_out(tmp_path)
    run = json.loads((run_dir / "run.json").read_text())
    stage = run["config"]["stages"][run["stage"]]
    assert run["total_steps"] > (stage.get("warmup_steps") or 0)  # past warm-up: judged, fails
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert not train_checks.training_loss_finite_and_falling(tmp_path).passed
    stage["warmup_steps"] = run["total_steps"]  # ended within warm-up: said so, not judged
    (tmp_path / "run.json").write_text(json.dumps(run))
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert out.passed and out.metadata["judged_on"] == "within_warmup"
    assert "within its warm-up" in out.description
    rows[3]["loss"] = math.nan  # but a non-finite loss still fails
    _write_metrics(tmp_path, rows)
    assert not train_checks.training_loss_finite_and_falling(tmp_path).passed


# --- errors ----------------------------------------------------------------------------------


def test_a_missing_dataset_or_column_is_an_error_not_a_verdict(filter_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="pages.parquet"):
        crawl_checks.crawl_robots_respected(tmp_path)
    _filter_copy(filter_dir, tmp_path)
    kept = pq.read_table(tmp_path / "documents.parquet")
    _rewrite(tmp_path / "documents.parquet", kept.drop_columns(["duplicate_of"]))
    with pytest.raises(ValueError, match=r"documents\.parquet: missing column\(s\) duplicate_of"):
        filter_checks.filter_no_duplicate_kept(tmp_path)
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        train_checks.training_loss_finite_and_falling(tmp_path)


def test_a_short_run_is_judged_on_its_held_out_loss(run_dir, tmp_path):
    """Three logged steps are one batch per window: the held-out loss (the same sequences at
    the start and the end) decides where the run has one."""
    rows = _run_copy(run_dir, tmp_path)
    noisy = [{**rows[0], "loss": 7.50}, {**rows[1], "loss": 7.66}, {**rows[2], "loss": 7.57}]
    _write_metrics(tmp_path, noisy)
    summary = json.loads((tmp_path / "summary.json").read_text())
    summary.update(eval_mixture_before=7.77, eval_mixture=7.55)
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert out.passed and out.metadata["judged_on"].startswith("held-out"), out.description
    summary.update(eval_mixture=7.80)  # held-out rose: fails, whatever the batches did
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    _write_metrics(
        tmp_path, [{**r, "loss": v} for r, v in zip(noisy, (7.6, 7.5, 7.4), strict=True)]
    )
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert not out.passed and out.metadata["judged_on"].startswith("held-out")


def test_held_out_loss_is_weighted_by_the_mixture_the_run_trains_on(run_dir, tmp_path):
    """The sixth fresh demo's CPT run: the big web group's held-out loss fell by 0.5 while two
    small groups, repeated for epochs, rose; their unweighted mean rose (7.027 -> 7.082). The
    loss the run minimises is the mixture's: groups count by their share of training tokens."""
    from training.trainer import _weighted, mixture_shares

    manifest = {
        "buckets": {
            "web": {"groups": {"all": {"tokens": 8000}}},
            "multilingual": {"groups": {"de": {"tokens": 1000}, "ja": {"tokens": 1000}}},
        }
    }
    shares = mixture_shares(manifest)
    assert shares == {"web/all": 0.8, "multilingual/de": 0.1, "multilingual/ja": 0.1}
    before = {"web/all": 6.90, "multilingual/de": 7.08, "multilingual/ja": 7.10}
    after = {"web/all": 6.40, "multilingual/de": 7.40, "multilingual/ja": 7.45}
    assert sum(after.values()) / 3 > sum(before.values()) / 3  # the unweighted mean rose
    assert _weighted(after, shares) < _weighted(before, shares)
    assert _weighted({**after, "other/x": None}, shares) == _weighted(after, shares)
    assert _weighted({"other/x": 1.0}, shares) is None and mixture_shares({}) == {}

    _run_copy(run_dir, tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    summary.update(
        eval_before=before,
        eval=after,
        eval_mean_before=sum(before.values()) / 3,
        eval_mean=sum(after.values()) / 3,
        eval_mixture_before=_weighted(before, shares),
        eval_mixture=_weighted(after, shares),
    )
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert out.passed and out.metadata["judged_on"] == "held-out, mixture-weighted"
    # The web group rising too fails, weighted or not.
    summary.update(eval_mixture=_weighted({**after, "web/all": 7.0}, shares))
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    assert not train_checks.training_loss_finite_and_falling(tmp_path).passed
    # A summary without shares (written before them) is judged on the unweighted mean.
    for key in ("eval_mixture", "eval_mixture_before"):
        summary.pop(key)
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    out = train_checks.training_loss_finite_and_falling(tmp_path)
    assert not out.passed and out.metadata["judged_on"] == "held-out"
