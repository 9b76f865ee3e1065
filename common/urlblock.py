"""URL blocklists in the UT1 layout and FineWeb's banned-word check on a URL.

Shared by the crawler's frontier (`refinery crawl --blocklist DIR`: a blocked URL is never
fetched) and the filter's first step (`filters.urls`: a blocked page is dropped).

Lists: a directory with one sub-directory per category (`adult/`, `malware/`, `phishing/`, ...),
each holding `domains` and/or `urls` (one entry a line, `#` comments; the layout of the
Université Toulouse 1 lists). A listed domain blocks that host and every sub-domain of it
(`example.com` blocks `www.example.com` and `a.b.example.com`, never `evil-example.com` or
`example.com.evil.net`). A listed URL (`example.com/path`, scheme optional) blocks that URL and
every URL below it at a `/` boundary, after both are normalised as squidGuard does: lowercase,
no scheme, userinfo, port, fragment or leading `www.`, no trailing `/`. Hosts are compared as
lowercase ASCII without a trailing dot; international names as punycode (IDNA 2003 as the
crawler's canonical form writes them, and IDNA 2008 where that differs).

Entries are kept as sorted 64-bit hashes (8 bytes each, plus one byte of category): a list of
millions of domains loads in seconds and costs tens of MB, not a Python set of strings. Lists
are read when a run starts and cached by their files' (size, mtime): edit a list and the next
run reads it, no code changes.

Banned words (FineWeb's URL filter, datatrove `URLFilter`): the URL is split into lowercase
words on anything not a letter or digit; one *hard* word blocks it, two (`soft_threshold`) or
more distinct *soft* words block it, and a *subword* anywhere in the URL with the separators
removed blocks it. The default word lists are written here (`DEFAULT_WORDS`), short and our own.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

LIST_FILES = ("domains", "urls")
DEFAULT_CATEGORIES = ("adult", "malware", "phishing")

# Our own short lists (not a third party's): words that mark a URL as an adult site on their own
# (hard), words that do so only two or more together (soft: each alone has innocent uses: "sex
# education", "live cam"), and stems found inside run-together host names ("freeporntube").
DEFAULT_WORDS: dict[str, tuple[str, ...]] = {
    "hard": (
        "porn",
        "porno",
        "xxx",
        "hentai",
        "nsfw",
        "bdsm",
        "milf",
        "camgirl",
        "camgirls",
        "pornhub",
        "xvideos",
        "erotik",
        "pornografia",
    ),
    "soft": (
        "sex",
        "sexy",
        "nude",
        "nudes",
        "naked",
        "escort",
        "escorts",
        "fetish",
        "adult",
        "hardcore",
        "webcam",
        "cams",
        "hookup",
        "strip",
        "erotic",
        "babes",
    ),
    "subword": ("porn", "xxx", "hentai"),
}

_SPLIT = re.compile(r"[^a-z0-9]+")
_NOT_ALNUM = re.compile(r"[^a-z0-9]")
_WWW = re.compile(r"^www[0-9]*\.")
_ASCII_HOST = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


class BlocklistError(ValueError):
    """A blocklist directory or file that cannot be read (one line: the file and the fix)."""


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def host_forms(host: str) -> list[str]:
    """The spellings a host is compared in: lowercase ASCII, no trailing dot, punycode for an
    international name (IDNA 2003 and, where different, IDNA 2008), IPs in normal form; []
    when it is no host name."""
    # "*.example.com" and ".example.com" (wildcard and squid spellings of a list entry) are the
    # domain example.com, which blocks its sub-domains anyway
    host = host.strip().lstrip("*.").rstrip(".").lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        return []
    if host[-1].isdigit() or ":" in host:  # a name's last label is never all digits
        try:
            return [str(ipaddress.ip_address(host))]
        except ValueError:
            pass
    if host.isascii():
        return [host] if _ASCII_HOST.fullmatch(host) else []
    forms = []
    try:
        forms.append(host.encode("idna").decode("ascii"))
    except UnicodeError:
        pass
    try:
        import idna  # IDNA 2008 (UTS 46), as registries and browsers spell "ß" and "ς"

        alt = idna.encode(host, uts46=True, transitional=False).decode("ascii")
        if alt not in forms:
            forms.append(alt)
    except (ImportError, UnicodeError, ValueError):
        pass
    return [f.lower() for f in forms if _ASCII_HOST.fullmatch(f.lower())]


def _split_url(url: str) -> tuple[str, str] | None:
    """(host, path-and-query) of a URL or a scheme-less list entry; None when it has no host."""
    text = url.strip()
    if "://" not in text[:12]:
        text = "http://" + text.lstrip("/")
    try:
        parts = urlsplit(text)
        host = parts.hostname or ""
    except ValueError:
        return None
    if not host:
        return None
    path = parts.path.rstrip("/")
    if parts.query:
        path += "?" + parts.query
    return host, path


def url_keys(url: str) -> list[str]:
    """Normalised keys of a URL for the `urls` lists: host (no `www.`) + path, lowercase."""
    split = _split_url(url)
    if split is None:
        return []
    host, path = split
    return [_WWW.sub("", h) + path.lower() for h in host_forms(host)]


def _url_prefixes(key: str) -> list[str]:
    """The key and each of its prefixes that ends at a `/` of the path (longest first)."""
    out = [key]
    base, _, query = key.partition("?")
    if query:
        out.append(base)
    head, sep, path = base.partition("/")
    if sep:
        segs = path.split("/")
        out.extend(head + "/" + "/".join(segs[:i]) for i in range(len(segs) - 1, 0, -1))
        out.append(head)
    return out


@dataclass
class Blocklist:
    """Domain and URL lists per category as sorted hashes; `match(url)` says why a URL is blocked."""

    categories: list[str]
    domain_hashes: np.ndarray  # sorted uint64
    domain_cats: np.ndarray  # uint8, index into categories
    url_hashes: np.ndarray
    url_cats: np.ndarray
    source: str = "<generated>"
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # category -> file -> entries
    bad_lines: dict[str, int] = field(default_factory=dict)  # file -> lines that are no entry
    # hashes of the hosts (no `www.`) that have URL entries: other hosts skip the URL lookups
    url_hosts: frozenset[int] = frozenset()
    # host spelling -> its domain verdict (hosts repeat: a crawl has many pages per host)
    _hosts: dict[str, tuple[str, str] | None] = field(default_factory=dict, repr=False)

    @classmethod
    def from_entries(
        cls,
        entries: dict[str, dict[str, list[str]]],
        source: str = "<generated>",
        bad_lines: dict[str, int] | None = None,
    ) -> Blocklist:
        """Build from {category: {"domains": [...], "urls": [...]}} (raw list lines)."""
        cats = sorted(entries)
        if len(cats) > 255:
            raise BlocklistError(f"{source}: {len(cats)} categories; at most 255 are supported")
        arrays: dict[str, tuple[list[int], list[int]]] = {k: ([], []) for k in LIST_FILES}
        counts: dict[str, dict[str, int]] = {}
        bad = dict(bad_lines or {})
        for ci, cat in enumerate(cats):
            counts[cat] = {}
            for kind in LIST_FILES:
                hashes, idx = arrays[kind]
                n = 0
                for line in entries[cat].get(kind, ()):
                    keys = host_forms(line) if kind == "domains" else url_keys(line)
                    if not keys:
                        where = f"{cat}/{kind}"
                        bad[where] = bad.get(where, 0) + 1
                        continue
                    n += 1
                    for k in keys:
                        hashes.append(_hash(k))
                        idx.append(ci)
                counts[cat][kind] = n
        packed = {k: _packed(*arrays[k]) for k in LIST_FILES}
        url_hosts = frozenset(
            _hash(key.split("/", 1)[0].split("?", 1)[0])
            for cat in cats
            for line in entries[cat].get("urls", ())
            for key in url_keys(line)
        )
        return cls(cats, *packed["domains"], *packed["urls"], source, counts, bad, url_hosts)

    def __len__(self) -> int:
        return len(self.domain_hashes) + len(self.url_hashes)

    def _find(self, hashes: np.ndarray, cats: np.ndarray, key: str) -> str | None:
        if not len(hashes):
            return None
        h = _hash(key)
        i = int(hashes.searchsorted(np.uint64(h)))
        if i < len(hashes) and int(hashes[i]) == h:
            return self.categories[int(cats[i])]
        return None

    def _host(self, form: str) -> tuple[str, str] | None:
        """The domain verdict of one host spelling: itself, then every parent domain down to two
        labels (never a bare top-level domain); an IP only as itself."""
        if form in self._hosts:
            return self._hosts[form]
        if len(self._hosts) > 1 << 16:
            self._hosts.clear()
        verdict = None
        labels = form.split(".")
        is_ip = ":" in form or (form[-1].isdigit() and form.replace(".", "").isdigit())
        for i in range(1 if is_ip else max(1, len(labels) - 1)):
            name = ".".join(labels[i:])
            cat = self._find(self.domain_hashes, self.domain_cats, name)
            if cat is not None:
                verdict = cat, f"{'host' if i == 0 else 'domain'} {name}"
                break
        self._hosts[form] = verdict
        return verdict

    def match(self, url: str) -> tuple[str, str] | None:
        """(category, what matched: 'host H', 'domain D' or 'url U') or None when not listed."""
        split = _split_url(url)
        if split is None:
            return None
        host, path = split
        for form in host_forms(host):
            verdict = self._host(form)
            if verdict is not None:
                return verdict
            bare = _WWW.sub("", form)
            if _hash(bare) in self.url_hosts:
                for key in _url_prefixes(bare + path.lower()):
                    cat = self._find(self.url_hashes, self.url_cats, key)
                    if cat is not None:
                        return cat, f"url {key}"
        return None


def _packed(hashes: list[int], idx: list[int]) -> tuple[np.ndarray, np.ndarray]:
    h = np.array(hashes, dtype=np.uint64)
    c = np.array(idx, dtype=np.uint8)
    order = np.argsort(h, kind="stable")
    h, c = h[order], c[order]
    if len(h):  # one entry per hash: the first category in sorted order wins
        keep = np.concatenate(([True], h[1:] != h[:-1]))
        h, c = h[keep], c[keep]
    return h, c


def _read_lines(path: Path) -> list[str]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BlocklistError(
            f"{path}: cannot read the blocklist file ({exc.strerror or exc}); make it readable "
            "or remove it from the list directory"
        ) from None
    lines = data.decode("utf-8", errors="replace").splitlines()
    return [s for s in (ln.strip() for ln in lines) if s and not s.startswith("#")]


def _signature(root: Path) -> tuple:
    sig = []
    for cat in sorted(os.listdir(root)):
        for kind in LIST_FILES:
            p = root / cat / kind
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise BlocklistError(f"{p}: cannot stat the blocklist file ({exc})") from None
            sig.append((cat, kind, st.st_size, st.st_mtime_ns))
    return tuple(sig)


_CACHE: dict[str, tuple[tuple, Blocklist]] = {}


def load_blocklist(root: str | Path, categories: list[str] | None = None) -> Blocklist:
    """Read a UT1-layout directory (cached by its files' size and mtime; re-read when they change).

    `categories`: only these (None: every category directory). Errors are one line naming the
    directory or file and the fix."""
    root = Path(root)
    if not root.is_dir():
        raise BlocklistError(
            f"{root}: blocklist directory not found (expected one sub-directory per category "
            "holding `domains` and/or `urls` files, the UT1 layout)"
        )
    try:
        sig = _signature(root)
    except PermissionError as exc:
        raise BlocklistError(f"{root}: cannot list the blocklist directory ({exc})") from None
    wanted = set(categories) if categories is not None else None
    key = f"{root.resolve()}|{sorted(wanted) if wanted is not None else '*'}"
    hit = _CACHE.get(key)
    if hit is not None and hit[0] == sig:
        return hit[1]
    found = {c for c, *_ in sig}
    if wanted is not None and (missing := sorted(wanted - found)):
        raise BlocklistError(
            f"{root}: no category director{'y' if len(missing) == 1 else 'ies'} "
            f"{', '.join(missing)} with a `domains` or `urls` file (found: "
            f"{', '.join(sorted(found)) or 'none'}); fix urls.categories or the directory"
        )
    if not found:
        raise BlocklistError(
            f"{root}: no category directory with a `domains` or `urls` file (the UT1 layout: "
            "<dir>/<category>/domains)"
        )
    entries: dict[str, dict[str, list[str]]] = {}
    for cat, kind, *_ in sig:
        if wanted is None or cat in wanted:
            entries.setdefault(cat, {})[kind] = _read_lines(root / cat / kind)
    bl = Blocklist.from_entries(entries, source=str(root))
    _CACHE[key] = (sig, bl)
    return bl


def default_entries(per_category: int = 20) -> dict[str, dict[str, list[str]]]:
    """The generated default list: per category, host names under the reserved `.invalid` top
    level domain (RFC 2606: never a real site) and URLs on a reserved `example.net` path.
    Small, for tests and a default that blocks nothing real; point `urls.blocklist_dir` (or the
    crawler's `--blocklist`) at real lists."""
    out: dict[str, dict[str, list[str]]] = {}
    for cat in DEFAULT_CATEGORIES:
        out[cat] = {
            "domains": [f"{cat}-{i:03d}.blocked.invalid" for i in range(per_category)],
            "urls": [f"example.net/blocked/{cat}/{i:03d}" for i in range(per_category)],
        }
    return out


def default_blocklist() -> Blocklist:
    """The generated default list (`default_entries`) as a Blocklist."""
    return Blocklist.from_entries(default_entries())


def write_lists(root: str | Path, entries: dict[str, dict[str, list[str]]]) -> Path:
    """Write entries in the UT1 layout (`root/<category>/domains`, `.../urls`)."""
    root = Path(root)
    for cat, files in entries.items():
        (root / cat).mkdir(parents=True, exist_ok=True)
        for kind, lines in files.items():
            (root / cat / kind).write_text("".join(f"{x}\n" for x in lines))
    return root


@dataclass(frozen=True)
class BannedWords:
    """FineWeb's banned-word check on a URL: hard words, soft words (>= soft_threshold), subwords."""

    hard: frozenset[str]
    soft: frozenset[str]
    subwords: tuple[str, ...]
    soft_threshold: int = 2

    @classmethod
    def default(cls, soft_threshold: int = 2) -> BannedWords:
        """The generated default words (`DEFAULT_WORDS`)."""
        return cls.from_lists(DEFAULT_WORDS, soft_threshold)

    @classmethod
    def from_lists(cls, lists: dict[str, tuple[str, ...] | list[str]], soft_threshold: int = 2):
        """Words are lowercased and stripped of anything but letters and digits."""

        def norm(words):
            return [w for w in (_NOT_ALNUM.sub("", x.lower()) for x in words) if w]

        return cls(
            frozenset(norm(lists.get("hard", ()))),
            frozenset(norm(lists.get("soft", ()))),
            tuple(sorted(set(norm(lists.get("subword", ()))))),
            soft_threshold,
        )

    @classmethod
    def load(cls, root: str | Path, soft_threshold: int = 2) -> BannedWords:
        """Read `hard.txt`, `soft.txt`, `subword.txt` (one word a line; a missing file: none)."""
        root = Path(root)
        if not root.is_dir():
            raise BlocklistError(
                f"{root}: banned-word directory not found (expected hard.txt, soft.txt, "
                "subword.txt, one word a line); fix urls.words_dir"
            )
        lists = {
            k: _read_lines(root / f"{k}.txt") if (root / f"{k}.txt").exists() else []
            for k in ("hard", "soft", "subword")
        }
        return cls.from_lists(lists, soft_threshold)

    def match(self, url: str) -> tuple[str, str] | None:
        """(kind, words) when the URL is banned: kind is banned_word, soft_banned_words or
        banned_subword; None otherwise."""
        low = url.lower()
        words = set(_SPLIT.split(low))
        hard = sorted(words & self.hard)
        if hard:
            return "banned_word", hard[0]
        soft = sorted(words & self.soft)
        if len(soft) >= self.soft_threshold:
            return "soft_banned_words", ",".join(soft)
        if self.subwords:
            squashed = _NOT_ALNUM.sub("", low)
            for w in self.subwords:
                if w in squashed:
                    return "banned_subword", w
        return None
