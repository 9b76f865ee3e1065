"""Synthetic long documents for in-context retrieval, and the late-query loss that measures it.

After the report's synthetic long-form data for context lengthening: each document states a few
key-value facts at its start ("The code of the blue door is 7341."), continues with filler prose,
and ends by asking for the facts again ("The code of the blue door is 7341."). The answer digits
of a late query can only be predicted from the fact far back in the context, so the loss on them
(`late_query_loss`) measures what a longer context buys; `without_facts` gives the same documents
with the facts' values re-drawn, the control that says how much of that loss comes from
retrieval rather than from knowing the answer format.

Documents are written as a docs Parquet (`write_retrieval_parquet`) with the columns the mixture
sources read (`id`, `text`, `lang`, `quality_score`, `training_allowed`, ...), so a mixture spec
lists them as a source (lake `synth/long/*.parquet` in `training/mixtures/long_context.yaml`).
Everything is a pure function of the seed.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

COLORS = (
    "red",
    "blue",
    "green",
    "yellow",
    "black",
    "white",
    "orange",
    "purple",
    "silver",
    "golden",
    "brown",
    "grey",
    "pink",
    "violet",
    "amber",
    "crimson",
)
THINGS = (
    "door",
    "box",
    "lamp",
    "gate",
    "chest",
    "locker",
    "safe",
    "vault",
    "cabinet",
    "drawer",
    "trunk",
    "crate",
    "hatch",
    "panel",
    "case",
    "shelf",
)
# Filler prose: simple sentences over words that never appear in a fact or a query.
_SUBJECTS = (
    "the farmer",
    "a traveller",
    "the old miller",
    "our neighbour",
    "the teacher",
    "a young sailor",
    "the baker",
    "my cousin",
    "the gardener",
    "a quiet monk",
)
_VERBS = (
    "walked along",
    "looked at",
    "painted",
    "talked about",
    "remembered",
    "visited",
    "cleaned",
    "carried water to",
    "sang near",
    "waited by",
)
_PLACES = (
    "the river",
    "the market",
    "the hills",
    "the harbour",
    "the orchard",
    "the bridge",
    "the meadow",
    "the village square",
    "the forest path",
    "the small church",
)
_TIMES = (
    "in the morning",
    "after lunch",
    "at dusk",
    "on Sunday",
    "before the rain",
    "during the festival",
    "late at night",
    "every spring",
)
# Code words: one BPE token each once a tokenizer has seen them a few times.
CODE_WORDS = (
    "falcon",
    "otter",
    "maple",
    "copper",
    "walnut",
    "harbor",
    "lemon",
    "tiger",
    "cobalt",
    "willow",
    "canyon",
    "pepper",
    "raven",
    "cedar",
    "velvet",
    "marble",
    "ember",
    "glacier",
    "jasper",
    "lotus",
    "meadow",
    "nickel",
    "orchid",
    "quartz",
    "saffron",
    "thistle",
    "umber",
    "walrus",
    "zephyr",
    "badger",
    "cactus",
    "dolphin",
)
VALUE_KINDS = ("digits", "words")
SOURCE = "synthetic-retrieval"
FACT = "The code of the {key} is {value}."
QUERY_HEADER = "Now recall the codes."


@dataclass
class RetrievalDoc:
    """One document: its text, its facts, and the character spans of each late answer."""

    id: str
    text: str
    facts: dict[str, str]
    answer_spans: list[tuple[int, int]] = field(default_factory=list)  # digits: [start, end)


def _filler_sentence(rng: np.random.Generator) -> str:
    s = f"{_SUBJECTS[rng.integers(len(_SUBJECTS))]} {_VERBS[rng.integers(len(_VERBS))]} "
    s += f"{_PLACES[rng.integers(len(_PLACES))]} {_TIMES[rng.integers(len(_TIMES))]}."
    return s[0].upper() + s[1:]


def _value(rng: np.random.Generator, kind: str, digits: int, avoid: str | None = None) -> str:
    while True:
        if kind == "words":
            value = CODE_WORDS[int(rng.integers(len(CODE_WORDS)))]
        else:
            value = "".join(str(d) for d in rng.integers(0, 10, size=digits))
        if value != avoid:
            return value


def make_retrieval_doc(
    seed: int,
    index: int,
    *,
    n_facts: int = 6,
    n_queries: int = 4,
    filler_sentences: tuple[int, int] = (20, 30),
    values: str = "digits",
    digits: int = 4,
) -> RetrievalDoc:
    """Document `index` of the stream `seed`: facts, filler, then `n_queries` late queries.

    `values`: `digits` (a `digits`-digit code, "7341") or `words` (a code word, "falcon").
    """
    if values not in VALUE_KINDS:
        raise ValueError(f"values={values!r}: choose one of {', '.join(VALUE_KINDS)}")
    if not 1 <= n_queries <= n_facts <= len(COLORS) * len(THINGS):
        raise ValueError(
            f"need 1 <= n_queries ({n_queries}) <= n_facts ({n_facts}) <= {len(COLORS) * len(THINGS)}"
        )
    lo, hi = filler_sentences
    if not 0 <= lo <= hi:
        raise ValueError(f"filler_sentences must be (min, max) with 0 <= min <= max, got {lo, hi}")
    rng = np.random.default_rng([seed, index])
    keys = rng.choice(len(COLORS) * len(THINGS), size=n_facts, replace=False)
    facts = {
        f"{COLORS[k // len(THINGS)]} {THINGS[k % len(THINGS)]}": _value(rng, values, digits)
        for k in keys
    }
    names = list(facts)
    parts = [" ".join(FACT.format(key=k, value=facts[k]) for k in names)]
    n_filler = int(rng.integers(lo, hi + 1))
    parts.append(" ".join(_filler_sentence(rng) for _ in range(n_filler)))
    text = "\n\n".join(parts) + "\n\n" + QUERY_HEADER
    spans = []
    for q in rng.permutation(len(names))[:n_queries]:
        key = names[int(q)]
        prefix = " " + FACT.format(key=key, value="")[:-2]  # " The code of the blue door is"
        start = len(text) + len(prefix)
        text += prefix + " " + facts[key] + "."
        spans.append((start + 1, start + 1 + len(facts[key])))  # the answer's digits
    digest = hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:16]
    return RetrievalDoc(id=f"retrieval-{digest}", text=text, facts=facts, answer_spans=spans)


def make_retrieval_docs(n_docs: int, seed: int, **kwargs: Any) -> list[RetrievalDoc]:
    """`n_docs` documents of the stream `seed` (see `make_retrieval_doc` for the options)."""
    if n_docs < 1:
        raise ValueError(f"n_docs must be >= 1, got {n_docs}")
    return [make_retrieval_doc(seed, i, **kwargs) for i in range(n_docs)]


def without_facts(doc: RetrievalDoc, seed: int = 0) -> RetrievalDoc:
    """The control: the same document with the stated facts' values re-drawn, queries unchanged.

    The context then holds no answer, so a model can only use the answer format and its priors.
    """
    rng = np.random.default_rng([seed, int(doc.id.rsplit("-", 1)[-1], 16) % (2**32)])
    head, sep, tail = doc.text.partition("\n\n")
    shift = 0
    for key, value in doc.facts.items():
        kind = "digits" if value.isdigit() else "words"
        other = _value(rng, kind, len(value), avoid=value)
        head = head.replace(FACT.format(key=key, value=value), FACT.format(key=key, value=other))
        shift += len(other) - len(value)
    spans = [(a + shift, b + shift) for a, b in doc.answer_spans]  # code words differ in length
    return RetrievalDoc(doc.id, head + sep + tail, {}, spans)


def write_retrieval_parquet(docs: list[RetrievalDoc], path: str | Path) -> Path:
    """Write documents as a docs Parquet that mixture specs read (atomically).

    Columns: `id`, `url`, `title`, `text`, `lang` ('en'), `lang_score`, `quality_score` (1.0),
    `training_allowed` (true: generated here, no third-party rights), `source`, `facts` (JSON),
    `answer_spans` (JSON list of [start, end) character spans of the late answers).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "id": [d.id for d in docs],
            "url": [f"synthetic://retrieval/{d.id}" for d in docs],
            "title": [f"Retrieval drill {d.id}" for d in docs],
            "text": [d.text for d in docs],
            "lang": ["en"] * len(docs),
            "lang_score": [1.0] * len(docs),
            "quality_score": [1.0] * len(docs),
            "training_allowed": [True] * len(docs),
            "source": [SOURCE] * len(docs),
            "facts": [json.dumps(d.facts) for d in docs],
            "answer_spans": [json.dumps(d.answer_spans) for d in docs],
        }
    )
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
    return path


def read_retrieval_parquet(path: str | Path) -> list[RetrievalDoc]:
    """Read documents written by `write_retrieval_parquet`."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["id", "text", "facts", "answer_spans"]).to_pylist()
    return [
        RetrievalDoc(
            r["id"],
            r["text"],
            json.loads(r["facts"]),
            [tuple(s) for s in json.loads(r["answer_spans"])],
        )
        for r in table
    ]


def answer_token_positions(tokenizer, doc: RetrievalDoc) -> tuple[list[int], list[int]]:
    """The document's token ids and the indices of the tokens that spell its late answers.

    An answer's tokens are those overlapping its digits; the first may carry the space before
    them (" 7341" is one pre-token). A token reaching further (a tokenizer that merges "is 73")
    is refused with a clear error.
    """
    enc = tokenizer.encode(doc.text, add_special_tokens=False)
    positions = []
    for start, end in doc.answer_spans:
        inside = [i for i, (a, b) in enumerate(enc.offsets) if a < end and b > start]
        if not inside or enc.offsets[inside[0]][0] < start - 1 or enc.offsets[inside[-1]][1] > end:
            raise ValueError(
                f"{doc.id}: answer span {start}:{end} ({doc.text[start:end]!r}) does not fall on token "
                "boundaries; use a byte-level BPE tokenizer with whitespace/digit pre-tokenization"
            )
        positions.extend(inside)
    return list(enc.ids), positions


def late_query_loss(
    model, tokenizer, docs: list[RetrievalDoc], *, attention_backend: str = "auto"
) -> dict[str, Any]:
    """Mean cross-entropy (nats/token) of the late answers' tokens, each document alone in context.

    Returns `loss`, `answer_tokens`, `documents` and `mean_distance` (tokens from a doc's first
    token to its answers: how far back the facts are). Runs in eval mode without gradients; a
    document longer than the model's `max_seq_len` is an error (evaluate at the stage's length).
    """
    import torch
    import torch.nn.functional as F

    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, count, distances = 0.0, 0, []
    try:
        with torch.no_grad():
            for doc in docs:
                ids, positions = answer_token_positions(tokenizer, doc)
                if len(ids) > model.config.max_seq_len:
                    raise ValueError(
                        f"{doc.id}: {len(ids)} tokens exceed the model's max_seq_len "
                        f"{model.config.max_seq_len}; generate shorter documents or raise max_seq_len"
                    )
                x = torch.tensor([ids], dtype=torch.long, device=device)
                logits, _, _ = model(x, attention_backend=attention_backend)
                # The token at position p is predicted by the logits at p - 1.
                pred = torch.tensor([p - 1 for p in positions], device=device)
                target = torch.tensor([ids[p] for p in positions], device=device)
                nll = F.cross_entropy(logits[0, pred].float(), target, reduction="sum")
                total += float(nll)
                count += len(positions)
                distances.extend(positions)
    finally:
        model.train(was_training)
    return {
        "loss": total / count if count else math.nan,
        "answer_tokens": count,
        "documents": len(docs),
        "mean_distance": float(np.mean(distances)) if distances else math.nan,
    }


def check_eval_tokenizer(saved: dict[str, Any], path: Path, tokenizer: str | Path) -> None:
    """ValueError when a checkpoint records the sha256 of the tokenizer it was trained with and
    `tokenizer` is another file (a checkpoint from before the field cannot be compared)."""
    from training.checkpoint import file_sha256

    theirs = saved.get("tokenizer_sha256")
    if not theirs:
        return
    ours = file_sha256(tokenizer)
    if ours != theirs:
        raise ValueError(
            f"tokenizer mismatch: checkpoint {path} was trained with tokenizer "
            f"{saved.get('tokenizer', '?')} (sha256 {theirs[:12]}) but the evaluation reads "
            f"{tokenizer} (sha256 {ours[:12]}); pass the tokenizer.json of the run's mixture"
        )


def load_model_for_eval(
    checkpoint: str | Path,
    max_seq_len: int | None = None,
    device="cpu",
    tokenizer: str | Path | None = None,
):
    """A Transformer with a checkpoint's weights (a run dir: its latest), `max_seq_len` raised;
    with `tokenizer`, refused when the checkpoint was trained with another one."""
    import dataclasses

    from training.checkpoint import load_checkpoint, resolve_checkpoint
    from training.model import ModelConfig, Transformer

    path = resolve_checkpoint(checkpoint)
    saved = load_checkpoint(path)
    if tokenizer is not None:
        check_eval_tokenizer(saved, path, tokenizer)
    cfg = ModelConfig(**saved["model_config"])
    if max_seq_len is not None and max_seq_len > cfg.max_seq_len:
        cfg = dataclasses.replace(cfg, max_seq_len=max_seq_len)
    model = Transformer(cfg)
    model.load_state_dict(saved["model"])
    return model.to(device), path


def compare_checkpoints(
    checkpoints: dict[str, str | Path],
    tokenizer_path: str | Path,
    docs: list[RetrievalDoc],
    *,
    control_seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Late-query loss of each named checkpoint on `docs`, and on their no-facts control."""
    from training.tokenizer import load_tokenizer

    tok = load_tokenizer(tokenizer_path)
    control = [without_facts(d, control_seed) for d in docs]
    # the control's re-drawn values may take more tokens than the document's own
    longest = max(len(tok.encode(d.text, add_special_tokens=False).ids) for d in docs + control)
    out = {}
    for name, ckpt in checkpoints.items():
        model, path = load_model_for_eval(ckpt, max_seq_len=longest, tokenizer=tokenizer_path)
        with_facts = late_query_loss(model, tok, docs)
        no_facts = late_query_loss(model, tok, control)
        out[name] = {
            "checkpoint": str(path),
            "loss": with_facts["loss"],
            "loss_without_facts": no_facts["loss"],
            "retrieval_gain": no_facts["loss"] - with_facts["loss"],
            "answer_tokens": with_facts["answer_tokens"],
            "documents": with_facts["documents"],
            "mean_distance": with_facts["mean_distance"],
        }
    return out
