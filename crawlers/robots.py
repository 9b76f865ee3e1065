"""RFC 9309 robots.txt: parse once, answer ``allows(user_agent, url)`` fast, cache per origin.

Parsing follows Google's reference parser (robots.cc) line for line in what it tolerates:
BOM (also partial), CR / LF / CRLF endings, ``#`` comments, a missing colon, directive typos
("dissallow", "useragent", ...), rules before any user-agent ignored, a user-agent line after
rules starting a new group, groups for the same token merged, 16 KiB line cap. Matching is
longest-match with allow winning ties; like Google, a URL is compared as the caller gives it
(pass it percent-encoded, as the crawler's canonicaliser does) against patterns whose non-ASCII
bytes are %-escaped, and a group line's product token is its leading letters, '-' and '_'
(see ``crawlers.robots_match``). No network I/O here: the crawler fetches (following up to
five redirects) and hands the final status and body to ``RobotsTxt.from_response``.

HTTP status mapping (RFC 9309 §2.3.1):
  2xx            parse the body.
  3xx            redirects were not resolved by the crawler: "unavailable" -> allow all.
  4xx            "unavailable" -> allow all, except 429 (rate limiting), which Google treats
                 like 5xx: the server is telling us to back off, so -> disallow all.
  5xx            "unreachable" -> disallow all.
  None           network error or timeout -> disallow all.
"""

from __future__ import annotations

import math
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from crawlers.robots_match import (
    CompiledRules,
    normalize_path,
    normalize_pattern,
    path_params_query,
    product_token,
    robots_line_token,
)

__all__ = [
    "MAX_ROBOTS_BYTES",
    "RobotsCache",
    "RobotsTxt",
    "complete_lines",
    "origin_of",
    "product_token",
]

MAX_ROBOTS_BYTES = 500 * 1024  # RFC 9309 §2.5: parse at least 500 KiB
_MAX_LINE_BYTES = 2083 * 8 - 1  # Google: longer lines are cut here
_BOM = b"\xef\xbb\xbf"
_LINE_SPLIT = re.compile(rb"\r\n|\r|\n")
_WS = " \t\n\v\f\r"
_USER_AGENT_KEYS = ("user-agent", "useragent", "user agent")
_DISALLOW_KEYS = ("disallow", "dissallow", "dissalow", "disalow", "diaslow", "diasllow", "disallaw")
_SITEMAP_KEYS = ("sitemap", "site-map")
_CRAWL_DELAY_KEYS = ("crawl-delay", "crawldelay", "crawl_delay")


@dataclass
class _Group:
    tokens: list[str] = field(default_factory=list)  # lower-cased product tokens; '*' = global
    rules: list[tuple[bool, str]] = field(default_factory=list)
    crawl_delays: list[float] = field(default_factory=list)


def complete_lines(body: bytes) -> bytes:
    """A cut body without its last, partial line: up to the last line end, where CR, LF and CRLF
    each end a line as the parser reads them (b"" when no line is complete). A cut
    'Allow: /priva' of 'Allow: /private' must not be read whole: it would allow more."""
    cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
    return body[: cut + 1]


def _split_key_value(line: str) -> tuple[str, str] | None:
    """Google's GetKeyAndValueFrom: '<key>[ \\t]*:[ \\t]*<value>', colon optional."""
    comment = line.find("#")
    if comment != -1:
        line = line[:comment]
    line = line.strip(_WS)
    sep = line.find(":")
    if sep == -1:
        # People forget the colon ("disallow /"): accept whitespace if exactly two words remain.
        m = re.search(r"[ \t]", line)
        if m is None:
            return None
        sep = m.start()
        if re.search(r"[ \t]", line[sep:].lstrip(" \t")):
            return None
    key = line[:sep].strip(_WS)
    if not key:
        return None
    return key, line[sep + 1 :].strip(_WS)


class RobotsTxt:
    """A parsed robots.txt (or a status-derived policy) answering per-URL crawl decisions."""

    __slots__ = (
        "kind",
        "reason",
        "status",
        "sitemaps",
        "truncated",
        "_groups",
        "_blanket",
        "_compiled",
    )

    def __init__(
        self,
        groups: dict[str, list[_Group]] | None,
        *,
        blanket: bool | None = None,
        kind: str,
        reason: str,
        status: int | None = None,
        sitemaps: list[str] | None = None,
        truncated: bool = False,
    ) -> None:
        if (groups is None) == (blanket is None):
            raise ValueError("RobotsTxt needs either parsed groups or a blanket decision")
        self._groups = groups
        self._blanket = blanket  # status-derived allow-all (True) / disallow-all (False)
        self.kind = kind
        self.reason = reason
        self.status = status
        self.sitemaps: list[str] = sitemaps or []
        self.truncated = truncated
        self._compiled: dict[str, CompiledRules | None] = {}

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def parse(
        cls, body: bytes, *, max_bytes: int = MAX_ROBOTS_BYTES, truncated: bool = False
    ) -> RobotsTxt:
        """Parse a robots.txt body (bytes; content beyond ``max_bytes`` is ignored).

        ``truncated=True`` says the body is only the first bytes of a longer file (the fetcher
        keeps 500 KiB of an oversized one): its last, partial line is dropped, as for a body
        over ``max_bytes``, and the policy is marked truncated.
        """
        if isinstance(body, str):
            raise TypeError("RobotsTxt.parse expects bytes (the raw HTTP body); got str")
        if max_bytes < MAX_ROBOTS_BYTES:
            raise ValueError(f"max_bytes={max_bytes}: RFC 9309 §2.5 requires at least 500 KiB")
        truncated = truncated or len(body) > max_bytes
        if truncated:
            # Drop the partial last line too: a cut "Allow: /private" would become broader.
            body = complete_lines(body[:max_bytes])
        for n in range(len(_BOM), 0, -1):  # Google also skips partial BOMs
            if body.startswith(_BOM[:n]):
                body = body[n:]
                break
        by_token: dict[str, list[_Group]] = {}
        sitemaps: list[str] = []
        current: _Group | None = None
        in_rules = False  # saw an allow/disallow since the last user-agent line
        for raw in _LINE_SPLIT.split(body):
            kv = _split_key_value(raw[:_MAX_LINE_BYTES].decode("utf-8", "surrogateescape"))
            if kv is None:
                continue
            key, value = kv[0].lower(), kv[1]
            if key.startswith(_USER_AGENT_KEYS):
                if current is None or in_rules:
                    current, in_rules = _Group(), False
                token = _agent_value_token(value)
                if token and token not in current.tokens:
                    current.tokens.append(token)
                    by_token.setdefault(token, []).append(current)
            elif key.startswith("allow") or key.startswith(_DISALLOW_KEYS):
                if current is None:
                    continue  # rules before any user-agent line belong to no group
                in_rules = True
                is_allow = key.startswith("allow")
                pattern = normalize_pattern(value)
                current.rules.append((is_allow, pattern))
                if is_allow:
                    slash = pattern.rfind("/")
                    # Google: allowing ".../index.htm(l)" also allows the directory ".../".
                    if slash != -1 and pattern.startswith("/index.htm", slash):
                        current.rules.append((True, pattern[: slash + 1] + "$"))
            elif key.startswith(_SITEMAP_KEYS):
                if value and value not in sitemaps:
                    sitemaps.append(value)
            elif key in _CRAWL_DELAY_KEYS and current is not None:
                delay = _parse_delay(value)
                if delay is not None:
                    current.crawl_delays.append(delay)
        return cls(
            by_token,
            kind="parsed",
            reason="parsed robots.txt" + (" (truncated)" if truncated else ""),
            sitemaps=sitemaps,
            truncated=truncated,
        )

    @classmethod
    def allow_all(cls, reason: str = "no restrictions") -> RobotsTxt:
        """A policy that allows every URL for every agent."""
        return cls(None, blanket=True, kind="allow-all", reason=reason)

    @classmethod
    def disallow_all(cls, reason: str = "everything disallowed") -> RobotsTxt:
        """A policy that disallows every URL (except /robots.txt) for every agent."""
        return cls(None, blanket=False, kind="disallow-all", reason=reason)

    @classmethod
    def from_response(
        cls, status: int | None, body: bytes | None, *, truncated: bool = False
    ) -> RobotsTxt:
        """Policy for a fetched robots.txt: final HTTP status (None = network error) and body
        (``truncated``: only the first bytes of a longer file, see ``parse``)."""
        if status is None:
            return cls(
                None,
                blanket=False,
                kind="network-error",
                reason="robots.txt unreachable (network error or timeout): disallow all",
            )
        if not isinstance(status, int) or not 100 <= status <= 599:
            raise ValueError(
                f"status={status!r}: expected an HTTP status 100-599, or None for a "
                "network error/timeout"
            )
        if 200 <= status < 300:
            parsed = cls.parse(body or b"", truncated=truncated)
            parsed.status = status
            cut = f" (content after {MAX_ROBOTS_BYTES} bytes ignored)" if parsed.truncated else ""
            parsed.reason = f"HTTP {status}: parsed robots.txt{cut}"
            return parsed
        if 300 <= status < 400:
            return cls(
                None,
                blanket=True,
                kind="unavailable-3xx",
                status=status,
                reason=f"HTTP {status}: redirects unresolved, robots.txt unavailable: allow all",
            )
        if status == 429:
            return cls(
                None,
                blanket=False,
                kind="unreachable-429",
                status=status,
                reason="HTTP 429: rate limited, treated like 5xx: disallow all",
            )
        if 400 <= status < 500:
            return cls(
                None,
                blanket=True,
                kind="unavailable-4xx",
                status=status,
                reason=f"HTTP {status}: robots.txt unavailable: allow all",
            )
        label = "unreachable-5xx" if status >= 500 else "unreachable-1xx"
        return cls(
            None,
            blanket=False,
            kind=label,
            status=status,
            reason=f"HTTP {status}: robots.txt unreachable: disallow all",
        )

    # ---- queries --------------------------------------------------------------------------

    def allows(self, user_agent: str, url: str) -> bool:
        """May ``user_agent`` (full UA or product token) crawl ``url`` (absolute URL or path)?"""
        path = normalize_path(path_params_query(url))
        if path == "/robots.txt":
            return True  # RFC 9309 §2.2.2: /robots.txt is implicitly allowed
        if self._groups is None:
            return bool(self._blanket)
        rules = self._rules_for(user_agent)
        if rules is None:
            return True
        decision = rules.decide(path)
        return True if decision is None else decision

    def crawl_delay(self, user_agent: str) -> float | None:
        """Crawl-delay seconds from the agent's group (or '*'), largest if merged; else None."""
        groups = self._groups_for(user_agent)
        delays = [d for g in groups for d in g.crawl_delays]
        return max(delays) if delays else None

    def matched_group(self, user_agent: str) -> str | None:
        """Which group applies to the agent: its lower-cased token, '*', or None."""
        if not self._groups:
            return None
        token = product_token(user_agent).lower()
        if token and token in self._groups:
            return token
        return "*" if "*" in self._groups else None

    def _groups_for(self, user_agent: str) -> list[_Group]:
        key = self.matched_group(user_agent)
        return [] if key is None else self._groups[key]

    def _rules_for(self, user_agent: str) -> CompiledRules | None:
        try:
            return self._compiled[user_agent]
        except KeyError:
            pass
        groups = self._groups_for(user_agent)
        compiled = CompiledRules.build([r for g in groups for r in g.rules]) if groups else None
        if len(self._compiled) < 64:  # bounded: callers use a handful of agents
            self._compiled[user_agent] = compiled
        return compiled

    def __repr__(self) -> str:
        groups = len(self._groups) if self._groups else 0
        return f"RobotsTxt(kind={self.kind!r}, status={self.status}, tokens={groups})"


def _agent_value_token(value: str) -> str:
    # Google: '*' alone or followed by whitespace is the global agent ("* # all bots").
    if value.startswith("*") and (len(value) == 1 or value[1] in _WS):
        return "*"
    return robots_line_token(value).lower()


def _parse_delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


def origin_of(url: str) -> str:
    """Origin key 'scheme://host[:port]' of a URL, lower-cased, default ports dropped."""
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.hostname:
        raise ValueError(f"url={url!r}: expected an absolute URL like 'http://host/path'")
    scheme = parts.scheme.lower()
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"  # IPv6 literal
    port = parts.port
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" if port in (None, default) else f"{scheme}://{host}:{port}"


class RobotsCache:
    """Per-origin cache of RobotsTxt, each entry trusted for at most ``max_age_s`` (≤ 24 h).

    Keys are origins (any URL on the origin works). Not locked: share it within one event loop
    or thread; give each worker process its own.
    """

    def __init__(
        self,
        max_age_s: float = 86400.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = 100_000,
    ) -> None:
        if not 0 < max_age_s <= 86400:
            raise ValueError(f"max_age_s={max_age_s}: must be in (0, 86400] (RFC 9309 §2.4)")
        if max_entries < 1:
            raise ValueError(f"max_entries={max_entries}: must be at least 1")
        self.max_age_s = float(max_age_s)
        self._clock = clock
        self._max_entries = max_entries
        self._entries: OrderedDict[str, tuple[float, RobotsTxt]] = OrderedDict()

    def get(self, origin: str) -> RobotsTxt | None:
        """Cached policy for an origin (or any URL on it), or None if missing or expired."""
        entry = self._entries.get(origin_of(origin))
        if entry is None or self._clock() >= entry[0]:
            return None
        return entry[1]

    def get_stale(self, origin: str) -> RobotsTxt | None:
        """Last policy stored for an origin regardless of age (RFC 9309 §2.4: when unreachable)."""
        entry = self._entries.get(origin_of(origin))
        return None if entry is None else entry[1]

    def put(self, origin: str, robots: RobotsTxt, *, max_age_s: float | None = None) -> None:
        """Store a policy; ``max_age_s`` may shorten (never lengthen) this entry's life."""
        age = self.max_age_s if max_age_s is None else min(float(max_age_s), self.max_age_s)
        key = origin_of(origin)
        self._entries.pop(key, None)
        self._entries[key] = (self._clock() + age, robots)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)  # oldest insertion first

    def __len__(self) -> int:
        return len(self._entries)
