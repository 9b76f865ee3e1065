"""Benchmark decontamination (filters.decontam): generated eval sets in JSONL and Parquet, one in
Chinese; documents marked with the set and the n-gram count, the report, dropping as
configuration, a mixture's `NOT contaminated`, and the same output in process and on Beam."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.urlblock import write_lists
from filters.config import DecontamConfig, FilterConfig
from filters.decontam import Decontaminator, EvalFileError, build_index, tokens

WORDS = (
    "river stone lantern orchard violet copper meadow harbor quiet engine silver basket "
    "window thunder pepper candle garden ladder marble falcon"
).split()
HAN = "山水火木金土日月星云风雨雪花草树林田石光海河湖江天地人心手口目耳"


def _question(rng: random.Random, n: int = 24) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "?"


def _passage(rng: random.Random, n: int = 30) -> str:
    return "".join(rng.choice(HAN) for _ in range(n)) + "。"


@pytest.fixture(scope="module")
def evals(tmp_path_factory):
    d = tmp_path_factory.mktemp("evals")
    rng = random.Random(5)
    arith = [{"question": _question(rng), "answer": str(i)} for i in range(40)]
    with open(d / "arith.jsonl", "w") as f:
        for item in arith:
            f.write(json.dumps(item) + "\n")
        f.write("{not json\n")
        f.write('{"id": 3}\n')  # none of the named fields
    zh = [{"context": _passage(rng), "choices": ["甲", "乙"]} for _ in range(20)]
    pq.write_table(pa.Table.from_pylist(zh), d / "lesen.parquet")
    return {"dir": d, "arith": arith, "zh": zh, "files": [d / "arith.jsonl", d / "lesen.parquet"]}


def _cfg(evals, **kw) -> DecontamConfig:
    return DecontamConfig(evals=[str(p) for p in evals["files"]], **kw)


def test_tokens_are_words_and_characters_of_unspaced_scripts():
    assert tokens("Ｈello, WORLD! naïve_x 42") == ["hello", "world", "naïve", "x", "42"]
    assert tokens("abc中文テスト한국어 ok") == ["abc", "中", "文", "テ", "ス", "ト", "한국어", "ok"]
    # a vowel sign or virama stays in its word; vocalised Arabic too
    assert tokens("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert tokens("ذَهَبَ الوَلَدُ") == ["ذَهَبَ", "الوَلَدُ"]


def test_a_copied_question_is_found_whatever_its_case_spacing_and_punctuation(evals):
    d = Decontaminator(_cfg(evals))
    q = evals["arith"][7]["question"]
    copied = "Homework help!\n" + q.upper().replace(" ", " ,  ") + " The answer is below."
    hit, names, n = d.check(copied)
    assert (hit, names) == (True, "arith") and n == len(q.split()) - 13 + 1
    twelve = " ".join(q.rstrip("?").split()[:12])
    assert d.check(f"intro {twelve} outro") == (False, None, 0)
    assert d.check(" ".join(WORDS)) == (False, None, 0)


def test_an_eval_set_in_another_script_is_matched_by_characters(evals):
    d = Decontaminator(_cfg(evals))
    passage = evals["zh"][3]["context"]
    assert d.check(f"今天我们读了这段文字：{passage[2:20]}，很有意思。")[:2] == (True, "lesen")
    assert d.check(f"今天：{passage[2:14]}。")[:2] == (False, None)  # 12 characters
    both = evals["arith"][0]["question"] + " " + passage
    assert d.check(both)[1] == "arith,lesen"


def test_min_ngrams_sets_how_much_overlap_marks_a_document(evals):
    q = evals["arith"][1]["question"].rstrip("?").split()
    strict = Decontaminator(_cfg(evals, min_ngrams=5))
    assert strict.check(" ".join(q[:16]))[0] is False  # 4 shared 13-grams
    assert strict.check(" ".join(q[:17])) == (True, "arith", 5)


def test_the_index_counts_what_it_could_not_use(evals):
    st = {s.name: s for s in build_index(_cfg(evals)).stats}
    assert st["arith"].items == 41 and st["arith"].bad_lines == 1
    assert st["arith"].items_without_fields == 1 and st["arith"].items_indexed == 40
    assert st["lesen"].items_indexed == 20 and st["lesen"].ngrams > 0


def test_bad_eval_files_are_one_line_naming_file_and_fix(tmp_path):
    (tmp_path / "q.jsonl").write_text('{"prompt": "a b c"}\n')
    with pytest.raises(EvalFileError) as err:
        build_index(DecontamConfig(evals=[str(tmp_path / "q.jsonl")]))
    assert "decontamination.fields" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(EvalFileError, match="eval file not found"):
        build_index(DecontamConfig(evals=[str(tmp_path / "nope.jsonl")]))
    (tmp_path / "b.parquet").write_bytes(b"not parquet")
    with pytest.raises(EvalFileError, match="not a readable Parquet eval file"):
        build_index(DecontamConfig(evals=[str(tmp_path / "b.parquet")]))
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "q.jsonl").write_text('{"question": "a"}\n')
    with pytest.raises(EvalFileError, match="also"):
        build_index(DecontamConfig(evals=[str(tmp_path / "q.jsonl"), str(tmp_path / "x/q.jsonl")]))


def _docs(tmp_path, evals) -> tuple:
    rng = random.Random(9)
    filler = " ".join(
        "The town council met on Tuesday to discuss the new library and its opening hours."
        for _ in range(6)
    )
    q = evals["arith"]
    zh = evals["zh"]
    zh_filler = "今天天气很好，我们去公园散步，看见很多人在湖边钓鱼和聊天。" * 4
    rows = [
        ("clean-en", filler),
        ("arith-copy", filler + " " + q[2]["question"] + " " + q[2]["answer"]),
        ("arith-twice", q[4]["question"] + " " + filler + " " + q[5]["question"]),
        ("zh-copy", zh_filler + zh[1]["context"] + zh_filler),
        ("zh-clean", zh_filler + "".join(rng.choice(HAN) for _ in range(12))),
        ("both", filler + q[9]["question"] + " " + zh[2]["context"]),
        ("blocked", filler + " " + q[11]["question"]),
    ]
    table = [
        {
            "id": i,
            "url": f"http://{'blocked.test' if i == 'blocked' else 'site.test'}/{i}",
            "text": t,
            "training_allowed": True,
        }
        for i, t in rows
    ]
    d = tmp_path / "docs"
    d.mkdir()
    pq.write_table(pa.Table.from_pylist(table), d / "documents.parquet")
    lists = write_lists(tmp_path / "lists", {"spam": {"domains": ["blocked.test"]}})
    cfg = {
        "quality": {"use_default_models": False},
        "urls": {"blocklist_dir": str(lists)},
        "languages": ["en", "zh"],
    }
    return d, cfg


@pytest.fixture(scope="module")
def runs(tmp_path_factory, evals):
    from pipelines.stages.filter import run_filter

    base = tmp_path_factory.mktemp("decontam-run")
    docs, cfg = _docs(base, evals)
    out = {}
    for runner in ("InProcess", "DirectRunner"):
        o = base / runner
        s = run_filter(
            docs, o, config=cfg, decontaminate=evals["files"], beam_args=[f"--runner={runner}"]
        )
        out[runner] = (o, s)
    return out


def test_documents_are_marked_with_benchmark_and_count_and_kept(runs):
    out, summary = runs["InProcess"]
    rows = {r["id"]: r for r in pq.read_table(out / "annotated.parquet").to_pylist()}
    marked = {i: r["contamination_benchmarks"] for i, r in rows.items() if r["contaminated"]}
    assert marked == {
        "arith-copy": "arith",
        "arith-twice": "arith",
        "zh-copy": "lesen",
        "both": "arith,lesen",
        "blocked": "arith",
    }
    assert rows["arith-twice"]["contamination_ngrams"] == 2 * (24 - 13 + 1)
    assert rows["clean-en"]["contamination_ngrams"] == 0
    assert rows["clean-en"]["contamination_benchmarks"] is None
    # annotate only by default: no row is dropped for it
    assert "contaminated" not in summary["dropped"]
    assert rows["blocked"]["drop_reason"] == "url_blocked:spam"
    assert summary["dropped"]["url_blocked:spam"] == 1
    report = json.loads((out / "decontamination.json").read_text())
    assert report == summary["decontamination"]
    hits = {e["name"]: e["docs_hit"] for e in report["evals"]}
    assert hits == {"arith": 4, "lesen": 2} and report["docs_contaminated"] == 5
    assert report["evals"][0]["items_indexed"] == 40 and report["ngram"] == 13
    assert "Contaminated (shares n-grams with an eval set" in (out / "funnel.md").read_text()
    assert "5 documents (arith: en 4; lesen: en 1, zh 1)" in summary["funnel_markdown"]


def test_beam_and_in_process_write_the_same_bytes_and_report(runs):
    (a, sa), (b, sb) = runs["InProcess"], runs["DirectRunner"]
    for name in ("annotated.parquet", "documents.parquet", "decontamination.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name

    def figures(s):  # paths differ by output directory
        return {
            k: v for k, v in s.items() if not (isinstance(v, str) and v.startswith(s["out_dir"]))
        }

    assert figures(sa) == figures(sb)


def test_a_mixture_excludes_them_with_not_contaminated(runs):
    from training.mixture.sources import ReadUnit, read_unit
    from training.mixture.spec import normalize_predicate

    out, _ = runs["InProcess"]
    ann = pq.read_table(out / "annotated.parquet").to_pylist()
    assert normalize_predicate("NOT contaminated")
    unit = ReadUnit("web", 0, str(out / "annotated.parquet"), "NOT contaminated", "text", None, ())
    texts = read_unit(unit)[0].to_pylist()
    assert sorted(texts) == sorted(r["text"] for r in ann if not r["contaminated"])
    assert len(texts) == 2


def test_dropping_is_configuration(tmp_path, evals):
    from pipelines.stages.filter import run_filter

    docs, cfg = _docs(tmp_path, evals)
    cfg["decontamination"] = {"drop": True, "evals": [str(evals["files"][0])]}
    s = run_filter(docs, tmp_path / "o", config=cfg, beam_args=["--runner=InProcess"])
    assert s["dropped"]["contaminated"] == 3  # arith-copy, arith-twice, both
    assert s["dropped"]["url_blocked:spam"] == 1  # the URL filter comes first
    assert [e["name"] for e in s["decontamination"]["evals"]] == ["arith"]


def test_no_eval_sets_no_decontamination_and_no_report(tmp_path, evals):
    from filters.annotate import DocumentAnnotator
    from pipelines.stages.filter import run_filter

    assert FilterConfig().decontamination.evals == []
    docs, cfg = _docs(tmp_path, evals)
    s = run_filter(docs, tmp_path / "o", config=cfg, beam_args=["--runner=InProcess"])
    assert s["decontamination"] is None and not (tmp_path / "o" / "decontamination.json").exists()
    ann = pq.read_table(tmp_path / "o" / "annotated.parquet")
    assert ann["contaminated"].to_pylist() == [False] * ann.num_rows
    cfg_model = FilterConfig.model_validate(cfg)
    assert DocumentAnnotator(cfg_model).decontam is None


def test_the_cli_takes_eval_files_and_refuses_a_bad_one_in_one_line(tmp_path, evals):
    from typer.testing import CliRunner

    from pipelines.cli import app

    docs, cfg = _docs(tmp_path, evals)
    cfg_file = tmp_path / "filter.yaml"
    cfg_file.write_text(json.dumps(cfg))
    base = ["filter", "--docs", str(docs), "--config", str(cfg_file), "--runner", "InProcess"]
    ok = CliRunner().invoke(
        app,
        [*base, "--out", str(tmp_path / "o"), "--decontaminate", str(evals["files"][0])]
        + ["--decontaminate", str(evals["files"][1])],
    )
    assert ok.exit_code == 0, ok.output
    report = json.loads((tmp_path / "o" / "decontamination.json").read_text())
    assert [e["name"] for e in report["evals"]] == ["arith", "lesen"]
    assert report["docs_contaminated"] > 0
    assert f"{report['docs_contaminated']} contaminated ->" in ok.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "x"}\n')
    res = CliRunner().invoke(
        app, [*base, "--out", str(tmp_path / "p"), "--decontaminate", str(bad)]
    )
    assert res.exit_code == 2, res.output
    assert "bad.jsonl" in res.output and "decontamination.fields" in res.output
    assert not (tmp_path / "p" / "annotated.parquet").exists()


def test_a_huge_document_is_checked_whole(evals):
    d = Decontaminator(_cfg(evals))
    q = evals["arith"][20]["question"]
    filler = "The harbour master logged every ship that came in that winter. " * 20_000
    huge = filler + q + " " + filler  # 2.5 MB, 440,000 tokens
    hit, names, n = d.check(huge)
    assert (hit, names, n) == (True, "arith", 24 - 13 + 1)
