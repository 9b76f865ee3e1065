"""Evaluation texts: read an eval set, split texts into words, build the zero-shot tasks.

Words: whitespace-separated tokens; in a text written without spaces (Chinese, Japanese) every
character is a word and words join with "". Tasks, scored like lm-eval-harness multiple choice:

- `continuation`: a passage's next `continuation_words` words after `context_words` of context,
  against the same number of words taken from other passages of the same language;
- `cloze`: the final word of a sentence (LAMBADA-style) after the text before it, against final
  words of sentences of other passages of the same language;
- `word_order` (only when `tasks.kinds` names it): a passage's next `continuation_words` words in
  their own order after `context_words` of context, against the same words in other orders (the
  choices share their words, so only the model's grasp of the language's order separates them).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from training.ablate.spec import AblationError, EvalSetSpec, TaskSpec

SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
WORD_CHARS = re.compile(r"^\w{2,}$")


@dataclass(frozen=True)
class EvalText:
    text: str
    lang: str


@dataclass(frozen=True)
class Item:
    """One multiple-choice item: the context, the choices, the index of the true one."""

    task: str
    lang: str
    context: str
    choices: tuple[str, ...]
    answer: int


def read_eval_set(es: EvalSetSpec, path: Path) -> list[EvalText]:
    """The eval set's texts with their language (an error names the file and field)."""
    if not path.exists():
        raise AblationError(f"eval_sets[{es.name}].path: {path} does not exist")
    rows: list[dict] = []
    if path.is_dir():
        rows = [{es.text_column: p.read_text(encoding="utf-8")} for p in sorted(path.glob("*.txt"))]
    elif path.suffix == ".parquet":
        import pyarrow.parquet as pq

        names = pq.read_schema(path).names
        cols = [c for c in (es.text_column, es.lang_column) if c and c in names]
        if es.text_column not in names:
            raise AblationError(
                f"eval_sets[{es.name}].text_column: {path} has no column {es.text_column!r} "
                f"(columns: {', '.join(names)})"
            )
        rows = pq.read_table(path, columns=cols).to_pylist()
    elif path.suffix in (".jsonl", ".json"):
        lines = path.read_text(encoding="utf-8").splitlines()
        rows = [json.loads(ln) for ln in lines if ln.strip()]
    else:
        lines = path.read_text(encoding="utf-8").splitlines()
        rows = [{es.text_column: ln} for ln in lines if ln.strip()]
    out: list[EvalText] = []
    per_lang: dict[str, int] = {}
    for row in rows:
        text = row.get(es.text_column)
        lang = es.lang or (row.get(es.lang_column) if es.lang_column else None)
        if not isinstance(text, str) or not text.strip():
            continue
        if not lang:
            raise AblationError(
                f"eval_sets[{es.name}]: {path} has a text without a language; set lang: (the "
                f"set's language) or lang_column: (a column that holds one)"
            )
        if es.max_texts and per_lang.get(lang, 0) >= es.max_texts:
            continue
        per_lang[lang] = per_lang.get(lang, 0) + 1
        out.append(EvalText(_cut(text.strip(), es.max_chars), str(lang)))
    if not out:
        raise AblationError(f"eval_sets[{es.name}]: {path} holds no texts")
    return out


def _cut(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text.rfind(" ", 0, max_chars)
    return text[: cut if cut > max_chars // 2 else max_chars]


def spaced(text: str) -> bool:
    """Whether the text separates words with spaces (not Chinese or Japanese)."""
    return text.count(" ") * 20 >= len(text)


def words(text: str) -> tuple[list[str], str]:
    """(words, joiner): whitespace words, or characters for a text written without spaces."""
    if spaced(text):
        return text.split(), " "
    return [c for c in text if not c.isspace()], ""


def _windows(text: str, ctx: int, cont: int, rng: random.Random, n: int):
    """Up to n non-overlapping (context, continuation) windows of a passage."""
    ws, join = words(text)
    scale = 1 if join else 2  # CJK: two characters stand for about one word
    c, k = ctx * scale, cont * scale
    span = c + k
    starts = list(range(0, len(ws) - span + 1, span))
    rng.shuffle(starts)
    for s in sorted(starts[:n]):
        yield join.join(ws[s : s + c]), join.join(ws[s + c : s + span]), join


def continuation_items(texts: list[EvalText], t: TaskSpec) -> list[Item]:
    """Rank a passage's true continuation above continuations from other passages."""
    rng = random.Random(t.seed)
    by_lang: dict[str, list[list[tuple[str, str, str]]]] = {}
    for doc in texts:
        wins = list(
            _windows(doc.text, t.context_words, t.continuation_words, rng, t.items_per_text)
        )
        if wins:
            by_lang.setdefault(doc.lang, []).append(wins)
    items = []
    for lang, docs in sorted(by_lang.items()):
        for i, wins in enumerate(docs):
            others = [w[1] for j, d in enumerate(docs) if j != i for w in d]
            if not others:
                continue
            for context, cont, join in wins:
                pool = [o for o in others if o != cont]
                wrong = rng.sample(pool, min(t.choices - 1, len(pool)))
                items.append(_item("continuation", lang, context, cont, wrong, join, rng))
    return items


def _sentence_finals(text: str) -> list[tuple[str, str, str]]:
    """(text before the final word, final word, joiner) of each sentence whose last word is a word."""
    out = []
    pos = 0
    join = " " if spaced(text) else ""
    for m in SENTENCE_END.finditer(text):
        sentence = text[pos : m.start()].rstrip(".!?。！？ ")
        before, last = (
            (sentence.rsplit(" ", 1) + [""])[:2] if join else (sentence[:-2], sentence[-2:])
        )
        if join and not last:
            before, last = "", before
        if before and WORD_CHARS.match(last):
            out.append((text[:pos] + before, last, join))
        pos = m.end()
    return out


def cloze_items(texts: list[EvalText], t: TaskSpec) -> list[Item]:
    """Pick a sentence's held-out final word against final words of other passages' sentences."""
    rng = random.Random(t.seed + 1)
    by_lang: dict[str, list[list[tuple[str, str, str]]]] = {}
    for doc in texts:
        finals = _sentence_finals(doc.text)
        if finals:
            rng.shuffle(finals)
            by_lang.setdefault(doc.lang, []).append(finals[: t.items_per_text])
    items = []
    max_ctx = t.context_words * 6  # characters of context kept before the word
    for lang, docs in sorted(by_lang.items()):
        for i, finals in enumerate(docs):
            others = sorted({w for j, d in enumerate(docs) if j != i for _, w, _ in d})
            for before, word, join in finals:
                pool = [o for o in others if o.lower() != word.lower()]
                if not pool:
                    continue
                wrong = rng.sample(pool, min(t.choices - 1, len(pool)))
                context = before[-max_ctx:]
                items.append(_item("cloze", lang, context, word, wrong, join, rng))
    return items


def _item(task, lang, context, true, wrong, join, rng) -> Item:
    choices = [true, *wrong]
    rng.shuffle(choices)
    prefix = join  # the continuation starts after the joiner, as it does in the text
    return Item(task, lang, context, tuple(prefix + c for c in choices), choices.index(true))


def word_order_items(texts: list[EvalText], t: TaskSpec) -> list[Item]:
    """Rank a passage's next words in their own order above the same words reordered."""
    rng = random.Random(t.seed + 2)
    items = []
    for doc in texts:
        for context, cont, join in _windows(
            doc.text, t.context_words, t.continuation_words, rng, t.items_per_text
        ):
            ws = cont.split(" ") if join else list(cont)
            seen, wrong = {cont}, []
            for _ in range(20 * t.choices):  # a span of repeated words may have few orders
                order = ws[:]
                rng.shuffle(order)
                other = join.join(order)
                if other not in seen:
                    seen.add(other)
                    wrong.append(other)
                if len(wrong) == t.choices - 1:
                    break
            if len(wrong) == t.choices - 1:
                items.append(_item("word_order", doc.lang, context, cont, wrong, join, rng))
    return items


TASKS = {"continuation": continuation_items, "cloze": cloze_items, "word_order": word_order_items}


def build_items(texts: list[EvalText], t: TaskSpec) -> list[Item]:
    """The zero-shot tasks `t.kinds` names, built from an eval set."""
    return [item for kind in t.kinds for item in TASKS[kind](texts, t)]
