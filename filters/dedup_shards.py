"""De-duplication as a chain of sharded steps: pure functions, no executor in sight.

Every step takes one shard's messages and returns new messages, each addressed to a shard:
`step(shard, payloads) -> [(shard, payload), ...]`, where a payload is `(tag, list)`. An
executor groups the messages of one step by shard and calls the next step once per shard: the
in-process executor (`run_in_memory`) with a dict, the Beam pipeline with one GroupByKey per
step. Nodes live in the shard of their id, key groups in the shard of their key, clusters in
the shard of their representative, so a shuffle moves at most shards x shards batches, never one
element per document or per LSH band.

The steps (`dedup_steps`):

1. `url_groups`, `content_keys`: each URL group (same canonical URL) keeps its best member
   (`filters.dedup.best_of` their standings); the others lose it, get a `url` edge to that best
   and join no content group.
   Only then do the survivors send their exact and LSH keys to the keys' shards.
2. `buckets`: content key groups (exact hash, LSH band) link each member to the group's
   smallest id (linear). Exact links are edges; LSH links are candidate pairs.
3. `attach_signature`, `verify`: a candidate pair (a, b) collects a's MinHash signature in a's
   shard, then b's in b's shard, and becomes an edge if the estimated Jaccard passes.
4. `build_state`, `propagate` x rounds, `check`: connected components by min-label propagation.
   A node's label is its id, so a finished component's label is its smallest id, which names
   the component's shard. Edges whose ends still disagree after the rounds (components wider
   than `rounds` hops) go to one task (`merge_leftover`); only those go there, and their number
   is reported.
5. `relabel`, `components`: members grouped by final label, each with its standing; the
   representative is `filters.dedup.representative` of the component (a cluster-wide choice:
   near-equal scores are tied and broken by the members' URLs, sizes and shared host), then one
   row per clustered document (`filters.dedup.cluster_rows`), and the duplicates addressed to
   their input chunk.

The result equals `filters.dedup.cluster` on the same candidates, for any number of shards and
rounds.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import partial

import numpy as np

from filters import dedup
from filters.config import DedupConfig

NEAR = "near"
URL = "url"
ROUNDS = 4  # label-propagation rounds before leftover edges are merged in one task
LEFTOVER = -1  # the shard of the one task that merges leftover edges

Label = dedup.Label
Message = tuple[int, tuple[str, list]]
Step = Callable[[int, Iterable[tuple[str, list]]], list]


def shard_of(key: str, shards: int) -> int:
    """The shard of a document id, key group or label (stable across processes)."""
    return zlib.crc32(key.encode()) % shards


def canonical_label(x) -> Label:
    """Labels (document ids) in one canonical form, whatever crossed the wire."""
    return str(x)


def canonical_standing(x) -> dedup.Standing:
    """Standings cross the wire as tuples or lists; one canonical form (and no -0.0)."""
    return (float(x[0]) + 0.0, int(x[1]), int(x[2]), str(x[3]))


def doc_features(row: dict, cfg: DedupConfig, chunk: int = 0) -> tuple:
    """(id, chunk, standing, text hash, canonical URL, key groups, signature bytes or None)."""
    doc_id = row["id"]
    u = dedup.canonical_url(row.get("url") or "")
    h, s, size = dedup.text_keys(row["text"], row.get("lang") or "", cfg)
    standing = dedup.standing(row["quality_score"], u, size)
    groups, sig = [], None
    if cfg.exact:
        groups.append(("exact", h))
    if cfg.url and u:
        groups.append((URL, u))
    if cfg.near:
        sig = s.tobytes()
        groups += [(NEAR, f"{band}:{bh}") for band, bh in dedup.band_keys(s, cfg)]
    return doc_id, chunk, standing, h, u, groups, sig


def chunk_features(rows: Iterable[dict], cfg: DedupConfig, chunk: int) -> list[tuple]:
    """Features of a chunk's dedup candidates: rows no other filter dropped."""
    return [doc_features(r, cfg, chunk) for r in rows if r["drop_reason"] is None]


def _out(messages: dict[int, dict[str, list]]) -> list[Message]:
    return [(s, (tag, data)) for s in sorted(messages) for tag, data in messages[s].items() if data]


def _box() -> defaultdict:
    return defaultdict(lambda: defaultdict(list))


def _parts(payloads: Iterable[tuple[str, list]]) -> dict[str, list]:
    got: dict[str, list] = defaultdict(list)
    for tag, data in payloads:
        got[tag].extend(data)
    return got


def route(batch: tuple[int, Sequence[tuple]], shards: int) -> list[Message]:
    """A chunk's features -> nodes (with their content keys) to the shards of their ids, URL
    memberships to their keys' shards."""
    _, feats = batch
    box = _box()
    for doc_id, chunk, standing, h, _, groups, sig in feats:
        content = [(kind, key) for kind, key in groups if kind != URL]
        node = (doc_id, chunk, doc_id, h, sig, content, standing)
        box[shard_of(doc_id, shards)]["node"].append(node)
        for kind, key in groups:
            if kind == URL:
                box[shard_of(f"{URL}\0{key}", shards)]["url"].append((key, doc_id, standing))
    return _out(box)


def url_groups(shard: int, payloads, shards: int) -> list[Message]:
    """URL groups -> each member but the best (`filters.dedup.best_of` their standings) loses
    it: a `url` edge to the best, and a notice to its own shard."""
    got = _parts(payloads)
    groups: dict[str, dict] = defaultdict(dict)
    for u, doc_id, standing in got["url"]:
        groups[u][doc_id] = canonical_standing(standing)
    box = _box()
    box[shard]["node"] = got["node"]
    for u in sorted(groups):
        best = dedup.best_of(groups[u])
        for m in sorted(groups[u]):
            if m == best:
                continue
            box[shard_of(m, shards)]["url_lost"].append(m)
            box[shard_of(m, shards)]["nbr"].append((m, best))
            box[shard_of(best, shards)]["nbr"].append((best, m))
    return _out(box)


def content_keys(shard: int, payloads, shards: int) -> list[Message]:
    """URL-group survivors send their exact and LSH keys to the keys' shards; a loser keeps
    only its `url` edge (and no signature)."""
    got = _parts(payloads)
    lost = set(got["url_lost"])
    box = _box()
    box[shard]["nbr"] = got["nbr"]
    for doc_id, chunk, label, h, sig, content, standing in got["node"]:
        url_lost = doc_id in lost
        node = (doc_id, chunk, label, h, url_lost, standing, None if url_lost else sig)
        box[shard]["node"].append(node)
        if not url_lost:
            for kind, key in content:
                box[shard_of(f"{kind}\0{key}", shards)]["member"].append((kind, key, doc_id))
    return _out(box)


def buckets(shard: int, payloads, shards: int) -> list[Message]:
    """Content key groups -> star links: exact ones are edges, LSH ones candidate pairs."""
    got = _parts(payloads)
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for kind, key, doc_id in got["member"]:
        groups[(kind, key)].append(doc_id)
    box = _box()
    box[shard]["node"] = got["node"]
    box[shard]["nbr"] = got["nbr"]
    for (kind, _), ids in groups.items():
        for a, b in dedup.star_pairs(ids):
            if kind == NEAR:
                box[shard_of(a, shards)]["pair"].append((a, b))
            else:
                box[shard_of(a, shards)]["nbr"].append((a, b))
                box[shard_of(b, shards)]["nbr"].append((b, a))
    return _out(box)


def attach_signature(shard: int, payloads, shards: int) -> list[Message]:
    """Distinct candidate pairs (a, b) of this shard's ids pick up a's signature."""
    got = _parts(payloads)
    sigs = {n[0]: n[6] for n in got["node"]}
    box = _box()
    box[shard]["node"] = got["node"]
    box[shard]["nbr"] = got["nbr"]
    for a, b in sorted({tuple(p) for p in got["pair"]}):
        box[shard_of(b, shards)]["check"].append((a, b, sigs[a]))
    return _out(box)


def verify(shard: int, payloads, shards: int, threshold: float) -> list[Message]:
    """Candidate pairs whose estimated Jaccard passes become edges; signatures are dropped."""
    got = _parts(payloads)
    sigs = {n[0]: n[6] for n in got["node"]}
    box = _box()
    box[shard]["node"] = [n[:6] for n in got["node"]]
    box[shard]["nbr"] = got["nbr"]
    for a, b, sig_a in got["check"]:
        x = np.frombuffer(sig_a, dtype=np.uint32)
        y = np.frombuffer(sigs[b], dtype=np.uint32)
        if dedup.estimated_jaccard(x, y) >= threshold:
            box[shard_of(a, shards)]["nbr"].append((a, b))
            box[shard]["nbr"].append((b, a))
    return _out(box)


def _send(shard: int, states: dict, shards: int) -> list[Message]:
    # A node keeps its state and sends its label to its neighbours.
    box = _box()
    box[shard]["state"] = sorted(states.items())
    for label, nbrs, *_ in states.values():
        for u in nbrs:
            box[shard_of(u, shards)]["label"].append((u, label))
    return _out(box)


def _receive(got: dict[str, list]) -> tuple[dict, dict[str, set]]:
    states = {v: (canonical_label(s[0]), *s[1:]) for v, s in got["state"]}
    received: dict[str, set] = defaultdict(set)
    for v, label in got["label"]:
        received[v].add(canonical_label(label))
    return states, received


def build_state(shard: int, payloads, shards: int) -> list[Message]:
    """Nodes with at least one edge: (label, sorted neighbours, hash, URL group lost, chunk,
    standing); first send."""
    got = _parts(payloads)
    nbrs: dict[str, set] = defaultdict(set)
    for v, u in got["nbr"]:
        nbrs[v].add(u)
    states = {}
    for doc_id, chunk, label, h, url_lost, standing in got["node"]:
        if nbrs.get(doc_id):
            state = (canonical_label(label), sorted(nbrs[doc_id]), h, url_lost, chunk, standing)
            states[doc_id] = state
    return _send(shard, states, shards)


def propagate(shard: int, payloads, shards: int) -> list[Message]:
    """One round: a node keeps the smallest label it has seen and sends it on."""
    states, received = _receive(_parts(payloads))
    for v, (label, *rest) in states.items():
        states[v] = (min({label} | received.get(v, set())), *rest)
    return _send(shard, states, shards)


def check(shard: int, payloads, shards: int) -> list[Message]:
    """After the last round: members to their label's shard; edges not yet converged to one task."""
    states, received = _receive(_parts(payloads))
    box = _box()
    for v, (own, _, h, url_lost, chunk, standing) in states.items():
        box[shard_of(own, shards)]["member"].append((own, v, h, url_lost, chunk, standing))
        for other in sorted(received.get(v, set()) - {own}):
            box[LEFTOVER]["leftover"].append((own, other))
    return _out(box)


def merge_leftover(shard: int, payloads, shards: int) -> list[Message]:
    """The one task: leftover label pairs -> label mapping to the mapped labels' shards.

    Other shards pass their members on. The number of leftover edges goes to shard 0.
    """
    got = _parts(payloads)
    box = _box()
    if shard != LEFTOVER:
        box[shard]["member"] = got["member"]
        return _out(box)
    pairs = [(canonical_label(a), canonical_label(b)) for a, b in got["leftover"]]
    for old, new in dedup.merge_label_pairs(pairs).items():
        box[shard_of(old, shards)]["map"].append((old, new))
    box[0]["leftover"] = [len(pairs)]
    return _out(box)


def relabel(shard: int, payloads, shards: int) -> list[Message]:
    """Members take their label's merged label and move to its shard."""
    got = _parts(payloads)
    mapping = {canonical_label(a): canonical_label(b) for a, b in got["map"]}
    box = _box()
    box[shard]["leftover"] = got["leftover"]
    for label, v, h, url_lost, chunk, standing in got["member"]:
        label = canonical_label(label)
        new = mapping.get(label, label)
        box[shard_of(new, shards)]["member"].append((new, v, h, url_lost, chunk, standing))
    return _out(box)


def components(shard: int, payloads) -> list[tuple[str, int, list]]:
    """Cluster rows of this shard's components, duplicates by input chunk, leftover count.

    Returns ("clusters", shard, rows sorted by (cluster_id, id)), ("dups", chunk,
    [(id, duplicate_of, match)]) per chunk and ("leftover", 0, [n]) from shard 0.
    """
    got = _parts(payloads)
    by_label: dict[str, list] = defaultdict(list)
    chunk_of = {}
    for label, v, h, url_lost, chunk, standing in got["member"]:
        by_label[canonical_label(label)].append((v, h, bool(url_lost), standing))
        chunk_of[v] = chunk
    rows = []
    for members in by_label.values():
        rep = dedup.representative((v, canonical_standing(s), lost) for v, _, lost, s in members)
        rows += dedup.cluster_rows(rep, [(v, h, lost) for v, h, lost, _ in members])
    rows.sort(key=lambda r: (r["cluster_id"], r["id"]))
    dups: dict[int, list] = defaultdict(list)
    for r in rows:
        if r["duplicate_of"] is not None:
            dups[chunk_of[r["id"]]].append((r["id"], r["duplicate_of"], r["match"]))
    out: list[tuple[str, int, list]] = [("clusters", shard, rows)] if rows else []
    out += [("dups", c, dups[c]) for c in sorted(dups)]
    if got["leftover"]:
        out.append(("leftover", 0, [sum(got["leftover"])]))
    return out


def dedup_steps(cfg: DedupConfig, shards: int, rounds: int = ROUNDS) -> list[Step]:
    """The shard steps between `route` and `components`, in order."""
    return [
        partial(url_groups, shards=shards),
        partial(content_keys, shards=shards),
        partial(buckets, shards=shards),
        partial(attach_signature, shards=shards),
        partial(verify, shards=shards, threshold=cfg.jaccard_threshold),
        partial(build_state, shards=shards),
        *[partial(propagate, shards=shards) for _ in range(rounds)],
        partial(check, shards=shards),
        partial(merge_leftover, shards=shards),
        partial(relabel, shards=shards),
    ]


def group_messages(messages: Iterable[Message]) -> list[tuple[int, list]]:
    """The in-process shuffle: messages grouped by shard, in shard order."""
    grouped: dict[int, list] = defaultdict(list)
    for shard, payload in messages:
        grouped[shard].append(payload)
    return sorted(grouped.items())


def run_in_memory(
    batches: Iterable[tuple[int, Sequence[tuple]]],
    cfg: DedupConfig,
    shards: int,
    rounds: int = ROUNDS,
) -> list[tuple[str, int, list]]:
    """Every step in this process: chunk feature batches -> `components` outputs of all shards."""
    messages = [m for b in batches for m in route(b, shards)]
    for step in dedup_steps(cfg, shards, rounds):
        messages = [m for shard, got in group_messages(messages) for m in step(shard, got)]
    return [o for shard, got in group_messages(messages) for o in components(shard, got)]
