"""`refinery ablate`: proxy-model ablations on the stages' own training code.

The arms are real mixtures built by the mixture builder from the sample web's hand-written
documents (one half trains, the other half is the evaluation set), with a tokenizer trained here;
the proxy model is two layers of width 32, so each run is a few seconds' CPU at most.
"""

from __future__ import annotations

import json
import math
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml

from training.ablate import evaluate, stats, texts
from training.ablate.run import run_ablation
from training.ablate.spec import AblationError, TaskSpec, parse_spec

pytestmark = pytest.mark.timeout(300)

PROXY = {
    "model": {
        "d_model": 32,
        "n_layer": 2,
        "n_head": 2,
        "n_kv_head": 1,
        "window": 32,
        "local_per_global": 1,
        "max_seq_len": 64,
        "doc_mask": True,
    },
    "train": {"batch_size": 4, "threads": 2, "log_every": 2},
    "stages": {"pretrain": {"mixture": "x", "steps": 1, "lr": 5e-3, "warmup_steps": 2}},
}


def _docs():
    from sampleweb.content import load_all

    out = []
    for lang, pool in sorted(load_all().items()):
        for i, d in enumerate(pool.docs):
            out.append({"id": d.id, "text": "\n\n".join(d.paras), "lang": lang, "half": i % 2})
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Train/eval halves of the sample web's documents, a tokenizer, two arms' mixture specs."""
    from training.tokenizer import train_tokenizer

    root = tmp_path_factory.mktemp("ablate")
    docs = _docs()
    train = [d for d in docs if d["half"] == 0]
    held = [d for d in docs if d["half"] == 1]
    train_tokenizer([d["text"] for d in train], 400, root / "tokenizer.json")
    rng = random.Random(0)
    noise = [
        {
            "id": f"noise-{i}",
            "text": " ".join(
                rng.choice(["buy", "now", "cheap", "!!!", "click"]) for _ in range(80)
            ),
            "lang": "en",
        }
        for i in range(40)
    ]
    for name, rows in (("clean", train), ("noisy", train + noise)):
        table = pa.table(
            {
                "id": [r["id"] for r in rows],
                "text": [r["text"] for r in rows],
                "lang": [r["lang"] for r in rows],
                "training_allowed": [True] * len(rows),
            }
        )
        pq.write_table(table, root / f"{name}.parquet")
        spec = {
            "name": name,
            "seq_len": 64,
            "total_tokens": 6000,
            "tokenizer": "tokenizer.json",
            "allow_shortfall": True,
            "shard_sequences": 64,
            "buckets": {"web": {"weight": 1.0, "sources": [{"path": f"{name}.parquet"}]}},
            "eval": {"sequences_per_group": 0},
        }
        (root / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    pq.write_table(
        pa.table({"text": [d["text"] for d in held], "lang": [d["lang"] for d in held]}),
        root / "eval.parquet",
    )
    (root / "proxy.yaml").write_text(yaml.safe_dump(PROXY))
    return root


def _spec(root, **extra) -> dict:
    spec = {
        "name": "t",
        "config": str(root / "proxy.yaml"),
        "tokens": 2048,
        "seeds": [0, 1, 2],
        "arms": {"noisy": {"mixture_spec": "noisy.yaml"}, "clean": {"mixture_spec": "clean.yaml"}},
        "eval_sets": [{"name": "held", "path": "eval.parquet", "max_texts": 3}],
        "tasks": {"items_per_text": 1, "context_words": 12, "continuation_words": 4},
    }
    spec.update(extra)
    return spec


def _write(root, name, spec) -> object:
    path = root / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))  # arms in the spec's order
    return path


# --- scoring ---


def test_bits_per_byte_is_total_nats_over_ln2_over_utf8_bytes_with_every_token_predicted_once(
    corpus,
):
    from training.model import ModelConfig, Transformer
    from training.tokenizer import load_tokenizer, special_token_ids

    tok = load_tokenizer(corpus / "tokenizer.json")
    special = special_token_ids(tok)
    torch.manual_seed(0)
    model = Transformer(
        ModelConfig(
            vocab_size=tok.get_vocab_size(),
            d_model=32,
            n_layer=2,
            n_head=2,
            n_kv_head=1,
            window=16,
            local_per_global=1,
            max_seq_len=16,
            boundary_token_id=0,
        )
    ).eval()
    text = "Überall wächst Gras — 草が生える. " * 6  # several windows of 16 tokens, multi-byte
    ids = [special["boundary"], *tok.encode(text, add_special_tokens=False).ids]
    assert len(ids) > 40
    got = evaluate.bits_per_byte(model, tok, [texts.EvalText(text, "x")], special, 16, 3)["x"]
    assert got["tokens"] == len(ids) - 1  # each token after the boundary exactly once
    # by hand: the same windows, cross-entropy summed
    nats = 0.0
    for s in range(0, len(ids) - 1, 15):
        w = torch.tensor([ids[s : s + 16]])
        with torch.no_grad():
            logits, _, _ = model(w[:, :-1])
        nats += float(
            torch.nn.functional.cross_entropy(logits[0].float(), w[0, 1:], reduction="sum")
        )
    assert got["nats"] == pytest.approx(nats, rel=1e-5)
    assert got["bpb"] == pytest.approx(nats / math.log(2) / len(text.encode("utf-8")), rel=1e-5)


def test_multiple_choice_acc_takes_the_highest_sum_and_acc_norm_the_highest_per_character():
    item = texts.Item("cloze", "en", "ctx", (" ab", " abcdefghij"), answer=1)
    # sums: the short choice wins; per character the long one does
    scores = evaluate.score_items([item], [[-3.0, -5.0]])
    assert scores["cloze"]["acc"] == 0.0
    assert scores["cloze"]["acc_norm"] == 1.0
    assert scores["cloze/en"]["chance"] == 0.5


def _tiny_model(vocab: int, max_seq_len: int):
    from training.model import ModelConfig, Transformer

    torch.manual_seed(0)
    cfg = ModelConfig(
        vocab_size=vocab,
        d_model=32,
        n_layer=2,
        n_head=2,
        n_kv_head=1,
        window=16,
        local_per_global=1,
        max_seq_len=max_seq_len,
        boundary_token_id=0,
    )
    return Transformer(cfg).eval()


def test_a_choice_longer_than_the_context_is_scored_in_windows_not_an_error(corpus):
    from training.tokenizer import load_tokenizer, special_token_ids

    tok = load_tokenizer(corpus / "tokenizer.json")
    special = special_token_ids(tok)
    model = _tiny_model(tok.get_vocab_size(), 16)
    url = " https://example.org/" + "a1b2c3d4e5" * 12  # one long web "word"
    item = texts.Item("continuation", "en", "the river and the light", (" the house", url), 0)
    cont = tok.encode(url, add_special_tokens=False).ids
    assert len(cont) > 3 * 16  # several windows of the model's context
    lls = evaluate.choice_loglik(model, tok, [item], special, 16, 4)[0]
    ctx = [special["boundary"], *tok.encode(item.context, add_special_tokens=False).ids]

    def by_hand(ids):  # the log-likelihood of ids[1:], window after window as bits per byte
        total = 0.0
        for s in range(0, len(ids) - 1, 15):
            w = torch.tensor([ids[s : s + 16]])
            with torch.no_grad():
                logits, _, _ = model(w[:, :-1])
            total -= float(
                torch.nn.functional.cross_entropy(logits[0].float(), w[0, 1:], reduction="sum")
            )
        return total

    short = tok.encode(" the house", add_special_tokens=False).ids
    assert lls[0] == pytest.approx(
        by_hand(ctx[-(16 - len(short)) :] + short) - by_hand(ctx[-(16 - len(short)) :]), rel=1e-4
    )  # a choice that fits: one sequence, as before
    assert lls[1] == pytest.approx(by_hand(ctx[-1:] + cont), rel=1e-4)


def test_eval_texts_shorter_than_the_ngram_are_found_inside_training_documents():
    from training.ablate.overlap import check_overlap, ngram_hashes, overlap_share

    rng = random.Random(0)
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
    evals = [" ".join(rng.choice(words) for _ in range(9)) + "." for _ in range(30)]
    unseen = [f"Zulu yankee x-ray {i} whiskey victor." for i in range(10)]
    docs = [" ".join(evals[i : i + 5]) for i in range(0, 30, 5)]  # five sentences per document
    for train in (ngram_hashes(docs, 13), ngram_hashes(iter(docs), 13)):  # list or one pass
        assert overlap_share(evals, train, 13) == (1.0, 30)
        assert overlap_share(unseen, train, 13) == (0.0, 10)
        assert overlap_share(evals[:10] + unseen, train, 13)[0] == pytest.approx(0.5)
        with pytest.raises(AblationError, match=r"eval_sets\[copied\]: 100.0% of its 30 grams"):
            check_overlap("a", train, {"fresh": unseen, "copied": evals}, 13, 0.05)


def test_tasks_take_distractors_from_other_passages_of_the_same_language():
    en = [
        texts.EvalText(f"Passage {i} says " + " ".join(f"w{i}x{k}." for k in range(40)), "en")
        for i in range(4)
    ]
    zh = [texts.EvalText("今天天气很好。" * 5 + f"第{i}段结束。", "zh") for i in range(3)]
    t = TaskSpec(choices=3, context_words=6, continuation_words=3, items_per_text=2)
    items = texts.build_items(en + zh, t)
    cont = [i for i in items if i.task == "continuation" and i.lang == "en"]
    assert cont and all(len(i.choices) == 3 for i in cont)
    for i in cont:
        owner = i.context.split()[-1].split("x")[0]  # w<passage>
        true = i.choices[i.answer]
        assert true.split()[0].startswith(owner)
        assert all(
            not c.split()[0].startswith(owner) for k, c in enumerate(i.choices) if k != i.answer
        )
    cloze = [i for i in items if i.task == "cloze" and i.lang == "en"]
    assert cloze and all(i.choices[i.answer].strip().startswith("w") for i in cloze)
    assert all(not i.context.endswith(i.choices[i.answer].strip()) for i in cloze)
    assert any(i.lang == "zh" and i.task == "cloze" for i in items)  # no spaces: characters


def test_t_interval_and_paired_difference():
    d = stats.t_interval([1.0, 2.0, 3.0])
    assert d["mean"] == 2.0 and d["half"] == pytest.approx(4.302653 * 1.0 / math.sqrt(3), rel=1e-5)
    assert stats.t_interval([1.0, 2.0])["half"] is None  # below three seeds: no interval
    # the same offset on every seed: an interval of width 0 that excludes 0
    p = stats.paired_difference([1.1, 2.1, 3.1], [1.0, 2.0, 3.0])
    assert p["mean"] == pytest.approx(0.1) and p["excludes_zero"] is True
    assert stats.paired_difference([1.0, 2.0, 3.0], [2.0, 1.0, 3.0])["excludes_zero"] is False


# --- the command ---


@pytest.mark.parametrize(
    "change, field",
    [
        ({"arms": {"a": {"mixture_spec": "m.yaml"}, "..": {"mixture_spec": "m.yaml"}}}, "arms"),
        ({"name": ".."}, "name"),
        ({"eval_sets": [{"name": ".", "path": "e.txt", "lang": "en"}]}, r"eval_sets\.0\.name"),
    ],
    ids=["arm", "spec", "eval-set"],
)
def test_a_name_of_only_dots_is_refused_naming_its_field(change, field):
    spec = {"name": "t", "tokens": 1000, "arms": {"a": {"mixture_spec": "m.yaml"}}}
    spec["eval_sets"] = [{"name": "e", "path": "e.txt", "lang": "en"}]
    spec.update(change)
    with pytest.raises(
        AblationError, match=rf"spec.yaml: invalid ablation spec: .*{field}.*only dots"
    ):
        parse_spec(spec, "spec.yaml")


def test_a_spec_not_utf8_or_with_a_key_twice_is_one_line_naming_the_file(tmp_path):
    from training.ablate.spec import load_spec

    spec = tmp_path / "spec.yaml"
    spec.write_bytes(b"name: t\ntokens: 1000\nconfig: caf\xe9\n")
    with pytest.raises(AblationError) as err:
        load_spec(spec)
    assert str(err.value) == f"{spec}: not UTF-8 at byte 32 (line 3); save it as UTF-8"
    spec.write_text("tokens: 1000\narms: {a: {mixture: x}}\ntokens: 5\n")
    with pytest.raises(AblationError) as err:
        load_spec(spec)
    assert str(err.value).startswith(
        f"{spec}: not valid YAML: key 'tokens' is given twice (lines 1 and 3)"
    )


def test_a_redone_arm_never_removes_a_directory_outside_arms(tmp_path, monkeypatch):
    """Were an arm's directory to resolve to `arms/` or above (a name like `..`), redoing it
    would remove the completed arms and the user's files: refused, nothing removed."""
    from training.ablate import run as run_mod

    spec = parse_spec(
        {
            "tokens": 1000,
            "arms": {"a": {"mixture_spec": "m.yaml"}},
            "eval_sets": [{"name": "e", "path": "e.txt", "lang": "en"}],
        }
    )
    spec.arms = {"..": spec.arms["a"]}  # past validation, as a future name rule might let through
    monkeypatch.setattr(run_mod, "load_spec", lambda path: spec)
    monkeypatch.setattr(run_mod, "load_eval_sets", lambda *a: ({"e": ([], [])}, {"e": "x"}))
    monkeypatch.setattr(run_mod, "_arm_fingerprint", lambda *a: "fp")
    out = tmp_path / "out"
    (out / "arms" / "done").mkdir(parents=True)
    (out / "arms" / "done" / "arm.json").write_text("{}")
    (out / "precious.txt").write_text("the user's")
    with pytest.raises(
        AblationError, match=r"is not inside .*arms, so it is not removed; rename the arm"
    ):
        run_ablation(tmp_path / "spec.yaml", out)
    assert (out / "precious.txt").read_text() == "the user's"
    assert (out / "arms" / "done" / "arm.json").is_file()


def test_an_eval_set_inside_an_arms_training_data_is_refused_naming_set_and_arm(corpus, tmp_path):
    spec = _spec(
        corpus,
        eval_sets=[
            {"name": "held", "path": "eval.parquet", "max_texts": 2},
            {"name": "leaked", "path": "clean.parquet", "max_texts": 2},
        ],
    )
    with pytest.raises(AblationError, match=r"eval_sets\[leaked\].*arm 'noisy'"):
        run_ablation(_write(corpus, "leak.yaml", spec), tmp_path / "out")
    assert not (tmp_path / "out" / "arms" / "noisy" / "seed-0").exists()  # refused before training


def test_ablation_trains_equal_tokens_scores_with_intervals_and_resumes_only_the_unfinished_arm(
    corpus, tmp_path, monkeypatch
):
    import training.trainer

    out = tmp_path / "out"
    spec_path = _write(corpus, "ab.yaml", _spec(corpus))
    real = training.trainer.run_stage
    calls = []

    def killed_in_clean(stage, config, data, run_dir, **kw):
        calls.append(str(run_dir))
        if "clean" in str(run_dir) and "seed-1" in str(run_dir):
            raise KeyboardInterrupt  # the ablation is killed in the second arm
        return real(stage, config, data, run_dir, **kw)

    monkeypatch.setattr(training.trainer, "run_stage", killed_in_clean)
    with pytest.raises(KeyboardInterrupt):
        run_ablation(spec_path, out)
    done = out / "arms" / "noisy" / "arm.json"
    assert done.exists() and not (out / "arms" / "clean" / "arm.json").exists()
    before = done.stat().st_mtime_ns

    calls.clear()
    monkeypatch.setattr(training.trainer, "run_stage", real)
    monkeypatch.setattr(
        training.trainer, "run_stage", lambda *a, **k: (calls.append(str(a[3])), real(*a, **k))[1]
    )
    r = run_ablation(spec_path, out)
    assert r["reused_arms"] == ["noisy"] and done.stat().st_mtime_ns == before
    assert calls == [str(out / "arms" / "clean" / f"seed-{s}") for s in (0, 1, 2)]

    arms = r["arms"]
    assert arms["noisy"]["tokens"] == arms["clean"]["tokens"] >= 2048  # tokens, not steps
    for arm in arms.values():
        s = arm["summary"]["bpb/held"]
        assert s["n"] == 3 and s["low"] < s["mean"] < s["high"]
        assert {
            "bpb/held/en",
            "bpb/held/zh",
            "continuation/held/acc_norm",
            "cloze/held/acc",
        } <= set(arm["summary"])
    diff = r["differences"]["clean - noisy"]["bpb/held"]
    per_seed = [
        arms["clean"]["per_seed"][s]["bpb/held"] - arms["noisy"]["per_seed"][s]["bpb/held"]
        for s in "012"
    ]
    assert diff["mean"] == pytest.approx(sum(per_seed) / 3)
    saved = json.loads((out / "results.json").read_text())
    assert saved["metrics"] == r["metrics"] and "Student t" in saved["interval"]
    report = (out / "report.md").read_text()
    assert "| bpb/held/en |" in report and "clean - noisy" in report
    assert (out / "loss_curves.png").stat().st_size > 1000 and (
        out / "bpb.png"
    ).stat().st_size > 1000


def test_a_bad_arm_names_its_field(corpus, tmp_path):
    with pytest.raises(AblationError, match="arms.x"):
        run_ablation(_write(corpus, "bad.yaml", _spec(corpus, arms={"x": {}})), tmp_path)
    arms = {
        "x": {"mixture_spec": "clean.yaml", "filter": "nofilter.yaml", "input": "clean.parquet"}
    }
    with pytest.raises(AblationError, match=r"arms\.x\.filter: .*nofilter.yaml does not exist"):
        run_ablation(_write(corpus, "filt.yaml", _spec(corpus, arms=arms)), tmp_path)
    (corpus / "filter.yaml").write_text("{}")
    arms["x"]["filter"] = "filter.yaml"  # the filter runs from the CLI or Dagster only
    with pytest.raises(AblationError, match=r"arms\.x\.filter: .*refinery ablate"):
        run_ablation(_write(corpus, "filt.yaml", _spec(corpus, arms=arms)), tmp_path)


def test_the_ablation_report_asset_runs_the_lakes_filtered_vs_unfiltered_ablation(corpus, tmp_path):
    """The asset reads the lake's annotated rows, kept documents and tokenizer; its metadata holds
    the table, the report (plots inline) and the paths of results.json and the plots."""
    import shutil

    from pipelines.graph import materialize_selection

    (tmp_path / "filter").mkdir()
    (tmp_path / "tokenizer").mkdir()
    shutil.copy(corpus / "tokenizer.json", tmp_path / "tokenizer" / "tokenizer.json")
    shutil.copy(corpus / "noisy.parquet", tmp_path / "filter" / "annotated.parquet")
    shutil.copy(corpus / "clean.parquet", tmp_path / "filter" / "documents.parquet")
    cfg = {"config": str(corpus / "proxy.yaml"), "tokens": 512}
    result = materialize_selection(
        ["ablation_report"], tmp_path, run_config={"ops": {"ablation_report": {"config": cfg}}}
    )
    assert result.success
    (mat,) = [
        e.event_specific_data.materialization for e in result.get_asset_materialization_events()
    ]
    meta = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    out = tmp_path / "reports" / "ablation" / "lake-filter"
    assert meta["path"] == str(out) and meta["arms"] == ["unfiltered", "filtered"]
    assert meta["table"]["bpb/heldout"]["filtered"].count("±") == 1
    assert "filtered - unfiltered" in meta["table"]["bpb/heldout"]
    assert "data:image/png;base64," in meta["report"]
    assert json.loads((out / "results.json").read_text())["seeds"] == [0, 1, 2]
    from pipelines.graph import dataset_inputs  # lineage: the manifest names every upstream read

    upstream = ["filter/annotated.parquet", "filter/documents.parquet", "tokenizer/tokenizer.json"]
    assert {str(tmp_path / u) for u in upstream} <= dataset_inputs(out)
    # the eval split never reaches either arm (its ids are carved out before the build)
    evals = pq.read_table(out / "inputs" / "eval.parquet").column("text").to_pylist()
    assert evals and all(
        a["overlap"]["heldout"] < 0.05
        for a in json.loads((out / "results.json").read_text())["arms"].values()
    )


def test_cli_names_the_bad_spec_field_and_exits_2(corpus, tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    bad = _write(corpus, "cli-bad.yaml", _spec(corpus, tokens=0))
    result = CliRunner().invoke(app, ["ablate", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "cli-bad.yaml" in result.output and "tokens" in result.output
    lake = CliRunner().invoke(
        app, ["ablate", "--out", str(tmp_path / "o")], env={"REFINERY_HOME": str(tmp_path)}
    )
    assert (
        lake.exit_code == 2 and "refinery filter" in lake.output
    )  # an empty lake says what to run


def test_a_changed_input_document_redoes_the_arm_on_resume(corpus, tmp_path):
    """The fingerprint holds the documents a mixture spec reads, not only the spec's text: the same
    spec over a rewritten parquet is a different arm, and an unchanged one is reused."""
    import shutil

    for f in ("clean.parquet", "clean.yaml", "tokenizer.json", "eval.parquet", "proxy.yaml"):
        shutil.copy(corpus / f, tmp_path / f)
    spec = _spec(tmp_path, seeds=[0], tokens=256, arms={"clean": {"mixture_spec": "clean.yaml"}})
    spec_path = _write(tmp_path, "ab.yaml", spec)
    out = tmp_path / "out"
    run_ablation(spec_path, out)
    assert run_ablation(spec_path, out)["reused_arms"] == ["clean"]
    table = pq.read_table(tmp_path / "clean.parquet")
    pq.write_table(table.slice(0, table.num_rows // 2), tmp_path / "clean.parquet")
    r = run_ablation(spec_path, out)
    assert r["reused_arms"] == []
    assert r["arms"]["clean"]["mixture_tokens"] > 0
