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
  new URLs of another shape (an index listing articles) is never a look-alike; links to its own
  path with its parameters re-valued or added (`own_variant`: its next page, its sort orders)
  lead nowhere new. A listing's next pages are not followed from a page that led nowhere new
  with the same text as another such page of its listing, a text none of its pages that led
  somewhere new had (a pager linking pages past the end, as Dawn's does: empty pages one after
  the other).

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
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import lxml.html
import numpy as np
from lxml import etree

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
# Session ids under the names shop and CMS software gives them (osCommerce, Zen Cart, xt:Commerce,
# PHP, Java, ASP, ColdFusion, ...): never part of a document's address.
SESSION_NAMES = SESSION_PARAMS | frozenset(
    {"oscsid", "zenid", "xtcsid", "sessid", "s_id", "sesskey", "phpsessionid", "cfsid"}
)
# Parameters that re-present one document or listing (sort and comment order, print/AMP views,
# comment expansion and paging): canonicalised away before the frontier.
VARIANT_NAMES = frozenset(
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
        "comments",
        "comment",
        "commentsort",
        "comment_sort",
        "comments_sort",
        "csort",
        "corder",
        "cpage",
        "replytocom",
        "print",
        "printable",
        "share",
        "amp",
        "layout",
        "display",
    }
)
# The same by shape: sortBy, sort_dir, cmtorder, comment_sort, comments_page, commentsExpand...
_VARIANT_NAME = re.compile(
    r"(?:comments?|cmts?|c)?[-_]?(?:sort|order)(?:[-_]?(?:by|dir|direction|order|field|key|"
    r"type|mode))?|(?:comments?|cmts?)[-_]?(?:page|view|mode|show|expand|expanded|all|open|"
    r"order|sort|filter)?"
)
# Parameters that re-present a page only with these values (`view=article` selects content in
# some CMSs, `view=print` does not).
PRESENTATION_KEYS = frozenset(
    {"view", "format", "output", "mode", "style", "theme", "tmpl", "template", "version", "v"}
)
PRESENTATION_VALUES = frozenset(
    "print printable printer printview print_view amp mobile m desktop full compact grid list "
    "gallery text plain classic single all thread threaded flat nested lite light dark simple "
    "reader expanded collapsed fullscreen component".split()
)
_PATH_PARAM = re.compile(r";([^/;=?]*)(=[^/;?]*)?")
# ASP.NET cookieless sessions: /(S(lit3py55t21z5v55vlm25s55))/page.aspx, /(X(1)S(...))/...
_PATH_SESSION_SEG = re.compile(r"/\((?:[A-Z]\([A-Za-z0-9_\-]*\))+\)(?=/|$)")
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
# A page number: 1-999 without a leading zero (dates have them), bare or with a short word.
_PAGE_SEG = re.compile(r"(?:[a-z]{1,8}[-_]?)?[1-9]\d{0,2}(?:\.[a-z]{2,5})?", re.I)
_FACET_SPLIT = re.compile(r"[,|; +]+")
_KEY_INDEX = re.compile(r"\[[^\]]*\]$")  # f[0]=, f[]=: one parameter in several keys
_WORD = re.compile(r"\w+", re.UNICODE)
_SHAPE_LITERAL = re.compile(r"[a-z]{1,24}")


# A namespace before a colon (MediaWiki's Talk:, User:, Category:, Kategoria:): a family of its own.
_NAMESPACE = re.compile(r"([^\W\d][\w -]{0,23}):.+")


def _shape_segment(seg: str) -> str:
    if _SHAPE_LITERAL.fullmatch(seg):
        return seg
    if ":" in seg or "%3a" in seg:
        named = _NAMESPACE.fullmatch(unquote(seg))
        if named:
            return f"{named.group(1)}:*"
    return "*"


@lru_cache(maxsize=1 << 14)  # pages repeat their parents' and neighbours' URLs
def shape_of(url: str) -> str:
    """A URL's family: host, path with id-like segments as '*' (a segment `Word:rest`, a wiki's
    namespace, as 'word:*': /wiki/Talk:X and /wiki/X are two families), and the query's keys."""
    parts = urlsplit(url)
    segs = [_shape_segment(s) for s in parts.path.lower().split("/") if s]
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


def _scope(host: str, path: str, keys: list[str] | tuple[str, ...]) -> str:
    """The family a parameter is judged in: the shape of the URL without that parameter (what
    `?sort=new` does to one article says something about the site's other articles, nothing about
    its listings)."""
    return shape_of("//" + host + path + "?" + "&".join(f"{k}=" for k in sorted(set(keys))))


def pagination_step(url: str, parent: str, listings: set[str] | None = None) -> bool:
    """True for a link from a listing page to another page of the same listing: same path, the
    same parameters but one numeric one (`?page=3` from `?page=2` or from the bare listing), or a
    numeric last segment after 'page'/'p' (`/news/page/3`). Walking a listing is not going deeper
    into the site, so it does not count against max_depth (endless listings of the same pages are
    cut as runs of near-identical pages). A page number as the last path segment counts too
    (`/news/2` from `/news`, `/archive/page-4` from `/archive/page-3`); bare numbers from one to the
    next (`/news/3` from `/news/2`) only under a path `listings` has seen paged from its first
    page this way (an article's id is not a page number: `/story/3` from `/story/2`); `listings`
    collects those paths."""
    host, path, pairs = _split(url)
    p_host, p_path, p_pairs = _split(parent)
    if host != p_host:
        return False
    if path == p_path:
        mine, theirs = dict(pairs), dict(p_pairs)
        changed = {k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k)}
        return len(changed) == 1 and mine.get(next(iter(changed)), "").isdigit()
    if pairs != p_pairs:
        return False
    segs, p_segs = path.rstrip("/").split("/"), p_path.rstrip("/").split("/")
    if len(segs) >= 3 and segs[-1].isdigit() and segs[-2].lower() in ("page", "p"):
        base = segs[:-2]
        p_base = p_segs[:-2] if len(p_segs) >= 3 and p_segs[-2].lower() in ("page", "p") else p_segs
        return base == p_base
    # a page number as the last segment: /news/2 from /news or /news/3, /archive/page-4 from
    # /archive/page-3, /list/index_2.html from /list/index_3.html (short numbers: an id is not)
    last, p_last = _PAGE_SEG.fullmatch(segs[-1]), _PAGE_SEG.fullmatch(p_segs[-1])
    if len(segs) == len(p_segs) + 1 and last and segs[:-1] == p_segs:
        if listings is not None and len(listings) < 100_000:
            listings.add(host + "/".join(p_segs))
        return True
    if len(p_segs) == len(segs) + 1 and p_last and p_segs[:-1] == segs:
        return True  # back to the listing's first page
    if len(segs) == len(p_segs) and last and p_last and segs[:-1] == p_segs[:-1]:
        if re.sub(r"\d+", "#", segs[-1]) != re.sub(r"\d+", "#", p_segs[-1]):
            return False
        bare = segs[-1].isdigit()
        return not bare or (listings is not None and host + "/".join(segs[:-1]) in listings)
    return False


def own_variant(url: str, page: str) -> bool:
    """True for a link from a page with a query to its own path that keeps every parameter name
    of the page (`?start=50` or `?sk=a&sd=d&start=25` from `?start=25`): another page, sort order
    or view of the same listing, never a new document the page leads to."""
    host, path, pairs = _split(url)
    p_host, p_path, p_pairs = _split(page)
    if (host, path) != (p_host, p_path) or not p_pairs:
        return False
    return {k for k, _ in p_pairs} <= {k for k, _ in pairs}


# Parameters that number a listing's pages, and the values that name its first page: the first
# page under its number (`?page=1`, `?start=0`) is the bare listing by design.
PAGE_PARAMS = {
    "page": ("1",),
    "p": ("1",),
    "pg": ("0", "1"),
    "paged": ("1",),
    "pagenum": ("1",),
    "page_num": ("1",),
    "pageno": ("1",),
    "pn": ("1",),
    "pagina": ("1",),
    "seite": ("1",),
    "start": ("0",),
    "offset": ("0",),
    "skip": ("0",),
    "from": ("0",),
    "startrow": ("0",),
}


def first_page_variant(a: str, b: str) -> bool:
    """Whether two URLs of a host differ only in one page-number parameter (`PAGE_PARAMS`) that
    one of them carries with its first page's value (`?page=1`, `?p=1`, `?pg=0`, `?start=0`,
    `?offset=0`) and the other lacks or carries with another first-page value: the first page of a
    listing under its number is a copy of the bare listing by design, not a copy that says
    anything about the links that lead to it."""
    host, path, pairs = _split(a)
    b_host, b_path, b_pairs = _split(b)
    if (host, path) != (b_host, b_path):
        return False
    mine, theirs = dict(pairs), dict(b_pairs)
    if len(mine) != len(pairs) or len(theirs) != len(b_pairs):
        return False  # a repeated key: not one page number
    changed = {k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k)}
    if len(changed) != 1:
        return False
    key = next(iter(changed))
    first = PAGE_PARAMS.get(key.lower())
    if first is None:
        return False
    values = {mine.get(key), theirs.get(key)}
    return values <= {None, *first} and values != {None}


def _is_first_page(key: str, value: str) -> bool:
    return value in PAGE_PARAMS.get(key.lower(), ())


def _variants(a: str, b: str) -> bool:
    """Whether two URLs of a host read as two addresses of one document: the same path with one's
    parameter names among the other's, or the same query with one's path segments in order among
    the other's (/amp/story/5 and /story/5, /story/5/print)."""
    host, path, pairs = _split(a)
    b_host, b_path, b_pairs = _split(b)
    if host != b_host:
        return False
    if path == b_path:
        keys, b_keys = {k for k, _ in pairs}, {k for k, _ in b_pairs}
        return keys <= b_keys or b_keys <= keys
    if sorted(pairs) != sorted(b_pairs):
        return False
    segs, b_segs = [s for s in path.split("/") if s], [s for s in b_path.split("/") if s]
    short, long = (segs, b_segs) if len(segs) <= len(b_segs) else (b_segs, segs)
    rest = iter(long)
    return all(seg in rest for seg in short)


def _document(body: bytes | str):
    """The parsed page, or None for an empty or unparseable body."""
    if not body or not body.strip():
        return None
    try:
        return lxml.html.document_fromstring(body)
    except (etree.ParserError, ValueError):
        return None


def visible_text(body: bytes | str) -> str:
    """All text a reader sees on the page, title and link text included (no scripts or styles),
    whitespace collapsed: what tells two short pages (a sign-in form, a member list of names as
    links) apart when their main text is a few words."""
    root = _document(body)
    if root is None:
        return ""
    etree.strip_elements(root, "script", "style", "noscript", "template", with_tail=False)
    return " ".join(root.text_content().split())


def is_token(value: str) -> bool:
    """A long random-looking token (session ids, cache busters): 16+ word characters, 2+ digits."""
    return (
        len(value) >= 16
        and _TOKEN.fullmatch(value) is not None
        and sum(c.isdigit() for c in value) >= 2
    )


# Containers of what every page of a site repeats around its main content.
_BOILER_TAGS = frozenset(
    "script style noscript template nav header footer aside form head iframe svg button select "
    "label".split()
)
_BOILER_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_BOILER_NAMES = re.compile(
    r"(?:^|[-_\s])(?:nav|navbar|navigation|menu|footer|header|masthead|sidebar|aside|related|"
    r"recommended|most|popular|trending|share|sharing|social|cookies?|consent|banner|promo|"
    r"breadcrumbs?|widget|newsletter|subscribe|advert|ads?|sponsored|comments?|disqus|login|"
    r"signin|toolbar|tools|pagination|pager)(?:$|[-_\s])",
    re.I,
)


def main_text(body: bytes | str, max_chars: int = 20000) -> str:
    """A page's main content as text: what is left without the site's template (navigation,
    header, footer, asides, forms, comment sections, related/most-read/share boxes: by tag, ARIA
    role or class/id name) and without link text (menus and link lists). Pages of one site share
    most of their full text, so near-identity is judged on this. Blocks (paragraphs, list items,
    cells, headings, divs) are separated by newlines, so repeated blocks can be told apart
    (`TrapDetector.observe` drops blocks the host serves on many pages)."""
    root = _document(body)
    if root is None:
        return ""
    top = root.find("body")
    out: list[str] = []
    size = 0
    stack: list = [top if top is not None else root]
    while stack and size < max_chars:  # iterative: a deeply nested page cannot exhaust the stack
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            size += len(item)
            continue
        tag = item.tag if isinstance(item.tag, str) else ""
        if not tag or tag in _BOILER_TAGS or item.get("role") in _BOILER_ROLES:
            continue
        names = f"{item.get('class') or ''} {item.get('id') or ''}".strip()
        if names and _BOILER_NAMES.search(names):
            continue
        block = tag in _BLOCK_TAGS
        if block:
            out.append("\n")
            stack.append("\n")
        if item.text and tag != "a":
            out.append(item.text)
            size += len(item.text)
        for child in reversed(item):
            if child.tail:
                stack.append(child.tail)
            stack.append(child)
    lines = (" ".join(line.split()) for line in "".join(out).split("\n"))
    return "\n".join(line for line in lines if line)[:max_chars]


_BLOCK_TAGS = frozenset(
    "p div li dd dt h1 h2 h3 h4 h5 h6 td th tr table ul ol dl section article blockquote pre "
    "figure figcaption br hr main center".split()
)


class FamilyStats:
    """What each family of links (URL shape; template anchor text such as 'AMP' or 'Share')
    yielded when fetched: a family that keeps answering 4xx or types the crawl does not take, or
    serving copies of pages already fetched, loses priority after a few such pages; one that
    served nothing but copies (`cut_copies`+ pages, 90%) or failures (`cut_failed`+, 95%) is not
    fetched any more; one whose pages keep leading to new URLs of other shapes (listing
    pagination, new ids) gains priority. When `record` is told the shapes of those new URLs
    (`leads`), only the ones of shapes whose fetched pages proved to have content count: a talk
    page's revision links or a thread's reply forms do not make a hub.

    Thin families: when `record` is told the words of each page's main text, a family whose
    pages (`min_fetched`+) average under `thin_share` of the host's average (`min_host_pages`+
    pages) and that is no hub sinks by one (talk, user and profile pages, sign-in forms, a member
    list's pages: reordered behind the content, never cut).

    Failures are also counted in two coarser groups (`groups`) that shapes keep apart: the site
    section (first path segment: /wiki/Perceptron and /wiki/BIRCH are two shapes, one section)
    and, from depth 2, the host's link depth. A group whose fetched pages nearly all failed
    (`min_fetched`+ failures, `group_fail_share`) sinks below live work, as the dead outlinks of
    a mirrored or archived site do; a group is never cut: its evidence only reorders."""

    def __init__(
        self,
        min_fetched: int = 3,
        fail_share: float = 0.5,
        hub_links: float = 5.0,
        cut_copies: int = 5,
        cut_failed: int = 10,
        group_fail_share: float = 0.9,
        thin_share: float = 0.25,
        min_host_pages: int = 5,
    ):
        self.min_fetched, self.fail_share, self.hub_links = min_fetched, fail_share, hub_links
        self.cut_copies, self.cut_failed = cut_copies, cut_failed
        self.group_fail_share = group_fail_share
        self.thin_share, self.min_host_pages = thin_share, min_host_pages
        # fetched, failed (4xx but 429), new URLs queued, copies of content already fetched
        self.stats: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        self.groups_seen: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # fetched, failed
        # family / host -> [pages whose main-text words were counted, words]
        self.words: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.host_words: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.leads: dict[str, Counter[str]] = {}  # family -> shapes of the new URLs it queued

    @staticmethod
    def families(url: str, anchor: str = "") -> list[str]:
        """The URL's shape, and its anchor text when that is short template text."""
        fams = [shape_of(url)]
        words = " ".join(re.sub(r"\d+", "#", (anchor or "").lower()).split())
        if words and len(words) <= 40:
            fams.append(f"{_split(url)[0]} anchor:{words}")
        return fams

    @staticmethod
    def groups(url: str, depth: int | None = None) -> list[str]:
        """The coarse groups a URL's failures count for: its site section ('h/wiki/…', 'h/…' for
        a one-segment path; none for the home page) and, at depth 2 or more, 'h depth N'."""
        parts = urlsplit(url)
        segs = [s for s in parts.path.lower().split("/") if s]
        out = []
        if segs:
            out.append(f"{parts.netloc}/{segs[0]}/…" if len(segs) > 1 else f"{parts.netloc}/…")
        if depth is not None and depth >= 2:
            out.append(f"{parts.netloc} depth {depth}")
        return out

    def record(
        self,
        url: str,
        anchor: str,
        status: int | None,
        new_urls: int,
        unwanted: bool = False,
        depth: int | None = None,
        words: int | None = None,
        leads: list[str] | None = None,
    ) -> None:
        """Count one fetched page: its status and the new URLs it queued (`leads`: their shapes,
        when known), and the words of its main text; a response of a type the crawl does not take
        (a feed, a file) counts as a failure, as a 4xx does."""
        failed = unwanted or (status is not None and 400 <= status < 500 and status != 429)
        counted = words is not None and not failed and status is not None and status < 300
        if counted:
            host_words = self.host_words[_split(url)[0]]
            host_words[0] += 1
            host_words[1] += words
        for fam in self.families(url, anchor):
            st = self.stats[fam]
            st[0] += 1
            st[1] += failed
            st[2] += new_urls
            if counted:
                fam_words = self.words[fam]
                fam_words[0] += 1
                fam_words[1] += words
            if leads is not None:
                shapes = self.leads.setdefault(fam, Counter())
                for shape in leads:
                    if shape in shapes or len(shapes) < 64:
                        shapes[shape] += 1
        for group in self.groups(url, depth):
            self.groups_seen[group][0] += 1
            self.groups_seen[group][1] += failed

    def _dead_groups(self, url: str, depth: int | None) -> list[tuple[str, int, int]]:
        """(group, fetched, failed) of the URL's groups whose fetched pages nearly all failed."""
        out = []
        for group in self.groups(url, depth):
            fetched, failed = self.groups_seen.get(group, (0, 0))
            if failed >= self.min_fetched and failed >= self.group_fail_share * fetched:
                out.append((group, fetched, failed))
        return out

    def copy(self, url: str, anchor: str = "") -> None:
        """A fetched page of these families turned out to be a copy of another page's content."""
        for fam in self.families(url, anchor):
            self.stats[fam][3] += 1

    def adjustment(self, url: str, anchor: str = "", depth: int | None = None) -> float:
        """Priority change for a URL of these families and groups (quantised to quarters), and 0
        before `min_fetched` of a family were fetched."""
        fams = self.families(url, anchor)
        # below any live page (depth and URL shape span about -2.5 .. 2.5)
        penalty = min(
            [-4.0 * failed / fetched for _, fetched, failed in self._dead_groups(url, depth)]
            + [0.0]
        )
        for fam in fams:
            fetched, failed, _, copies = self.stats.get(fam, (0, 0, 0, 0))
            bad = min(fetched, failed + copies)
            # `min_fetched` bad pages, not merely a share of a few: a URL queued while its family
            # is down stays ranked so until it is next looked at
            if bad >= max(self.min_fetched, self.fail_share * fetched):
                # below any live page (depth and URL shape span about -2.5 .. 2.5)
                penalty = min(penalty, -4.0 * bad / fetched)
        if penalty < 0:
            return round(penalty * 4) / 4
        if self._hub(fams[0]):
            return 0.5
        host = _split(url)[0]
        if any(self._thin(fam, host) and not self._hub(fam) for fam in fams):
            return -1.0
        return 0.0

    def _mean_words(self, key: str, host: bool = False) -> float | None:
        pages, words = (self.host_words if host else self.words).get(key, (0, 0))
        enough = self.min_host_pages if host else self.min_fetched
        return words / pages if pages >= enough else None

    def _thin(self, fam: str, host: str) -> bool:
        """Whether the family's pages carry little main text for this host."""
        mine, theirs = self._mean_words(fam), self._mean_words(host, host=True)
        return mine is not None and theirs is not None and mine < self.thin_share * theirs

    def _hub(self, fam: str) -> bool:
        """Whether the family's pages keep leading to new URLs (`hub_links` a page), counting
        only new URLs of shapes shown to have content when their shapes were recorded."""
        fetched, _, new, _ = self.stats.get(fam, (0, 0, 0, 0))
        if fetched < 2:
            return False
        leads = self.leads.get(fam)
        if leads is not None:
            host = fam.split("/", 1)[0].split(" ", 1)[0]
            new = sum(n for shape, n in leads.items() if self._rich(shape, host))
        return new >= self.hub_links * fetched

    def _rich(self, shape: str, host: str) -> bool:
        """A shape whose fetched pages (`min_fetched`+) had content: not thin, mostly no failures
        or copies."""
        fetched, failed, _, copies = self.stats.get(shape, (0, 0, 0, 0))
        if fetched < self.min_fetched or failed + copies >= self.fail_share * fetched:
            return False
        return self._mean_words(shape) is not None and not self._thin(shape, host)

    def cut(self, url: str, anchor: str = "") -> str | None:
        """Why a URL of a family that served only copies, or only failures, is not worth
        fetching, or None."""
        for fam in self.families(url, anchor):
            fetched, failed, _, copies = self.stats.get(fam, (0, 0, 0, 0))
            if copies >= self.cut_copies and copies >= 0.9 * fetched:
                return (
                    f"trap: copies: {copies} of the {fetched} fetched pages of link family {fam} "
                    "had the same main content (simhash) as a page already fetched under its "
                    "canonical or a shorter URL (print, AMP, view or session copies, aliases, "
                    "generated look-alikes)"
                )
            if failed >= self.cut_failed and failed >= 0.95 * fetched:
                return (
                    f"trap: dead links: {failed} of the {fetched} fetched pages of link family "
                    f"{fam} answered 4xx or a type the crawl does not take"
                )
        return None

    def why(self, url: str, anchor: str = "", depth: int | None = None) -> str:
        """The adjustment's evidence, for priority_reasons."""
        parts = []
        for fam in self.families(url, anchor):
            fetched, failed, new, copies = self.stats.get(fam, (0, 0, 0, 0))
            if fetched:
                pages, words = self.words.get(fam, (0, 0))
                mean = f", {words // pages} words a page" if pages else ""
                parts.append(
                    f"{fam}: {failed} of {fetched} fetched failed, {copies} copies, {new} new "
                    f"URLs{mean}"
                )
        for group, fetched, failed in self._dead_groups(url, depth):
            parts.append(f"{group}: {failed} of {fetched} fetched failed")
        return "; ".join(parts)


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
        self.calendar_parent: dict[str, str] = {}  # date page -> the date page that linked it
        self.calendar_dry: dict[str, int] = {}  # fetched date page -> unproductive ones in a row
        self.max_dry_calendar = 3
        self.sort_variants: Counter[str] = Counter()  # listing (sort params removed) -> URLs
        # Every URL's key and its keys with one parameter removed, as hashes (one set entry per
        # URL and parameter: strings would cost ~100 bytes each on a big crawl).
        self.bases: set[int] = set()
        self.session_keys: dict[tuple[str, str], str] = {}  # (host, key) -> evidence
        self.token_paths: dict[tuple[str, str, str], set[str]] = {}
        self.token_values: Counter[tuple[str, str]] = Counter()
        # (scope: the URL's shape without the parameter, parameter) -> [same, different]
        self.param_votes: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        self.link_tokens: dict[tuple[str, str, str], set[str]] = {}  # (host, key, token) -> paths
        self.key_tokens: dict[tuple[str, str], tuple[set[str], set[str]]] = {}  # values, paths
        self.families = FamilyStats()
        self.host_prints: dict[str, dict[int, str]] = {}  # host -> main-content simhash -> URL
        self.short_prints: dict[str, dict[int, str]] = {}  # host -> visible-text hash -> URL
        self.host_blocks: dict[str, Counter[int]] = {}  # host -> block hash -> pages with it
        self.variant_prints: dict[int, int] = {}  # hash(URL key minus a parameter) -> simhash
        self.deepening: dict[str, int] = {}
        self.shape_parent: dict[str, str] = {}  # URL -> its parent, when of the same shape
        self.run: dict[str, int] = {}  # fetched URL -> length of its near-duplicate chain
        self.page_prints: dict[str, int] = {}  # fetched URL -> simhash of its text
        # shape -> [judged pages reached from a page of the shape, how many near-identical to it]
        self.shape_pages: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.shape_urls: Counter[str] = Counter()
        self.pattern_counts = self.shape_urls  # the per-shape counts (older name)
        # (host, path segments) -> [redirects of /x to /x/, pages served at a slashless /x]
        self.slash_votes: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
        self.canonical_of: dict[str, str] = {}  # fetched URL -> the other URL it names canonical
        self.paged_listings: set[str] = set()  # paths seen paged by a number segment (/news/2)
        self.alias_votes: dict[str, Counter[str]] = {}  # origin -> origins it redirected to
        self.served_origins: set[str] = set()  # origins that answered a page of their own
        self.self_canonical: set[str] = set()  # fetched URLs that name themselves canonical
        self.facet_keys: dict[tuple[str, str, str], str] = {}  # (host, path, key) -> evidence
        # (scope, parameter) -> fetched pages whose rel=canonical drops its numeric value
        self.canonical_numbers: Counter[tuple[str, str]] = Counter()
        # listing (URL without its numbers) -> main-text hashes of its pages that led somewhere
        # new, and of those that did not
        self.listing_texts: dict[str, tuple[set[int], set[int]]] = {}
        self.empty_run: dict[str, int] = {}  # a page past the end of its listing -> evidence
        # (scope, parameter) -> fetched variants whose main text differed from the first one
        self.param_differs: Counter[tuple[str, str]] = Counter()
        # (scope, parameter) -> fetched variants with a word value near-identical to another
        self.word_same: Counter[tuple[str, str]] = Counter()
        self.min_canonical_numbers = 3
        # host -> (prefix template, replacement) -> evidence (`_learn_path_alias`)
        self.path_aliases: dict[str, dict[tuple[tuple[str, ...], tuple[str, ...]], dict]] = {}
        self.min_path_alias = 3

    # --- canonical addresses -----------------------------------------------------------
    @staticmethod
    def _slash_key(path: str) -> tuple[int, bool]:
        """(path segments, whether the path could take a trailing slash: it has none and its
        last segment is no file name)."""
        segs = [x for x in path.split("/") if x]
        return len(segs), bool(segs) and not path.endswith("/") and "." not in segs[-1]

    def note_redirect(self, url: str, target: str) -> None:
        """A fetched URL answered with a redirect to `target` (evidence for `slashed` and
        `aliased`)."""
        host, path, pairs = _split(url)
        if _split(target) == (host, path + "/", pairs):
            n, _ = self._slash_key(path)
            self.slash_votes[(host, n)][0] += 1
        a, b = urlsplit(url), urlsplit(target)
        if (a.scheme, a.netloc) != (b.scheme, b.netloc) and (a.path, a.query) == (b.path, b.query):
            origin = f"{a.scheme}://{a.netloc}"
            if origin in self.alias_votes or len(self.alias_votes) < 100_000:
                self.alias_votes.setdefault(origin, Counter())[f"{b.scheme}://{b.netloc}"] += 1

    def note_served(self, url: str) -> None:
        """A fetched URL answered with a page of its own (counter-evidence for `slashed` and
        `aliased`)."""
        host, path, _ = _split(url)
        n, could = self._slash_key(path)
        if could:
            self.slash_votes[(host, n)][1] += 1
        if len(self.served_origins) < 1_000_000:
            parts = urlsplit(url)
            self.served_origins.add(f"{parts.scheme}://{parts.netloc}")

    def aliased(self, url: str) -> tuple[str, str | None]:
        """(the URL on the origin its origin always redirects to, why) -- or (url, None). An
        origin (`http://example.com`) that redirected 3+ paths each to the same path and query
        on one other origin (`https://www.example.com`), every time, and served no page itself
        would redirect this URL too (apex to www, http to https, an old domain to the new)."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        votes = self.alias_votes.get(origin)
        if not votes or origin in self.served_origins:
            return url, None
        (target, n), total = votes.most_common(1)[0], sum(votes.values())
        if n < 3 or n != total:
            return url, None
        why = f"origin alias: {origin} redirected {n} URLs each to the same path on {target}"
        scheme, netloc = target.split("://", 1)
        return urlunsplit((scheme, netloc, parts.path, parts.query, "")), why

    def rewrite(self, url: str) -> tuple[str, str | None]:
        """`aliased`, `path_aliased`, then `slashed`: the address a redirect would lead to, or the
        page's rel=canonical would name, learned from this crawl's redirects and canonical links;
        (url, None) when nothing applies."""
        url, alias = self.aliased(url)
        url, moved = self.path_aliased(url)
        url, slash = self.slashed(url)
        why = "; ".join(w for w in (alias, moved, slash) if w)
        return url, why or None

    def slashed(self, url: str) -> tuple[str, str | None]:
        """(the URL with the trailing slash its host always adds, why) -- or (url, None). A host
        that redirected 3+ slashless paths of this depth to their '/' form and served no such
        path itself (WordPress, Django's APPEND_SLASH, Apache's DirectorySlash) would answer this
        one with a redirect too: a request spent on nothing."""
        parts = urlsplit(url)
        n, could = self._slash_key(parts.path)
        if not could:
            return url, None
        redirects, served = self.slash_votes.get((parts.netloc, n), (0, 0))
        if redirects < 3 or served * 10 > redirects:
            return url, None
        why = (
            f"trailing slash: this host redirected {redirects} slashless paths of {n} segments "
            f"to their '/' form (served {served})"
        )
        return urlunsplit((parts.scheme, parts.netloc, parts.path + "/", parts.query, "")), why

    def canonical(self, url: str) -> tuple[str, str | None]:
        """(the URL without the parameters that only re-present its document, why) -- or
        (url, None) when it has none. Dropped: session ids (by name, as `;name=` path parameters,
        or a random token this host has put on many unrelated links), sort/comment-order/print
        and other view parameters (by name; view-like keys only with presentation values), and
        parameters fetched pages of this URL's shape (or path) showed not to change the main
        content or whose rel=canonical drops them (a number only after `min_canonical_numbers`
        pages, never a page number); and the trailing slash the host always adds, on the origin
        its origin always redirects to, under the path prefix its canonical links name for this
        one (`rewrite`)."""
        url, slash = self.rewrite(url)
        parts = urlsplit(url)
        path, why = parts.path, [slash] if slash else []
        if "(" in path and _PATH_SESSION_SEG.search(path):
            path = _PATH_SESSION_SEG.sub("", path) or "/"
            why.append("session path segment /(S(...))/")
        if ";" in path:

            def drop(m: re.Match) -> str:
                name, value = unquote(m.group(1)), unquote((m.group(2) or "")[1:])
                if name.lower() in SESSION_NAMES or is_token(value) or is_token(name):
                    why.append(f"session path parameter ';{name}='")
                    return ""
                return m.group(0)

            path = _PATH_PARAM.sub(drop, path)
        if not parts.query and not why:
            return url, None
        items = [i for i in parts.query.split("&") if i]
        names = [unquote(i.partition("=")[0]) for i in items]
        kept = []
        for item, name in zip(items, names, strict=True):
            reason = self._strip_reason(
                parts.netloc, path, name, unquote(item.partition("=")[2]), names
            )
            if reason:
                why.append(reason)
            else:
                kept.append(item)
        if not why:
            return url, None
        clean = urlunsplit((parts.scheme, parts.netloc, path or "/", "&".join(kept), ""))
        return clean, "; ".join(dict.fromkeys(why))

    def _strip_reason(
        self, host: str, path: str, name: str, value: str, names: list[str]
    ) -> str | None:
        low = name.lower()
        if low in SESSION_NAMES:
            return f"session parameter {name!r} (a session-id name)"
        if (host, name) in self.session_keys:
            return self.session_keys[(host, name)]
        if low in VARIANT_NAMES or _VARIANT_NAME.fullmatch(low):
            return f"sort/order/view parameter {name!r} (re-presents the same document)"
        if low in PRESENTATION_KEYS and value.lower() in PRESENTATION_VALUES:
            return f"sort/order/view parameter {name}={value} (a presentation of the document)"
        scope = _scope(host, path, [n for n in names if n != name])
        for where in (scope, _scope(host, path, [])):
            same, different = self.param_votes.get((where, name), (0, 0))
            if value.isdigit():
                # ids and page numbers: a few look-alike pages never erase an id space; pages
                # whose rel=canonical drops the number do (`min_canonical_numbers` of them), and
                # a name shown neutral under word values is neutral under a number too (a random
                # hex id that happens to be all digits)
                named = self.canonical_numbers.get((where, name), 0)
                differs = self.param_differs.get((where, name), 0)
                if named >= self.min_canonical_numbers and named >= 4 * differs:
                    return (
                        f"parameter {name!r} that does not select the document of {where} "
                        f"({named} fetched pages name the URL without it canonical, {differs} "
                        "variants had other text)"
                    )
                worded = self.word_same.get((where, name), 0)
                if worded >= 3 and worded >= 4 * differs and low not in PAGE_PARAMS:
                    return (
                        f"parameter {name!r} that does not change the main content of {where} "
                        f"under any value ({worded} fetched variants with word values "
                        f"near-identical, {differs} with other text)"
                    )
            elif same >= 3 and same >= 4 * different:
                return (
                    f"parameter {name!r} that does not change the main content of {where} "
                    f"({same} fetched variants near-identical, {different} different)"
                )
        return None

    def _learn_tokens(self, host: str, links: list[str] | tuple[str, ...]) -> None:
        """A session id handed out on a page rides on many of its links: one random token under
        one key on 6+ paths in 3+ top-level sections makes that key a session id on this host
        (a content id such as ?doc=<hash> names one document, linked from a few related paths)."""
        if len(self.link_tokens) > 50_000:  # content hashes by the thousand: start over
            self.link_tokens.clear()
        for link in links:
            l_host, l_path, pairs = _split(link)
            if l_host != host:
                continue
            for k, v in pairs:
                if (host, k) in self.session_keys or not is_token(v):
                    continue
                self._rotating(host, k, v, l_path)
                paths = self.link_tokens.setdefault((host, k, v), set())
                if len(paths) >= 64:
                    continue
                paths.add(l_path)
                tops = {p.split("/")[1] if p.count("/") > 1 else "" for p in paths}
                if len(paths) >= 6 and len(tops) >= 3:
                    self.session_keys[(host, k)] = (
                        f"session-like parameter {k!r} (one random token on {len(paths)} paths "
                        f"of {len(tops)} sections)"
                    )
                    for stale in [t for t in self.link_tokens if t[:2] == (host, k)]:
                        del self.link_tokens[stale]

    def _learn_return_addresses(self, url: str, links: list[str] | tuple[str, ...]) -> None:
        """A parameter whose value is the address of the very page that links it (`/wp-login.php?
        redirect_to=<this page>`, `/login?return=`, `?next=`, a share endpoint's `?u=`) is a return
        address: every page links its own variant of one form, so the key is dropped on this host
        (one page is evidence enough: a parameter selecting content does not name its referrer)."""
        host, path, pairs = _split(url)
        own = {url, path, path + ("?" + urlsplit(url).query if pairs else "")}
        own |= {u.rstrip("/") for u in own if u.rstrip("/")}
        for link in links:
            l_host, l_path, l_pairs = _split(link)
            if l_host != host or not l_pairs:
                continue
            for k, v in l_pairs:
                if (host, k) in self.session_keys or len(v) < 2:
                    continue
                value = unquote(v) if "%" in v else v
                bare = re.sub(r"^https?://[^/?#]+", "", value, flags=re.I)
                if value in own or value.rstrip("/") in own or bare in own:
                    self.session_keys[(host, k)] = (
                        f"return-address parameter {k!r} (its value is the address of the page "
                        f"that links it, here {path[:80]})"
                    )

    def _learn_from_canonical(self, url: str, canonical: str) -> None:
        """A page whose `<link rel=canonical>` is its own path without some parameters says those
        parameters do not select its document (`?replytocom=`, `?relatedposts_hit=..&..`, a
        tracking tag, Shopify's `?variant=N` and `?pr_rec_pid=N`): each counts as fetched variants
        that were near-identical, in the scope of this URL's shape and in that of its path alone
        (the name, whatever other parameters ride along). One page is enough for a parameter with
        a word or token value; a number takes `min_canonical_numbers` pages, and a page-number
        parameter (`PAGE_PARAMS`) never counts (sites point page 2 of a listing at page 1). A
        canonical elsewhere says nothing about parameters."""
        host, path, pairs = _split(url)
        c_host, c_path, c_pairs = _split(canonical)
        if not pairs or (c_host, c_path) != (host, path) or not set(c_pairs) < set(pairs):
            return
        dropped = [(k, v) for k, v in pairs if (k, v) not in set(c_pairs)]
        names = [k for k, _ in pairs]
        for k, v in dropped:
            numeric = v.isdigit()
            if k.lower() in PAGE_PARAMS and (numeric or _is_first_page(k, v)):
                continue
            for scope in {_scope(host, path, [n for n in names if n != k]), _scope(host, path, [])}:
                if numeric:
                    if len(self.canonical_numbers) < 100_000:
                        self.canonical_numbers[(scope, k)] += 1
                    continue
                votes = self.param_votes[(scope, k)]
                votes[0] = max(votes[0], 3 + 4 * votes[1])
                self.word_same[(scope, k)] = max(self.word_same[(scope, k)], 3)

    def _learn_path_alias(self, url: str, canonical: str) -> None:
        """A page whose rel=canonical is its own path under another prefix, with the same query
        (`/collections/shirts/products/x` -> `/products/x`, `/en/latest/a/b.html` ->
        `/en/stable/a/b.html`), is evidence that the prefix is an alias: the rule (prefix ->
        replacement) counts a confirmation as written, and with one prefix segment that is not
        carried over generalised (`/collections/*` -> ``, `/en/*` -> `/en/stable`). A page the
        rule matches whose canonical names another URL (itself, where the rule would move it)
        contradicts it. `path_aliased` applies the rules that earned their evidence."""
        host, path, pairs = _split(url)
        _, c_path, c_pairs = _split(canonical)
        rules = (
            self.path_aliases.setdefault(host, {})
            if host in self.path_aliases or len(self.path_aliases) < 10_000
            else None
        )
        if rules is None:
            return
        segs = [x for x in path.split("/") if x]
        for rule, ev in rules.items():  # what the rules already say about this page
            target = self._alias_target(segs, path, rule, ev, active=False)
            if target is not None and target != c_path and canonical != url:
                ev["bad"] += 1
            elif target is not None and canonical == url and target != path:
                ev["bad"] += 1
        if path == c_path or sorted(pairs) != sorted(c_pairs):
            return
        c_segs = [x for x in c_path.split("/") if x]
        k = 0
        while k < min(len(segs), len(c_segs)) and segs[-1 - k] == c_segs[-1 - k]:
            k += 1
        prefix, repl, rest = segs[: len(segs) - k], c_segs[: len(c_segs) - k], segs[len(segs) - k :]
        if not k or not prefix or len(prefix) > 4 or len(repl) > 4:
            return
        if path.endswith("/") != c_path.endswith("/"):
            return
        shape = tuple(_shape_segment(x.lower()) for x in rest)
        templates = [(tuple(prefix), None)]
        templates += [
            (tuple(prefix[:i]) + ("*",) + tuple(prefix[i + 1 :]), prefix[i])
            for i in range(len(prefix))
            if prefix[i] not in repl
        ]
        for tpl, value in templates:
            key = (tpl, tuple(repl))
            ev = rules.get(key)
            if ev is None:
                if len(rules) >= 256:
                    continue
                ev = rules[key] = {
                    "n": 0,
                    "bad": 0,
                    "values": set(),
                    "shapes": set(),
                    "lens": set(),
                }
            ev["n"] += 1
            if value is not None and len(ev["values"]) < 16:
                ev["values"].add(value)
            if len(ev["shapes"]) < 16:
                ev["shapes"].add(shape)
            ev["lens"].add(len(rest))

    def _alias_target(
        self,
        segs: list[str],
        path: str,
        rule: tuple[tuple[str, ...], tuple[str, ...]],
        ev: dict,
        active: bool = True,
    ) -> str | None:
        """The path `rule` moves `segs` to, or None when it does not match: the prefix, then a
        rest of the path of a shape the rule was confirmed on (or of a confirmed length once it
        was confirmed on 2+ shapes); `active`, the rule must also have earned its evidence:
        `min_path_alias` confirmations, none contradicting, 2+ values for a generalised
        segment."""
        tpl, repl = rule
        if len(segs) <= len(tpl):
            return None
        if any(t != "*" and t != x for t, x in zip(tpl, segs, strict=False)):
            return None
        rest = segs[len(tpl) :]
        shape = tuple(_shape_segment(x.lower()) for x in rest)
        if shape not in ev["shapes"] and (len(ev["shapes"]) < 2 or len(rest) not in ev["lens"]):
            return None  # another kind of page under the prefix (a collection's tag filter)
        if active:
            if ev["n"] < self.min_path_alias or ev["bad"]:
                return None
            if "*" in tpl and len(ev["values"]) < 2:
                return None
        return "/" + "/".join([*repl, *rest]) + ("/" if path.endswith("/") else "")

    def path_aliased(self, url: str) -> tuple[str, str | None]:
        """(the URL under the path prefix this host's rel=canonical links name for its prefix,
        why) -- or (url, None). Learned by `_learn_path_alias`: Shopify's product pages under
        each collection (`/collections/*/products/x` -> `/products/x`), a docs host's versions
        (`/en/latest/...` -> `/en/stable/...`). A URL that named itself canonical is kept."""
        host, path, _ = _split(url)
        rules = self.path_aliases.get(host)
        if not rules or url in self.self_canonical:
            return url, None
        segs = [x for x in path.split("/") if x]
        for rule, ev in rules.items():
            target = self._alias_target(segs, path, rule, ev)
            if target is not None and target != path:
                parts = urlsplit(url)
                tpl, repl = rule
                why = (
                    f"path alias: {ev['n']} fetched pages under /{'/'.join(tpl)}/ named the same "
                    f"path under /{'/'.join(repl)}{'/' if repl else ''} canonical"
                )
                return urlunsplit((parts.scheme, parts.netloc, target, parts.query, "")), why
        return url, None

    def _rotating(self, host: str, key: str, value: str, path: str) -> None:
        """Random tokens under one key that change from link to link across many documents of
        several sections (3+ values on 6+ paths in 2+ sections) are a session id or cache buster,
        even when a page puts one on a single link; a content id is linked from its document's
        few paths."""
        seen = self.key_tokens.setdefault((host, key), (set(), set()))
        values, paths = seen
        if len(values) < 8:
            values.add(value)
        if len(paths) < 16:
            paths.add(path)
        tops = {p.split("/")[1] if p.count("/") > 1 else "" for p in paths}
        if len(values) >= 3 and len(paths) >= 6 and len(tops) >= 2:
            self.session_keys[(host, key)] = (
                f"session-like parameter {key!r} (random tokens, {len(values)}+ values on "
                f"{len(paths)}+ paths of {len(tops)} sections)"
            )
            del self.key_tokens[(host, key)]

    def _own_blocks(self, host: str, text: str) -> str:
        """The page's text without the blocks (lines of `main_text`) that 3+ earlier pages of
        the host also had (a site's boilerplate the markup did not name), unless that would
        leave fewer than `min_words` words (identical generated pages stay identical)."""
        if "\n" not in text:
            return text
        seen = self.host_blocks.setdefault(host, Counter())
        lines = text.split("\n")
        keys = [hash(line) for line in lines]
        kept = [line for line, k in zip(lines, keys, strict=True) if seen[k] < 3]
        if len(seen) < 500_000:
            seen.update(set(keys))
        own = "\n".join(kept)
        return own if len(_WORD.findall(own)) >= self.min_words else text

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
        dry = self.calendar_dry.get(parent, 0) if parent is not None and cal is not None else 0
        if dry >= self.max_dry_calendar:
            return (
                f"trap: calendar walk: linked from the last of {dry} date pages of {cal[0]} in a "
                "row that led to no new page other than date pages (empty months, an endless "
                "next/previous walk)"
            )
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
        reason = self._facet_reason(host, path, pairs, parent)
        if reason:
            return reason
        # Content evidence about a parameter only cuts variants reached from a variant of the same
        # page (a calendar's next day, a listing's other sort order), never a page an index
        # links to (item?id=N from /news).
        from_variant = parent is not None and _split(parent)[:2] == (host, path)
        reason = self._param_reason(host, path, pairs, from_variant)
        if reason:
            return reason
        shape = shape_of(url)
        if parent in self.empty_run and pagination_step(url, parent):
            return (
                f"trap: pages past the end of a listing: linked from {parent[:160]}, which had "
                "the same text as another page of its listing and, like it, led to no new page, "
                f"after {self.empty_run[parent]} pages of other text that did"
            )
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

    @staticmethod
    def _facet_values(pairs: tuple[tuple[str, str], ...]) -> dict[str, frozenset[str]]:
        """Per parameter, the set of values it selects: one value or a list (`f=topic:a,year:2021`,
        `tags=a+b`), a repeated key (`topic=a&topic=b`) or indexed keys (`f[0]=..&f[1]=..`)."""
        out: dict[str, set[str]] = defaultdict(set)
        for k, v in pairs:
            out[_KEY_INDEX.sub("", k)].update(t for t in _FACET_SPLIT.split(v) if t)
        return {k: frozenset(v) for k, v in out.items()}

    def _facet_reason(
        self, host: str, path: str, pairs: tuple[tuple[str, str], ...], parent: str | None
    ) -> str | None:
        """Faceted search: a listing whose links each add (or remove) one value to a parameter's
        selection spans every combination of the values, each listing what the single-value
        pages already list. A URL selecting 2+ values of a parameter is cut when the page of the
        same path that links it selects the same values but one (and from then on, on this
        host and path, whatever links it)."""
        if not pairs:
            return None
        mine = {k: v for k, v in self._facet_values(pairs).items() if len(v) >= 2}
        for key, values in mine.items():
            if (host, path, key) in self.facet_keys:
                return f"trap: {self.facet_keys[(host, path, key)]}; here {len(values)} values"
        if not mine or parent is None:
            return None
        p_host, p_path, p_pairs = _split(parent)
        if (p_host, p_path) != (host, path):
            return None
        theirs = self._facet_values(p_pairs)
        for key, values in mine.items():
            if len(values ^ theirs.get(key, frozenset())) == 1:
                self.facet_keys[(host, path, key)] = (
                    f"facet combinations: links on {host}{path} add one value to parameter "
                    f"{key!r} at a time (every combination of its values is another listing of "
                    "what the single values list)"
                )
                return f"trap: {self.facet_keys[(host, path, key)]}; here {len(values)} values"
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
            scope = _scope(host, path, [p[0] for p in rest])
            evidence = self._neutral(host, k, from_variant, scope)
            if evidence:
                return (
                    f"trap: {evidence} multiplies {host}{path}: a variant without or with another "
                    f"{k}= is already known ({k}={v[:24]})"
                )
        return None

    def _neutral(
        self, host: str, key: str, content_evidence: bool = True, scope: str = ""
    ) -> str | None:
        """Why `key` does not select content on `host` (session id, or fetched evidence in its
        scope: URLs of the same shape), or None."""
        if key.lower() in SESSION_NAMES:
            return f"session parameter {key!r} (a session-id name)"
        if (host, key) in self.session_keys:
            return self.session_keys[(host, key)]
        if not content_evidence:
            return None
        same, different = self.param_votes.get((scope, key), (0, 0))
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
            if parent is not None and calendar_family(parent) is not None:
                self.calendar_parent[url] = parent
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

    def observe(
        self,
        url: str,
        text: str,
        links: list[str] | tuple[str, ...] = (),
        canonical: str | None = None,
        body: bytes | str | None = None,
    ) -> str | None:
        """Feed a fetched page's main text (`main_text`), outlinks (before its outlinks are
        checked), `<link rel=canonical>` and markup (`body`, optional). When its main content
        (10+ words) is one this host already served under another URL, returns the URL that is
        the copy (print, AMP, view or session variant): the longer of the two. A page with a
        shorter main text (a sign-in form, a list of names as links) is judged so by its whole
        visible text (`visible_text` of `body`, 10+ words), which must be the same. The first page
        of a listing under its number (`?page=1`, `?start=0`: `first_page_variant`) is never
        returned as a copy of the bare listing, nor the reverse: that copy is by design.

        A `<link rel=canonical>` naming another URL of the host teaches which parameters do not
        select the document (`_learn_from_canonical`) and which path prefixes are aliases of
        another (`_learn_path_alias`)."""
        host, path, pairs = _split(url)
        self._learn_tokens(host, links)
        self._learn_return_addresses(url, links)
        if canonical == url and len(self.self_canonical) < 200_000:
            self.self_canonical.add(url)
        elif canonical and _split(canonical)[0] == host:
            self._learn_from_canonical(url, canonical)
            if len(self.canonical_of) < 200_000:
                self.canonical_of[url] = canonical
        if canonical and _split(canonical)[0] == host:
            self._learn_path_alias(url, canonical)
        links = [self.canonical(link)[0] for link in links]  # as they will be queued
        fp, n_words = fingerprint(self._own_blocks(host, text))
        # A page of a few words ('link to 7 link to 8') is too short to judge near-identity by
        # simhash: it counts for runs (if identical) only, not for a parameter's or a shape's
        # statistics.
        judged = n_words >= self.min_words
        # Calendar pages earn budget when they lead somewhere new that is not another date page.
        cal = calendar_family(url)
        if cal is not None:
            led = False
            for link in links:
                if (
                    link not in self.seen
                    and urlsplit(link).netloc == host
                    and calendar_family(link) is None
                ):
                    self.calendar[cal[0]][1] += 1
                    led = True
                    break
            before = self.calendar_parent.pop(url, None)
            self.calendar_dry[url] = 0 if led else self.calendar_dry.get(before, 0) + 1
        # A page that led to new URLs of another shape (an index page listing articles) is
        # doing its job even if its text looks like its neighbours' ("Story 17", "Story 18"):
        # it is never evidence of a trap.
        # Links to the page's own path with its parameters re-valued or others added (the next
        # page, sort orders of one listing: `own_variant`) lead nowhere else.
        shape = shape_of(url)
        productive = any(
            link not in self.seen
            and _split(link)[0] == host
            and shape_of(link) != shape
            and not own_variant(link, url)
            for link in links
        )
        # Parameters: does a variant differing in one parameter look like an earlier variant?
        # A short page (a sign-in form, a notice: 3+ words) votes too, when identical and the
        # parameter is not a number (two short pages of ?id=1 and ?id=2 may be two stubs).
        short = 3 <= n_words < self.min_words
        own = hash(_key(host, path, pairs))
        if judged or short:
            self.variant_prints.setdefault(own, fp)
        for k, v in pairs if judged or short else ():
            if (short and v.isdigit()) or _is_first_page(k, v):
                continue  # `?page=1` is the bare listing by design: no vote about `page`
            rest = [p for p in pairs if p != (k, v)]
            base = hash(_key(host, path, rest))
            first = self.variant_prints.get(base)
            if first is None:
                self.variant_prints[base] = fp
            else:
                limit = self.near_limit(n_words) if judged else 0
                same = hamming(first, fp) <= limit and not productive
                scope = _scope(host, path, [p[0] for p in rest])
                self.param_votes[(scope, k)][0 if same else 1] += 1
                if hamming(first, fp) > limit and len(self.param_differs) < 100_000:
                    self.param_differs[(scope, k)] += 1
                if same and not v.isdigit() and len(self.word_same) < 100_000:
                    self.word_same[(scope, k)] += 1
        # Runs: a page near-identical to the page of the same shape it was reached from (pages of
        # a few words must be identical: one changed word is a different short page). Per shape,
        # the share of such pages among those reached from a page of the shape (judged pages).
        parent = self.shape_parent.pop(url, None)
        # Pages past a listing's end: a pager that links pages ahead (Dawn's `?page=N+2`) walks on
        # through empty pages, each the same text as the one before and leading nowhere new.
        # Its pages with content led somewhere new; pages past the end share one other text and
        # lead nowhere (a listing that repeats its first page's text is a loop: runs cut it).
        listing = _key(host, path, [p for p in pairs if not p[1].isdigit()])
        texts = self.listing_texts.get(listing)
        if texts is None and len(self.listing_texts) < 100_000:
            texts = self.listing_texts[listing] = (set(), set())
        if texts is not None:
            full, empty = texts
            mine = hash(text)
            if productive:
                if len(full) < 64:
                    full.add(mine)
            elif mine in empty and full and mine not in full:
                self.empty_run[url] = len(full)
            elif len(empty) < 64:
                empty.add(mine)
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
        if not judged:
            return self._short_copy(url, host, body)
        # copies are judged on the whole main text: which blocks count as the host's boilerplate
        # changes as pages come in, a copy's text does not
        whole = fingerprint(text)[0] if "\n" in text else fp
        return self._copy(url, self.host_prints.setdefault(host, {}), whole)

    def _short_copy(self, url: str, host: str, body: bytes | str | None) -> str | None:
        """`observe`'s copy for a page of a few words of main text: the same whole visible text
        (`min_words`+ words, compared exactly) as a page the host served under another URL."""
        if body is None:
            return None
        seen = visible_text(body)
        if len(_WORD.findall(seen, 0, 4000)) < self.min_words:
            return None
        digest = hashlib.blake2b(seen.lower().encode(), digest_size=8).digest()
        return self._copy(url, self.short_prints.setdefault(host, {}), int.from_bytes(digest))

    def _copy(self, url: str, prints: dict[int, str], whole: int) -> str | None:
        first = prints.get(whole)
        if first == url:
            return None  # the same page fetched again
        if first is None:
            if len(prints) < 200_000:
                prints[whole] = url
            return None
        if first_page_variant(first, url):
            # `?page=1` and the bare listing: one page under its two expected addresses, no
            # evidence against the links (numbered pager links) that lead to either
            if len(url) < len(first):
                prints[whole] = url
            return None
        # The copy is the page that names the other one canonical, or names none where the other
        # names itself; else, of two addresses of one document (`_variants`: /amp/story/5 and
        # /story/5, ?id=5&view=print and ?id=5), the longer; else the one of a shape with twice
        # the other's URLs (a forum's ?p=N, one per post, against its thread's pages); else the
        # one fetched later (neither address says which is the document).
        mine, theirs = url in self.self_canonical, first in self.self_canonical
        if self.canonical_of.get(url) == first or (theirs and not mine):
            return url
        if (
            self.canonical_of.get(first) == url
            or (mine and not theirs)
            or self._multiplies(first, url)
        ):
            prints[whole] = url
            return first
        return url

    def _multiplies(self, first: str, then: str) -> bool:
        """Whether `first`, fetched before `then` with the same content, is the copy of the two."""
        if _variants(first, then):
            return len(first) > len(then)
        return self.shape_urls[shape_of(first)] >= 2 * self.shape_urls[shape_of(then)]
