"""Grouped folds and out-of-fold (OOF) scores.

Texts that share a long line (a passage and its source document, syndicated copies) or a group
key form one group, and a group never straddles folds or the held-out split.
`out_of_fold_scores` trains one model per fold (`filters.quality.fit`) and scores every
training example and calibration document with the model that did not see its group.
"""

from __future__ import annotations

import random
from pathlib import Path

from filters.quality.dataset import TrainingSet
from filters.quality.fit import _fit, _load_raw
from filters.quality.scorer import score_mixed

# Fewest examples of each class a model (the final one or any fold's) is trained on.
MIN_PER_CLASS = 3
# Out-of-fold calibration folds (grouped, deterministic for the seed).
OOF_FOLDS = 4
# Lines at least this long (whitespace-normalised) that two texts share put them in one group
# (a passage and its source document, syndicated copies), so no copy straddles the folds.
GROUP_LINE_CHARS = 30


def _norm_lines(text: str) -> set[str]:
    return {
        " ".join(line.split())
        for line in text.splitlines()
        if len(" ".join(line.split())) >= GROUP_LINE_CHARS
    }


def _oof_groups(ts: TrainingSet, k: int) -> tuple[list[int], list[int]]:
    """Group ids for the labelled texts and for the calibration documents.

    With `ts.groups` the labelled texts use it. Otherwise (and always for linking calibration
    documents) texts that share a long line are joined (union-find): a passage with the crawl
    document it was cut from, copies of one page with each other. Positives linked to nothing
    (passages of reference documents, which never enter the calibration crawl) are grouped in
    k contiguous blocks of the label source's order, which keeps the consecutive passages of
    one reference document together apart from the block edges.
    """
    n, m = len(ts.texts), len(ts.calibration)
    parent = list(range(n + m))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    owner: dict[str, int] = {}
    all_texts = list(ts.texts) + list(ts.calibration)
    linked = [False] * (n + m)
    for i, text in enumerate(all_texts):
        for line in _norm_lines(text):
            j = owner.setdefault(line, i)
            if j != i:
                union(i, j)
                linked[i] = linked[j] = True
    if ts.groups is not None:
        first: dict[str, int] = {}
        for i, g in enumerate(ts.groups):
            union(i, first.setdefault(str(g), i))
    else:
        lonely = [i for i in range(n) if ts.labels[i] and not linked[i]]
        for b in range(k):
            block = lonely[b * len(lonely) // k : (b + 1) * len(lonely) // k]
            for i in block[1:]:
                union(i, block[0])
    roots = [find(i) for i in range(n + m)]
    return roots[:n], roots[n:]


def _assign_folds(groups: list[int], labels: list[int], k: int, seed: int) -> dict[int, int]:
    """Groups -> folds, balancing each class's count (largest groups first, seeded tie order)."""
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    order = sorted(members)
    random.Random(seed).shuffle(order)
    order.sort(key=lambda g: -len(members[g]))  # stable: the shuffle breaks ties
    load = [[0, 0] for _ in range(k)]
    fold = {}
    for g in order:
        npos = sum(labels[i] for i in members[g])
        nneg = len(members[g]) - npos
        cls = 1 if npos >= nneg else 0
        f = min(range(k), key=lambda j: (load[j][cls], load[j][1 - cls], j))
        fold[g] = f
        load[f][0] += nneg
        load[f][1] += npos
    return fold


def _grouped_split(
    ts: TrainingSet, test_frac: float, seed: int, k: int
) -> tuple[list[int], list[int]]:
    """Train and held-out example indices: whole groups (as `_oof_groups` forms them) go to
    one side, about `test_frac` of each class held out, seeded."""
    groups, _ = _oof_groups(ts, k)
    parts = max(2, round(1 / test_frac))
    fold = _assign_folds(groups, ts.labels, parts, seed + 7)
    test = [i for i, g in enumerate(groups) if fold[g] == 0]
    train = [i for i, g in enumerate(groups) if fold[g] != 0]
    return train, test


def language_folds(ts: TrainingSet, k: int) -> tuple[list[int], list[int]]:
    """Leave-one-language-out folds: the fold of every labelled text and calibration document
    is its language's (with more languages than `k`, whole languages are spread over k folds,
    balanced by class counts). A fold's model has never seen the languages it scores, as the
    multilingual fallback has never seen the languages it is used for."""
    langs = [ts.lang_of(i) for i in range(len(ts.texts))]
    order = sorted(set(langs))
    fold_of = _assign_folds([order.index(x) for x in langs], ts.labels, k, 0)
    cfold = []
    for j in range(len(ts.calibration)):
        lang = ts.calibration_lang(j)
        cfold.append(fold_of[order.index(lang)] if lang in order else j % k)
    return [fold_of[order.index(x)] for x in langs], cfold


def out_of_fold_scores(
    ts: TrainingSet, seed: int, k: int, tmp: Path, by_language: bool = False
) -> tuple[list[float], list[float], dict, list[float]] | None:
    # The fold models stay in `tmp` as oof<f>.bin (train_model keeps them as the ensemble).
    """OOF scores of the labelled texts, of the calibration documents, fold info, and the OOF
    scores of the positive units (documents when `ts.groups` is given, else examples).

    `by_language`: the folds are languages (`language_folds`), so every score is that of a
    model that never saw the text's language. None when the folds cannot each leave
    >= MIN_PER_CLASS of both classes to train on.
    """
    groups, calib_groups = _oof_groups(ts, k)
    if by_language:
        tfold, cfold = language_folds(ts, k)
    else:
        fold_of = _assign_folds(groups, ts.labels, k, seed)
        # Calibration documents outside every labelled group: spread by position (any fold's
        # model is out of sample for them).
        cfold = [fold_of.get(g, j % k) for j, g in enumerate(calib_groups)]
        tfold = [fold_of[g] for g in groups]
    for f in range(k):
        tr = [ts.labels[i] for i in range(len(ts.texts)) if tfold[i] != f]
        if sum(tr) < MIN_PER_CLASS or len(tr) - sum(tr) < MIN_PER_CLASS:
            return None
    oof = [float("nan")] * len(ts.texts)
    coof = [float("nan")] * len(ts.calibration)
    # Positive units: with group keys, one unit per positive group (a reference document cut
    # into passages), scored whole, as annotation scores whole documents (fastText averages
    # over the whole input, so a document and its passages score differently); without keys
    # every positive example is its own unit.
    units: dict[str, list[int]] = {}
    for i, y in enumerate(ts.labels):
        if y:
            units.setdefault(str(ts.groups[i]) if ts.groups is not None else f"#{i}", []).append(i)
    unit_scores: dict[str, float] = {}
    for f in range(k):
        path = tmp / f"oof{f}.bin"
        _fit(ts, [i for i in range(len(ts.texts)) if tfold[i] != f], seed, tmp, path)
        qm = _load_raw(path, ts.lang, ts.shape_features)
        ti = [i for i in range(len(ts.texts)) if tfold[i] == f]
        ci = [j for j in range(len(ts.calibration)) if cfold[j] == f]
        ti_scores = score_mixed(qm, [ts.texts[i] for i in ti], [ts.lang_of(i) for i in ti])
        for i, s in zip(ti, ti_scores, strict=True):
            oof[i] = s
        ci_langs = [ts.calibration_lang(j) for j in ci]
        ci_scores = score_mixed(qm, [ts.calibration[j] for j in ci], ci_langs)
        for j, s in zip(ci, ci_scores, strict=True):
            coof[j] = s
        held = [u for u, idx in units.items() if tfold[idx[0]] == f]
        joined = ["\n".join(ts.texts[i] for i in units[u]) for u in held]
        held_langs = [ts.lang_of(units[u][0]) for u in held]
        unit_scores.update(zip(held, score_mixed(qm, joined, held_langs), strict=True))
    info = {
        "folds": k,
        "n_groups": len(set(groups)),
        "grouped_by": "key" if ts.groups else "inferred",
        "positive_units": "groups" if ts.groups is not None else "examples",
    }
    if by_language:
        info["folds_by"] = "language"
        info["fold_languages"] = [
            sorted({ts.lang_of(i) for i in range(len(ts.texts)) if tfold[i] == f}) for f in range(k)
        ]
    return oof, coof, info, [unit_scores[u] for u in sorted(unit_scores)]
