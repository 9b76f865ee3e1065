"""Crawler traps: unbounded generated URL spaces, recognised from evidence, not from URL shape alone.

A news site's `/2024/05/12/slug`, `/story/123456` and `item?id=N` URLs share one shape but are
all distinct documents, so a per-pattern cap would lose everything after the first hundred. A
trap is instead recognised by what makes a URL space unbounded and worthless:

- calendar walks: date-only URLs (`/cal/2024/05?day=12`, `/2024/05/`, `?date=2024-05-12`) get
  `max_calendar` per family, plus one more for every fetched calendar page that led to new
  non-calendar pages (a real archive keeps its budget, an endless next/prev walk does not);
- multiplying parameters: sort/order/view permutations of one listing (`max_param_variants`
  per listing), session ids (by name, or a long random token that rotates while shared by many
  paths) and parameters shown by fetched pages not to change the page (variants whose text is
  near-identical) add no variant of a URL that is already known;
- repeated or ever-deepening paths: a segment repeated more than `max_repeats` times
  (`/a/b/a/b/a`), or more than `max_deepening` links in a row that each extend the path;
- runs of near-identical pages: a 64-bit simhash of each fetched page's text (numbers are words
  like any other: articles that differ only in their number and a short sentence are distinct
  pages). A page is a look-alike when it is near-identical to the page of its shape it was
  reached from. Links out of a chain of `max_dup_run` look-alikes are not followed, nor links
  from a shape to itself once most of its pages reached that way (`min_dup_sample`+, of
  `min_words`+ words: a few words are too little to judge) are look-alikes. A page that led to
  new URLs of another shape (an index listing articles) is never a look-alike.

`check(url, parent)` is asked once per new URL and returns None (the URL is counted) or a
`trap: ...` reason naming the family and its evidence; `observe(url, text, links)` feeds each
fetched page's evidence. Decisions are deterministic for a given order of calls.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit

import numpy as np

SORT_PARAMS = frozenset(
    {
        "sort",
        "sortby",
        "sort_by",
        "sortorder",
        "sort_order",
        "order",
        "orderby",
        "order_by",
        "dir",
        "direction",
        "view",
        "display",
        "layout",
        "limit",
        "per_page",
        "perpage",
        "pagesize",
        "page_size",
        "filter",
    }
)
SESSION_PARAMS = frozenset(
    {
        "sid",
        "sess",
        "sessid",
        "session",
        "sessionid",
        "session_id",
        "sessionkey",
        "phpsessid",
        "jsessionid",
        "aspsessionid",
        "cfid",
        "cftoken",
        "visitor",
        "visitorid",
    }
)
DATE_PARAMS = frozenset(
    {"day", "month", "year", "date", "d", "m", "y", "week", "ym", "ymd", "cal", "caldate"}
)
_YEAR = re.compile(r"(19|20)\d\d")
_MONTH = re.compile(r"0?[1-9]|1[0-2]")
_DAY = re.compile(r"0?[1-9]|[12]\d|3[01]")
# Words before a bare year that make it a date archive (/archive/2024) rather than an id.
CALENDAR_WORDS = frozenset(
    "archive archives calendar cal events event date dates year years day days month months "
    "diary agenda schedule history blog news posts".split()
)
# 2024-05-12 / 2024-05; compact 20240512 only where the context says date (an id like 200105
# or ?id=200105 is not one).
_DATE_SEG = re.compile(r"(19|20)\d\d-(0[1-9]|1[0-2])(-([0-2]\d|3[01]))?")
_DATE_COMPACT = re.compile(r"(19|20)\d\d(0[1-9]|1[0-2])([0-2]\d|3[01])")
_TOKEN = re.compile(r"[A-Za-z0-9_\-]{16,}")
_WORD = re.compile(r"\w+", re.UNICODE)
_SHAPE_LITERAL = re.compile(r"[a-z]{1,24}")


@lru_cache(maxsize=1 << 14)  # pages repeat their parents' and neighbours' URLs
def shape_of(url: str) -> str:
    """A URL's family: host, path with id-like segments as '*', and the query's keys."""
    parts = urlsplit(url)
    segs = [s if _SHAPE_LITERAL.fullmatch(s) else "*" for s in parts.path.lower().split("/") if s]
    keys = ",".join(sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)}))
    return f"{parts.netloc}/{'/'.join(segs)}" + (f"?{keys}" if keys else "")


@lru_cache(maxsize=1 << 14)
def calendar_family(url: str) -> tuple[str, str] | None:
    """(family, date) for a date-only URL (a calendar or date archive page), else None.

    Date-only: the path ends in date parts (`/2024/05`, `/2024/05/12/`, `/2024-05-12`) or a
    date parameter carries the date (`?day=12`, `?date=2024-05-12`). `/2024/05/12/some-slug`
    and `/story/2024` are not date-only.
    """
    parts = urlsplit(url)
    segs = [s for s in parts.path.split("/") if s]
    params = parse_qsl(parts.query, keep_blank_values=True)
    dated_params = [
        (k, v)
        for k, v in params
        if (k.lower() in DATE_PARAMS and re.fullmatch(r"[\d\-/.]{1,10}", v))
        or _DATE_SEG.fullmatch(v)
        or (k.lower() in DATE_PARAMS and _DATE_COMPACT.fullmatch(v))
    ]
    # Trailing date parts of the path: year [/ month [/ day]] or one YYYY-MM-DD segment.
    tail = 0
    if segs and (
        _DATE_SEG.fullmatch(segs[-1])
        or (
            _DATE_COMPACT.fullmatch(segs[-1])
            and len(segs) > 1
            and segs[-2].lower() in CALENDAR_WORDS
        )
    ):
        tail = 1
    elif len(segs) >= 3 and _YEAR.fullmatch(segs[-3]) and _MONTH.fullmatch(segs[-2]):
        tail = 3 if _DAY.fullmatch(segs[-1]) else 0
    if not tail and len(segs) >= 2 and _YEAR.fullmatch(segs[-2]) and _MONTH.fullmatch(segs[-1]):
        tail = 2
    if not tail and segs and _YEAR.fullmatch(segs[-1]):
        # A bare year is an archive at the root or after a calendar word; /story/2024 is an id.
        tail = 1 if len(segs) == 1 or segs[-2].lower() in CALENDAR_WORDS else 0
    if not tail and not dated_params:
        return None
    if not tail and segs and not _SHAPE_LITERAL.fullmatch(segs[-1].lower()):
        return None  # /story/123?year=2024: a document that merely carries a date parameter
    kept = segs[: len(segs) - tail]
    date_keys = {k for k, _ in dated_params}
    other = sorted({k for k, _ in params if k not in date_keys})
    family = f"{parts.netloc}/" + "/".join(kept + ["{date}"] * bool(tail))
    if date_keys or other:
        family += "?" + ",".join([*sorted(f"{k}={{date}}" for k in date_keys), *other])
    raw = "/".join(segs[len(segs) - tail :] + [v for _, v in dated_params])
    date = "-".join(f"{int(x):02d}" for x in re.findall(r"\d+", raw)) or raw  # 2024-05-09
    return family, date


_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    # splitmix64's finaliser: every input bit reaches every output bit.
    x = x ^ (x >> np.uint64(30))
    x = x * _MIX1
    x = x ^ (x >> np.uint64(27))
    x = x * _MIX2
    return x ^ (x >> np.uint64(31))


def simhash(text: str, max_words: int = 3000) -> int:
    """64-bit simhash of a page's text over word bigrams (lower-cased words, numbers included).

    Deterministic across processes (no salted hash()).
    """
    return fingerprint(text, max_words)[0]


def fingerprint(text: str, max_words: int = 3000) -> tuple[int, int]:
    """(simhash, number of words it was computed from)."""
    words = _WORD.findall(text.lower(), 0, 40 * max_words)[:max_words]
    if not words:
        return 0, 0
    vocab: dict[str, int] = {}
    ids = np.fromiter((vocab.setdefault(w, len(vocab)) for w in words), dtype=np.int64)
    digests = b"".join(hashlib.blake2b(w.encode(), digest_size=8).digest() for w in vocab)
    word_hash = np.frombuffer(digests, dtype=np.uint64)[ids]
    if len(words) > 1:  # bigrams: order matters, so the second word is mixed first
        feats = _mix(word_hash[:-1] ^ _mix(word_hash[1:] + np.uint64(0x9E3779B97F4A7C15)))
    else:
        feats = _mix(word_hash)
    bits = np.unpackbits(feats.view(np.uint8).reshape(-1, 8), axis=1)
    votes = bits.sum(axis=0, dtype=np.int64) * 2 - len(feats)
    return int.from_bytes(np.packbits(votes > 0).tobytes(), "big"), len(words)


def hamming(a: int, b: int) -> int:
    """Bits that differ between two simhashes."""
    return (a ^ b).bit_count()


@lru_cache(maxsize=1 << 14)
def _split(url: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    parts = urlsplit(url)
    return parts.netloc, parts.path, tuple(parse_qsl(parts.query, keep_blank_values=True))


def _key(host: str, path: str, pairs: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> str:
    return host + path + "?" + "&".join(f"{k}={v}" for k, v in sorted(pairs))


class TrapDetector:
    """Decides, for each newly discovered URL, whether it belongs to a crawler trap (see module doc).

    The first four arguments keep their historical order: URL length cap, repeats of one path
    segment, `max_per_pattern` and the base budget of date-only URLs per calendar family.
    `max_per_pattern` (config `max_urls_per_pattern`) is accepted for compatibility and caps
    nothing any more: a cap per URL pattern is what cut news sites off after 100 articles.
    """

    def __init__(
        self,
        max_url_length: int = 2048,
        max_repeats: int = 2,
        max_per_pattern: int = 100,
        max_calendar: int = 12,
        *,
        max_param_variants: int = 3,
        max_deepening: int = 8,
        max_segments: int = 32,
        max_dup_run: int = 8,
        near_dup_bits: int = 6,
        max_near_dup_bits: int = 12,
        min_dup_sample: int = 8,
        dup_share: float = 0.75,
        min_words: int = 10,
    ):
        self.max_url_length, self.max_repeats = max_url_length, max_repeats
        self.max_per_pattern, self.max_calendar = max_per_pattern, max_calendar
        self.max_param_variants, self.max_deepening = max_param_variants, max_deepening
        self.max_segments, self.max_dup_run = max_segments, max_dup_run
        self.near_dup_bits, self.min_dup_sample, self.dup_share = (
            near_dup_bits,
            min_dup_sample,
            dup_share,
        )
        self.min_words = min_words
        self.max_near_dup_bits = max_near_dup_bits
        self.seen: set[str] = set()
        # calendar family -> [URLs counted, fetched pages that led to new non-calendar pages]
        self.calendar: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.calendar_dates: dict[str, list[str]] = {}  # family -> [first date, last date]
        self.sort_variants: Counter[str] = Counter()  # listing (sort params removed) -> URLs
        # Every URL's key and its keys with one parameter removed, as hashes (one set entry per
        # URL and parameter: strings would cost ~100 bytes each on a big crawl).
        self.bases: set[int] = set()
        self.session_keys: dict[tuple[str, str], str] = {}  # (host, key) -> evidence
        self.token_paths: dict[tuple[str, str, str], set[str]] = {}
        self.token_values: Counter[tuple[str, str]] = Counter()
        self.param_votes: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        self.variant_prints: dict[int, int] = {}  # hash(URL key minus a parameter) -> simhash
        self.deepening: dict[str, int] = {}
        self.shape_parent: dict[str, str] = {}  # URL -> its parent, when of the same shape
        self.run: dict[str, int] = {}  # fetched URL -> length of its near-duplicate chain
        self.page_prints: dict[str, int] = {}  # fetched URL -> simhash of its text
        # shape -> [judged pages reached from a page of the shape, how many near-identical to it]
        self.shape_pages: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.shape_urls: Counter[str] = Counter()
        self.pattern_counts = self.shape_urls  # the per-shape counts (older name)

    # --- deciding -------------------------------------------------------------------
    def check(self, url: str, parent: str | None = None) -> str | None:
        """The trap reason if `url` must not be enqueued, else None (and the URL is counted)."""
        reason = self._reason(url, parent)
        if reason is None:
            self.register(url, parent)
            return None
        self.seen.add(url)
        return self._tag(url, reason)

    def _tag(self, url: str, reason: str) -> str:
        """Name the URL's family too when another rule cut it: a date page cut for near-identical
        text is still a calendar page, a sessid URL still a session variant."""
        host, _, pairs = _split(url)
        tags = []
        cal = calendar_family(url)
        if cal is not None and "calendar" not in reason:
            tags.append(f"calendar walk {cal[0]}")
        session = [
            k for k, _ in pairs if k.lower() in SESSION_PARAMS or (host, k) in self.session_keys
        ]
        if session and "session" not in reason:
            tags.append(f"session parameter {session[0]!r}")
        sort = sorted({k for k, _ in pairs if k.lower() in SORT_PARAMS})
        if sort and "sort" not in reason and "order" not in reason:
            tags.append(f"sort/order parameters ({', '.join(sort)})")
        if not tags:
            return reason
        return "trap: " + "; ".join(tags) + ": " + reason.removeprefix("trap: ")

    def _reason(self, url: str, parent: str | None) -> str | None:
        if len(url) > self.max_url_length:
            return f"trap: URL longer than {self.max_url_length} characters ({len(url)})"
        host, path, pairs = _split(url)
        segs = [s for s in path.split("/") if s]
        top = Counter(segs).most_common(1)
        if top and top[0][1] > self.max_repeats:
            return (
                f"trap: ever-deepening path: segment {top[0][0]!r} repeats {top[0][1]} times "
                f"in {path[:120]} (limit {self.max_repeats})"
            )
        if len(segs) > self.max_segments:
            return f"trap: ever-deepening path: {len(segs)} segments (limit {self.max_segments})"
        if parent is not None:
            depth = self._deepening(url, parent)
            if depth > self.max_deepening:
                return (
                    f"trap: ever-deepening path: {depth} links in a row each extended the path "
                    f"(now {path[:120]}, limit {self.max_deepening})"
                )
        cal = calendar_family(url)
        if cal is not None:
            family, date = cal
            counted, productive = self.calendar[family]
            budget = self.max_calendar + productive
            if counted >= budget:
                first, last = self.calendar_dates.get(family, [date, date])
                return (
                    f"trap: calendar walk: {counted} date-only URLs of {family} already queued "
                    f"(dates {first} .. {last}, now {date}); only {productive} of the fetched "
                    f"ones led to new non-calendar pages (budget {self.max_calendar} + that)"
                )
        # Content evidence about a parameter only cuts variants reached from a variant of the same
        # page (a calendar's next day, a listing's other sort order), never a page an index
        # links to (item?id=N from /news).
        from_variant = parent is not None and _split(parent)[:2] == (host, path)
        reason = self._param_reason(host, path, pairs, from_variant)
        if reason:
            return reason
        shape = shape_of(url)
        if parent is not None and shape_of(parent) == shape:
            run = self.run.get(parent, 0)
            if run >= self.max_dup_run:
                return (
                    f"trap: run of near-identical pages: linked from the last of {run + 1} "
                    f"pages of {shape} in a row, each reached from the one before and each a "
                    f"near-duplicate (simhash within {self.near_dup_bits}-{self.max_near_dup_bits} "
                    "bits by length) of the one before"
                )
        fetched, dups = self.shape_pages.get(shape, (0, 0))
        feeds_itself = parent is None or shape_of(parent) == shape
        if feeds_itself and fetched >= self.min_dup_sample and dups >= self.dup_share * fetched:
            return (
                f"trap: near-identical pages: {dups} of the {fetched} fetched pages of {shape} "
                f"reached from a page of it (with {self.min_words}+ words) are near-duplicates "
                f"of that page (simhash within {self.near_dup_bits}-{self.max_near_dup_bits} bits "
                "by length); "
                f"{self.shape_urls[shape]} URLs of it already queued"
            )
        return None

    def _param_reason(
        self, host: str, path: str, pairs: tuple[tuple[str, str], ...], from_variant: bool
    ) -> str | None:
        if not pairs:
            return None
        sort_keys = sorted({k for k, _ in pairs if k.lower() in SORT_PARAMS})
        if sort_keys:
            listing = _key(host, path, [p for p in pairs if p[0] not in sort_keys])
            n = self.sort_variants[listing]
            if n >= self.max_param_variants:
                return (
                    f"trap: sort/order parameters ({', '.join(sort_keys)}) multiply "
                    f"{host}{path}: {n} variants of this listing already queued "
                    f"(limit {self.max_param_variants})"
                )
        for k, v in pairs:
            rest = [p for p in pairs if p != (k, v)]
            if hash(_key(host, path, rest)) not in self.bases:
                continue  # the first variant of this URL: nothing multiplied yet
            evidence = self._neutral(host, k, from_variant)
            if evidence:
                return (
                    f"trap: {evidence} multiplies {host}{path}: a variant without or with another "
                    f"{k}= is already known ({k}={v[:24]})"
                )
        return None

    def _neutral(self, host: str, key: str, content_evidence: bool = True) -> str | None:
        """Why `key` does not select content on `host` (session id, or fetched evidence), or None."""
        if key.lower() in SESSION_PARAMS:
            return f"session parameter {key!r} (a session-id name)"
        if (host, key) in self.session_keys:
            return self.session_keys[(host, key)]
        if not content_evidence:
            return None
        same, different = self.param_votes.get((host, key), (0, 0))
        if same >= 2 and same > 2 * different:
            return (
                f"parameter {key!r} that does not change the page ({same} fetched variants "
                f"near-identical, {different} different)"
            )
        return None

    def _deepening(self, url: str, parent: str) -> int:
        up, p_host, p_path = urlsplit(url), *urlsplit(parent)[1:3]
        if up.netloc != p_host:
            return 0
        base = p_path if p_path.endswith("/") else p_path.rsplit("/", 1)[0] + "/"
        deeper = up.path.startswith(base) and up.path.count("/") > p_path.count("/")
        return self.deepening.get(parent, 0) + 1 if deeper else 0

    # --- counting ---------------------------------------------------------------------
    def register(self, url: str, parent: str | None = None) -> None:
        """Count an accepted URL (check() does this; a resumed crawl calls it for its queue)."""
        self.seen.add(url)
        host, path, pairs = _split(url)
        cal = calendar_family(url)
        if cal is not None:
            family, date = cal
            self.calendar[family][0] += 1
            span = self.calendar_dates.setdefault(family, [date, date])
            span[0], span[1] = min(span[0], date), max(span[1], date)
        sort_keys = {k for k, _ in pairs if k.lower() in SORT_PARAMS}
        if sort_keys:
            self.sort_variants[_key(host, path, [p for p in pairs if p[0] not in sort_keys])] += 1
        self.bases.add(hash(_key(host, path, pairs)))
        for k, v in pairs:
            self.bases.add(hash(_key(host, path, [p for p in pairs if p != (k, v)])))
            if _TOKEN.fullmatch(v) and sum(c.isdigit() for c in v) >= 2:
                self._token_seen(host, path, k, v)
        shape = shape_of(url)
        self.shape_urls[shape] += 1
        if parent is not None:
            depth = self._deepening(url, parent)
            if depth:
                self.deepening[url] = depth
            if shape_of(parent) == shape:
                self.shape_parent[url] = parent

    def _token_seen(self, host: str, path: str, key: str, value: str) -> None:
        # A session id is a long random token that rotates (several values) while each value is
        # carried by many different paths (every link of the page that handed it out).
        paths = self.token_paths.setdefault((host, key, value), set())
        if len(paths) < 3:
            if not paths:
                self.token_values[(host, key)] += 1
            paths.add(path)
        values = self.token_values[(host, key)]
        if len(paths) >= 3 and values >= 2 and (host, key) not in self.session_keys:
            self.session_keys[(host, key)] = (
                f"session-like parameter {key!r} (random tokens, {values} values so far, one "
                f"shared by {len(paths)} paths)"
            )

    # --- page evidence ------------------------------------------------------------------
    def near_limit(self, n_words: int) -> int:
        """Simhash bits two pages of `n_words` words may differ by and still be near-identical:
        about what two changed words (four word pairs) flip, within [near_dup_bits,
        max_near_dup_bits]. A counter or token on a short generated page is near-identical; two
        short articles sharing a template but not their sentences are not."""
        pairs = max(1, n_words - 1)
        angle = math.acos(max(-1.0, 1.0 - 4.0 / pairs))  # between the pairs' count vectors
        return min(self.max_near_dup_bits, max(self.near_dup_bits, round(64 * angle / math.pi)))

    def observe(self, url: str, text: str, links: list[str] | tuple[str, ...] = ()) -> None:
        """Feed a fetched page's text and outlinks (before its outlinks are checked)."""
        host, path, pairs = _split(url)
        fp, n_words = fingerprint(text)
        # A page of a few words ('link to 7 link to 8') is too short to judge near-identity by
        # simhash: it counts for runs (if identical) only, not for a parameter's or a shape's
        # statistics.
        judged = n_words >= self.min_words
        # Calendar pages earn budget when they lead somewhere new that is not another date page.
        cal = calendar_family(url)
        if cal is not None:
            for link in links:
                if (
                    link not in self.seen
                    and urlsplit(link).netloc == host
                    and calendar_family(link) is None
                ):
                    self.calendar[cal[0]][1] += 1
                    break
        # A page that led to new URLs of another shape (an index page listing articles) is
        # doing its job even if its text looks like its neighbours' ("Story 17", "Story 18"):
        # it is never evidence of a trap.
        shape = shape_of(url)
        productive = any(
            link not in self.seen and _split(link)[0] == host and shape_of(link) != shape
            for link in links
        )
        # Parameters: does a variant differing in one parameter look like an earlier variant?
        own = hash(_key(host, path, pairs))
        if judged:
            self.variant_prints.setdefault(own, fp)
        for k, v in pairs if judged else ():
            base = hash(_key(host, path, [p for p in pairs if p != (k, v)]))
            first = self.variant_prints.get(base)
            if first is None:
                self.variant_prints[base] = fp
            else:
                same = hamming(first, fp) <= self.near_limit(n_words) and not productive
                self.param_votes[(host, k)][0 if same else 1] += 1
        # Runs: a page near-identical to the page of the same shape it was reached from (pages of
        # a few words must be identical: one changed word is a different short page). Per shape,
        # the share of such pages among those reached from a page of the shape (judged pages).
        parent = self.shape_parent.pop(url, None)
        if parent is not None and parent in self.page_prints:
            near = not productive and hamming(fp, self.page_prints[parent]) <= (
                self.near_limit(n_words) if judged else 0
            )
            if near:
                self.run[url] = self.run.get(parent, 0) + 1
            if judged:
                stats = self.shape_pages[shape]
                stats[0] += 1
                stats[1] += near
        self.page_prints[url] = fp
