"""The Beam filter pipeline: rows in = rows out, outputs, runner equality, CLI and errors."""

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.stages.filter import run_filter


def _plain(table: pa.Table) -> list[dict]:
    rows = table.to_pylist()
    for r in rows:
        for k, v in r.items():
            if isinstance(v, float) and math.isnan(v):
                r[k] = "NaN"
    return rows


@pytest.fixture(scope="module")
def eval_file(tmp_path_factory, labelled_docs) -> tuple[str, list[str]]:
    """An eval set cut from three sample-web documents (one Chinese): every executor run of this
    module decontaminates against it, so their comparisons cover the step."""
    picks = [d for d in labelled_docs if d["lang"] == "en" and len(d["text"]) > 2000][:2]
    picks += [d for d in labelled_docs if d["lang"] == "zh" and len(d["text"]) > 400][:1]
    path = tmp_path_factory.mktemp("evals") / "cut.jsonl"
    items = [{"question": d["text"][300:700]} for d in picks]
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items))
    return str(path), [d["id"] for d in picks]


@pytest.fixture(scope="module")
def direct_out(tmp_path_factory, docs_dir, models_dir, eval_file):
    out = tmp_path_factory.mktemp("filtered")
    summary = run_filter(docs_dir, out, models_dir=models_dir, decontaminate=[eval_file[0]])
    return out, summary


def test_decontamination_marks_the_documents_the_eval_set_was_cut_from(direct_out, eval_file):
    out, summary = direct_out
    rows = pq.read_table(out / "annotated.parquet").to_pylist()
    marked = {r["id"] for r in rows if r["contaminated"]}
    assert set(eval_file[1]) <= marked
    assert all(r["contamination_benchmarks"] == "cut" for r in rows if r["contaminated"])
    assert summary["decontamination"]["evals"][0]["docs_hit"] == len(marked)
    assert "contaminated" not in summary["dropped"]  # annotate only by default


def test_every_input_row_is_annotated_and_kept_rows_match(direct_out, docs_dir):
    out, summary = direct_out
    src = pq.read_table(docs_dir / "documents.parquet")
    ann = pq.read_table(out / "annotated.parquet")
    assert ann.num_rows == src.num_rows == summary["rows_in"]
    assert ann["id"].to_pylist() == src["id"].to_pylist()
    for col in (
        "lang",
        "lang_score",
        "quality_score",
        "drop_reason",
        "duplicate_of",
        "title",
        "rendered",
    ):
        assert col in ann.column_names
    kept = pq.read_table(out / "documents.parquet")
    assert kept["id"].to_pylist() == [r["id"] for r in ann.to_pylist() if r["drop_reason"] is None]
    assert all(r["training_allowed"] for r in kept.to_pylist())
    assert sum(summary["dropped"].values()) + summary["rows_kept"] == src.num_rows


def test_language_accuracy_on_the_sample_web(direct_out, labelled_docs):
    ann = {r["id"]: r for r in pq.read_table(direct_out[0] / "annotated.parquet").to_pylist()}
    labelled = [d for d in labelled_docs if d["lang"] and len(d["text"]) > 100]
    # a text the filter emptied (all boilerplate) has no language: und (docs/schemas.md)
    emptied = [d for d in labelled if not ann[d["id"]]["text"].strip()]
    assert all(ann[d["id"]]["lang"] == "und" for d in emptied)
    labelled = [d for d in labelled if d not in emptied]
    correct = sum(ann[d["id"]]["lang"] == d["lang"] for d in labelled)
    assert correct / len(labelled) >= 0.95, (correct, len(labelled))


def test_pii_is_scrubbed_in_the_output(direct_out, labelled_docs):
    ann = {r["id"]: r for r in pq.read_table(direct_out[0] / "annotated.parquet").to_pylist()}
    with_pii = [d for d in labelled_docs if d["pii"]]
    assert with_pii
    for d in with_pii:
        for item in d["pii"]:
            assert item["value"] not in ann[d["id"]]["text"], (d["id"], item)


def test_duplicates_point_at_a_kept_representative(direct_out):
    out, summary = direct_out
    ann = {r["id"]: r for r in pq.read_table(out / "annotated.parquet").to_pylist()}
    clusters = pq.read_table(out / "dup_clusters.parquet").to_pylist()
    assert clusters and summary["dedup_rate"] > 0
    for c in clusters:
        rep = ann[c["cluster_id"]]
        assert rep["drop_reason"] is None and rep["duplicate_of"] is None
        if c["duplicate_of"]:
            assert ann[c["id"]]["duplicate_of"] == c["cluster_id"]
            assert ann[c["id"]]["drop_reason"] == f"{c['match']}_duplicate"


def test_beam_dedup_equals_the_in_process_step(direct_out):
    from filters.config import DedupConfig
    from filters.dedup import cluster

    out, summary = direct_out
    ann = pq.read_table(out / "annotated.parquet").to_pylist()
    # Dedup candidates: rows no other filter dropped (duplicates included), with the scrubbed text.
    cands = [r for r in ann if r["drop_reason"] is None or r["drop_reason"].endswith("_duplicate")]
    expected = cluster(cands, DedupConfig())
    assert expected and pq.read_table(out / "dup_clusters.parquet").to_pylist() == expected
    assert summary["clusters"] == len({r["cluster_id"] for r in expected})
    assert summary["dedup_leftover_edges"] == 0


def test_host_languages_shares_sum_to_one(direct_out):
    rows = pq.read_table(direct_out[0] / "host_languages.parquet").to_pylist()
    per_host = defaultdict(float)
    for r in rows:
        per_host[r["host"]] += r["share"]
    assert len(per_host) > 3 and all(abs(s - 1) < 1e-9 for s in per_host.values())


def test_funnel_is_written_with_plot_and_manifest(direct_out):
    out, summary = direct_out
    assert (out / "funnel.png").stat().st_size > 1000
    assert "| kept |" in summary["funnel_markdown"].replace("| lang | kept |", "| kept |")
    assert (out / "annotated.parquet.manifest.json").exists()
    assert summary["unscored_languages"] == [] and summary["tokens_kept"] > 0


def test_missing_quality_model_falls_back_to_the_multilingual_model(tmp_path, docs_dir, models_dir):
    partial = tmp_path / "models"
    partial.mkdir()
    for path in models_dir.glob("en.*"):  # en.bin, en.json and en's fold models
        (partial / path.name).write_bytes(path.read_bytes())
    # de has no model in --models: the default set's multilingual fallback scores it.
    summary = run_filter(
        docs_dir, tmp_path / "out", models_dir=partial, config={"languages": ["en", "de"]}
    )
    ann = pq.read_table(tmp_path / "out" / "annotated.parquet").to_pylist()
    de = [r for r in ann if r["lang"] == "de"]
    assert de and all(r["quality_model"].startswith("multilingual-fallback:") for r in de)
    assert all(0 <= r["quality_score"] <= 1 for r in de)
    assert summary["unscored_languages"] == [] and "fallback" in summary["funnel_markdown"]
    # Without default models it would be unscored (NULL): test_quality_default.py.


def test_missing_required_column_names_it(tmp_path):
    pq.write_table(
        pa.table({"id": ["a"], "url": ["http://x/"], "text": ["hi"]}),
        tmp_path / "documents.parquet",
    )
    with pytest.raises(ValueError, match="training_allowed"):
        run_filter(tmp_path, tmp_path / "out")


@pytest.mark.timeout(240)
def test_multi_processing_runner_gives_the_same_output(
    tmp_path, direct_out, docs_dir, models_dir, eval_file
):
    args = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
    run_filter(
        docs_dir, tmp_path, models_dir=models_dir, beam_args=args, decontaminate=[eval_file[0]]
    )
    for name in ("annotated.parquet", "dup_clusters.parquet"):
        assert _plain(pq.read_table(tmp_path / name)) == _plain(pq.read_table(direct_out[0] / name))


@pytest.mark.timeout(240)
def test_in_process_executor_writes_the_same_bytes_and_counts(
    tmp_path, direct_out, docs_dir, models_dir, eval_file
):
    out, direct = direct_out
    local = run_filter(
        docs_dir,
        tmp_path,
        models_dir=models_dir,
        beam_args=["--runner=InProcess"],
        decontaminate=[eval_file[0]],
    )
    for name in ("annotated.parquet", "documents.parquet", "dup_clusters.parquet", "stats.json"):
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name
    paths = {"out_dir", "funnel_plot"}
    assert {k: v for k, v in local.items() if k not in paths} == {
        k: v for k, v in direct.items() if k not in paths
    }
    assert local["clusters"] > 0 and not list(tmp_path.glob("_beam-*"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def job_service():
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "apache_beam.runners.portability.local_job_service_main",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.3)
        else:
            raise RuntimeError("Beam job service did not start")
        yield f"localhost:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_portable_runner_gives_the_same_output(
    tmp_path, job_service, direct_out, docs_dir, models_dir, eval_file
):
    args = [
        "--runner=PortableRunner",
        f"--job_endpoint={job_service}",
        "--environment_type=LOOPBACK",
    ]
    run_filter(
        docs_dir, tmp_path, models_dir=models_dir, beam_args=args, decontaminate=[eval_file[0]]
    )
    for name in ("annotated.parquet", "dup_clusters.parquet", "documents.parquet"):
        assert _plain(pq.read_table(tmp_path / name)) == _plain(pq.read_table(direct_out[0] / name))


@pytest.mark.slow  # over 10 s on a quiet 2-core machine
@pytest.mark.timeout(240)
def test_cli_trains_a_model_and_filters_end_to_end(tmp_path, docs_dir):
    runner = CliRunner()
    model = tmp_path / "models" / "en.bin"
    res = runner.invoke(
        app,
        [
            "quality",
            "train",
            "--lang",
            "en",
            "--labels",
            "sampleweb",
            "--out",
            str(model),
            "--keep-rate",
            "0.8",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "AUC" in res.output and model.with_suffix(".json").exists()
    ja = tmp_path / "ja.bin"
    res = runner.invoke(
        app,
        [
            "quality",
            "train",
            "--lang",
            "ja",
            "--labels",
            "sampleweb",
            "--out",
            str(ja),
            "--positive-recall",
            "0.9",
        ],
    )
    assert res.exit_code == 0, res.output
    assert (
        json.loads(ja.with_suffix(".json").read_text())["threshold_method"] == "positive_recall_oof"
    )
    both = runner.invoke(
        app,
        [
            "quality",
            "train",
            "--lang",
            "ja",
            "--labels",
            "sampleweb",
            "--out",
            str(ja),
            "--keep-rate",
            "0.8",
            "--positive-recall",
            "0.9",
        ],
    )
    assert both.exit_code == 2 and "at most one" in both.output
    res = runner.invoke(
        app,
        [
            "filter",
            "--docs",
            str(docs_dir),
            "--out",
            str(tmp_path / "out"),
            "--models",
            str(model.parent),
        ],
    )
    assert res.exit_code == 0, res.output
    assert (
        pq.read_table(tmp_path / "out" / "annotated.parquet").num_rows
        == pq.read_table(docs_dir / "documents.parquet").num_rows
    )
    bad = runner.invoke(
        app, ["filter", "--docs", str(tmp_path / "none"), "--out", str(tmp_path / "o2")]
    )
    assert bad.exit_code == 2 and "documents.parquet" in bad.output


PLAIN_CFG = {"quality": {"use_default_models": False}, "pii": False}


def _bad_rows_input(tmp_path):
    """Eight documents: one whose text is not UTF-8, one repeating an earlier id, one with none."""
    import random

    rng = random.Random(3)
    words = "river garden music house light quiet model token stone bridge".split()
    texts = [
        ". ".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(8)) + "."
        for _ in range(8)
    ]
    raw = [t.encode() for t in texts]
    raw[2] = raw[2][:10] + b"\xff\xfe" + raw[2][10:]
    ids = ["d0", "d1", "d2", "d3", "d1", "d5", None, "d7"]
    table = pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "url": [f"http://10.0.0.{i}/p" for i in range(8)],
            "text": pa.array(raw, pa.binary()).view(pa.string()),
            "training_allowed": [True] * 8,
        }
    )
    (tmp_path / "in").mkdir()
    pq.write_table(table, tmp_path / "in" / "documents.parquet")
    return tmp_path / "in"


@pytest.mark.timeout(240)
def test_bad_rows_are_recorded_rejects_and_the_run_goes_on(tmp_path):
    """Invalid UTF-8 text, a repeated id and a null id: each row a reject with its reason (the
    first row with an id stays the document), rows in = rows out, on both executors."""
    from filters.run import run_filter as run_plain
    from pipelines.beam.filter import BeamExecutor

    src = _bad_rows_input(tmp_path)
    local = run_plain(src, tmp_path / "local", config=PLAIN_CFG)
    ann = pq.read_table(tmp_path / "local" / "annotated.parquet").to_pylist()
    assert len(ann) == 8 == local["rows_in"]
    reasons = [r["drop_reason"] for r in ann]
    assert reasons[2] == "invalid_utf8" and "\ufffd" in ann[2]["text"]
    assert (reasons[4], reasons[6]) == ("duplicate_id", "null_id")
    assert reasons[1] not in ("duplicate_id", "null_id")
    assert local["dropped"]["invalid_utf8"] == 1 and local["dropped"]["duplicate_id"] == 1
    kept = pq.read_table(tmp_path / "local" / "documents.parquet")["id"].to_pylist()
    assert None not in kept and len(set(kept)) == len(kept)
    run_plain(
        src, tmp_path / "beam", config=PLAIN_CFG, executor=BeamExecutor(["--runner=DirectRunner"])
    )
    for name in ("annotated.parquet", "documents.parquet"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "beam" / name).read_bytes()


def test_a_run_first_removes_old_manifests_and_killed_runs_work_dirs(tmp_path):
    """Killed while writing, a run leaves no old manifest over new or stale rows, and the
    `_beam-*` copies killed runs left are gone; a re-run writes the manifests again."""
    from common.manifest import manifest_path
    from filters.run import OUTPUTS
    from filters.run import run_filter as run_plain

    src = _bad_rows_input(tmp_path)
    out = tmp_path / "out"
    run_plain(src, out, config=PLAIN_CFG)
    assert all(manifest_path(out / n).exists() for n in OUTPUTS if n != "funnel.json")
    (out / "_beam-killed").mkdir()
    (out / "_beam-killed" / "pre-000000.parquet").write_bytes(b"x")

    class Killed:
        workers = 1

        def prepare(self):
            return None

        def run(self, *args):
            raise KeyboardInterrupt  # as a kill while the outputs are written

    with pytest.raises(KeyboardInterrupt):
        run_plain(src, out, config=PLAIN_CFG, executor=Killed())
    assert not any(manifest_path(out / n).exists() for n in OUTPUTS)
    assert not list(out.glob("_beam-*"))
    run_plain(src, out, config=PLAIN_CFG)
    assert manifest_path(out / "annotated.parquet").exists() and not list(out.glob("_beam-*"))


def test_a_killed_run_leaves_no_data_of_the_run_before(tmp_path):
    """A run killed after it started leaves none of the run before's data: its documents.parquet,
    without a manifest, was read as whole by `tokenizer train` and `mix build`, holding every
    language after a re-run for English only was killed."""
    from filters.run import OUTPUTS, REPORTS
    from filters.run import run_filter as run_plain

    src = _bad_rows_input(tmp_path)
    out = tmp_path / "out"
    run_plain(src, out, config=PLAIN_CFG)
    (out / "inspect.html").write_text("<p>the stage's page of this run</p>")
    (out / "documents.parquet.tmp").write_bytes(b"a write a kill cut short")
    assert (out / "documents.parquet").exists() and (out / "funnel.md").exists()

    class Killed:
        workers = 1

        def prepare(self):
            return None

        def run(self, *args):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_plain(src, out, config=PLAIN_CFG, executor=Killed())
    left = sorted(p.name for p in out.iterdir())
    assert not [n for n in left if n in OUTPUTS + REPORTS or n.endswith(".tmp")], left
    run_plain(src, out, config=PLAIN_CFG)  # a re-run writes them all again
    assert all((out / n).exists() for n in OUTPUTS)


def test_a_run_into_its_own_input_directory_is_refused(tmp_path):
    """--out the --docs directory: the filter's documents.parquet would replace its input."""
    from filters.run import run_filter as run_plain

    src = _bad_rows_input(tmp_path)
    before = (src / "documents.parquet").read_bytes()
    with pytest.raises(ValueError, match=r"is the --docs directory.*give another --out"):
        run_plain(src, src, config=PLAIN_CFG)
    assert (src / "documents.parquet").read_bytes() == before
