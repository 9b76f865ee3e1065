"""The ablation's word-order task: the true next words against the same words reordered."""

from __future__ import annotations

import pytest

from training.ablate import evaluate, texts
from training.ablate.spec import AblationError, TaskSpec, parse_spec


def _passages():
    en = [texts.EvalText(" ".join(f"p{i}w{k}" for k in range(30)) + ".", "en") for i in range(3)]
    ja = [texts.EvalText("今日は天気がとても良いので公園を散歩しました" * 2, "ja")]
    return en + ja


def test_word_order_choices_are_the_true_words_reordered_after_the_true_context():
    t = TaskSpec(choices=4, context_words=5, continuation_words=4, items_per_text=2)
    items = texts.build_items(_passages(), t.model_copy(update={"kinds": ["word_order"]}))
    assert {i.task for i in items} == {"word_order"} and {i.lang for i in items} == {"en", "ja"}
    for item in items:
        true = item.choices[item.answer]
        assert len(set(item.choices)) == 4  # three other orders, none the true one
        bag = sorted(true.split()) if item.lang == "en" else sorted(true)
        for c in item.choices:
            assert (sorted(c.split()) if item.lang == "en" else sorted(c)) == bag
        if item.lang == "en":  # the context runs up to the true continuation
            last = int(item.context.split()[-1].split("w")[1])
            assert true.split()[0].endswith(f"w{last + 1}")


def test_a_model_that_knows_the_order_wins_word_order_and_one_that_does_not_is_at_chance():
    t = TaskSpec(choices=4, context_words=5, continuation_words=4, kinds=["word_order"])
    items = texts.build_items(_passages()[:3], t)

    def in_order(c: str) -> float:  # a log-likelihood that rewards ascending word numbers
        n = [int(w.split("w")[1]) for w in c.split()]
        return -float(sum(b != a + 1 for a, b in zip(n, n[1:], strict=False)))

    knows = evaluate.score_items(items, [[in_order(c) for c in i.choices] for i in items])
    blind = evaluate.score_items(items, [[0.0] * len(i.choices) for i in items])
    assert knows["word_order"]["acc"] == 1.0
    assert blind["word_order"]["acc"] == pytest.approx(
        sum(i.answer == 0 for i in items) / len(items)
    )


def test_the_default_tasks_are_unchanged_and_an_unknown_kind_names_the_field():
    t = TaskSpec()
    assert t.kinds == ["continuation", "cloze"]
    items = texts.build_items(_passages(), t)
    assert {i.task for i in items} <= {"continuation", "cloze"}
    spec = {
        "tokens": 1,
        "arms": {"a": {"mixture": "m"}},
        "eval_sets": [{"name": "e", "path": "e.parquet"}],
        "tasks": {"kinds": ["order"]},
    }
    with pytest.raises(AblationError, match="tasks.kinds"):
        parse_spec(spec)
