"""De-duplication building blocks: exact (normalised-text hash), URL (canonical URL) and
near-duplicate (datasketch MinHash + LSH banding) keys, linear candidate edges, and connected
components with a deterministic representative (`best_of`: the highest quality_score, scores
within `QUALITY_TIE` of it tied and broken by a URL without a query, then the shorter text, then
the host most members share, then id).

URL groups are resolved first: of the documents sharing a canonical URL (fetches of one page),
the `best_of` them stays and the others are its URL duplicates. Content (exact and near
edges) is then compared among the survivors only, so a shared URL never joins two texts that
share nothing: a text leaves only with its own copy, or with a fetch of its own page.

Every step is linear in its input: a key group links each member to one member (a star, not
all pairs: an exact or LSH group's smallest id, a URL group's best), and components are found
by min-label propagation, where a node's label is the smallest id it has seen, so a
component's final label is its smallest id; its representative is then `best_of` its members,
which needs them all (the tie rule and the shared host are the component's, not a node's).
`filters.dedup_shards` chains these into sharded steps that the filter's executors run (in
process, or one GroupByKey per step on Beam); `cluster` below is the plain in-memory reference
for tests and small inputs, with identical output.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from urllib.parse import quote_plus, unquote_plus, urlsplit, urlunsplit

import numpy as np
from datasketch import MinHash

from common.words import WORD_CLASS
from filters.config import DedupConfig
from filters.heuristics import is_char_lang
from filters.linededup import INVISIBLE

_WS = re.compile(r"\s+")
# Neither space nor a word character; a combining mark is part of its word (common.words).
_PUNCT = re.compile(f"[^\\s{WORD_CLASS}]")

# Query parameters that track a visit, a click, a mail or a session rather than select content,
# by the list each comes from; a key matches case-insensitively after percent-decoding.
TRACKING_PARAMS: dict[str, tuple[str, ...]] = {
    # Brave's query filter, kSimpleQueryStringTrackers in brave-core
    # components/query_filter/utils.cc (`mkt_tok` is its conditional tracker, stripped there
    # unless the URL is an unsubscribe link). Not `__s` (Drip's, but it selects content on
    # other sites: AdGuard strips it only when its value looks like an id).
    "brave": tuple(
        """
        __hsfp __hssc __hstc _bhlid _branch_match_id _branch_referrer _gl _hsenc _kx
        _openstat at_recipient_id at_recipient_list bbeml bsft_clkid bsft_uid dclid et_rid
        fb_action_ids fb_comment_id fbclid gbraid gclid guce_referrer guce_referrer_sig
        hsctatracking irclickid mc_eid mkt_tok ml_subscriber ml_subscriber_hash msclkid
        mtm_cid oft_c oft_ck oft_d oft_id oft_ids oft_k oft_lk oft_sk oly_anon_id
        oly_enc_id pk_cid rb_clickid s_cid srsltid ss_email_id twclid unicorn_click_id
        vero_conv vero_id vgo_ee wbraid wickedid yclid ymclid ysclid
        """.split()
    ),
    # ClearURLs' globalRules (ClearURLs/Rules data.min.json), the literal names; its patterns
    # are in TRACKING_PREFIXES. Not its `ref_?` and `referrer` (referral marketing, and `ref`
    # selects a GitLab or GitHub branch) nor `[a-z]?mc` (any `mc`, `amc`, `xmc`: too wide).
    "clearurls": tuple(
        """
        __hsfp __hssc __hstc __twitter_impression _ga _gl _hsenc _openstat
        action_object_map action_ref_map action_type_map ceneo_spo cmpid dclid echobox
        fb_action_ids fb_action_types fb_ref fb_source fbclid gclid gs_l hmb_campaign
        hmb_medium hmb_source hsctatracking itm_campaign itm_medium itm_source mc_cid
        mc_eid mc_tc mkt_tok ml_subscriber ml_subscriber_hash msclkid oly_anon_id
        oly_enc_id os_ehash rb_clickid s_cid spm tracking_source twclid vero_conv vero_id
        wickedid wt_mc wt_zmc wtmc wtrid wtzmc yclid
        """.split()
    ),
    # AdGuard's URL Tracking filter, general section (AdguardTeam/AdguardFilters
    # TrackParamFilter/sections/general_url.txt): its unambiguous names. Not its short generic
    # ones (`var`, `clickid`, `cuid`, `gci`, `maf`, `awc`, `erid`, `ymid`), which name content
    # on other sites.
    "adguard": tuple(
        """
        _ga _gl admitad_uid bsft_aaid bsft_eid bsft_ek bsft_mid gclsrc guccounter ir_adid
        ir_campaignid ir_partnerid itm_content itm_term mtm_campaign mtm_content mtm_group
        mtm_keyword mtm_medium mtm_placement mtm_source pk_campaign pk_medium pk_source
        pk_vid sscid tduid xtor
        """.split()
    ),
    # Named by a review of real pages and global rules in none of the list versions above:
    # TikTok and LinkedIn click ids, HubSpot and ConvertKit mail ids, campaign ids (`ncid`,
    # `icid`), Instagram's share id (Brave strips it on instagram.com only; it tags links to any
    # site), and session ids (`sessionid`, `phpsessid` were here before).
    "refinery": tuple(
        """
        ttclid li_fat_id _hsmi ck_subscriber_id ncid icid igshid sessionid phpsessid
        jsessionid
        """.split()
    ),
}
# ClearURLs' globalRules patterns `utm(?:_[a-z_]*)?`, `ga_[a-z_]+`, `otm_[a-z_]*` and AdGuard's
# `hsa_*` (HubSpot ads): a key that is `utm` or starts with one of these.
TRACKING_PREFIXES = ("utm_", "ga_", "otm_", "hsa_")
# Brave's kScopedQueryStringTrackers: trackers only on these sites (and their subdomains); `si`
# elsewhere may select content.
SCOPED_TRACKING_PARAMS: dict[str, tuple[str, ...]] = {
    "igsh": ("instagram.com",),
    "ref_src": ("twitter.com", "x.com"),
    "ref_url": ("twitter.com", "x.com"),
    "si": ("youtube.com", "youtu.be"),
}
_TRACKING = frozenset(k for names in TRACKING_PARAMS.values() for k in names) | {"utm"}
# Session ids carried as path parameters: `/cart.jsp;jsessionid=0A1B` is `/cart.jsp`.
_SESSION_PATH_PARAM = re.compile(r";(?:jsessionid|phpsessid)=[^/;]*", re.I)
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)  # RFC 3986 section 2.3


def normalise(text: str) -> str:
    """NFKC, invisible characters removed (`filters.linededup.INVISIBLE`: a soft hyphen or a
    zero-width space inside a word leaves one word), case folded, punctuation removed,
    whitespace collapsed: the exact-dup key's and the shingles' input."""
    text = unicodedata.normalize("NFKC", text)
    if not text.isascii():
        text = INVISIBLE.sub("", text)
    return _WS.sub(" ", _PUNCT.sub(" ", text.casefold())).strip()


def text_hash(text: str) -> str:
    """sha1 of the normalised text (exact duplicates share it)."""
    return hashlib.sha1(normalise(text).encode()).hexdigest()


def canonical_url(url: str) -> str:
    """Lower-case scheme/host, no default port, no fragment, tracking params dropped, sorted query.

    Tracking parameters are `TRACKING_PARAMS` (Brave's, ClearURLs' and AdGuard's lists, named
    there), keys starting with a `TRACKING_PREFIXES` entry, and `SCOPED_TRACKING_PARAMS` on their
    sites; `;jsessionid=` and `;phpsessid=` path parameters go too. Percent-escapes of unreserved
    characters are decoded (`/%7Euser` is `/~user`), other escapes upper-cased (`%2f` is `%2F`).
    Every other query parameter stays, with or without a value: `shop?product-a`,
    `shop?product-b`, `item?id=` and `item` are four pages, and `id`, `p`, `page`, `q`, `v`,
    `sid` and `ref` select content. A URL that does not parse ('http://[::1', a port out of
    range) is its own key, as written; an empty one is ''. One odd URL never ends the run."""
    if not url.strip():
        return ""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url.strip()
    scheme = (parts.scheme or "http").lower()
    host = (parts.hostname or "").lower().removeprefix("www.")
    netloc = host if port in (None, 80 if scheme == "http" else 443) else f"{host}:{port}"
    if scheme == "https":
        scheme = "http"  # the same page served over both schemes is one page
    path = _ESCAPE.sub(_unescape, _SESSION_PATH_PARAM.sub("", parts.path))
    path = re.sub(r"/{2,}", "/", path or "/")
    path = re.sub(r"/(index\.(html?|php))?$", "/", path) if path != "/" else path
    return urlunsplit((scheme, netloc, path, _canonical_query(parts.query, host), ""))


def _unescape(m: re.Match) -> str:
    """An unreserved character's escape decoded (RFC 3986 6.2.2.2), any other upper-cased."""
    char = chr(int(m.group(1), 16))
    return char if char in _UNRESERVED else "%" + m.group(1).upper()


def is_tracking_param(key: str, host: str = "") -> bool:
    """True for a query key that tracks (`TRACKING_PARAMS`, a `TRACKING_PREFIXES` key, or a
    `SCOPED_TRACKING_PARAMS` key on its sites), compared case-insensitively."""
    k = key.lower()
    if k in _TRACKING or k.startswith(TRACKING_PREFIXES):
        return True
    sites = SCOPED_TRACKING_PARAMS.get(k, ())
    return any(host == s or host.endswith("." + s) for s in sites)


def _canonical_query(query: str, host: str = "") -> str:
    """The query's parameters but the tracking ones, sorted, each as `quote_plus` spells it: a
    key without `=` stays without it, an empty value stays empty."""
    params = []
    for part in query.split("&"):
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = unquote_plus(key), unquote_plus(value)
        if not is_tracking_param(key, host):
            params.append((key, eq, value))
    return "&".join(quote_plus(k) + eq + quote_plus(v) for k, eq, v in sorted(params))


def shingles(text: str, lang: str, cfg: DedupConfig) -> set[bytes]:
    """Word n-grams for spaced languages, character n-grams for CJK-like ones."""
    return _shingles(normalise(text), lang, cfg)


def _shingles(norm: str, lang: str, cfg: DedupConfig) -> set[bytes]:
    if is_char_lang(lang):
        chars = norm.replace(" ", "")
        n = cfg.char_ngram
        grams = {chars[i : i + n] for i in range(max(1, len(chars) - n + 1))}
    else:
        words = norm.split()
        n = cfg.word_ngram
        grams = {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}
    return {g.encode() for g in grams if g}


_BLOCK = 4096  # shingles per update: a huge document never holds a shingles x num_perm matrix


@lru_cache(maxsize=8)
def _permutations(num_perm: int, seed: int):
    # Building permutations is the costly part of a MinHash; reuse them for every document.
    return MinHash(num_perm=num_perm, seed=seed).permutations


def _minhash(grams: set[bytes], num_perm: int, seed: int) -> np.ndarray:
    """datasketch's MinHash (affine32) of the shingles, fed in blocks of _BLOCK."""
    m = MinHash(
        num_perm=num_perm,
        seed=seed,
        permutations=_permutations(num_perm, seed),
        scheme="affine32",
    )
    grams = list(grams)
    for i in range(0, len(grams), _BLOCK):
        m.update_batch(grams[i : i + _BLOCK])
    return m.hashvalues.astype(np.uint32)


def signature(text: str, lang: str, cfg: DedupConfig) -> np.ndarray:
    """MinHash signature (uint32 array of num_perm values) of a document."""
    return _minhash(shingles(text, lang, cfg), cfg.num_perm, cfg.seed)


def hash_and_signature(text: str, lang: str, cfg: DedupConfig) -> tuple[str, np.ndarray]:
    """`text_hash` and `signature` of one text, normalising it once."""
    norm = normalise(text)
    sig = _minhash(_shingles(norm, lang, cfg), cfg.num_perm, cfg.seed)
    return hashlib.sha1(norm.encode()).hexdigest(), sig


def text_keys(text: str, lang: str, cfg: DedupConfig) -> tuple[str, np.ndarray | None, int]:
    """`text_hash`, `signature` (None unless `cfg.near`) and the normalised text's length in
    characters (the size `standing` compares), normalising once."""
    norm = normalise(text)
    sig = _minhash(_shingles(norm, lang, cfg), cfg.num_perm, cfg.seed) if cfg.near else None
    return hashlib.sha1(norm.encode()).hexdigest(), sig, len(norm)


def band_keys(sig: np.ndarray, cfg: DedupConfig) -> list[tuple[int, str]]:
    """LSH keys (band index, band hash): documents sharing any key are candidate pairs."""
    r = cfg.rows
    return [
        (b, hashlib.blake2b(sig[b * r : (b + 1) * r].tobytes(), digest_size=8).hexdigest())
        for b in range(cfg.bands)
    ]


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Share of equal MinHash values: the Jaccard estimate."""
    return float(np.mean(a == b))


def candidate_pairs(bucket: Sequence[str]) -> list[tuple[str, str]]:
    """All (smaller id, larger id) pairs among the ids of one bucket (quadratic: small groups only)."""
    ids = sorted(set(bucket))
    return [(ids[i], ids[j]) for i in range(len(ids)) for j in range(i + 1, len(ids))]


def star_pairs(bucket: Iterable[str]) -> list[tuple[str, str]]:
    """(smallest id, other id) for every other member of one key group: linear in its size.

    Members of an exact group are all equal, so the star loses nothing. In an LSH bucket
    each member is verified against the bucket's smallest id only; members that fail are left
    to the other bands they share with similar documents.
    """
    ids = sorted(set(bucket))
    return [(ids[0], x) for x in ids[1:]]


class UnionFind:
    """Disjoint sets over string ids, path-halving, union by smaller root for determinism."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        """Root of x's set."""
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        """Merge the sets of a and b."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo

    def groups(self) -> dict[str, list[str]]:
        """Root -> sorted members of every set with more than one member."""
        out: dict[str, list[str]] = defaultdict(list)
        for x in self.parent:
            out[self.find(x)].append(x)
        return {k: sorted(v) for k, v in out.items() if len(v) > 1}


# Quality scores this close to the best one (relative: q >= best - QUALITY_TIE * |best|) are a
# tie. Chrome lines move a page's score by about 1%: a page and its copies with a "Subscribe
# now" header, share buttons or a "Last updated" line scored 0.019135/0.018952 (0.96%),
# 0.029232/0.029113 (0.41%), 0.083684/0.083508 (0.21%) on real pages, and a copy had won by that
# noise alone. 2% is twice the largest of those; a real difference in quality is wider.
QUALITY_TIE = 0.02

# (quality, URL rank, size, host): what `best_of` compares, per document (`standing`).
Standing = tuple[float, int, int, str]


def standing(quality: float | None, url_key: str, size: int) -> Standing:
    """A document's standing: its quality (NULL/NaN as -1, below every score), URL rank (0 for
    a canonical URL without a query, 1 for one with a query or no URL), size (characters of
    its normalised text, `text_keys`) and host (its canonical URL's, '' without one)."""
    q = -1.0 if quality is None or math.isnan(quality) else float(quality)
    try:
        parts = urlsplit(url_key)
        host, query = parts.netloc, parts.query
    except ValueError:  # a URL that does not parse is its own key (`canonical_url`)
        host, query = "", "?" in url_key
    return (q + 0.0, 0 if url_key and not query else 1, int(size), host)


def rank_key(quality: float | None, doc_id: str) -> tuple[float, str]:
    """Quality order alone: highest quality first (NULL/NaN last), then smallest id. `best_of`
    falls back to it when the tie-breaks of near-equal scores tie too."""
    q = -1.0 if quality is None or math.isnan(quality) else quality
    return (-q, doc_id)


def best_of(standings: Mapping[str, Sequence], among: Iterable[str] | None = None) -> str:
    """The representative of a group of documents: id -> `standing`.

    Chosen `among` some of them (default all; a component's URL-group losers are not
    candidates) and independent of their order. The candidates within `QUALITY_TIE` of the best
    candidate's quality are tied, and of those the first by: a canonical URL without a query
    (the page's own address, not a campaign or mirror link), the shorter normalised text (copies
    share the content, so the extra characters are a copy's chrome: headers, share buttons,
    "Last updated" lines), the host the most members of the group share (the site the copies
    come from), then `rank_key` (higher quality, then smaller id).
    """
    ids = sorted(standings) if among is None else sorted(set(among))
    top = max(standings[i][0] for i in ids)
    floor = top - QUALITY_TIE * abs(top)
    hosts = Counter(s[3] for s in standings.values() if s[3])

    def key(i: str) -> tuple:
        q, url_rank, size, host = standings[i]
        return (url_rank, size, -hosts[host] if host else 0, rank_key(q, i))

    return min((i for i in ids if standings[i][0] >= floor), key=key)


# A node's label in min-label propagation: a document id. The smallest id of a component is its
# label and names its shard; `best_of` picks the representative once the members are together.
Label = str


def label_messages(node: str, label: Label, neighbours: Iterable[str]) -> list[tuple[str, Label]]:
    """One round of min-label propagation: a node sends its label to itself and its neighbours."""
    return [(node, label)] + [(u, label) for u in neighbours]


def merge_label_pairs(pairs: Iterable[tuple[Label, Label]]) -> dict[Label, Label]:
    """Labels still differing across an edge after propagation -> the smallest label they join.

    Only labels that change are returned. Exact for any number of earlier rounds: every label
    is a node of its own component and never above its node's own label, so the minimum label
    of the joined classes is the component's label (its smallest id).
    """
    parent: dict[Label, Label] = {}

    def find(x: Label) -> Label:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb))
            parent[hi] = lo
    return {x: r for x in list(parent) if (r := find(x)) != x}


def cluster_rows(rep: str, members: Iterable[tuple[str, str, bool]]) -> list[dict]:
    """Rows of one component: `members` are (id, text_hash, lost its URL group), `rep` the kept
    representative.

    `match` says why a member goes: the same normalised text as the representative (`exact`),
    else another fetch of its own URL stayed (`url`: it lost its URL group), else a chain of
    near copies among URL-group survivors leads to the representative (`near`). Sorted by id.
    """
    info = {m[0]: m for m in members}
    rep_hash = info[rep][1]
    rows = []
    for m, h, url_lost in sorted(info.values()):
        if m == rep:
            match = None
        elif h == rep_hash:
            match = "exact"
        elif url_lost:
            match = "url"
        else:
            match = "near"
        rows.append(
            {
                "cluster_id": rep,
                "id": m,
                "duplicate_of": None if m == rep else rep,
                "match": match,
                "cluster_size": len(info),
            }
        )
    return rows


def url_representatives(groups: Iterable[Sequence[str]], nodes: dict[str, dict]) -> dict[str, str]:
    """Each URL group's members but its best (`best_of` their `standing`) -> that best member."""
    lost = {}
    for group in groups:
        ids = sorted(set(group))
        best = best_of({i: nodes[i]["standing"] for i in ids})
        lost.update({m: best for m in ids if m != best})
    return lost


def representative(members: Iterable[tuple[str, Sequence, bool]]) -> str:
    """A component's representative from its (id, `standing`, lost its URL group) members:
    `best_of` all of them, among those that won their URL group (every component has one: a
    loser's only edge is to its group's best)."""
    members = list(members)
    return best_of({m: s for m, s, _ in members}, [m for m, _, lost in members if not lost])


def resolve_clusters(edges: Iterable[tuple[str, str, str]], nodes: dict[str, dict]) -> list[dict]:
    """Connected components of typed edges (a, b, kind); one row per clustered document.

    `nodes[id]` holds `standing`, `text_hash` and `url_lost` (true for a member that lost its
    URL group: its only edge is the `url` edge to the group's best, and it is never the
    representative). The returned rows carry `cluster_id` (the representative,
    `representative`), `id`, `duplicate_of` (None for the representative), `match`
    (exact/url/near, `cluster_rows`) and `cluster_size`, sorted by (cluster_id, id).
    """
    uf = UnionFind()
    for a, b, _ in edges:
        uf.union(a, b)
    rows = []
    for members in uf.groups().values():
        lost = {m: nodes[m].get("url_lost", False) for m in members}
        rep = representative((m, nodes[m]["standing"], lost[m]) for m in members)
        rows += cluster_rows(rep, [(m, nodes[m]["text_hash"], lost[m]) for m in members])
    return sorted(rows, key=lambda r: (r["cluster_id"], r["id"]))


def near_edges(
    buckets: Iterable[Sequence[str]], sigs: dict[str, np.ndarray], threshold: float
) -> list[tuple[str, str, str]]:
    """Verified near-duplicate edges: each bucket's star pairs kept if their Jaccard estimate passes."""
    seen = set()
    edges = []
    for bucket in buckets:
        for a, b in star_pairs(bucket):
            if (a, b) not in seen:
                seen.add((a, b))
                if estimated_jaccard(sigs[a], sigs[b]) >= threshold:
                    edges.append((a, b, "near"))
    return edges


def cluster(docs: Sequence[dict], cfg: DedupConfig) -> list[dict]:
    """In-memory exact + URL + MinHash clustering of docs with id, text, lang, url, quality_score.

    URL groups first (each keeps its best; the others hang off it by a `url` edge), then exact
    and near edges among the URL groups' survivors only; each component keeps its
    `representative`."""
    nodes = {}
    by_url: dict[str, list[str]] = defaultdict(list)
    sigs = {}
    for d in docs:
        u = canonical_url(d.get("url") or "")
        h, sig, size = text_keys(d["text"], d.get("lang") or "", cfg)
        if cfg.near:
            sigs[d["id"]] = sig
        nodes[d["id"]] = {"standing": standing(d.get("quality_score"), u, size), "text_hash": h}
        if u:
            by_url[u].append(d["id"])
    lost = url_representatives(by_url.values(), nodes) if cfg.url else {}
    edges = [(best, m, "url") for m, best in sorted(lost.items())]
    by_hash: dict[str, list[str]] = defaultdict(list)
    buckets: dict[tuple[int, str], list[str]] = defaultdict(list)
    for d in docs:
        doc_id = d["id"]
        nodes[doc_id]["url_lost"] = doc_id in lost
        if doc_id in lost:
            continue
        by_hash[nodes[doc_id]["text_hash"]].append(doc_id)
        if cfg.near:
            for key in band_keys(sigs[doc_id], cfg):
                buckets[key].append(doc_id)
    edges += exact_edges(by_hash.values(), "exact") if cfg.exact else []
    edges += near_edges(buckets.values(), sigs, cfg.jaccard_threshold) if cfg.near else []
    return resolve_clusters(edges, nodes)


def exact_edges(groups: Iterable[Sequence[str]], kind: str) -> list[tuple[str, str, str]]:
    """Star edges from the smallest id of each group to its other members."""
    return [(a, b, kind) for g in groups for a, b in star_pairs(g)]
